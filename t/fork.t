#!/bin/sh
# fork() in a threaded probed program: the child inherits neither the
# runtime's lock held by a thread it does not have, nor the marks, traps
# and return-probe instances of those threads, nor the parent's control
# directory connection or socket, nor its watcher's pipe (t/data/fork-prog.c).
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir fork)
use_runtime
export KPREWRITE_CTL_DIR="$D/ctl" KPREWRITE_CTL_DELAY_MS=0
P=$D/fork
# A fixture that does not build is a failure, and nothing else can run.
if $CC -O2 -mgeneral-regs-only -o "$P" "$KP_SRCDIR/t/data/fork-prog.c" $RT -lpthread 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
"$KPREWRITE" --probe fa --probe fb --probe sit --probe sit_trap --probe 'held%return' "$P" >"$D/report" 2>"$D/err"
ok $? "bake fa, fb, sit, sit_trap and held%return ($(tail -n 1 "$D/err"))"

timeout 300 "$P" 200 >"$D/out" 2>&1
is 0 $? "the program ends (exit 0, within 5 minutes)"
child=$(grep '^child' "$D/out")
like '^child: own kprobe exact, unregistered both,' "$child" \
    "the child unregisters kprobes whose handlers other threads were running at the fork (optimized and int3)"
like 'held returns 1 nmissed 0,' "$child" \
    "the child's call finds free the only instance (maxactive 1) a thread held at the fork"
like '^parent: held returns 1 nmissed 0,' "$(grep '^parent' "$D/out")" "the parent's thread returns through its hook after the fork"
if grep -q '^parent: .*/dev/fuse fds [1-9]' "$D/out"; then
    like '/dev/fuse fds 0, control fds 0$' "$child" \
        "the child keeps neither the parent's /dev/fuse connection nor its watcher's pipe open"
else
    skip "the parent has no control directory here"
fi
# the same with the directory as a socket: the child keeps no listening socket
KPREWRITE_CTL_SOCKET=1 timeout 300 "$P" 1 >"$D/out.sock" 2>&1
like 'control fds 2$' "$(grep '^parent' "$D/out.sock")" "socket: the parent has its listening socket and the watcher's pipe"
like 'control fds 0$' "$(grep '^child' "$D/out.sock")" "socket: the child has neither"
is "loop: 200 forks, 0 hung, 0 wrong" "$(grep '^loop' "$D/out")" \
    "200 forks while two threads register and unregister kprobes: no child hangs, each counts its own hits exactly"
done_testing
