#!/bin/sh
# Regression tests for what `make fuzz` found (doc/hardening.md): each finding
# rebuilt here from a fixture plus the byte patch the fuzzer made, then run
# through kprewrite. Each must end with a verdict or a one-line error, never
# a crash, and (under valgrind, or ASan in a sanitizer build) with no
# invalid access and no leak.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" as ld od dd readelf
D=$(tmpdir fuzz-regress)
use_runtime

# sane DESCRIPTION ARGS...: kprewrite ARGS exits 0..3, says at most one line
# on error, and is clean under valgrind when there is one to ask.
sane() {
    desc=$1; shift
    err=$("$KPREWRITE" "$@" 2>&1 >/dev/null); rc=$?
    lines=$(printf '%s\n' "$err" | wc -l)
    ok $([ $rc -le 3 ] && { [ $rc -ne 1 ] || [ "$lines" -eq 1 ]; } &&
         ! printf '%s\n' "$err" | grep -q 'Sanitizer\|runtime error'; echo $?) \
        "$desc: exit $rc, $lines line(s)"
    [ $rc -le 3 ] || printf '%s\n' "$err" | head -n 5 | sed 's/^/# /'
    if [ -z "$KP_SAN_FLAGS" ] && [ -n "$VALGRIND" ] && command -v "$VALGRIND" >/dev/null 2>&1; then
        "$VALGRIND" -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            "$KPREWRITE" "$@" >/dev/null 2>"$D/vg.log"
        ok $([ $? -ne 99 ] && ! grep -q '==[0-9]*==' "$D/vg.log"; echo $?) "$desc: clean under valgrind"
    fi
}
# offset_of IMAGE SECTION: the file offset of SECTION, in decimal
offset_of() {
    readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$2" '$1 == s { print $4 }' |
        { read -r h && echo $((0x$h)); }
}
# u32 FILE OFFSET: the little-endian 32-bit value at OFFSET
u32() { od -An -tu4 -j "$2" -N 4 "$1" | tr -d ' '; }

# 1. A relocation whose symbol index is 0xffffffff: the bound check computed
#    index + 1 in 32 bits, wrapped to 0, and read 100 GB past the symbol table.
as -o "$D/vmlinux.o" "$KP_SRCDIR/t/data/fake-vmlinux.S" &&
    ld -q -static -nostdlib -e fn_plain -Ttext=0xffffffff81000000 -z max-page-size=4096 \
        --unique=.data..percpu -o "$D/vmlinux" "$D/vmlinux.o"
rela=$(offset_of "$D/vmlinux" .rela.text)
cp "$D/vmlinux" "$D/relsym"
i=0 patched=
while [ -n "$rela" ] && [ $i -lt 64 ] && [ -z "$patched" ]; do
    if [ "$(u32 "$D/vmlinux" $((rela + i * 24 + 8)))" = 2 ]; then   # R_X86_64_PC32
        printf '\377\377\377\377' | dd of="$D/relsym" bs=1 seek=$((rela + i * 24 + 12)) conv=notrunc 2>/dev/null
        patched=$i
    fi
    i=$((i + 1))
done
ok $([ -n "$patched" ]; echo $?) "the fixture has a PC32 relocation to break (entry ${patched:-none})"
sane "relocation with symbol index 0xffffffff" --check --kernel --probe '*' "$D/relsym"

# 2. --remove naming a symbol the image does not have: the probes resolved
#    before the error leaked.
$CC -O2 -mgeneral-regs-only -o "$D/pool" "$KP_SRCDIR/t/data/kret-prog.c" "$KP_SRCDIR/t/data/kret-asm.S" $RT
"$KPREWRITE" --probe square -o "$D/pool-baked" "$D/pool" >/dev/null 2>&1
like "unknown symbol 'nosuch'" "$("$KPREWRITE" --remove nosuch -o "$D/out" "$D/pool-baked" 2>&1)" \
    "--remove of an unknown symbol is an error"
sane "--remove of an unknown symbol" --remove nosuch -o "$D/out" "$D/pool-baked"

# 3. A prebuilt program whose program header table (e_phoff) is not 8-byte
#    aligned: adding a pool read the headers in place, a misaligned access
#    (UBSan). Now refused as malformed, like a misaligned PT_DYNAMIC.
printf 'int main(void) { return 0; }\n' > "$D/plain.c"
$CC -O2 -fPIE -pie -o "$D/plain" "$D/plain.c"
cp "$D/plain" "$D/phoff"
printf '\101' | dd of="$D/phoff" bs=1 seek=32 conv=notrunc 2>/dev/null   # e_phoff 64 -> 65
ok $([ "$(od -An -tu8 -j 32 -N 8 "$D/phoff" | tr -d ' ')" = 65 ]; echo $?) "e_phoff is now 65"
like "malformed program headers" "$("$KPREWRITE" --probe main -o "$D/out" "$D/phoff" 2>&1)" \
    "a misaligned program header table is refused"
sane "misaligned program header table" --probe main -o "$D/out" "$D/phoff"

# 4. A pool whose .kprewrite.data starts at an odd file offset: the states
#    were written through a misaligned pointer (UBSan). Now refused.
shoff=$(od -An -tu8 -j 40 -N 8 "$D/pool" | tr -d ' ')
idx=$(readelf -SW "$D/pool" | sed -n 's/^ *\[ *\([0-9]*\)\] *\.kprewrite\.data .*/\1/p')
cp "$D/pool" "$D/misdata"
if [ -n "$idx" ]; then
    at=$((shoff + idx * 64 + 24))   # sh_offset
    v=$(od -An -tu8 -j $at -N 8 "$D/pool" | tr -d ' ')
    perl -e 'print pack("Q<", $ARGV[0])' $((v + 1)) | dd of="$D/misdata" bs=1 seek=$at conv=notrunc 2>/dev/null
fi
ok $([ -n "$idx" ] && ! cmp -s "$D/pool" "$D/misdata"; echo $?) "the pool's data section offset is now odd (section ${idx:-none})"
like "pool sections are misaligned" "$("$KPREWRITE" --probe square -o "$D/out" "$D/misdata" 2>&1)" \
    "a misaligned pool section is refused"
sane "misaligned pool section" --probe square -o "$D/out" "$D/misdata"

# 5. A prebuilt program with a section of type SHT_NULL that claims bytes
#    past the end of the file: adding a pool copied them (ASan). A NULL
#    section has no bytes; it is left where it is.
idx=$(readelf -SW "$D/plain" | sed -n 's/^ *\[ *\([0-9]*\)\] *\.comment .*/\1/p')
shoff=$(od -An -tu8 -j 40 -N 8 "$D/plain" | tr -d ' ')
cp "$D/plain" "$D/nullsec"
if [ -n "$idx" ]; then
    h=$((shoff + idx * 64))
    perl -e 'print pack("L<", 0)' | dd of="$D/nullsec" bs=1 seek=$((h + 4)) conv=notrunc 2>/dev/null        # sh_type NULL
    perl -e 'print pack("Q<", 0x80000)' | dd of="$D/nullsec" bs=1 seek=$((h + 24)) conv=notrunc 2>/dev/null  # sh_offset
    perl -e 'print pack("Q<", 0x180000)' | dd of="$D/nullsec" bs=1 seek=$((h + 32)) conv=notrunc 2>/dev/null # sh_size
fi
ok $([ -n "$idx" ] && readelf -SW "$D/nullsec" 2>/dev/null | grep -q 'NULL .*080000 180000'; echo $?) \
    "section ${idx:-none} is now NULL, 1.5 MB at 0x80000 of a $(wc -c < "$D/plain")-byte file"
rtlib=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
sane "a NULL section past the end of the file, pool added" --runtime "$rtlib" --probe main -o "$D/out" "$D/nullsec"
"$KPREWRITE" --runtime "$rtlib" --probe main -o "$D/out" "$D/nullsec" >/dev/null 2>&1
preload_sanitizer
ok $([ "$("$D/out"; echo $?)" = 0 ]; echo $?) "the probed program runs"

# 6. A prebuilt library whose PT_LOAD says p_memsz 2^63 (its addresses end
#    below 2^64) and whose PT_NOTE's alignment (2^42 + 8) keeps the program
#    header table from growing in place: the new table had to lie past
#    that memory, and adding a pool (no probe: 0x0 is refused) asked calloc
#    for 2^63 bytes (ASan: allocation-size-too-big; valgrind: a fishy
#    calloc size; found by the prebuilt harness's ELF-aware mutation within
#    2,516 executions of the code before issue 33's fixes). Segments past
#    the user address space (2^56) are now refused before any layout.
$CC -O2 -shared -fPIC -Wl,--build-id=sha1 -o "$D/lib1.so" "$KP_SRCDIR/t/data/prebuilt-lib.c"
perl "$KP_SRCDIR/t/data/phdr-patch.pl" "$D/lib1.so" "$D/hugemem0.so" load:2 p_memsz=0x8000000000000000 &&
    perl "$KP_SRCDIR/t/data/phdr-patch.pl" "$D/hugemem0.so" "$D/hugemem.so" note:0 p_align=0x40000000008
ok $? "a PT_LOAD of the library now says p_memsz 2^63, its PT_NOTE p_align 2^42 + 8"
like "hugemem.so: program header [0-9]+ lies past the end of the file or of the user address space: cannot add a pool" \
    "$("$KPREWRITE" --runtime "$rtlib" --probe 0x0 -o "$D/out" "$D/hugemem.so" 2>&1)" "a segment past 2^56 is refused"
sane "a PT_LOAD of 2^63 bytes of memory, pool added" --runtime "$rtlib" --probe 0x0 -o "$D/out" "$D/hugemem.so"

# 7. The same with 1 GiB of memory, where the program header table cannot
#    grow in place (data follows it): the new table must lie in the file at
#    the offset of its address, past that memory, and the output was 1 GiB
#    of padding (2 GiB of memory, 50 s). Now refused past 64 MiB of padding.
printf '.section .kp_first,"a"\n.quad 1\n' >"$D/first.s"
$CC -O2 -fPIE -pie -Wl,--verbose -o "$D/ld-probe" "$D/plain.c" 2>/dev/null | sed -n '/^======/,/^======/p' | sed '1d;$d' |
    sed 's|/DISCARD/ : {|/DISCARD/ : { *(.note.gnu.property) *(.note.ABI-tag)|;s|\(+ SIZEOF_HEADERS;\)|\1 .kp_first : { KEEP(*(.kp_first)) }|' >"$D/first.ld"
$CC -O2 -fPIE -pie -Wl,-T,"$D/first.ld" -Wl,--build-id=none -o "$D/first" "$D/plain.c" "$D/first.s"
rm -f "$D/out"
perl "$KP_SRCDIR/t/data/phdr-patch.pl" "$D/first" "$D/bigbss" load:3 p_memsz=0x40000000
ok $? "a PIE with data after its program headers and 1 GiB of .bss"
like "bigbss: the program header table must move to file offset 0x4000[0-9a-f]{4}, past 1024 MiB of padding, to match its address: cannot add a pool" \
    "$("$KPREWRITE" --runtime "$rtlib" --probe main -o "$D/out" "$D/bigbss" 2>&1)" "1 GiB of padding is refused"
ok $([ ! -e "$D/out" ]; echo $?) "no output"
sane "1 GiB of padding before a moved table" --runtime "$rtlib" --probe main -o "$D/out" "$D/bigbss"

# 8. Code sections out of address order: a stripped PIE whose .init is
#    renamed "init" (searched: not a stub's name, as a crafted file's
#    garbled names are not) and moved to 0x7fffffffff, past .text, where a
#    function without CFI is found. The gaps came in section order; the
#    walk over what no found function holds went from that function to
#    "init", 512 GiB a byte at a time (make fuzz's check and elf harnesses
#    timed out on such a file). Now the gaps are sorted, and bytes no
#    section holds are passed at once. The bound below guards against a
#    hang (it is thousands of times the run's length), not a timing.
printf '    .text\n    .globl nocfi\nnocfi:\n    lea 1(%%rdi), %%rax\n    ret\n    .section .note.GNU-stack,"",@progbits\n' >"$D/nocfi.s"
printf 'long nocfi(long);\nint main(int c, char **v) { (void)v; return (int)nocfi(c) - 2; }\n' >"$D/nocfi.c"
$CC -O2 -fPIE -pie -s -o "$D/gap" "$D/nocfi.c" "$D/nocfi.s"
sh=$(readelf -hW "$D/gap" | awk '/Start of section headers/ { print $5 }')
idx=$(readelf -SW "$D/gap" | sed 's/^ *\[ *\([0-9]*\)\] */\1 /' | awk '$2 == ".init" { print $1 }')
# (perl, not dd: this runs after preload_sanitizer, and dd aborts with
# libasan preloaded; the section header's sh_name + 1, sh_addr)
[ -n "$sh" ] && [ -n "$idx" ] &&
    env -u LD_PRELOAD perl -e 'open(my $f, "+<", $ARGV[0]) or die; binmode $f; my $h = $ARGV[1];
        seek($f, $h, 0); read($f, my $n, 4); seek($f, $h, 0); print $f pack("V", unpack("V", $n) + 1);
        seek($f, $h + 16, 0); print $f pack("VV", 0xffffffff, 0x7f); close($f) or die' "$D/gap" $((sh + idx * 64))
is "init 7fffffffff" "$(readelf -SW "$D/gap" 2>/dev/null | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == "init" { print $1, $3 }' | sed 's/ 0*/ /')" \
    "the fixture's .init renamed init and moved to 0x7fffffffff (section ${idx:-none})"
timeout 300 "$KPREWRITE" --check --probe '*' "$D/gap" >"$D/gap.out" 2>&1; rc=$?
ok $([ $rc -le 3 ] && grep -q 'fn@0x' "$D/gap.out"; echo $?) \
    "code sections out of address order: a verdict (exit $rc), the function without CFI found, no walk to the far section"
sane "code sections out of address order" --check --probe '*' "$D/gap"

# 9. Go's function table (.gopclntab, gopclntab.c), crafted: each count or
#    offset broken is a one-line error naming the section, the offset read
#    and the check (never a read outside the table); a broken SP table only
#    loses the function's precise end. Searched for under another name, a
#    valid header is found, and a broken one ignored.
as -o "$D/fake-go.o" "$KP_SRCDIR/t/data/fake-go.S" && ld -static -nostdlib -e _start -o "$D/fake-go" "$D/fake-go.o"
G=$(offset_of "$D/fake-go" .gopclntab)
is "main.a+0x0 main.b+0x0" "$("$KPREWRITE" --check --probe 'main.*' "$D/fake-go" | awk '{ print $3 }' | tr '\n' ' ' | sed 's/ $//')" \
    "the Go fixture's functions are named"
like 'main\.b\+0x0  refused: go-runtime \(main\.b loads %rsp at 0x' "$("$KPREWRITE" --check --probe main.b "$D/fake-go")" \
    "a Go function that loads %rsp, unflagged, is refused (go-runtime)"
# the same table in Go 1.16's and 1.20's layouts (fake-go.S --defsym GOVER):
# names, each function's end from its SP table (12 instructions: no
# padding decoded), and the flag byte where each layout has it (1.16 has
# none: main.b is refused for loading %rsp; 1.20's says SPWRITE)
for v in 116 120; do
    as --defsym GOVER=$v -o "$D/fake-go$v.o" "$KP_SRCDIR/t/data/fake-go.S" &&
        ld -static -nostdlib -e _start -o "$D/fake-go$v" "$D/fake-go$v.o"
    "$KPREWRITE" --check --summary --probe 'main.*' "$D/fake-go$v" >"$D/go$v.out" 2>&1
    is "main.a+0x0 main.b+0x0" "$(awk '/^[0-9a-f]/ { print $3 }' "$D/go$v.out" | tr '\n' ' ' | sed 's/ $//')" \
        "Go $v layout: the functions are named"
    like "^summary: 2 Go functions \(.gopclntab, Go 1\.${v#1} layout" "$(grep '^summary: 2 Go' "$D/go$v.out")" \
        "Go $v layout: read as such"
    like "^summary: 2 functions decoded, 12 instructions" "$(grep '^summary: 2 functions' "$D/go$v.out")" \
        "Go $v layout: each function's end from its SP table (12 instructions, no padding decoded)"
done
like 'main\.b\+0x0  refused: go-runtime \(main\.b loads %rsp' "$(grep main.b "$D/go116.out")" \
    "Go 1.16 layout: no flag byte read (main.b refused for loading %rsp)"
like "main\.b\+0x0  refused: go-runtime \(main\.b writes SP \(Go's SPWRITE flag\)\)" "$(grep main.b "$D/go120.out")" \
    "Go 1.20 layout: the flag byte after startLine (main.b's SPWRITE)"
# gobreak NAME OFFSET BYTES WANT: the table with BYTES (printf escapes) at OFFSET; the
# error names the field read last (the list's offset, an entry, a record)
gobreak() {
    cp "$D/fake-go" "$D/go-$1"
    printf "$3" | LD_PRELOAD= dd of="$D/go-$1" bs=1 seek=$((G + $2)) conv=notrunc 2>/dev/null
    like "$4" "$("$KPREWRITE" --check --probe '*' "$D/go-$1" 2>&1 >/dev/null | head -n 1)" "Go table, $1: $4"
    sane "Go table, $1" --check --probe '*' "$D/go-$1"
}
FF8='\377\377\377\377\377\377\377\377'
# (dd under a sanitizer build's preloaded libasan fails: LD_PRELOAD= for it)
gobreak nfunc-max 8 "$FF8" 'gopclntab\+0x40: malformed Go function table: its function list runs past its end'
gobreak nfunc-wraps 8 '\0\0\0\0\0\0\0\040' 'malformed Go function table: its function list runs past its end'
gobreak pcln-wraps 64 '\370\377\377\377\377\377\377\377' 'gopclntab\+0x40: .*function list runs past its end'
gobreak names-past 32 '\377\377\0\0\0\0\0\0' 'gopclntab\+0x20: .*name table starts past its end'
gobreak funcoff-max 104 '\377\377\377\377' 'gopclntab\+0x64: .*a function.s record lies outside the table'
gobreak nameoff-max 156 '\377\377\377\177' 'gopclntab\+0x98: .*a function.s name lies outside the table'
gobreak text-wraps 24 "$FF8" 'gopclntab\+0x64: .*an entry runs past the end of the address space'
gobreak entry-outside 100 '\377\377\0\0' 'gopclntab\+0x64: .*a function lies outside the sections of code'
gobreak entry-order 108 '\001\0\0\0' 'gopclntab\+0x6c: .*not in the order of their entries'
cp "$D/fake-go" "$D/go-pcsp"   # the SP tables' offset at the table's last byte: their varints run off its end
printf '\277' | LD_PRELOAD= dd of="$D/go-pcsp" bs=1 seek=$((G + 56)) conv=notrunc 2>/dev/null
is 2 "$("$KPREWRITE" --check --probe 'main.*' "$D/go-pcsp" | grep -c 'main\.[ab]+0x0  \[OPTIMIZED\]\|loads %rsp')" \
    "Go table, SP table cut: still named and judged"
sane "Go table, SP table cut" --check --probe '*' "$D/go-pcsp"
# the section renamed (.gopclntab -> .gopclntaX): found by its header
pos=$(grep -abo '\.gopclntab' "$D/fake-go" | tail -n 1 | cut -d: -f1)
cp "$D/fake-go" "$D/go-renamed"
printf 'X' | LD_PRELOAD= dd of="$D/go-renamed" bs=1 seek=$((pos + 9)) conv=notrunc 2>/dev/null
ok $(readelf -SW "$D/go-renamed" | grep -q '\.gopclntaX'; echo $?) "the table's section renamed .gopclntaX"
is "main.a+0x0 main.b+0x0" "$("$KPREWRITE" --check --probe 'main.*' "$D/go-renamed" | awk '{ print $3 }' | tr '\n' ' ' | sed 's/ $//')" \
    "a table under another name is found by its header"
cp "$D/go-renamed" "$D/go-renamed-bad"
printf "$FF8" | LD_PRELOAD= dd of="$D/go-renamed-bad" bs=1 seek=$((G + 8)) conv=notrunc 2>/dev/null
like "\.go\.buildinfo: a Go image whose function table \(\.gopclntab\) was not found" \
    "$("$KPREWRITE" --check --probe 'main.*' "$D/go-renamed-bad" 2>&1)" \
    "a Go image whose table (searched for) is broken: an error, its Go code not probed without Go's rules"
sane "Go table searched for, broken" --check --probe '*' "$D/go-renamed-bad"
# (.go.buildinfo renamed too: no Go image, the broken header is no table)
pos=$(grep -abo '\.go\.buildinfo' "$D/go-renamed-bad" | tail -n 1 | cut -d: -f1)
printf 'X' | LD_PRELOAD= dd of="$D/go-renamed-bad" bs=1 seek=$((pos + 3)) conv=notrunc 2>/dev/null
like "no function matches 'main.\*'" "$("$KPREWRITE" --check --probe 'main.*' "$D/go-renamed-bad" 2>&1)" \
    "in an image that is not Go's, a broken header searched for is no table (nothing named)"
sane "not Go's, a table searched for, broken" --check --probe '*' "$D/go-renamed-bad"

done_testing
