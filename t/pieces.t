#!/bin/sh
# Code that is jumped to, not called (t/data/pieces.S, and the .cold piece
# GCC splits off work() in pieces-main.c), under entry and return probes
# on every function, with kretprobes registered (t/data/kret-on.c): a
# return probe is refused where the unwind data says the stack holds the
# parent's data, not a return address (not-called); a piece that is
# entered with the return address on top (a frameless parent) nests as a
# tail call does; entry probes there make no assumption about the flags
# or the stack's alignment. Four threads, so first hits of threads (the
# runtime's slow path) happen in the pieces.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir pieces)
S=$KP_SRCDIR/t/data
use_runtime
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
preload_sanitizer
P=$D/pc
if $CC -O2 -pthread -o "$P" "$S/pieces-main.c" "$S/pieces.S" 2>"$D/cc.err"; then ok 0 "the fixture builds"
else ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; fi
H=$D/kret-on.so
if $CC -O2 -fPIC -shared -mgeneral-regs-only -I"$KP_SRCDIR/include" -o "$H" "$S/kret-on.c" \
       -L"$KP_BUILDDIR/.libs" -lkprewrite-rt $KP_SAN_FLAGS 2>"$D/cc.err"; then
    ok 0 "the handler library builds"
else
    ok 1 "the handler library builds ($(head -n 1 "$D/cc.err"))"
fi
like '^[0-9a-f]+ t work\.cold$' "$(nm "$P")" "GCC split work's unlikely path off (work.cold)"
want=$("$P")
# threads n = 100..103: work and parent are called 406 times, work.cold
# for the multiples of 7 (4 x 14)
for layout in compact inline shared; do
    "$KPREWRITE" --runtime "$RTLIB" --detours $layout --probe '*' --probe '*%return' -o "$P.$layout" "$P" >"$D/report" 2>&1
    like '  r  parent_piece\+0x0  refused: not-called \(CFA at 0x[0-9a-f]+ is not %rsp\+8\)' "$(cat "$D/report")" \
        "$layout: a return probe on a piece entered with its parent's frame: refused"
    is "$want" "$(LD_PRELOAD="$LD_PRELOAD" "$P.$layout" 2>&1)" "$layout: count only, output identical"
    got=$(KRET_ON=parent_piece,work,work.cold,parent LD_PRELOAD="$LD_PRELOAD${LD_PRELOAD:+ }$H" "$P.$layout" 2>&1)
    is "kret parent_piece rc -2 returns 0|kret work rc 0 returns 406|kret work.cold rc 0 returns 56|kret parent rc 0 returns 406|$want" \
       "$(printf '%s\n' "$got" | grep '^kret' | tr '\n' '|')$(printf '%s\n' "$got" | grep -v '^kret')" \
       "$layout: kretprobes registered: the piece's refused, work.cold's nests in work's, output identical"
    hits=$(KPREWRITE_REPORT=all "$P.$layout" 2>&1 >/dev/null | awk '$4 == "parent_piece+0x0" { print $6 }')
    is 204 "$hits" "$layout: the piece's entry probe counts its 204 entries (odd i, 4 threads)"
done
done_testing
