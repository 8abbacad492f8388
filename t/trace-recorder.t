#!/bin/sh
# The generated event recorders (src/arch/x86/recorder.c) on a real
# program: for every kind of argument they compile (registers by size, u64
# dereferences, strings behind pointers and at addresses, faults) the lines
# are the C recorder's (KPREWRITE_RECORDER=c) and the kernel's; threads;
# a small ring that wraps and fills (their drops handed to C, counted);
# the events file says which definitions compiled. Byte-for-byte records
# over every case: t/recorder-test.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir trace-recorder)
use_runtime
preload_sanitizer
P=$D/tp
if $CC -O2 -g -o "$P.orig" "$KP_SRCDIR/t/data/trace-prog.c" -lpthread 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
cp "$P.orig" "$P"
"$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe work --probe many "$P" >"$D/bake.out" 2>&1
ok $? "bake work and many into the prebuilt fixture"
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //'; }

E='p:tr/w work a=%di b=%di:u8 neg=%cx:s16 c=%cx:u32 s=+0(%si):string id=+0(%dx):s64 name=+0(+8(%dx)):string'
E="$E;p:tr/m many a1=%di g=@trace_global:u64 it=@trace_item+8:x64 nm=+0(@trace_item+8):string tn=@trace_name:string"
for r in compiled c; do
    KPREWRITE_RECORDER=$r KPREWRITE_EVENTS=$E KPREWRITE_TRACE=$D/$r.txt "$P" plain 5 >"$D/$r.out" 2>"$D/$r.err"
    is "$("$P.orig" plain 5)" "$(cat "$D/$r.out")" "recorder $r: the output is the original's"
    is "" "$(cat "$D/$r.err")" "... nothing on stderr"
    body <"$D/$r.txt" | sed -E 's/ it=0x[0-9a-f]+/ it=PTR/' >"$D/$r.body"
done
cat >"$D/want" <<'W'
w: (work+0x0) a=0x0 b=0 neg=0 c=0 s="even" id=7 name="seven"
w: (work+0x0) a=0x1 b=1 neg=3 c=3 s="odd" id=7 name="seven"
w: (work+0x0) a=0x2 b=2 neg=6 c=6 s="even" id=(fault) name=(fault)
w: (work+0x0) a=0x3 b=3 neg=9 c=9 s="odd" id=7 name="seven"
w: (work+0x0) a=0x4 b=4 neg=12 c=12 s="even" id=7 name="seven"
m: (many+0x0) a1=0x1 g=4660 it=PTR nm="seven" tn="named"
W
if cmp -s "$D/want" "$D/compiled.body"; then ok 0 "compiled: registers by size, u64 dereferences, strings behind pointers and at addresses, faults: the kernel's lines"
else ok 1 "compiled: the kernel's lines; got:"; sed 's/^/# /' "$D/compiled.body"; fi
if cmp -s "$D/c.body" "$D/compiled.body"; then ok 0 "... the C recorder's lines"
else ok 1 "... the C recorder's lines; it wrote:"; sed 's/^/# /' "$D/c.body"; fi
# (a PIE: the two runs' addresses differ above the page offset)
low() { sed -n 's/.* it=0x[0-9a-f]*\([0-9a-f]\{3\}\) .*/\1/p' "$1"; }
lc=$(low "$D/c.txt"); lk=$(low "$D/compiled.txt")
ok $([ -n "$lc" ] && [ "$lc" = "$lk" ]; echo $?) "... the same pointer fetched (its page offset: $lc, $lk)"

# threads: each its own ring
KPREWRITE_EVENTS='p work a=%di s=+0(%si):string' KPREWRITE_TRACE=$D/thr.txt "$P" threads 4 1000 >/dev/null
is "4 4000 4000" "$(sed -E 's/^ *[^ ]+-([0-9]+) .*/\1/' "$D/thr.txt" | sort -u | wc -l | tr -d ' ') $(grep -c 's="thr"' "$D/thr.txt") $(sed -E 's/^ *[^ ]+-([0-9]+) .* a=(0x[0-9a-f]+) .*/\1 \2/' "$D/thr.txt" | sort -u | wc -l | tr -d ' ')" \
    "4 threads x 1000 calls, compiled: 4000 events from 4 threads, each call once"

# live: the events file; a 16 KiB ring that wraps and fills
live_start "$D" env KPREWRITE_TRACE_BUFFER=16 KPREWRITE_EVENTS='p:tr/w work a=%di s=+0(%si):string id=+0(%dx):s64;p:tr/f work a=%di if a == 1' "$P" wait 2000
"$KPREWRITE" ctl $pid events >"$D/events"
like '^p:tr/w work\+0x0 a=%di s=\+0\(%si\):string id=\+0\(%dx\):s64  # dropped 0 filtered 0 compiled$' "$(grep tr/w "$D/events")" \
    "the events file: the definition compiled"
like '^p:tr/f work\+0x0 a=%di if a == 1  # dropped 0 filtered 0$' "$(grep tr/f "$D/events")" "... one with a filter not (the C recorder filters)"
echo go >&3
wait_lines "$D/live.out" 1
"$KPREWRITE" ctl $pid events >"$D/events1"
"$KPREWRITE" ctl $pid trace --format=text >"$D/live.txt" 2>&1 &
fp=$!
i=0; while [ "$(grep -c ': w: ' "$D/live.txt")" -lt 1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5; kill -INT $fp; wait $fp
wl=$(grep -c ': w: ' "$D/live.txt"); wd=$(sed -n 's/^p:tr\/w .* # dropped \([0-9]*\) .*/\1/p' "$D/events1")
fl=$(grep -c ': f: ' "$D/live.txt"); fd=$(sed -n 's/^p:tr\/f .* # dropped \([0-9]*\) .*/\1/p' "$D/events1")
is "2000 1" "$((wl + wd)) $((fl + fd))" "a 16 KiB ring: the lines read and the drops add up to the 2000 calls ($wl + $wd), the filtered event's to 1"
ok $([ "$wd" -gt 0 ] && [ "$wl" -gt 150 ]; echo $?) "it wrapped and filled: $wl read, $wd dropped"
is "" "$(grep ': w: ' "$D/live.txt" | grep -v -E 's="(even|odd)" id=(7|\(fault\))$' | head -n 3)" "every line whole"
echo exit >&3; exec 3>&-
wait $pid
is 0 $? "the program ends normally"
is "$(printf 'go\nexit\n' | "$P.orig" wait 2000)" "$(cat "$D/live.out")" "its output is the original's"
done_testing
