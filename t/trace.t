#!/bin/sh
# Tracing without C (doc/tracing.md): events defined in kprobe_events'
# syntax (KPREWRITE_EVENTS, the control file's `trace`) on baked probe
# points; each fetch form and type, filters, faults, return values and
# entry arguments at the return, threads, fork, drops, the text, JSON and
# folded outputs, live trace/untrace/hist and trace_pipe, bad definitions
# (definitions baked by --probe: t/trace-baked.t).
. "$KP_SRCDIR/t/lib.sh"
need "$CC" perl
D=$(tmpdir trace)
use_runtime
preload_sanitizer
P=$D/tp
if $CC -O2 -g -o "$P.orig" "$KP_SRCDIR/t/data/trace-prog.c" -lpthread 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
cp "$P.orig" "$P"
"$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe work --probe 'work%return' --probe outer \
    --probe 'outer%return' --probe many --probe thread_main "$P" >"$D/bake.out" 2>&1
ok $? "bake work, outer (entries and returns) and many into the prebuilt fixture"
want_out=$("$P.orig" plain 5)

# body: a trace line without COMM-TID [CPU] TIMESTAMP:
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //'; }

# --- every fetch form and type, a fault, a filter, a return event -----------------
E1='p:tt/work work a=%di s=+0(%si):string id=+0(%dx):s64 name=+0(+8(%dx)):string b=+16(%dx):u8[4] neg=+20(%dx):s16 d=$arg4:u32 x=+16(%dx):x16 c=+0(+8(%dx)):char'
E2='p:tt/many many a7=$arg7 a8=$arg8:s8 st=$stack1 g=@trace_global:s32 nm=+0(@trace_item+8):string imm=\42 comm=$comm fn=%ip:symbol'
E3='r:tt/ret work ret=$retval:s64 a1=$arg1:u64 if ret > 12'
KPREWRITE_EVENTS="$E1;$E2;$E3" KPREWRITE_TRACE=$D/t1.txt "$P" plain 5 >"$D/out1" 2>"$D/err1"
is "$want_out" "$(cat "$D/out1")" "traced, the output is the original's"
is "" "$(cat "$D/err1")" "and nothing on stderr"
body <"$D/t1.txt" >"$D/t1.body"
cat >"$D/t1.want" <<'W'
work: (work+0x0) a=0x0 s="even" id=7 name="seven" b={1,2,250,4} neg=-5 d=0 x=0x201 c='s'
work: (work+0x0) a=0x1 s="odd" id=7 name="seven" b={1,2,250,4} neg=-5 d=3 x=0x201 c='s'
ret: (outer+OFF <- work) ret=14 a1=1
work: (work+0x0) a=0x2 s="even" id=(fault) name=(fault) b=(fault) neg=(fault) d=6 x=(fault) c=(fault)
ret: (outer+OFF <- work) ret=22 a1=3
work: (work+0x0) a=0x3 s="odd" id=7 name="seven" b={1,2,250,4} neg=-5 d=9 x=0x201 c='s'
ret: (outer+OFF <- work) ret=27 a1=4
work: (work+0x0) a=0x4 s="even" id=7 name="seven" b={1,2,250,4} neg=-5 d=12 x=0x201 c='s'
many: (many+0x0) a7=0x7 a8=8 st=0x7 g=4660 nm="seven" imm=0x2a comm="tp" fn=many+0x1
W
# (a return line follows its call's entry line: sorted by time they interleave;
# compare as sets of lines, then check the order of the entries alone)
sed -E 's/outer\+0x[0-9a-f]+ <-/outer+OFF <-/' "$D/t1.body" | sort >"$D/t1.got.sorted"
sort "$D/t1.want" >"$D/t1.want.sorted"
if cmp -s "$D/t1.got.sorted" "$D/t1.want.sorted"; then ok 0 "each fetch form and type, a fault, a filter, a return event: the lines the kernel would print"
else ok 1 "each fetch form and type ...: got"; sed 's/^/# /' "$D/t1.body"; fi
is "0x0 0x1 0x2 0x3 0x4" "$(grep '^work:' "$D/t1.body" | sed -E 's/.* a=(0x[0-9a-f]+) .*/\1/' | tr '\n' ' ' | sed 's/ $//')" \
    "entry events in the order of the calls"
like '^ +tp-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: work: \(work\+0x0\) ' "$(head -n 1 "$D/t1.txt")" "ftrace's line: COMM-TID [CPU] SECS.USECS: EVENT: (SYM+OFF)"

# --- JSON (Chrome trace events) and folded stacks ---------------------------------
KPREWRITE_EVENTS='r work ret=$retval:s64;r outer' KPREWRITE_TRACE=$D/t.json KPREWRITE_TRACE_FORMAT=json "$P" plain 5 >/dev/null
perl -MJSON::PP -e '
    local $/; open my $f, "<", $ARGV[0] or die; my $ev = decode_json(<$f>);
    my @x = grep { $_->{ph} eq "X" } @$ev;
    my @w = grep { $_->{name} eq "work" } @x; my @o = grep { $_->{name} eq "outer" } @x;
    my ($o) = @o; my $in = grep { $_->{ts} >= $o->{ts} && $_->{ts} + $_->{dur} <= $o->{ts} + $o->{dur} + 0.001 } @w;
    my @m = grep { $_->{ph} eq "M" && $_->{name} eq "thread_name" } @$ev;
    printf "%d %d %d %d %s\n", scalar @w, scalar @o, $in, scalar @m, join(",", map { $_->{args}{ret} } @w);
' "$D/t.json" >"$D/json.sum" 2>"$D/json.err"
is "5 1 5 1 11,14,12,22,27" "$(cat "$D/json.sum" "$D/json.err")" \
    "JSON parses: 5 work and 1 outer complete events, every work inside outer, a thread name, the return values"
KPREWRITE_EVENTS='r work;r outer' KPREWRITE_TRACE=$D/t.folded KPREWRITE_TRACE_FORMAT=folded "$P" plain 5 >/dev/null
like '^outer [0-9]+
outer;work [0-9]+$' "$(cat "$D/t.folded")" "folded stacks: outer, and work called from it"

# --- threads and fork ---------------------------------------------------------
KPREWRITE_EVENTS='p work a=%di' KPREWRITE_TRACE=$D/thr.txt "$P" threads 4 1000 >/dev/null
is "4 4000" "$(body <"$D/thr.txt" | wc -l | tr -d ' ' | sed 's/^/x/;s/x//' | { read n; echo "$(sed -E 's/^ *[^ ]+-([0-9]+) .*/\1/' "$D/thr.txt" | sort -u | grep -v "^$$\$" | wc -l | tr -d ' ') $n"; })" \
    "4 threads x 1000 calls: 4000 events, from 4 threads"
is "0 4000" "$(sed -E 's/^ *[^ ]+-([0-9]+) .* a=(0x[0-9a-f]+)$/\1 \2/' "$D/thr.txt" | sort | uniq -d | wc -l | tr -d ' ') $(sed -E 's/^ *[^ ]+-([0-9]+) .* a=(0x[0-9a-f]+)$/\1 \2/' "$D/thr.txt" | sort -u | wc -l | tr -d ' ')" \
    "each thread's 1000 calls once each: none lost, none twice"
rm -f "$D/fork.txt"*
KPREWRITE_EVENTS='p work a=%di' KPREWRITE_TRACE=$D/fork.txt "$P" fork 3 >/dev/null
pids=$(sed -E 's/^ *[^ ]+-([0-9]+) .*/\1/' "$D/fork.txt" | sort | uniq -c | awk '{ print $1 }' | sort -n | tr '\n' ' ')
is "3 4 " "$pids" "fork: the parent's 3 events and the child's 4, each once, in one text file"
KPREWRITE_EVENTS='r work' KPREWRITE_TRACE=$D/fork.json KPREWRITE_TRACE_FORMAT=json "$P" fork 3 >/dev/null
n=$(ls "$D"/fork.json.* 2>/dev/null | wc -l)
is "1 3 4" "$n $(perl -MJSON::PP -e 'local $/; for (@ARGV) { open my $f, "<", $_; my $e = decode_json(<$f>); print scalar(grep { $_->{ph} eq "X" } @$e), " " }' "$D/fork.json" "$D"/fork.json.* | sed 's/ $//')" \
    "fork, JSON: the child writes its own document (FILE.PID), both parse, 3 and 4 calls"

# --- KPREWRITE_REPORT: the busiest first, the never hit left out ----------------------
KPREWRITE_REPORT=1 "$P" plain 5 2>"$D/rep1" >/dev/null
is "work+0x0 5|many+0x0 1|outer+0x0 1|3 points hit, 1 never hit" \
    "$(sed -E 's/^kprewrite: [0-9a-f]{16}  [kr]  ([^ ]+)  hits ([0-9]+) .*/\1 \2/; s/^kprewrite: //; s/ \(KPREWRITE_REPORT=all lists them\)//' "$D/rep1" | tr '\n' '|' | sed 's/|$//')" \
    "KPREWRITE_REPORT=1: the points hit, busiest first (ties by address), then how many were never hit"
like "thread_main\+0x0  hits 0  nmissed 0" "$(KPREWRITE_REPORT=all "$P" plain 5 2>&1 >/dev/null)" "KPREWRITE_REPORT=all: every point, the never hit too"

# --- a library someone else built: Debian's zlib, under pigz ---------------------
Z=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n 1)
if command -v pigz >/dev/null && [ -n "$Z" ]; then
    mkdir -p "$D/z"; cp "$Z" "$D/z/libz.so.1"
    "$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe deflate --probe 'deflate%return' "$D/z/libz.so.1" >/dev/null 2>&1
    ok $? "bake deflate and its return into Debian's libz.so.1"
    seq 1 300000 >"$D/z/data2"
    pigz -p 1 -c "$D/z/data2" >"$D/z/want.gz"
    LD_LIBRARY_PATH="$D/z${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KPREWRITE_TRACE=$D/z/t.txt \
        KPREWRITE_EVENTS='p:zd deflate flush=$arg2:s32 in=+8(%di):u32; r deflate ret=$retval:s32' \
        pigz -p 1 -c "$D/z/data2" >"$D/z/got.gz"
    ok $(cmp -s "$D/z/want.gz" "$D/z/got.gz"; echo $?) "pigz over the traced libz: the same compressed bytes"
    np=$(grep -cE ': zd: \(deflate\+0x0\) flush=[0-9]+ in=[0-9]+$' "$D/z/t.txt")
    nr=$(grep -cE ': r_deflate_0: \(.* <- deflate\) ret=[0-9-]+$' "$D/z/t.txt")
    bad=$(grep -E ': r_deflate_0: ' "$D/z/t.txt" | grep -cvE ' ret=(0|1)$')
    ok $([ "$np" -gt 0 ] && [ "$np" = "$nr" ] && [ "$bad" = 0 ]; echo $?) \
        "an entry event and a return value (Z_OK, Z_STREAM_END) for each of its deflate calls ($np, $nr, $bad other)"
else
    ok 1 "pigz and libz.so.1 (scripts/install-deps.sh installs pigz)"
fi

# --- bad definitions: the column and the reason ----------------------------------
KPREWRITE_EVENTS='p work a=%zz' "$P" plain 1 >/dev/null 2>"$D/bad1"
like "KPREWRITE_EVENTS: p work a=%zz: column 11: unknown register" "$(cat "$D/bad1")" "an unknown register: its column"
KPREWRITE_EVENTS='r many ret=$retval' "$P" plain 1 >/dev/null 2>"$D/bad2"
like "column 3: no return point matches the spec" "$(cat "$D/bad2")" "a return event where no return probe is baked"
KPREWRITE_EVENTS='p work a=%di if a >' "$P" plain 1 >"$D/bad3.out" 2>"$D/bad3"
like "column [0-9]+: " "$(cat "$D/bad3")" "a malformed filter"
is "$("$P.orig" plain 1)" "$(cat "$D/bad3.out")" "and the program runs as it would"

# (definitions baked with the points: t/trace-baked.t)

# --- live: the control directory -------------------------------------------------
B=$D/ctl
live_start "$D" env KPREWRITE_TRACE_BUFFER=16 "$P" wait 200
"$KPREWRITE" ctl $pid trace 'p:live/w work a=%di s=+0(%si):string' 2>"$D/ctl.err"
ok $? "kprewrite ctl PID trace DEFINITION ($(cat "$D/ctl.err"))"
"$KPREWRITE" ctl $pid trace 'r work ret=$retval' 2>>"$D/ctl.err"
ok $? "kprewrite ctl PID trace r ..."
like '^p:live/w work\+0x0 a=%di s=\+0\(%si\):string  # dropped 0 filtered 0' "$("$KPREWRITE" ctl $pid events)" "the events file lists it"
"$KPREWRITE" ctl $pid trace 'p work a=%nosuch' 2>"$D/ctl.bad"
is 1 $? "a bad definition at run time: exit 1"
like "malformed" "$(cat "$D/ctl.bad")" "... saying so"
echo go >&3
wait_lines "$D/live.out" 1
"$KPREWRITE" ctl $pid events >"$D/events1"
"$KPREWRITE" ctl $pid trace --format=text >"$D/live1.txt" 2>&1 &
fp=$!
i=0; while [ "$(grep -c ': w: ' "$D/live1.txt")" -lt 1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5; kill -INT $fp; wait $fp
wl=$(grep -c ': w: ' "$D/live1.txt"); rl=$(grep -c ': r_work_0: ' "$D/live1.txt")
wd=$(sed -n 's/^p:live\/w .* # dropped \([0-9]*\) .*/\1/p' "$D/events1")
rd=$(sed -n 's/^r:kprobes\/r_work_0 .* # dropped \([0-9]*\) .*/\1/p' "$D/events1")
is "200 200" "$((wl + wd)) $((rl + rd))" "the smallest buffer (16 KiB): each event's lines read from trace_pipe and its drops add up to its 200 calls ($wl + $wd, $rl + $rd)"
ok $([ "$wd" -gt 0 ]; echo $?) "and it did drop ($wd)"
like "dropped $((wd + rd))" "$(grep ' work+0x0 ' "$B/$pid/list" 2>/dev/null || "$KPREWRITE" ctl $pid list | grep ' work+0x0 ')" "list shows the point's drops"
like "s=\"(even|odd)\"" "$(grep ': w: ' "$D/live1.txt" | head -n 1)" "the lines carry the fetched string"
hist=$("$KPREWRITE" ctl $pid hist)
is "200" "$(echo "$hist" | awk '/^\[/ { n += $3 } END { print n + 0 }')" "the return event's latency histogram counts each of the 200 returns, dropped ones too"
"$KPREWRITE" ctl $pid untrace live/w
ok $? "untrace live/w"
echo go >&3
wait_lines "$D/live.out" 2
"$KPREWRITE" ctl $pid trace --format=text >"$D/live2.txt" 2>&1 &
fp=$!; sleep 1; kill -INT $fp; wait $fp
is "0" "$(grep -c ': w: ' "$D/live2.txt")" "after untrace: no more of its events"
like "\[UNTRACED\]" "$("$KPREWRITE" ctl $pid events | grep live/w)" "the events file says it is untraced"
# `echo > trace` (kprewrite ctl PID clear): what the buffers hold is gone
echo go >&3
wait_lines "$D/live.out" 3
sleep 0.3
n1=$("$KPREWRITE" ctl $pid trace --format=json | grep -o '"ph":"X"' | wc -l)
"$KPREWRITE" ctl $pid clear 2>"$D/clear.err"; crc=$?
n2=$("$KPREWRITE" ctl $pid trace --format=json | grep -o '"ph":"X"' | wc -l)
ok $([ "$crc" = 0 ] && [ "$n1" -gt 0 ] && [ "$n2" = 0 ]; echo $?) \
    "kprewrite ctl PID clear empties the buffers: $n1 returns held, then $n2 ($(cat "$D/clear.err"))"
echo exit >&3; exec 3>&-
wait $pid
is 0 $? "the program ends normally"
is "$(printf 'go\ngo\ngo\nexit\n' | "$P.orig" wait 200)" "$(cat "$D/live.out")" "its output is the original's"
done_testing
