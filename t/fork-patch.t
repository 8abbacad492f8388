#!/bin/sh
# A child's probe changes stay in the child: the runtime writes code
# through a file of its own process (/proc/self/mem), which a child of
# fork() must not inherit (its writes would go to the parent's code, and
# its own code would not change). t/data/fork-patch.c: the parent changes
# code, forks; the child disables and enables a kprobe, registers one with
# a post_handler, and between its steps the parent looks at its own code
# and calls it.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir fork-patch)
use_runtime
export KPREWRITE_CTL_DIR="$D/ctl" KPREWRITE_CTL_DELAY_MS=0
P=$D/fork-patch
# A fixture that does not build is a failure, and nothing else can run.
if $CC -O2 -mgeneral-regs-only -o "$P" "$KP_SRCDIR/t/data/fork-patch.c" $RT 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --probe fa --probe fb "$P" >"$D/report" 2>"$D/err"
ok $? "bake fa and fb ($(tail -n 1 "$D/err"))"
like '  k  fa\+0x0  \[OPTIMIZED\]' "$(cat "$D/report")" "fa is jump-optimized"
like '  k  fb\+0x0  \[OPTIMIZED\]' "$(cat "$D/report")" "fb is jump-optimized"

timeout 300 "$P" >"$D/out" 2>&1
is 0 $? "the program ends (exit 0)"
line() { grep "^$1" "$D/out"; }
is "child: exit 0" "$(line 'child:')" "the child's steps all succeed"
is "child fa: disabled: code changed yes, handler 0, hits 0; enabled: code as armed yes, handler 10, hits 10" \
   "$(line 'child fa:')" "the child's disable_kprobe disarms the child's fa, its enable_kprobe arms it again"
is "child fb: post_handler registered: code changed yes, handler 10, hits 10, post 10" \
   "$(line 'child fb:')" "the child's kprobe with a post_handler makes the child's fb int3"
is "parent fa: while the child's was disabled: code as armed yes, handler 10, hits 10" \
   "$(line 'parent fa: while')" "the child's disable_kprobe leaves the parent's fa armed: its handler runs, its hits count"
is "parent fb: while the child's had a post_handler: code as armed yes, handler 0, hits 10, post 0" \
   "$(line 'parent fb: while')" "the child's registration leaves the parent's fb as it was"
is "parent fa: after the child: code as armed yes, handler 10, hits 10" "$(line 'parent fa: after')" \
   "after the child: the parent's fa as it was"
is "parent fb: after the child: code as armed yes, handler 0, hits 10, post 0" "$(line 'parent fb: after')" \
   "after the child: the parent's fb as it was"
done_testing
