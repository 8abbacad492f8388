#!/bin/sh
# make bench (after probe-bench.sh): an event's cost in a real workload,
# not a loop. Debian's lua5.4, every function entry probed (--probe '*'),
# runs bench/trace-workload.lua; rounds interleaved, CPU time (user + sys,
# the process and its threads: less disturbed by other load than wall
# time) per variant:
#   original      the unprobed lua5.4
#   count-only    every entry probed, counting hits
#   ring          an event on one point hit once: the thread's ring made
#                 (its pages written once when made, see doc/tracing.md)
#   event         an event with 4 fetch-args on every point, recorded into
#                 the ring (large enough: none dropped; no reader) by its
#                 generated recorder (src/arch/x86/recorder.c)
#   event_c       the same by the C recorder (KPREWRITE_RECORDER=c)
#   written       the same event written by KPREWRITE_TRACE to a file
#                 (default ring: the writer formats, full rings drop)
# and prints (variant - original) / hits, the event's without the ring's
# setup: wall time (Time::HiRes; CPU times come in 10 ms ticks), medians.
# Then the same from the script's own loops (their CPU time by os.clock,
# the process's start-up and the ring's making left out; the hits of the
# loops alone: a run's hits less those of a run with no iteration): the
# figure least moved by the machine's other load.
# The count-only figure needs many hits (TW_N_COUNT iterations), the
# events few enough that one ring holds them all (TW_N iterations).
# Usage: trace-workload.sh SRCDIR BUILDDIR. TW_ROUNDS (7).
set -e
src=$1; build=$2
ROUNDS=${TW_ROUNDS:-7}; N=${TW_N:-2000}; NC=${TW_N_COUNT:-50000}
lua=/usr/bin/lua5.4
[ -x "$lua" ] || { echo "trace-workload: $lua not found (scripts/install-deps.sh installs lua5.4)"; exit 0; }
w=$build/bench-work/trace-workload; rm -rf "$w"; mkdir -p "$w"
cp "$lua" "$w/lua.orig"
"$build/kprewrite" --runtime "$build/.libs/libkprewrite-rt.so.0" --probe '*' -o "$w/lua.probed" "$w/lua.orig" >/dev/null 2>&1
cp "$src/bench/trace-workload.lua" "$w/s.lua"
DEF='p * a=%di b=%si:s32 c=%dx:u16 ret=$stack0'
ONE='p luaL_newstate a=%di'
RING=16384   # KiB: N=2000 makes ~10 MB of records
# V=NAME run CMD...: the command's wall time in microseconds, appended to $w/NAME
run() { perl -MTime::HiRes=time -e '$f = shift; open(my $o, ">>", $f) or die; $t = time; system(@ARGV) == 0 or exit 1;
        printf $o "%d\n", (time - $t) * 1e6' "$w/$V" "$@" >/dev/null 2>&1; }
hits_of() { awk '$5 == "hits" { h += $6 } $9 == "dropped" { d += $10 } END { print h + 0, d + 0 }'; }
# V=NAME loops CMD...: the script's loops' CPU time (its loops_us line), appended to $w/NAME.in
loops() { "$@" 2>&1 >/dev/null | awk '$1 == "loops_us" { print $2 }' >>"$w/$V.in"; }
set -- $(KPREWRITE_REPORT=all "$w/lua.probed" "$w/s.lua" "$NC" 2>&1 >/dev/null | hits_of); hc=$1
set -- $(KPREWRITE_REPORT=all KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF "$w/lua.probed" "$w/s.lua" "$N" 2>&1 >/dev/null | hits_of)
he=$1 drop=$2
set -- $(KPREWRITE_REPORT=all KPREWRITE_EVENTS=$DEF KPREWRITE_TRACE=$w/t.txt "$w/lua.probed" "$w/s.lua" "$N" 2>&1 >/dev/null | hits_of)
wdrop=$2; wlines=$(wc -l <"$w/t.txt")
set -- $(KPREWRITE_REPORT=all "$w/lua.probed" "$w/s.lua" 0 2>&1 >/dev/null | hits_of); hc0=$1
set -- $(KPREWRITE_REPORT=all KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF "$w/lua.probed" "$w/s.lua" 0 2>&1 >/dev/null | hits_of)
he0=$1
for r in $(seq 1 "$ROUNDS"); do
    V=original run "$w/lua.orig" "$w/s.lua" "$NC"
    V=count run "$w/lua.probed" "$w/s.lua" "$NC"
    V=original_e run "$w/lua.orig" "$w/s.lua" "$N"
    V=ring KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$ONE run "$w/lua.probed" "$w/s.lua" "$N"
    V=event KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF run "$w/lua.probed" "$w/s.lua" "$N"
    V=event_c KPREWRITE_RECORDER=c KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF run "$w/lua.probed" "$w/s.lua" "$N"
    rm -f "$w/t.txt"
    V=written KPREWRITE_EVENTS=$DEF KPREWRITE_TRACE=$w/t.txt run "$w/lua.probed" "$w/s.lua" "$N"
    V=original loops "$w/lua.orig" "$w/s.lua" "$NC"
    V=count loops "$w/lua.probed" "$w/s.lua" "$NC"
    V=original_e loops "$w/lua.orig" "$w/s.lua" "$N"
    V=event KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF loops "$w/lua.probed" "$w/s.lua" "$N"
    V=event_c KPREWRITE_RECORDER=c KPREWRITE_TRACE_BUFFER=$RING KPREWRITE_EVENTS=$DEF loops "$w/lua.probed" "$w/s.lua" "$N"
done
med() { sort -n "$w/$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
o=$(med original); c=$(med count); oe=$(med original_e); g=$(med ring); e=$(med event); ec=$(med event_c); t=$(med written)
per() { awk -v a="$1" -v b="$2" -v h="$3" 'BEGIN { printf "%.1f", h ? (a - b) * 1000 / h : 0 }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1000 }'; }
printf '\nreal workload: Debian lua5.4, every function entry probed, bench/trace-workload.lua (%s rounds interleaved, median wall ms)\n' "$ROUNDS"
printf '%-58s %9s %9s %9s %9s\n' variant hits original probed "ns a hit"
printf '%-58s %9s %9s %9s %9s\n' "count-only" "$hc" "$(ms "$o")" "$(ms "$c")" "$(per "$c" "$o" "$hc")"
printf '%-58s %9s %9s %9s %9s\n' "one event hit once: the ring made ($RING KiB)" 1 "$(ms "$oe")" "$(ms "$g")" "-"
printf '%-58s %9s %9s %9s %9s\n' "event, 4 args, every point, recorded ($drop dropped)" "$he" "$(ms "$oe")" "$(ms "$e")" \
    "$(per "$e" "$g" "$he")"
printf '%-58s %9s %9s %9s %9s\n' "the same by the C recorder (KPREWRITE_RECORDER=c)" "$he" "$(ms "$oe")" "$(ms "$ec")" \
    "$(per "$ec" "$g" "$he")"
printf '%-58s %9s %9s %9s %9s\n' "the same written (KPREWRITE_TRACE: $wlines lines, $wdrop dropped)" "$he" "$(ms "$oe")" "$(ms "$t")" \
    "$(per "$t" "$oe" "$he")"
echo "(the event row: (event - ring made) / hits, a recorded event's cost beside count-only's; the written row: all of it, formatting and drops included)"
o=$(med original.in); c=$(med count.in); oe=$(med original_e.in); e=$(med event.in); ec=$(med event_c.in)
printf '\nthe same, from the script'"'"'s loops alone (their CPU time, os.clock; median us)\n'
printf '%-58s %9s %9s %9s %9s\n' variant hits original probed "ns a hit"
printf '%-58s %9s %9s %9s %9s\n' "count-only" "$((hc - hc0))" "$o" "$c" "$(per "$c" "$o" "$((hc - hc0))")"
printf '%-58s %9s %9s %9s %9s\n' "event, 4 args, every point, recorded" "$((he - he0))" "$oe" "$e" "$(per "$e" "$oe" "$((he - he0))")"
printf '%-58s %9s %9s %9s %9s\n' "the same by the C recorder (KPREWRITE_RECORDER=c)" "$((he - he0))" "$oe" "$ec" "$(per "$ec" "$oe" "$((he - he0))")"
