#!/bin/sh
# Events written before an exec (KPREWRITE_TRACE): a prebuilt program
# calls a traced function N times, then execs an unprobed shell by each
# function of the exec family; the trace file holds every one of the N
# events (before, those the writer had not written yet were lost with the
# process). Text and JSON; an exec that fails goes on tracing.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" sh perl
D=$(tmpdir trace-exec)
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/te
if $CC -O2 -o "$P.orig" "$KP_SRCDIR/t/data/trace-exec.c" 2>"$D/cc.err" &&
   "$KPREWRITE" --runtime "$RTLIB" --probe work -o "$P" "$P.orig" >/dev/null 2>"$D/bake.err"; then
    ok 0 "the fixture builds and is baked"
else
    ok 1 "the fixture builds and is baked ($(head -n 1 "$D/cc.err" "$D/bake.err"))"; done_testing
fi
# 300 events: fewer than a ring holds, written well within the writer's 50 ms
for how in execve execv execvp execvpe execl execlp execle; do
    rm -f "$D/$how.txt"
    out=$(KPREWRITE_EVENTS='p:w work x=%di:s32' KPREWRITE_TRACE=$D/$how.txt "$P" $how 300 2>"$D/$how.err")
    is "after|300|0 299" "$out|$(grep -c ': w: ' "$D/$how.txt" 2>/dev/null)|$(sed -n 's/.* x=\(-*[0-9]*\)$/\1/p' "$D/$how.txt" | sort -n | sed -n '1p;$p' | tr '\n' ' ' | sed 's/ $//')" \
        "$how: the shell ran, and the trace holds all 300 events written before it (x 0 to 299)"
done
rm -f "$D/fail.txt"
out=$(KPREWRITE_EVENTS='p:w work x=%di:s32' KPREWRITE_TRACE=$D/fail.txt "$P" fail 100 2>"$D/fail.err")
is "failed exec, went on|200" "$out|$(grep -c ': w: ' "$D/fail.txt")" "an exec that fails: the program goes on, its events after it written too (200)"
rm -f "$D/j.json"
out=$(KPREWRITE_EVENTS='p:w work x=%di:s32' KPREWRITE_TRACE=$D/j.json KPREWRITE_TRACE_FORMAT=json "$P" execvp 300 2>"$D/j.err")
n=$(perl -MJSON::PP -e 'local $/; my $d = decode_json(<STDIN>); my @e = grep { $_->{name} eq "w" } @{ ref $d eq "HASH" ? $d->{traceEvents} : $d }; print scalar @e' <"$D/j.json" 2>"$D/perl.err")
is "after|300" "$out|$n" "JSON: the document is ended before the exec and parses, 300 events ($(head -n 1 "$D/perl.err"))"
done_testing
