#!/bin/sh
# Register transparency: a probe changes no register that the probed
# instructions leave alone (GCC's -fipa-ra keeps values in caller-saved
# registers across calls to functions it knows do not touch them), nor a
# live flag, nor a vector register. Entry kprobes, return probes, int3
# probes (entry and return) and a mid-function probe with live flags, in a
# program linked with the runtime (inline and shared detours; handlers
# absent and present) and in a prebuilt one (a pool added; both layouts).
# t/data/regs-asm.S calls each probed function with every register set
# and compares every register after the call.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir regs)
S=$KP_SRCDIR/t/data
use_runtime
preload_sanitizer
export KPREWRITE_CTL_DIR="$D/ctl"
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
PROBES="--probe leaf_entry --probe leaf_ret%return --probe leaf_int3 --probe leaf_int3_ret%return
        --probe leaf_mid+3 --probe ipa_leaf --probe ipa_leaf2%return"
# every check line "ok": 3 rounds x 6 calls
want_ok=18

verdicts() { # REPORT: the verdicts of the probes, one word each, in spec order
    for s in leaf_entry leaf_ret leaf_int3 leaf_int3_ret leaf_mid ipa_leaf ipa_leaf2; do
        awk -v s="$s" '$3 ~ "^"s"\\+" { v = $4; sub(/\].*/, "", v); sub(/^\[/, "", v); print v; exit }' "$1"
    done | tr '\n' ' '
}

P=$D/linked
if $CC -O2 -fipa-ra -mgeneral-regs-only -DWITH_RUNTIME -o "$P" "$S/regs-prog.c" "$S/regs-asm.S" $RT 2>"$D/cc.err"; then
    ok 0 "the linked fixture builds"
else
    ok 1 "the linked fixture builds ($(head -n 1 "$D/cc.err"))"
fi
want=$("$P" 2>&1)
is "$want_ok" "$(printf '%s\n' "$want" | grep -c ': ok$')" "unprobed: every register comes back (the fixture checks itself)"
for layout in inline shared; do
    cp "$P" "$P.$layout"
    # shellcheck disable=SC2086
    "$KPREWRITE" --detours $layout $PROBES "$P.$layout" >"$D/report.$layout" 2>"$D/err.$layout"
    is "OPTIMIZED OPTIMIZED INT3 INT3 OPTIMIZED OPTIMIZED OPTIMIZED " "$(verdicts "$D/report.$layout")" \
        "linked, $layout: the probes are baked with the verdicts the fixture needs"
    got=$("$P.$layout" 2>&1)
    is "$want" "$got" "linked, $layout, no handler: every register and the live flags come back"
    got=$("$P.$layout" handlers 2>&1)
    is "$want" "$(printf '%s\n' "$got" | grep -v '^handlers:')" \
        "linked, $layout, handlers: every register and the live flags come back"
    # 3 rounds: leaf_entry, leaf_int3, leaf_mid x 2 = 12, ipa_leaf 2000; returns: 3 x 2 + ipa_leaf2 2000
    is "handlers: pre 2012 ret 2006 bad 0" "$(printf '%s\n' "$got" | grep '^handlers:')" \
        "linked, $layout: the handlers ran at every hit and saw the caller's registers"
done

# prebuilt: no runtime linked; the pool is added
Q=$D/prebuilt
if $CC -O2 -fipa-ra -o "$Q" "$S/regs-prog.c" "$S/regs-asm.S" 2>"$D/cc.err"; then
    ok 0 "the prebuilt fixture builds"
else
    ok 1 "the prebuilt fixture builds ($(head -n 1 "$D/cc.err"))"
fi
qwant=$("$Q" 2>&1)
for layout in shared inline; do
    # shellcheck disable=SC2086
    "$KPREWRITE" --runtime "$RTLIB" --detours $layout $PROBES -o "$Q.$layout" "$Q" >"$D/qreport.$layout" 2>&1
    is "OPTIMIZED OPTIMIZED INT3 INT3 OPTIMIZED OPTIMIZED OPTIMIZED " "$(verdicts "$D/qreport.$layout")" \
        "prebuilt, $layout: the probes are baked with the verdicts the fixture needs"
    is "$qwant" "$("$Q.$layout" 2>&1)" "prebuilt, $layout: every register and the live flags come back"
    rep=$(KPREWRITE_REPORT=all "$Q.$layout" 2>&1 >/dev/null)
    is "3 3 3 3 6 2000 2000" "$(for s in leaf_entry leaf_ret leaf_int3 leaf_int3_ret leaf_mid ipa_leaf ipa_leaf2; do
        printf '%s\n' "$rep" | awk -v s="$s" '$4 ~ "^"s"\\+" { print $6; exit }'; done | tr '\n' ' ' | sed 's/ $//')" \
        "prebuilt, $layout: every probe counted every call"
done
done_testing
