#!/bin/sh
# A function built for IBT starts with endbr64; kprewrite bakes SYM+0 past
# it, at SYM+0x4, as the kernel moves a kprobe at SYM+0 there
# (arch_adjust_kprobe_addr). So at run time SYM and SYM+0 name that point
# too (doc/tracing.md, "Definitions"): in KPREWRITE_EVENTS, in the control
# file's trace, untrace and disable; an event is named p_SYM_0 as the
# kernel names it, and SYM+0x4 written out names the point as well.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir trace-endbr)
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/ti
if $CC -O2 -g -fcf-protection=full -o "$P.orig" "$KP_SRCDIR/t/data/trace-prog.c" -lpthread 2>"$D/cc.err"; then
    ok 0 "the fixture builds with -fcf-protection=full"
else
    ok 1 "the fixture builds with -fcf-protection=full ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --runtime "$RTLIB" --probe work --probe 'outer%return' -o "$P" "$P.orig" >"$D/bake.out" 2>&1
ok $? "bake work and outer's return"
like '^[0-9a-f]{16}  k  work\+0x4  .*\[after endbr64\]' "$(grep ' work+' "$D/bake.out")" "work starts with endbr64: its point is work+0x4"
like '^[0-9a-f]{16}  r  outer\+0x4  .*\[after endbr64\]' "$(grep ' outer+' "$D/bake.out")" "and outer's return point is outer+0x4"
want_out=$("$P.orig" plain 2)
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //; s/\(main\+0x[0-9a-f]+ <-/(main+OFF <-/'; }

KPREWRITE_EVENTS='p work+0 a=%di; p:x work+0x0 s=+0(%si):string; p:y work a=$arg1:u8; p:z work+4 d=$arg4:u32;
r outer+0 ret=$retval:s64; p:o outer+0; r:ro outer' KPREWRITE_TRACE=$D/t1.txt "$P" plain 2 >"$D/out1" 2>"$D/err1"
is "$want_out|" "$(cat "$D/out1")|$(cat "$D/err1")" "SYM+0, SYM+0x0, SYM and SYM+4 each accepted (stderr empty); the output is the original's"
body <"$D/t1.txt" >"$D/t1.body"
cat >"$D/t1.want" <<'W'
o: (outer+0x4)
z: (work+0x4) d=0
y: (work+0x4) a=0
x: (work+0x4) s="even"
p_work_0: (work+0x4) a=0x0
z: (work+0x4) d=3
y: (work+0x4) a=1
x: (work+0x4) s="odd"
p_work_0: (work+0x4) a=0x1
r_outer_0: (main+OFF <- outer) ret=25
ro: (main+OFF <- outer)
W
if cmp -s "$D/t1.want" "$D/t1.body"; then ok 0 "each records at work+0x4; default names p_work_0 and r_outer_0, as the kernel's"
else ok 1 "each records at work+0x4: got"; sed 's/^/# /' "$D/t1.body"; fi

# --- baked: SYM+0 with $argN (stored as SYM+0x4: the entry past endbr64) -----------
"$KPREWRITE" --runtime "$RTLIB" --probe 'p:q work+0 a=$arg1 s=$arg2:string' -o "$D/tq" "$P.orig" >"$D/bake2.out" 2>&1
ok $? "bake 'p:q work+0 a=\$arg1 ...' ($(grep -v '^[0-9a-f]' "$D/bake2.out" | head -n 1))"
KPREWRITE_TRACE=$D/t2.txt "$D/tq" plain 2 >/dev/null
is 'q: (work+0x4) a=0x0 s="even"|q: (work+0x4) a=0x1 s="odd"' "$(body <"$D/t2.txt" | tr '\n' '|' | sed 's/|$//')" \
    "its lines: \$argN at the entry past endbr64"
# without endbr64, SYM+4 is no entry: $argN there is refused, with its column
if $CC -O2 -g -o "$D/tn.orig" "$KP_SRCDIR/t/data/trace-prog.c" -lpthread 2>"$D/cc2.err"; then
    "$KPREWRITE" --runtime "$RTLIB" --probe 'p:q outer+4 a=$arg1' -o "$D/tn" "$D/tn.orig" >"$D/bake3.out" 2>&1
    is "1|kprewrite: --probe 'p:q outer+4 a=\$arg1': col 15: \$argN is only available at a function's entry|no" \
        "$?|$(head -n 1 "$D/bake3.out")|$([ -e "$D/tn" ] && echo yes || echo no)" \
        "without endbr64: \$argN at SYM+4 refused at bake time, with its column, nothing written"
    "$KPREWRITE" --runtime "$RTLIB" --probe 'outer+4' -o "$D/tn" "$D/tn.orig" >/dev/null 2>&1
    KPREWRITE_EVENTS='p outer+4 a=$arg1' "$D/tn" plain 1 >/dev/null 2>"$D/err3"
    is "kprewrite: KPREWRITE_EVENTS: p outer+4 a=\$arg1: column 13: \$argN is only available at a function's entry (no point there is one)" \
        "$(cat "$D/err3")" "... and at run time"
    # a return probe at SYM+4 likewise: the entry past endbr64 only, as the
    # kernel's arch_kprobe_on_func_entry allows
    "$KPREWRITE" --runtime "$RTLIB" --probe 'r:rq outer+4 v=$retval' -o "$D/tr" "$D/tn.orig" >"$D/bake4.out" 2>&1
    is "1|kprewrite: --probe 'r:rq outer+4 v=\$retval': col 6: a return probe is on a function's entry: SYM+4 is that only past an endbr64|no" \
        "$?|$(grep -v '^[0-9a-f]' "$D/bake4.out" | head -n 1)|$([ -e "$D/tr" ] && echo yes || echo no)" \
        "without endbr64: a return probe at SYM+4 refused at bake time, nothing written"
else
    ok 1 "the fixture builds without -fcf-protection ($(head -n 1 "$D/cc2.err"))"
fi
# with endbr64: r SYM+4 is the function's return probe, baked and at run time
"$KPREWRITE" --runtime "$RTLIB" --probe 'r:rq outer+4 v=$retval:s64' -o "$D/tr" "$P.orig" >"$D/bake5.out" 2>&1
ok $? "bake 'r:rq outer+4 v=\$retval' on outer, which starts with endbr64 ($(grep -v '^[0-9a-f]' "$D/bake5.out" | head -n 1))"
KPREWRITE_EVENTS='r outer+4 w=$retval:s64' KPREWRITE_TRACE=$D/t5.txt "$D/tr" plain 2 >"$D/out5" 2>"$D/err5"
is "$want_out||r_outer_4: (main+OFF <- outer) w=25|rq: (main+OFF <- outer) v=25" \
    "$(cat "$D/out5")|$(cat "$D/err5")|$(body <"$D/t5.txt" | LC_ALL=C sort | tr '\n' '|' | sed 's/|$//')" \
    "r outer+4: baked and from KPREWRITE_EVENTS both record outer's return (named r_outer_4 as the kernel would)"
KPREWRITE_EVENTS='r outer+5 w=$retval' "$D/tr" plain 1 >/dev/null 2>"$D/err6"
like "column 3: a return probe is on a function's entry \(SYM, SYM\+0, or SYM\+4 past an endbr64\)" "$(cat "$D/err6")" \
    "r outer+5: refused with its column"

# --- the control file: trace, disable, enable, untrace SYM+0 -------------------------
B=$D/ctl
live_start "$D" env KPREWRITE_TRACE="$D/live.txt" "$P" wait 1
"$KPREWRITE" ctl $pid trace 'p work+0 a=%di' 2>"$D/ctl.err"
ok $? "ctl trace 'p work+0 ...' ($(cat "$D/ctl.err"))"
like '^p:kprobes/p_work_0 work\+0x4 a=%di ' "$("$KPREWRITE" ctl $pid events)" "the events file lists p_work_0 at work+0x4"
live_go 1
"$KPREWRITE" ctl $pid disable work+0 2>"$D/ctl.err"
ok $? "ctl disable work+0 ($(cat "$D/ctl.err"))"
like ' work\+0x4  \[DISABLED\]' "$("$KPREWRITE" ctl $pid list | grep ' work+0x4 ')" "list shows work+0x4 disabled"
live_go 2
"$KPREWRITE" ctl $pid enable work+0 2>"$D/ctl.err"
ok $? "ctl enable work+0 ($(cat "$D/ctl.err"))"
live_go 3
"$KPREWRITE" ctl $pid untrace work+0 2>"$D/ctl.err"
ok $? "ctl untrace work+0 ($(cat "$D/ctl.err"))"
live_go 4
echo exit >&3; exec 3>&-
wait $pid
is 0 $? "the program ends normally"
is "$(printf 'go\ngo\ngo\ngo\nexit\n' | "$P.orig" wait 1)|" "$(cat "$D/live.out")|$(cat "$D/live.err")" "its output is the original's, stderr empty"
is "p_work_0: (work+0x4) a=0x0|p_work_0: (work+0x4) a=0x0" "$(body <"$D/live.txt" | tr '\n' '|' | sed 's/|$//')" \
    "recorded after trace, not while disabled, again after enable, not after untrace"
done_testing
