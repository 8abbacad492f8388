#!/bin/sh
# /init of the check-kernel guest. The host fills in the probe names
# (@ENTRY@, @SYSCALL@, @MID@, @INT3@: the instruction before
# do_sys_openat2's call of getname) and reads the serial log:
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
# delta SPEC ACTION: the hit count's growth over N actions, in $got
# (kdrive runs in the shell itself, its output to a file: inside $(...) the
# shell would read(2) the substitution's pipe, and on two CPUs that read may
# begin only after kdrive has read its first count -- one read too many)
delta() { kdrive "$1" "$2" $N > /tmp/delta && got=$(awk '{ print $5 }' /tmp/delta); }
# expect SPEC ACTION WANT DESC
expect() {
    got=; delta "$1" "$2"
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
# what the (emulated) CPU turned on, for the host's log
for f in /sys/devices/system/cpu/vulnerabilities/retbleed /sys/devices/system/cpu/vulnerabilities/spectre_v2; do
    [ ! -f $f ] || echo "KPRW-INFO vulnerabilities/${f##*/}: $(cat $f)"
done
dmesg | grep -iE 'ibt|call depth|retbleed|spectre v2' | sed 's/^\[[ 0-9.]*\] /KPRW-INFO dmesg: /'
# the kernel's kprobes KUnit suite (lib/test_kprobes.c), where it was built:
# it ran at boot; its lines verbatim, for the host
dmesg | sed 's/^\[[ 0-9.]*\] //' |
    awk '/KTAP version 1/ { on = 1 } on { print "KPRW-KUNIT " $0 } on && /^ok [0-9]+ (- )?kprobes_test/ { exit }'
cat $K/list
check "list has the @NPOINTS@ baked points" [ "$(wc -l < $K/list)" = @NPOINTS@ ]
check "@NOPT@ of them optimized" [ "$(listed '\[OPTIMIZED\]')" = @NOPT@ ]
check "@NRET@ of them return probes (r): @ENTRY@, @SYSCALL@, @SIGNAL@, @TICK@, ksys_read (and the KUnit suite's)" [ "$(listed '^[0-9a-f]*  r  ')" = @NRET@ ]
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

# @RELOC@ (cpuinfo_open's entry, or the instruction after its fentry
# call): its DCR held a KASLR relocation (mov $cpuinfo_op, %rsi), moved to
# the detour's copy (the bzImage boot relocates that copy); the runtime adds
# KASLR's offset to the original bytes it puts back. Opening /proc/cpuinfo
# runs it
relo() { # WANT-HITS DESC
    kdrive @RELOC@ openread:/proc/cpuinfo $N > /tmp/relo
    h=$(awk '/^delta/ { print $5 }' /tmp/relo) same=$(awk '/^same/ { print $2 }' /tmp/relo)
    check "$2: @RELOC@ $h hits, /proc/cpuinfo read alike $same times" [ "$h" = "$1" -a "$same" = $N ]
}
check "@RELOC@ (a KASLR relocation moved to its copy) is [OPTIMIZED]" grep -q "@RELOC@  \[OPTIMIZED\]" $K/list
relo $N "relocation moved: the detour's copy"
echo "disable @RELOC@" > $K/control
relo 0 "relocation moved: disabled, the original bytes with KASLR's offset"
echo "enable @RELOC@" > $K/control
echo "unoptimize @RELOC@" > $K/control
relo $N "relocation moved: unoptimized (int3, then the copy)"
echo "optimize @RELOC@" > $K/control
relo $N "relocation moved: optimized again"

# @RETSITE@ (read_null's entry: xor %eax, %eax, then the return): /dev/null's
# read. Where the kernel has return thunks (@RETMOVED@ = 1), its jmp
# __x86_return_thunk is a .return_sites entry in the DCR, moved to the
# detour's copy, which the kernel patched at boot; the runtime puts the
# bytes the kernel would have patched the site to back on disable.
# Unpatched, the thunk would warn. (Without return thunks the function is
# 3 bytes long: int3.)
retsite() { # WANT-HITS DESC
    kdrive @RETSITE@ pread:/dev/null $N > /tmp/rets
    h=$(awk '/^delta/ { print $5 }' /tmp/rets) z=$(awk '/^zero/ { print $2 }' /tmp/rets)
    check "$2: @RETSITE@ $h hits, $z reads of /dev/null returned 0" [ "$h" = "$1" -a "$z" = $N ]
}
if [ @RETMOVED@ = 1 ]; then
    check "@RETSITE@ (a return site moved to its copy) is [OPTIMIZED]" grep -q "@RETSITE@  \[OPTIMIZED\]" $K/list
    retsite $N "return site moved: the detour's copy, patched at boot"
    echo "disable @RETSITE@" > $K/control
    retsite 0 "return site moved: disabled, the site as the kernel would have patched it"
    echo "enable @RETSITE@" > $K/control
    echo "unoptimize @RETSITE@" > $K/control
    retsite $N "return site moved: unoptimized (int3, then the copy)"
    echo "optimize @RETSITE@" > $K/control
    retsite $N "return site moved: optimized again"
else
    retsite $N "no return thunks: /dev/null's read"
fi
check "no 'Unpatched return thunk' warning" sh -c "! dmesg | grep -q 'Unpatched return thunk'"

echo 0 > $K/optimization
check "optimization 0: nothing optimized" [ "$(listed '\[OPTIMIZED\]')" = 0 ]
check "optimization reads 0" [ "$(cat $K/optimization)" = 0 ]
all "optimization 0" 1
echo 1 > $K/optimization
check "optimization 1: optimized again" [ "$(listed '\[OPTIMIZED\]')" = @NOPT@ ]
all "optimization 1" 1

echo 0 > $K/enabled
all "enabled 0" 0
echo 1 > $K/enabled
all "enabled 1" 1
check "profile lists the @NPOINTS@ points" [ "$(wc -l < $K/profile)" = @NPOINTS@ ]

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
    check "$1: regs->ip is the probe address + 1 at every hit (kernel: the same, past the int3)" [ "$(field ip-ok)" = "$(field hits)" ]
    check "$1: regs->sp is the probed code's stack at every hit" [ "$(field sp-ok)" = "$(field hits)" ]
    check "$1: regs->si is read(2)'s buffer ($buf)" [ "$(field si)" = "$buf" ]
}
check "selftest: register_kprw_kprobe on @ENTRY@" sh -c "echo 'kprw @ENTRY@' > $S"
handler "handler, optimized"
echo "unoptimize @ENTRY@" > $K/control
echo "kprw @ENTRY@" > $S
handler "handler, int3 path"
echo "optimize @ENTRY@" > $K/control
# a post_handler: the point runs unoptimized (int3, the instruction
# single-stepped out of line) while one is registered
check "post_handler: register on @ENTRY@" sh -c "echo 'post @ENTRY@' > $S"
check "post_handler: the point runs unoptimized meanwhile" sh -c "! grep -q '@ENTRY@  \[OPTIMIZED\]' $K/list"
echo "optimize @ENTRY@" > $K/control
check "post_handler: optimize leaves it unoptimized while one is there" sh -c "! grep -q '@ENTRY@  \[OPTIMIZED\]' $K/list"
handler "pre and post handlers"
check "post_handler: ran after every pre_handler ($(field posts) of $(field hits))" [ "$(field posts)" = "$(field hits)" ]
check "post_handler: regs->ip the next instruction in place at each run (kernel: the same)" [ "$(field post-ip-ok)" = "$(field posts)" ]
check "post_handler: the flags as the pre_handler saw them (TF clear) at each run" [ "$(field post-flags-ok)" = "$(field posts)" ]
echo off > $S
check "post_handler unregistered: optimized again" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list
echo "post-refused @FLAGFN@" > $S
snap
check "post_handler: refused (-EOPNOTSUPP) on @FLAGFN@, whose first instruction touches the trap or interrupt flag" \
    [ "$(field post-refused)" = -95 ]
echo off > $S
# The kprobes API's behaviours beside the kernel's (kernel/kprobes.c and
# arch/x86/kernel/kprobes/, 6.1 and 6.12 alike), from the self-test's
# selftest-api: each line is ours, and the check states the kernel's answer
# (where ours differs on purpose, why). errno: EINVAL 22, ENOENT 2,
# EILSEQ 84, E2BIG 7
A=$K/selftest-api
asnap() { report=$(cat $A); }
api() { # NAME WANT WHAT
    v=$(echo "$report" | awk -v k="$1" '$1 == k { print $2; exit }')
    if [ "$v" = "$2" ]; then echo "KPRW-OK API: $3: $1 $v"; else echo "KPRW-NOTOK API: $3: $1 got $v, want $2"; fi
}
api_checks() {
    echo "static $(echo @ENTRY@ | sed 's/+.*//') @MID@ $SYSCALL_SYM strncpy_from_user" > $A
    asnap
    echo "$report" | sed 's/^/api: /'
    api null-register -22 "register(NULL): -EINVAL (kernel: oops, NULL dereference)"
    api null-unregister 0 "unregister(NULL), unregister_kprobes(NULL, 1): nothing (kernel: oops)"
    api null-enable -22 "enable(NULL): -EINVAL (kernel: oops)"
    api null-disable -22 "disable(NULL): -EINVAL (kernel: oops)"
    api null-array -22 "register_kprobes(NULL, 1): -EINVAL (kernel: oops)"
    api zero-num -22 "register_kprobes(kps, 0): -EINVAL (kernel: -EINVAL)"
    api null-in-array -22 "register_kprobes() of { kp, NULL }: -EINVAL (kernel: oops)"
    api null-in-array-rolled-back 1 "register_kprobes() that fails: those before unregistered (kernel: the same)"
    api null-kretprobe -22 "register_kretprobe(NULL): -EINVAL (kernel: oops)"
    api null-get-kretprobe 1 "get_kretprobe(NULL): NULL (kernel: oops)"
    api both -22 "symbol_name and addr both: -EINVAL (kernel: -EINVAL, _kprobe_addr())"
    api neither -22 "neither symbol_name nor addr: -EINVAL (kernel: -EINVAL)"
    api no-symbol -2 "no such symbol: -ENOENT (kernel: -ENOENT)"
    api inside-insn -84 "an offset inside an instruction: -EILSEQ (kernel: -EILSEQ, can_probe())"
    api inside-insn-addr-set 1 "kp->addr set by a register that failed (kernel: the same)"
    api data -22 "an address in data: -EINVAL (kernel: -EINVAL, not text)"
    api not-baked -2 "an instruction where no point was baked: -ENOENT (kernel: 0, it can plant one anywhere)"
    api past-end 0 "SYM+OFF past SYM's end, at the next function's point: 0 (kernel: 0, the address is what counts)"
    api past-end-addr-ok 1 "SYM+OFF past SYM's end: kp->addr that point's (kernel: the same)"
    api entry-register 0 "register at a function's entry (kernel: 0)"
    api entry-flags 16 "flags after register: a caller's GONE and bit 30 dropped, ON_FUNC_ENTRY set (kernel: 16, the same)"
    api entry-nmissed 0 "nmissed 99 before register: 0 after (kernel: the same)"
    api entry-addr-ok 1 "kp->addr after register by symbol: the point's, past endbr64 if any (kernel: the same)"
    api registered-twice -22 "register of a registered kprobe: -EINVAL (kernel: -EINVAL, and a warning)"
    api again-by-symbol -22 "registered again after unregister, by symbol_name: -EINVAL (kernel: -EINVAL, addr is set now)"
    api again-by-addr 0 "registered again after unregister, by addr: 0 (kernel: 0)"
    api unregistered-addr-cleared 1 "unregister of a kprobe never registered clears its addr (kernel: the same)"
    api unregistered-enable -22 "enable of a kprobe not registered: -EINVAL (kernel: -EINVAL)"
    api unregistered-disable -22 "disable of a kprobe not registered: -EINVAL (kernel: -EINVAL)"
    api mid-disabled-flags 2 "registered DISABLED mid-function: flags 2 (kernel: the same)"
    api disarm 0101 "a post_handler kprobe takes the point off its jump, disabled gives it back, enabled takes it (kernel: disable_kprobe() disarms)"
    api kret-data-4097 -7 "kretprobe data_size 4097: -E2BIG (kernel: -E2BIG, KRETPROBE_MAX_DATA_SIZE)"
    api kret-data-4097-maxactive 0 "maxactive unchanged by a register that failed before setting it (kernel: the same)"
    api kret-data-wrap -7 "kretprobe data_size (size_t)-64: -E2BIG (kernel: -E2BIG)"
    api kret-register 0 "kretprobe with maxactive 0 (kernel: 0)"
    api kret-maxactive-default 10 "maxactive 0 becomes max(10, 2 x CPUs), written back (kernel: the same)"
    api kret-flags 16 "kretprobe's kp.flags after register: ON_FUNC_ENTRY (kernel: 16)"
    api kret-post-cleared 1 "kretprobe's kp.post_handler cleared (kernel: the same)"
    api kret-twice -22 "register of a registered kretprobe: -EINVAL (kernel: -EINVAL)"
    api kret-maxactive-negative 10 "maxactive -3: the default (kernel: the same, maxactive <= 0)"
    api kret-no-handler 0 "kretprobe with no handler at all: 0 (kernel: 0)"
    api kret-not-entry -22 "kretprobe mid-function: -EINVAL (kernel: -EINVAL, kprobe_on_func_entry())"
    api kret-not-baked -2 "kretprobe where no SYM%return was baked: -ENOENT (kernel: 0)"
    api kret-not-baked-maxactive 10 "maxactive set by a register that failed after setting it (kernel: the same)"
    api kret-unregistered-addr-cleared 1 "unregister of a kretprobe never registered clears kp.addr (kernel: oops, rethook_free(NULL))"
    api kret-40-registrations 0 "a kretprobe registered and unregistered 40 times (kernel: 0)"
    api kret-holders-left 0 "and no instance pool is left (kernel: the same)"
    # handlers on one point, newest first, on either path
    for how in optimized int3; do
        [ $how = int3 ] && echo "unoptimize @SYSCALL@" > $K/control
        echo "order @SYSCALL@" > $A
        kdrive @SYSCALL@ getpid 1 > /dev/null
        asnap
        api order BA "$how: kprobes A then B on one point run B, A (kernel: the same, newest first)"
    done
    # a pre_handler that sets regs->ip: on the int3 path, returning 1 sends
    # the code there and no older handler runs; returning 0 (ip changed)
    # is not honoured; on a jump both are ignored (optprobes)
    redirect() { # RET WANT-GETPID WANT-OLDER-RAN WHAT
        echo "redirect @SYSCALL@ $1" > $A
        kdrive @SYSCALL@ getpid 3 > /tmp/out
        asnap
        p=$(awk '/^getpid/ { print $2 }' /tmp/out)
        [ "$2" = pid ] && w=$p || w=$2
        check "$4 (getpid $p, older handler ran $(field count-ran) of 3)" \
            [ "$p $(field redirect-ran) $(field count-ran)" = "$w 3 $3" ]
    }
    redirect 1 4242 0 "int3 path: a pre_handler that sets regs->ip and returns 1 sends the code there; the older handler does not run (kernel: the same)"
    redirect 0 pid 3 "int3 path: regs->ip changed, 0 returned: the instruction runs as if unchanged (kernel: the same)"
    echo "optimize @SYSCALL@" > $K/control
    redirect 1 pid 3 "jump: regs->ip changed, 1 returned: both ignored, every handler runs (kernel: the same, optprobes)"
    echo off > $A
    # registering and unregistering while another CPU hits the point, every
    # other registration with a post_handler (int3, then the jump again)
    (echo "race @SYSCALL@ 40" > $A) & rp=$!
    kdrive @SYSCALL@ getpid 100000 > /tmp/race
    wait $rp
    asnap
    check "40 registrations and unregistrations while another CPU hits: each counted ($(awk '{ print $5 }' /tmp/race) of 100000), none failed" \
        [ "$(awk '{ print $5 }' /tmp/race) $(field race-failures)" = "100000 0" ]
    echo off > $A
}
api_checks

# jprobes and fault_handler (kprw_ names: the kernel dropped both), as the
# kprobes documents of their time describe them, from selftest-legacy
L=$K/selftest-legacy
lsnap() { report=$(cat $L); }
nmissed() { awk -v s="  $1  " 'index($0, s) { print $NF; exit }' $K/list; }
E_FN=$(echo @ENTRY@ | sed 's/+.*//')
legacy_checks() {
    check "jprobe: register_kprw_jprobe on $E_FN" sh -c "echo 'jprobe $E_FN' > $L"
    check "jprobe: its point runs unoptimized meanwhile (only a trap sends the code to the handler)" \
        sh -c "! grep -q '@ENTRY@  \[OPTIMIZED\]' $K/list"
    m0=$(nmissed @SYSCALL@)
    kdrive @ENTRY@ read777 $N > /tmp/out
    m1=$(nmissed @SYSCALL@)
    buf=$(awk '/^buffer/ { print $2 }' /tmp/out) full=$(awk '/^full/ { print $2 }' /tmp/out)
    lsnap
    echo "$report" | sed 's/^/legacy: /'
    check "jprobe: its handler, with vfs_read()'s signature, got the arguments of each read(2) of 777 bytes (count 777, buf $buf)" \
        [ "$(field hits777) $(field count) $(field buf)" = "$N 777 $buf" ]
    check "jprobe: each read(2) then ran as it should ($full of $N filled with zeros)" [ "$full" = $N ]
    check "jprobe: a probe hit in its handler is missed (@SYSCALL@'s nmissed +$((m1 - m0)), $(field nests) calls)" \
        [ "$((m1 - m0)) $(field nests)" = "$N $N" ]
    check "jprobe: a second one on the point is refused (-EEXIST, as the kernel's was)" [ "$(field second)" = -17 ]
    echo off > $L
    check "jprobe unregistered: the point is optimized again" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list
    echo "jprobe-fault $E_FN" > $L
    kdrive @ENTRY@ read777 $N > /tmp/out
    full=$(awk '/^full/ { print $2 }' /tmp/out)
    lsnap
    check "jprobe: a page fault in its handler went to the jprobe's fault_handler (trap 14), which sent it on; every read(2) ran ($full)" \
        [ "$(field faults) $(field trapnr) $(field resumed) $full" = "$N 14 $N $N" ]
    echo off > $L
    # a fault in a kprobe's handler: kdrive's reads and its 2 list reads
    fault_case() { # MODE WANT-TRAP WHAT
        echo "fault @ENTRY@ $1" > $L
        kdrive @ENTRY@ read $N > /dev/null
        lsnap
        echo "$report" | grep '^fault' | sed "s/^/legacy $1: /"
        check "fault_handler: $3: trap $(field trapnr), handled (returned 1, the handler went on past it), kp->nmissed counted each (kernel before 5.14: the same)" \
            [ "$(field faults) $(field trapnr) $(field resumed) $(field nmissed)" = "$((N + 2)) $2 $((N + 2)) $((N + 2))" ]
        echo off > $L
    }
    fault_case pf 14 "a page fault in a pre_handler, jump-optimized"
    echo "unoptimize @ENTRY@" > $K/control
    fault_case pf 14 "a page fault in a pre_handler, int3 path"
    echo "optimize @ENTRY@" > $K/control
    fault_case gp 13 "a general protection fault in a pre_handler"
    fault_case post 14 "a page fault in a post_handler"
    n0=$(dmesg | wc -l)
    echo "fault @ENTRY@ fixup" > $L
    kdrive @ENTRY@ read 10 > /dev/null
    lsnap
    check "fault_handler returning 0: the fault takes its course, the exception-table fixup (copy_from_kernel_nofault() gave -EFAULT at each of 12 hits; kernel before 5.14: the same)" \
        [ "$(field faults) $(field trapnr) $(field copy-rc) $(field nmissed)" = "12 14 -14 12" ]
    check "fault_handler: the documents' example line (trap #14)" \
        sh -c "dmesg | tail -n +$((n0 + 1)) | grep -q 'fault_handler: p->addr = 0x[0-9a-f]*, trap #14\$'"
    echo off > $L
}
legacy_checks

# return probes (register_kprw_kretprobe), from the self-test's
# selftest-kret: its entry handler stores a mark and the entry's sp in ri->data,
# its return handler checks regs and counts
R=$K/selftest-kret
rsnap() { report=$(cat $R); }
SIG_SYM=$(echo @SIGNAL@ | sed 's/+.*//')
TICK_SYM=$(echo @TICK@ | sed 's/+.*//')
kret_getpid() { # DESC: N getpid(2) in kdrive, each followed to its return
    kdrive @SYSCALL@ getpid $N > /tmp/out & kp=$!
    wait $kp
    rsnap
    echo "$report" | sed "s/^/kret $1: /"
    check "$1: the entry and return handlers ran at each getpid(2)" [ "$(field entries) $(field returns)" = "$N $N" ]
    check "$1: regs->ip was the call's return address at each return" [ "$(field ip-ok)" = $N ]
    check "$1: regs->sp was the caller's stack at each return" [ "$(field sp-ok)" = $N ]
    check "$1: ri->data held what the entry handler stored" [ "$(field data-ok)" = $N ]
    check "$1: regs_return_value() was the pid" [ "$(field ax-tgid)" = $N ]
    check "$1: getpid(2) returned kdrive's pid ($kp)" grep -qx "getpid $kp" /tmp/out
    check "$1: every instance is back, none missed" [ "$(field free) $(field nmissed)" = "4 0" ]
}
check "kretprobe: register on $SYSCALL_SYM%return" sh -c "echo 'follow $SYSCALL_SYM 4' > $R"
kret_getpid "kretprobe, optimized entry"
echo "unoptimize @SYSCALL@" > $K/control
echo "follow $SYSCALL_SYM 4" > $R
kret_getpid "kretprobe, int3 entry"
echo "optimize @SYSCALL@" > $K/control
echo "follow $SYSCALL_SYM 4 4242" > $R
kdrive @SYSCALL@ getpid 3 > /tmp/out
check "kretprobe: a return handler's write to regs->ax is what the caller gets" grep -qx "getpid 4242" /tmp/out
check "kretprobe: a point baked without %return is refused (-ENOENT)" sh -c "! echo 'follow strncpy_from_user' > $R"
# The checks below count every read(2) in the guest, the shell's own reads
# of this script included: each runs as a function, which the shell read
# whole before it runs.
# a handler running on the CPU (a kprobe on @MID@ that calls
# __x64_sys_getpid()): the return probe misses each of those calls
kret_nested() {
    echo "follow $SYSCALL_SYM 4" > $R
    echo "nest @MID@" > $R
    echo mark > $R
    kdrive @MID@ read $N > /dev/null
    echo mark > $R
    rsnap
    echo "$report" | sed "s/^/kret nested: /"
    check "kretprobe: missed while another handler runs: kp.nmissed grew by kdrive's reads and its 2 list reads, nmissed did not (kernel: the same, kprobes_inc_nmissed_count())" \
        [ "$(field kp-marked) $(field marked)" = "$((N + 2)) 0" ]
    check "kretprobe: each call from inside the handler was missed, none followed" \
        [ "$(field nests) $(field entries)" = "$(field kp-nmissed) 0" ]
}
# every instance taken: a read(2) blocked in a fifo holds the only one
kret_exhausted() {
    mkfifo /tmp/fifo
    exec 3<>/tmp/fifo
    echo "follow vfs_read 1" > $R
    cat /tmp/fifo > /tmp/cat.out & cat=$!
    sleep 1
    rsnap
    check "maxactive 1: the blocked read(2) holds the only instance" [ "$(field free) $(field entries)" = "0 1" ]
    echo mark > $R
    kdrive @ENTRY@ read $N > /dev/null
    echo mark > $R
    rsnap
    check "maxactive 1: every read(2) meanwhile is missed: nmissed grew by N + 2, kp.nmissed did not (kernel: the same)" [ "$(field marked) $(field kp-marked)" = "$((N + 2)) 0" ]
    echo hello >&3
    sleep 1
    rsnap
    check "maxactive 1: the blocked read returned through the probe (1 return; the data passed)" \
        sh -c "[ '$(field returns) $(field data-ok)' = '1 1' ] && grep -qx hello /tmp/cat.out"
    echo off > $R
    rsnap
    check "unregistered while a call it followed is blocked: its instances stay (holders $(field holders))" [ "$(field holders)" = 1 ]
    echo bye >&3
    sleep 1
    check "unregistered while a call it followed is blocked: the call returns normally" \
        sh -c "grep -qx bye /tmp/cat.out && kill -0 $cat"
    # (freed by a work the last return queues: waited for, up to 20 s)
    i=0
    while rsnap && [ "$(field holders)" != 0 ] && [ $i -lt 20 ]; do sleep 1; i=$((i + 1)); done
    check "its instances are freed when that call is back, with no registration since (kernel: the same, rethook frees them as they return)" \
        [ "$(field holders)" = 0 ]
    check "registered again on the same point" sh -c "echo 'follow vfs_read 3' > $R"
    rsnap
    echo "$report" | sed "s/^/kret again: /"
    # (while the report is made, cat's read(2) of it is followed, and the
    # shell's read(2) of cat's output too if it began already: on two CPUs
    # it may not have)
    check "registered again: its 3 instances free or taken by the reads of the report ($(field entries) taken)" \
        sh -c "[ $(( $(field free) + $(field entries) )) = 3 ] && [ $(field entries) -ge 1 ] && [ $(field entries) -le 2 ]"
    kill $cat; wait $cat
    echo off > $R
}
# disable_kretprobe() while a call it followed is blocked: the call's
# return handler runs still, later calls are not followed (the kernel's
# kretprobe_rethook_handler() does not look at the flag)
kret_disable_inflight() {
    echo "follow vfs_read 1" > $R
    cat /tmp/fifo > /tmp/cat.out & cat=$!
    sleep 1
    echo disable > $R
    rsnap
    check "disabled with a call in flight: the blocked read(2) was followed (entries $(field entries))" [ "$(field entries)" = 1 ]
    echo again >&3
    sleep 1
    rsnap
    check "disabled with a call in flight: its handler ran at the return, the read(2)s after were not followed (kernel: the same)" \
        sh -c "[ '$(field entries) $(field returns) $(field data-ok)' = '1 1 1' ] && grep -qx again /tmp/cat.out"
    check "enable_kprw_kretprobe() again" sh -c "echo enable > $R"
    kill $cat; wait $cat
    echo off > $R
}
# an entry_handler that returns non-zero: the call is not followed, and not
# missed either (the kernel's pre_handler_kretprobe() recycles the instance)
kret_refused() {
    echo "refuse $SYSCALL_SYM 4" > $R
    kdrive @SYSCALL@ getpid $N > /tmp/out
    rsnap
    check "entry_handler returning 1: no call followed, none missed, every instance free (kernel: the same)" \
        [ "$(field entries) $(field returns) $(field nmissed) $(field kp-nmissed) $(field free)" = "$N 0 0 0 4" ]
    echo off > $R
}
# tasks that die inside a followed call (a fatal signal: get_signal()
# never returns): their instances come back when the tasks are freed
kret_task_exit() {
    # (enough instances for all of them: a dead task's come back only
    # after it is reaped and a grace period has passed)
    echo "follow $SIG_SYM 8" > $R
    for i in 1 2 3 4 5; do
        sleep 30 & p=$!
        kill $p; wait $p
    done
    i=0
    while [ $i -lt 20 ]; do
        rsnap
        [ "$(field free)" = 8 ] && break
        read -t 1 x <&3; i=$((i + 1))
    done
    echo "$report" | sed "s/^/kret task exit: /"
    check "task exit: 5 tasks killed inside get_signal(): their instances are back" [ "$(field free)" = 8 ]
    # (the shell's own get_signal() calls, for SIGCHLD, return)
    check "task exit: the 5 killed tasks' calls were followed and never returned (entries $(field entries), returns $(field returns))" \
        [ "$(( $(field entries) - $(field returns) )) $(field nmissed)" = "5 0" ]
    echo off > $R
    exec 3>&-
}
# two CPUs at once: two kdrive processes calling getpid(2), each followed
kret_smp() {
    echo "follow $SYSCALL_SYM 8" > $R
    kdrive @SYSCALL@ getpid $N > /tmp/out1 & a=$!
    kdrive @SYSCALL@ getpid $N > /tmp/out2 & b=$!
    wait $a; wait $b
    rsnap
    echo "$report" | sed "s/^/kret smp: /"
    check "2 CPUs: both processes' calls followed, each return checked (entries, returns, ip, sp, data, pid)" \
        [ "$(field entries) $(field returns) $(field ip-ok) $(field sp-ok) $(field data-ok) $(field ax-tgid) $(field nmissed)" = \
          "$((2 * N)) $((2 * N)) $((2 * N)) $((2 * N)) $((2 * N)) $((2 * N)) 0" ]
    check "2 CPUs: each got its own pid" sh -c "grep -qx 'getpid $a' /tmp/out1 && grep -qx 'getpid $b' /tmp/out2"
    echo off > $R
}
# hard interrupts: the timer's @TICK@, called from the tick on each CPU
kret_irq() {
    echo "follow $TICK_SYM 8" > $R
    read -t 1 x <&3
    echo off > $R
    rsnap
    echo "$report" | sed "s/^/kret irq: /"
    # (a call in flight when it was unregistered returns without its handler)
    r=$(field returns) good=0
    [ "$(field irq-entries)" -gt 0 ] && [ "$(field entries)" = "$(field irq-entries)" ] &&
        [ "$(field irq-returns) $(field ip-ok) $(field sp-ok) $(field data-ok)" = "$r $r $r $r" ] &&
        [ $(( $(field entries) - r )) -le 2 ] && good=1
    check "interrupts: $TICK_SYM followed in hard interrupts ($(field irq-entries) calls), each return checked" [ $good = 1 ]
}
kret_nested
kret_exhausted
kret_disable_inflight
kret_refused
kret_task_exit
kret_smp
exec 3<>/tmp/fifo
kret_irq
exec 3>&-
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
E=$(echo @ENTRY@ | sed 's/+0x[04]$//')   # vfs_read
EA=@ENTRY@                                # vfs_read+0x0 (+0x4 after endbr64), as %pS prints it
# SYM+0xOFF + 1: a handler's regs->ip (past the int3, as the kernel's kprobes give it)
plus1() { echo "${1%+0x*}+0x$(printf %x $((0x${1##*+0x} + 1)))"; }
EA1=$(plus1 $EA)
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
check "$u: stack_trace_save_regs(regs) starts at regs->ip, $EA1" starts regs $EA1
if [ "$U" = orc ]; then
    check "$u: stack_trace_save_regs(regs) goes on to ksys_read and the system call entry" eval 'after regs $E ksys_read && ends regs $END_'
else
    check "$u: stack_trace_save_regs(regs) goes on without ksys_read to the system call entry" eval 'lacks regs ksys_read && ends regs $END_'
fi

echo "unoptimize @ENTRY@" > $K/control
unwind int3 @ENTRY@
check "$u: stack_trace_save() goes through the trap (asm_exc_int3) to regs->ip, $EA1" eval 'has save kprewrite_int3_handler && after save asm_exc_int3 $E && entry save $EA1'
check "$u: stack_trace_save() goes on to the system call entry" ends save $END_
if [ "$U" = orc ]; then
    check "$u: dump_stack() shows the trap's registers (RIP $EA1)" grep -q "RIP: 0010:$EA1/" /tmp/dump
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
check "$u: stack_trace_save_regs(regs) starts at regs->ip, $(plus1 @MID@), and goes on to the system call entry" eval 'starts regs $(plus1 @MID@) && ends regs $END_'
if [ "$U" = orc ]; then
    check "$u: stack_trace_save() ends at the detour" ends save kprewrite_pool_text
else
    check "$u: stack_trace_save() goes through the detour, without $M, to its caller" eval 'lacks save $M && after save kprewrite_pool_text __x64_sys_read && ends save $END_'
fi
echo off > $S
# unwinding through return probes: the trampoline took a return address
# over, and the unwinders give the real one back (integrate.sh hooks them)
# - from a return handler (vfs_read%return): at its first run in kdrive it
#   walks with stack_trace_save() (ksave) and stack_trace_save_regs() (kregs)
echo "stack $E" > $R
kdrive @ENTRY@ read 1 > /dev/null
rsnap
echo "$report" | grep -E '^k(save|regs) ' | sed "s/^/unwind return handler: /"
kn="unwind ($U), a return handler on $E"
check "$kn: stack_trace_save() goes through the trampoline to the real caller ksys_read, on to the system call entry" \
    eval 'after ksave kprewrite_kret_trampoline ksys_read && ends ksave $END_'
check "$kn: stack_trace_save_regs(regs) starts at the real return address, in ksys_read" \
    eval '[ "$(names kregs | awk "{ print \$1 }")" = ksys_read ] && ends kregs $END_'
echo off > $R
# - from a function a return probe follows: ksys_read's return address is
#   the trampoline's while a kprobe's handler walks at vfs_read+0 (int3 path)
echo "follow ksys_read 4" > $R
echo "unoptimize @ENTRY@" > $K/control
unwind "under ksys_read%return" @ENTRY@
# (ksys_read's caller: do_syscall_64, which the ORC kernels' __x64_sys_read
# jumps to ksys_read from; __x64_sys_read with frame pointers, where ksys_read
# itself is not in the %rbp chain at vfs_read+0)
if [ "$U" = orc ]; then caller="ksys_read do_syscall_64"; else caller="$E __x64_sys_read"; fi
check "$u: stack_trace_save() has ksys_read's real caller, not the trampoline ($caller)" \
    eval 'after save $caller && lacks save kprewrite_kret_trampoline && ends save $END_'
check "$u: stack_trace_save_regs(regs) too ($caller)" eval 'after regs $caller && lacks regs kprewrite_kret_trampoline'
echo "optimize @ENTRY@" > $K/control
echo off > $R
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

# a kernel with ftrace: the probes at +0 are baked past the fentry calls,
# which ftrace keeps: the probed functions stay traceable, the function
# tracer traces them while the probes count, and tracing every function
# (which patches every site ftrace knows) leaves the probes alone
T=/sys/kernel/debug/tracing
if [ -f $T/available_filter_functions ]; then
    entry_fn=$(echo @ENTRY@ | sed 's/+.*//')
    check "ftrace: $entry_fn stays traceable (in available_filter_functions)" \
        grep -qx "$entry_fn" $T/available_filter_functions
    check "ftrace: its probe is listed [FTRACE]" grep -q "@ENTRY@  \[OPTIMIZED\]\[FTRACE\]" $K/list
    check "ftrace: other functions are (vfs_write)" grep -qx vfs_write $T/available_filter_functions
    # the site past the call is SYM+0's point, not one of its own
    (echo "kprw $entry_fn+0x5" > $S) 2> /tmp/err5
    check "ftrace: $entry_fn+0x5, past the fentry call, is no point of its own (register: -ENOENT)" \
        grep -q 'No such file' /tmp/err5
    echo off > $S
    # the function tracer on the probed function alone: kdrive's N reads and
    # its 2 list reads are each one traced call and one hit
    traced() { # DESC WANT-HITS
        echo > $T/trace
        echo 1 > $T/tracing_on
        expect @ENTRY@ read $2 "$1"
        echo 0 > $T/tracing_on
        tr=$(grep -c "^ *kdrive-[0-9]* .* $entry_fn <-" $T/trace)
        check "$1: the function tracer traced kdrive's $((N + 2)) calls of $entry_fn ($tr)" [ "$tr" = $((N + 2)) ]
    }
    echo "$entry_fn" > $T/set_ftrace_filter
    echo function > $T/current_tracer
    check "ftrace: the function tracer is on $entry_fn" [ "$(cat $T/set_ftrace_filter)" = "$entry_fn" ]
    traced "ftrace: $entry_fn traced and probed" $((N + 1))
    echo "disable @ENTRY@" > $K/control
    traced "ftrace: $entry_fn traced, its probe disabled" 0
    echo "enable @ENTRY@" > $K/control
    echo "unoptimize @ENTRY@" > $K/control
    traced "ftrace: $entry_fn traced, its probe on the int3 path" $((N + 1))
    echo "optimize @ENTRY@" > $K/control
    echo nop > $T/current_tracer
    # an fentry BPF program on the probed function (the kernel has BTF):
    # the BPF trampoline on ftrace's site, the probe's jump right after it;
    # both count kbpf's N reads
    if [ -f /sys/kernel/btf/vmlinux ]; then
        hits() { awk -v p="@ENTRY@" '$3 == p { for (i = 4; i < NF; i++) if ($i == "hits") print $(i + 1) }' $K/list; }
        h0=$(hits)
        kbpf /bin/kbpf-fentry.bpf.o fentry 123 $N > /tmp/fentry 2>&1
        h1=$(hits)
        check "ftrace: an fentry BPF program on the probed $entry_fn counts kbpf's $N reads of 123 bytes ($(head -n 1 /tmp/fentry))" \
            grep -qx "fentry entries $N bytes $((123 * N))" /tmp/fentry
        check "ftrace: the probe counted them too ($((h1 - h0)): with libbpf's own reads and the list's)" [ $((h1 - h0)) -ge $N ]
    else
        check "ftrace: the kernel has BTF (/sys/kernel/btf/vmlinux), for an fentry BPF program" false
    fi
    echo 1 > $T/tracing_on
    echo > $T/set_ftrace_filter
    echo function > $T/current_tracer
    check "ftrace: the function tracer is on" [ "$(cat $T/current_tracer)" = function ]
    all "function tracer on" 1
    echo nop > $T/current_tracer
    all "function tracer off again" 1
fi

# samples/livepatch/livepatch-sample.c patches cmdline_proc_show, probed at
# +0: ftrace's handlers run first (the fentry call is the function's first
# instruction), and the patch sends the call to the new function, so the
# probe on the old one's entry gives way while the patch is enabled (the
# new function's, baked into the module, counts the calls) and fires again
# once it is disabled
lpw() { # wait for the patch's transition to end
    i=0
    while [ "$(cat $LP/transition)" != 0 ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
}
if [ -f /bin/livepatch-sample.ko ]; then
    LP=/sys/kernel/livepatch/livepatch_sample
    lp=$(grep -o 'cmdline_proc_show+0x[0-9a-f]*' $K/list | head -n 1)
    cmd0=$(cat /proc/cmdline)
    expect "$lp" openread:/proc/cmdline $N "livepatch: before the patch, /proc/cmdline"
    check "livepatch: insmod livepatch-sample.ko" insmod /bin/livepatch-sample.ko
    lpw
    check "livepatch: the patch is enabled, its transition done" [ "$(cat $LP/enabled) $(cat $LP/transition)" = "1 0" ]
    check "livepatch: /proc/cmdline is the patched function's" grep -q 'this has been live patched' /proc/cmdline
    expect "$lp" openread:/proc/cmdline 0 "livepatch: patched, the calls go to the new function (the probe gives way)"
    lpn=$(grep -o 'livepatch_cmdline_proc_show+0x[0-9a-f]*' $K/list | head -n 1)
    expect "$lpn" openread:/proc/cmdline $N "livepatch: the new function's probe (baked into the module) counts them"
    check "livepatch: cmdline_proc_show stays in available_filter_functions" \
        grep -qx cmdline_proc_show $T/available_filter_functions
    echo 0 > $LP/enabled
    lpw
    check "livepatch: the patch is disabled, /proc/cmdline the original" [ "$(cat /proc/cmdline)" = "$cmd0" ]
    expect "$lp" openread:/proc/cmdline $N "livepatch: disabled, the probe fires again"
    check "livepatch: rmmod livepatch_sample" rmmod livepatch_sample
fi

# a kernel with kprobes: the kernel's own kprobe on a disabled baked point
# (its original bytes back) is the kernel's -- every hit of its int3 goes to
# it (kprewrite's int3 handler took them for its point's, uncounted)
if [ -f /sys/kernel/debug/kprobes/list ] && [ -w "$S" ]; then
    echo "disable @SYSCALL@" > $K/control
    echo "kprobe-int3 ${SYSCALL_SYM}" > $S
    kdrive @SYSCALL@ getpid 1000 > /dev/null
    kh=$(awk '$1 == "kprobe" { print $4 }' $S)
    echo off > $S; echo "enable @SYSCALL@" > $K/control
    check "the kernel's int3 kprobe on a disabled baked point counts each of 1000 getpid(2) ($kh)" [ "${kh:-0}" -ge 1000 ]
fi

if [ @BENCH@ = 1 ]; then
    # per-hit cost on getpid(2), the same kernel and boot: baked probes
    # (optimized, int3) beside the kernel's kprobes (optprobe, int3), each with
    # an empty handler, against the probe disabled (the original code); five
    # rounds, one line each (TCG's timing is noisy: the host takes medians)
    bench() { kdrive bench getpid 20000 > /tmp/bench && awk '{ print $4 }' /tmp/bench; }
    for round in 1 2 3 4 5; do
        echo "disable @SYSCALL@" > $K/control; base=$(bench)
        echo "enable @SYSCALL@" > $K/control; echo "kprw-empty @SYSCALL@" > $S; opt=$(bench)
        echo "unoptimize @SYSCALL@" > $K/control; i3=$(bench)
        echo "optimize @SYSCALL@" > $K/control; echo off > $S
        echo "disable @SYSCALL@" > $K/control
        echo "kprobe ${SYSCALL_SYM}" > $S; sleep 1; kflag=$(grep '^kprobe' $S | awk '{ print $6 }'); kopt=$(bench)
        echo "kprobe-int3 ${SYSCALL_SYM}" > $S; ki3=$(bench)
        echo off > $S; echo "enable @SYSCALL@" > $K/control
        # return probes, empty handlers: baked (its entry optimized) beside
        # the kernel's kretprobe
        echo "empty $SYSCALL_SYM" > $R; kret=$(bench); echo off > $R
        echo "disable @SYSCALL@" > $K/control
        echo "kretprobe $SYSCALL_SYM" > $R; sleep 1; kkret=$(bench); echo off > $R
        echo "enable @SYSCALL@" > $K/control
        echo "KPRW-BENCH base $base baked-opt $opt baked-int3 $i3 kprobe-opt $kopt kprobe-int3 $ki3 baked-kret $kret kretprobe $kkret kprobe-optimized $kflag"
    done
fi

# the kernel's samples/kprobes modules, unmodified, where they were built
# (the kernel without kprobes): each probes kernel_clone; one fork between
# loading and unloading them
if [ -f /bin/kprobe_example.ko ]; then
    n0=$(dmesg | wc -l)
    check "samples: insmod kprobe_example.ko" insmod /bin/kprobe_example.ko
    check "samples: insmod kretprobe_example.ko" insmod /bin/kretprobe_example.ko
    sh -c 'sleep 0' & wait $!
    check "samples: rmmod kretprobe_example" rmmod kretprobe_example
    check "samples: rmmod kprobe_example" rmmod kprobe_example
    dmesg | tail -n +$((n0 + 1)) > /tmp/samples
    sed 's/^\[[ 0-9.]*\] //; s/^/KPRW-SAMPLE /' /tmp/samples
    check "samples: kprobe_example planted its kprobe on kernel_clone" grep -q 'Planted kprobe at ' /tmp/samples
    # (%p prints (____ptrval____) until the kernel's random pool is ready)
    P='0x([0-9a-f]+|\(____ptrval____\))'
    # (ip: the probe point + 1, kernel_clone's entry (past its endbr64
    # with IBT) past the int3, as a kernel with kprobes prints it)
    kc=$(awk '$3 ~ /^kernel_clone\+0x[04]$/ { print $1; exit }' $K/list)
    kc1=ffffffff$(printf %08x $((0x${kc#ffffffff} + 1)))
    check "samples: its pre_handler printed p->addr, ip (kernel_clone's entry + 1, $kc1, as on a kprobes kernel) and flags" \
        grep -Eq "<kernel_clone> p->addr = $P, ip = $kc1, flags = 0x[0-9a-f]+\$" /tmp/samples
    check "samples: its post_handler printed p->addr and flags" grep -Eq "<kernel_clone> p->addr = $P, flags = 0x[0-9a-f]+\$" /tmp/samples
    check "samples: kretprobe_example planted its return probe" grep -q 'Planted return probe at kernel_clone' /tmp/samples
    check "samples: it printed kernel_clone's return value (a pid) and its time" grep -Eq 'kernel_clone returned [1-9][0-9]* and took [0-9]+ ns to execute' /tmp/samples
    check "samples: both unregistered on rmmod, no instance missed" \
        sh -c "grep -q 'kprobe at .* unregistered' /tmp/samples && grep -q 'kretprobe at .* unregistered' /tmp/samples && grep -q 'Missed probing 0 instances of kernel_clone' /tmp/samples"
fi

# the legacy documents' examples (t/kernel/examples, kprw_ names): the
# jprobe example on kernel_clone, and a kprobe whose pre_handler faults with
# the documents' fault_handler, which returns 0 (the fault's own course)
if [ -f /bin/jprobe_example.ko ]; then
    n0=$(dmesg | wc -l)
    check "examples: insmod jprobe_example.ko" insmod /bin/jprobe_example.ko
    check "examples: kernel_clone runs unoptimized while the jprobe is on it" sh -c "! grep -q ' kernel_clone+0x[04]  \[OPTIMIZED\]' $K/list"
    rm -f /tmp/forked; sh -c 'echo forked > /tmp/forked' & wait $!
    check "examples: the fork under the jprobe ran" grep -qx forked /tmp/forked
    check "examples: rmmod jprobe_example" rmmod jprobe_example
    check "examples: insmod fault_example.ko" insmod /bin/fault_example.ko
    rm -f /tmp/forked; sh -c 'echo forked > /tmp/forked' & wait $!
    check "examples: the fork under the faulting pre_handler ran" grep -qx forked /tmp/forked
    check "examples: rmmod fault_example" rmmod fault_example
    dmesg | tail -n +$((n0 + 1)) > /tmp/examples
    sed 's/^\[[ 0-9.]*\] //; s/^/KPRW-EXAMPLE /' /tmp/examples
    kc=$(awk '$3 ~ /^kernel_clone\+0x[04]$/ { print $1; exit }' $K/list)
    check "jprobe example: planted on kernel_clone ($kc), unregistered" \
        sh -c "grep -q 'Planted jprobe at $kc, handler addr ' /tmp/examples && grep -q 'jprobe at $kc unregistered' /tmp/examples"
    check "jprobe example: its handler printed kernel_clone's arguments for the fork (exit_signal 17, no stack)" \
        grep -Eq 'jprobe: clone_flags = 0x[0-9a-f]+, exit_signal = 17, stack = 0x0, stack_size = 0x0$' /tmp/examples
    check "fault example: the fault_handler printed the probe's address and trap #14" grep -q "fault_handler: p->addr = 0x$kc, trap #14\$" /tmp/examples
    check "fault example: not handled, the fault took its course: the read gave -EFAULT" \
        grep -q 'pre_handler: <kernel_clone> reading past the page gave -14$' /tmp/examples
fi

# the samples' own probes, baked by the kernel build (make M=...
# KPREWRITE_PROBES=...): cleanup_module of each (int3), hit as it unloads
if [ -f /bin/kprobe_example.ko ]; then
    insmod /bin/kprobe_example.ko
    check "module build step: kprobe_example's baked cleanup_module is listed" grep -q '  cleanup_module+0x[04]  \[kprobe_example\] ' $K/list
    rmmod kprobe_example
    check "module build step: gone with its module" sh -c "! grep -q '\[kprobe_example\]' $K/list"
fi

# a module of the kernel's own, fs/binfmt_misc.ko, with probes baked into
# it: armed when it loads, hit, toggled, handlers run on its points through
# the kprobes API, forgotten when it unloads (a kprobe left on it is gone),
# armed afresh when it loads again
if [ -f /bin/binfmt_misc.ko ]; then
    M=binfmt_misc B=/proc/sys/fs/binfmt_misc
    n0=$(dmesg | wc -l)
    check "module: insmod $M.ko (probes baked)" insmod /bin/$M.ko
    check "module: the runtime armed its @MODPOINTS@ probes, @MODOPT@ optimized" \
        sh -c "dmesg | grep -q 'kprewrite: $M: @MODPOINTS@ probes armed (@MODOPT@ optimized)'"
    grep "\[$M\]" $K/list
    check "module: list shows its @MODPOINTS@ points, [$M] after the symbol" [ "$(listed "+0x[04]  \[$M\] ")" = @MODPOINTS@ ]
    check "module: load_misc_binary is a return probe (r)" grep -q "  r  @LOADMISC@  \[$M\] " $K/list
    check "module: mount -t binfmt_misc" mount -t binfmt_misc none $B
    expect @BMREAD@ pread:$B/status $N "module: pread(2) of status"
    expect @BMWRITE@ write1:$B/status $N "module: write(2) to status"
    got=$(kdrive @LOADMISC@ exec:/bin/busybox 20 | awk '{ print $5 }')
    check "module: execve(2) 20 times: @LOADMISC@ $got (binfmt_misc looks at each)" [ "$got" = 20 ]
    echo "disable $M:bm_status_read" > $K/control
    check "module: control disable $M:SYM shows [DISABLED]" grep -q "@BMREAD@  \[$M\] \[DISABLED\]" $K/list
    expect @BMREAD@ pread:$B/status 0 "module: disabled"
    echo "enable $M:bm_status_read" > $K/control
    expect @BMREAD@ pread:$B/status $N "module: enabled again"
    echo "unoptimize bm_status_read" > $K/control
    check "module: unoptimize" sh -c "! grep -q '@BMREAD@  \[$M\] \[OPTIMIZED\]' $K/list"
    expect @BMREAD@ pread:$B/status $N "module: unoptimized (int3 path)"
    echo "optimize bm_status_read" > $K/control
    check "module: optimize" grep -q "@BMREAD@  \[$M\] \[OPTIMIZED\]" $K/list
    if [ -f /bin/kprobe_example.ko ]; then
        check "module: kprobe_example symbol=bm_status_read registers on the module's point" \
            insmod /bin/kprobe_example.ko symbol=bm_status_read
        check "module: kretprobe_example func=load_misc_binary registers on its return probe" \
            insmod /bin/kretprobe_example.ko func=load_misc_binary
        check "module: a post_handler makes the point run unoptimized" \
            sh -c "! grep -q '@BMREAD@  \[$M\] \[OPTIMIZED\]' $K/list"
        kdrive @BMREAD@ pread:$B/status 1 >/dev/null
        kdrive @LOADMISC@ exec:/bin/busybox 1 >/dev/null
        rmmod kretprobe_example
    fi
    umount $B
    check "module: rmmod $M" rmmod $M
    check "module: its points left the list" [ "$(listed "\[$M\]")" = 0 ]
    if [ -f /bin/kprobe_example.ko ]; then
        check "module: kprobe_example unloads after the module it probed (its kprobe gone)" rmmod kprobe_example
    fi
    dmesg | tail -n +$((n0 + 1)) > /tmp/module
    sed 's/^\[[ 0-9.]*\] //; s/^/KPRW-MODULE /' /tmp/module
    if [ -f /bin/kprobe_example.ko ]; then
        check "module: kprobe_example's pre_handler ran at bm_status_read" grep -Eq "<bm_status_read> p->addr = [^,]*, ip = [0-9a-f]+, flags" /tmp/module
        check "module: its post_handler ran too" grep -Eq "<bm_status_read> p->addr = [^,]*, flags = 0x[0-9a-f]+\$" /tmp/module
        # (an int: -ENOEXEC in %eax, as the kernel's kretprobes print it too)
        check "module: kretprobe_example printed load_misc_binary's return (-ENOEXEC)" \
            grep -Eq 'load_misc_binary returned 4294967288 and took [0-9]+ ns to execute' /tmp/module
        check "module: no instance missed" grep -q 'Missed probing 0 instances of load_misc_binary' /tmp/module
    fi
    check "module: insmod $M.ko again" insmod /bin/$M.ko
    check "module: armed afresh: its @MODPOINTS@ points listed again" [ "$(listed "+0x[04]  \[$M\] ")" = @MODPOINTS@ ]
    check "module: counted afresh (bm_status_read: hits 0)" grep -q "  @BMREAD@  \[$M\] \[OPTIMIZED\]  hits 0  " $K/list
    check "module: rmmod again" rmmod $M
fi

# kprobe_events on baked probes, where the kernel has them (the host put
# guest-events.sh in /bin)
[ ! -f /bin/guest-events.sh ] || . /bin/guest-events.sh
# and BPF kprobe programs on them (guest-bpf.sh, kbpf, kbpf.bpf.o)
[ ! -f /bin/guest-bpf.sh ] || . /bin/guest-bpf.sh
# make bench-kernel's BPF row (guest-bpf-bench.sh), where the host put it
[ ! -f /bin/guest-bpf-bench.sh ] || . /bin/guest-bpf-bench.sh

dmesg > /tmp/dmesg
check "dmesg: the runtime armed the probes" grep -q "kprewrite: @NPOINTS@ probes armed (@NOPT@ optimized)" /tmp/dmesg
# (the self-test's dump_stack() sections aside, unless they hold one)
awk '/dump_stack from a handler \{/ { n = 0; on = 1 } on { l[n++] = $0 } !on { print }
    /\} dump_stack from a handler/ { on = 0; bad = 0; for (i = 0; i < n; i++) bad += l[i] ~ /WARNING|BUG|Oops/
        if (bad) for (i = 0; i < n; i++) print l[i] }' /tmp/dmesg > /tmp/dmesg.rest
check "dmesg: no WARNING, BUG, Oops" sh -c "! grep -E 'WARNING|BUG|Oops|Call Trace' /tmp/dmesg.rest"
grep -E 'kprewrite|WARNING|BUG|Oops' /tmp/dmesg
echo KPRW-END
reboot -f
