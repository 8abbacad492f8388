#!/bin/sh
# The layering README's Layout describes, checked on the sources: the
# generic stages of the rewriter reach kernel-only code only through an
# image kind's hooks (kind.h), no file outside src/arch/x86/ holds an x86
# encoding, length or relocation type (they ask the ISA, src/arch/isa.h),
# and src/arch/ includes nothing of the rewriter's.
. "$KP_SRCDIR/t/lib.sh"
need grep
R=$KP_SRCDIR/src/rewriter
A=$KP_SRCDIR/src/arch
[ -f "$R/analyze.c" ] && [ -f "$A/isa.h" ] || { echo "Bail out! no sources under $KP_SRCDIR/src"; exit 1; }

# the generic stages: analysis, bake, ELF reading (the kinds, the kernel
# steps and the command line are not among them)
stages="analyze.c analysis.h analyze.h indirect.c place.c taken.c taken.h resolve.c resolve.h spec.c spec.h
        plan.c plan.h emit.c emit.h table.c table.h bake.c bake.h addpool.c addpool.h addpool-plan.c
        addpool-plan.h image.c image.h symbols.c symbols.h entries.c entries.h ehframe.c ehframe.h strtab.c strtab.h
        atomic-write.c atomic-write.h facts.c facts.h probe.h reasons.c report.c report.h"
files= missing=
for f in $stages; do
    if [ -f "$R/$f" ]; then files="$files $R/$f"; else missing="$missing $f"; fi
done
is "" "$missing" "the generic stages' files are where this test looks"

# grep -n PATTERN FILES..., the file names without their directory
hits() { p=$1; shift; grep -nE -- "$p" "$@" 2>/dev/null | sed "s|^$KP_SRCDIR/||"; }

is "" "$(hits '#include "(ktables|kaslr|fentry|kmodule|kinds)\.h"' $files)" \
   "no generic stage includes a kernel-only step (ktables, kaslr, fentry, kmodule) or names a kind (kinds.h)"
is "" "$(hits 'kfacts_load|kaslr_(move|relocs)|fentry_take_over|kmodule_|ktable_padding_symbol|kind_(linked|prebuilt|vmlinux|module)\b' $files)" \
   "no generic stage calls one either"
is "src/rewriter/image.c" "$(grep -l 'IMG_VMLINUX' $files | sed "s|^$KP_SRCDIR/||" | grep -v 'image\.h$')" \
   "only the ELF reader, which classifies an image, tests for a vmlinux (the stages ask img->hooks)"

is "" "$(hits 'R_X86_64_|EM_X86_64|X86_(JMP|JCC|RELOC|ELF_MACHINE|PROPERTY|FEATURE|DWARF|CALL_CFA)|x86_nop5|0x(cc|e8|e9|eb)\b' \
           "$R"/*.c "$R"/*.h)" \
   "no rewriter file holds an x86 opcode, jump length, relocation type or machine (it asks img->isa)"
is "" "$(hits '#include "\.\./arch/x86/(psabi|elfrel|kernel-tables|krelocs|site)\.h"' "$R"/*.c "$R"/*.h)" \
   "no rewriter file includes x86's ELF facts, kernel tables or site forms"
is "" "$(hits '#include ".*rewriter/' "$A"/*.c "$A"/*.h "$A"/x86/*.c "$A"/x86/*.h)" \
   "src/arch/ includes nothing of the rewriter's"

# the runtime core is shared by the user, kernel and static runtimes; the
# static one is a blob copied as bytes, with no relocation (build-blob.sh):
# each core file compiles freestanding with the blob's flags and holds no
# absolute address (a table of pointers would need one)
W=$(tmpdir layering)
for f in "$KP_SRCDIR"/src/runtime/core/*.c; do
    o=$W/$(basename "$f" .c).o
    if $CC -std=gnu11 -O2 -ffreestanding -nostdlib -fPIE -fvisibility=hidden -mgeneral-regs-only -fno-stack-protector \
            -fno-builtin -fno-tree-loop-distribute-patterns -ffunction-sections -fdata-sections \
            -I"$KP_SRCDIR/include" -I"$KP_SRCDIR/src" -c -o "$o" "$f" 2>"$W/cc.err"; then
        is 0 "$(readelf -rW "$o" | grep -c 'R_X86_64_64 ')" "core/$(basename "$f"): freestanding, no absolute address"
    else
        ok 1 "core/$(basename "$f") compiles freestanding ($(head -n 1 "$W/cc.err"))"
    fi
done
done_testing
