#!/bin/sh
# A C handler runs on a 16-aligned stack whether the probed function was
# entered as the ABI says (%rsp = 8 mod 16) or one word off (hand-written
# code): the detour at a function's entry (compact: through
# __kprewrite_enter) calls the dispatcher as it is where pt_regs is
# aligned, and realigns where it is not.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir entry-align)
use_runtime
preload_sanitizer
P=$D/ea
if $CC -O2 -o "$P.orig" "$KP_SRCDIR/t/data/entry-align.c" "$KP_SRCDIR/t/data/entry-align.S" $RT 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --probe odd_entry --probe even_entry -o "$P" "$P.orig" >"$D/bake.out" 2>&1
ok $? "bake odd_entry and even_entry ($(tail -n 1 "$D/bake.out"))"
"$P" >"$D/out" 2>"$D/err"
ok $? "the probed program runs ($(head -n 1 "$D/err"))"
# sum: 1000 x 42 from call_odd, and 1 + ... + 1000 from even_entry
is "sum 542500 hits 2000 misaligned 0" "$(cat "$D/out")" "2000 handler calls, each on a 16-aligned stack"
done_testing
