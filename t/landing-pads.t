#!/bin/sh
# C++ landing pads (.gcc_except_table) are branch targets: a DCR must not
# cover one after its first byte. Pads are found independently, from the
# compiler's own assembly, and exported as symbols.
. "$KP_SRCDIR/t/lib.sh"
need "$CXX" nm objdump awk
D=$(tmpdir landing-pads)
for opt in O1 O2; do
    $CXX -$opt -S -o "$D/lp-$opt.s" "$KP_SRCDIR/t/data/landing-pads.cc" 2>"$D/cc.err"
    ok $? "$opt: the fixture compiles ($(head -n 1 "$D/cc.err"))"
    # Call-site records are 4 uleb128s; the third names the landing pad.
    awk '/^\.LLSDACSB/ { on = 1; k = 0; next } /^\.LLSDACSE/ { on = 0 }
         on && $1 == ".uleb128" { k++; if (k % 4 == 3 && $2 != "0") { split($2, p, "-"); print p[1] } }' \
        "$D/lp-$opt.s" | sort -u >"$D/pads-$opt"
    n=0
    while read -r lab; do
        n=$((n + 1))
        printf '\t.globl kp_pad%d\n\t.set kp_pad%d, %s\n' "$n" "$n" "$lab" >>"$D/lp-$opt.s"
    done <"$D/pads-$opt"
    $CXX -o "$D/lp-$opt" "$D/lp-$opt.s"
    V=$D/lp-$opt
    out=$("$V"); is "boom" "$out" "$opt: the fixture throws and catches"
    ok $([ "$n" -gt 0 ]; echo $?) "$opt: the compiler emitted landing pads ($n)"
    objdump -d --no-show-raw-insn "$V" | awk '/^ *[0-9a-f]+:/ { sub(":", "", $1); print $1 }' >"$D/insns-$opt"
    i=0; tested=0
    while [ $i -lt $n ]; do
        i=$((i + 1))
        pad=$(addr_of "$V" kp_pad$i | sed 's/^0*//')
        # an instruction that starts 1..4 bytes before the pad: its DCR covers the pad
        before=
        while read -r a; do   # the last instruction that starts before the pad
            [ $((0x$a)) -lt $((0x$pad)) ] && [ $((0x$a)) -ge $((0x$pad - 4)) ] && before=$a
        done <"$D/insns-$opt"
        [ -n "$before" ] || continue
        line=$("$KPREWRITE" --check --probe "0x$before" "$V" | sed 's/^[0-9a-f]*  //')
        case $line in *crosses-function*|*too-short*) continue ;; esac
        tested=$((tested + 1))
        like "\\[INT3\\] jump-into-dcr \\(landing pad 0x$pad \\(LSDA at 0x[0-9a-f]+\\)\\)" "$line" \
            "$opt: probe at 0x$before is kept off landing pad 0x$pad"
    done
    ok $([ $tested -gt 0 ]; echo $?) "$opt: at least one landing pad was checked ($tested)"
    pads=$("$KPREWRITE" --check --json --probe '*' "$V" | sed -n 's/.*"landing_pads": \([0-9]*\).*/\1/p')
    ok $([ "${pads:-0}" -ge "$n" ]; echo $?) "$opt: the analysis saw all $n pads (saw ${pads:-none})"
done

# A landing-pad piece, as GCC splits a function: the pad of hot's call
# lies in `piece` (its own FDE, named through an explicit LPStart), at +1
# behind a nop nothing runs. Its entry probe goes on the pad; its return
# probe is refused (jumped to, not called); a throw through it is counted.
P=$D/piece
if $CXX -O2 -o "$P" "$KP_SRCDIR/t/data/lp-piece-main.cc" "$KP_SRCDIR/t/data/lp-piece.S" 2>"$D/cc.err"; then
    ok 0 "the landing-pad piece fixture builds"
else
    ok 1 "the landing-pad piece fixture builds ($(head -n 1 "$D/cc.err"))"
fi
out=$("$KPREWRITE" --check --probe piece --probe 'piece%return' "$P" 2>&1)
like '  k  piece\+0x1  \[OPTIMIZED\]  dcr 10: mov %rax, %rbx; .*\[after the nop of a landing-pad piece: it is entered at its landing pad\]' \
    "$out" "piece+0 goes on its landing pad, at +1"
like '  r  piece\+0x0  refused: not-called \(CFA at 0x[0-9a-f]+ is not %rsp\+8\)' "$out" \
    "a return probe on the piece: refused, not-called"
"$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe '*' -o "$P.probed" "$P" >/dev/null 2>&1
want=$("$P")
preload_sanitizer   # (the probed program has the runtime, built with ASan here)
got=$(KPREWRITE_REPORT=all "$P.probed" 2>"$D/rep")
is "$want|4|10" "$got|$(awk '$4 == "piece+0x1" { print $6 }' "$D/rep")|$(awk '$4 == "hot+0x0" { print $6 }' "$D/rep")" \
    "every entry probed: output identical, the pad's probe counts the 4 throws through it"
done_testing
