#!/bin/sh
# Probes baked into the machine's own libc (a prebuilt shared library that
# the runtime itself calls): malloc, free, calloc, realloc and the mutex
# and once functions of the runtime's lock. The runtime must not deadlock
# or recurse when its own calls hit them (first hits, thread exits, the
# control directory's thread, exit), programs keep their output, and
# handlers see exactly the program's calls, also with malloc and free
# turned to int3 probes while the program runs.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" ldd timeout cmp sort
# A sanitizer's allocator replaces libc's malloc: nothing to probe there.
[ -n "$KP_SAN_FLAGS" ] && skip_all "a sanitizer build intercepts malloc"
D=$(tmpdir libc)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
export LD_LIBRARY_PATH="$KP_BUILDDIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KPREWRITE_CTL_DIR="$D/ctl"
P=$D/libc-prog
# A fixture that does not build is a failure, and nothing else can run.
if $CC -O2 -pthread -I"$KP_SRCDIR/include" -o "$P" "$S/libc-prog.c" -L"$KP_BUILDDIR/.libs" -lkprewrite-rt \
        2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
LIBC=$(ldd "$P" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$LIBC" ] || skip_all "no libc.so.6 found by ldd"
mkdir "$D/lib"
"$KPREWRITE" --runtime "$RTLIB" --probe malloc --probe free --probe calloc --probe realloc \
    --probe pthread_mutex_lock --probe pthread_mutex_unlock --probe pthread_once \
    -o "$D/lib/libc.so.6" "$LIBC" >"$D/report" 2>"$D/err"; rc=$?
is 0 $rc "$LIBC: 7 probes baked ($(tail -n 1 "$D/err"))"
like '^[0-9a-f]+  k  malloc\+0x0  \[OPTIMIZED\]' "$(cat "$D/report")" "malloc's probe is jump-optimized"
# (env, so that only the program runs on the probed libc, not timeout)
run() { timeout -s KILL 60 env LD_LIBRARY_PATH="$D/lib:$LD_LIBRARY_PATH" "$@"; }

want=$("$P")
got=$(KPREWRITE_REPORT=all run "$P" 2>"$D/hits"); rc=$?
is "0 $want" "$rc $got" "a program linked with the runtime, on the probed libc: exits, same output"
m=$(awk '$4 == "malloc+0x0" { print $6 }' "$D/hits")
ok $([ "${m:-0}" -ge 80000 ]; echo $?) "malloc's hits counted: ${m:-none} >= 4 threads x 20000"
got=$(run "$P" stats 2>&1); rc=$?
is "0 $want
stats rc 0 0 malloc>=calls 1 free>=calls 1 exact-per-thread-bad 0" "$rc $got" \
    "handlers on malloc and free: every call seen, exactly the thread's own calls of the size it asked"

# the control directory's thread calls malloc for every read: it must
# neither deadlock against the program's threads nor run their handlers
rm -f "$D/stop"
KPREWRITE_CTL_DELAY_MS=0 run "$P" serve "$D/stop" >"$D/serve.out" 2>&1 &
pid=$!
n=0; lines=0; c=
while [ $n -lt 100 ] && ! [ -r "$c/list" ]; do
    sleep 0.1; n=$((n + 1)); c=$(ls -d "$KPREWRITE_CTL_DIR"/[0-9]* 2>/dev/null | head -n 1)
done
if [ -r "$c/list" ]; then
    for i in 1 2 3 4 5 6 7 8 9 10; do
        grep -q ' malloc+0x0' "$c/list" && lines=$((lines + 1))
        cat "$c/profile" >/dev/null
    done
    touch "$D/stop"; wait $pid; rc=$?
    is "10 0" "$lines $rc" "list read 10 times while 4 threads allocate: malloc listed each time, the program ends"
    like 'exact-per-thread-bad 0$' "$(cat "$D/serve.out")" "and its handlers saw exactly their calls"
else
    touch "$D/stop"; wait $pid
    ok 1 "list read while 4 threads allocate: no control directory mounted in $KPREWRITE_CTL_DIR within 10 s ($(fuse_why))"
fi

# The same, with malloc, free and pthread_mutex_lock turned to int3 probes
# while the threads run: every call then traps (SIGTRAP). The control
# thread exits with the process; a detached thread would free its TLS with
# every signal blocked, and a trap there kills the process.
rm -f "$D/stop"
KPREWRITE_CTL_DELAY_MS=0 run "$P" serve "$D/stop" >"$D/int3.out" 2>&1 &
pid=$!
n=0; c=
while [ $n -lt 100 ] && ! [ -r "$c/list" ]; do
    sleep 0.1; n=$((n + 1)); c=$(ls -d "$KPREWRITE_CTL_DIR"/[0-9]* 2>/dev/null | head -n 1)
done
if [ -r "$c/list" ]; then
    for f in malloc free pthread_mutex_lock; do "$KPREWRITE" ctl "${c##*/}" unoptimize $f >/dev/null 2>&1; done
    h1=$(awk '$3 == "free+0x0" { print $(NF - 2) }' "$c/list")
    unopt=$(grep -c -E ' (malloc|free|pthread_mutex_lock)\+0x0  +hits' "$c/list")
    sleep 0.3
    h2=$(awk '$3 == "free+0x0" { print $(NF - 2) }' "$c/list")
    touch "$D/stop"; wait $pid; rc=$?
    ok $([ "$unopt" = 3 ] && [ "${h2:-0}" -gt "${h1:-0}" ]; echo $?) \
        "malloc, free and pthread_mutex_lock unoptimized ($unopt), free still counting through its trap (${h1:-?} -> ${h2:-?})"
    is "0" "$rc" "the program ends normally (exit $rc): no trap with SIGTRAP blocked"
    like 'exact-per-thread-bad 0$' "$(cat "$D/int3.out")" "and its handlers saw exactly their calls"
else
    touch "$D/stop"; wait $pid
    ok 1 "malloc, free and pthread_mutex_lock unoptimized while the threads run: no control directory mounted in $KPREWRITE_CTL_DIR within 10 s ($(fuse_why))"
fi

# Events on every entry of a probed libc: the trace writer thread's own
# calls (strlen, memcpy, write, ...) must be misses, never events -- each
# event it wrote made more, and a traced program on such a libc never
# ended, filling the disk (bounded here: 20 s, 50 MB). A shell ends with
# _exit, which libc's own guard probe turns into the trace written.
mkdir "$D/libw"
"$KPREWRITE" --runtime "$RTLIB" --probe '*' -o "$D/libw/libc.so.6" "$LIBC" >/dev/null 2>"$D/errw"
got=$( (ulimit -f 100000; KPREWRITE_REPORT=all KPREWRITE_EVENTS='p write fd=%di:s32 n=%dx:u64; p:all * a=%di b=%si:s32 c=%dx:u16 ret=$stack0' \
        KPREWRITE_TRACE="$D/w.trace" timeout -s KILL 20 env LD_LIBRARY_PATH="$D/libw:$LD_LIBRARY_PATH" \
        sh -c 'echo one; echo two; echo three' 2>"$D/w.report") 2>&1); rc=$?
ev=$(sed -n -E 's/^.*: p_write_0: \(__write\+0x0\) //p' "$D/w.trace" 2>/dev/null | sort | uniq -c | awk '{ $1 = $1; print }' | tr '\n' ';')
tids=$(awk '{ n = split($1, a, "-"); print a[n] }' "$D/w.trace" 2>/dev/null | sort -u | wc -l)
all=$(grep -c ': all: ' "$D/w.trace" 2>/dev/null)
is "0 one two three 2 fd=1 n=4;1 fd=1 n=6; 1" "$rc $(echo $got) $ev $tids" \
    "events on every entry of a probed libc: the shell's three writes (write, an alias of __write); all ${all:-0} from its one thread, none from the runtime's threads; it ends"
# dash ends with _exit: its report is printed there too, and counts each
# hit once: every point's hits = its events (no buffer filled here)
sum=$(awk '$1 == "kprewrite:" && $5 == "hits" { h += $6; if ($4 == "__write+0x0") w = $6 } END { print h + 0, w + 0 }' "$D/w.report")
is "$all 3" "$sum" "and its report (printed at _exit) counts each of those hits once: all ${all:-0}, 3 on __write"
rm -f "$D/w.trace"

# a program from the machine, not built for the runtime, multi-threaded
seq 200000 | awk '{ print ($1 * 7919) % 100003 }' >"$D/in"
sort -n --parallel=2 -S 1M "$D/in" >"$D/want"
KPREWRITE_REPORT=all run sort -n --parallel=2 -S 1M "$D/in" >"$D/got" 2>"$D/sort.hits"; rc=$?
cmp -s "$D/want" "$D/got"; same=$?
is "0 0" "$rc $same" "sort --parallel=2 on the probed libc: exits, same output"
like '  malloc\+0x0  hits [1-9]' "$(cat "$D/sort.hits")" "and its malloc calls are counted"
done_testing
