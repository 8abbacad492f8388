#!/bin/sh
# Prebuilt images (built without the runtime): kprewrite adds the pool and
# the runtime as DT_NEEDED. A probe on every function entry of C (PIE, not
# PIE, threads), C++ that throws, a shared library, and a program from
# /usr/bin: identical output, exact or plausible counts; handlers from a
# preloaded library; the result stays a well-formed ELF for readelf,
# objdump, gdb and LIEF, survives strip, and is as clean under valgrind.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf cmp
D=$(tmpdir prebuilt)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
KP() { "$KPREWRITE" --runtime "$RTLIB" "$@"; }
# A sanitizer build's runtime needs libasan first in the process: the
# programs here were not built with it, so preload it (leaks are checked by
# the other tests of that build).
preload_sanitizer
vg() { [ -z "$KP_SAN_FLAGS" ] && [ -n "$VALGRIND" ] && command -v "$VALGRIND" >/dev/null 2>&1; }
# hits IMAGE-RUN-STDERR SYM: the hit count KPREWRITE_REPORT=all printed for SYM+0x0
hits() { awk -v s="$2+0x0" '$4 == s { print $6 }' "$1"; }
# hits_like FILE PREFIX: the same for the one function whose name starts with PREFIX (not .cold)
hits_like() { awk -v p="$2" 'index($4, p) == 1 && $4 !~ /\.cold/ && $4 ~ /\+0x0$/ { print $6 }' "$1"; }

# --- C, PIE and not, threads: every function entry ----------------------------
for pie in -fPIE/-pie -fno-pie/-no-pie; do
    v="-O2 ${pie%/*}"
    P=$D/prog${pie%%/*}
    $CC -O2 ${pie%/*} ${pie#*/} -pthread -o "$P" "$S/prebuilt-prog.c"
    cp "$P" "$P.orig"
    KP --probe '*' --probe 'work%return' "$P" >"$D/report" 2>"$D/err"; rc=$?
    ok $([ $rc -eq 0 ] || [ $rc -eq 2 ]; echo $?) "$v: every function entry baked (exit $rc: $(tail -n 1 "$D/err"))"
    like "needed $RTLIB" "$(readelf -d "$P" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/needed \1/p' | head -n 1)" \
        "$v: the runtime is the first DT_NEEDED"
    tb=$(readelf -SW "$P" | sed -n 's/.*\.kprewrite\.table *PROGBITS *0*\([0-9a-f]*\) .*/0x\1/p')
    is "$tb" "$(readelf -d "$P" | sed -n 's/^ *0x0*6b707277 .* \(0x[0-9a-f]*\)$/\1/p')" \
        "$v: its dynamic tag (KPRW_DT_TABLE) names the probe table, at $tb"
    is "$("$P.orig" 1000 abc)" "$("$P" 1000 abc)" "$v: output identical"
    KPREWRITE_REPORT=all "$P" 1000 abc >/dev/null 2>"$D/hits"
    is "1000 100000 1" "$(hits "$D/hits" mix) $(hits "$D/hits" classify) $(hits "$D/hits" work)" \
        "$v: exact hits (mix 1000, classify 4 threads x 25000, work 1)"
    # handlers from a library the program was not built with
    $CC -O2 -shared -fPIC -mgeneral-regs-only -I"$KP_SRCDIR/include" -o "$D/handlers.so" "$S/prebuilt-handlers.c" \
        -L"$KP_BUILDDIR/.libs" -lkprewrite-rt
    want=$("$P.orig" 500 x)
    got=$(LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$D/handlers.so" "$P" 500 x 2>"$D/h.err")
    is "$want|handlers: mix 500 bad 0 work returned $(echo "$want" | sed -n 's/^work //p')" "$got|$(cat "$D/h.err")" \
        "$v: a preloaded handler library: kprobe args and kretprobe return value"
done

# The runtime finds an added table through its dynamic tag alone, and only
# where the tag names the start of a read-only segment: a tag edited to name
# anything else arms nothing (and nothing there is read).
P=$D/prog-fPIE
cp "$P" "$D/retagged"
dynoff=$(readelf -d "$P" | sed -n 's/^Dynamic section at offset \(0x[0-9a-f]*\).*/\1/p')
idx=$(readelf -d "$P" | awk '/^ *0x/ { n++ } /6b707277/ { print n - 1; exit }')
low=$(od -An -tu1 -j $((dynoff + idx * 16 + 8)) -N1 "$P" | tr -d ' ')   # the value's low byte, 64 off
printf "\\$(printf %03o $((low ^ 64)))" | LD_PRELOAD= dd of="$D/retagged" bs=1 seek=$((dynoff + idx * 16 + 8)) conv=notrunc 2>/dev/null
KPREWRITE_REPORT=all "$D/retagged" 1000 abc >"$D/retagged.out" 2>"$D/retagged.hits"
is "$("$P.orig" 1000 abc)|" "$(cat "$D/retagged.out")|$(hits "$D/retagged.hits" mix)" \
    "a KPRW_DT_TABLE edited to name no segment's start arms nothing: output identical, no hits"

# --- well-formed: readelf, objdump, gdb, LIEF, strip, valgrind --------------------
P=$D/prog-fPIE
is "" "$(readelf -aW "$P" 2>&1 >/dev/null)" "readelf -a reads it without a warning"
if command -v objdump >/dev/null; then
    objdump -d "$P" >"$D/dis" 2>"$D/dis.err"
    is "0 " "$? $(cat "$D/dis.err")" "objdump (libbfd) disassembles it"
    like '<work>:' "$(cat "$D/dis")" "objdump still names the functions"
fi
if command -v gdb >/dev/null && [ -z "$KP_SAN_FLAGS" ]; then   # gdb under a preloaded ASan hangs
    out=$(timeout 120 gdb -q -batch -ex 'break classify' -ex 'run 10 y' -ex 'bt 1' -ex 'kill' --args "$P" 2>&1)
    like 'Breakpoint 1, .*classify' "$out" "gdb stops at a probed function"
else
    skip "gdb (absent, or a sanitizer build)"
fi
if [ -r /usr/include/LIEF/ELF.h ] && $CC -o "$D/lief-dump" "$KP_SRCDIR/t/lief-dump.c" -lLIEF 2>/dev/null; then
    "$D/lief-dump" "$P.orig" >"$D/lief.orig"; r1=$?
    "$D/lief-dump" "$P" >"$D/lief.new"; r2=$?
    is "0 0" "$r1 $r2" "LIEF parses the original and the rewritten image"
    s1=$(sed -n 's/^sections //p' "$D/lief.orig"); s2=$(sed -n 's/^sections //p' "$D/lief.new")
    is "$((s1 + 4)) $(sed -n 's/^segments //p' "$D/lief.orig")" "$s2 $(sed -n 's/^segments //p' "$D/lief.new")" \
        "LIEF: four more sections, as many segments"
    is "needed $RTLIB" "$(grep '^needed' "$D/lief.new" | head -n 1)" "LIEF: the runtime is the first DT_NEEDED"
    is "$(grep '^needed' "$D/lief.orig")" "$(grep '^needed' "$D/lief.new" | sed 1d)" "LIEF: the other DT_NEEDEDs unchanged"
    like 'section \.kprewrite\.table' "$(cat "$D/lief.new")" "LIEF sees the probe table section"
else
    skip "LIEF C API not installed (liblief-dev)"; skip "LIEF"; skip "LIEF"; skip "LIEF"; skip "LIEF"
fi
strip -o "$D/stripped" "$P" 2>"$D/strip.err"
is "$("$P.orig" 300 s)|" "$("$D/stripped" 300 s)|$(cat "$D/strip.err")" "strip keeps it running"
KPREWRITE_REPORT=all "$D/stripped" 300 >/dev/null 2>"$D/hits"
is "300" "$(hits "$D/hits" mix)" "and probing (the stripped copy counts mix 300 times)"
if vg; then
    "$VALGRIND" -q --error-exitcode=99 "$P.orig" 200 >/dev/null 2>"$D/vg.orig"; r1=$?
    "$VALGRIND" -q --error-exitcode=99 "$P" 200 >/dev/null 2>"$D/vg.new"; r2=$?
    is "$r1 $(grep -c '==[0-9]*==' "$D/vg.orig")" "$r2 $(grep -c '==[0-9]*==' "$D/vg.new")" \
        "valgrind reports nothing the original did not"
else
    skip "valgrind (absent, or a sanitizer build)"
fi

# --- C++ that throws and catches in normal operation ----------------------------------
if command -v "$CXX" >/dev/null 2>&1; then
    X=$D/throw
    $CXX -O2 -o "$X" "$S/prebuilt-throw.cc"
    want=$("$X")
    KP --probe '*' "$X" >/dev/null 2>&1
    is "$want" "$("$X")" "C++: output identical with every function probed (exceptions caught through probed frames)"
    KPREWRITE_REPORT=all "$X" >/dev/null 2>"$D/hits"
    is "300 1" "$(hits_like "$D/hits" _Z5parse) $(hits_like "$D/hits" _Z5total)" \
        "C++: exact hits on parse (300) and total (1)"
else
    skip "no C++ compiler"; skip "no C++ compiler"
fi

# --- a shared library, used through LD_LIBRARY_PATH ------------------------------------
mkdir -p "$D/lib" "$D/lib-probed"
$CC -O2 -shared -fPIC -Wl,-soname,libpb.so -o "$D/lib/libpb.so" "$S/prebuilt-lib.c"
$CC -O2 -DMAIN -o "$D/uselib" "$S/prebuilt-lib.c" -L"$D/lib" -lpb
want=$(LD_LIBRARY_PATH="$D/lib" "$D/uselib")
KP --probe '*' -o "$D/lib-probed/libpb.so" "$D/lib/libpb.so" >/dev/null 2>&1
ok $? "a shared library gets a pool"
is "$want" "$(LD_LIBRARY_PATH="$D/lib-probed" "$D/uselib")" "the program using it: output identical"
LD_LIBRARY_PATH="$D/lib-probed" KPREWRITE_REPORT=all "$D/uselib" >/dev/null 2>"$D/hits"
is "777 1" "$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" "the library's probes count (lib_scale 777, lib_sum 1)"
# the exported names stay in its dynamic string table (KPRW_NAME_DYN): not in the table
objcopy -O binary -j .kprewrite.table "$D/lib-probed/libpb.so" "$D/table.bin"
ok $([ -s "$D/table.bin" ] && ! grep -q lib_scale "$D/table.bin"; echo $?) \
    "its exported names are read from its .dynstr, not copied into the probe table"

$CC -O2 -DDLOPEN -o "$D/dlopenlib" "$S/prebuilt-lib.c" -ldl
KP --probe main "$D/dlopenlib" >/dev/null 2>&1   # the runtime is loaded (and initialised) before the dlopen
is "$want" "$("$D/dlopenlib" "$D/lib-probed/libpb.so")" "a program opening it with dlopen: output identical"
KPREWRITE_REPORT=all "$D/dlopenlib" "$D/lib-probed/libpb.so" >/dev/null 2>"$D/hits"
is "777 1" "$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" "a probed program that dlopens it: its probes are armed once dlopen returns"
# dlclose and dlopen again: the runtime keeps a probed library mapped (it
# holds its table and states), so the second copy is the first one
L=$D/lib-probed/libpb.so
is "$want
$want" "$("$D/dlopenlib" "$L" "$L")" "opened, closed and opened again: output identical"
KPREWRITE_REPORT=all "$D/dlopenlib" "$L" "$L" >/dev/null 2>"$D/hits"; rc=$?
is "0 1554 2" "$rc $(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" \
    "and its probes count both openings (lib_scale 2 x 777, lib_sum 2)"
# The same from a program not linked with the runtime (a plugin host): the
# runtime comes in with the library, so closing the library must unmap
# neither the runtime (under its control thread: a crash) nor the table.
$CC -O2 -DDLOPEN -o "$D/dlopenplain" "$S/prebuilt-lib.c" -ldl
out=$(KPREWRITE_REPORT=all "$D/dlopenplain" "$L" "$L" 2>"$D/hits"); rc=$?
is "0|$want
$want|1554 2" "$rc|$out|$(hits "$D/hits" lib_scale) $(hits "$D/hits" lib_sum)" \
    "a program without the runtime opens, closes and opens it: no crash, output identical, both openings counted"
# More edited tables than the runtime remembers refusing (16): each one is
# still checked and refused, none armed on trust.
sec() { readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$2" '$1 == s { print $4 }'; }
toff=$((0x$(sec "$D/lib-probed/libpb.so" .kprewrite.table)))
mkdir -p "$D/edited"
libs=
for i in $(seq 17); do
    cp "$D/lib-probed/libpb.so" "$D/edited/libpb$i.so"
    printf '\143\000' | LD_PRELOAD= dd of="$D/edited/libpb$i.so" bs=1 seek=$((toff + 4)) conv=notrunc 2>/dev/null   # (dd fails under libasan)
    libs="$libs $D/edited/libpb$i.so"
done
out=$(KPREWRITE_REPORT=all "$D/dlopenlib" $libs 2>"$D/edited.err")
is "17 17" "$(echo "$out" | grep -c "^$want\$") $(grep -c 'libpb[0-9]*\.so: probe table refused: table version 99' "$D/edited.err")" \
    "17 libraries with edited tables opened: each runs unprobed and each is refused"

# --- the padding tactic at run time: a 3-byte function's jump ends in the padding
$CC -O1 -o "$D/pad" "$S/verdicts.S" "$S/verdicts-main.c"
"$D/pad" >"$D/pad.want"; want_rc=$?
KP --probe f_padded --probe f_opt "$D/pad" >"$D/pad.report" 2>/dev/null
like 'f_padded\+0x0  \[OPTIMIZED\].*padding' "$(cat "$D/pad.report")" "padding tactic: baked as a jump"
KPREWRITE_REPORT=all "$D/pad" >"$D/pad.got" 2>"$D/hits"; rc=$?
is "$want_rc $(cat "$D/pad.want") 1" "$rc $(cat "$D/pad.got") $(hits "$D/hits" f_padded)" \
    "padding tactic: same output and exit status, the probe counts its hit"
# bytes_at FILE SYM N: N bytes at SYM, in hex, through .text's file offset
bytes_at() {
    set -- "$1" "$(nm "$1" | awk -v s="$2" '$3 == s { print $1 }')" "$3" \
        "$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".text" { print $3, $4 }')"
    od -An -tx1 -j $((0x$2 - 0x${4% *} + 0x${4#* })) -N "$3" "$1" | tr -d ' \n'
}
orig_bytes=$($CC -O1 -o "$D/pad.orig" "$S/verdicts.S" "$S/verdicts-main.c" && bytes_at "$D/pad.orig" f_padded 5)
KP --remove f_padded -o "$D/pad.removed" "$D/pad" >/dev/null 2>&1
is "$orig_bytes" "$(bytes_at "$D/pad.removed" f_padded 5)" "padding tactic: --remove puts back the function and its padding"

# --- live control of a prebuilt image (shared detours) ----------------------------------
# unoptimize puts an int3 on mix: its hits resume in the shared detour's
# copy of the displaced instructions; optimize puts the jump back
if [ -e /dev/fuse ] || command -v fusermount3 >/dev/null 2>&1; then
    $CC -O2 -o "$D/serve" "$S/prebuilt-serve.c"
    cp "$D/serve" "$D/serve.orig"
    KP --probe mix "$D/serve" >/dev/null 2>&1
    rm -f "$D/go.1" "$D/go.2"
    KPREWRITE_CTL_DIR="$D/ctl" KPREWRITE_CTL_DELAY_MS=0 KPREWRITE_REPORT=all "$D/serve" "$D/go" >"$D/serve.out" 2>"$D/serve.err" &
    pid=$!
    for i in $(seq 100); do [ -e "$D/ctl/$pid/list" ] && break; sleep 0.05; done
    like 'mix\+0x0  \[OPTIMIZED\]' "$(cat "$D/ctl/$pid/list" 2>&1)" "control of a prebuilt image: mix is listed optimized"
    echo 'unoptimize mix' >"$D/ctl/$pid/control"
    like 'mix\+0x0    hits 0' "$(cat "$D/ctl/$pid/list" 2>&1)" "control of a prebuilt image: unoptimized, it traps"
    touch "$D/go.1"
    for i in $(seq 100); do grep -q 'phase 1' "$D/serve.out" && break; sleep 0.05; done
    echo 'optimize mix' >"$D/ctl/$pid/control"
    like 'mix\+0x0  \[OPTIMIZED\]  hits 100' "$(cat "$D/ctl/$pid/list" 2>&1)" "control of a prebuilt image: 100 hits by int3, then optimized again"
    touch "$D/go.2"; wait $pid
    rm -f "$D/go.1" "$D/go.2"; (sleep 0.2; touch "$D/go.1" "$D/go.2") &
    is "$("$D/serve.orig" "$D/go")" "$(cat "$D/serve.out")" "control of a prebuilt image: output as the original's"
    is 200 "$(hits "$D/serve.err" mix)" "control of a prebuilt image: all 200 hits counted"
else
    for i in 1 2 3 4 5; do skip "no FUSE here"; done
fi

# --- a second run, and what cannot be done --------------------------------------------
P=$D/prog-fno-pie
KP --remove mix "$P" >/dev/null 2>&1
KPREWRITE_REPORT=all "$P" 100 >/dev/null 2>"$D/hits"
is "|1" "$(hits "$D/hits" mix)|$(hits "$D/hits" work)" "--remove on a prebuilt image: mix is gone, work still counts"
cp "$P" "$D/before"
# mix again fits (it was baked before); return probes on every function do not
err=$(KP --probe mix --probe '*' --probe '*%return' "$P" 2>&1 >/dev/null)
like "the pool kprewrite added to this image is sized for the probes it was given" "$err" \
    "adding probes past the added pool's size: says to rewrite the original"
ok $(cmp -s "$P" "$D/before"; echo $?) "and leaves the image as it was"

# --- a program from the machine, running a real workload --------------------------------
if [ -x /usr/bin/sort ]; then
    cp /usr/bin/sort "$D/sort.orig"
    KP --probe '*' -o "$D/sort" "$D/sort.orig" >"$D/sort.report" 2>"$D/sort.err"; rc=$?
    n=$(wc -l <"$D/sort.report"); opt=$(grep -c '\[OPTIMIZED\]' "$D/sort.report")
    ok $([ $rc -le 3 ] && [ $rc -ne 1 ] && [ "$opt" -gt $((n * 9 / 10)) ]; echo $?) \
        "/usr/bin/sort: $opt of $n function entries jump-optimized (exit $rc)"
    seq 1 30000 | awk '{ print ($1 * 7919) % 10007, $1 }' >"$D/input"
    for args in "-n" "-k2,2nr" "-u -k1,1n" "-t' ' -s -k1,1"; do
        want=$(eval "\"$D/sort.orig\" $args" <"$D/input" | cksum)
        got=$(eval "\"$D/sort\" $args" <"$D/input" | cksum)
        is "$want" "$got" "/usr/bin/sort $args on 30000 lines: output identical"
    done
    KPREWRITE_REPORT=all "$D/sort" -n "$D/input" >/dev/null 2>"$D/hits"
    total=$(awk '$1 == "kprewrite:" { s += $6 } END { print s + 0 }' "$D/hits")
    ok $([ "$total" -gt 30000 ]; echo $?) "/usr/bin/sort: $total probe hits counted"
else
    skip "no /usr/bin/sort"; for i in 1 2 3 4 5; do skip "no /usr/bin/sort"; done
fi

# the dynamic loader runs before any library is loaded: refused, untouched
ld=$(readelf -lW /bin/sh 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [ -n "$ld" ] && [ -r "$ld" ]; then
    rm -f "$D/ld.out"
    err=$(KP --probe '*' -o "$D/ld.out" "$ld" 2>&1 >/dev/null); rc=$?
    is "1|kprewrite: $ld: the dynamic loader: it runs before any library, so the runtime cannot be loaded into it|no" \
       "$rc|$(printf '%s\n' "$err" | tail -n 1)|$([ -e "$D/ld.out" ] && echo yes || echo no)" \
       "the dynamic loader ($ld): refused with one line, nothing written"
else
    skip "no program interpreter found"
fi

done_testing
