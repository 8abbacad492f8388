#!/bin/sh
# What adding a pool costs in the file, and that nothing is lost doing it
# (src/rewriter/addpool.c). .dynstr grows in place (the symbol version
# tables after it move into the pool) and .dynamic takes the runtime's
# DT_NEEDED and KPRW_DT_TABLE in its spare DT_NULLs, so that neither is
# copied; the new PT_LOADs start where the loaded part of the file ends,
# with no page of padding; section names, symbols and section headers move
# after them. The file grows by the table and the detours and well under a
# kilobyte more. Where that cannot be done, the old way: .dynstr copied
# when data is pinned right after it, .dynamic copied when its spare
# entries are used, the tail left in place when unknown bytes follow the
# section headers. Each way: output identical, exact counts, symbol
# versions and symbols as in the original, strip keeps it working.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf nm strip cmp od dd
D=$(tmpdir addpool-layout)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
KP() { "$KPREWRITE" --runtime "$RTLIB" "$@"; }
preload_sanitizer
hits() { awk -v s="$2+0x0" '$4 == s { print $6 }' "$1"; }
dyn() { readelf -dW "$1" | awk -v t="($2)" '$2 == t { print $3; exit }'; }   # FILE TAG: its value
size_of() { stat -c %s "$1"; }
secsize() { echo $((0x$(readelf -SW "$1" | sed 's/^ *\[ */[/' | awk -v s="$2" '$2 == s { print $6 }'))); }
dynseg() { readelf -lW "$1" | awk '$1 == "DYNAMIC" { print $2, $3 }'; }
# the dynamic symbols with their versions, as readelf names them
dynsyms() { readelf --dyn-syms -W "$1" | awk 'NR > 3 { print $5, $7, $8 }' | sort; }
same_run() { # NAME IMAGE: output identical, exact hits, as the original
    is "$("$D/prog.orig" 1000 abc)" "$("$2" 1000 abc)" "$1: output identical"
    KPREWRITE_REPORT=all "$2" 1000 abc >/dev/null 2>"$D/hits"
    is "1000 100000 1" "$(hits "$D/hits" mix) $(hits "$D/hits" classify) $(hits "$D/hits" work)" \
        "$1: exact hits (mix 1000, classify 4 threads x 25000, work 1)"
    is "$(dynsyms "$D/prog.orig")" "$(dynsyms "$2")" "$1: the dynamic symbols and their versions as in the original"
    # (_DYNAMIC follows .dynamic when that is copied)
    is "$(nm "$D/prog.orig" | grep -v ' _DYNAMIC$')" "$(nm "$2" | grep -v ' _DYNAMIC$')" \
        "$1: the symbol table as in the original"
    strip -o "$2.stripped" "$2" 2>"$D/strip.err"
    is "$("$D/prog.orig" 1000 abc)" "$("$2.stripped" 1000 abc 2>&1)" "$1: strip keeps it working"
}

$CC -O2 -fPIE -pie -pthread -o "$D/prog" "$S/prebuilt-prog.c"
ok $? "the fixture builds"
cp "$D/prog" "$D/prog.orig"
rtlen=$(( $(printf %s "$RTLIB" | wc -c) + 1 ))

# --- in place -----------------------------------------------------------------------
P=$D/inplace
KP --probe '*' -o "$P" "$D/prog" >"$D/report" 2>"$D/err"
ok $? "every function entry baked ($(tail -n 1 "$D/err"))"
is "$(dyn "$D/prog" STRTAB) $(( $(dyn "$D/prog" STRSZ | sed 's/ .*//') + rtlen ))" \
   "$(dyn "$P" STRTAB) $(dyn "$P" STRSZ | sed 's/ .*//')" ".dynstr grows where it lies, by the runtime's path"
isnt "$(dyn "$D/prog" VERSYM)" "$(dyn "$P" VERSYM)" "the symbol version table after it moved"
is "$(dynseg "$D/prog")" "$(dynseg "$P")" ".dynamic is rewritten where it lies"
like "\\[$RTLIB\\]" "$(readelf -dW "$P" | grep NEEDED | head -n 1)" "the runtime is the first DT_NEEDED"
over=$(( $(size_of "$P") - $(size_of "$D/prog") - $(secsize "$P" .kprewrite.table) - $(secsize "$P" .kprewrite.text) ))
ok $([ "$over" -ge 0 ] && [ "$over" -le 1024 ]; echo $?) \
   "the file grows by the table, the detours and $over bytes more (<= 1024: no copy of .dynstr or .dynamic, no page padding)"
same_run "in place" "$P"
# the same probes asked for again: each is the one baked already (a glob
# and the baked probe at one address are one probe), the file as it was
KP --probe '*' -o "$P.again" "$P" >"$D/report.again" 2>&1
ok $? "the same probes again: accepted ($(tail -n 1 "$D/report.again"))"
cmp -s "$P" "$P.again"
ok $? "the same probes again: the same file (no entry twice; the pool was sized for them)"

# --- data pinned after .dynstr: .dynstr is copied -------------------------------------
$CC -pie -Wl,--verbose -o "$D/ld-probe" "$S/prebuilt-prog.c" -pthread 2>/dev/null | sed -n '/^======/,/^======/p' | sed '1d;$d' |
    sed 's|^\( *\.dynstr *: *{ *\*(\.dynstr) *}\)|\1 .kp_pin : { KEEP(*(.kp_pin)) }|' >"$D/pin.ld"
grep -q kp_pin "$D/pin.ld"
ok $? "the linker's default script, with a section right after .dynstr"
cat >"$D/pin.c" <<'EOF'
__attribute__((section(".kp_pin"), used)) const char kp_pin[48] = "pinned right after .dynstr";
EOF
$CC -O2 -fPIE -pie -pthread -Wl,-T,"$D/pin.ld" -o "$D/pinned" "$S/prebuilt-prog.c" "$D/pin.c"
ok $? "the pinned fixture builds"
after=$(readelf -SW "$D/pinned" | sed 's/^ *\[ */[/' | awk 'p { print $2; exit } $2 == ".dynstr" { p = 1 }')
is ".kp_pin" "$after" "the fixture has .kp_pin right after .dynstr"
cp "$D/pinned" "$D/prog.orig"
P=$D/pinned.probed
KP --probe '*' -o "$P" "$D/pinned" >"$D/report" 2>"$D/err"
ok $? "pinned: every function entry baked ($(tail -n 1 "$D/err"))"
isnt "$(dyn "$D/pinned" STRTAB)" "$(dyn "$P" STRTAB)" "pinned: .dynstr is a copy in the pool"
is "$(readelf -x .kp_pin "$D/pinned")" "$(readelf -x .kp_pin "$P")" "pinned: the pinned data as it was, where it was"
same_run "pinned" "$P"

# --- no spare DT_NULL: .dynamic is copied ---------------------------------------------
cp "$D/prog" "$D/full"
set -- $(readelf -lW "$D/prog" | awk '$1 == "DYNAMIC" { print $2, $5 }')
dynoff=$(($1)); dynsz=$(($2))
n=$(readelf -dW "$D/prog" | grep -c '^ *0x')   # entries up to the first DT_NULL, which stays
i=$n
while [ $((i * 16)) -lt "$dynsz" ]; do   # the spare DT_NULLs become DT_DEBUG 0 (ld.so fills the last)
    printf '\025' | LD_PRELOAD= dd of="$D/full" bs=1 seek=$((dynoff + (i - 1) * 16)) conv=notrunc 2>/dev/null
    i=$((i + 1))
done
printf '\000' | LD_PRELOAD= dd of="$D/full" bs=1 seek=$((dynoff + (i - 1) * 16)) conv=notrunc 2>/dev/null   # the last one ends it
is "$((dynsz / 16))" "$(readelf -dW "$D/full" | grep -c '^ *0x')" ".dynamic filled: no spare DT_NULL"
cp "$D/full" "$D/prog.orig"
P=$D/full.probed
KP --probe '*' -o "$P" "$D/full" >"$D/report" 2>"$D/err"
ok $? "full .dynamic: every function entry baked ($(tail -n 1 "$D/err"))"
isnt "$(dynseg "$D/full")" "$(dynseg "$P")" "full .dynamic: PT_DYNAMIC names a copy in the pool"
same_run "full .dynamic" "$P"

# --- bytes after the section headers: the tail stays -----------------------------------
cp "$D/prog" "$D/appended"
printf 'kprewrite-appended-bytes' >>"$D/appended"
cp "$D/appended" "$D/prog.orig"
P=$D/appended.probed
KP --probe '*' -o "$P" "$D/appended" >"$D/report" 2>"$D/err"
ok $? "appended bytes: every function entry baked ($(tail -n 1 "$D/err"))"
len=$(size_of "$D/appended")
cmp -s -n "$len" "$D/appended" "$P" 2>/dev/null
is 1 $? "appended bytes: the file is changed (the pool added)"
is "kprewrite-appended-bytes" "$(LD_PRELOAD= dd if="$P" bs=1 skip=$((len - 24)) count=24 2>/dev/null)" \
   "appended bytes: still there, at their offset"
is "$("$D/prog.orig" 1000 abc)" "$("$P" 1000 abc)" "appended bytes: output identical"
done_testing
