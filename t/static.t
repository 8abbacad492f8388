#!/bin/sh
# Static executables (glibc -static, -static-pie, musl -static): kprewrite
# adds the pool and the static runtime (src/runtime/static). A busybox-like
# program (t/data/static-box.c: applets, getopt, stdio, fork and exec of
# itself, signals) with every function entry probed: identical output,
# exact counts at exit (KPREWRITE_REPORT) for a jump-optimized point and an
# int3 point, and kprewrite ctl PID list/disable/enable/unoptimize/optimize
# while it runs (through /proc/PID/mem: the program has no thread of the
# runtime), steered through pipes, never by sleeping.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf mkfifo
D=$(tmpdir static)
SRC=$KP_SRCDIR/t/data/static-box.c
# hits FILE SYM: the count of SYM+0x0 in a report or a list
hits() { awk -v s="$2+0x0" '$0 ~ /hits/ && (index($0, "  " s "  ") > 0) { for (i = 1; i < NF; i++) if ($i == "hits") print $(i + 1) }' "$1"; }
# state FILE SYM: SYM's [DISABLED][OPTIMIZED] column in a list
state() { awk -v s="$2+0x0" '$3 == s { print ($4 == "hits" ? "-" : $4) }' "$1"; }

# the applets, each run of the original and of the probed program
run_all() { # PROGRAM
    "$1" count 25; "$1" echo a b c; "$1" opts -a -a -b val rest; "$1" sig; "$1" spawn; "$1" rawpid 3
    printf 'one\ntwo\n' | "$1" cat; "$1" nosuch 2>&1; echo "rc $?"
    # (the shell's line about the signal, which names a pid, to /dev/null)
    (ulimit -c 0; "$1" trap int3; echo "own int3: rc $?") 2>/dev/null; (ulimit -c 0; "$1" trap raise; echo "raised: rc $?") 2>/dev/null
}

# the events every probed box carries: registers, dereferences (nested),
# strings, a filter (word's n == 3 left out), $comm, and one on the int3
# point raw_getpid
WD='p:wd word s=+0(%di):string n=%si:s64 pn=+0(%dx):s64 pw=+0(+8(%dx)):string if n != 3'
TK='p:tk tick x=%di:s64 cm=$comm'
RP='p:rp raw_getpid'
# events FILE: its lines from the event's name on (no thread, CPU or time)
events() { sed 's/^.*[0-9]: \([a-z][a-z]*: (\)/\1/' "$1"; }

# serve_check KIND PROGRAM: ctl on the running server
serve_check() {
    k=$1 P=$2
    rm -f "$D/in" "$D/out"
    mkfifo "$D/in" "$D/out"
    KPREWRITE_REPORT=1 "$P" serve <"$D/in" >"$D/out" 2>"$D/serve.err" &
    pid=$!
    exec 3>"$D/in" 4<"$D/out"
    ask() { echo "$1" >&3; read -r answer <&4; }
    # ctl trace follows the events from outside (the program has no thread
    # for it), from the ring's oldest: started once the program answered
    # (before, /proc/PID/exe may still be the shell's)
    ask "tick 5"
    : >"$D/ctl.trace"   # (there before wait_lines looks: the job below may open it later)
    "$KPREWRITE" ctl $pid trace >>"$D/ctl.trace" 2>"$D/ctl.trace.err" &
    tpid=$!
    wait_lines "$D/ctl.trace" 5
    kill -INT $tpid; wait $tpid
    is "0 1 2 3 4|$(basename "$P" | cut -c 1-15)" "$(events "$D/ctl.trace" | sed -n 's/^tk: (tick+0x0) x=\([0-9]*\) .*/\1/p' | tr '\n' ' ' | sed 's/ $//')|$(sed -n '1s/^ *\(.*\)-[0-9]* .*/\1/p' "$D/ctl.trace")" \
        "$k: ctl trace: tick's 5 events, as they happen, the thread's name (15 bytes, the kernel's comm) first"
    like "(^| )$pid( |\$)" "$("$KPREWRITE" ctl --static-pids | tr '\n' ' ')" "$k: kprewrite ctl --static-pids names it"
    "$KPREWRITE" ctl $pid list >"$D/l1" 2>&1
    is "5 [OPTIMIZED]" "$(hits "$D/l1" tick) $(state "$D/l1" tick)" "$k: ctl list: tick hit 5 times, jump-optimized"
    like '^[0-9a-f]{16}  k  main\+0x0  \[OPTIMIZED\]  hits 1  nmissed 0$' "$(grep '  main+0x0  ' "$D/l1")" \
        "$k: ctl list reads like the dynamic runtime's list"
    "$KPREWRITE" ctl $pid disable tick; ok $? "$k: ctl disable tick"
    ask "tick 7"
    "$KPREWRITE" ctl $pid list >"$D/l2"
    is "done 12 5 [DISABLED][OPTIMIZED]" "$answer $(hits "$D/l2" tick) $(state "$D/l2" tick)" \
        "$k: disabled: 7 more calls, not counted"
    "$KPREWRITE" ctl $pid enable tick && "$KPREWRITE" ctl $pid unoptimize tick; ok $? "$k: ctl enable, unoptimize tick"
    ask "tick 3"
    "$KPREWRITE" ctl $pid list >"$D/l3"
    is "done 15 8 -" "$answer $(hits "$D/l3" tick) $(state "$D/l3" tick)" "$k: unoptimized: 3 calls through the int3, counted"
    "$KPREWRITE" ctl $pid optimize tick; ok $? "$k: ctl optimize tick"
    ask "tick 2"
    "$KPREWRITE" ctl $pid list >"$D/l4"
    is "done 17 10 [OPTIMIZED]" "$answer $(hits "$D/l4" tick) $(state "$D/l4" tick)" "$k: optimized again: counted"
    like "ctl $pid: optimize raw_getpid: the probes it names can only be int3 probes" \
        "$("$KPREWRITE" ctl $pid optimize raw_getpid 2>&1)" "$k: an int3 point cannot be optimized"
    like "ctl $pid: disable _\\[eE\\]xit: .*static runtime's guards" "$("$KPREWRITE" ctl $pid disable '_[eE]xit' 2>&1)" \
        "$k: the report's guard stays enabled"
    like "ctl $pid: hist: a static program's runtime .* has list, enable, disable, optimize, unoptimize, trace \\(text or json\\), events and untrace only" \
        "$("$KPREWRITE" ctl $pid hist 2>&1)" "$k: what it has not: one line"
    ask ownsig
    "$KPREWRITE" ctl $pid list >"$D/l5"
    is "[DISABLED] [OPTIMIZED]" "$(state "$D/l5" raw_getpid) $(state "$D/l5" tick)" \
        "$k: a SIGTRAP handler of its own: the int3 probe disabled, the jump kept"
    like "ctl $pid: unoptimize tick: 1 of the points it names need an int3, and the program has a SIGTRAP handler" \
        "$("$KPREWRITE" ctl $pid unoptimize tick 2>&1)" "$k: ... ctl unoptimize refused, saying why"
    # events and untrace: what the ring holds read first (tick's 3 calls
    # through the int3 and 2 optimized; none while disabled), then tick's
    # event untraced: its calls counted, nothing recorded
    like '^p:kprobes/tk tick\+0x0 x=%di:s64 cm=\$comm  # dropped 0$' "$("$KPREWRITE" ctl $pid events 2>&1 | grep /tk)" \
        "$k: ctl events lists tick's event as kprobe_events would"
    "$KPREWRITE" ctl $pid trace >"$D/ctl.trace1" 2>&1 &
    tpid=$!; wait_lines "$D/ctl.trace1" 5; sleep 0.3; kill -INT $tpid; wait $tpid
    is 5 "$(grep -c ': tk: ' "$D/ctl.trace1")" "$k: the ring held tick's 5 events since (3 through the int3, 2 optimized)"
    "$KPREWRITE" ctl $pid untrace tk; ok $? "$k: ctl untrace tk"
    like '^p:kprobes/tk tick\+0x0 .*  \[UNTRACED\]  # dropped 0$' "$("$KPREWRITE" ctl $pid events | grep /tk)" \
        "$k: ctl events: [UNTRACED]"
    ask "tick 4"
    "$KPREWRITE" ctl $pid trace >"$D/ctl.trace2" 2>&1 &
    tpid=$!; sleep 1; kill -INT $tpid; wait $tpid
    "$KPREWRITE" ctl $pid list >"$D/l6"
    is "0 14" "$(grep -c ': tk: ' "$D/ctl.trace2") $(hits "$D/l6" tick)" "$k: untraced: tick's 4 more calls counted, none recorded"
    like "untrace nosuch: no event matches" "$("$KPREWRITE" ctl $pid untrace nosuch 2>&1)" "$k: ctl untrace of no event: one line"
    echo quit >&3
    wait $pid; rc=$?
    exec 3>&- 4<&-
    is "0 14" "$rc $(hits "$D/serve.err" tick)" "$k: exit 0; its report at exit agrees with ctl list (tick 14)"
    like "installs a SIGTRAP handler of its own" "$(cat "$D/serve.err")" "$k: ... and its stderr says its int3 probes went"
}

check_kind() { # KIND COMPILER FLAGS...
    k=$1 cc=$2
    shift 2
    B=$D/box-$k
    if ! $cc -O2 "$@" -o "$B" "$SRC" 2>"$D/cc.err"; then
        ok 1 "$k: the fixture builds ($(head -n 1 "$D/cc.err"))"
        return
    fi
    cp "$B" "$B.orig"
    "$KPREWRITE" --probe '*' --probe "$WD" --probe "$TK" --probe "$RP" -o "$B.p" "$B" >"$D/$k.report" 2>"$D/$k.err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ] || [ $rc -eq 3 ]; echo $?) \
        "$k: every function entry baked, with three events (exit $rc: $(tail -n 1 "$D/$k.err"))"
    cmp -s "$B" "$B.orig"; ok $? "$k: the input untouched (-o)"
    like "the static runtime" "$(tail -n 1 "$D/$k.err")" "$k: the static runtime added"
    is "1" "$(readelf -SW "$B.p" | grep -c '\.kprewrite\.rt ')" "$k: in its own section, .kprewrite.rt"
    is "[INT3]" "$(awk '$3 == "raw_getpid+0x0" { print $4 }' "$D/$k.report")" "$k: raw_getpid is an int3 probe"
    (cd "$D" && run_all "$B.orig" >"$D/$k.want" 2>&1)
    (cd "$D" && run_all "$B.p" >"$D/$k.got" 2>&1)
    cmp -s "$D/$k.want" "$D/$k.got"; ok $? "$k: output identical ($(wc -l <"$D/$k.want") lines)"
    KPREWRITE_REPORT=1 "$B.p" count 1000 >/dev/null 2>"$D/$k.hits"
    is "1000 1" "$(hits "$D/$k.hits" tick) $(hits "$D/$k.hits" main)" "$k: exact hits (tick 1000, main 1)"
    # an event on every entry, given at start-up: a line for each hit
    # counted, the report's point _exit's own too (its event recorded before
    # its guard writes the trace)
    KPREWRITE_EVENTS='p * a=%di' KPREWRITE_REPORT=all KPREWRITE_TRACE="$D/$k.every" "$B.p" count 100 >/dev/null 2>"$D/$k.every.rep"
    is "$(awk '$5 == "hits" { h += $6 } END { print h + 0 }' "$D/$k.every.rep") 1" \
        "$(wc -l <"$D/$k.every" | tr -d ' ') $(grep -c ': p__[eE]xit_0: ' "$D/$k.every")" \
        "$k: an event on every entry: one line a hit, _exit's included"
    # the events, written at exit (KPREWRITE_TRACE)
    KPREWRITE_TRACE="$D/$k.trace" "$B.p" words alpha be gamma delta >/dev/null
    is "wd: (word+0x0) s=\"alpha\" n=1 pn=1 pw=\"alpha\"
wd: (word+0x0) s=\"be\" n=2 pn=2 pw=\"be\"
wd: (word+0x0) s=\"delta\" n=4 pn=4 pw=\"delta\"
wd: (word+0x0) s=(fault) n=-1 pn=(fault) pw=(fault)" "$(events "$D/$k.trace")" \
        "$k: KPREWRITE_TRACE: fetch-args, a filter and a fault, written at exit"
    like "^ *$(basename "$B.p" | cut -c 1-15 | sed 's/\./\\./g')-[0-9]+ +\\[[0-9]{3}\\] [0-9]+\\.[0-9]{6}: wd: " "$(head -n 1 "$D/$k.trace")" \
        "$k: ... each line as ftrace's, COMM-TID [CPU] SECS.USECS: first"
    KPREWRITE_TRACE=- KPREWRITE_REPORT=1 "$B.p" rawpid 4 >/dev/null 2>"$D/$k.rp"
    is "4 4" "$(grep -c ': rp: (raw_getpid+0x0)$' "$D/$k.rp") $(hits "$D/$k.rp" raw_getpid)" \
        "$k: an event on the int3 point: 4 hits, 4 events (KPREWRITE_TRACE=-: stderr)"
    KPREWRITE_TRACE="$D/$k.small" KPREWRITE_TRACE_BUFFER=4 KPREWRITE_REPORT=1 "$B.p" count 400 >/dev/null 2>"$D/$k.drop"
    w=$(grep -c ': tk: (tick+0x0) x=' "$D/$k.small")
    dr=$(awk '$4 == "tick+0x0" { for (i = 5; i < NF; i++) if ($i == "dropped") print $(i + 1) }' "$D/$k.drop")
    is "400 yes" "$((w + ${dr:-0})) $([ "${dr:-0}" -gt 0 ] && echo yes)" \
        "$k: a 4 KiB ring (KPREWRITE_TRACE_BUFFER=4): $w written + ${dr:-0} dropped = tick's 400 hits"
    KPREWRITE_REPORT=1 "$B.p" tinystack >/dev/null 2>"$D/$k.hits"
    is "7 1" "$? $(hits "$D/$k.hits" main)" "$k: _exit on a 640-byte stack: exit 7, the report printed (on the runtime's own stack)"
    KPREWRITE_REPORT=all "$B.p" rawpid 7 >/dev/null 2>"$D/$k.hits"
    is "7 0" "$(hits "$D/$k.hits" raw_getpid) $(hits "$D/$k.hits" tick)" "$k: the int3 point: exact hits (raw_getpid 7)"
    like "points hit, [0-9]+ never hit" "$(KPREWRITE_REPORT=1 "$B.p" echo 2>&1 >/dev/null | tail -n 1)" \
        "$k: KPREWRITE_REPORT=1: the summary line"
    serve_check "$k" "$B.p"
    # the program's own SIGTRAP handler: the int3 probes put back first
    KPREWRITE_REPORT=all "$B.p" ownsig 5 >"$D/$k.own" 2>"$D/$k.own.err"
    is "$("$B" ownsig 5)" "$(cat "$D/$k.own")" "$k: a SIGTRAP handler of its own: output identical"
    like "installs a SIGTRAP handler of its own: the int3 probes are disabled" "$(cat "$D/$k.own.err")" \
        "$k: ... and one line saying its int3 probes are disabled"
    is "0" "$(hits "$D/$k.own.err" raw_getpid)" "$k: ... raw_getpid, an int3 probe, not counted since"
    # stripped: no symbol names _exit; kprewrite knows it by its code
    cp "$B" "$B.s" && strip "$B.s" && "$KPREWRITE" --probe '*' -o "$B.sp" "$B.s" >/dev/null 2>&1
    KPREWRITE_REPORT=1 "$B.sp" count 300 >"$D/$k.sout" 2>"$D/$k.serr"
    is "$("$B" count 300)" "$(cat "$D/$k.sout")" "$k stripped: every fde@ entry probed, output identical"
    tick=fde@0x$(nm "$B" | awk '$3 == "tick" { sub(/^0+/, "", $1); print $1 }')
    is "300" "$(hits "$D/$k.serr" "$tick")" "$k stripped: the report at its _exit, found by its code ($tick hit 300 times)"
    "$B.sp" ownsig 5 >"$D/$k.sown" 2>"$D/$k.sown.err"
    is "$("$B" ownsig 5)" "$(cat "$D/$k.sown")" "$k stripped: a SIGTRAP handler of its own: output identical (sigaction found by its code)"
    like "installs a SIGTRAP handler of its own" "$(cat "$D/$k.sown.err")" "$k stripped: ... and the line saying so"
}

check_kind glibc-static "$CC" -static

# the same definitions on the same program built dynamic, traced by the
# runtime library: the same lines from the event's name on
use_runtime
if $CC -O2 -o "$D/box-dyn" "$SRC" 2>"$D/cc.err" &&
   "$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe "$WD" -o "$D/box-dyn.p" "$D/box-dyn" \
       >/dev/null 2>&1; then
    # (a sanitizer build's runtime library needs its libasan first; the
    # static programs must not see LD_PRELOAD: a subshell)
    (preload_sanitizer; cd "$D" && KPREWRITE_TRACE="$D/dyn.trace" ./box-dyn.p words alpha be gamma delta >/dev/null)
    is "$(events "$D/glibc-static.trace")" "$(events "$D/dyn.trace")" \
        "the static runtime's lines are the runtime library's (the same definition, the program built dynamic)"
else
    ok 1 "the dynamic box builds and bakes ($(head -n 1 "$D/cc.err"))"
fi
check_kind glibc-static-pie "$CC" -static-pie
check_kind musl-static musl-gcc -static

# the other detour layouts: inline and shared detours call the runtime's
# dispatcher (C) rather than its enter routine
B=$D/box-glibc-static
for layout in inline shared; do
    "$KPREWRITE" --detours $layout --probe '*' -o "$B.$layout" "$B" >/dev/null 2>&1
    (cd "$D" && run_all "$B.$layout" >"$D/$layout.got" 2>&1)
    cmp -s "$D/glibc-static.want" "$D/$layout.got"; ok $? "--detours $layout: output identical"
    KPREWRITE_REPORT=1 "$B.$layout" count 1000 >/dev/null 2>"$D/$layout.hits"
    is "1000 1" "$(hits "$D/$layout.hits" tick) $(hits "$D/$layout.hits" main)" "--detours $layout: exact hits"
    # events defined at run time on a count-only bake, through the
    # dispatcher these detours call (pt_regs completed by kprs_dispatch_entry)
    KPREWRITE_EVENTS="$WD;$TK" KPREWRITE_TRACE="$D/env.$layout" "$B.$layout" words alpha be gamma delta >/dev/null
    is "wd: (word+0x0) s=\"alpha\" n=1 pn=1 pw=\"alpha\"
wd: (word+0x0) s=\"be\" n=2 pn=2 pw=\"be\"
wd: (word+0x0) s=\"delta\" n=4 pn=4 pw=\"delta\"
wd: (word+0x0) s=(fault) n=-1 pn=(fault) pw=(fault)" "$(events "$D/env.$layout")" \
        "--detours $layout: KPREWRITE_EVENTS at run time on a count-only bake: the baked definitions' lines"
done
# return probes: counted at the entry (no handler: the call is not hooked),
# jump-optimized and int3, with every entry probed too
"$KPREWRITE" --probe '*' --probe '*%return' -o "$B.ret" "$B" >"$D/ret.report" 2>"$D/ret.err"; rc=$?
ok $([ $rc -eq 0 ] || [ $rc -eq 2 ] || [ $rc -eq 3 ]; echo $?) "every entry and every return baked (exit $rc)"
(cd "$D" && run_all "$B.ret" >"$D/ret.got" 2>&1)
cmp -s "$D/glibc-static.want" "$D/ret.got"; ok $? "every entry and return: output identical"
KPREWRITE_REPORT=all "$B.ret" count 400 >/dev/null 2>"$D/ret.hits"
KPREWRITE_REPORT=all "$B.ret" rawpid 6 >/dev/null 2>"$D/ret.hits6"
is "r 400 r 6" "$(awk '$4 == "tick+0x0" { print $3, $6 }' "$D/ret.hits") $(awk '$4 == "raw_getpid+0x0" { print $3, $6 }' "$D/ret.hits6")" \
    "return probes: exact counts, jump (tick 400) and int3 (raw_getpid 6)"
# libc's sigaction is a return point too here: its guard still puts the
# int3 probes back before the program's own SIGTRAP handler (it was
# skipped there: the program's handler took an int3 of the runtime's and
# resumed mid-instruction, SIGSEGV)
"$B.ret" ownsig 5 >"$D/ret.own" 2>"$D/ret.own.err"; rc=$?
is "0 $("$B" ownsig 5)" "$rc $(cat "$D/ret.own")" "every entry and return, a SIGTRAP handler of its own: output identical"
like "installs a SIGTRAP handler of its own: the int3 probes are disabled" "$(cat "$D/ret.own.err")" \
    "... the guard at sigaction's return point ran"

# the events' times are CLOCK_MONOTONIC's (as /proc/uptime counts), from
# the TSC (rdtscp) or, where a CPU has none, from clock_gettime itself
# (KPREWRITE_TEST_CLOCK=monotonic takes that way here)
for clock in tsc monotonic; do
    t0=$(cut -d' ' -f1 /proc/uptime)
    KPREWRITE_TEST_CLOCK=$clock KPREWRITE_EVENTS="$TK" KPREWRITE_TRACE="$D/clock.$clock" "$B.ret" count 3 >/dev/null
    t1=$(cut -d' ' -f1 /proc/uptime)
    is "3 0" "$(grep -c ': tk: ' "$D/clock.$clock") $(sed 's/^.*\] \([0-9.]*\): .*/\1/' "$D/clock.$clock" |
        awk -v a="$t0" -v b="$t1" '$1 + 0 < a - 0.02 || $1 + 0 > b + 0.02 { bad++ } END { print bad + 0 }')" \
        "the clock ($clock): 3 events, each stamped between two readings of /proc/uptime ($t0, $t1)"
done

# events defined at run time on compact detours (a count-only bake of
# every entry and return), with what it cannot take said in one line each
KPREWRITE_EVENTS="$TK;p:bad nosuch x=%di;p:mal tick x=%zz" KPREWRITE_TRACE="$D/env.compact" "$B.ret" count 3 \
    >/dev/null 2>"$D/env.err"
is "tk: (tick+0x0) x=0 cm=\"box-glibc-stati\"
tk: (tick+0x0) x=1 cm=\"box-glibc-stati\"
tk: (tick+0x0) x=2 cm=\"box-glibc-stati\"" "$(events "$D/env.compact")" "KPREWRITE_EVENTS, compact detours: tick's 3 events"
like "KPREWRITE event 'p:bad nosuch x=%di' \(KPREWRITE_EVENTS\): no probed point matches" "$(cat "$D/env.err")" \
    "... a definition no probed point matches: one line"
like "KPREWRITE event 'p:mal tick x=%zz': column 15: unknown register: left out" "$(cat "$D/env.err")" \
    "... a malformed one: one line with its column"


# (return events: t/static-return.t)
KPREWRITE_TRACE=- "$B.inline" echo >/dev/null 2>"$D/ev.err"
like "static runtime: KPREWRITE_TRACE: no event is defined .*; ignored" "$(cat "$D/ev.err")" \
    "KPREWRITE_TRACE with no event defined: one line saying it is ignored"
LD_PRELOAD=/nonexistent/handlers.so "$B.p" echo >/dev/null 2>"$D/pre.err"
like "static runtime: LD_PRELOAD: .*handlers need a dynamic program" "$(cat "$D/pre.err")" \
    "a handler library preloaded: one line saying handlers need a dynamic program"

# probed before: not again in place (its records are sized to those probes)
cp "$B.p" "$D/again"
err=$("$KPREWRITE" --probe tick "$D/again" 2>&1 >/dev/null); rc=$?
is "1 same" "$rc $(cmp -s "$D/again" "$B.p" && echo same)" "a static executable probed before: exit 1, untouched"
like "again: a static executable kprewrite probed before: probe the original again" "$err" "... saying so in one line"

# a static Go program nobody here wrote, Debian's gofmt (t/go.t has the
# one built here): every entry probed, its output identical, counted
g=$(command -v gofmt || echo /usr/bin/gofmt)
if ! [ -x "$g" ]; then
    ok 1 "gofmt is installed (scripts/install-deps.sh: golang-go)"
elif readelf -lW "$g" | grep -q INTERP; then
    ok 0 "a static Go program: $g is dynamic here (t/go.t has a static one)"
else
    "$KPREWRITE" --probe '*' -o "$D/gofmt.p" "$g" >"$D/gofmt.rep" 2>"$D/gofmt.err"; rc=$?
    ok $([ $rc -le 3 ] && [ -x "$D/gofmt.p" ]; echo $?) "gofmt (static Go): every entry baked (exit $rc: $(tail -n 1 "$D/gofmt.err"))"
    sed 's/^\t//; s/ = / =  /' "$KP_SRCDIR/t/data/goprog/main.go" >"$D/ugly.go"   # for gofmt to mend
    "$g" -d "$D/ugly.go" >"$D/gofmt.want" 2>&1
    KPREWRITE_REPORT=all "$D/gofmt.p" -d "$D/ugly.go" >"$D/gofmt.got" 2>"$D/gofmt.hits"
    is "$(wc -l <"$D/gofmt.want") same" "$(wc -l <"$D/gofmt.got") $(cmp -s "$D/gofmt.want" "$D/gofmt.got" && echo same)" \
        "gofmt -d probed: output identical"
    is 1 "$(awk '$4 == "main.main+0x0" { print $6 }' "$D/gofmt.hits")" "... main.main hit once, reported at runtime.exit"
fi
done_testing
