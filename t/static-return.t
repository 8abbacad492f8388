#!/bin/sh
# Return events in static executables (glibc -static, -static-pie, musl
# -static): the static runtime hooks a return event's calls
# (src/runtime/static/hook.c). t/data/static-ret.c calls its functions a
# known number of times: exact event lines (return values of several
# types, a filter, the caller), the latency each record keeps (JSON's
# dur), recursion, longjmp out of hooked calls, threads, pthread_exit,
# fork, backtrace, a full hook table (nmissed), kprewrite ctl PID trace,
# KPREWRITE_EVENTS at start-up; every program's output identical to the
# original's; the same lines as the runtime library's for the program
# built dynamic; a C++ exception through hooked calls; and what stays
# refused (a stripped program: t/go.t has Go's).
. "$KP_SRCDIR/t/lib.sh"
need "$CC" nm readelf mkfifo perl
D=$(tmpdir static-return)
SRC=$KP_SRCDIR/t/data/static-ret.c

RI='r:ri ret_int ret=$retval:s32'
RL='r:rl ret_long $retval'
RS='r:rs ret_str s=+0($retval):string'
RD='p:rd ret_double%return $retval'
RP='r:rp ret_pair a=%ax b=%dx'
SL='r:sl slow $retval:s32'
RC='r:rc rec $retval:s64'
DP='r:dp deep $retval:s32'
FK='r:fk in_fork $retval:s32'
TE='r:te ends_thread $retval:s32'
OU='r:ou outer $retval:s32'
# events FILE: its lines from the event's name on (no thread, CPU or time)
events() { sed 's/^.*[0-9]: \([a-z][a-z]*: (\)/\1/' "$1"; }
# callers FILE: the same, each caller's address as CALLER
callers() { events "$1" | sed 's/(0x[0-9a-f]* <- /(CALLER <- /'; }
# symbolize TRACE PROGRAM: each caller's address as SYM+0xOFF, by the
# program's symbols (a position-dependent one: link-time addresses)
symbolize() {
    nm -n "$2" | awk -v tr="$1" '
        function hex(s,   i, v) {
            v = 0; s = tolower(s); sub(/^0x/, "", s)
            for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return v
        }
        $2 ~ /^[tTwW]$/ { a[n] = hex($1); s[n++] = $3 }
        END {
            while ((getline line < tr) > 0) {
                if (match(line, /\(0x[0-9a-f]+ <- /)) {
                    addr = hex(substr(line, RSTART + 1, RLENGTH - 5)); best = -1
                    for (i = 0; i < n && a[i] <= addr; i++) best = i
                    if (best >= 0)
                        line = substr(line, 1, RSTART) sprintf("%s+0x%x", s[best], addr - a[best]) substr(line, RSTART + RLENGTH - 4)
                }
                print line
            }
        }'
}
# count FILE EVENT: its lines
count() { grep -c ": $2: (" "$1"; }
# report FILE SYM FIELD: a field's number on SYM's line of a report or a list
report() { awk -v s="$2+0x" -v f="$3" 'index($0, "  " s) > 0 { for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$1"; }

run_all() { # PROGRAM: every applet
    "$1" types 6; "$1" slow 2 1; "$1" rec 50; "$1" jump 4; "$1" threads 3 200; "$1" texit; "$1" fork 3; "$1" bt
    "$1" rec 1100
}

check_kind() { # KIND COMPILER FLAGS...
    k=$1 cc=$2
    shift 2
    B=$D/ret-$k
    if ! $cc -O2 "$@" -o "$B" "$SRC" -pthread 2>"$D/cc.err"; then
        ok 1 "$k: the fixture builds ($(head -n 1 "$D/cc.err"))"
        return
    fi
    "$KPREWRITE" --probe "$RI" --probe "$RL" --probe "$RS" --probe "$RD" --probe "$RP" --probe "$SL" --probe "$RC" \
        --probe "$DP" --probe "$FK" --probe "$TE" --probe "$OU" -o "$B.p" "$B" >"$D/$k.bake" 2>&1
    rc=$? u=$(nm "$B" | grep -c ' [TtWw] _Unwind_\(RaiseException\|Resume_or_Rethrow\|ForcedUnwind\|Backtrace\)$')
    is "0 $u" "$rc $(grep -c '  k  _Unwind_[A-Za-z_]*+0x[04]  \[OPTIMIZED\]' "$D/$k.bake")" \
        "$k: return events baked, exit 0, with the unwinder's entry points the program has ($u) as guard points"
    (cd "$D" && run_all "$B" >"$D/$k.want" 2>&1)
    (cd "$D" && run_all "$B.p" >"$D/$k.got" 2>&1)
    cmp -s "$D/$k.want" "$D/$k.got"; ok $? "$k: every applet's output identical ($(wc -l <"$D/$k.want") lines: types, xmm0 and rdx too)"

    # return values of several types, each call's line
    KPREWRITE_TRACE="$D/$k.types" "$B.p" types 2 >/dev/null
    is 'ri: (CALLER <- ret_int) ret=0
rl: (CALLER <- ret_long) arg1=0x0
rs: (CALLER <- ret_str) s="even"
rd: (CALLER <- ret_double) arg1=0x4
rp: (CALLER <- ret_pair) a=0x7 b=0x0
ri: (CALLER <- ret_int) ret=-1
rl: (CALLER <- ret_long) arg1=0xf4243
rs: (CALLER <- ret_str) s="odd"
rd: (CALLER <- ret_double) arg1=0x3
rp: (CALLER <- ret_pair) a=0x8 b=0xb' "$(callers "$D/$k.types")" \
        "$k: \$retval as s32, x64, a string behind it, a double's rax, and rax:rdx: each return's line"
    if readelf -hW "$B" | grep -q 'Type: *EXEC'; then
        is "10" "$(symbolize "$D/$k.types" "$B" | grep -c '(main+0x[0-9a-f]* <- ')" "$k: ... each caller's address inside main"
    else
        like '^\(0x[0-9a-f]+ <- ' "$(events "$D/$k.types" | sed 's/^[a-z]*: //' | head -n 1)" \
            "$k: ... the caller an address (position independent: not symbolized here)"
    fi

    # the latency each record keeps: JSON's dur, slow() sleeping 20 ms
    KPREWRITE_TRACE_FORMAT=json KPREWRITE_TRACE="$D/$k.json" "$B.p" slow 3 20 >/dev/null
    is "3 0" "$(grep -c '"ph":"X"' "$D/$k.json") $(sed -n 's/.*"name":"slow","cat":"sl","ph":"X","ts":[0-9.]*,"dur":\([0-9]*\)\..*"args":{"arg1":20}}.*/\1/p' "$D/$k.json" |
        awk '$1 < 20000 || $1 > 2000000 { bad++ } END { print bad + 0 + (NR != 3) }')" \
        "$k: KPREWRITE_TRACE_FORMAT=json: slow's 3 returns, each a complete event whose dur (the latency) is 20 ms to 2 s"
    like '^\[$' "$(head -n 1 "$D/$k.json")" "$k: ... one JSON array"

    # recursion: every return matched
    KPREWRITE_TRACE="$D/$k.rec" KPREWRITE_REPORT=1 "$B.p" rec 50 >/dev/null 2>"$D/$k.rec.rep"
    is "50 1275 50 0" "$(count "$D/$k.rec" rc) $(sed -n 's/.*: rc: .* arg1=\([0-9]*\)$/\1/p' "$D/$k.rec" | awk '{ s += $1 } END { print s }') $(report "$D/$k.rec.rep" rec hits) $(report "$D/$k.rec.rep" rec nmissed)" \
        "$k: recursion 50 deep: 50 returns, their values 1..50 (sum 1275), 50 hits, nmissed 0"
    caller() { events "$D/$k.rec" | sed -n "s/^rc: (\\(0x[0-9a-f]*\\) <- rec) arg1=$1\$/\\1/p"; }
    c1=$(caller 1) c49=$(caller 49) c50=$(caller 50)
    is "same other" "$([ -n "$c1" ] && [ "$c1" = "$c49" ] && echo same) $([ -n "$c50" ] && [ "$c50" != "$c1" ] && echo other)" \
        "$k: ... the inner ones return into rec itself ($c1), the outermost elsewhere ($c50)"

    # longjmp out of 6 hooked calls, 4 times: none of them returns; then
    # 3 calls that do, each recorded
    KPREWRITE_TRACE="$D/$k.jump" KPREWRITE_REPORT=1 "$B.p" jump 4 >/dev/null 2>"$D/$k.jump.rep"
    is "0 24 ri: (CALLER <- ret_int) ret=-1
ri: (CALLER <- ret_int) ret=20
ri: (CALLER <- ret_int) ret=-3" "$(count "$D/$k.jump" dp) $(report "$D/$k.jump.rep" deep hits) $(callers "$D/$k.jump")" \
        "$k: longjmp out of hooked calls (24 hits, no return): the calls after it recorded"

    # threads: each its own count
    KPREWRITE_TRACE="$D/$k.thr" "$B.p" threads 3 200 >/dev/null
    is "600 3 200 200 200" "$(count "$D/$k.thr" rl) $(sed 's/^.*-\([0-9]*\) *\[.*/\1/' "$D/$k.thr" | sort | uniq -c | awk '{ n++; c = c " " $1 } END { print n c }')" \
        "$k: 3 threads, 200 calls each: 600 returns, 200 on each thread"

    # pthread_exit inside a hooked call: the forced unwind finds its frame
    KPREWRITE_TRACE="$D/$k.texit" "$B.p" texit >"$D/$k.texit.out"
    is "texit 42 40|0 1" "$(cat "$D/$k.texit.out")|$(count "$D/$k.texit" te) $(count "$D/$k.texit" ri)" \
        "$k: pthread_exit inside a hooked call: the thread's value kept, no return recorded for it, the next call's"

    # fork inside a hooked call: both return from it
    KPREWRITE_TRACE="$D/$k.fork" "$B.p" fork 3 >"$D/$k.fork.out"
    is "child 19 0|parent 19 3|fk: (CALLER <- in_fork) arg1=3|3" \
        "$(tr '\n' '|' <"$D/$k.fork.out")$(callers "$D/$k.fork" | grep '^fk:')|$(count "$D/$k.fork" ri)" \
        "$k: fork inside a hooked call: the child returns from it too; the parent's trace has its return (the child's status)"

    # the hook table full (1024 calls at once): the rest missed, counted
    KPREWRITE_TRACE="$D/$k.full" KPREWRITE_REPORT=1 "$B.p" rec 1100 >"$D/$k.full.out" 2>"$D/$k.full.rep"
    w=$(count "$D/$k.full" rc) m=$(report "$D/$k.full.rep" rec nmissed)
    is "rec 1100 1100 yes" "$(cat "$D/$k.full.out") $((w + ${m:-0})) $([ "${m:-0}" -ge 76 ] && [ "$w" -le 1024 ] && echo yes)" \
        "$k: 1100 calls deep: output identical, $w returns recorded + $m missed (nmissed) = 1100"

    # a count-only bake, return events given at start-up, with a filter;
    # kprewrite ctl PID trace and list on it while it runs
    "$KPREWRITE" --probe 'ret_int%return' --probe ret_long -o "$B.c" "$B" >/dev/null 2>&1
    KPREWRITE_EVENTS='r:neg ret_int ret=$retval:s32 if ret < 0' KPREWRITE_TRACE="$D/$k.env" "$B.c" types 6 >/dev/null
    is "neg: (CALLER <- ret_int) ret=-1
neg: (CALLER <- ret_int) ret=-3
neg: (CALLER <- ret_int) ret=-5" "$(callers "$D/$k.env")" \
        "$k: KPREWRITE_EVENTS, r: on a return point baked count-only, a filter (ret < 0): 3 of 6 returns"
    KPREWRITE_EVENTS='r:bad ret_long $retval' "$B.c" types 1 2>&1 >/dev/null | grep -c "KPREWRITE event 'r:bad ret_long \$retval' (KPREWRITE_EVENTS): no probed point matches" >"$D/$k.bad"
    is 1 "$(cat "$D/$k.bad")" "$k: ... r: on an entry point (no return point there): one line"
    rm -f "$D/in" "$D/out"
    mkfifo "$D/in" "$D/out"
    KPREWRITE_EVENTS='r:neg ret_int ret=$retval:s32 if ret < 0' "$B.c" serve <"$D/in" >"$D/out" 2>"$D/serve.err" &
    pid=$!
    exec 3>"$D/in" 4<"$D/out"
    echo "call 8" >&3; read -r answer <&4
    : >"$D/ctl.trace"
    "$KPREWRITE" ctl $pid trace >>"$D/ctl.trace" 2>"$D/ctl.trace.err" &
    tpid=$!
    wait_lines "$D/ctl.trace" 4
    kill -INT $tpid; wait $tpid
    "$KPREWRITE" ctl $pid list >"$D/ctl.list"
    # the same as Chrome trace events: one array, a complete event a return
    # (dur: the call's latency), ended when ctl is interrupted
    echo "call 8" >&3; read -r answer1 <&4
    : >"$D/ctl.json"
    "$KPREWRITE" ctl $pid trace --format=json >>"$D/ctl.json" 2>&1 &
    tpid=$!
    wait_lines "$D/ctl.json" 4
    sleep 0.3; kill -INT $tpid; wait $tpid
    is "4 X ret_int neg -1,-3,-5,-7 ok" "$(perl -MJSON::PP -e '
        local $/; my $ev = decode_json(<STDIN>);
        my %ph = map { $_->{ph} => 1 } @$ev; my %n = map { $_->{name} . " " . $_->{cat} => 1 } @$ev;
        my $dur = grep { $_->{dur} >= 0 && $_->{ts} > 0 } @$ev;
        printf "%d %s %s %s %s\n", scalar @$ev, join(",", keys %ph), join(",", keys %n),
            join(",", map { $_->{args}{ret} } @$ev), $dur == @$ev ? "ok" : "bad";' <"$D/ctl.json" 2>&1)" \
        "$k: ctl trace --format=json: the 4 returns as complete events, ret in args, a duration each"
    # untraced: ret_int's calls counted, no longer hooked, nothing recorded
    "$KPREWRITE" ctl $pid untrace neg 2>"$D/untrace.err"; urc=$?
    echo "call 6" >&3; read -r answer2 <&4
    "$KPREWRITE" ctl $pid trace >"$D/ctl.trace2" 2>&1 &
    tpid=$!; sleep 1; kill -INT $tpid; wait $tpid
    "$KPREWRITE" ctl $pid list >"$D/ctl.list2"
    echo quit >&3
    wait $pid; rc=$?
    exec 3>&- 4<&-
    is "0 0 22 0" "$urc $(grep -c ': neg: ' "$D/ctl.trace2") $(report "$D/ctl.list2" ret_int hits) $(report "$D/ctl.list2" ret_int nmissed)" \
        "$k: ctl untrace neg: 6 more calls counted, none recorded, none missed ($(cat "$D/untrace.err"))"
    is "0 done 104|neg: (CALLER <- ret_int) ret=-1|neg: (CALLER <- ret_int) ret=-3|neg: (CALLER <- ret_int) ret=-5|neg: (CALLER <- ret_int) ret=-7|" \
        "$rc $answer|$(callers "$D/ctl.trace" | tr '\n' '|')" "$k: kprewrite ctl PID trace: the return lines, as they happen"
    is "8 0" "$(report "$D/ctl.list" ret_int hits) $(report "$D/ctl.list" ret_int nmissed)" "$k: ctl list: ret_int hit 8 times, nmissed 0"

    # stripped: the unwinder cannot be found to guard; refused
    cp "$B" "$B.s" && strip "$B.s"
    out=$("$KPREWRITE" --probe "$RI" -o "$B.sp" "$B.s" 2>&1); rc=$?
    is "1 absent 1" "$rc $([ -e "$B.sp" ] && echo written || echo absent) $(printf '%s\n' "$out" | wc -l)" \
        "$k stripped: a return event: exit 1, nothing written, one line"
    like "a return event in a stripped static executable: kprewrite cannot find its unwinder" "$out" "$k stripped: ... saying why"
    a=$(nm "$B" | awk '$3 == "ret_int" { sub(/^0+/, "", $1); print $1 }')
    "$KPREWRITE" --probe "fde@0x$a%return" -o "$B.sc" "$B.s" >/dev/null 2>&1
    KPREWRITE_EVENTS="r:neg fde@0x$a ret=\$retval:s32" KPREWRITE_TRACE="$D/$k.strace" "$B.sc" types 2 >"$D/$k.sout" 2>"$D/$k.serr"
    is "$("$B" types 2)|1|0" "$(cat "$D/$k.sout")|$(grep -c "KPREWRITE event 'r:neg fde@0x$a ret=\$retval:s32': a return event where the unwinder's entry points are not all guarded (a stripped program" "$D/$k.serr")|$(cat "$D/$k.strace" 2>/dev/null | wc -l)" \
        "$k stripped: r: in KPREWRITE_EVENTS on a return point baked count-only: left out in one line, the output identical"
}

check_kind glibc-static "$CC" -static

# the same definitions on the same program built dynamic, traced by the
# runtime library: the same lines, each caller symbolized here
use_runtime
B=$D/ret-glibc-static
if $CC -O2 -o "$D/ret-dyn" "$SRC" -pthread 2>"$D/cc.err" &&
   "$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe "$RI" --probe "$RL" --probe "$RS" \
       --probe "$RD" --probe "$RP" --probe "$RC" -o "$D/ret-dyn.p" "$D/ret-dyn" >/dev/null 2>&1; then
    (preload_sanitizer; cd "$D" && KPREWRITE_TRACE="$D/dyn.types" ./ret-dyn.p types 3 >/dev/null &&
        KPREWRITE_TRACE="$D/dyn.rec" ./ret-dyn.p rec 5 >/dev/null)
    KPREWRITE_TRACE="$D/st.types" "$B.p" types 3 >/dev/null
    KPREWRITE_TRACE="$D/st.rec" "$B.p" rec 5 >/dev/null
    symbolize "$D/st.types" "$B" >"$D/st.types.s"
    symbolize "$D/st.rec" "$B" >"$D/st.rec.s"
    is "$(events "$D/dyn.types")" "$(events "$D/st.types.s")" \
        "return events: the static runtime's lines are the runtime library's (the program built dynamic; callers symbolized)"
    is "$(events "$D/dyn.rec")" "$(events "$D/st.rec.s")" "... and a recursion's"
else
    ok 1 "the dynamic program builds and bakes ($(head -n 1 "$D/cc.err"))"
fi
check_kind glibc-static-pie "$CC" -static-pie
check_kind musl-static musl-gcc -static

# a C++ exception through two hooked calls (a cleanup on the way):
# _Unwind_RaiseException's guard gives them their return addresses back
X=$D/throw
if command -v g++ >/dev/null && g++ -O2 -static -o "$X" "$KP_SRCDIR/t/data/static-ret-throw.cc" 2>"$D/cc.err"; then
    "$KPREWRITE" --probe 'r:th thrower $retval:s32' --probe 'r:md middle $retval:s32' -o "$X.p" "$X" >/dev/null 2>&1
    ok $? "C++ (g++ -static): return events on thrower and middle baked"
    KPREWRITE_TRACE="$D/throw.trace" KPREWRITE_REPORT=1 "$X.p" 9 >"$D/throw.got" 2>"$D/throw.rep"; rc=$?
    is "0 $("$X" 9)" "$rc $(cat "$D/throw.got")" "C++: 3 exceptions through hooked calls: output identical (sum, caught, destructors)"
    is "th: (CALLER <- thrower) arg1=2
md: (CALLER <- middle) arg1=3
th: (CALLER <- thrower) arg1=4
md: (CALLER <- middle) arg1=5
th: (CALLER <- thrower) arg1=8
md: (CALLER <- middle) arg1=9
th: (CALLER <- thrower) arg1=10
md: (CALLER <- middle) arg1=11
th: (CALLER <- thrower) arg1=14
md: (CALLER <- middle) arg1=15
th: (CALLER <- thrower) arg1=16
md: (CALLER <- middle) arg1=17|3 0 0" \
        "$(callers "$D/throw.trace")|$(report "$D/throw.rep" _Unwind_RaiseException hits) $(report "$D/throw.rep" thrower nmissed) $(report "$D/throw.rep" middle nmissed)" \
        "C++: the 6 calls that returned recorded, the 3 thrown through not; the unwinder's guard ran 3 times"
else
    ok 1 "g++ -static builds the C++ fixture ($(head -n 1 "$D/cc.err" 2>/dev/null))"
fi
done_testing
