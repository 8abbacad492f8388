# make bench-kernel's BPF and kprobe_events rows, sourced by the guest's /init (guest-init.sh:
# check, @SYSCALL@) in the 6.1 kernels with and without kprobes: a BPF
# kprobe program (kbpf.bpf.o's on_entry, counting) on getpid(2)'s handler,
# TSC ticks per call against the original code (the point disabled). On the
# kernel without kprobes the program runs on the baked point; on the one
# with kprobes, on the kernel's kprobe (the baked point disabled, its
# original bytes back, for the kernel's optimizer). The host compares the
# two boots' overheads; five rounds, one line each. Then the same for a
# kprobe_events event with two fetch-args (below).
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
# make bench-kernel's kprobe_events row (issue 36 item 5): an event with two
# fetch-args on the same point, enabled, recording into the ring buffer;
# the same boot, rounds as above
TR=/sys/kernel/tracing
[ -f $TR/kprobe_events ] || mount -t tracefs nodev $TR
for round in 1 2 3 4 5; do
    echo "disable @SYSCALL@" > $K/control
    base=$(kdrive bench getpid 20000 | awk '{ print $4 }')
    [ $kp = kprobe ] || echo "enable @SYSCALL@" > $K/control
    echo "p:kpbench/getpid $SYSCALL_SYM a=%di b=+0(%di):u64" > $TR/kprobe_events
    echo 1 > $TR/events/kpbench/getpid/enable
    ev=$(kdrive bench getpid 20000 | awk '{ print $4 }')
    grep " $SYSCALL_SYM+" $K/list | sed 's/^/KPRW-INFO events bench: point /'
    echo 0 > $TR/events/kpbench/getpid/enable
    hits=$(awk '$1 == "getpid" { print $2 "+" $3 }' $TR/kprobe_profile)   # hits+missed (6.1 prints the name alone)
    sed 's/^/KPRW-INFO events bench: profile: /' $TR/kprobe_profile
    echo "-:kpbench/getpid" >> $TR/kprobe_events
    echo > $TR/trace
    echo "enable @SYSCALL@" > $K/control
    # kdrive bench: 5 x 20000 calls after its warm-up (the hits count both)
    # every call hit or missed, on the baked point and on the kernel's
    # kprobe (whose int3, before its optimizer ran, kprewrite took for its
    # disabled point's: a third of the calls went uncounted)
    check "events bench: round $round: the event hit or missed on each getpid(2) ($kp: $hits)" [ "$((${hits:-0}))" -ge 100000 ]
    echo "KPRW-EVBENCH $kp base $base event $ev hits $((${hits:-0}))"
done
