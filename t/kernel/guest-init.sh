#!/bin/sh
# /init of the check-kernel guest. The host fills in the probe names
# (@ENTRY@, @SYSCALL@, @MID@, @INT3@) and reads the serial log:
# every check prints "KPRW-OK desc" or "KPRW-NOTOK desc (why)".
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev; mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t debugfs none /sys/kernel/debug
K=/sys/kernel/debug/kprewrite
N=1000
SYSCALL_SYM=$(echo @SYSCALL@ | sed 's/+.*//')
check() { # DESC COMMAND...: ok when COMMAND succeeds
    d=$1; shift
    if "$@"; then echo "KPRW-OK $d"; else echo "KPRW-NOTOK $d"; fi
}
# delta SPEC ACTION: the hit count's growth over N actions
# (kdrive's output goes through a file: a reader on a pipe would read(2)
# while kdrive counts)
delta() { kdrive "$1" "$2" $N > /tmp/delta && awk '{ print $5 }' /tmp/delta; }
# expect SPEC ACTION WANT DESC
expect() {
    got=$(delta "$1" "$2")
    if [ "$got" = "$3" ]; then echo "KPRW-OK $4: $1 $got"; else echo "KPRW-NOTOK $4: $1 got $got, want $3"; fi
}
# every probe driven N times; list reads add one read (and one open) each
all() { # DESC WANT-ADD (0: disabled)
    if [ "$2" = 0 ]; then a=0 b=0; else a=$((N + 1)) b=$N; fi
    expect @ENTRY@ read $a "$1"
    expect @SYSCALL@ getpid $b "$1"
    expect @MID@ read $a "$1"
    expect @INT3@ open $a "$1"
}
listed() { grep -c "$1" $K/list; }

echo KPRW-BEGIN
cat $K/list
check "list has the 4 baked probes" [ "$(wc -l < $K/list)" = 4 ]
check "3 of them optimized" [ "$(listed '\[OPTIMIZED\]')" = 3 ]
check "the int3 probe is not" sh -c "! grep '@INT3@ .*OPTIMIZED' $K/list"
all "armed at boot" 1

echo "disable @ENTRY@" > $K/control
check "control: disable shows [DISABLED]" grep -q "@ENTRY@  \[DISABLED\]" $K/list
expect @ENTRY@ read 0 "control: disabled"
echo "enable @ENTRY@" > $K/control
expect @ENTRY@ read $((N + 1)) "control: enabled again"
check "control: enabled again is optimized again" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list

echo "unoptimize @MID@" > $K/control
check "control: unoptimize" sh -c "! grep -q '@MID@  \[OPTIMIZED\]' $K/list"
expect @MID@ read $((N + 1)) "control: unoptimized (int3 path)"
echo "optimize @MID@" > $K/control
check "control: optimize" grep -q "@MID@  \[OPTIMIZED\]" $K/list
expect @MID@ read $((N + 1)) "control: optimized again"
check "control: optimize on an int3 probe is refused" sh -c "! echo 'optimize @INT3@' > $K/control"
check "control: an unknown probe is refused" sh -c "! echo 'disable nosuchfunction' > $K/control"

echo 0 > $K/optimization
check "optimization 0: nothing optimized" [ "$(listed '\[OPTIMIZED\]')" = 0 ]
check "optimization reads 0" [ "$(cat $K/optimization)" = 0 ]
all "optimization 0" 1
echo 1 > $K/optimization
check "optimization 1: optimized again" [ "$(listed '\[OPTIMIZED\]')" = 3 ]
all "optimization 1" 1

echo 0 > $K/enabled
all "enabled 0" 0
echo 1 > $K/enabled
all "enabled 1" 1
check "profile lists the 4 probes" [ "$(wc -l < $K/profile)" = 4 ]

# handlers through the registration API (include/linux/kprewrite.h), from
# the built-in self-test (CONFIG_KPREWRITE_SELFTEST)
S=$K/selftest
# field KEY: from the report read once by snap (each read of it is a hit)
snap() { report=$(cat $S); }
field() { echo "$report" | tr ' ' '\n' | awk -v k="$1" 'prev == k { print; exit } { prev = $0 }'; }
handler() { # DESC: read777 N times through the probe with a handler registered
    kdrive @ENTRY@ read777 $N > /tmp/out
    buf=$(awk '/^buffer/ { print $2 }' /tmp/out)
    snap
    check "$1: the handler ran for each read(2) of 777 bytes" [ "$(field hits777)" = $N ]
    check "$1: regs->ip is the probe address at every hit" [ "$(field ip-ok)" = "$(field hits)" ]
    check "$1: regs->sp is the probed code's stack at every hit" [ "$(field sp-ok)" = "$(field hits)" ]
    check "$1: regs->si is read(2)'s buffer ($buf)" [ "$(field si)" = "$buf" ]
}
check "selftest: register_kprw_kprobe on @ENTRY@" sh -c "echo 'kprw @ENTRY@' > $S"
handler "handler, optimized"
echo "unoptimize @ENTRY@" > $K/control
echo "kprw @ENTRY@" > $S
handler "handler, int3 path"
echo "optimize @ENTRY@" > $K/control
echo off > $S
echo "api @ENTRY@" > $S
grep '^api' $S
check "API: -EINVAL, -ENOENT, -EBUSY, batch rollback" grep -q 'api einval 1 enoent 1 ebusy 1 batch 1 rolled-back 1' $S
# unwinding from inside a handler (doc/kernel.md, Unwinding): at its first
# run in kdrive the "stack" handler walks the stack three ways --
# stack_trace_save() (save), stack_trace_save_tsk_reliable(current)
# (reliable, rc its result), stack_trace_save_regs(regs) (regs) -- and
# calls dump_stack() between two marker lines; the checks say what the
# kernel's unwinder (ORC, or frame pointers in the nokprobes kernel) gives
unwind() { # PATH SPEC: one capture on SPEC, printed on the serial console
    echo "stack $2" > $S
    kdrive $2 read 1 > /dev/null
    snap
    echo "$report" | grep -E '^(unwind|save|reliable|regs) ' | sed "s/^/unwind $1: /"
    dmesg | awk '/dump_stack from a handler \{/ { n = 0 } { l[n++] = $0 }
        /\} dump_stack from a handler/ { m = n; for (i = 0; i < n; i++) o[i] = l[i] }
        END { for (i = 0; i < m; i++) print o[i] }' > /tmp/dump
    sed "s/^/dump $1: /" /tmp/dump
    U=$(field unwinder)
    u="unwind ($U), $1 $2"
    check "$u: the handler unwound" [ "$(field captured) $(field stacktrace)" = "1 1" ]
}
# names WALK: " sym1 sym2 ... " (offsets dropped); first WALK: sym+off/size
names() { echo "$report" | awk -v w="$1" '$1 == w { s = $3; sub(/\+.*/, "", s); printf " %s", s } END { print " " }'; }
first() { echo "$report" | awk -v w="$1" '$1 == w { print $3; exit }'; }
has() { case $(names "$1") in *" $2 "*) return 0 ;; esac; return 1; }
lacks() { ! has "$@"; }
ends() { case $(names "$1") in *" $2 ") return 0 ;; esac; return 1; }
after() { case $(names "$1") in *" $2 $3 "*) return 0 ;; esac; return 1; }   # WALK A B: B right after A
entry() { echo "$report" | grep -q "^$1 #[0-9]* $2/"; }                  # WALK SYM+OFF: in it
starts() { case $(first "$1") in "$2"/*) return 0 ;; esac; return 1; }
same() { [ "$(names reliable)" = " stack_trace_save_tsk_reliable$(names save)" ]; }   # reliable = save
rc() { [ "$(field reliable-rc)" "$@" ]; }
# dump_stack: the line of SYM (PREFIX "? " for a guess found by scanning)
dumped() { grep -q "^ $1$2+" /tmp/dump; }
# dump_stack: nothing but guesses after the walk reached SYM
guesses_after() { awk -v s=" $1+" 'index($0, s) == 1 { on = 1; next } on && /^ [^?<]/ { bad = 1 } END { exit !on || bad }' /tmp/dump; }
E=$(echo @ENTRY@ | sed 's/+0x0$//')      # vfs_read
EA=@ENTRY@                                # vfs_read+0x0, as %pS prints it
END_=entry_SYSCALL_64_after_hwframe      # where a system call's kernel stack starts
unwind optimized @ENTRY@
if [ "$U" = orc ]; then
    check "$u: stack_trace_save() ends at the detour (kprewrite_pool_text+OFF)" ends save kprewrite_pool_text
    check "$u: stack_trace_save() has neither $E nor its callers" eval 'lacks save $E && lacks save ksys_read && lacks save $END_'
    check "$u: stack_trace_save_tsk_reliable() fails (-EINVAL) at the detour" eval 'rc = -22 && ends reliable kprewrite_pool_text'
    check "$u: dump_stack() ends its walk at the detour, ksys_read only a '?' guess" eval 'guesses_after kprewrite_pool_text && dumped "? " ksys_read'
elif [ "$U" = frame-pointer ]; then
    check "$u: stack_trace_save() goes through the detour to the system call entry" eval 'has save kprewrite_pool_text && ends save $END_'
    check "$u: stack_trace_save() has neither $E nor its caller ksys_read (not in the %rbp chain at +0)" eval 'lacks save $E && lacks save ksys_read'
    check "$u: stack_trace_save_tsk_reliable() succeeds with the same (incomplete) frames" eval 'rc -gt 0 && same'
    check "$u: dump_stack() goes through the detour, ksys_read only a '?' guess" eval 'dumped "" kprewrite_pool_text && dumped "? " ksys_read && dumped "" $END_'
else
    check "$u: a known unwinder (orc or frame-pointer)" false
fi
check "$u: stack_trace_save() names the handler's caller before the detour" eval 'after save run_handlers kprewrite_pool_text || after save kprewrite_dispatch kprewrite_pool_text'
check "$u: stack_trace_save_regs(regs) starts at $EA" starts regs $EA
if [ "$U" = orc ]; then
    check "$u: stack_trace_save_regs(regs) goes on to ksys_read and the system call entry" eval 'after regs $E ksys_read && ends regs $END_'
else
    check "$u: stack_trace_save_regs(regs) goes on without ksys_read to the system call entry" eval 'lacks regs ksys_read && ends regs $END_'
fi

echo "unoptimize @ENTRY@" > $K/control
unwind int3 @ENTRY@
check "$u: stack_trace_save() goes through the trap (asm_exc_int3) to $EA" eval 'has save kprw_int3 && after save asm_exc_int3 $E && entry save $EA'
check "$u: stack_trace_save() goes on to the system call entry" ends save $END_
if [ "$U" = orc ]; then
    check "$u: dump_stack() shows the trap's registers (RIP $EA)" grep -q "RIP: 0010:$EA/" /tmp/dump
    check "$u: stack_trace_save() has ksys_read after $E" after save $E ksys_read
    check "$u: stack_trace_save_tsk_reliable() succeeds with the same frames" eval 'rc -gt 0 && same'
    check "$u: dump_stack() shows ksys_read as a frame, not a guess" dumped "" ksys_read
    check "$u: stack_trace_save_regs(regs) is the same from $E on" eval 'after regs $E ksys_read && ends regs $END_'
else
    check "$u: stack_trace_save() has no ksys_read (not in the %rbp chain at +0)" lacks save ksys_read
    check "$u: dump_stack() goes through the trap, $E and ksys_read only '?' guesses" eval 'dumped "" asm_exc_int3 && dumped "? " $E && dumped "? " ksys_read && dumped "" $END_'
    check "$u: stack_trace_save_tsk_reliable() fails (-EINVAL: kernel registers on the stack)" rc = -22
    check "$u: stack_trace_save_regs(regs) is the same from $E on" eval 'lacks regs ksys_read && ends regs $END_'
fi
echo "optimize @ENTRY@" > $K/control

# mid-function: the probed function's frame is set up
M=$(echo @MID@ | sed 's/+.*//')         # ksys_read
unwind optimized @MID@
check "$u: stack_trace_save_regs(regs) starts at @MID@ and goes on to the system call entry" eval 'starts regs @MID@ && ends regs $END_'
if [ "$U" = orc ]; then
    check "$u: stack_trace_save() ends at the detour" ends save kprewrite_pool_text
else
    check "$u: stack_trace_save() goes through the detour, without $M, to its caller" eval 'lacks save $M && after save kprewrite_pool_text __x64_sys_read && ends save $END_'
fi
echo off > $S
# the kernel's own kprobes on the same kernel
if grep -q '^kprobe' $S; then
    echo "kprobe do_sys_openat2" > $S
    expect @INT3@ open $((N + 1)) "with a kernel kprobe on do_sys_openat2"
    # the opens since: the shell's > /tmp/delta, kdrive's /dev/zero, the list
    # twice and N actions, awk's /tmp/delta, grep's $S
    kc=$(grep '^kprobe' $S | awk '{ print $4 }')
    check "the kernel kprobe counted each open(2) ($kc)" [ "$kc" = $((N + 6)) ]
    echo off > $S
fi
all "after the self-test" 1

# a kernel with ftrace: the probes at +0 took their fentry sites over, so
# ftrace does not list those functions, and tracing every other function
# (which patches every site ftrace knows) leaves the probes alone
T=/sys/kernel/debug/tracing
if [ -f $T/available_filter_functions ]; then
    entry_fn=$(echo @ENTRY@ | sed 's/+.*//')
    check "ftrace: $entry_fn is not traceable (its fentry site is the probe's)" \
        sh -c "! grep -qx '$entry_fn' $T/available_filter_functions"
    check "ftrace: other functions are (vfs_write)" grep -qx vfs_write $T/available_filter_functions
    echo function > $T/current_tracer
    check "ftrace: the function tracer is on" [ "$(cat $T/current_tracer)" = function ]
    all "function tracer on" 1
    echo nop > $T/current_tracer
    all "function tracer off again" 1
fi

if [ @BENCH@ = 1 ]; then
    # per-hit cost on getpid(2), the same kernel and boot: baked probes
    # (optimized, int3) beside the kernel's kprobes (optprobe, int3), each with
    # an empty handler, against the probe disabled (the original code); three
    # rounds, one line each (TCG's timing is noisy: the host takes medians)
    bench() { kdrive bench getpid 20000 > /tmp/bench && awk '{ print $4 }' /tmp/bench; }
    for round in 1 2 3; do
        echo "disable @SYSCALL@" > $K/control; base=$(bench)
        echo "enable @SYSCALL@" > $K/control; echo "kprw-empty @SYSCALL@" > $S; opt=$(bench)
        echo "unoptimize @SYSCALL@" > $K/control; i3=$(bench)
        echo "optimize @SYSCALL@" > $K/control; echo off > $S
        echo "disable @SYSCALL@" > $K/control
        echo "kprobe ${SYSCALL_SYM}" > $S; sleep 1; kflag=$(grep '^kprobe' $S | awk '{ print $6 }'); kopt=$(bench)
        echo "kprobe-int3 ${SYSCALL_SYM}" > $S; ki3=$(bench)
        echo off > $S; echo "enable @SYSCALL@" > $K/control
        echo "KPRW-BENCH base $base baked-opt $opt baked-int3 $i3 kprobe-opt $kopt kprobe-int3 $ki3 kprobe-optimized $kflag"
    done
fi

dmesg > /tmp/dmesg
check "dmesg: the runtime armed the probes" grep -q "kprewrite: 4 probes armed (3 optimized)" /tmp/dmesg
# (the self-test's dump_stack() sections aside, unless they hold one)
awk '/dump_stack from a handler \{/ { n = 0; on = 1 } on { l[n++] = $0 } !on { print }
    /\} dump_stack from a handler/ { on = 0; bad = 0; for (i = 0; i < n; i++) bad += l[i] ~ /WARNING|BUG|Oops/
        if (bad) for (i = 0; i < n; i++) print l[i] }' /tmp/dmesg > /tmp/dmesg.rest
check "dmesg: no WARNING, BUG, Oops" sh -c "! grep -E 'WARNING|BUG|Oops|Call Trace' /tmp/dmesg.rest"
grep -E 'kprewrite|WARNING|BUG|Oops' /tmp/dmesg
echo KPRW-END
reboot -f
