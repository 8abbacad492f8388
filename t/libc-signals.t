#!/bin/sh
# The machine's libc with every entry and every return probed, under
# programs that take signals into their own hands: the runtime, loaded as
# libc's DT_NEEDED (after libc: it interposes nothing), keeps SIGTRAP for
# its int3 probes through the probes kprewrite adds on libc's __sigaction
# and pthread_sigmask (issue 34, item 2). bash with its traps, make, a
# threaded program that installs its own SIGTRAP handler and blocks every
# signal (its int3 hits counted exactly), the control directory (whose
# thread meets libc's int3 probes) and the trace writer.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" ldd timeout cmp bash make awk
# libasan, which the sanitizer build's runtime needs first, cannot run over
# a rewritten libc's IFUNCs (t/libc.t)
[ -n "$KP_SAN_FLAGS" ] && skip_all "a sanitizer build: libasan cannot be preloaded over a probed libc"
D=$(tmpdir libc-signals)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/sig-prog
if $CC -O2 -pthread -o "$P" "$S/libc-sig-prog.c" 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
LIBC=$(ldd "$P" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$LIBC" ] || skip_all "no libc.so.6 found by ldd"

# the guard's probes come with any probe of libc
"$KPREWRITE" --check --probe malloc "$LIBC" >"$D/check" 2>&1
got=$(awk '$3 ~ /^(__sigaction|sigaction|pthread_sigmask)\+0x0$/ { print $3 }' "$D/check" | sort | tr '\n' ' ')
is "__sigaction+0x0 pthread_sigmask+0x0 " "$got" "--probe malloc on libc: __sigaction and pthread_sigmask are probed too (the signal guard)"

mkdir "$D/lib"
"$KPREWRITE" --runtime "$RTLIB" --probe '*' --probe '*%return' -o "$D/lib/libc.so.6" "$LIBC" >"$D/report" 2>"$D/err"
rc=$?
ok $([ $rc = 0 ] || [ $rc = 3 ]; echo $?) "$LIBC: every entry and every return baked, exit $rc (0, or 3: some refused) ($(tail -n 1 "$D/err"))"
int3=$(awk '$2 == "k" && $4 == "[INT3]" { print $3 }' "$D/report" | sort -u)
ok $([ -n "$int3" ]; echo $?) "some of libc's entries are int3 probes ($(echo $int3 | wc -w))"

# (env, so that only the program runs on the probed libc, not timeout)
run() { timeout -s KILL 120 env LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
export KPREWRITE_CTL_DIR="$D/ctl"

# bash: trap EXIT and USR1 make it reset and put back every signal's
# action, SIGTRAP's too (signal(SIG_DFL), then the old one); its printf
# runs libc's vfprintf, an int3 probe
cat >"$D/script.sh" <<'EOF'
trap 'echo exiting; printf "%s %d\n" bye 42' EXIT
trap 'echo got USR1; printf "%05d\n" 1' USR1
printf '%s-%05d\n' hello 7
kill -USR1 $$
for i in 1 2 3; do printf '%d\n' "$i"; done
x=$(trap 'printf "sub %s\n" done' EXIT; printf '%x\n' 255)
echo "$x" | while read -r l; do printf '[%s]\n' "$l"; done
( kill -USR1 $$; printf 'in a subshell\n' )
EOF
want=$(bash "$D/script.sh" 2>&1)
got=$(KPREWRITE_REPORT=all run bash "$D/script.sh" 2>"$D/bash.hits"); rc=$?
is "0 $want" "$rc $got" "bash with trap EXIT and USR1 on the probed libc: exits, same output"
hit=$(awk 'NR == FNR { int3[$1] = 1; next } $1 == "kprewrite:" && ($4 in int3) && $6 > 0 { n++ } END { print n + 0 }' \
    - "$D/bash.hits" <<EOF
$int3
EOF
)
ok $([ "$hit" -gt 0 ]; echo $?) "and libc's int3 probes were hit there ($hit report lines)"

# make: SIGCHLD and the fatal signals handled, children forked and waited
mkdir "$D/mk"
cat >"$D/mk/Makefile" <<'EOF'
all: c
	@printf 'all after %s\n' "$$(cat c)"
a:
	@printf 'a %05d\n' 1 >a
b: a
	@sh -c 'trap "printf \"b done\n\"" EXIT; cat a' >b
c: b
	@printf '%s|%s\n' "$$(cat a)" "$$(cat b | tr '\n' ' ')" >c; printf 'made %s\n' $(shell printf c)
clean:
	@rm -f a b c
EOF
want=$(make -s -C "$D/mk" all 2>&1; make -s -C "$D/mk" clean)
got=$(run make -s -C "$D/mk" all 2>&1; rc=$?; make -s -C "$D/mk" clean; exit $rc); rc=$?
is "0 $want" "$rc $got" "make on the probed libc: exits, same output"

# the threaded program: its own SIGTRAP handler, every signal blocked,
# getppid an int3 probe (unoptimized through its control directory)
want=$("$P")
calls0=$(printf '%s\n' "$want" | awk '$1 == "getppid" && $2 == "calls" { print $3 }')
got=$(KPREWRITE_CTL_DELAY_MS=0 KPREWRITE_REPORT=all run "$P" unoptimize 2>"$D/prog.hits"); rc=$?
is "0 $want" "$rc $got" "a program with its own SIGTRAP handler and masks, getppid int3, 4 threads: exits, same output ($(grep -v '^kprewrite: [0-9a-f]' "$D/prog.hits" | head -n 1))"
calls=$(printf '%s\n' "$got" | awk '$1 == "getppid" && $2 == "calls" { print $3 }')
# two reports: the forked child's own (its 1000 calls, then _exit) and the parent's
hits=$(awk '$4 == "getppid+0x0" { print $6 }' "$D/prog.hits" | sort -n | tr '\n' ' ')
is "$calls0 $(printf '%s\n' 1000 "$calls0" | sort -n | tr '\n' ' ')" "${calls:-none} ${hits:-none}" \
    "every getppid call counted through its trap, once: the parent's in its report, the forked child's 1000 in the child's (at its _exit)"

# the control directory while libc is probed: its thread's list runs
# libc's vfprintf (int3); disable takes effect, the guard stays; the trace
# writer's write() is an int3 probe
rm -f "$D/go" "$D/go.ready" "$D/trace"
KPREWRITE_CTL_DELAY_MS=0 KPREWRITE_EVENTS='p:getppid getppid' KPREWRITE_TRACE="$D/trace" \
    LIBC_SIG_UNOPTIMIZE=__write run "$P" unoptimize pause "$D/go" >"$D/pause.out" 2>"$D/pause.err" &
pid=$!
n=0
while [ $n -lt 300 ] && ! [ -e "$D/go.ready" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; n=$((n + 1)); done
n=0
while [ $n -lt 300 ] && ! [ -s "$D/trace" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; n=$((n + 1)); done
if [ -e "$D/go.ready" ] && kill -0 $pid 2>/dev/null; then
    c=$(ls -d "$KPREWRITE_CTL_DIR"/[0-9]* 2>/dev/null | head -n 1)
    "$KPREWRITE" ctl "${c##*/}" list >"$D/list1" 2>&1; lrc=$?
    l=$(awk '$3 == "getppid+0x0" { print ($4 == "[OPTIMIZED]" ? "jump" : "int3"), $(NF - 2) }' "$D/list1")
    is "0 int3 $calls0" "$lrc $l" "list (its thread runs libc's int3 probes): getppid an int3 probe, its hits those of the program"
    g=$(awk '$3 ~ /^(__sigaction|pthread_sigmask)\+0x0$/ && $4 == "[OPTIMIZED]" { n++ } END { print n + 0 }' "$D/list1")
    is 2 "$g" "list shows libc's __sigaction and pthread_sigmask, jump-optimized"
    ok $([ -s "$D/trace" ]; echo $?) "the trace writer wrote the events through libc's write, an int3 probe"
    "$KPREWRITE" ctl "${c##*/}" disable getppid >"$D/dis1" 2>&1; d1=$?
    "$KPREWRITE" ctl "${c##*/}" disable __sigaction >"$D/dis2" 2>&1; d2=$?
    "$KPREWRITE" ctl "${c##*/}" list >"$D/list2" 2>&1
    st=$(awk '$3 == "getppid+0x0" || $3 == "__sigaction+0x0" { printf "%s %s ", $3, $4 }' "$D/list2")
    is "0 1 __sigaction+0x0 [OPTIMIZED] getppid+0x0 [DISABLED] " "$d1 $d2 $st" \
        "disable getppid takes effect; disable __sigaction is refused, the guard stays ($(head -n 1 "$D/dis2"))"
    touch "$D/go"; wait $pid; rc=$?
    after=$(awk '$1 == "getppid" && $2 == "calls" { print $3 }' "$D/pause.out")
    list_hits=$(awk '$3 == "getppid+0x0" { print $(NF - 2) }' "$D/list2")
    is "0 $((calls0 + 1000)) $calls0" "$rc $after $list_hits" "the program ends; its 1000 calls after the disable are not counted"
else
    touch "$D/go"; wait $pid; rc=$?
    ok 1 "the paused program (exit $rc): no control directory or no trace within 30 s ($(fuse_why); $(head -n 2 "$D/pause.err"))"
fi
done_testing
