#!/bin/sh
# The control directory without FUSE: in a user and mount namespace with
# no /dev/fuse, as an unprivileged container runs a program, the runtime
# makes a plain directory holding a socket, and `kprewrite ctl` lists,
# disables (the hits stop), enables, unoptimizes and optimizes through it,
# reads and sets the knobs, and gets the errors a FUSE write gives. The
# directory goes when the process is killed (its watcher), or at the next
# start when the watcher was killed too. Outside: KPREWRITE_CTL_SOCKET=1
# asks for the socket, and only the process's own uid is answered
# (SO_PEERCRED: root, who may enter any directory, is refused).
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
if [ -z "$KP_CTL_SOCKET_INNER" ]; then
    D=$(tmpdir ctl-socket)
    use_runtime
    # a temp dir everyone may enter: user 65534 runs the fixture from it
    W=$(mktemp -d "${TMPDIR:-/tmp}/kprewrite-ctl-socket.XXXXXX")
    chmod 755 "$W"
    trap 'rm -rf "$W"' EXIT
    P=$W/tp
    if $CC -O2 -g -o "$P" "$KP_SRCDIR/t/data/trap-prog.c" "$KP_SRCDIR/t/data/trap-asm.S" -I"$KP_SRCDIR/include" \
        -Wl,-u,__kprewrite_pool $RT_STATIC 2>"$D/cc.err"; then
        ok 0 "the fixture builds"
    else
        ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
    fi
    "$KPREWRITE" --probe short3 --probe work --probe 'p?' "$P" >/dev/null 2>&1
    is 2 $? "bake work, p0-p7 and short3 (exit 2: an int3 probe)"
    cp "$KPREWRITE" "$W/kprewrite"; chmod 755 "$P" "$W/kprewrite"
fi
K=$W/kprewrite

# until CMD...: true within 10 s (a bound, not a timing)
until_() { i=0; while [ $i -lt 200 ]; do "$@" && return 0; sleep 0.05; i=$((i + 1)); done; return 1; }
mounts_at() { awk -v m="$1" '$5 == m { n++ } END { print n + 0 }' /proc/self/mountinfo; }
gone() { [ "$(mounts_at "$1")" = 0 ] && [ ! -e "$1" ]; }
hits() { "$K" ctl $pid profile | awk '$1 == "work+0x0" { print $2 }'; }
watcher_of() {
    for d in /proc/[0-9]*; do
        [ "$(cat "$d/comm" 2>/dev/null)" = kprewrite-ctl ] || continue
        grep -qs "^Pid:[[:space:]]*$1\$" "$d"/fdinfo/* && { echo "${d#/proc/}"; return; }
    done
}
serve() { # BASE: the fixture steered until $W/stop exists; $pid, $C
    KPREWRITE_CTL_DIR=$1 KPREWRITE_CTL_DELAY_MS=0 "$P" serve "$W/stop" >"$W/out" 2>&1 &
    pid=$!
    C=$1/$pid
}

# Everything `kprewrite ctl` does, through the socket of $pid.
steer() {
    export KPREWRITE_CTL_DIR=$base
    like "^[0-9a-f]{16}  k  work\+0x0  \[OPTIMIZED\]  hits [0-9]+  nmissed 0$" "$("$K" ctl $pid list | grep 'work+')" \
        "$where: list reads as the list file does"
    like "^[0-9a-f]{16}  k  short3\+0x0    hits 0  nmissed 0$" "$("$K" ctl $pid list | grep 'short3+')" \
        "$where: an int3 probe is listed without [OPTIMIZED]"
    h1=$(hits); sleep 0.1; h2=$(hits)
    ok $([ "$h2" -gt "$h1" ]; echo $?) "$where: profile counts hits ($h1 -> $h2)"
    "$K" ctl $pid disable work; ok $? "$where: disable work"
    like 'work\+0x0  \[DISABLED\]  hits' "$("$K" ctl $pid list)" "$where: list shows [DISABLED]"
    h1=$(hits); sleep 0.1; h2=$(hits)
    is "$h1" "$h2" "$where: no hits while disabled"
    "$K" ctl $pid enable work; ok $? "$where: enable work"
    like 'work\+0x0  \[OPTIMIZED\]' "$("$K" ctl $pid list)" "$where: enabled and optimized again"
    h1=$(hits); sleep 0.1; h2=$(hits)
    ok $([ "$h2" -gt "$h1" ]; echo $?) "$where: it counts again ($h1 -> $h2)"
    "$K" ctl $pid unoptimize 'w*'
    like 'work\+0x0    hits' "$("$K" ctl $pid list)" "$where: unoptimize (a glob): int3, not disabled"
    h1=$(hits); sleep 0.1; h2=$(hits)
    ok $([ "$h2" -gt "$h1" ]; echo $?) "$where: an unoptimized probe still counts ($h1 -> $h2)"
    "$K" ctl $pid optimize work
    like 'work\+0x0  \[OPTIMIZED\]' "$("$K" ctl $pid list)" "$where: optimize puts the jump back"
    err=$("$K" ctl $pid disable nosuch 2>&1); rc=$?
    is "1:kprewrite: ctl $pid: disable nosuch: no baked probe matches" "$rc:$err" "$where: ENOENT, as a FUSE write gives it"
    err=$("$K" ctl $pid optimize short3 2>&1); rc=$?
    is "1:kprewrite: ctl $pid: optimize short3: the probes it names can only be int3 probes" "$rc:$err" \
        "$where: EOPNOTSUPP for an int3-only probe"
    is "1" "$("$K" ctl $pid enabled)" "$where: enabled reads 1"
    "$K" ctl $pid enabled 0
    is "0" "$("$K" ctl $pid enabled)" "$where: enabled 0 reads back"
    h1=$(hits); sleep 0.1; h2=$(hits)
    is "$h1" "$h2" "$where: enabled 0 disarms every probe"
    "$K" ctl $pid enabled 1
    "$K" ctl $pid optimization 0
    is "0 0" "$("$K" ctl $pid optimization) $("$K" ctl $pid list | grep -c OPTIMIZED)" \
        "$where: optimization 0 reads back and unoptimizes every probe"
    "$K" ctl $pid optimization 1
    like 'work\+0x0  \[OPTIMIZED\]' "$("$K" ctl $pid list)" "$where: optimization 1 optimizes again"
}

if [ -z "$KP_CTL_SOCKET_INNER" ]; then
    # --- outside: asked for ---
    base=$W/ctl-asked where="KPREWRITE_CTL_SOCKET=1"
    KPREWRITE_CTL_SOCKET=1 serve "$base"
    until_ [ -S "$C/socket" ]
    ok $? "$where: the directory holds a socket"
    is "0" "$(mounts_at "$C")" "$where: and is no mount"
    steer
    # the bash completion reads the points through kprewrite ctl
    got=$(bash -c '. "$1"; COMP_WORDS=("$2" ctl "$3" disable ""); COMP_CWORD=4; _kprewrite; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
        x "$KP_SRCDIR/completion/kprewrite" "$K" $pid)
    is "p0 p1 p2 p3 p4 p5 p6 p7 short3 work " "$got" "$where: the bash completion offers the process's points"
    touch "$W/stop"; wait $pid
    ok $([ ! -e "$C" ]; echo $?) "$where: the directory is removed at exit"
    rm -f "$W/stop"
    # --- outside: another uid is refused, even root ---
    if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        base=$W/ctl-nobody
        mkdir "$base"; chmod 700 "$base"; chown 65534:65534 "$base"
        setpriv --reuid=65534 --regid=65534 --clear-groups env KPREWRITE_CTL_DIR="$base" KPREWRITE_CTL_DELAY_MS=0 \
            KPREWRITE_CTL_SOCKET=1 "$P" serve "$W/stop" >"$W/out" 2>&1 &
        pid=$!
        until_ [ -S "$base/$pid/socket" ]
        err=$(KPREWRITE_CTL_DIR=$base "$K" ctl $pid list 2>&1); rc=$?
        is "1:kprewrite: ctl $pid: $base/$pid/socket: read list: Permission denied" "$rc:$err" \
            "root is refused by a process of user 65534 (SO_PEERCRED)"
        like ' work\+0x0 ' "$(setpriv --reuid=65534 --regid=65534 --clear-groups env KPREWRITE_CTL_DIR="$base" "$K" ctl $pid list)" \
            "its own user is answered"
        touch "$W/stop"; wait $pid; rm -f "$W/stop"
    else
        skip "another uid (needs root and setpriv)"; skip "another uid"
    fi
    # --- inside a user and mount namespace without /dev/fuse ---
    if unshare --user --map-root-user --mount true 2>/dev/null; then
        echo "$T" >"$W/count"
        KP_CTL_SOCKET_INNER=1 W=$W P=$P unshare --user --map-root-user --mount sh "$0"
        T=$(cat "$W/count")
    else
        skip "no user namespaces here (unshare --user --map-root-user --mount)"
    fi
    done_testing
fi

# --- the inner run (in the namespace): numbering goes on from the outer's ---
T=$(cat "$W/count")
where="no /dev/fuse"
if [ -e /dev/fuse ]; then
    mount --bind /dev/null /dev/fuse
    ok $? "$where: /dev/fuse hidden (/dev/null bound over it)"
fi
base=$W/ctl-ns
serve "$base"
until_ [ -S "$C/socket" ]
ok $? "$where: the runtime fell back to a socket in its directory $C"
is "0 none" "$(mounts_at "$C") $(ls "$C" 2>&1 | grep -c list | sed 's/^0$/none/')" "$where: no FUSE mount, no list file"
is "700 600" "$(stat -c %a "$C" "$C/socket" | tr '\n' ' ' | sed 's/ $//')" "$where: directory 0700, socket 0600"
steer
kill -KILL $pid; wait $pid
until_ gone "$C"; ok $? "$where: SIGKILL: the watcher removes the directory and its socket within 10 s"
err=$("$K" ctl $pid list 2>&1)
is "kprewrite: ctl $pid: no such process" "$err" "$where: kprewrite ctl says the process is gone"
# the watcher killed too: the next start removes the directory as stale
serve "$base"
until_ [ -S "$C/socket" ]
wpid=; for _i in $(seq 50); do wpid=$(watcher_of $pid); [ -n "$wpid" ] && break; sleep 0.1; done   # (named once it runs: under load, a moment after the mount)
ok $([ -n "$wpid" ]; echo $?) "$where: the watcher ($wpid) is found"
# the watcher first: it must not see the program end
[ -n "$wpid" ] && kill -KILL $wpid && until_ [ ! -e /proc/$wpid ]
kill -KILL $pid; wait $pid
old=$C
sleep 0.2
ok $([ -S "$old/socket" ]; echo $?) "$where: killed with its watcher, the socket stays"
serve "$base"
until_ gone "$old"; ok $? "$where: the next probed process to start removes it as stale"
touch "$W/stop"; wait $pid
ok $([ ! -e "$C" ]; echo $?) "$where: a directory with a socket is removed at exit"
echo "$T" >"$W/count"
