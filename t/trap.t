#!/bin/sh
# int3 probes: baked where a jump is unsafe, run from the runtime's SIGTRAP
# handler: registers, ip redirection, post handlers (single step), the
# program's own SIGTRAP handler, probes inside signal handlers.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir trap)
use_runtime
# these programs read their own control directory from the start
export KPREWRITE_CTL_DELAY_MS=0
export KPREWRITE_CTL_DIR="$D/ctl"

for v in "-O2 -fPIE -pie" "-O0 -fno-pie -no-pie"; do
    P=$D/tp$(echo $v | tr -d ' ')
    if ! $CC $v -g -o "$P" "$KP_SRCDIR/t/data/trap-prog.c" "$KP_SRCDIR/t/data/trap-asm.S" $RT 2>"$D/cc.err"; then
        ok 1 "$v: build the fixture ($(head -n 1 "$D/cc.err"))"; continue
    fi
    want=$("$P"); cp "$P" "$P.orig"
    "$KPREWRITE" --probe short3 --probe work --probe 'p?' "$P" >"$D/report" 2>"$D/err"
    like '^[0-9a-f]+  k  short3\+0x0  \[INT3\] not-relocatable' "$(cat "$D/report")" "$v: short3 is an int3 probe"
    like 'wrote .*: 10 probes baked' "$(cat "$D/err")" "$v: int3 probes are baked too"
    is "$want" "$("$P")" "$v: output identical with int3 and optimized probes"
    is "regs ok" "$("$P" regs 2>&1)" "$v: int3 pre_handler sees rdi, rsi, ip; a changed rdi takes effect"
    is "redirect ok" "$("$P" redirect 2>&1)" "$v: a pre_handler that sets ip and returns 1 redirects the thread"
    is "chain ok" "$("$P" chain 2>&1)" "$v: raise(SIGTRAP) and a foreign int3 reach the program's handler; probes do not"
    is "sighandler ok" "$("$P" sighandler 2>&1)" "$v: a probe hit in a signal handler on sigaltstack, all signals blocked"
    "$P.orig" foreign >/dev/null 2>&1; orig_rc=$?
    "$P" foreign >/dev/null 2>&1; rc=$?
    is "133 133" "$orig_rc $rc" "$v: a foreign int3 with no handler gets the default action (SIGTRAP)"
    if [ -e /dev/fuse ] || command -v fusermount3 >/dev/null; then
        is "post ok" "$("$P" post 2>&1)" "$v: a post_handler unoptimizes its point, runs after the instruction; unregister re-optimizes"
        # a FLUSH in exit used to wait, uninterruptibly, for the process's own
        # dead server thread: bounded here, the stuck connection aborted
        "$P" held >"$D/held.out" 2>&1 & hp=$!
        (sleep 30 >/dev/null 2>&1; [ -d /proc/$hp/task ] && grep -qs request_wait_answer /proc/$hp/task/*/wchan || exit 0
         echo "hung in exit: a FUSE request waits for its own server" >>"$D/held.out"
         [ -e /sys/fs/fuse/connections/abort ] || ls /sys/fs/fuse/connections/*/abort >/dev/null 2>&1 ||
             mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
         for c in /sys/fs/fuse/connections/*/; do [ "$(cat "$c/waiting")" = 0 ] || echo 1 >"$c/abort"; done) &
        wd=$!   # (its sleep must not hold the TAP pipe open once it is killed)
        wait $hp; kill $wd 2>/dev/null; wait $wd 2>/dev/null
        is "held ok" "$(cat "$D/held.out")" "$v: a program that exits with its list file open ends at once; nothing leaked (under ASan)"
    else
        skip "$v: post (needs the control directory: no FUSE here)"
        skip "$v: held (needs the control directory: no FUSE here)"
    fi
done
P=$D/tp-O2-fPIE-pie
is "$("$P.orig")" "$(KPREWRITE_CTL_DIR=/proc/none "$P")" "no control directory can be made: the program runs normally"
done_testing
