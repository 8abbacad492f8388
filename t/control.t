#!/bin/sh
# The control directory of a running probed process: permissions, list,
# enable/disable/optimize/unoptimize, errors the writer sees, kprewrite ctl,
# removal at exit, and a stress run toggling probes under 4 threads.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir control)
use_runtime
# these programs read their own control directory from the start
export KPREWRITE_CTL_DELAY_MS=0
export KPREWRITE_CTL_DIR="$D/ctl"
P=$D/tp
# A fixture that does not build, or a directory that is not mounted, is a
# failure (FUSE is installed by scripts/install-deps.sh), and nothing else
# here can run without them.
if $CC -O2 -g -o "$P" "$KP_SRCDIR/t/data/trap-prog.c" "$KP_SRCDIR/t/data/trap-asm.S" $RT 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
cp "$P" "$P.orig"
"$KPREWRITE" --probe short3 --probe work --probe 'p?' "$P" >/dev/null 2>&1

"$P" serve "$D/stop" >"$D/out" 2>&1 &
pid=$!
C=$KPREWRITE_CTL_DIR/$pid
for i in $(seq 100); do [ -e "$C/list" ] && break; sleep 0.05; done
if [ -e "$C/list" ]; then
    ok 0 "the runtime mounts the control directory $C"
else
    kill $pid; wait $pid 2>/dev/null
    ok 1 "the runtime mounts the control directory $C: not within 5 s ($(fuse_why))$(head -n 1 "$D/out" | sed 's/^./; the program said: &/')"
    done_testing
fi
is "700" "$(stat -c %a "$C")" "the directory is 0700"
is "control enabled list optimization profile" "$(ls "$C" | tr '\n' ' ' | sed 's/ $//')" "its files"
is "600 600 400 600 400" "$(cd "$C" && stat -c %a control enabled list optimization profile | tr '\n' ' ' | sed 's/ $//')" "file modes"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    as_nobody_in "$C" cat list >/dev/null 2>&1   # in it already: only its own permissions count
    ok $([ $? -ne 0 ]; echo $?) "another user cannot read it"
else
    skip "another user (needs root and setpriv)"
fi
like "^[0-9a-f]{16}  k  work\+0x0  \[OPTIMIZED\]  hits [0-9]+  nmissed 0$" "$(grep 'work+' "$C/list")" "list reads like kprobes/list, with hits and nmissed"
like "^[0-9a-f]{16}  k  short3\+0x0    hits 0  nmissed 0$" "$(grep 'short3+' "$C/list")" "an int3 probe is listed without [OPTIMIZED]"
is "$(sed 's/hits [0-9]*/hits N/' "$C/list")" "$("$KPREWRITE" ctl $pid list | sed 's/hits [0-9]*/hits N/')" "kprewrite ctl PID list prints the list"
hits() { awk '$1 == "work+0x0" { print $2 }' "$C/profile"; }
h1=$(hits); sleep 0.1; h2=$(hits)
ok $([ "$h2" -gt "$h1" ]; echo $?) "profile counts hits while enabled ($h1 -> $h2)"
echo 'disable work' >"$C/control"; ok $? "disable work"
like 'work\+0x0  \[DISABLED\]  hits' "$(cat "$C/list")" "list shows [DISABLED]"
h1=$(hits); sleep 0.1; h2=$(hits)
is "$h1" "$h2" "no hits while disabled"
err=$( (echo 'disable nosuch' >"$C/control") 2>&1); rc=$?
ok $([ $rc -ne 0 ]; echo $?) "the writer of 'disable nosuch' gets an error (exit $rc: $err)"
err=$( (echo 'frobnicate work' >"$C/control") 2>&1); ok $([ $? -ne 0 ]; echo $?) "an unknown command is an error"
err=$( (echo 'optimize short3' >"$C/control") 2>&1); ok $([ $? -ne 0 ]; echo $?) "optimizing an int3-only probe is an error"
"$KPREWRITE" ctl $pid enable work; ok $? "kprewrite ctl PID enable work"
like 'work\+0x0  \[OPTIMIZED\]' "$(cat "$C/list")" "enabled again, and optimized again"
err=$("$KPREWRITE" ctl $pid disable nosuch 2>&1); rc=$?
is "1:kprewrite: ctl $pid: disable nosuch: no baked probe matches" "$rc:$err" "kprewrite ctl names the error"
"$KPREWRITE" ctl $pid unoptimize 'w*'
like 'work\+0x0    hits' "$(cat "$C/list")" "unoptimize (a glob): int3, not disabled"
h1=$(hits); sleep 0.1; h2=$(hits)
ok $([ "$h2" -gt "$h1" ]; echo $?) "an unoptimized probe still counts ($h1 -> $h2)"
"$KPREWRITE" ctl $pid optimize work
echo 0 >"$C/optimization"; is "0" "$(cat "$C/optimization")" "optimization knob reads back"
is "0" "$(grep -c OPTIMIZED "$C/list")" "optimization 0 unoptimizes every probe"
echo 1 >"$C/optimization"
like 'work\+0x0  \[OPTIMIZED\]' "$(cat "$C/list")" "optimization 1 optimizes again"
echo 'disable p1' >"$C/control"
echo 0 >"$C/enabled"; h1=$(hits); sleep 0.1; h2=$(hits)
is "$h1" "$h2" "enabled 0 disarms every probe"
echo 1 >"$C/enabled"
like 'p1\+0x0  \[DISABLED\]' "$(cat "$C/list")" "enabled 1 keeps each probe's own state"
h1=$(hits); sleep 0.1; h2=$(hits)
ok $([ "$h2" -gt "$h1" ]; echo $?) "and the others count again"
touch "$D/stop"; wait $pid
is "served until told" "$(cat "$D/out")" "the steered program ran to its end"
ok $([ ! -e "$C" ]; echo $?) "the directory is removed at exit"

# stress: 4 threads on 8 probes, every millisecond a command through the files
secs=${KP_STRESS_SECONDS:-4}
want=$("$P.orig" stress 0.2 2>/dev/null)
got=$(timeout -s KILL $((secs + 60)) "$P" stress "$secs" 2>"$D/stress.err")
is "$want" "$got" "stress ${secs}s: output identical"
line=$(tail -n 1 "$D/stress.err")
like 'disabled windows [1-9][0-9]*, hits in them 0, errors 0, inexact quiet counts 0$' "$line" "stress: no hit while disabled, exact counts when quiet, no error ($line)"
n=$(printf '%s' "$line" | sed -n 's/.*toggles \([0-9]*\).*/\1/p')
# that the toggling really ran (a count, not a speed: a loaded machine is slower)
ok $([ "${n:-0}" -ge 100 ]; echo $?) "stress: $n toggles in ${secs}s (at least 100)"
# By default the directory is made 20 ms after start-up: a short run makes
# no mount at all, a longer one gets its directory.
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true 2>/dev/null; then
    KPREWRITE_CTL_DELAY_MS= strace -f -qq -e trace=mount -o "$D/mounts" "$P" plain >/dev/null 2>&1
    is "0" "$(grep -c 'mount(' "$D/mounts")" "default delay: a run shorter than it mounts nothing"
else
    skip "strace cannot trace here"
fi
KPREWRITE_CTL_DELAY_MS= "$P" serve "$D/stop3" >/dev/null 2>&1 &
pid=$!
for i in $(seq 100); do [ -e "$KPREWRITE_CTL_DIR/$pid/list" ] && break; sleep 0.05; done
like 'work\+0x0' "$(cat "$KPREWRITE_CTL_DIR/$pid/list" 2>&1)" "default delay: a longer run gets its directory"
# the server sleeps on its starting CPU until then, and serves from any CPU after
cpus=$(for f in /proc/$pid/task/*/status; do sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$f"; done | sort -u | tr '\n' ' ')
is "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$pid/status) " "$cpus" "default delay: every thread may run on every CPU once the directory exists ($cpus)"
touch "$D/stop3"; wait $pid
done_testing
