#!/bin/sh
# The jump tactics at run time (t/data/tactics.S): a rel8 loop into an entry
# DCR (re-pointed through a trampoline in padding), a rel32 jump into one
# (its displacement rewritten), a jump-table entry into a mid-function DCR
# (the entry rewritten), functions shorter than a jmp rel32 (a jmp rel8 to a
# trampoline), a return probe on one. In every detour layout, linked with
# the runtime and prebuilt: output identical, exact counts; toggled live
# (disable/enable, unoptimize/optimize) while a thread checks every result;
# taken out again (--remove): the original bytes back; baked twice: the
# first run's re-pointed bytes put back and done again.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" cmp objcopy
D=$(tmpdir tactics)
S=$KP_SRCDIR/t/data
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
export KPREWRITE_CTL_DELAY_MS=0
export KPREWRITE_CTL_DIR="$D/ctl"
PROBES="--probe t_loop --probe t_far --probe t_switch --probe t_switch+28 --probe t_short --probe t_next
        --probe t_short_ret%return --probe t_after --probe pk_before --probe pk_short --probe pk_loop --probe pk_after"

P=$D/linked
if $CC -O2 -o "$P" "$S/tactics-main.c" "$S/tactics.S" $RT 2>"$D/cc.err"; then ok 0 "the linked fixture builds"
else ok 1 "the linked fixture builds ($(head -n 1 "$D/cc.err"))"; fi
Q=$D/prebuilt
if $CC -O2 -o "$Q" "$S/tactics-main.c" "$S/tactics.S" 2>"$D/cc.err"; then ok 0 "the prebuilt fixture builds"
else ok 1 "the prebuilt fixture builds ($(head -n 1 "$D/cc.err"))"; fi
want=$("$Q" 3)

note() { # REPORT SPEC: the note of the probe's line, as a word
    line=$(awk -v s="$2" '$3 == s' "$1")
    case $line in
    *'[OPTIMIZED]'*'re-pointed to its copy'*) echo retarget ;;
    *'[OPTIMIZED]'*'jmp rel8 to a trampoline'*) echo short ;;
    *'[OPTIMIZED]'*) echo jump ;;
    *) echo "other: $line" ;;
    esac
}
counts() { # RUN-STDERR: the hits KPREWRITE_REPORT=all printed, in spec order
    for s in t_loop+0x0 t_far+0x0 t_switch+0x0 t_switch+0x1c t_short+0x0 t_next+0x0 t_short_ret+0x0 t_after+0x0 \
             pk_before+0x0 pk_short+0x0 pk_loop+0x0 pk_after+0x0; do
        awk -v s="$s" '$4 == s { print $6; exit }' "$1"
    done | tr '\n' ' ' | sed 's/ $//'
}
# 3 rounds + the final line: t_loop and t_far 31 calls each (10 a round),
# t_switch 16 (5), t_switch+28 0 (case 1 lands past it), the short ones 31
want_counts="31 31 16 0 31 31 31 31 30 30 30 30"
for kind in linked prebuilt; do
    for layout in compact inline shared; do
        if [ $kind = linked ]; then
            cp "$P" "$P.$layout"; img=$P.$layout
            # shellcheck disable=SC2086
            "$KPREWRITE" --detours $layout $PROBES "$img" >"$D/report" 2>"$D/err"
        else
            img=$Q.$layout
            # shellcheck disable=SC2086
            "$KPREWRITE" --runtime "$RTLIB" --detours $layout $PROBES -o "$img" "$Q" >"$D/report" 2>"$D/err"
        fi
        is "retarget retarget jump retarget short short short jump short retarget" \
           "$(for s in t_loop+0x0 t_far+0x0 t_switch+0x0 t_switch+0x1c t_short+0x0 t_next+0x0 t_short_ret+0x0 t_after+0x0 pk_short+0x0 pk_loop+0x0; do note "$D/report" $s; done | tr '\n' ' ' | sed 's/ $//')" \
           "$kind, $layout: the tactics the fixture needs"
        # shellcheck disable=SC2086
        like '; 2 windows of instructions evicted for trampolines$' \
            "$("$KPREWRITE" --check --summary $PROBES "$( [ $kind = linked ] && echo "$P" || echo "$Q")" 2>&1)" \
            "$kind, $layout: the packed functions' trampolines got room in 2 windows evicted for them"
        got=$(KPREWRITE_REPORT=all "$img" 3 2>"$D/run.err")
        is "$want" "$got" "$kind, $layout: output identical"
        is "$want_counts" "$(counts "$D/run.err")" "$kind, $layout: every probe counted every call"
    done
done

# live control: a thread checks every result while the probes are disabled,
# enabled, unoptimized and optimized, each many times
if [ -e /dev/fuse ] || command -v fusermount3 >/dev/null; then
    img=$P.compact
    rm -f "$D/stop"
    "$img" serve "$D/stop" >"$D/serve.out" 2>&1 &
    pid=$!
    C=$KPREWRITE_CTL_DIR/$pid
    for i in $(seq 100); do [ -e "$C/list" ] && break; sleep 0.05; done
    errs=0
    for i in $(seq 20); do
        for cmd in "disable t_short" "enable t_short" "unoptimize t_short" "optimize t_short" \
                   "disable t_loop" "unoptimize t_loop" "enable t_loop" "optimize t_loop" \
                   "unoptimize t_short_ret" "optimize t_short_ret" "disable t_switch+28" "enable t_switch+28"; do
            echo "$cmd" >"$C/control" 2>/dev/null || errs=$((errs + 1))
        done
    done
    is 0 "$errs" "live control: 320 commands accepted"
    like 't_short\+0x0  \[OPTIMIZED\]' "$(cat "$C/list" 2>&1)" "t_short is optimized again: its short jump re-armed"
    touch "$D/stop"; wait $pid; rc=$?
    is "0|served many calls, bad 0" "$rc|$(cat "$D/serve.out")" "live control: every result right while the probes changed state"
else
    skip "no /dev/fuse: live control"; skip "live control"; skip "live control"
fi

# --remove: every original byte back (the re-pointed branches, table entry
# and trampolines too)
cp "$P.compact" "$D/rm"
"$KPREWRITE" --remove t_loop --remove t_far --remove t_switch --remove t_switch+28 --remove t_short \
    --remove t_next --remove 't_short_ret%return' --remove t_after --remove pk_before --remove pk_short --remove pk_loop --remove pk_after "$D/rm" >/dev/null 2>&1
cmp -s "$P" "$D/rm"; ok $? "removing every probe gives back the original bytes"

# two runs: the second puts the first's re-pointed bytes back, then bakes all
cp "$P" "$D/twice"
"$KPREWRITE" --probe t_loop --probe t_short "$D/twice" >/dev/null 2>&1
# shellcheck disable=SC2086
"$KPREWRITE" $PROBES "$D/twice" >/dev/null 2>&1
is "$want" "$("$D/twice" 3)" "baked in two runs: output identical"
"$KPREWRITE" --remove t_loop --remove t_far --remove t_switch --remove t_switch+28 --remove t_short \
    --remove t_next --remove 't_short_ret%return' --remove t_after --remove pk_before --remove pk_short --remove pk_loop --remove pk_after "$D/twice" >/dev/null 2>&1
cmp -s "$P" "$D/twice"; ok $? "and removing them all gives back the original bytes"

# prebuilt: the code and read-only data of the original come back
"$KPREWRITE" --remove t_loop --remove t_far --remove t_switch --remove t_switch+28 --remove t_short \
    --remove t_next --remove 't_short_ret%return' --remove t_after --remove pk_before --remove pk_short --remove pk_loop --remove pk_after -o "$D/qrm" "$Q.compact" >/dev/null 2>&1
for sec in .text .rodata; do
    objcopy -O binary -j $sec "$Q" "$D/a$sec" && objcopy -O binary -j $sec "$D/qrm" "$D/b$sec"
    cmp -s "$D/a$sec" "$D/b$sec"; ok $? "prebuilt, every probe removed: $sec as in the original"
done
done_testing
