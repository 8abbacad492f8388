#!/bin/sh
# A probed program's control directory is unmounted and removed however
# the program ends: SIGTERM, SIGKILL, a crash (SIGSEGV, abort), an exec;
# mounted with mount(2) as root and through fusermount3 as a user. Its
# watcher is nothing the program can see: its wait() until ECHILD reaps
# exactly its own children, it gets no SIGCHLD of others, its process
# group, session, signal masks and handlers are as without a directory,
# and its fds only gain two close-on-exec ones, none crossing an exec.
# Directories whose watcher was killed too are removed by the next start.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
# As root, in a private mount namespace: the test's FUSE mounts stay in
# it, and user 65534 can be given a /dev/fuse it may open (fusermount3
# opens it as the user) where the machine's is root's only.
if [ "$(id -u)" = 0 ] && [ -z "$KP_CTL_LIFE_NS" ] && unshare --mount --propagation private true 2>/dev/null; then
    KP_CTL_LIFE_NS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi
D=$(tmpdir ctl-life)
use_runtime
# The fixture runs as user 65534 too: it and its directories live in a
# temp dir everyone may enter, not in the tree (which may be private).
W=$(mktemp -d "${TMPDIR:-/tmp}/kprewrite-ctl-life.XXXXXX")
chmod 755 "$W"
cleanup() {
    awk -v w="$W/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | while read -r m; do
        umount -l "$m" 2>/dev/null || fusermount3 -u -z -q "$m" 2>/dev/null
    done
    rm -rf "$W"
}
trap cleanup EXIT
P=$W/life
# static: user 65534 needs no library from the tree
if $CC -O2 -g -o "$P" "$KP_SRCDIR/t/data/ctl-life.c" -I"$KP_SRCDIR/include" -Wl,-u,__kprewrite_pool $RT_STATIC \
    2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --probe tick "$P" >/dev/null 2>"$D/bake.err"
ok $? "bake tick ($(tail -n 1 "$D/bake.err"))"
cp "$KPREWRITE" "$W/kprewrite" && chmod 755 "$W/kprewrite" "$P"

mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }
mounts_at() { awk -v m="$1" '$5 == m { n++ } END { print n + 0 }' /proc/self/mountinfo; }
gone() { ! mounted "$1" && [ ! -e "$1" ]; }
left() { gone "$1" || echo "; left: $(mounted "$1" && echo a mount) $([ -e "$1" ] && echo the directory)"; }
# until CMD...: true within 10 s (a bound, not a timing: each poll is 50 ms)
until_() { i=0; while [ $i -lt 200 ]; do "$@" && return 0; sleep 0.05; i=$((i + 1)); done; return 1; }
comm_is() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
# The watcher of PID: the process that holds a pidfd of it.
watcher_of() {
    for d in /proc/[0-9]*; do
        comm_is "${d#/proc/}" kprewrite-ctl || continue
        grep -qs "^Pid:[[:space:]]*$1\$" "$d"/fdinfo/* && { echo "${d#/proc/}"; return; }
    done
}
# How many watchers PID has (after an exec: the old image's, until its
# clean-up ends, and the new one's).
watchers_of() {
    n=0
    for d in /proc/[0-9]*; do
        comm_is "${d#/proc/}" kprewrite-ctl && grep -qs "^Pid:[[:space:]]*$1\$" "$d"/fdinfo/* && n=$((n + 1))
    done
    echo $n
}
field() { awk -v f="$2" '{ sub(/^.*\) /, ""); print $(f - 2) }' "/proc/$1/stat"; }   # stat field F, after comm

# $AS: the prefix that runs a command as the case's user ($who): root, or
# 65534 when root runs the test (a prefix, not a function: "$AS cmd &"
# must give the command's own pid)
as_user() {
    AS=
    if [ "$who" = user ] && [ "$(id -u)" = 0 ]; then AS="setpriv --reuid=65534 --regid=65534 --clear-groups"; fi
}
# start MODE ARGS...: the fixture in the background (directory at once);
# $pid, its directory $C
start() {
    $AS env KPREWRITE_CTL_DIR="$base" KPREWRITE_CTL_DELAY_MS=0 "$P" "$@" >"$W/out" 2>&1 &
    pid=$!
    C=$base/$pid
}
ended() { # HOW STATUS-IT-DIES-WITH (for the description)
    how=$1
    if ! until_ mounted "$C"; then
        kill -9 $pid 2>/dev/null; wait $pid
        ok 1 "$who, $how: the directory is mounted first ($(head -n 1 "$W/out"))"; return
    fi
    case $how in
    SIGTERM) kill -TERM $pid ;;
    SIGKILL) kill -KILL $pid ;;
    *) touch "$W/go" ;;
    esac
    wait $pid; st=$?
    rm -f "$W/go"
    until_ gone "$C"; r=$?
    ok $r "$who, $how (exit status $st): no mount at $C and no directory, within 10 s$(left "$C")"
    # a crash must be one (a sanitizer ends a SIGSEGV with its own exit)
    if [ -z "$KP_SAN_FLAGS" ] || [ "$how" = SIGTERM ] || [ "$how" = SIGKILL ]; then
        is "$2" "$st" "$who, $how: the program died of it"
    fi
}

cases() {
    base=$W/ctl-$who
    as_user
    mkdir -p "$base"; chmod 700 "$base"
    [ "$who" = user ] && [ "$(id -u)" = 0 ] && chown 65534:65534 "$base"
    start serve "$W/go"; ended SIGTERM 143
    start serve "$W/go"; ended SIGKILL 137
    start segv "$W/go"; ended SIGSEGV 139
    start abort "$W/go"; ended abort 134
    # an exec of another program: the old image's directory goes, the process lives on
    start exec "$W/go" "$(command -v sleep)" 60
    if until_ mounted "$C"; then
        touch "$W/go"
        until_ comm_is $pid sleep && until_ gone "$C"
        ok $? "$who, an exec: the directory is gone while the process runs on ($(cat /proc/$pid/comm 2>/dev/null))$(left "$C")"
    else
        ok 1 "$who, an exec: the directory is mounted first"
    fi
    kill $pid 2>/dev/null; wait $pid; rm -f "$W/go"
    # an exec of a probed program: it makes its own directory of that name,
    # which the watcher of the old image leaves alone; no fd crosses the exec
    # (the fds but the close-on-exec ones, which end at an exec: the new
    # image makes its own directory before main). Then the same with the
    # old image's watcher held (a test knob) between finding its dead mount
    # and unmounting it (a new image's mount made in that window would be
    # the one unmounted by path: the two hold a lock on the parent
    # directory, so the new image waits), and held before it takes the lock
    # (the new image takes the dead mount off, removes the old directory and
    # mounts its own, which may get the old mount's id: the watcher sees its
    # directory removed and does nothing)
    fds_kept() { sed -n 's/^fds after exec: //p' | tr ' ' '\n' | grep -v 'c$' | tr '\n' ' '; }
    base_fds=$($AS env KPREWRITE_CTL_DIR="$base" KPREWRITE_CTL_DELAY_MS=0 "$P" fds / | fds_kept)
    for pause in none 400 lock:400; do
        how="an exec of a probed program"; [ $pause = none ] || how="$how, the old watcher held ($pause)"
        [ $pause = none ] || { KPREWRITE_TEST_WATCH_PAUSE_MS=$pause; export KPREWRITE_TEST_WATCH_PAUSE_MS; }
        start exec "$W/go" "$P" fds "$W/stop"
        unset KPREWRITE_TEST_WATCH_PAUSE_MS
        if until_ mounted "$C"; then
            touch "$W/go"
            until_ grep -q 'fds after exec' "$W/out"
            [ $pause != none ] ||
                is "$base_fds" "$(fds_kept <"$W/out")" "$who, $how: it gets no fd of the runtime's ($(grep 'fds after' "$W/out"))"
            # the old image's watcher done (its pause over), the new one's left
            until_ [ "$(watchers_of $pid)" = 1 ]
            like 'tick\+0x0  \[OPTIMIZED\]  hits' "$($AS env KPREWRITE_CTL_DIR="$base" "$W/kprewrite" ctl $pid list 2>&1)" \
                "$who, $how: the new image's directory of the same name keeps its mount ($(mounts_at "$C")), it answers"
            touch "$W/stop"; wait $pid
            until_ gone "$C"; ok $? "$who, $how: the new image's directory is removed at its exit"
        else
            ok 1 "$who, $how: the directory is mounted first"; kill $pid; wait $pid
        fi
        rm -f "$W/go" "$W/stop"
    done
    # wait() until ECHILD while the runtime makes the directory (default delay)
    out=$($AS env KPREWRITE_CTL_DIR="$base" "$P" children 3)
    is "reaped 3, its own 3 with their codes (mask 7), SIGCHLD from others 0, wait ended with No child processes, directory made yes" \
        "$out" "$who: a program waiting for all its children reaps its 3, and gets no other SIGCHLD"
    # the program's own fds stay its own: 20 runs that outlive the
    # directory's making (default delay) print all they print
    n=0
    for i in $(seq 20); do
        [ "$($AS env KPREWRITE_CTL_DIR="$base" "$P" brief 60 2>&1 | sort | tr '\n' ' ')" = "brief: err brief: out " ] &&
            n=$((n + 1))
    done
    is 20 $n "$who: 20 runs that made a directory each: their stdout and stderr intact"
    # what the program sees of itself, with and without a directory
    with=$($AS env KPREWRITE_CTL_DIR="$base" "$P" ids)
    without=$($AS env KPREWRITE_CTL_DIR=/proc/none "$P" ids)
    is "directory made yes" "$(echo "$with" | tail -n 1)" "$who: ids: the directory was made"
    is "$(echo "$without" | head -n 1 | sed 's/, fds.*//')" "$(echo "$with" | head -n 1 | sed 's/, fds.*//')" \
        "$who: the same process group, session, signal masks and handlers, and no child, as without a directory"
    fds_with=$(echo "$with" | sed -n 's/.*, fds //p'); fds_without=$(echo "$without" | sed -n 's/.*, fds //p')
    extra=$(printf '%s\n' $fds_with | grep -vxF "$(printf '%s\n' $fds_without)" | tr '\n' ' ')
    like '^[0-9]+c [0-9]+c $' "$extra" "$who: its fds are its own plus two close-on-exec ones ($fds_without -> $fds_with)"
    # its watcher killed with it: the next probed process removes the directory
    start serve "$W/go"
    if until_ mounted "$C"; then
        wpid=; for _i in $(seq 50); do wpid=$(watcher_of $pid); [ -n "$wpid" ] && break; sleep 0.1; done   # (named once it runs: under load, a moment after the mount)
        ok $([ -n "$wpid" ] && [ "$(field "$wpid" 4)" != $pid ] && [ "$(field "$wpid" 6)" != "$(field $pid 6)" ]; echo $?) \
            "$who: the watcher ($wpid) is not the program's child and has a session of its own"
        # the watcher first: it must not see the program end
        [ -n "$wpid" ] && kill -KILL $wpid && until_ [ ! -e /proc/$wpid ]
        kill -KILL $pid; wait $pid
        old=$C
        sleep 0.2
        ok $(mounted "$old"; echo $?) "$who: killed with its watcher, the mount stays"
        start serve "$W/go"
        until_ gone "$old"; ok $? "$who: the next probed process to start removes it$(left "$old")"
        touch "$W/go"; wait $pid
    else
        ok 1 "$who: the directory is mounted first"; kill $pid; wait $pid
    fi
    rm -f "$W/go"
}

# --- root: mount(2) ---
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ]; then
    who=root; cases
    # a subreaper (or a namespace's init) would inherit an orphaned watcher:
    # there it stays a clone child, which wait() does not see either
    base=$W/ctl-root
    out=$(KPREWRITE_CTL_DIR="$base" "$P" children 3 subreaper 2>&1)
    is "reaped 3, its own 3 with their codes (mask 7), SIGCHLD from others 0, wait ended with No child processes, directory made yes" \
        "$out" "root: a subreaper waiting for all its children reaps its 3"
else
    skip "root cases: not root, or no /dev/fuse ($(fuse_why))"
fi
# --- a user: fusermount3 ---
fuse_for_users() {
    if [ "$(id -u)" = 0 ]; then [ "$(stat -c %a /dev/fuse 2>/dev/null)" = 666 ]; else [ -r /dev/fuse ] && [ -w /dev/fuse ]; fi
}
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && ! fuse_for_users && [ -n "$KP_CTL_LIFE_NS" ]; then
    # a /dev/fuse node users may open, in this namespace only
    mkdir -p "$W/dev" && mount -t tmpfs -o mode=755 kprewrite-dev "$W/dev" &&
        mknod -m 666 "$W/dev/fuse" c 10 229 && mount --bind "$W/dev/fuse" /dev/fuse
fi
if command -v fusermount3 >/dev/null && [ -c /dev/fuse ] && fuse_for_users &&
    { [ "$(id -u)" != 0 ] || command -v setpriv >/dev/null; }; then
    who=user; cases
else
    skip "user cases: no fusermount3, or /dev/fuse not open to users ($(fuse_why))"
fi
done_testing
