#!/bin/sh
# Runtime safety: no segment or mapping is ever writable and executable (in
# the rewritten file, and in the process while probes are toggled); the
# control directory is closed to other users and is not made inside a base
# directory someone else controls; a probe table edited after kprewrite wrote
# it is refused with a clear message instead of being followed.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" readelf od dd nm
D=$(tmpdir runtime-safety)
use_runtime
# these programs read their own control directory from the start
export KPREWRITE_CTL_DELAY_MS=0
P=$D/tp
$CC -O2 -o "$P" "$KP_SRCDIR/t/data/trap-prog.c" "$KP_SRCDIR/t/data/trap-asm.S" $RT
cp "$P" "$P.orig"
"$KPREWRITE" --probe short3 --probe work --probe 'p?' "$P" >/dev/null 2>&1
want_plain=$("$P.orig" plain)

# --- the rewritten file has no W+X segment -----------------------------------------
# segs IMAGE: one line a program header: INDEX TYPE FLAGS, then "map INDEX SECTIONS..."
segs() {
    readelf -lW "$1" | awk '
        /^ +[A-Z_]+ +0x/ { f = ""; for (i = 7; i < NF; i++) f = f $i; print n++, $1, f }
        /Segment Sections/ { m = 1; next }
        m && /^ +[0-9][0-9] / { print "map", $0 }'
}
segs "$P" >"$D/segs"
is "" "$(awk '$1 != "map" && $3 ~ /W/ && $3 ~ /E/' "$D/segs")" "no segment of the rewritten program is writable and executable"
tseg=$(awk '$1 == "map" && / \.kprewrite\.text( |$)/ { print $2 + 0 }' "$D/segs")
is "LOAD RE" "$(awk -v s="$tseg" '$1 != "map" && $1 == s { print $2, $3 }' "$D/segs")" "the detours' segment is read-execute"
dseg=$(awk '$1 == "map" && / \.kprewrite\.data( |$)/ { print $2 + 0 }' "$D/segs")
is "LOAD RW" "$(awk -v s="$dseg" '$1 != "map" && $1 == s { print $2, $3 }' "$D/segs")" "the probe state's segment is read-write"

# --- no W+X mapping while probes are toggled -----------------------------------------
export KPREWRITE_CTL_DIR="$D/ctl"
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true 2>/dev/null; then
    # the program toggles until it has made 101 toggles and this loop has
    # read its mappings 21 times (the file stress-stop exists), 300 s at most
    rm -f "$D/stress-stop"
    strace -f -qq -o "$D/prot.trace" -e trace=mprotect,pkey_mprotect,mmap,mremap "$P" stress 300 "$D/stress-stop" 101 \
        >/dev/null 2>"$D/stress.err" &
    spid=$!
    samples=0 wxmaps=
    while kill -0 $spid 2>/dev/null; do
        for pid in $(pgrep -P $spid 2>/dev/null); do   # the traced program, strace's child
            [ /proc/$pid/exe -ef "$P" ] && [ -r /proc/$pid/maps ] || continue
            m=$(awk '$2 ~ /w/ && $2 ~ /x/' /proc/$pid/maps 2>/dev/null)
            [ -n "$m" ] && wxmaps="$wxmaps $m"
            samples=$((samples + 1))
        done
        [ $samples -gt 20 ] && touch "$D/stress-stop"
        sleep 0.01
    done
    wait $spid
    toggles=$(sed -n 's/^stress: toggles \([0-9]*\).*/\1/p' "$D/stress.err")
    ok $([ "${toggles:-0}" -gt 100 ] && [ $samples -gt 20 ]; echo $?) \
        "stress run: ${toggles:-0} toggles, /proc/PID/maps read $samples times"
    is "" "$wxmaps" "no mapping was writable and executable at any sample"
    is "" "$(grep 'PROT_WRITE|PROT_EXEC' "$D/prot.trace" | head -n 3)" \
        "the process never asked for a writable and executable mapping"
else
    skip "strace cannot trace here"; skip "strace"; skip "strace"
fi

# --- the control directory ----------------------------------------------------------
if { [ -e /dev/fuse ] || command -v fusermount3 >/dev/null; } && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    "$P" serve "$D/stop" >"$D/out" 2>&1 &
    pid=$!
    C=$KPREWRITE_CTL_DIR/$pid
    for i in $(seq 100); do [ -e "$C/list" ] && break; sleep 0.05; done
    if [ -e "$C/list" ]; then
        # nobody starts inside the directory (only its own permissions
        # count, not those of the tree's parents); kprewrite ctl from $D,
        # as a copy there, the base named relative to it
        err=$(as_nobody_in "$C" cat list 2>&1 >/dev/null; echo "rc=$?")
        like "^cat: list: Permission denied rc=1\$" "$(echo $err)" "another user cannot read list"
        err=$(as_nobody_in "$C" sh -c "echo 'disable work' > control" 2>&1; echo "rc=$?")
        like "control: Permission denied rc=[1-9]" "$(echo $err)" "another user cannot write control"
        err=$(as_nobody_in "$C" sh -c "echo 0 > enabled" 2>&1; echo "rc=$?")
        like "enabled: Permission denied rc=[1-9]" "$(echo $err)" "another user cannot write enabled"
        nobody_copy "$KPREWRITE" "$D"
        err=$(as_nobody_in "$D" env KPREWRITE_CTL_DIR=ctl ./kprewrite.copy ctl $pid list 2>&1 >/dev/null; echo "rc=$?")
        like "^kprewrite: ctl $pid: ctl/$pid: Permission denied rc=1\$" "$(echo $err)" "another user's kprewrite ctl is refused (Permission denied)"
        like ' work\+0x0 ' "$(grep ' work+' "$C/list")" "the owner still reads list"
    else
        skip "no control directory here"; skip "ctl"; skip "ctl"; skip "ctl"; skip "ctl"
    fi
    touch "$D/stop"; wait $pid
    # a base directory another user made (or anyone may write): no control directory in it
    B=$D/shared-base; mkdir -p "$B"; chown 65534:65534 "$B"; chmod 1777 "$B"
    err=$(KPREWRITE_CTL_DIR=$B "$P" plain 2>&1 >"$D/plain.out")
    like "^kprewrite-rt: $B is not a directory of ours that only we may write \(uid 65534, mode 1777\); no control directory\$" \
        "$err" "a base directory owned by another user is refused, with a message"
    is "$want_plain|" "$(cat "$D/plain.out")|$(ls -A "$B")" "and the program runs normally, making nothing in it"
else
    for i in 1 2 3 4 5 6 7; do skip "control directory checks need FUSE, root and setpriv"; done
fi
unset KPREWRITE_CTL_DIR

# --- hostile probe tables -------------------------------------------------------------
# `plain` runs only work, an optimized probe: with its table refused, an
# int3 site would trap as a foreign breakpoint (doc/hardening.md); a detour
# just runs its displaced instructions and goes back.
H=$D/hp
cp "$P.orig" "$H"
"$KPREWRITE" --probe work --probe 'p?' "$H" >/dev/null 2>&1
like '\[OPTIMIZED\]' "$("$KPREWRITE" --check --probe work "$P.orig")" "work, the probe plain runs, is optimized"
# TOFF: file offset (and taddr the address) of .kprewrite.table
sec() { readelf -SW "$H" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$1" '$1 == s { print $3, $4 }'; }
set -- $(sec .kprewrite.table); taddr=$((0x$1)); TOFF=$((0x$2))
set -- $(sec .text); textaddr=$((0x$1)); textoff=$((0x$2))
n=$(od -An -tu4 -j $((TOFF + 8)) -N 4  "$H" | tr -d ' ')
ok $([ "${n:-0}" -ge 7 ]; echo $?) "the table holds the baked entries (${n:-0})"
# the entry of p1 (never called by `plain`), found by its site address
p1=$(( 0x$("$KPREWRITE" --check --probe p1 "$P.orig" | cut -c1-16) ))
i=0 e=
while [ $i -lt "${n:-0}" ]; do
    rel=$(od -An -td4 -j $((TOFF + 64 + i * 28)) -N 4  "$H" | tr -d ' ')
    [ $((taddr + rel)) -eq $p1 ] && { e=$i; break; }
    i=$((i + 1))
done
ok $([ -n "$e" ]; echo $?) "p1 has entry ${e:-?}"
E=$((TOFF + 64 + ${e:-0} * 28))   # struct kprw_entry: 28 bytes after the 64-byte header
# put BYTES (printf escapes) at OFFSET of a copy NAME, then run it
hostile() { # NAME OFFSET BYTES REASON-REGEX DESCRIPTION (a copy of $HBASE, or $H)
    cp "${HBASE:-$H}" "$D/$1"
    printf "$3" | dd of="$D/$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
    out=$(KPREWRITE_REPORT=1 "$D/$1" plain 2>"$D/$1.err"); rc=$?
    is "0|$want_plain" "$rc|$out" "$5: the program runs, output unchanged"
    like "^kprewrite-rt: $D/$1: probe table refused: $4; its [0-9]+ probes are not armed\$" "$(cat "$D/$1.err")" \
        "$5: refused, one line naming the image and why"
}
v=$(sed -n 's/^#define KPRW_VERSION \([0-9]*\).*/\1/p' "$KP_SRCDIR/include/kprewrite/abi.h")
vmin=$(sed -n 's/^#define KPRW_VERSION_MIN \([0-9]*\).*/\1/p' "$KP_SRCDIR/include/kprewrite/abi.h")
hostile version $((TOFF + 4)) '\143\000' "table version 99, this runtime reads versions $vmin to $v" "wrong version"
hostile flags $((TOFF + 43)) '\200' "table flags 0x80000000, unknown to this runtime \(0x[0-9a-f]+\)" \
    "a flag a newer kprewrite would set"
hostile nentries $((TOFF + 8)) '\377\377\377\017' '268435455 entries run past the read-only segment holding the table' \
    "entry count past the end"
hostile site $E '\000\000\000\100' "entry $e \(p1\+0x0\): site outside executable code" \
    "a site far away"
hostile detour $((E + 4)) '\100\000\000\000' "entry $e \(p1\+0x0\): detour outside executable code" \
    "a detour into the table"
hostile name $((E + 8)) '\377\377\377\177' "entry $e \(\?\+0x0\): name outside the string table" "a name past the strings"
# (p1's copy needed no relocation: its original bytes are in its copy, flag
# KPRW_F_ORIG_AT_COPY in byte 24; without the flag they are in the strings)
ok $([ "$(od -An -tu1 -j $((E + 24)) -N1 "$H" | tr -d ' ')" -ge 32 ]; echo $?) "p1 keeps its original bytes in its copy"
cp "$H" "$D/noflag"
printf '\000' | dd of="$D/noflag" bs=1 seek=$((E + 24)) conv=notrunc 2>/dev/null
HBASE=$D/noflag hostile orig $((E + 16)) '\376\377\377\377' "entry $e \(p1\+0x0\): original bytes outside the string table" \
    "original bytes past the strings"
# struct kprw_entry's bytes: 23 dcr_len, 25 kind, 26 verdict
hostile kind $((E + 25)) 'x' "entry $e \(p1\+0x0\): unknown kind" "an unknown kind"
hostile verdict $((E + 26)) '\007' "entry $e \(p1\+0x0\): unknown verdict" "an unknown verdict"
hostile len0 $((E + 23)) '\000' "entry $e \(p1\+0x0\): site length out of range" "a site of 0 bytes"
hostile len4 $((E + 23)) '\004' "entry $e \(p1\+0x0\): site length out of range" "an optimized site shorter than its jump"
hostile len25 $((E + 23)) '\031' "entry $e \(p1\+0x0\): site length out of range" "a site longer than the original bytes kept"
hostile state $((TOFF + 24)) '\000\000\000\000\000\000\000\000' \
    'the state array lies outside a writable, non-executable segment' "the state array on the table"
# p1's state (struct kprw_state: 8 bytes, rt) naming a record: the detour
# would follow that pointer at p1's first hit
state_rel=$(od -An -td8 -j $((TOFF + 24)) -N 8 "$H" | tr -d ' ')
set -- $(sec .kprewrite.data); daddr=$((0x$1)); doff=$((0x$2))
hostile staterec $(( taddr + state_rel - daddr + doff + ${e:-0} * 8 )) '\001\020\000\000\000\000\000\000' \
    "entry $e \(p1\+0x0\): its state names a record already \(the file must hold zero there\)" \
    "a state naming a record"
# The site bytes of p1 no longer jump to its detour: the table itself is
# fine (start-up reads no code), but the runtime will not write to that site.
cp "$H" "$D/sitebytes"
printf '\000\000\000\000' | dd of="$D/sitebytes" bs=1 seek=$((p1 - textaddr + textoff + 1)) conv=notrunc 2>/dev/null
if { [ -e /dev/fuse ] || command -v fusermount3 >/dev/null; }; then
    export KPREWRITE_CTL_DIR="$D/ctl2"
    "$D/sitebytes" serve "$D/stop2" >/dev/null 2>"$D/sitebytes.err" &
    pid=$!
    for i in $(seq 100); do [ -e "$KPREWRITE_CTL_DIR/$pid/list" ] && break; sleep 0.05; done
    "$KPREWRITE" ctl $pid unoptimize p1 >/dev/null 2>&1; rc1=$?
    "$KPREWRITE" ctl $pid unoptimize work >/dev/null 2>&1; rc2=$?
    touch "$D/stop2"; wait $pid
    unset KPREWRITE_CTL_DIR
    is "fail 0" "$([ $rc1 -ne 0 ] && echo fail) $rc2" "a site not holding its jump: unoptimize fails there, works elsewhere"
    is "kprewrite-rt: p1+0x0: the site does not hold what the probe table says; not patching it" \
        "$(cat "$D/sitebytes.err")" "a site not holding its jump: one line naming it, nothing written"
else
    skip "no control directory here"; skip "no control directory here"
fi
# the untouched image arms its probes and counts
KPREWRITE_REPORT=1 "$H" plain >/dev/null 2>"$D/good.err"
like 'work\+0x0 +hits 1 ' "$(grep 'work+' "$D/good.err")" "the untouched image counts its hits"
is "" "$(grep 'refused' "$D/good.err")" "and is not refused"

done_testing
