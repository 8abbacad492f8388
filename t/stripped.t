#!/bin/sh
# Stripped binaries: functions come from .eh_frame FDEs (fde@0xADDR), and
# verdicts are the same as with symbols.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" strip nm
D=$(tmpdir stripped)
$CC -O2 -o "$D/full" "$KP_SRCDIR/t/data/switch.c"
strip -s -o "$D/stripped" "$D/full"
a=$(addr_of "$D/full" classify | sed 's/^0*//')
full=$(check1 "$D/full" classify | sed 's/^k  classify+0x0  //')
is "k  fde@0x$a+0x0  $full" "$(check1 "$D/stripped" "fde@0x$a")" "fde@ADDR names a stripped function; same verdict"
is "k  fde@0x$a+0x0  $full" "$(check1 "$D/stripped" "0x$a")" "0xADDR in a stripped binary"
n_full=$("$KPREWRITE" --check --probe '*' "$D/full" | grep -c OPTIMIZED)
n_str=$("$KPREWRITE" --check --probe '*' "$D/stripped" | grep -c OPTIMIZED)
ok $([ "$n_str" -ge 3 ]; echo $?) "glob '*' finds FDE functions in a stripped binary ($n_str optimized)"
# System.map supplies names for a binary without symbols
nm "$D/full" >"$D/System.map"
is "k  classify+0x0  $full" "$(check1 "$D/stripped" classify --system-map "$D/System.map")" \
   "--system-map gives names back"
# At run time: a prebuilt stripped program names its points as kprewrite
# did (the table stores no name for them: the runtime spells fde@ADDR from
# the address), mid-function points included, with exact counts.
preload_sanitizer
cp "$D/stripped" "$D/probed"
mid=$(( $("$KPREWRITE" --check --probe "fde@0x$a" "$D/stripped" | sed -n 's/.*dcr \([0-9]*\):.*/\1/p') ))
"$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe '*' --probe "fde@0x$a+$mid" \
    "$D/probed" >/dev/null 2>"$D/err"
is "$("$D/stripped")" "$("$D/probed")" "a stripped program with every function entry probed: output identical"
KPREWRITE_REPORT=all "$D/probed" 2>"$D/hits" >/dev/null
is "11 11" "$(awk -v s="fde@0x$a+0x0" -v m="$(printf 'fde@0x%s+0x%x' "$a" "$mid")" \
              '$4 == s { x = $6 } $4 == m { y = $6 } END { print x, y }' "$D/hits")" \
   "the runtime names fde@0x$a+0x0 and +0x$(printf %x "$mid") as kprewrite does; classify ran 11 times"
strings -a "$D/probed" | grep -q "^fde@"; ok $([ $? -ne 0 ]; echo $?) "the image stores no fde@ name"
done_testing
