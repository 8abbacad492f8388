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
done_testing
