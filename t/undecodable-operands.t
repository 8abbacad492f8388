#!/bin/sh
# An instruction whose operands the decoder cannot decode (the instruction
# itself decodes) is never copied out of line: it may be RIP-relative, and
# its copy would keep a displacement aimed from the wrong place. Zydis 4.0
# always decodes the operands of what it decodes, so the case is made with
# t/kprewrite-zyfail: kprewrite linked with t/zydis-fail.c, whose operand
# decoding fails for the mnemonic in KP_ZYDIS_FAIL_OPS (here lea). A probe
# on such a lea is refused, one whose DCR holds it falls back to int3 (its
# copy holds only the probed instruction), one whose DCR ends before it
# stays optimized; the program baked that way runs as before.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir undecodable-operands)
ZYFAIL=$KP_BUILDDIR/t/kprewrite-zyfail
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
$CC -O1 -o "$D/prog" "$KP_SRCDIR/t/data/undecoded-ops.S" "$KP_SRCDIR/t/data/undecoded-ops-main.c"
want=$("$D/prog")
is "41 42 43 41 42 43 41 42 43" "$(echo $want)" "the fixture runs"
# verdicts: the line of one probe, without the address column
verdict() { printf '%s\n' "$1" | sed -n "s/^[0-9a-f]\{16\}  k  $2+0x0  //p"; }

# the control: with operand decoding working, all three are optimized
out=$("$ZYFAIL" --check --probe 'lea_*' "$D/prog" 2>&1)
like '^\[OPTIMIZED\]  dcr 7: lea 0x[0-9a-f]+, %rax  \[RIP-relative operand re-pointed\]$' "$(verdict "$out" lea_first)" \
    "decoded: lea_first is optimized, its lea re-pointed"
like '^\[OPTIMIZED\]  dcr 8: nop; lea ' "$(verdict "$out" lea_second)" "decoded: lea_second is optimized"
is "$("$KPREWRITE" --check --probe 'lea_*' "$D/prog" 2>&1)" "$out" "kprewrite-zyfail without the variable is kprewrite"

export KP_ZYDIS_FAIL_OPS=lea
out=$("$ZYFAIL" --check --probe 'lea_*' "$D/prog" 2>&1)
is "refused: undecodable-operands (operands not decoded (a RIP-relative displacement could not be re-pointed) at the probe address)" \
    "$(verdict "$out" lea_first)" "lea's operands undecoded: a probe on it is refused, undecodable-operands"
like '^\[INT3\] undecodable-operands \(operands not decoded \(a RIP-relative displacement could not be re-pointed\) at 0x[0-9a-f]+\)  dcr 8: nop; ' \
    "$(verdict "$out" lea_second)" "a probe whose DCR holds it: int3, undecodable-operands"
is "[OPTIMIZED]  dcr 5: mov \$0x3, %ecx" "$(verdict "$out" lea_after)" "a probe whose DCR ends before it: optimized"

# baked (a pool added): the refused probe is left out, the others run
cp "$D/prog" "$D/baked"
"$ZYFAIL" --runtime "$RTLIB" --probe 'lea_*' "$D/baked" >/dev/null 2>"$D/err"; rc=$?
is 3 "$rc" "baking: exit 3 (a probe refused)"
like "wrote .*baked: 2 probes baked" "$(cat "$D/err")" "baking: the other two are baked"
unset KP_ZYDIS_FAIL_OPS
preload_sanitizer
KPREWRITE_REPORT=all "$D/baked" >"$D/out" 2>"$D/hits"
is "$want" "$(cat "$D/out")" "the baked program prints what it printed"
is "3 3" "$(awk '$4 == "lea_second+0x0" || $4 == "lea_after+0x0" { printf "%s%s", n++ ? " " : "", $6 }' "$D/hits")" \
    "each baked probe counted its 3 hits (lea_second by its int3)"
LD_PRELOAD= "$KP_BUILDDIR/t/reloc/reloc-check" "$D/prog" "$D/baked" >"$D/rc" 2>&1
is "0|2 entries (1 optimized, 1 int3), 2 instructions checked, 2 site boundaries checked, 0 mismatches" \
    "$?|$(sed -n 's/^reloc-check: [^:]*: //p' "$D/rc")" "the relocation checker finds every copy right (the lea copied nowhere)"
done_testing
