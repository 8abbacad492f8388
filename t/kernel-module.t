#!/bin/sh
# Probes baked into a loadable kernel module (kprewrite --kernel MODULE.ko),
# checked in user space: a relocatable object built as kernel code is
# (t/data/kmod-fn.c) gets the probes; GNU ld, not kprewrite, then applies
# the relocations kprewrite wrote for its detours and table, linking it
# with a stand-in for the kernel (t/data/kmod-main.c) that arms the probes
# as the kernel runtime does when a module comes. What the functions
# return must not change, and every probe must count each call.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf cmp
D=$(tmpdir kernel-module)
kcflags="-O2 -mcmodel=kernel -mno-red-zone -fno-pic -fno-asynchronous-unwind-tables -fno-stack-protector"
inc="-I$KP_SRCDIR/include -I$KP_SRCDIR/src/arch/x86"
if ! $CC $kcflags -c -o "$D/kmod.o" "$KP_SRCDIR/t/data/kmod-fn.c" 2>"$D/cc.log" ||
   ! $CC -O2 -static -no-pie $inc -o "$D/orig" "$KP_SRCDIR/t/data/kmod-main.c" "$D/kmod.o" 2>>"$D/cc.log"; then
    echo "Bail out! the module stand-in does not build: $(grep -m 1 error "$D/cc.log")"   # a broken fixture is a failure
    exit 1
fi
cp "$D/kmod.o" "$D/kmod.o.orig"

# what the report says: the kernel's rules on a module's code
check=$("$KPREWRITE" --kernel --check --probe 'kmod_*' "$D/kmod.o")
like "kmod_add\\+0x0  \\[OPTIMIZED\\]" "$check" "kmod_add+0 is jump-optimized"
like "kmod_data\\+0x0  \\[OPTIMIZED\\].*RIP-relative operand re-pointed" "$check" \
    "kmod_data+0 (its first instruction reads the module's data) is jump-optimized"
like "kmod_cold\\+0x0  \\[OPTIMIZED\\]" "$check" "kmod_cold+0, in a second text section, is jump-optimized"
like "kmod_call\\+0x0  \\[INT3\\] call-in-dcr" "$check" "kmod_call+0 (a call to the kernel in its DCR) needs int3"
like "kmod_local\\+0x0  \\[INT3\\] call-in-dcr" "$check" "kmod_local+0 (a call to its own section first) needs int3"
like "kmod_addr\\+0x0  \\[OPTIMIZED\\]  dcr 7: mov \\$" "$check" \
    "kmod_addr+0 (an address the loader writes into the code) is jump-optimized: the relocation moves with the copy"

out=$("$KPREWRITE" --kernel --probe 'kmod_*' -o "$D/baked.o" "$D/kmod.o" 2>&1)
like "wrote .*baked.o: 7 probes baked into the module, pool: text [0-9]+, table [0-9]+, data 56 bytes" "$out" \
    "the seven points are baked into the module"
cmp -s "$D/kmod.o" "$D/kmod.o.orig"; ok $? "the input is untouched"

# binutils' view of the output
sec=$(readelf -SW "$D/baked.o")
like "\\.kprewrite\\.text +PROGBITS .* AX " "$sec" "readelf: .kprewrite.text is code"
like "\\.kprewrite\\.table +PROGBITS .* A " "$sec" "readelf: .kprewrite.table is read-only data"
like "\\.kprewrite\\.data +PROGBITS .* WA " "$sec" "readelf: .kprewrite.data is writable data"
rel=$(readelf -rW "$D/baked.o")
like "R_X86_64_PLT32 +0+ kprewrite_dispatch - 4" "$rel" "the detours call kprewrite_dispatch through the loader"
like "R_X86_64_PC64 +0+ __kprewrite_state \\+ 18" "$rel" "the table's state_rel is made by the loader"
like "R_X86_64_32S +0+ kmod_counter \\+ 0" \
    "$(readelf -rW "$D/baked.o" | sed -n '/\.rela\.kprewrite\.text/,/^$/p')" \
    "kmod_addr's copy carries the module's absolute relocation of kmod_counter"
like "R_X86_64_PC32 +0+ kmod_counter - 4" \
    "$(readelf -rW "$D/baked.o" | sed -n '/\.rela\.kprewrite\.text/,/^$/p')" \
    "kmod_data's copy carries the module's relocation of kmod_counter"
# the kernel's module loader applies a relocation only where the field
# holds zero (arch/x86/kernel/module.c): every field of the pool's must
nonzero=0 nrel=0
for sec in .kprewrite.text .kprewrite.table; do
    off=$(readelf -SW "$D/baked.o" | awk -v s="$sec" '{ sub(/^ *\[ *[0-9]+\] */, "") } $1 == s { print $4; exit }')
    readelf -rW "$D/baked.o" | sed -n "/'\\.rela$sec'/,/^\$/p" | awk '$3 ~ /^R_X86_64_/ { print $1, $3 }' > "$D/rel"
    while read -r at type; do
        nrel=$((nrel + 1))
        case $type in R_X86_64_PC64|R_X86_64_64) w=8 ;; *) w=4 ;; esac
        v=$(od -An -tx1 -j $((0x$off + 0x$at)) -N $w "$D/baked.o" | tr -d ' \n')
        [ "$v" = "$(printf '%0*d' $((2 * w)) 0)" ] || nonzero=$((nonzero + 1))
    done < "$D/rel"
done
[ $nrel -gt 10 ] && [ $nonzero = 0 ]; ok $? "every field the pool's $nrel relocations apply to holds zero ($nonzero do not)"
orig_text=$(readelf -x .text "$D/kmod.o" | tail -n +3)
is "$orig_text" "$(readelf -x .text "$D/baked.o" | tail -n +3)" "the module's code is as it was (the runtime patches it when it loads)"

# ld links it; the stand-in arms it and runs it
if $CC -O2 -static -no-pie $inc -o "$D/baked" "$KP_SRCDIR/t/data/kmod-main.c" "$D/baked.o" 2>"$D/ld.log"; then
    ok 0 "ld links the baked module"
else
    ok 1 "ld links the baked module: $(head -n 1 "$D/ld.log")"
fi
"$D/orig" > "$D/orig.out"
"$D/baked" > "$D/baked.out"; rc=$?
is 0 "$rc" "the baked module runs"
like "module table: flags 0x40, 7 entries, 7 armed, 0 bytes differ, 7 states zero" "$(cat "$D/baked.out")" \
    "each site as linked is what the table says, but for the bytes relocations wrote"
is "$(cat "$D/orig.out")" "$(grep -v -e '^module table' -e '^hits' "$D/baked.out")" \
    "the functions return what they did"
for h in "kmod_addr jump 1" "kmod_helper jump 6" "kmod_add jump 3" "kmod_data jump 3" "kmod_cold jump 3" "kmod_call int3 3" "kmod_local int3 3"; do
    grep -qx "hits $h" "$D/baked.out"; ok $? "hits $h"
done

# what cannot be baked, one line each, nothing written
cp "$D/baked.o" "$D/again.o"
out=$("$KPREWRITE" --kernel --probe kmod_add "$D/again.o" 2>&1); rc=$?
like "again.o: the module holds baked probes already" "$out" "a module with probes is refused"
isnt 0 "$rc" "... with an error status"
cmp -s "$D/again.o" "$D/baked.o"; ok $? "... and left as it was"
cp "$D/kmod.o" "$D/signed.ko"
printf '~Module signature appended~\n' >> "$D/signed.ko"
out=$("$KPREWRITE" --kernel --probe kmod_add "$D/signed.ko" 2>&1); rc=$?
like "signed.ko: the module is signed: bake probes into it before signing it" "$out" "a signed module is refused"
isnt 0 "$rc" "... with an error status"
out=$("$KPREWRITE" --probe kmod_add "$D/kmod.o" 2>&1)
like "kmod.o: relocatable object: link it first \\(a kernel module: give --kernel\\)" "$out" \
    "without --kernel a relocatable object is refused, saying how"
printf 'extern long g; long f(void) { return g; }\n' > "$D/pic.c"
$CC -O2 -fpic -c -o "$D/pic.o" "$D/pic.c"
out=$("$KPREWRITE" --kernel --probe f "$D/pic.o" 2>&1); rc=$?
like "pic.o: \\.text\\+0x[0-9a-f]+: relocation type [0-9]+ against g: not one the kernel's module loader applies there" \
    "$out" "a relocation the module loader would not apply is named"
isnt 0 "$rc" "... with an error status"
# what make fuzz found: a section aligned to 2^63 made the preview's layout
# wrap around and grow without end; refused in one line, at once
idx=$(readelf -SW "$D/kmod.o" | sed -n 's/^ *\[ *\([0-9]*\)\] *\.rela\.text .*/\1/p')
shoff=$(od -An -tu8 -j 40 -N 8 "$D/kmod.o" | tr -d ' ')
cp "$D/kmod.o" "$D/align.o"
[ -n "$idx" ] && perl -e 'print pack("Q<", 1 << 63)' |
    dd of="$D/align.o" bs=1 seek=$((shoff + idx * 64 + 48)) conv=notrunc 2>/dev/null
out=$("$KPREWRITE" --kernel --probe 'kmod_*' -o "$D/align-out.o" "$D/align.o" 2>&1); rc=$?
like "align.o: section \.rela\.text is too large or too aligned for a module" "$out" \
    "a section aligned to 2^63 is refused"
is "1 1" "$rc $(printf '%s\n' "$out" | wc -l)" "... with exit 1 and one line"
done_testing
