#!/bin/sh
# Relocated DCR copies, checked by a second opinion that shares no code
# with the emitter (t/reloc/reloc-check: a decoder of its own, calls
# followed by a small symbolic evaluation), by objdump, and by running them:
# - t/data/reloc-shapes.S, one function per instruction shape a copy must
#   relocate, built PIE and not, rewritten with --probe '*' in both detour
#   layouts (and inline with return probes on every shape): per shape, the
#   checker finds no mismatch, objdump sees the copy refer to every address
#   the original refers to (and to the instruction after the DCR), and the
#   program prints what the original printed;
# - copies fixed by hand (jmp *disp(%rip) where the emitter wrote another
#   jmp) pass the checker and run: it accepts a right copy, not only
#   rejects wrong ones; bytes broken by hand are reported under their rule;
# - real programs and libraries with GOT tail jumps, -fno-plt calls and
#   calls through registers (Rust binaries have many): no mismatch in
#   either layout, and the programs still do their work.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf od dd
OBJDUMP=${OBJDUMP:-objdump}
D=$(tmpdir reloc)
S=$KP_SRCDIR/t/data
RC=$KP_BUILDDIR/t/reloc/reloc-check
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
KP() { "$KPREWRITE" --runtime "$RTLIB" "$@"; }
# A sanitizer build's runtime needs libasan first in the process (as in
# t/prebuilt.t): the programs run (original and rewritten alike) get it.
SANPRE=
if [ -n "$KP_SAN_FLAGS" ]; then
    SANPRE=$($CC -print-file-name=libasan.so)
    export ASAN_OPTIONS=detect_leaks=0
fi
ok $([ -x "$RC" ]; echo $?) "the checker is built ($RC)"
[ -x "$RC" ] || done_testing

# refs FILE LO HI: the addresses objdump's disassembly of [LO, HI) refers
# to: RIP-relative operands ("# ADDR") and direct branch targets
refs() {
    "$OBJDUMP" -d --no-show-raw-insn --start-address="$2" --stop-address="$3" "$1" 2>/dev/null |
        awk -F'\t' '/^ *[0-9a-f]+:\t/ { i = $2
            if (match(i, /# [0-9a-f]+/)) print substr(i, RSTART + 2, RLENGTH - 2)
            else if (match(i, /^(j[a-z]+|call) +[0-9a-f]+ </)) { n = split(substr(i, RSTART, RLENGTH), w, / +/); print w[n - 1] } }' |
        sort -u
}
# last_op FILE LO HI: the mnemonic of the last instruction objdump finds in [LO, HI)
last_op() {
    "$OBJDUMP" -d --no-show-raw-insn --start-address="$2" --stop-address="$3" "$1" 2>/dev/null |
        awk -F'\t' '/^ *[0-9a-f]+:\t/ { split($2, w, / +/); m = w[1] } END { print m }'
}
# entry CHECK-OUTPUT SYM: the checker's -v line for SYM+0x0: "site dcr copy-lo copy-hi"
entry() {
    grep -F ": $2+0x0 at " "$1" | grep ': entry ' | head -n 1 |
        sed -n 's/.* at \(0x[0-9a-f]*\): entry [a-z0-9]* kind . dcr \([0-9]*\) copy \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\):.*/\1 \2 \3 \4/p'
}
# voff FILE VADDR: the file offset of an address (through the sections with bytes)
voff() {
    readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | while read -r name type addr off size rest; do
        [ "$type" = PROGBITS ] || continue
        if [ $((0x$addr)) -ne 0 ] && [ $(($2)) -ge $((0x$addr)) ] && [ $(($2)) -lt $((0x$addr + 0x$size)) ]; then
            echo $((0x$off + $2 - 0x$addr))
            break
        fi
    done
}
# poke FILE VADDR BYTE...: write bytes (hex) at an address
poke() {
    f=$1; off=$(voff "$1" "$2"); shift 2
    [ -n "$off" ] || return 1
    esc=
    for b in "$@"; do esc="$esc$(printf '\\%03o' "0x$b")"; done
    printf "$esc" | dd of="$f" bs=1 seek="$off" conv=notrunc 2>/dev/null
}
# peek FILE VADDR: the byte at an address, in hex
peek() { od -An -tx1 -j "$(voff "$1" "$2")" -N 1 "$1" | tr -d ' '; }
# run PROG ARG...: its output, and how it ended ("Segmentation fault" included)
run() { LD_PRELOAD=$SANPRE "$@" 2>&1; echo "(exit $?)"; }
# digest PROG ARG...: its output sorted (threads), as a checksum, and how it ended
digest() { { LD_PRELOAD=$SANPRE "$@"; echo "(exit $?)"; } 2>&1 | sort | cksum; }
# le32 N: N as four little-endian hex bytes
le32() { for i in 0 1 2 3; do printf '%02x ' $((($1 >> (8 * i)) & 255)); done; }

# --- the shapes -------------------------------------------------------------------
for pie in pie nopie; do
    case $pie in pie) fl="-fPIE -pie" ;; *) fl="-fno-pie -no-pie" ;; esac
    P=$D/shapes-$pie
    if $CC -O1 $fl -o "$P" "$S/reloc-shapes.S" "$S/reloc-main.c" 2>"$D/cc.err"; then
        ok 0 "fixture reloc-shapes ($pie) builds"
    else
        ok 1 "fixture reloc-shapes ($pie) builds: $(head -n 3 "$D/cc.err" | tr '\n' ' ')"
        continue
    fi
    shapes=$(run "$P" list | sed '$d')
    for layout in compact inline shared return; do
        [ $pie = nopie ] && [ $layout = return ] && continue
        v="$pie, $layout"
        R=$P-$layout
        if [ $layout = return ]; then
            KP --detours inline --probe '*' --probe 's_*%return' -o "$R" "$P" >"$D/report" 2>"$D/err"
        else
            KP --detours $layout --probe '*' -o "$R" "$P" >"$D/report" 2>"$D/err"
        fi
        rc=$?
        ok $([ -s "$R" ] && [ $rc -ne 1 ]; echo $?) "$v: rewritten with every function probed (exit $rc: $(tail -n 1 "$D/err"))"
        C=$D/check-$pie-$layout
        "$RC" -v -L x "$P" "$R" >"$C" 2>&1
        for s in $shapes; do
            lines=$(grep -F ": s_$s+0x0 at " "$C" | grep -v ': entry ')
            is "1|" "$(grep -F ": s_$s+0x0 at " "$C" | grep -c ': entry ')|$lines" \
                "reloc-check: $s ($v): the copy does what the original did"
            set -- $(entry "$C" "s_$s")
            if [ $# -eq 4 ] && command -v "$OBJDUMP" >/dev/null; then
                want=$(refs "$P" "$1" $(($1 + $2)))
                [ "$(last_op "$P" "$1" $(($1 + $2)))" = jmp ] || want=$(printf '%s\n%x\n' "$want" $(($1 + $2)))
                refs "$R" "$3" "$4" >"$D/got"
                missing=$(printf '%s\n' "$want" | sed '/^$/d' | sort -u | comm -23 - "$D/got" | tr '\n' ' ')
                is "" "$missing" "objdump: $s ($v): the copy refers to what the original does and to the end of the DCR"
            else
                ok 1 "objdump: $s ($v): the checker lists the entry, and objdump is installed"
            fi
            is "$(run "$P" "$s" 2>&1)" "$(run "$R" "$s" 2>&1)" "behaviour: $s ($v): the output is the original's"
        done
        # the whole image: the C and crt functions, and bytes changed outside the sites
        is "0 mismatches" "$(tail -n 1 "$C" | sed 's/.*, \([0-9]* mismatches\).*/\1/')" \
            "reloc-check ($v), the whole image: $(tail -n 1 "$C" | sed 's/^reloc-check: x: //')"
    done
done

# --- copies fixed by hand: the checker accepts them and they run -----------------------
# In the PIE inline image, s_jmp_rip's copy becomes jmp *rs_fp(%rip) and the
# jump that ends s_call_rip_end's emulated call becomes jmp *rs_fp(%rip).
P=$D/shapes-pie
R=$D/fixed
C=$D/check-pie-inline
slot=$(nm "$P" | awk '$3 == "rs_fp" { print "0x" $1 }')
if [ -s "$P-inline" ] && [ -n "$slot" ]; then
    cp "$P-inline" "$R"
    set -- $(entry "$C" s_jmp_rip)
    [ $# -eq 4 ] && poke "$R" "$3" ff 25 $(le32 $((slot - ($3 + 6))))
    set -- $(entry "$C" s_call_rip_end)
    # the emulation's jump: the first jmp of the copy
    j=$([ $# -eq 4 ] && "$OBJDUMP" -d --no-show-raw-insn --start-address="$3" --stop-address="$4" "$R" |
        awk -F'\t' '/^ *[0-9a-f]+:\t/ && $2 ~ /^jmp / { a = $1; sub(/:.*/, "", a); gsub(/ /, "", a); print "0x" a; exit }')
    [ -n "$j" ] && poke "$R" "$j" ff 25 $(le32 $((slot - (j + 6))))
    "$RC" -L x "$P" "$R" >"$D/check-fixed" 2>&1
    for s in jmp_rip call_rip_end; do
        is "" "$(grep -F ": s_$s+0x0 at " "$D/check-fixed")" "a copy fixed by hand: $s: the checker finds no mismatch"
        is "$(run "$P" $s 2>&1)" "$(run "$R" $s 2>&1)" "a copy fixed by hand: $s: the output is the original's"
    done
else
    for i in 1 2 3 4; do ok 1 "a copy fixed by hand: the PIE inline image and rs_fp exist"; done
fi

# --- copies broken by hand: each rule the emitter keeps today is seen to fire ------------
# (from the PIE inline image; pokes of one byte each)
P=$D/shapes-pie
C=$D/check-pie-inline
# break NAME SYM RULE WHAT: poke the copy of SYM (by the shell code in WHAT, with
# $1..$4 = site dcr copy-lo copy-hi), then the checker must report RULE for SYM
breaks() {
    name=$1 sym=$2 rule=$3 what=$4
    cp "$P-inline" "$D/broken"
    set -- $(entry "$C" "$sym")
    if [ $# -eq 4 ] && eval "$what"; then
        "$RC" -L x "$P" "$D/broken" >"$D/check-broken" 2>&1
        like "\\[$rule\\]" "$(grep -F ": $sym+0x0 at " "$D/check-broken"; grep -F ": file bytes " "$D/check-broken")" \
            "a copy broken by hand ($name): the checker reports [$rule]"
    else
        ok 1 "a copy broken by hand ($name): the entry of $sym is listed and the poke worked"
    fi
}
# mov disp(%rip),%eax (8b 05 disp32): the displacement one more
breaks "RIP displacement" s_rip_load riprel 'poke "$D/broken" $(($3 + 2)) $(printf %02x $(((0x$(peek "$D/broken" $(($3 + 2))) + 1) & 255)))'
# test; jz rel32 (0f 84): jnz
breaks "jcc condition" s_jcc branch-target 'poke "$D/broken" $(($3 + 3)) 85'
# the jmp back one byte further
breaks "jmp back" s_rip_store jmp-back 'poke "$D/broken" $(($4 - 4)) $(printf %02x $(((0x$(peek "$D/broken" $(($4 - 4))) + 1) & 255)))'
# push %rbx; lea -8(%rsp),%rsp: lea -16(%rsp),%rsp
breaks "call emulation's stack" s_call_rel_end call-state 'poke "$D/broken" $(($3 + 5)) f0'
# an int3 of the padding after the site's jmp: a nop
breaks "site padding" s_movq_imm site-bytes 'poke "$D/broken" $(($1 + 6)) 90'
# a byte of .rodata
ro=$(readelf -SW "$P-inline" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".rodata" { print "0x" $3 }')
breaks ".rodata byte" s_rip_load bytes-outside-sites 'poke "$D/broken" '"$ro"' $(printf %02x $(((0x$(peek "$D/broken" '"$ro"') + 1) & 255)))'

# --- re-pointed branches (fixups): checked, and a missed one is seen ----------------------
# t/data/tactics.S, every probe: a rel8 loop through a trampoline, a rel32
# jump, a table entry, short sites
TF=$D/tactics
if $CC -O2 -o "$TF" "$S/tactics-main.c" "$S/tactics.S" 2>"$D/cc.err"; then
    KP --probe 't_*' --probe t_switch+28 -o "$TF.p" "$TF" >/dev/null 2>&1
    "$RC" -L x "$TF" "$TF.p" >"$D/check-tactics" 2>&1
    is "0 mismatches" "$(tail -n 1 "$D/check-tactics" | sed 's/.*, \([0-9]* mismatches\).*/\1/')" \
        "reloc-check, the tactics fixture (fixups, short sites): $(tail -n 1 "$D/check-tactics" | sed 's/^reloc-check: x: //')"
    fb=$(printf '0x%x' 0x$(nm "$TF" | awk '$3 == "far_back" { print $1 }'))
    cp "$TF.p" "$D/tb"
    # far_back's jmp (e9 rel32), re-pointed to t_far's copy: its original bytes back
    poke "$D/tb" "$fb" $(for i in 0 1 2 3 4; do peek "$TF" $((fb + i)); done)
    "$RC" -L x "$TF" "$D/tb" >"$D/check-tb" 2>&1
    like "^x: fixup [0-9]+ at $fb: \\[fixup\\] 'jmp 0x[0-9a-f]+' -> 'jmp 0x[0-9a-f]+': goes to 0x[0-9a-f]+, not to the copy" \
        "$(cat "$D/check-tb")" "a re-pointed branch put back by hand: the checker reports [fixup]"
    # and the table's fixup count zeroed: an analysis that missed the branch
    tb=0x$(readelf -SW "$D/tb" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".kprewrite.table" { print $3 }')
    poke "$D/tb" $((tb + 44)) 00 00 00 00
    "$RC" -L x "$TF" "$D/tb" >"$D/check-tb" 2>&1
    like "^x: branch at $fb: \\[branch-into-dcr\\] 'jmp 0x[0-9a-f]+' -> '': lands at 0x[0-9a-f]+, inside the optimized DCR" \
        "$(cat "$D/check-tb")" "a branch into a DCR left alone: the checker's own sweep reports [branch-into-dcr]"
else
    for i in 1 2 3; do ok 1 "fixture tactics builds: $(head -n 1 "$D/cc.err")"; done
fi

# --- real programs and libraries ----------------------------------------------------------
# rg and fd (Rust: GOT tail jumps, calls through the GOT and through
# registers), python3.11 and libpython (calls through registers and
# through memory ending DCRs), libnettle (GOT tail jumps in C).
for f in /usr/bin/rg /usr/bin/fdfind /usr/bin/python3.11 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0 \
         /usr/lib/x86_64-linux-gnu/libnettle.so.8; do
    b=$(basename "$f")
    if [ ! -r "$f" ]; then
        ok 1 "$f is installed (scripts/install-deps.sh)"
        continue
    fi
    for layout in compact inline shared; do
        KP --detours $layout --probe '*' -o "$D/$b-$layout" "$f" >/dev/null 2>"$D/err"
        rc=$?
        "$RC" -m 3 -L "$b ($layout)" "$f" "$D/$b-$layout" >"$D/check-$b" 2>&1
        sum=$(tail -n 1 "$D/check-$b" | sed "s/^reloc-check: $b ($layout): //")
        ok $([ $rc -ne 1 ] && grep -q ', 0 mismatches$' "$D/check-$b"; echo $?) "reloc-check: $b ($layout): $sum"
        grep -v '^reloc-check: ' "$D/check-$b" | head -n 12 | sed 's/^/# /'
    done
done
# the programs still work: rg searches, fd lists (sorted: both run
# threads), python runs a script
cat >"$D/script.py" <<'EOF'
import json, re, zlib, hashlib
d = {str(i): [i, i * i, str(i)[::-1]] for i in range(3000)}
s = json.dumps(d, sort_keys=True)
print(len(s), zlib.crc32(s.encode()), hashlib.sha256(s.encode()).hexdigest())
print(sorted(re.findall(r'"(\d+)7"', s))[:5], sum(len(v[2]) for v in json.loads(s).values()))
EOF
# behave PROG LAYOUT ARG...: the rewritten PROG prints what PROG prints, and ends the same way
behave() {
    b=$1 layout=$2
    shift 2
    if [ -x "$D/$b-$layout" ]; then
        want=$(digest "$(command -v "$b")" "$@")
        got=$(digest "$D/$b-$layout" "$@")
        is "$want" "$got" "behaviour: $b $* ($layout): the output and exit status are the original's"
        [ "$want" = "$got" ] || { run "$D/$b-$layout" "$@"; } 2>&1 | tail -n 2 | sed "s/^/# /"
    else
        ok 1 "behaviour: $b ($layout): it was rewritten"
    fi
}
for layout in compact inline shared; do
    behave rg $layout -n Zydis "$KP_SRCDIR/src"
    behave fdfind $layout -e c . "$KP_SRCDIR/src"
    behave python3.11 $layout -B "$D/script.py"
done

done_testing
