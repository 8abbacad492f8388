#!/bin/sh
# Return probes: SYM%return baked, the kretprobe API (return value, data,
# entry_handler, maxactive/nmissed), recursion, threads, longjmp,
# siglongjmp, pthread_exit, C++ exceptions, coroutines, int3 return probes, refusals,
# the shadow-stack refusal, and r lines in the control directory.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir kretprobe)
use_runtime
export KPREWRITE_CTL_DIR="$D/ctl"
SRC="$KP_SRCDIR/t/data"
PROBES="--probe square%return --probe depth%return --probe walk%return --probe twin%return --probe twin
        --probe skipper%return --probe plain --probe leave%return --probe short_inc%return
        --probe tail_outer%return --probe tail_outer3%return --probe tail_inner%return"

for v in "-O0 -fno-pie -no-pie" "-O2 -fPIE -pie" "-O2 -fno-pie -no-pie -fcf-protection"; do
    P=$D/kp$(echo $v | tr -d ' ')
    if ! $CC $v -mgeneral-regs-only -o "$P" "$SRC/kret-prog.c" "$SRC/kret-asm.S" $RT 2>"$D/cc.err"; then
        ok 1 "$v: build the fixture ($(head -n 1 "$D/cc.err"))"; continue
    fi
    want=$("$P"); cp "$P" "$P.orig"
    # shellcheck disable=SC2086
    "$KPREWRITE" $PROBES "$P" >"$D/report" 2>"$D/err"
    like '^[0-9a-f]+  r  square\+0x[04]  \[OPTIMIZED\]' "$(cat "$D/report")" "$v: square%return is an optimized r probe"
    like '^[0-9a-f]+  r  short_inc\+0x0  \[INT3\] not-relocatable' "$(cat "$D/report")" "$v: short_inc%return is an int3 r probe"
    like 'wrote .*: 11 probes baked' "$(cat "$D/err")" "$v: twin and twin%return share one entry"
    is "$want" "$("$P")" "$v: output identical with the return probes baked"
    is "api ok" "$("$P" api 2>&1)" "$v: return value, ip, sp, thread, data from entry_handler, ax written back, kprobe and kretprobe on one function, entry_handler != 0, enable/disable, -EINVAL, -ENOENT, batch rollback"
    # depth(20) twice with maxactive 5: 21 nested calls each time, 16 without an instance
    is "recurse rc 0 value 40 returns 10 entries 10 nmissed 32" "$("$P" recurse 2>&1)" "$v: recursion deeper than maxactive: exact nmissed, entry_handler skipped on a miss"
    is "threads rc 0 returns 400000 bad 0 nmissed 0" "$("$P" threads 2>&1)" "$v: 4 threads x 100000 calls: every return seen, each with its own data"
    # 1000 x 4 abandoned calls with 5 instances: they must come back
    is "longjmp rc 0 value 3 returns 4 entries 4004 nmissed 0" "$("$P" longjmp 2>&1)" "$v: longjmp out of 4 probed frames, 1000 times: instances reclaimed, right returns"
    is "siglongjmp rc 0 value 3 returns 4 entries 4004 nmissed 0" "$("$P" siglongjmp 2>&1)" "$v: siglongjmp from a signal handler out of 4 probed frames, 1000 times"
    is "pthread_exit rc 0 value 2 returns 3 entries 33 nmissed 0" "$("$P" pthread_exit 2>&1)" "$v: pthread_exit inside 3 probed frames, 10 threads: instances come back"
    # the same without entry_handlers: the runtime's fast entry (no pt_regs)
    export KRET_NO_ENTRY=1
    is "recurse rc 0 value 40 returns 10 entries 0 nmissed 32" "$("$P" recurse 2>&1)" "$v: no entry_handler: recursion deeper than maxactive, exact nmissed"
    is "threads rc 0 returns 400000 bad 0 nmissed 0" "$("$P" threads 2>&1)" "$v: no entry_handler: 4 threads x 100000 calls, return value, ip and thread right"
    is "longjmp rc 0 value 3 returns 4 entries 0 nmissed 0" "$("$P" longjmp 2>&1)" "$v: no entry_handler: longjmp out of 4 probed frames, 1000 times"
    is "siglongjmp rc 0 value 3 returns 4 entries 0 nmissed 0" "$("$P" siglongjmp 2>&1)" "$v: no entry_handler: siglongjmp out of 4 probed frames, 1000 times"
    is "pthread_exit rc 0 value 2 returns 3 entries 0 nmissed 0" "$("$P" pthread_exit 2>&1)" "$v: no entry_handler: pthread_exit inside 3 probed frames, 10 threads"
    unset KRET_NO_ENTRY
    is "steal rc 0 value 1 returns 3 nmissed 0" "$("$P" steal 2>&1)" "$v: an instance cached by an idle thread is taken by a thread that needs it (maxactive 2)"
    is "int3 rc 0 value 500500 returns 1000 nmissed 0" "$("$P" int3 2>&1)" "$v: a return probe on an int3 point"
    # 2 x (sum of 2(i+1) + 1, i < 1000) = 2 x 1002000
    is "tailcall rc 0 value 2004000 returns 1000 1000 2000 bad 0 inner ips are the outer ones 1 nmissed 0" \
       "$("$P" tailcall 2>&1)" "$v: a tail call between return-probed functions (optimized and int3): both handlers, the real return address"
    out=$(KPREWRITE_TEST_SHSTK=1 "$P" shstk 2>&1)
    like 'shadow stack.*refused' "$out" "$v: a CET shadow stack: a clear message"
    like '^shstk rc -95$' "$out" "$v: a CET shadow stack: register_kretprobe returns -EOPNOTSUPP"
done

# coroutines (ucontext): f returns while g, newer, waits on another stack
C=$D/coro
if $CC -O2 -mgeneral-regs-only -o "$C" "$SRC/kret-coro.c" $RT 2>"$D/cc.err"; then
    cp "$C" "$C.orig"
    "$KPREWRITE" --probe 'f%return' --probe 'g%return' "$C" >/dev/null 2>&1
    for m in resume local abandon; do
        case $m in
        resume) what="a coroutine on mapped memory, resumed after f returned: g returns normally" ;;
        local) what="a coroutine on an array of main's frame, resumed after f returned" ;;
        abandon) what="a coroutine whose stack f unmapped before returning: no fault" ;;
        esac
        got=$("$C" $m 2>"$D/coro.err"); rc=$?
        is "$("$C.orig" $m 2>/dev/null)|0|returns 1000 nmissed 0 0" "$got|$rc|$(grep "^returns" "$D/coro.err")" \
            "$m: $what (output identical, f's 1000 returns handled)"
    done
else
    ok 1 "the ucontext coroutine fixture builds ($(head -n 1 "$D/cc.err"))"
fi

# refusals, with their reasons
P=$D/kp-O2-fPIE-pie
r=$("$KPREWRITE" --check --probe 'fatal%return' --probe 'spin_forever%return' --probe 'on_stack%return' \
    --probe 'getcontext%return' --probe spin_forever "$P.orig" 2>&1)
like '  r  fatal\+0x0  refused: noreturn ' "$r" "a noreturn C function: refused, noreturn"
like '  r  spin_forever\+0x0  refused: noreturn ' "$r" "a function that never leaves: refused, noreturn"
like '  k  spin_forever\+0x0  \[(OPTIMIZED|INT3)\]' "$r" "the same function takes an entry kprobe"
like '  r  on_stack\+0x0  refused: stack-switch \(loads %rsp at 0x' "$r" "a function that switches stacks: refused, stack-switch"
like '  r  getcontext\+0x0  refused: returns-twice \(getcontext\)' "$r" "getcontext: refused, returns-twice"
cp "$P" "$D/before"
out=$("$KPREWRITE" --probe 'fatal%return' "$P" 2>"$D/bake.err"); rc=$?
like '^[0-9a-f]{16}  r  fatal\+0x0  refused: noreturn' "$out" "baking: the refused return probe is reported with its reason"
is 3 $rc "baking: exit 3 (some probe refused)"
like "^kprewrite: $P: fatal\\+0x0 \\(0x[0-9a-f]+\\): refused: noreturn \\(" "$(head -n 1 "$D/bake.err")" \
    "baking: a diagnostic names the file, the symbol+offset, the address and the reason"

# removal of return probes gives back the original bytes
cp "$P" "$D/rm"
"$KPREWRITE" --remove 'square%return' --remove 'depth%return' --remove 'walk%return' --remove 'twin%return' \
    --remove twin --remove 'skipper%return' --remove plain --remove 'leave%return' --remove 'short_inc%return' \
    --remove 'tail_outer%return' --remove 'tail_outer3%return' --remove 'tail_inner%return' "$D/rm" >/dev/null 2>&1
cmp -s "$P.orig" "$D/rm"; ok $? "removing every return probe gives back the original bytes"

# a return probe added by a second run, beside the first run's kprobe
cp "$P.orig" "$D/twice"
"$KPREWRITE" --probe square "$D/twice" >/dev/null 2>&1
"$KPREWRITE" --probe 'depth%return' "$D/twice" >"$D/report" 2>&1
like '  k  square\+0x0  \[OPTIMIZED\]' "$(cat "$D/report")" "a second run keeps the kprobe"
is "recurse rc 0 value 40 returns 10 entries 10 nmissed 32" "$("$D/twice" recurse 2>&1)" "and its return probe works"

# How return-probe detours enter and leave the runtime. A current pool:
# the entry through the third slot (__kprewrite_kret_enter, lea
# state,%r11; nothing saved by the detour), the return by a jump through
# the fourth (__kprewrite_kret_return, which builds the frame). A pool
# linked before the fourth slot: the same entry, and the detour carries
# the return frame (the registers pushed, a call through the second slot).
# Before the third: the entry through the dispatcher too.
r11='lea +(-?0x[0-9a-f]+)?\(%rip\),%r11'
jmpslot='jmp +\*(0x[0-9a-f]+)?\(%rip\)'
dis=$(objdump -d -j .kprewrite.text "$P" 2>/dev/null)
like "$r11" "$dis" "return-probe detours enter through the runtime's return-probe entry"
like "$jmpslot" "$dis" "return-probe detours jump to the runtime's return frame"
for slots in 3 2; do
    O=$D/oldpool$slots
    if ! $CC -O2 -fPIE -pie -mgeneral-regs-only -I"$KP_SRCDIR/include" -DOLD_SLOTS=$slots -o "$O" "$SRC/kret-prog.c" \
        "$SRC/kret-asm.S" "$SRC/pool-old.c" -L"$KP_BUILDDIR/.libs" -L"$KP_BUILDDIR" -lkprewrite-rt -lpthread \
        $KP_SAN_FLAGS 2>"$D/cc.err"; then
        ok 1 "the $slots-slot pool fixture builds ($(head -n 1 "$D/cc.err"))"; continue
    fi
    want=$("$O")
    # shellcheck disable=SC2086
    "$KPREWRITE" $PROBES "$O" >"$D/report" 2>"$D/err"
    like '^[0-9a-f]+  r  square\+0x[04]  \[OPTIMIZED\]' "$(cat "$D/report")" "$slots-slot pool: square%return is optimized"
    dis=$(objdump -d -j .kprewrite.text "$O" 2>/dev/null)
    if [ $slots = 3 ]; then
        like "$r11" "$dis" "3-slot pool: the detours enter through the return-probe entry"
    elif echo "$dis" | grep -Eq "$r11"; then ok 1 "2-slot pool: the detours enter through the dispatcher"
    else like 'push +%r11' "$dis" "2-slot pool: the detours enter through the dispatcher"; fi
    if echo "$dis" | grep -Eq "$jmpslot"; then ok 1 "$slots-slot pool: the detours carry the return frame"
    else like 'push +%r15' "$dis" "$slots-slot pool: the detours carry the return frame"; fi
    is "$want" "$("$O")" "$slots-slot pool: output identical"
    is "api ok" "$("$O" api 2>&1)" "$slots-slot pool: the kretprobe API"
    is "threads rc 0 returns 400000 bad 0 nmissed 0" "$(KRET_NO_ENTRY=1 "$O" threads 2>&1)" \
        "$slots-slot pool: 4 threads x 100000 calls"
    is "longjmp rc 0 value 3 returns 4 entries 0 nmissed 0" "$(KRET_NO_ENTRY=1 "$O" longjmp 2>&1)" "$slots-slot pool: longjmp"
done

# C++: a throw from thrower() through inner() and outer(), all three return-probed
if [ -n "$CXX" ] && command -v "${CXX%% *}" >/dev/null; then
    for v in -O0 -O2; do
        X=$D/kt$v
        if ! $CXX $v -mgeneral-regs-only -o "$X" "$SRC/kret-throw.cc" $RT 2>"$D/cc.err"; then
            ok 1 "C++ $v: build ($(head -n 1 "$D/cc.err"))"; continue
        fi
        want=$("$X")
        "$KPREWRITE" --probe 'outer%return' --probe 'inner%return' --probe 'thrower%return' "$X" >/dev/null 2>&1
        is "$want" "$("$X")" "C++ $v: output identical, 100 exceptions caught, destructors run"
        is "$want
returns 600 bad 0 nmissed 0 0 0" "$("$X" probe 2>&1)" "C++ $v: exceptions through return-probed frames with handlers registered; no instance lost (maxactive 1)"
        like '^compete bad 0 accounted all$' "$("$X" probe compete 2>&1 | tail -n 1)" \
            "C++ $v: then two threads compete for the instances the throws freed: one user each, every entry accounted"
    done
    X=$D/kt-static
    $CXX -O2 -mgeneral-regs-only -I"$KP_SRCDIR/include" -o "$X" "$SRC/kret-throw.cc" -Wl,-u,__kprewrite_pool \
        $RT_STATIC
    "$KPREWRITE" --probe 'outer%return' --probe 'inner%return' --probe 'thrower%return' "$X" >/dev/null 2>&1
    like '^returns 600 bad 0 nmissed 0 0 0$' "$("$X" probe 2>&1)" "C++ with the static runtime: the unwinder hooks are linked in"
else
    skip "C++ (no C++ compiler)"
fi

# the control directory lists r probes with nmissed
if [ -e /dev/fuse ] || command -v fusermount3 >/dev/null; then
    "$P" serve "$D/stop" >"$D/out" 2>&1 &
    pid=$!
    C=$KPREWRITE_CTL_DIR/$pid
    for i in $(seq 100); do [ -e "$C/list" ] && grep -q 'hits 6' "$C/list" && break; sleep 0.05; done
    if [ -e "$C/list" ]; then
        like '^[0-9a-f]{16}  r  depth\+0x0  \[OPTIMIZED\]  hits 6  nmissed 4$' "$(grep 'depth+' "$C/list")" "list: an r line with hits and nmissed"
        like '^  depth\+0x0 +6 +4$' "$(grep 'depth+' "$C/profile")" "profile: hits and nmissed of the return probe"
    else
        skip "list (no control directory)"; skip "profile (no control directory)"
    fi
    touch "$D/stop"; wait $pid
    is "serve rc 0 returns 2 nmissed 4" "$(cat "$D/out")" "the served program saw 2 returns, 4 misses"
else
    skip "control directory (no FUSE)"
fi
done_testing
