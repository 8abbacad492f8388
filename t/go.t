#!/bin/sh
# Go programs (issue 37): a program built here with Debian's Go, stripped
# and with cgo both ways, goroutines, stacks grown (copied) while probes are
# hit, panics recovered and a channel pipeline. Its functions are named
# from .gopclntab; the runtime's stack-switching functions, return probes
# and detours other than compact ones are refused or int3 with their
# reasons; every function entry probed, its output is the original's,
# calls are counted exactly (one hit a call, not one more a stack growth),
# the control directory steers a probe, events record, and handlers run
# on the thread's runtime stack, never on a goroutine's.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir go)
use_runtime
preload_sanitizer
S=$KP_SRCDIR/t/data/goprog

# The fixture: stripped (-s -w), cgo (the C compiler Go knows, not the
# test's: a sanitizer build's flags are not the program's), no network
# (GOPATH mode, the standard library only), caches in the test's directory.
# A fixture that does not build is a failure.
P=$D/prog
if ! command -v go >/dev/null 2>&1; then
    ok 1 "go is installed (scripts/install-deps.sh: golang-go)"; done_testing
fi
mkdir -p "$D/src" && cp "$S"/*.go "$D/src/"
if (cd "$D/src" && env -u CC -u CFLAGS -u LDFLAGS -u LD_PRELOAD GOCACHE="$D/gocache" GOPATH="$D/gopath" \
        GO111MODULE=off GOFLAGS= CGO_ENABLED=1 go build -ldflags='-s -w' -o "$P" .) >"$D/go.err" 2>&1; then
    ok 0 "the Go fixture builds ($(go version | cut -d' ' -f3), stripped, cgo)"
else
    ok 1 "the Go fixture builds ($(head -n 1 "$D/go.err"))"; done_testing
fi
ok $([ -z "$(readelf -SW "$P" | grep -w '\.symtab')" ] && readelf -SW "$P" | grep -q '\.gopclntab'; echo $?) \
    "it has no .symtab, and a .gopclntab"
"$P" >"$D/want" 2>&1; ok $? "it runs"

KP() { "$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" "$@"; }
# verdict REPORT NAME: the rest of NAME+0x0's line
verdict() { awk -v s="$2+0x0" '$3 == s { $1 = $2 = $3 = ""; sub(/^ */, ""); print; exit }' "$1"; }

# 1. Names from .gopclntab: Go's full names, closures and methods
KP --check --probe 'main.*' "$P" >"$D/main.rep" 2>"$D/main.err"
for f in main.main main.grow main.leaf main.safeCall.func1 'main.(*counter).add' main.pipeline.func1; do
    like '^\[OPTIMIZED\]' "$(verdict "$D/main.rep" "$f")" "main.* names $f, jump-optimized"
done
like '^\[OPTIMIZED\]' "$(KP --check --probe 'main.(*counter).add' "$P" | awk '{ print $4 }')" \
    "a method probed by its Go name, main.(*counter).add"
KP --check --summary --probe '*' "$P" >"$D/all.rep" 2>"$D/all.err"
n=$(grep -c '^[0-9a-f]* *k  runtime\.' "$D/all.rep")
ok $([ "$n" -gt 1000 ]; echo $?) "'*' names the runtime's functions too ($n runtime.* points)"
n=$(grep -c ' fn@0x' "$D/all.rep")
ok $([ "$n" -le 20 ]; echo $?) "few functions left unnamed: $n fn@ (the C side's stripped code)"

# 2. Refusals, each with its reason
for f in runtime.morestack runtime.morestack_noctxt runtime.mcall runtime.systemstack runtime.gogo \
         runtime.asmcgocall runtime.cgocallback runtime.rt0_go runtime.sigtramp runtime.goexit; do
    like '^refused: go-runtime \(.*switches stacks' "$(verdict "$D/all.rep" "$f")" "$f is refused (go-runtime)"
done
like 'refused: go-runtime \(.*writes SP \(Go.s SPWRITE flag\)' "$(cat "$D/all.rep")" \
    "a function Go marks SPWRITE is refused (go-runtime)"
like '^refused: go-return \(main\.grow is Go.s' "$(KP --check --probe 'main.grow%return' "$P" | sed 's/^.*0x0  //')" \
    "a return probe on a Go function is refused (go-return)"
KP --check --probe 'main.*%return' "$P" >"$D/ret.rep" 2>&1
is 0 "$(grep -v 'runtime\.exit+0x0' "$D/ret.rep" | grep -vc 'refused: go-re')" \
    "main.*%return: every one refused ($(grep -c '  r  ' "$D/ret.rep") points; the exit guard aside)"
like '^\[INT3\] go-stack \(detours not compact\)' "$(KP --check --detours inline --probe main.leaf "$P" | sed 's/^.*0x0  //')" \
    "--detours inline on a Go function: int3 (go-stack)"
off=$(KP --check --disasm --probe main.grow "$P" | awk '/^ +[0-9a-f]+ +[0-9]+ / { n++ } n == 4 { print $1; exit }')
like 'go-stack \(not at the entry\)' "$(KP --check --probe "0x$off" "$P")" "a point past a Go function's entry: int3 (go-stack)"

# 3. Every function entry probed (the refused left out), and main.* alone
KP --probe '*' -o "$P.all" "$P" >/dev/null 2>"$D/bake.err"; rc=$?
ok $([ $rc -le 3 ] && [ -x "$P.all" ]; echo $?) "'*' baked (exit $rc: $(tail -n 1 "$D/bake.err"))"
KP --probe 'main.*' -o "$P.main" "$P" >/dev/null 2>&1; ok $? "main.* baked"
"$P.all" >"$D/got.all" 2>&1; rc=$?
is "0 $(cat "$D/want")" "$rc $(cat "$D/got.all")" "every entry probed: output identical"
"$P.main" >"$D/got.main" 2>&1
is "$(cat "$D/want")" "$(cat "$D/got.main")" "main.* probed: output identical"
# the outside checker (t/reloc/reloc-check, a decoder of its own) on the
# whole image: every copy, and the jumps back to an entry after
# runtime.morestack re-pointed to the entry's copy (fixups)
"$KP_BUILDDIR/t/reloc/reloc-check" -L x "$P" "$P.all" >"$D/reloc" 2>&1
like ', 0 mismatches' "$(tail -n 1 "$D/reloc")" "reloc-check, every entry of the Go program: $(tail -n 1 "$D/reloc" | sed 's/^reloc-check: x: //')"

# every return: the Go functions' refused, cgo's C functions' probed
KP --probe '*%return' -o "$P.ret" "$P" >"$D/ret-all.rep" 2>&1
is 0 "$(grep '  r  ' "$D/ret-all.rep" | grep -c 'main\..*OPTIMIZED')" "'*%return': no return of a Go function probed"
KPREWRITE_REPORT=all "$P.ret" >"$D/got.ret" 2>"$D/ret.report"; rc=$?
is "0 $(cat "$D/want")" "$rc $(cat "$D/got.ret")" "every return probed: output identical"
is 50 "$(awk '$3 == "r" && $4 == "goCallback+0x0" { print $6 }' "$D/ret.report")" \
    "the C side's returns counted: goCallback, cgo's C wrapper Go's callback goes through, 50 returns"

# 3b. Go exits by its own exit_group(2): the runtime's guard on
#    runtime.exit (baked with any probe of a Go program) prints
#    KPREWRITE_REPORT's counts and writes the trace there
like 'runtime\.exit\+0x0' "$(KP --check --probe main.leaf "$P")" "baking a Go program adds runtime.exit (Go's exit guard)"
KPREWRITE_REPORT=all "$P.main" >/dev/null 2>"$D/report"
rhits() { awk -v s="$1+0x0" '$4 == s { print $6 }' "$D/report"; }
is "1000 12004 1" "$(rhits main.leaf) $(rhits main.grow) $(rhits runtime.exit)" "KPREWRITE_REPORT at Go's exit: main.leaf, main.grow"
KPREWRITE_REPORT=all KPREWRITE_EVENTS='p:gr main.grow n=%ax:s64' KPREWRITE_TRACE="$D/exit.trace" "$P.main" \
    >/dev/null 2>"$D/report"
w=$(grep -c 'gr: (main\.grow+0x0) n=' "$D/exit.trace")
d=$(awk '$4 == "main.grow+0x0" { for (i = 5; i < NF; i++) if ($i == "dropped") print $(i + 1) }' "$D/report")
is 12004 $((w + ${d:-0})) "KPREWRITE_TRACE written at Go's exit: $w events written + ${d:-0} dropped"

# 4. Exact counts while it serves, from the control directory, which then steers
#    main.tick (each "go" line: 100 calls of tick, each calling add)
live_start "$D/live" "$P.all" serve
C=$KPREWRITE_CTL_DIR/$pid
wait_lines "$D/live/live.out" 10
"$KPREWRITE" ctl $pid list >"$D/list" 2>&1
hits() { awk -v s="$1+0x0" '$3 == s { for (i = 4; i < NF; i++) if ($i == "hits") print $(i + 1) }' "$D/list"; }
for f in main.leaf main.grow main.safeCall main.mayPanic main.callbackBody; do
    want=$(awk -v f="$f" '$1 == "calls" && $2 == f { print $3 }' "$D/live/live.out")
    is "$want" "$(hits "$f")" "$f: $want hits, one a call (stacks grown meanwhile)"
done
is "1 4" "$(hits main.main) $(hits main.main.func1)" "main.main once, the 4 workers' closure 4 times"
live_go 11
"$KPREWRITE" ctl $pid disable main.tick; ok $? "kprewrite ctl PID disable main.tick"
live_go 12
"$KPREWRITE" ctl $pid list >"$D/list" 2>&1
like 'main\.tick\+0x0  \[DISABLED\]' "$(grep 'main\.tick+' "$D/list")" "list shows it [DISABLED]"
is "100 200" "$(hits main.tick) $(hits 'main.(*counter).add')" "no hits while disabled, its neighbour counting on"
"$KPREWRITE" ctl $pid enable main.tick
live_go 13
"$KPREWRITE" ctl $pid list >"$D/list" 2>&1
is "200 300" "$(hits main.tick) $(hits 'main.(*counter).add')" "enabled again: counting again"
exec 3>&-
wait $pid; is 0 $? "it ends well"

# 5. An event on main.grow: recorded under the recursion (C runs off the
#    goroutine stacks, which are copied meanwhile)
live_start "$D/ev" env KPREWRITE_EVENTS='p:gr main.grow n=%ax:s64' "$P.all" serve
wait_lines "$D/ev/live.out" 10
C=$KPREWRITE_CTL_DIR/$pid
grep 'gr: (main\.grow+0x0) n=' "$C/trace" >"$D/ev.trace"
drops=$(sed -n 's/.*entries-dropped: [0-9]*\/\([0-9]*\).*/\1/p' "$C/trace")
n=$(wc -l <"$D/ev.trace")
is 12004 $((n + drops)) "every main.grow hit made an event: $n recorded + $drops dropped"
is 0 "$(awk '{ v = $NF; sub(/^n=/, "", v); if (v + 0 < 0 || v + 0 > 3000) bad++ } END { print bad + 0 }' "$D/ev.trace")" \
    "each with its argument n (0..3000, from %ax: Go's register ABI)"
exec 3>&-
wait $pid
is "$(cat "$D/want")" "$(head -n 10 "$D/ev/live.out")" "its output identical"

# 6. Handlers from a preloaded library: on main.grow, never on a goroutine
#    stack, with the probed %rsp in regs->sp
$CC -O2 -shared -fPIC -mgeneral-regs-only -I"$KP_SRCDIR/include" -o "$D/handlers.so" "$S/handlers.c" \
    -L"$KP_BUILDDIR/.libs" -lkprewrite-rt
ok $? "the handler library builds"
echo go | LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$D/handlers.so" "$P.all" serve >"$D/h.out" 2>"$D/h.err"
is "0|handlers: grow ran yes, on a goroutine stack 0 times, bad sp 0 times" "$?|$(cat "$D/h.err")" \
    "12,004 handler runs: on the runtime stack, regs->sp the probed %rsp"
is "$(cat "$D/want")" "$(head -n 10 "$D/h.out")" "its output identical"
# the handler spinning, the goroutines run long in it and Go's preemption
# signals (SIGURG) land there; Go's signal handler, probed too, hits on the
# thread's signal stack while C runs on its runtime stack: those hits run no
# C and count as missed (before, they built their frames over the running
# one: the program hung or crashed). 'timeout' only keeps a hang from
# stopping the suite.
echo go | timeout 300 env GO_T_SPIN=20000 KPREWRITE_REPORT=all LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$D/handlers.so" \
    "$P.all" serve >"$D/spin.out" 2>"$D/spin.err"
is "0|handlers: grow ran yes, on a goroutine stack 0 times, bad sp 0 times" \
    "$?|$(grep '^handlers:' "$D/spin.err")" "handlers spinning under Go's preemption signals: the program ends well"
is "$(cat "$D/want")" "$(head -n 10 "$D/spin.out")" "its output identical"
echo go | GO_T_JPROBE=1 LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$D/handlers.so" "$P.all" serve 2>&1 >/dev/null |
    grep jprobe >"$D/jp.err"
is "handlers: register_jprobe main.leaf -22" "$(cat "$D/jp.err")" "a jprobe on a Go function is refused (-EINVAL)"
missed=$(awk '$3 == "k" && $4 ~ /^runtime\.sig/ { for (i = 5; i < NF; i++) if ($i == "nmissed") n += $(i + 1) } END { print n + 0 }' "$D/spin.err")
echo "# hits of runtime.sig* functions missed (signals during handlers): $missed"

# 7. A static Go executable (CGO_ENABLED=0: nocgo.go's sum; no libc, no
#    loader): the static runtime (t/static.t has the C ones). Go's runtime
#    takes SIGTRAP with its own system call, so no int3 is baked there
#    (go-sigtrap); the report is printed at runtime.exit, on the runtime's
#    own stack
G=$D/prog-static
if (cd "$D/src" && env -u CC -u CFLAGS -u LDFLAGS -u LD_PRELOAD GOCACHE="$D/gocache" GOPATH="$D/gopath" \
        GO111MODULE=off GOFLAGS= CGO_ENABLED=0 go build -ldflags='-s -w' -o "$G" .) >"$D/go.err" 2>&1; then
    ok 0 "the fixture builds static (cgo off)"
else
    ok 1 "the fixture builds static ($(head -n 1 "$D/go.err"))"; done_testing
fi
ok $(readelf -lW "$G" | grep -q INTERP; [ $? -ne 0 ]; echo $?) "it is static: no interpreter"
# Go's table gives an ABI wrapper the name of the function it wraps; the
# ABI0 one of the two is NAME.abi0, as Go's symbol table names it (here
# read by go tool nm from the same build, not stripped)
(cd "$D/src" && env -u CC -u CFLAGS -u LDFLAGS -u LD_PRELOAD GOCACHE="$D/gocache" GOPATH="$D/gopath" \
    GO111MODULE=off GOFLAGS= CGO_ENABLED=0 go build -o "$G-sym" .) >"$D/go.err" 2>&1
"$KPREWRITE" --check --probe '*' "$G" >"$D/snames" 2>/dev/null
is "" "$(awk '{ print $3 }' "$D/snames" | sort | uniq -d | head -n 3)" "every function of the stripped program has a name of its own"
awk '$3 ~ /\.abi0\+0x0$/ { sub(/\+0x0$/, "", $3); print $1, $3 }' "$D/snames" | sort >"$D/abi0.ours"
go tool nm "$G-sym" | awk '$2 == "T" && $3 ~ /\.abi0$/ { a = $1; while (length(a) < 16) a = "0" a; print a, $3 }' | sort >"$D/abi0.go"
n=$(wc -l <"$D/abi0.ours")
is "yes " "$([ "$n" -ge 10 ] && echo yes) $(comm -23 "$D/abi0.ours" "$D/abi0.go" | head -n 3)" \
    "its $n NAME.abi0 names are Go's own, at the same addresses (go tool nm)"
like 'refused: go-runtime' "$(grep '  runtime\.asmcgocall\.abi0+0x0  ' "$D/snames")" \
    "runtime.asmcgocall.abi0 (the assembly one) is refused as runtime.asmcgocall is (go-runtime)"
"$G" >"$D/swant" 2>&1
is "$(cat "$D/want")" "$(cat "$D/swant")" "it prints what the cgo build prints"
"$KPREWRITE" --probe '*' -o "$G.all" "$G" >"$D/sall.rep" 2>"$D/sall.err"; rc=$?
ok $([ $rc -le 3 ] && [ -x "$G.all" ]; echo $?) "'*' baked (exit $rc: $(tail -n 1 "$D/sall.err"))"
like 'the static runtime' "$(tail -n 1 "$D/sall.err")" "... with the static runtime"
is 0 "$(grep -c '\[INT3\]' "$D/sall.rep")" "no int3 probe baked ($(grep -c '\[OPTIMIZED\]' "$D/sall.rep") jumps)"
KPREWRITE_REPORT=all "$G.all" >"$D/sgot" 2>"$D/sreport"; rc=$?
is "0 $(cat "$D/want")" "$rc $(cat "$D/sgot")" "every entry probed: output identical"
rhits() { awk -v s="$1+0x0" '$4 == s { print $6 }' "$D/sreport"; }
is "1000 12004 30 50 1" "$(rhits main.leaf) $(rhits main.grow) $(rhits main.safeCall) $(rhits main.callbackBody) $(rhits runtime.exit)" \
    "KPREWRITE_REPORT at runtime.exit: exact counts (main.leaf, grow, safeCall, callbackBody)"
# an event on main.grow, every entry probed: its C runs on the runtime's
# stacks (a goroutine's is copied meanwhile, and has no room for it)
"$KPREWRITE" --probe '*' --probe 'p:gr main.grow n=%ax:s64' -o "$G.ev" "$G" >/dev/null 2>&1
KPREWRITE_REPORT=all KPREWRITE_TRACE="$D/sgo.trace" "$G.ev" >"$D/sev.out" 2>"$D/sev.err"; rc=$?
is "0 $(cat "$D/want")" "$rc $(cat "$D/sev.out")" "an event on main.grow: output identical"
w=$(grep -c ': gr: (main\.grow+0x0) n=' "$D/sgo.trace")
d=$(awk '$4 == "main.grow+0x0" { for (i = 5; i < NF; i++) if ($i == "dropped") print $(i + 1) }' "$D/sev.err")
is 12004 $((w + ${d:-0})) "KPREWRITE_TRACE at runtime.exit: $w events written + ${d:-0} dropped = main.grow's hits"
is 0 "$(awk '{ v = $NF; sub(/^n=/, "", v); if (v + 0 < 0 || v + 0 > 3000) bad++ } END { print bad + 0 }' "$D/sgo.trace")" \
    "each with its argument n (0..3000, from %ax: Go's register ABI)"
echo "# threads in the static Go trace: $(sed 's/^ *[^ ]*-\([0-9]*\) .*/\1/' "$D/sgo.trace" | sort -u | wc -l)"
# the same event defined at run time on the count-only bake
KPREWRITE_EVENTS='p:gr main.grow n=%ax:s64' KPREWRITE_REPORT=all KPREWRITE_TRACE="$D/sgo2.trace" "$G.all" >/dev/null 2>"$D/sev2.err"
w=$(grep -c ': gr: (main\.grow+0x0) n=' "$D/sgo2.trace")
d=$(awk '$4 == "main.grow+0x0" { for (i = 5; i < NF; i++) if ($i == "dropped") print $(i + 1) }' "$D/sev2.err")
is 12004 $((w + ${d:-0})) "KPREWRITE_EVENTS on the count-only bake: $w written + ${d:-0} dropped = main.grow's hits"
# a return event stays refused in a static Go program (goroutine stacks
# move: no call is hooked there), in one line, nothing written
out=$("$KPREWRITE" --probe 'r:gr main.grow $retval' -o "$G.rev" "$G" 2>&1); rc=$?
is "1 absent 1" "$rc $([ -e "$G.rev" ] && echo written || echo absent) $(printf '%s\n' "$out" | wc -l)" \
    "a return event on a static Go program: exit 1, nothing written, one line"
like 'a return event in a static Go executable: goroutine stacks move' "$out" "... saying why"
soff=$("$KPREWRITE" --check --disasm --probe main.grow "$G" | awk '/^ +[0-9a-f]+ +[0-9]+ / { n++ } n == 4 { print $1; exit }')
like '^refused: go-sigtrap \(an int3 here: go-stack \(not at the entry\)\)' \
    "$("$KPREWRITE" --check --probe "0x$soff" "$G" | sed 's/^.*  k  [^ ]*  //')" \
    "a point past a Go function's entry: refused (go-sigtrap), not int3"
like '^refused: go-sigtrap \(an int3 here: go-stack \(detours not compact\)\)' \
    "$("$KPREWRITE" --check --detours inline --probe main.leaf "$G" | sed 's/^.*0x0  //')" \
    "--detours inline: refused (go-sigtrap)"
# the outside checker on both: inline detours leave every probe int3, so
# all are refused; the windows evicted for their trampolines must go too
# (they were rewritten for nothing: 4,763 bytes-outside-sites mismatches
# over 7 of Debian's static Go programs)
"$KP_BUILDDIR/t/reloc/reloc-check" -L x "$G" "$G.all" >"$D/sreloc" 2>&1
like ', 0 mismatches' "$(tail -n 1 "$D/sreloc")" "reloc-check, every entry: $(tail -n 1 "$D/sreloc" | sed 's/^reloc-check: x: //')"
"$KPREWRITE" --detours inline --probe '*' -o "$G.inl" "$G" >/dev/null 2>&1
"$KP_BUILDDIR/t/reloc/reloc-check" -L x "$G" "$G.inl" >"$D/sreloc" 2>&1
like ' 0 mismatches' "$(tail -n 1 "$D/sreloc")" "reloc-check, --detours inline (every probe refused): $(tail -n 1 "$D/sreloc" | sed 's/^reloc-check: x: //')"
KPREWRITE_REPORT=1 "$G.inl" >"$D/sinl" 2>"$D/sinl.err"
is "0 $(cat "$D/want")|" "$? $(cat "$D/sinl")|$(cat "$D/sinl.err")" "... nothing baked: it runs as before, and its runtime says nothing"
# while it serves: ctl through /proc/PID/mem
rm -f "$D/sin" && mkfifo "$D/sin"
# (its output file made before the fifo opens: wait_lines needs it there)
KPREWRITE_REPORT=1 "$G.all" serve >"$D/slive.out" 2>"$D/slive.err" <"$D/sin" &
pid=$!
exec 3>"$D/sin"
wait_lines "$D/slive.out" 10
shits() { awk -v s="$1+0x0" '$3 == s { for (i = 4; i < NF; i++) if ($i == "hits") print $(i + 1) }' "$D/slist"; }
"$KPREWRITE" ctl $pid list >"$D/slist" 2>&1
is "1000 12004" "$(shits main.leaf) $(shits main.grow)" "ctl list: exact counts while it runs"
echo go >&3; wait_lines "$D/slive.out" 11
"$KPREWRITE" ctl $pid disable main.tick; ok $? "ctl disable main.tick"
echo go >&3; wait_lines "$D/slive.out" 12
"$KPREWRITE" ctl $pid list >"$D/slist" 2>&1
is "100 200" "$(shits main.tick) $(shits 'main.(*counter).add')" "disabled: not counted, its neighbour counting on"
"$KPREWRITE" ctl $pid enable main.tick; ok $? "ctl enable main.tick"
like "unoptimize main.tick: 1 of the points it names need an int3, .*a Go program.s runtime has" \
    "$("$KPREWRITE" ctl $pid unoptimize main.tick 2>&1)" "ctl unoptimize: refused, saying why"
echo go >&3; wait_lines "$D/slive.out" 13
exec 3>&-
wait $pid; rc=$?
is "0 200 300" "$rc $(awk '$4 == "main.tick+0x0" { print $6 }' "$D/slive.err") $(awk '$4 == "main.(*counter).add+0x0" { print $6 }' "$D/slive.err")" \
    "exit 0; its report agrees (main.tick 200, add 300)"

# 8. A PIE (-buildmode=pie): the external linker leaves no .gopclntab
#    section (the table is inside .data.rel.ro, its textStart 0 in the file
#    and relocated at load): found by its header, the base by its relocation
if (cd "$D/src" && env -u CC -u CFLAGS -u LDFLAGS -u LD_PRELOAD GOCACHE="$D/gocache" GOPATH="$D/gopath" \
        GO111MODULE=off GOFLAGS= CGO_ENABLED=1 go build -buildmode=pie -ldflags='-s -w' -o "$P-pie" .) >"$D/go.err" 2>&1; then
    ok 0 "the fixture builds as a PIE"
else
    ok 1 "the fixture builds as a PIE ($(head -n 1 "$D/go.err"))"; done_testing
fi
ok $(readelf -SW "$P-pie" | grep -q gopclntab; [ $? -ne 0 ]; echo $?) "the PIE has no .gopclntab section"
like '^[0-9a-f]+  k  main\.grow\+0x0  \[OPTIMIZED\]' "$(KP --check --probe main.grow "$P-pie")" "its main.grow is named"
KP --probe '*' -o "$P-pie.all" "$P-pie" >/dev/null 2>&1
echo go | "$P-pie.all" serve >"$D/pie.out" 2>&1
is "0 $(cat "$D/want")
ticked 4950" "$? $(cat "$D/pie.out")" "the PIE, every entry probed: output identical"
done_testing
