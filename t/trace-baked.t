#!/bin/sh
# Event definitions baked with their points (doc/tracing.md, "Where
# definitions go"): `kprewrite --probe DEFINITION` and --probe-file lines
# bake the point and store the definition in the probe table
# (KPRW_T_EVENTS); the runtime defines it at start-up, so a program traced
# needs nothing but KPREWRITE_TRACE (or its control directory). Fetch-args,
# a return event with $retval and a filter, in a prebuilt program and in
# one linked with the runtime; a baked event beside a KPREWRITE_EVENTS one
# on the same point; bad definitions refused at bake time with their column
# and nothing written; a bake again, --remove, a table without definitions
# (version 4, 5) and a table whose definitions are damaged.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" od dd cmp
D=$(tmpdir trace-baked)
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/tp
if $CC -O2 -g -o "$P.orig" "$KP_SRCDIR/t/data/trace-prog.c" -lpthread 2>"$D/cc.err" &&
   $CC -O2 -g -o "$D/tl.orig" "$KP_SRCDIR/t/data/trace-prog.c" $RT 2>>"$D/cc.err"; then
    ok 0 "the fixture builds (prebuilt, and linked with the runtime)"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
want_out=$("$P.orig" plain 5)
# body: a trace line without COMM-TID [CPU] TIMESTAMP:, the caller's offset as OFF
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //; s/\(outer\+0x[0-9a-f]+ <-/(outer+OFF <-/' | sort; }

E1='p:myread work a=%di s=+0(%si):string id=+0(%dx):s64'
E2='r:wret work ret=$retval:s64 a1=$arg1:u64 if ret > 12'
E3='p:mn many a7=$arg7 g=@trace_global:s32 if a7 == 7'
cat >"$D/e.want" <<'W'
myread: (work+0x0) a=0x0 s="even" id=7
myread: (work+0x0) a=0x1 s="odd" id=7
wret: (outer+OFF <- work) ret=14 a1=1
myread: (work+0x0) a=0x2 s="even" id=(fault)
wret: (outer+OFF <- work) ret=22 a1=3
myread: (work+0x0) a=0x3 s="odd" id=7
wret: (outer+OFF <- work) ret=27 a1=4
myread: (work+0x0) a=0x4 s="even" id=7
mn: (many+0x0) a7=0x7 g=4660
W
sort "$D/e.want" >"$D/e.want.sorted"

# --- --probe DEFINITION: fetch-args, $retval, a filter; nothing else to run ---------
for kind in prebuilt linked; do
    case $kind in prebuilt) in=$P.orig out=$P ;; linked) in=$D/tl.orig out=$D/tl ;; esac
    "$KPREWRITE" --runtime "$RTLIB" --probe "$E1" --probe "$E2" --probe "$E3" --probe outer -o "$out" "$in" \
        >"$D/$kind.bake" 2>&1
    ok $? "$kind: kprewrite --probe DEFINITION... bakes ($(grep -v '^[0-9a-f]' "$D/$kind.bake"))"
    like '^kprewrite: wrote .*; 3 event definitions stored$' "$(grep '^kprewrite: wrote' "$D/$kind.bake")" \
        "$kind: the wrote line counts the definitions stored"
    like '^[0-9a-f]{16}  r  work\+0x0 ' "$(cat "$D/$kind.bake")" "$kind: r: made work's point a return point"
    KPREWRITE_TRACE=$D/$kind.txt "$out" plain 5 >"$D/$kind.out" 2>"$D/$kind.err"
    is "$want_out|" "$(cat "$D/$kind.out")|$(cat "$D/$kind.err")" "$kind: traced with KPREWRITE_TRACE alone: the output is the original's, stderr empty"
    body <"$D/$kind.txt" >"$D/$kind.body"
    if cmp -s "$D/$kind.body" "$D/e.want.sorted"; then ok 0 "$kind: the baked events' lines: fetch-args, a fault, \$retval and \$arg1 at the return, two filters"
    else ok 1 "$kind: the baked events' lines: got"; sed 's/^/# /' "$D/$kind.body"; fi
done
hits=$(KPREWRITE_REPORT=1 "$P" plain 5 2>&1 >/dev/null | grep -c 'work+0x0  hits 5 ')
is 1 "$hits" "the point counts its hits as before"

# an address or SYM+0 is stored as the point's SYM+0xOFF: the runtime sees
# the program where it is loaded (a PIE), not at its link-time address
addr=$("$KPREWRITE" --check --probe work "$P.orig" | cut -c1-16 | sed 's/^0*//')
"$KPREWRITE" --runtime "$RTLIB" --probe "p:byaddr 0x$addr a=%di" --probe 'p:byoff outer+0 n=%di:u32' -o "$D/addr" "$P.orig" \
    >/dev/null 2>&1
KPREWRITE_TRACE=$D/addr.txt "$D/addr" plain 2 >/dev/null 2>"$D/addr.err"
is "|byaddr: (work+0x0) a=0x0|byaddr: (work+0x0) a=0x1|byoff: (outer+0x0) n=2" \
    "$(cat "$D/addr.err")|$(body <"$D/addr.txt" | tr '\n' '|' | sed 's/|$//')" \
    "definitions on 0xADDR (a PIE's link-time address) and SYM+0 record where the program is loaded"

# --- a library someone else built: Debian's zlib, under pigz (README's example) ---------
Z=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n 1)
if command -v pigz >/dev/null && [ -n "$Z" ]; then
    mkdir -p "$D/z"; cp "$Z" "$D/z/libz.so.1"
    "$KPREWRITE" --runtime "$RTLIB" --probe 'p:zd deflate flush=$arg2:s32 in=+8(%di):u32' \
        --probe 'r deflate ret=$retval:s32' "$D/z/libz.so.1" >/dev/null 2>&1
    ok $? "bake deflate's events into Debian's libz.so.1"
    seq 1 300000 >"$D/z/data"
    pigz -p 1 -c "$D/z/data" >"$D/z/want.gz"
    LD_LIBRARY_PATH="$D/z${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KPREWRITE_TRACE=$D/z/t.txt pigz -p 1 -c "$D/z/data" \
        >"$D/z/got.gz" 2>"$D/z/err"
    is "0|" "$(cmp -s "$D/z/want.gz" "$D/z/got.gz"; echo $?)|$(cat "$D/z/err")" "pigz over it: the same compressed bytes, nothing on stderr"
    np=$(grep -cE ': zd: \(deflate\+0x0\) flush=[0-9]+ in=[0-9]+$' "$D/z/t.txt")
    nr=$(grep -cE ': r_deflate_0: \(.* <- deflate\) ret=(0|1)$' "$D/z/t.txt")
    ok $([ "$np" -gt 0 ] && [ "$np" = "$nr" ] && [ "$(wc -l <"$D/z/t.txt")" = $((np + nr)) ]; echo $?) \
        "the library's baked events, with KPREWRITE_TRACE alone: an entry and a return value for each deflate call ($np, $nr)"
else
    ok 1 "pigz and libz.so.1 (scripts/install-deps.sh installs pigz)"
fi

# --- beside KPREWRITE_EVENTS on the same point: other names coexist, the same name is refused once ----
KPREWRITE_EVENTS='p:other work b=%dx:u8' KPREWRITE_TRACE=$D/both.txt "$P" plain 5 >/dev/null 2>"$D/both.err"
is "" "$(cat "$D/both.err")" "a KPREWRITE_EVENTS event of another name on a baked event's point: no error"
is "5 5 3" "$(grep -c ': myread: ' "$D/both.txt") $(grep -c ': other: ' "$D/both.txt") $(grep -c ': wret: ' "$D/both.txt")" \
    "both record: 5 baked entry events, 5 run-time ones, the 3 baked returns the filter keeps"
KPREWRITE_EVENTS='p:myread work x=%si' KPREWRITE_TRACE=$D/same.txt "$P" plain 5 >"$D/same.out" 2>"$D/same.err"
is "kprewrite: KPREWRITE_EVENTS: p:myread work x=%si: column 3: event kprobes/myread exists already" "$(cat "$D/same.err")" \
    "the same name at run time: refused, one line naming the column of the name"
is "$want_out 5 0" "$(cat "$D/same.out") $(grep -c ': myread: ' "$D/same.txt") $(grep -c ' x=' "$D/same.txt")" \
    "the baked event stays, the program runs as it would"
# a program linked with the runtime registers its table after the runtime
# starts: KPREWRITE_EVENTS waits for its points, then meets the baked names
KPREWRITE_EVENTS='p:myread work x=%si' KPREWRITE_TRACE=$D/lsame.txt "$D/tl" plain 5 >/dev/null 2>"$D/lsame.err"
is "kprewrite: KPREWRITE_EVENTS: p:myread work x=%si: column 3: event kprobes/myread exists already|5" \
    "$(cat "$D/lsame.err")|$(grep -c ': myread: ' "$D/lsame.txt")" "linked program: the same name refused once, the baked event records"
KPREWRITE_EVENTS='p work q=%si' KPREWRITE_TRACE=$D/def.txt "$D/tl" plain 2 >/dev/null 2>"$D/def.err"
is "|2" "$(cat "$D/def.err")|$(grep -c ': p_work_0: ' "$D/def.txt")" \
    "linked program: a KPREWRITE_EVENTS event bound after the image registered its baked ones"

# --- the control directory: the baked events without any environment ---------------------
B=$D/ctl; mkdir -p "$B"; chmod 700 "$B"
trap '' PIPE   # a program that is gone fails a write to its fifo, not this script
mkfifo "$D/in"
KPREWRITE_CTL_DIR=$B "$P" wait 3 <"$D/in" >"$D/live.out" 2>"$D/live.err" &
pid=$!
exec 3>"$D/in"
i=0; while [ ! -e "$B/$pid/events" ] && [ ! -e "$B/$pid/socket" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
KPREWRITE_CTL_DIR=$B "$KPREWRITE" ctl $pid events >"$D/events" 2>&1
like '^p:kprobes/mn many\+0x0 a7=\$arg7 g=@trace_global:s32 if a7 == 7  # dropped 0 filtered 0
p:kprobes/myread work\+0x0 a=%di s=\+0\(%si\):string id=\+0\(%dx\):s64  # dropped 0 filtered 0
r:kprobes/wret work ret=\$retval:s64 a1=\$arg1:u64 if ret > 12  # dropped 0 filtered 0$' "$(sort "$D/events")" \
    "the events file lists the baked events from the start"
echo go >&3
KPREWRITE_CTL_DIR=$B "$KPREWRITE" ctl $pid trace >"$D/live.txt" 2>&1 &
fp=$!
i=0; while [ "$(grep -c ': myread: ' "$D/live.txt")" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT $fp; wait $fp
# the stop signal in the window between the follower's look at its flag
# and the read it starts (a test knob puts it there): the read, which
# would wait for events that never come, is interrupted all the same
# (the guard is a bound on a hang, not a timing)
KPREWRITE_TEST_STOP_BEFORE_READ=1 KPREWRITE_CTL_DIR=$B timeout 60 "$KPREWRITE" ctl $pid trace >"$D/late.txt" 2>&1
rc=$?
ok $([ $rc -eq 0 ]; echo $?) "kprewrite ctl PID trace: a stop just before its read still ends it (exit $rc)"
echo exit >&3; exec 3>&-
wait $pid
is "3 1" "$(grep -c ': myread: ' "$D/live.txt") $(grep -c ': wret: ' "$D/live.txt")" \
    "kprewrite ctl PID trace: the baked events' lines from trace_pipe, no KPREWRITE_* set (3 calls, 1 return kept)"

# --- bad definitions: refused at bake time, with the column; nothing written -----------------
bad() { # WANT DESCRIPTION ARGS...: kprewrite ARGS -o OUT exits 1 with the one line WANT, OUT not made
    want=$1 desc=$2; shift 2
    rm -f "$D/bad.out"
    "$KPREWRITE" "$@" -o "$D/bad.out" "$P.orig" >/dev/null 2>"$D/bad.err"
    is "1|$want|no" "$?|$(cat "$D/bad.err")|$([ -e "$D/bad.out" ] && echo yes || echo no)" "$desc: exit 1, the column, nothing written"
}
bad "kprewrite: --probe 'p:x work a=%zz': col 13: unknown register" "an unknown register" --probe 'p:x work a=%zz'
bad "kprewrite: --probe 'p:x work+zz a=%di': col 10: bad offset (decimal or 0x hex)" "a bad offset in the spec" \
    --probe 'p:x work+zz a=%di'
bad "kprewrite: --probe 'r work+4 ret=\$retval': col 3: a return probe is on a function's entry: SYM+4 is that only past an endbr64" \
    "a return event at SYM+4 where no endbr64 is" --probe 'r work+4 ret=$retval'
bad "kprewrite: --probe 'r work+5 ret=\$retval': col 3: a return probe is on a function's entry (SYM, SYM+0, or SYM+4 past an endbr64)" \
    "a return event off the entry" --probe 'r work+5 ret=$retval'
bad "kprewrite: --probe 'p work r=\$retval': col 10: \$retval is not available on probe (only on return events)" \
    "\$retval on an entry event" --probe 'p work r=$retval'
bad "kprewrite: --probe 'p:x work a=%di': col 3: event kprobes/x is defined twice (also by --probe 'p:x outer b=%si')" \
    "two definitions of one event name" --probe 'p:x outer b=%si' --probe 'p:x work a=%di'
printf '# probes\nouter\n  p:ok work a=%%di   # a comment\n\tp:f many n=%%di if n >\n' >"$D/bad-file"
"$KPREWRITE" --probe-file "$D/bad-file" -o "$D/bad.out" "$P.orig" >/dev/null 2>"$D/bad.err"
rc=$?
is "kprewrite: $D/bad-file:4:23: a number is expected" "$(cat "$D/bad.err")" "--probe-file: a malformed filter gives FILE:LINE:COL"
is "1 1 no" "$rc $(wc -l <"$D/bad.err" | tr -d ' ') $([ -e "$D/bad.out" ] && echo yes || echo no)" "... exit 1, one line, nothing written"
cp "$P.orig" "$D/inplace"
"$KPREWRITE" --probe 'p:x work a=%zz' "$D/inplace" >/dev/null 2>&1
ok $(cmp -s "$D/inplace" "$P.orig"; echo $?) "a refused definition in place: the image untouched"

# --- a probe file: comments, plain specs and definitions -----------------------------------
cat >"$D/probes" <<'F'
# the points and their events
outer
   p:myread work a=%di s=+0(%si):string id=+0(%dx):s64     # an entry event, fetch-args
r:wret work%return ret=$retval:s64 a1=$arg1:u64 if ret > 12
p:mn many a7=$arg7 g=@trace_global:s32 if a7 == 7
F
"$KPREWRITE" --runtime "$RTLIB" --probe-file "$D/probes" -o "$D/pf" "$P.orig" >"$D/pf.bake" 2>&1
ok $? "--probe-file with comments, a plain spec and definitions bakes"
KPREWRITE_TRACE=$D/pf.txt "$D/pf" plain 5 >/dev/null
body <"$D/pf.txt" >"$D/pf.body"
if cmp -s "$D/pf.body" "$D/e.want.sorted"; then ok 0 "the probe file's events record the same lines (SYM%return as r:)"
else ok 1 "the probe file's events: got"; sed 's/^/# /' "$D/pf.body"; fi

# --- a bake again keeps the definitions; a new one of a name replaces; --remove drops -------
cp "$D/tl" "$D/again"   # (a linked pool has room for more; an added one is sized for its probes)
"$KPREWRITE" --probe thread_main "$D/again" >/dev/null 2>"$D/again.err"
like '; 3 event definitions stored$' "$(cat "$D/again.err")" "a bake again in place keeps the 3 definitions"
KPREWRITE_TRACE=$D/again.txt "$D/again" plain 5 >/dev/null
body <"$D/again.txt" >"$D/again.body"
ok $(cmp -s "$D/again.body" "$D/e.want.sorted"; echo $?) "and they record as before"
"$KPREWRITE" --probe 'p:myread work only=%di:s8' "$D/again" >/dev/null 2>"$D/repl.err"
like "^kprewrite: $D/again: baked event 'p:myread work a=%di s=\\+0\\(%si\\):string id=\\+0\\(%dx\\):s64' replaced by --probe 'p:myread work only=%di:s8'" \
    "$(cat "$D/repl.err")" "a new definition of a baked event's name replaces it, said"
KPREWRITE_TRACE=$D/repl.txt "$D/again" plain 2 >/dev/null
is "myread: (work+0x0) only=0|myread: (work+0x0) only=1" "$(grep ': myread: ' "$D/repl.txt" | body | tr '\n' '|' | sed 's/|$//')" \
    "the new definition records"
"$KPREWRITE" --remove many "$D/again" >/dev/null 2>"$D/rm.err"
like "^kprewrite: $D/again: baked event 'p:mn many a7=\\\$arg7 g=@trace_global:s32 if a7 == 7' left out: no point it names is baked now" \
    "$(cat "$D/rm.err")" "--remove of its point drops a baked event, said"
KPREWRITE_TRACE=$D/rm.txt "$D/again" plain 5 >/dev/null 2>"$D/rm.run"
is "|0|5" "$(cat "$D/rm.run")|$(grep -c ': mn: ' "$D/rm.txt")|$(grep -c ': myread: ' "$D/rm.txt")" \
    "the program starts without complaint; the other events still record"
"$KPREWRITE" --remove 'p:x work a=%di' "$D/again" >/dev/null 2>"$D/rmdef.err"
is "kprewrite: --remove 'p:x work a=%di': col 1: a point (SPEC), not an event definition" "$(cat "$D/rmdef.err")" \
    "--remove takes a point, not a definition"

# --- tables: the flag, an old layout, damaged definitions ---------------------------------
# toff IMAGE: the file offset of .kprewrite.table
toff() { readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".kprewrite.table" { print $4 }'; }
u32() { od -An -tu4 -j "$2" -N 4 "$1" | tr -d ' '; }
u16() { od -An -tu2 -j "$2" -N 2 "$1" | tr -d ' '; }
# dd without a sanitizer preloaded (ASan refuses its bs=1 aligned_alloc)
dd() { LD_PRELOAD= command dd "$@"; }
TO=$((0x$(toff "$P")))
flags=$(u32 "$P" $((TO + 40)))
is 1024 $((flags & 1024)) "a table with definitions has KPRW_T_EVENTS (0x400)"
# struct kprw_table: version at 4, nentries 8, strings_off 12, flags 40, nfixups 44
ne=$(u32 "$P" $((TO + 8))); so=$(u32 "$P" $((TO + 12))); nf=$(u32 "$P" $((TO + 44)))
from=$((64 + ne * 28 + nf * 12))
is "$(printf '%s\n' "$E1" "$E2" "$E3" | sort)" "$(dd if="$P" bs=1 skip=$((TO + from)) count=$((so - from)) 2>/dev/null | tr '\0' '\n' | sort)" \
    "the definitions lie between the fixups and the strings, each ending with a NUL"
"$KPREWRITE" --runtime "$RTLIB" --probe work --probe outer -o "$D/plain" "$P.orig" >/dev/null 2>&1
TO2=$((0x$(toff "$D/plain")))
n2=$(u32 "$D/plain" $((TO2 + 8))); so2=$(u32 "$D/plain" $((TO2 + 12))); nf2=$(u32 "$D/plain" $((TO2 + 44)))
is "5 0 0 $((64 + n2 * 28))" "$(u16 "$D/plain" $((TO2 + 4))) $(( $(u32 "$D/plain" $((TO2 + 40))) & 1024 )) $nf2 $so2" \
    "a table without definitions is as before: version 5, no flag, (no fixups here,) the strings right after the entries"
# version 4 (no fixups, no dynamic names: this one has neither) reads the same
cp "$D/plain" "$D/v4"
printf '\004' | dd of="$D/v4" bs=1 seek=$((TO2 + 4)) conv=notrunc 2>/dev/null
for img in plain v4; do
    KPREWRITE_EVENTS='p work a=%di' KPREWRITE_TRACE=$D/$img.txt "$D/$img" plain 2 >"$D/$img.out" 2>"$D/$img.err"
    is "$("$P.orig" plain 2)||2" "$(cat "$D/$img.out")|$(cat "$D/$img.err")|$(grep -c ': p_work_0: ' "$D/$img.txt")" \
        "a table without definitions (version $(u16 "$D/$img" $((TO2 + 4)))) runs, KPREWRITE_EVENTS on it records"
done
# the definitions' last byte (the strings' first is just after) made not a NUL
cp "$P" "$D/damaged"
printf 'x' | dd of="$D/damaged" bs=1 seek=$((TO + so - 1)) conv=notrunc 2>/dev/null
out=$("$D/damaged" plain 5 2>"$D/damaged.err")
is "0|$want_out" "$?|$out" "damaged definitions: the program runs, output unchanged"
like "^kprewrite-rt: $D/damaged: probe table refused: the event definitions lie outside the table's segment or are not terminated; its [0-9]+ probes are not armed\$" \
    "$(cat "$D/damaged.err")" "damaged definitions: the table refused, one line saying why"
done_testing
