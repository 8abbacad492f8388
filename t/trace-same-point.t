#!/bin/sh
# Several events on one baked point (doc/tracing.md, "Definitions"): two
# return events on one function both record each return, each with its own
# fetch-args and filter, as two kretprobes on one kernel function both fire
# -- defined at run time, baked, or one of each; through a tail call and a
# recursion; two entry events beside them; on the jump and on the int3
# path; untrace of one leaves the other recording, and trace brings it back.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir trace-same-point)
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/ts
if $CC -O2 -g -o "$P.orig" "$KP_SRCDIR/t/data/trace-same.c" 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --runtime "$RTLIB" --probe 'leaf%return' --probe 'tail%return' --probe 'rec%return' -o "$P" "$P.orig" \
    >"$D/bake.out" 2>&1
ok $? "bake the returns of leaf, tail (a tail call to leaf) and rec (recursive)"
want_out=$("$P.orig" plain 2)
# body: a trace line without COMM-TID [CPU] TIMESTAMP:, a caller's offset as OFF
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //; s/\((main|rec)\+0x[0-9a-f]+ <-/(\1+OFF <-/'; }
same() { # WANT-FILE GOT-FILE DESCRIPTION: the lines, in order
    if cmp -s "$1" "$2"; then ok 0 "$3"; else ok 1 "$3: got"; sed 's/^/# /' "$2"; fi
}

# --- two return events on each function, at run time ------------------------------
# (the kernel runs a function's kretprobes at its return newest-entered
# first: the one defined first, then the next)
E='r:a leaf x=$retval:s64; r:b leaf y=$retval:u64 a=$arg1:s64 if a < 10; r:c tail t=$retval:s64; r:d tail a=$arg1:s64;
r:e rec r=$retval:s64; r:f rec n=$arg1:s64 if n > 0'
KPREWRITE_EVENTS=$E KPREWRITE_TRACE=$D/t1.txt "$P" plain 2 >"$D/out1" 2>"$D/err1"
is "$want_out|" "$(cat "$D/out1")|$(cat "$D/err1")" "traced: the output is the original's, stderr empty"
body <"$D/t1.txt" >"$D/t1.body"
cat >"$D/t1.want" <<'W'
a: (main+OFF <- leaf) x=2
b: (main+OFF <- leaf) y=2 a=1
a: (main+OFF <- leaf) x=22
c: (main+OFF <- tail) t=22
d: (main+OFF <- tail) a=1
e: (rec+OFF <- rec) r=1
e: (rec+OFF <- rec) r=4
f: (rec+OFF <- rec) n=1
e: (main+OFF <- rec) r=14
f: (main+OFF <- rec) n=2
a: (main+OFF <- leaf) x=4
b: (main+OFF <- leaf) y=4 a=2
a: (main+OFF <- leaf) x=24
c: (main+OFF <- tail) t=24
d: (main+OFF <- tail) a=2
e: (rec+OFF <- rec) r=1
e: (rec+OFF <- rec) r=4
f: (rec+OFF <- rec) n=1
e: (main+OFF <- rec) r=14
f: (main+OFF <- rec) n=2
W
same "$D/t1.want" "$D/t1.body" \
    "two return events on each of three functions: each return recorded by both, each its own args and filter; tail call and recursion"

# --- two entry events and two return events on one point ---------------------------
KPREWRITE_EVENTS='p:p1 leaf v=%di:s64; p:p2 leaf w=$arg1:u8 if w != 11; r:r1 leaf x=$retval:s64; r:r2 leaf y=$retval:s64' \
    KPREWRITE_TRACE=$D/t2.txt "$P" plain 1 >/dev/null 2>"$D/err2"
body <"$D/t2.txt" >"$D/t2.body"
cat >"$D/t2.want" <<'W'
p2: (leaf+0x0) w=1
p1: (leaf+0x0) v=1
r1: (main+OFF <- leaf) x=2
r2: (main+OFF <- leaf) y=2
p1: (leaf+0x0) v=11
r1: (main+OFF <- leaf) x=22
r2: (main+OFF <- leaf) y=22
W
same "$D/t2.want" "$D/t2.body" "two entry events and two return events on one point: each hit recorded by all four (one filtered)"

# --- baked, and one baked + one at run time --------------------------------------
"$KPREWRITE" --runtime "$RTLIB" --probe 'r:ba leaf x=$retval:s64' --probe 'r:bb leaf a=$arg1:s64 if a > 5' \
    --probe 'tail%return' --probe 'rec%return' -o "$D/tb" "$P.orig" >"$D/bake2.out" 2>&1
ok $? "bake two return events on leaf ($(grep -v '^[0-9a-f]' "$D/bake2.out" | head -n 1))"
KPREWRITE_TRACE=$D/t3.txt "$D/tb" plain 1 >/dev/null
body <"$D/t3.txt" >"$D/t3.body"
printf '%s\n' 'ba: (main+OFF <- leaf) x=2' 'ba: (main+OFF <- leaf) x=22' 'bb: (main+OFF <- leaf) a=11' >"$D/t3.want"
same "$D/t3.want" "$D/t3.body" "baked: both return events record"
KPREWRITE_EVENTS='r:rt leaf y=$retval:u32' KPREWRITE_TRACE=$D/t4.txt "$D/tb" plain 1 >/dev/null
body <"$D/t4.txt" >"$D/t4.body"
printf '%s\n' 'ba: (main+OFF <- leaf) x=2' 'rt: (main+OFF <- leaf) y=2' 'ba: (main+OFF <- leaf) x=22' \
    'bb: (main+OFF <- leaf) a=11' 'rt: (main+OFF <- leaf) y=22' >"$D/t4.want"
same "$D/t4.want" "$D/t4.body" "baked + one from KPREWRITE_EVENTS: all three record"

# --- live: untrace one, the other records; trace it again; the int3 path ------------
B=$D/ctl
live_start "$D" env KPREWRITE_EVENTS='r:la leaf x=$retval:s64; r:lb leaf a=$arg1:s64' KPREWRITE_TRACE="$D/live.txt" "$P" wait
live_go 1
"$KPREWRITE" ctl $pid untrace la 2>"$D/ctl.err"
ok $? "untrace la ($(cat "$D/ctl.err"))"
live_go 2
"$KPREWRITE" ctl $pid trace 'r:la leaf x=$retval:s64' 2>"$D/ctl.err"
ok $? "trace la again ($(cat "$D/ctl.err"))"
live_go 3
"$KPREWRITE" ctl $pid unoptimize leaf 2>"$D/ctl.err"
ok $? "unoptimize leaf: the int3 path ($(cat "$D/ctl.err"))"
like '^[0-9a-f]{16}  r  leaf\+0x0    hits 3 ' "$("$KPREWRITE" ctl $pid list | grep ' leaf+0x0 ')" "leaf's point is on the int3 path (no [OPTIMIZED] in list)"
live_go 4
"$KPREWRITE" ctl $pid untrace lb 2>"$D/ctl.err"
ok $? "untrace lb ($(cat "$D/ctl.err"))"
live_go 5
echo exit >&3; exec 3>&-
wait $pid
is 0 $? "the program ends normally"
is "2 4 6 8 10|" "$(tr '\n' ' ' <"$D/live.out" | sed 's/ $//')|$(cat "$D/live.err")" "its output is the original's, stderr empty"
body <"$D/live.txt" >"$D/live.body"
# (la traced again is the newest: its entry runs first, so it returns last)
cat >"$D/live.want" <<'W'
la: (main+OFF <- leaf) x=2
lb: (main+OFF <- leaf) a=1
lb: (main+OFF <- leaf) a=2
lb: (main+OFF <- leaf) a=3
la: (main+OFF <- leaf) x=6
lb: (main+OFF <- leaf) a=4
la: (main+OFF <- leaf) x=8
la: (main+OFF <- leaf) x=10
W
same "$D/live.want" "$D/live.body" \
    "both, then lb alone after untrace la, both after trace la, both on the int3 path, la alone after untrace lb"
done_testing
