#!/bin/sh
# Atomic output, intact input: kprewrite killed before each of its system
# calls in turn (strace fault injection) and at random moments leaves the
# input and the final name either as they were or complete; a full disk and
# read-only directories give a clear error and change nothing.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" cmp
D=$(tmpdir atomic-output)
use_runtime
PROBES="--probe square --probe square%return --probe short_inc"
$CC -O2 -mgeneral-regs-only -o "$D/orig" "$KP_SRCDIR/t/data/kret-prog.c" "$KP_SRCDIR/t/data/kret-asm.S" $RT
cp "$D/orig" "$D/in" && "$KPREWRITE" $PROBES "$D/in" >/dev/null 2>&1
is 2 $? "a complete run rewrites the image (exit 2: short_inc is an int3 probe)"
mv "$D/in" "$D/done"
ok $(! cmp -s "$D/orig" "$D/done"; echo $?) "the complete result differs from the input"

# state NAME: "old", "new", "absent" or "PARTIAL" for the file at the final name
state() {
    if [ ! -e "$1" ]; then echo absent
    elif cmp -s "$1" "$D/orig"; then echo old
    elif cmp -s "$1" "$D/done"; then echo new
    else echo PARTIAL; fi
}
# others DIR KEEP...: files in DIR other than KEEP and kprewrite's own temp files
others() {
    dir=$1; shift
    ls -A "$dir" | while read -r f; do
        keep=; for k in "$@"; do [ "$f" = "$k" ] && keep=1; done
        case $f in .*.kprewrite-??????) keep=1 ;; esac
        [ -n "$keep" ] || echo "$f"
    done
}

# --- killed before each system call, in place and with -o --------------------
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true 2>/dev/null; then
    for mode in inplace output; do
        K=$D/kill-$mode; mkdir -p "$K"; cp "$D/orig" "$K/in"
        [ $mode = inplace ] && args="$K/in" || args="-o $K/out $K/in"
        strace -f -qq -o "$K/trace" "$KPREWRITE" $PROBES $args >/dev/null 2>&1
        [ $mode = inplace ] && final=$K/in || final=$K/out
        # one line a syscall: NAME OCCURRENCE (the Nth call of NAME)
        sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$K/trace" | awk '{ print $1, ++n[$1] }' >"$K/calls"
        total=$(wc -l <"$K/calls") bad= killed=0
        while read -r name nth; do
            rm -rf "$K/run"; mkdir "$K/run"; cp "$D/orig" "$K/run/in"
            [ $mode = inplace ] && a="$K/run/in" || a="-o $K/run/out $K/run/in"
            strace -f -qq -o /dev/null -e trace="$name" -e inject="$name:signal=KILL:when=$nth" \
                "$KPREWRITE" $PROBES $a >/dev/null 2>&1
            [ $? -ge 128 ] && killed=$((killed + 1))
            if [ $mode = inplace ]; then
                s=$(state "$K/run/in"); case $s in old|new) ;; *) bad="$bad $name#$nth:in=$s" ;; esac
            else
                s=$(state "$K/run/in"); [ "$s" = old ] || bad="$bad $name#$nth:in=$s"
                s=$(state "$K/run/out"); case $s in absent|new) ;; *) bad="$bad $name#$nth:out=$s" ;; esac
            fi
            extra=$(others "$K/run" in out)
            [ -z "$extra" ] || bad="$bad $name#$nth:extra=$extra"
        done <"$K/calls" 2>/dev/null   # the shell's "Killed" notes
        ok $([ "$total" -gt 20 ] && [ "$killed" -gt 20 ]; echo $?) "$mode: killed before each of $total system calls ($killed runs died)"
        is "" "$bad" "$mode: the final name is always the old file or the whole new one"
    done
else
    skip "strace cannot trace here"; skip "strace"; skip "strace"; skip "strace"
fi

# --- SIGKILL at random moments -------------------------------------------------
R=$D/random; mkdir -p "$R"; bad=
for i in $(seq 1 25); do
    cp "$D/orig" "$R/in"
    "$KPREWRITE" $PROBES "$R/in" >/dev/null 2>&1 &
    pid=$!
    sleep "0.00$(( (i * 7919) % 40 ))"
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    s=$(state "$R/in"); case $s in old|new) ;; *) bad="$bad #$i:$s" ;; esac
    rm -f "$R"/.in.kprewrite-??????
done
is "" "$bad" "SIGKILL at 25 moments: the image is always the old or the whole new one"

# --- a full disk ------------------------------------------------------------------
F=$D/full; mkdir -p "$F"
size=$(wc -c <"$D/orig")
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=$(( (size / 4096 + 4) * 4096 )) kprewrite-full "$F" 2>/dev/null; then
    cp "$D/orig" "$F/in"
    err=$("$KPREWRITE" $PROBES "$F/in" 2>&1 >/dev/null); rc=$?
    like "^kprewrite: $F/in: cannot write: No space left on device \(input left untouched\)\$" "$err" \
        "full disk: exit $rc, one line naming the file and the cause"
    is "old" "$(state "$F/in")" "full disk: the input is unchanged"
    is "" "$(ls -A "$F" | grep -v '^in$')" "full disk: no temporary file is left behind"
    err=$("$KPREWRITE" $PROBES -o "$F/out" "$D/orig" 2>&1 >/dev/null)
    like "^kprewrite: $F/out: cannot write: No space left on device" "$err" "full disk, -o: the error names the output"
    is "absent" "$(state "$F/out")" "full disk, -o: no output under the final name"
    umount "$F"
else
    skip "full disk: needs root to mount a small tmpfs"; skip "full disk"; skip "full disk"; skip "full disk"
    skip "full disk"
fi

# --- read-only directories --------------------------------------------------------
O=$D/ro; mkdir -p "$O"; cp "$D/orig" "$O/in"
if [ "$(id -u)" = 0 ] && mount --bind "$O" "$O" 2>/dev/null; then
    if mount -o remount,bind,ro "$O" 2>/dev/null; then
        why="Read-only file system"
    else
        why=none
    fi
    run_as() { "$@"; }
else
    chmod 555 "$O"; why="Permission denied"; run_as() { "$@"; }
fi
if [ "$why" != none ]; then
    err=$(run_as "$KPREWRITE" $PROBES "$O/in" 2>&1 >/dev/null); rc=$?
    like "^kprewrite: $O/in: cannot create a temporary file in $O: $why \(input left untouched\)\$" "$err" \
        "read-only directory, in place: one clear line"
    is "1 old" "$rc $(state "$O/in")" "read-only directory, in place: exit 1, input unchanged"
    err=$(run_as "$KPREWRITE" $PROBES -o "$O/out" "$D/orig" 2>&1 >/dev/null); rc=$?
    like "^kprewrite: $O/out: cannot create a temporary file in $O: $why" "$err" "read-only output directory: one clear line"
    is "1 absent" "$rc $(state "$O/out")" "read-only output directory: exit 1, nothing written"
else
    skip "read-only: no way to make a read-only directory here"; skip "ro"; skip "ro"; skip "ro"
fi
mountpoint -q "$O" 2>/dev/null && umount "$O"
chmod 755 "$O"

# a file we may read but not replace, as another user (root ignores modes)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
    U=$D/user; mkdir -p "$U"; cp "$D/orig" "$U/in"; chmod 755 "$U" "$D"; chmod 644 "$U/in"
    nobody_copy "$KPREWRITE" "$D"   # run from $D: the tree's own parents may be closed to nobody
    err=$(as_nobody_in "$D" ./kprewrite.copy $PROBES user/in 2>&1 >/dev/null); rc=$?
    like "^kprewrite: user/in: cannot create a temporary file in user: Permission denied \(input left untouched\)\$" "$err" \
        "another user's directory: one clear line"
    is "1 old" "$rc $(state "$U/in")" "another user's directory: exit 1, input unchanged"
    # root rewriting a file another user owns keeps that owner
    chown 65534:65534 "$U/in"
    "$KPREWRITE" $PROBES "$U/in" >/dev/null 2>&1
    is "65534:65534 new" "$(stat -c %u:%g "$U/in") $(state "$U/in")" "root rewriting another user's file keeps its owner"
else
    skip "another user: needs root and setpriv"; skip "user"; skip "user"
fi

# a symlink to the image: the target is rewritten, the link stays a link
cp "$D/orig" "$D/target"; ln -sf target "$D/link"
"$KPREWRITE" $PROBES "$D/link" >/dev/null 2>&1
is "link new" "$([ -L "$D/link" ] && echo link) $(state "$D/target")" "in place through a symlink: the link stays, its target is rewritten"

done_testing
