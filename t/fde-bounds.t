#!/bin/sh
# A function's entry taken from an FDE must be an instruction boundary
# (doc/analysis.md, "Function entries"). glibc's __restore_rt has a
# signal-frame FDE (CIE augmentation 'S') that starts one byte before the
# symbol, inside the padding nopl before it: a probe there wrote its jump
# over `mov $0xf,%rax; syscall`, and every return from a signal handler
# crashed. t/data/fde-bounds.S builds the same, and an ordinary FDE that
# starts inside an instruction; then the machine's libc is probed whole and
# a program that takes signals runs on it.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" strip readelf "${OBJDUMP:-objdump}" timeout dd
OBJDUMP=${OBJDUMP:-objdump}
D=$(tmpdir fde-bounds)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
RC=$KP_BUILDDIR/t/reloc/reloc-check

# The signal-frame FDEs of an image: "START END" in hex, one a line.
signal_fdes() {
    readelf --debug-dump=frames "$1" 2>/dev/null | awk '
        $4 == "CIE" { cie = $1 }
        $1 == "Augmentation:" && $2 ~ /S/ { sig[cie] = 1 }
        $4 == "FDE" { split($5, c, "="); split($6, p, "[=.]+"); sub(/^0+/, "", p[2]); sub(/^0+/, "", p[3])
                      if (c[2] in sig) print p[2], p[3] }'
}
# .text's address and file offset, in hex without leading zeros
text_sec() { readelf -SW "$1" | sed -n 's/.* \.text  *PROGBITS  *0*\([0-9a-f][0-9a-f]*\)  *0*\([0-9a-f][0-9a-f]*\) .*/\1 \2/p'; }
# objdump's instruction holding address A (hex, no 0x): "START-END" in hex
insn_at() { # IMAGE A
    a=$((0x$2))
    "$OBJDUMP" -d --start-address=$((a - 15)) --stop-address=$((a + 1)) "$1" | awk -v a="$a" '
        /^ *[0-9a-f]+:\t/ { s = $1; sub(/:$/, "", s); n = 0
            for (i = 2; i <= NF && $i ~ /^[0-9a-f][0-9a-f]$/; i++) n++
            at = 0; for (i = 1; i <= length(s); i++) at = at * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            if (at <= a && a < at + n) printf "0x%x-0x%x\n", at, at + n }' | tail -n 1
}
# the text objdump decodes in [A, B) of an image, addresses and mnemonics
decode() { "$OBJDUMP" -d --start-address=$((0x$2)) --stop-address=$((0x$3)) "$1" | sed -n 's/^ *\([0-9a-f]*\):\t[0-9a-f ]*\t/\1 /p'; }

if $CC -shared -nostdlib -Wl,-soname,libfb.so -o "$D/full.so" "$S/fde-bounds.S" 2>"$D/cc.err" &&
   strip -s -o "$D/stripped.so" "$D/full.so"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
x() { nm "$D/full.so" | awk -v s="$1" '$3 == s { sub(/^0+/, "", $1); print $1 }'; }
first=$(x fb_first); restore=$(x fb_restore); mid=$(x fb_mid); last=$(x fb_last)
r1=$(printf %x $((0x$restore - 1))); m1=$(printf %x $((0x$mid - 1)))
sig=$(signal_fdes "$D/full.so")
is "$r1" "${sig%% *}" "the fixture: one signal-frame FDE, starting at fb_restore - 1 (0x$r1)"
is "0x$((0x$restore - 4 ))" "0x$(( $(insn_at "$D/full.so" "$r1" | sed 's/-.*//') ))" \
   "the fixture: objdump decodes 0x$r1 inside the nopl before fb_restore"
like "FDE cie=.* pc=0*$m1\.\." "$(readelf --debug-dump=frames "$D/full.so")" "the fixture: an FDE without 'S' starts at fb_mid - 1 (0x$m1)"

# With symbols: fb_restore is refused, fb_mid's FDE is fb_mid's (the symbol
# starts in it), and no fde@ function starts inside an instruction
out=$("$KPREWRITE" --check --probe '*' "$D/full.so" 2>&1 | sed 's/^[0-9a-f]\{16\}  //')
is "k  fb_restore+0x0  refused: signal-frame (FDE 0x$r1-0x$(signal_fdes "$D/full.so" | awk '{ print $2 }'))" \
   "$(printf '%s\n' "$out" | grep fb_restore)" "a symbol in a signal-frame FDE: refused, signal-frame"
like '^k  fb_mid\+0x0  \[OPTIMIZED\]  dcr [0-9]+: push %rbp; mov %rsp, %rbp' "$(printf '%s\n' "$out" | grep fb_mid)" \
   "an FDE starting inside the instruction before a symbol: the entry is the symbol's (probed as fb_mid)"
is "" "$(printf '%s\n' "$out" | grep 'fde@')" "no fde@ function at either FDE's start"
is 4 "$(printf '%s\n' "$out" | grep -c '^k  fb_')" "'*' lists fb_first, fb_restore, fb_mid and fb_last"

# Stripped: the signal frame is no function; the other FDE is one, refused
out=$("$KPREWRITE" --check --probe '*' "$D/stripped.so" 2>&1 | sed 's/^[0-9a-f]\{16\}  //')
set -- $(text_sec "$D/stripped.so"); text=$1; off=$2
is "k  fde@0x$m1+0x0  refused: unproven-entry (inside the instruction at $(insn_at "$D/stripped.so" "$m1") of a linear decode from 0x$text (the section's start))" \
   "$(printf '%s\n' "$out" | grep "fde@0x$m1")" \
   "stripped: an FDE starting inside an instruction is refused, unproven-entry, with objdump's instruction there"
is "" "$(printf '%s\n' "$out" | grep -E "fde@0x($r1|$restore)")" "stripped: the signal-frame FDE is no function"
like "^k  fde@0x$first\+0x0  \[OPTIMIZED\]" "$(printf '%s\n' "$out" | grep "fde@0x$first")" "stripped: fb_first, proven by the sweep from .text's start, is probed"
like "^k  fde@0x$last\+0x0  \[OPTIMIZED\]" "$(printf '%s\n' "$out" | grep "fde@0x$last")" "stripped: fb_last, after padding, is probed"
for a in "$r1" "$restore"; do
    is "k  0x$a  refused: signal-frame (FDE 0x$r1-0x$(signal_fdes "$D/stripped.so" | awk '{ print $2 }'))" \
       "$(check1 "$D/stripped.so" "0x$a")" "stripped: a probe at 0x$a, in the signal trampoline, is refused"
done

# The relocation checker's boundary rule on the same: the rewritten
# stripped fixture passes; against an original whose padding before
# fb_last is forged into a push \$imm32 that runs over it, fde@fb_last's
# site is inside an instruction, and only that is reported
"$KPREWRITE" --runtime "$RTLIB" --probe '*' -o "$D/probed.so" "$D/stripped.so" >/dev/null 2>&1
"$RC" -q "$D/stripped.so" "$D/probed.so" >"$D/rc.out" 2>&1; rc=$?
is "0" "$rc" "reloc-check: the rewritten stripped fixture has every site on a boundary ($(tail -n 1 "$D/rc.out"))"
cp "$D/stripped.so" "$D/forged.so"
printf '\220\220\220\220\220\220\220\220\220\150\220' |
    dd of="$D/forged.so" bs=1 seek=$((0x$off + 0x$last - 0x$text - 11)) conv=notrunc 2>/dev/null
"$RC" --no-bytes "$D/forged.so" "$D/probed.so" >"$D/rc.out" 2>&1; rc=$?
like "^$D/probed.so: fde@0x$last\+0x0 at 0x$last: \[insn-boundary\] 'push \\\$.*0x$last is inside an instruction: the linear sweep from 0x$text \(the section's start\) decodes 0x$(printf %x $((0x$last - 2)))-0x$(printf %x $((0x$last + 3)))" \
     "$(head -n 1 "$D/rc.out")" "reloc-check: a site inside an instruction of the sweep is reported"
like '^1 .* 1 mismatches: insn-boundary 1$' "$rc $(tail -n 1 "$D/rc.out")" "reloc-check: exit 1, that one mismatch"

# The fixture run: a program calls fb_first, fb_mid and fb_last and returns
# from its signal handler through fb_restore (its sa_restorer), on the
# original and on the probed libraries, stripped and not
mkdir -p "$D/orig" "$D/pfull" "$D/pstripped"
cp "$D/stripped.so" "$D/orig/libfb.so"
"$KPREWRITE" --runtime "$RTLIB" --probe '*' -o "$D/pfull/libfb.so" "$D/full.so" >/dev/null 2>&1
cp "$D/probed.so" "$D/pstripped/libfb.so"
$CC -o "$D/restorer" "$S/fde-restorer.c" "$D/full.so" 2>"$D/cc.err"; ok $? "the restorer program builds $(head -n 1 "$D/cc.err")"
want=$(LD_LIBRARY_PATH="$D/orig" "$D/restorer")
is "100 signals, sum 20900" "$want" "the restorer program on the original library (sum of i+1, i+2 and (i+4)*2)"
# (a sanitizer build's runtime needs libasan first in the process)
san_pre=; [ -z "$KP_SAN_FLAGS" ] || san_pre=$($CC -print-file-name=libasan.so)
for v in pfull pstripped; do
    got=$(KPREWRITE_CTL_DIR=/proc/none KPREWRITE_REPORT=all LD_LIBRARY_PATH="$D/$v:$KP_BUILDDIR/.libs" \
          LD_PRELOAD=$san_pre ASAN_OPTIONS=detect_leaks=0 timeout -s KILL 60 "$D/restorer" 2>"$D/$v.hits"); rc=$?
    is "0 $want" "$rc $got" "$v: the handler returns through the probed library's fb_restore 100 times, the same output"
done
is "fb_first+0x0 100
fb_last+0x0 100
fb_mid+0x0 100" "$(awk '$4 ~ /^fb_/ && $6 > 0 { print $4, $6 }' "$D/pfull.hits" | sort)" "pfull: fb_first, fb_mid and fb_last each counted 100 hits"
is "fde@0x$first+0x0 100
fde@0x$last+0x0 100" "$(awk '$4 ~ /^fde@/ && $6 > 0 { print $4, $6 }' "$D/pstripped.hits" | sort)" \
   "pstripped: fde@fb_first and fde@fb_last each counted 100 hits, nothing else"

# The machine's libc, every entry and every return probed
P=$D/fde-signals
$CC -O2 -o "$P" "$S/fde-signals.c" 2>"$D/cc.err"; ok $? "the signal program builds $(head -n 1 "$D/cc.err")"
LIBC=$(ldd "$P" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$LIBC" ] || { ok 1 "ldd finds the libc.so.6 the program runs on"; done_testing; }
mkdir -p "$D/lib"
"$KPREWRITE" --runtime "$RTLIB" --probe '*' --probe '*%return' -o "$D/lib/libc.so.6" "$LIBC" >"$D/report" 2>"$D/err"
ok $([ -s "$D/lib/libc.so.6" ]; echo $?) "$LIBC rewritten with '*' and '*%return' ($(tail -n 1 "$D/err"))"
sig=$(signal_fdes "$LIBC")
ok $([ -n "$sig" ]; echo $?) "libc has signal-frame FDEs: $(echo $sig)"
set -- $sig
while [ $# -ge 2 ]; do
    s=$1; e=$2; a=$(printf %x $((0x$s + 1))); shift 2
    orig=$(decode "$LIBC" "$a" "$e")
    like "^$a mov +\\\$0xf,%rax
[0-9a-f]+ syscall" "$orig" "libc: objdump decodes __restore_rt at 0x$a (its FDE starts at 0x$s, in the instruction $(insn_at "$LIBC" "$s"))"
    is "$orig" "$(decode "$D/lib/libc.so.6" "$a" "$e")" "the probed libc's bytes at 0x$a are the original's"
    is "" "$(awk -v s=$((0x$s)) -v e=$((0x$e)) '{ a = 0; for (i = 1; i <= 16; i++) a = a * 16 + index("0123456789abcdef", substr($1, i, 1)) - 1
                                               if (a >= s && a < e) print }' "$D/report")" "no probe in [0x$s, 0x$e)"
    like "^k  0x$a  refused: signal-frame" "$(check1 "$LIBC" "0x$a")" "a probe asked at 0x$a is refused: signal-frame"
done
if [ -x "$RC" ]; then
    "$RC" -q "$LIBC" "$D/lib/libc.so.6" >"$D/rc.out" 2>&1
    is "" "$(grep -o 'insn-boundary [0-9]*' "$D/rc.out")" "reloc-check: every site of the probed libc is on a boundary of its sweep"
else
    ok 1 "reloc-check is built ($RC)"
fi
# (with its control directory: the runtime's own threads keep SIGTRAP
# deliverable on a probed libc, src/runtime/user/libc-guard.c)
# (not in a sanitizer build: libasan, which its runtime needs first, cannot
# run over a rewritten libc's IFUNCs, as t/libc.t says)
if [ -n "$KP_SAN_FLAGS" ]; then
    skip "a sanitizer build: libasan cannot be preloaded over a probed libc (t/libc.t)"
else
    want=$("$P")
    got=$(KPREWRITE_CTL_DIR="$D/ctl" timeout -s KILL 60 env LD_LIBRARY_PATH="$D/lib:$KP_BUILDDIR/.libs" "$P" 2>"$D/run.err"); rc=$?
    is "0 $want" "$rc $got" "a program whose handlers take 2000 signals runs on the probed libc: same output ($(head -n 1 "$D/run.err"))"
fi
done_testing
