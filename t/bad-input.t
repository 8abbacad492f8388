#!/bin/sh
# Bad input gives one line on stderr and exit 1, never a crash; all cases
# also run under valgrind (memcheck) when it is installed (not in a sanitizer
# build: there ASan and UBSan watch every run, and any report breaks the
# one-line check).
. "$KP_SRCDIR/t/lib.sh"
need "$CC" dd
D=$(tmpdir bad-input)
$CC -O1 -o "$D/good" "$KP_SRCDIR/t/data/verdicts.S" "$KP_SRCDIR/t/data/verdicts-main.c"
printf 'hello, not an ELF\n' >"$D/text"
: >"$D/empty"
head -c 100 "$D/good" >"$D/trunc-header"
size=$(wc -c <"$D/good")
head -c $((size / 2)) "$D/good" >"$D/trunc-half"
cp "$D/good" "$D/elf32"; printf '\001' | dd of="$D/elf32" bs=1 seek=4 conv=notrunc 2>/dev/null
cp "$D/good" "$D/arm64"; printf '\267\000' | dd of="$D/arm64" bs=1 seek=18 conv=notrunc 2>/dev/null
cp "$D/good" "$D/bigend"; printf '\002' | dd of="$D/bigend" bs=1 seek=5 conv=notrunc 2>/dev/null
cp "$D/good" "$D/shoff"; printf '\377\377\377\177' | dd of="$D/shoff" bs=1 seek=40 conv=notrunc 2>/dev/null
$CC -c -o "$D/obj.o" "$KP_SRCDIR/t/data/verdicts.S"

run() { # WANT-REGEX DESCRIPTION ARGS...
    want=$1; desc=$2; shift 2
    err=$("$KPREWRITE" "$@" 2>&1 >/dev/null); rc=$?
    lines=$(printf '%s\n' "$err" | wc -l)
    ok $([ $rc -eq 1 ] && [ "$lines" -eq 1 ]; echo $?) "$desc: exit 1 with one line (rc=$rc, $lines lines)"
    like "$want" "$err" "$desc: says why"
    if [ -z "$KP_SAN_FLAGS" ] && [ -n "$VALGRIND" ] && command -v "$VALGRIND" >/dev/null 2>&1; then
        "$VALGRIND" -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "$KPREWRITE" "$@" >/dev/null 2>"$D/vg.log"
        ok $([ $? -ne 99 ] && ! grep -q '==[0-9]*==' "$D/vg.log"; echo $?) "$desc: clean under valgrind"
    fi
}
run 'text: not an ELF file' "not an ELF" --check --probe main "$D/text"
run 'empty: not an ELF file \(empty\)' "empty file" --check --probe main "$D/empty"
run 'trunc-header: (truncated|malformed)' "truncated header" --check --probe main "$D/trunc-header"
run 'trunc-half: truncated' "truncated in the middle" --check --probe main "$D/trunc-half"
run 'elf32: 32-bit ELF is not supported' "32-bit ELF" --check --probe main "$D/elf32"
run 'arm64: unsupported machine \(e_machine 183\)' "another machine" --check --probe main "$D/arm64"
run 'bigend: big-endian' "big-endian" --check --probe main "$D/bigend"
run 'shoff: truncated: section headers past end of file' "section headers past the end" --check --probe main "$D/shoff"
run 'obj.o: relocatable object' "relocatable object" --check --probe f_opt "$D/obj.o"
run 'nosuch: cannot open' "missing file" --check --probe main "$D/nosuch"
run 'not a regular file' "a directory" --check --probe main "$D"
run "unknown symbol 'nosuch_fn'" "unknown symbol" --check --probe nosuch_fn "$D/good"
run "\-\-probe 'main\+': col 6: missing offset after '\+'" "malformed spec" --check --probe 'main+' "$D/good"
run "negative offsets" "negative offset" --check --probe 'main-1' "$D/good"
run 'no IMAGE given' "no image" --check --probe main
run 'no probe given' "no probe" --check "$D/good"
run "unknown option '--bogus'" "unknown option" --check --bogus "$D/good"
run 'cannot open probe file' "missing probe file" --check --probe-file "$D/nosuch" "$D/good"
run 'cannot open System.map' "missing System.map" --check --probe main --system-map "$D/nosuch" "$D/good"
printf 'garbage line\n' >"$D/map"
run 'map:1:1: not a System.map line' "bad System.map" --check --probe main --system-map "$D/map" "$D/good"
# Crafted program headers (issue 33): a PIE whose first PT_LOAD has p_offset
# 2^63 and p_filesz 2^63 + 0x1000 (their sum wraps to 0x1000, which passed
# the old bound; adding a pool then read 2^63 bytes past the file: SIGSEGV),
# one whose addresses p_vaddr + p_memsz wrap (the pool went at the wrapped
# address), and a PT_LOAD with more file bytes than memory. Each is refused
# with one line naming the file, the header and the reason, exit 1, no
# output, the input byte for byte as it was; also in place (no temporary
# file left) and with --check.
need perl cmp
printf 'int f(int x) { return x * 3 + 1; }\nint main(int c, char **v) { (void)v; return f(c); }\n' >"$D/pie.c"
$CC -O1 -fPIE -pie -o "$D/pie" "$D/pie.c"
crafted() { # NAME WANT-REGEX HEADER FIELD=VALUE...
    cn=$1 cw=$2; shift 2   # (not name/want: run() sets those)
    perl "$KP_SRCDIR/t/data/phdr-patch.pl" "$D/pie" "$D/$cn" "$@"
    cp "$D/$cn" "$D/$cn.orig"
    run "$cn: $cw" "crafted $cn: rewritten to -o" --probe f -o "$D/$cn.out" "$D/$cn"
    ok $([ ! -e "$D/$cn.out" ] && cmp -s "$D/$cn" "$D/$cn.orig"; echo $?) \
        "crafted $cn: no output file, the input unchanged"
    mkdir -p "$D/inplace"; rm -rf "$D/inplace/"* "$D/inplace/".[!.]*
    cp "$D/$cn" "$D/inplace/$cn"
    run "$cn: $cw" "crafted $cn: rewritten in place" --probe f "$D/inplace/$cn"
    is "$cn" "$(ls -A "$D/inplace")" "crafted $cn: nothing but the input in its directory"
    ok $(cmp -s "$D/inplace/$cn" "$D/$cn.orig"; echo $?) "crafted $cn: in place, the input unchanged"
    run "$cn: $cw" "crafted $cn: --check" --check --probe f "$D/$cn"
}
crafted offset-wraps 'program header [0-9]+ \(PT_LOAD, p_offset 0x8000000000000000, p_filesz 0x8000000000001000, .*\): its file bytes \(p_offset \+ p_filesz\) lie past the end of the file$' \
    load:0 p_offset=0x8000000000000000 p_filesz=0x8000000000001000
crafted vaddr-wraps 'program header [0-9]+ \(PT_LOAD, .*p_vaddr 0xfffffffffffff000, p_memsz 0x2000\): its addresses \(p_vaddr \+ p_memsz\) run past the end of the address space$' \
    load:3 p_vaddr=0xfffffffffffff000 p_paddr=0xfffffffffffff000 p_memsz=0x2000
crafted filesz-memsz 'program header [0-9]+ \(PT_LOAD, .*p_memsz 0x10\): p_filesz is larger than p_memsz$' \
    load:1 p_memsz=0x10
crafted dynamic-past-end 'program header [0-9]+ \(PT_DYNAMIC, p_offset 0xfffffffffffffff0, .*\): its file bytes \(p_offset \+ p_filesz\) lie past the end of the file$' \
    dynamic:0 p_offset=0xfffffffffffffff0
# A fuzz-lite sweep: every 97th byte of the file flipped, one at a time; no signal may kill us.
crashed=0; i=64
while [ $i -lt "$size" ] && [ $i -lt 20000 ]; do
    cp "$D/good" "$D/flip"; printf '\377' | dd of="$D/flip" bs=1 seek=$i conv=notrunc 2>/dev/null
    "$KPREWRITE" --check --probe '*' "$D/flip" >/dev/null 2>&1
    [ $? -ge 128 ] && { crashed=$((crashed + 1)); echo "# crash with byte $i flipped"; }
    i=$((i + 97))
done
is 0 "$crashed" "corrupted bytes never crash kprewrite"
done_testing
