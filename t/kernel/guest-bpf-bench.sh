# make bench-kernel's BPF row, sourced by the guest's /init (guest-init.sh:
# check, @SYSCALL@) in the 6.1 kernels with and without kprobes: a BPF
# kprobe program (kbpf.bpf.o's on_entry, counting) on getpid(2)'s handler,
# TSC ticks per call against the original code (the point disabled). On the
# kernel without kprobes the program runs on the baked point; on the one
# with kprobes, on the kernel's kprobe (the baked point disabled, its
# original bytes back, for the kernel's optimizer). The host compares the
# two boots' overheads; five rounds, one line each.
kp=baked
[ ! -f /sys/kernel/debug/kprobes/list ] || kp=kprobe
for round in 1 2 3 4 5; do
    echo "disable @SYSCALL@" > $K/control
    base=$(kdrive bench getpid 20000 | awk '{ print $4 }')
    [ $kp = kprobe ] || echo "enable @SYSCALL@" > $K/control
    kbpf /bin/kbpf.bpf.o $SYSCALL_SYM bench 20000 > /tmp/bpfbench 2>&1
    sed 's/^/KPRW-INFO bpf bench: /' /tmp/bpfbench
    echo "enable @SYSCALL@" > $K/control
    check "bpf bench: round $round: the program counted its 5 x 20000 getpid(2) ($kp)" grep -q '^bench bpf [0-9.]* entries 100000$' /tmp/bpfbench
    echo "KPRW-BPFBENCH $kp base $base bpf $(awk '/^bench bpf/ { print $3 }' /tmp/bpfbench) optimized $(grep -c '\[OPTIMIZED\]' /tmp/bpfbench)"
done
