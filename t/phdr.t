#!/bin/sh
# Prebuilt images whose program header table has no spare entries for the
# pool's PT_LOADs: executables with fewer than two PT_NOTEs, libraries with
# none. kprewrite grows the table in place over the sections after it
# (.interp, notes, .gnu.hash: they move into the pool), or, when data
# follows the table, writes a larger one at the end of the file in a
# PT_LOAD of its own. Fixtures are linked here with the system toolchain
# (the linker's own script, edited to drop notes or to put data right
# after the table); each gets a probe on every function entry and must
# give the original's output with exact hit counts, code and data at their
# addresses, and stay readable by readelf, objdump, eu-elflint, gdb and
# LIEF (and strip, when the table grew in place). Then /usr/bin/bc and
# pigz, which have one PT_NOTE, on real workloads.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf cmp
D=$(tmpdir phdr)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
KP() { "$KPREWRITE" --runtime "$RTLIB" "$@"; }
preload_sanitizer
hits() { awk -v s="$2+0x0" '$4 == s { print $6 }' "$1"; }
notes() { readelf -lW "$1" | grep -c '^ *NOTE '; }
phnum() { readelf -hW "$1" | awk '/Number of program headers/ { print $5 }'; }
phoff() { readelf -hW "$1" | awk '/Start of program headers/ { print $5 }'; }
# segs FILE TYPE: that type's program headers, "offset vaddr filesz memsz flags" a line
segs() { readelf -lW "$1" | awk -v t="$2" '$1 == t { f = $7; if ($8 ~ /^[RWE]+$/) f = f $8; print $2, $3, $5, $6, f }'; }
types() { readelf -lW "$1" | awk '/^  [A-Z]/ && $1 != "Type" { printf "%s ", $1 }'; }

# script MODE NAME SED: the linker's default script for MODE (-pie, -no-pie,
# -shared), edited by SED, in $D/NAME.ld
script() {
    if [ "$1" = -shared ]; then src="-fPIC $S/prebuilt-lib.c"; else src="$S/prebuilt-prog.c -pthread"; fi
    $CC "$1" -Wl,--verbose -o "$D/ld-probe" $src 2>/dev/null | sed -n '/^======/,/^======/p' | sed '1d;$d' | sed "$3" >"$D/$2.ld"
    grep -q SIZEOF_HEADERS "$D/$2.ld"
}
NONOTES='s|/DISCARD/ : {|/DISCARD/ : { *(.note.gnu.property) *(.note.ABI-tag)|'
FIRST='s|\(+ SIZEOF_HEADERS;\)|\1 .kp_first : { KEEP(*(.kp_first)) }|'
for m in pie no-pie shared; do
    script -$m $m "$NONOTES"; r1=$?
    script -$m $m-first "$NONOTES;$FIRST"; r2=$?
    ok $([ $r1 = 0 ] && [ $r2 = 0 ]; echo $?) "the linker's default -$m script, edited"
done

# --- executables: fixture NOTES FLAGS SCRIPT EXTRA -------------------------------
# name WANT-NOTES pie-flags script extra-ld-flags extra-source
FIXTURES="pie-0:0:-fPIE/-pie:pie:--build-id=none:
pie-1:1:-fPIE/-pie:pie:--build-id=sha1:
nopie-0:0:-fno-pie/-no-pie:no-pie:--build-id=none:
nopie-1:1:-fno-pie/-no-pie:no-pie:--build-id=sha1:
pie-first:0:-fPIE/-pie:pie-first:--build-id=none:$S/phdr-first.c
nopie-first:0:-fno-pie/-no-pie:no-pie-first:--build-id=none:$S/phdr-first.c"
for f in $FIXTURES; do
    IFS=: read -r name want pie ld bid extra <<EOF
$f
EOF
    P=$D/$name
    $CC -O2 ${pie%/*} ${pie#*/} -pthread -Wl,-T,"$D/$ld.ld" -Wl,$bid -o "$P" "$S/prebuilt-prog.c" $extra
    rc=$?
    is "0 $want" "$rc $(notes "$P")" "$name: fixture built, $want PT_NOTE"
    cp "$P" "$P.orig"
    KP --probe '*' "$P" >"$D/$name.report" 2>"$D/$name.err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ]; echo $?) "$name: every function entry baked (exit $rc: $(tail -n 1 "$D/$name.err"))"
    # the layout: the original PT_LOADs as they were, PT_PHDR first, then the
    # PT_LOADs ascending, PT_PHDR naming the table (e_phoff, e_phnum)
    n0=$(phnum "$P.orig")
    is "$(segs "$P.orig" LOAD)" "$(segs "$P" LOAD | head -n "$(segs "$P.orig" LOAD | wc -l)")" "$name: the original PT_LOADs unchanged"
    like '^PHDR (INTERP )?LOAD LOAD LOAD LOAD LOAD LOAD ' "$(types "$P")" "$name: PT_PHDR first, then the PT_LOADs"
    sorted=$(segs "$P" LOAD | awk '{ print $2 }' | while read -r v; do printf '%d\n' "$v"; done)
    is "$(echo "$sorted" | sort -n)" "$sorted" "$name: the PT_LOADs ascend"
    phdr=$(segs "$P" PHDR)
    set -- $phdr
    is "$(phoff "$P") $((($(phnum "$P")) * 56))" "$(($1)) $(($3))" "$name: PT_PHDR names the table (offset, size)"
    case $name in
    *-first)
        is "$((n0 + 3))" "$(phnum "$P")" "$name: a new table, three entries more"
        first=$(segs "$P" LOAD | head -n 1)
        set -- $phdr $first
        is "$(($7 - $6))" "$(($2 - $1))" "$name: the new table mapped as the first PT_LOAD maps (p_vaddr - p_offset)"
        last=$(segs "$P" LOAD | tail -n 1)
        set -- $phdr $last
        is "$1 $2 R" "$6 $7 $(echo "$last" | awk '{ print $5 }')" "$name: in a read-only PT_LOAD of its own, the highest"
        is "$(objdump -s -j .kp_first "$P.orig" | tail -n +4)" "$(objdump -s -j .kp_first "$P" | tail -n +4)" \
            "$name: the data after the old table kept its address and bytes"
        ;;
    *)
        is "$(phoff "$P.orig") $((n0 + 2))" "$(phoff "$P") $(phnum "$P")" "$name: the table grew in place, two entries more"
        if [ -n "$(segs "$P.orig" INTERP)" ]; then
            is "$(readelf -p .interp "$P.orig" | grep '\]')" "$(readelf -p .interp "$P" | grep '\]')" \
                "$name: .interp moved whole ($(segs "$P" INTERP | cut -d' ' -f2))"
        fi
        [ "$want" = 1 ] && is "$(readelf -n "$P.orig")" "$(readelf -n "$P")" "$name: the note moved whole"
        ;;
    esac
    is "$("$P.orig" 1000 abc)" "$("$P" 1000 abc)" "$name: output identical"
    KPREWRITE_REPORT=all "$P" 1000 abc >/dev/null 2>"$D/hits"
    is "1000 100000 1" "$(hits "$D/hits" mix) $(hits "$D/hits" classify) $(hits "$D/hits" work)" \
        "$name: exact hits (mix 1000, classify 4 threads x 25000, work 1)"
    is "" "$(readelf -aW "$P" 2>&1 >/dev/null)" "$name: readelf -a reads it without a warning"
    if command -v objdump >/dev/null; then
        objdump -d "$P" >"$D/dis" 2>"$D/dis.err"
        is "0 " "$? $(cat "$D/dis.err")" "$name: objdump disassembles it"
    fi
    if command -v eu-elflint >/dev/null; then   # the one new complaint: the tag naming the table (OS-specific)
        eu-elflint --gnu-ld "$P.orig" 2>&1 | grep -v '^No errors' >"$D/lint.orig"
        eu-elflint --gnu-ld "$P" 2>&1 | grep -v '^No errors' | grep -v "'.dynamic': entry 1: unknown tag" >"$D/lint.new"
        is "$(cat "$D/lint.orig")" "$(cat "$D/lint.new")" "$name: eu-elflint --gnu-ld says what it said of the original"
    else
        skip "eu-elflint (elfutils) not installed"
    fi
    # GNU strip (2.40) writes a table it did not find at the front at a file
    # offset that does not match its address; eu-strip keeps the layout
    case $name in *-first) strip=eu-strip ;; *) strip=strip ;; esac
    if command -v $strip >/dev/null; then
        $strip -o "$D/stripped" "$P" 2>"$D/strip.err"
        is "$("$P.orig" 300 s)|" "$("$D/stripped" 300 s)|$(cat "$D/strip.err")" "$name: $strip keeps it running"
        KPREWRITE_REPORT=all "$D/stripped" 300 >/dev/null 2>"$D/hits"
        is 300 "$(hits "$D/hits" mix)" "$name: and probing (mix counted 300 times)"
    else
        skip "$strip not installed"; skip "$strip not installed"
    fi
done

# --- gdb and LIEF, on one table grown in place and one moved ----------------------
LIEF=
if [ -r /usr/include/LIEF/ELF.h ] && $CC -o "$D/lief-dump" "$KP_SRCDIR/t/lief-dump.c" -lLIEF 2>/dev/null; then
    LIEF=$D/lief-dump
fi
for name in pie-1 nopie-first; do
    P=$D/$name
    if command -v gdb >/dev/null && [ -z "$KP_SAN_FLAGS" ]; then
        out=$(timeout 120 gdb -q -batch -ex 'break classify' -ex 'run 10 y' -ex 'bt 1' -ex 'kill' --args "$P" 2>&1)
        like 'Breakpoint 1, .*classify' "$out" "$name: gdb stops at a probed function"
    else
        skip "gdb (absent, or a sanitizer build)"
    fi
    if [ -n "$LIEF" ]; then
        "$LIEF" "$P.orig" >"$D/lief.orig"; r1=$?
        "$LIEF" "$P" >"$D/lief.new"; r2=$?
        more=2; case $name in *-first) more=3;; esac
        s1=$(sed -n 's/^sections //p' "$D/lief.orig"); g1=$(sed -n 's/^segments //p' "$D/lief.orig")
        is "0 0 $((s1 + 4)) $((g1 + more))" "$r1 $r2 $(sed -n 's/^sections //p' "$D/lief.new") $(sed -n 's/^segments //p' "$D/lief.new")" \
            "$name: LIEF parses it: four more sections, $more more segments"
        is "needed $RTLIB" "$(grep '^needed' "$D/lief.new" | head -n 1)" "$name: LIEF: the runtime is the first DT_NEEDED"
    else
        skip "LIEF C API not installed (liblief-dev)"; skip "LIEF"
    fi
done

# --- shared libraries without PT_NOTE, used through LD_LIBRARY_PATH and dlopen -----
$CC -O2 -DDLOPEN -o "$D/dlopenplain" "$S/prebuilt-lib.c" -ldl
$CC -O2 -o "$D/phdr-check" "$S/phdr-check.c" -ldl
for name in lib-0 lib-first; do
    L=$D/$name
    mkdir -p "$L" "$L/probed"
    extra=; ld=shared; case $name in *-first) extra=$S/phdr-first.c; ld=shared-first;; esac
    $CC -O2 -shared -fPIC -Wl,-soname,libpb.so -Wl,-T,"$D/$ld.ld" -Wl,--build-id=none -o "$L/libpb.so" "$S/prebuilt-lib.c" $extra
    rc=$?
    is "0 0" "$rc $(notes "$L/libpb.so")" "$name: fixture built, no PT_NOTE"
    $CC -O2 -DMAIN -o "$D/uselib" "$S/prebuilt-lib.c" -L"$L" -lpb
    want=$(LD_LIBRARY_PATH="$L" "$D/uselib")
    KP --probe '*' -o "$L/probed/libpb.so" "$L/libpb.so" >/dev/null 2>"$L/err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ]; echo $?) "$name: every function entry baked (exit $rc: $(tail -n 1 "$L/err"))"
    n0=$(phnum "$L/libpb.so"); more=2
    case $name in
    *-first)
        more=3
        is "$((n0 + 3))" "$(phnum "$L/probed/libpb.so")" "$name: a new table, three entries more"
        first=$(segs "$L/probed/libpb.so" LOAD | head -n 1); last=$(segs "$L/probed/libpb.so" LOAD | tail -n 1)
        set -- $first $last
        is "$(phoff "$L/probed/libpb.so") $(($2 - $1)) R" "$(($6)) $(($7 - $6)) ${10}" \
            "$name: in a read-only PT_LOAD of its own, the highest, mapped as the first"
        ;;
    *)
        is "$(phoff "$L/libpb.so") $((n0 + 2))" "$(phoff "$L/probed/libpb.so") $(phnum "$L/probed/libpb.so")" \
            "$name: the table grew in place, two entries more"
        ;;
    esac
    is "$(segs "$L/libpb.so" LOAD)" "$(segs "$L/probed/libpb.so" LOAD | head -n "$(segs "$L/libpb.so" LOAD | wc -l)")" \
        "$name: the original PT_LOADs unchanged"
    is "$want" "$(LD_LIBRARY_PATH="$L/probed" "$D/uselib")" "$name: the program using it: output identical"
    LD_LIBRARY_PATH="$L/probed" KPREWRITE_REPORT=all "$D/uselib" >/dev/null 2>"$D/hits"
    is "777 1" "$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" "$name: its probes count (lib_scale 777, lib_sum 1)"
    out=$(KPREWRITE_REPORT=all "$D/dlopenplain" "$L/probed/libpb.so" 2>"$D/hits")
    is "$want|777 1" "$out|$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" \
        "$name: opened with dlopen by a program without the runtime: output identical, probes counted"
    is "$((n0 + more)) program headers, in a PT_LOAD" "$("$D/phdr-check" "$L/probed/libpb.so")" \
        "$name: dl_iterate_phdr gives the new table, in memory a PT_LOAD maps"
    is "" "$(readelf -aW "$L/probed/libpb.so" 2>&1 >/dev/null)" "$name: readelf -a reads it without a warning"
    case $name in *-first) strip=eu-strip ;; *) strip=strip ;; esac
    if command -v $strip >/dev/null; then
        mkdir -p "$L/stripped"
        $strip -o "$L/stripped/libpb.so" "$L/probed/libpb.so" 2>"$D/strip.err"
        out=$(LD_LIBRARY_PATH="$L/stripped" KPREWRITE_REPORT=all "$D/uselib" 2>"$D/hits")
        is "$want|777 1|" "$out|$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)|$(cat "$D/strip.err")" \
            "$name: $strip keeps it working and probing"
    else
        skip "$strip not installed"
    fi
    if command -v eu-elflint >/dev/null; then
        eu-elflint --gnu-ld "$L/libpb.so" 2>&1 | grep -v '^No errors' >"$D/lint.orig"
        eu-elflint --gnu-ld "$L/probed/libpb.so" 2>&1 | grep -v '^No errors' | grep -v "'.dynamic': entry 1: unknown tag" >"$D/lint.new"
        is "$(cat "$D/lint.orig")" "$(cat "$D/lint.new")" "$name: eu-elflint --gnu-ld says what it said of the original"
    else
        skip "eu-elflint (elfutils) not installed"
    fi
done

# --- programs from the machine with one PT_NOTE, on real workloads ------------------
if [ -x /usr/bin/bc ]; then
    cp /usr/bin/bc "$D/bc.orig"
    KP --probe '*' -o "$D/bc" "$D/bc.orig" >/dev/null 2>"$D/bc.err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ]; echo $?) "/usr/bin/bc ($(notes "$D/bc.orig") PT_NOTE): every function entry baked (exit $rc)"
    prog='2^100\nscale=30\n4*a(1)\ndefine f(n) {\n  if (n < 2) return (n)\n  return (f(n-1) + f(n-2))\n}\nscale=0\nf(18)\n'
    want=$(printf "$prog" | "$D/bc.orig" -l 2>&1)
    is "1267650600228229401496703205376|$want" "$(printf "$prog" | "$D/bc" -l 2>&1 | head -n 1)|$(printf "$prog" | "$D/bc" -l 2>&1)" \
        "/usr/bin/bc: 2^100, pi, fib(18): output identical"
    printf "$prog" | KPREWRITE_REPORT=all "$D/bc" -l >/dev/null 2>"$D/hits"
    total=$(awk '$1 == "kprewrite:" && $5 == "hits" { s += $6 } END { print s + 0 }' "$D/hits")
    ok $([ "$total" -gt 1000 ]; echo $?) "/usr/bin/bc: $total probe hits counted"
    strip -o "$D/bc.stripped" "$D/bc" 2>/dev/null
    is "$(echo '2^100' | "$D/bc.orig")" "$(echo '2^100' | "$D/bc.stripped")" "/usr/bin/bc: strip keeps it running"
else
    skip "no /usr/bin/bc"; skip "no /usr/bin/bc"; skip "no /usr/bin/bc"; skip "no /usr/bin/bc"
fi
if [ -x /usr/bin/pigz ]; then
    cp /usr/bin/pigz "$D/pigz.orig"
    KP --probe '*' -o "$D/pigz" "$D/pigz.orig" >/dev/null 2>"$D/pigz.err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ]; echo $?) "/usr/bin/pigz ($(notes "$D/pigz.orig") PT_NOTE): every function entry baked (exit $rc)"
    cat "$KPREWRITE" "$RTLIB" "$D/pigz.orig" >"$D/pigz.in"
    KPREWRITE_REPORT=all "$D/pigz" -p2 <"$D/pigz.in" 2>"$D/hits" | "$D/pigz" -d | cmp -s - "$D/pigz.in"
    ok $? "/usr/bin/pigz -p2 | pigz -d: the input comes back"
    total=$(awk '$1 == "kprewrite:" && $5 == "hits" { s += $6 } END { print s + 0 }' "$D/hits")
    ok $([ "$total" -gt 100 ]; echo $?) "/usr/bin/pigz: $total probe hits counted"
    "$D/pigz" -p2 <"$D/pigz.in" | "$D/pigz.orig" -d | cmp -s - "$D/pigz.in"
    ok $? "/usr/bin/pigz: what the probed one compresses, the original decompresses"
else
    skip "no /usr/bin/pigz"; skip "no /usr/bin/pigz"; skip "no /usr/bin/pigz"; skip "no /usr/bin/pigz"
fi

done_testing
