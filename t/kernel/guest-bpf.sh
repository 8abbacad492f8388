# BPF kprobe programs on baked probes (doc/kernel.md), sourced by the
# guest's /init (guest-init.sh: check, @ENTRY@, @MID@) on a kernel built
# with CONFIG_BPF_EVENTS and without CONFIG_KPROBES. kbpf (t/kernel/kbpf.c,
# libbpf) attaches kbpf.bpf.o's kprobe and kretprobe programs to vfs_read,
# first through perf's kprobe PMU, then -- the PMU hidden -- through the
# kprobe_events event and tracepoint libbpf falls back to, and makes a known
# number of read(2)s of a known size: the programs' counts, the arguments
# they fetched, bpf_get_func_ip() and the return values must be those.
TR=/sys/kernel/tracing
grep -q " $TR tracefs" /proc/mounts || mount -t tracefs nodev $TR
PMU=/sys/bus/event_source/devices/kprobe
FN=$(echo @ENTRY@ | sed 's/+.*//')
FN_RE=$(echo @ENTRY@ | sed 's/+/\\+/')
MID_RE=$(echo @MID@ | sed 's/+/\\+/')
NB=100
# (vfs_read's address as kallsyms has it: bpf_get_func_ip() gives the
# function's start, before endbr64 too)
FADDR=$(awk -v f=$FN '$3 == f { print $1; exit }' /proc/kallsyms)
# kbpfrun OUT SPEC SIZE: kbpf's NB reads of SIZE bytes, its output in OUT
# (stderr in OUT.err), its exit status in $rc
kbpfrun() { kbpf /bin/kbpf.bpf.o "$2" "$3" $NB > "$1" 2> "$1.err"; rc=$?; }
# counted OUT SIZE: the two programs' counts and fetches in OUT are exact
counted() {
    check "bpf: $3: the kprobe program counted the $NB read(2)s and read their count argument (PT_REGS_PARM3): $NB calls, $(($NB * $2)) bytes ($(awk '/^entries/ { print $2, $4 }' $1))" \
        [ "$(awk '/^entries/ { print $2, $4 }' $1)" = "$NB $(($NB * $2))" ]
    check "bpf: $3: the buffer argument (PT_REGS_PARM2) is kbpf's" \
        [ "$(awk '/^entries/ { print $6 }' $1)" = "$(awk '/^mine/ { print $3 }' $1)" ]
    check "bpf: $3: bpf_get_func_ip() is $FN's address (0x$FADDR)" [ "$(awk '/^entries/ { print $8 }' $1)" = "0x$FADDR" ]
    check "bpf: $3: the kretprobe program counted $NB returns of $2 bytes (PT_REGS_RC): $(awk '/^returns/ { print $2, $4 }' $1)" \
        [ "$(awk '/^returns/ { print $2, $4 }' $1)" = "$NB $(($NB * $2))" ]
}

check "bpf: perf has the kprobe PMU ($PMU/type: $(cat $PMU/type 2>/dev/null))" [ -f $PMU/type ]
kbpfrun /tmp/bpf $FN 333
sed 's/^/KPRW-INFO kbpf: /' /tmp/bpf /tmp/bpf.err
check "bpf: kbpf loaded and attached a kprobe and a kretprobe program on $FN (exit $rc)" [ $rc = 0 ]
check "bpf: libbpf attached them through perf's kprobe PMU" grep -qx 'attach pmu' /tmp/bpf
check "bpf: PMU: no kprobe_events event was made for them" [ "$(grep -c '^event ' /tmp/bpf)" = 0 ]
check "bpf: PMU: @ENTRY@ stayed on its jump while they were attached ([OPTIMIZED])" grep -Eq "^point [0-9a-f]+  [kr]  $FN_RE  \[OPTIMIZED\]" /tmp/bpf
counted /tmp/bpf 333 PMU

# a mid-function point (@MID@, once per read(2)): the kprobe program only;
# bpf_get_func_ip() is 0 there, as the kernel's (not a function's entry)
kbpfrun /tmp/bpfmid @MID@ 55
sed 's/^/KPRW-INFO kbpf @MID@: /' /tmp/bpfmid /tmp/bpfmid.err
check "bpf: a kprobe program on @MID@ (mid-function): $NB calls ($(awk '/^entries/ { print $2 }' /tmp/bpfmid), exit $rc)" \
    [ $rc = 0 -a "$(awk '/^entries/ { print $2 }' /tmp/bpfmid)" = $NB ]
check "bpf: @MID@: bpf_get_func_ip() is 0, as on a kprobes kernel" [ "$(awk '/^entries/ { print $8 }' /tmp/bpfmid)" = 0x0 ]
check "bpf: @MID@ stayed on its jump ([OPTIMIZED])" grep -Eq "^point [0-9a-f]+  [kr]  $MID_RE  \[OPTIMIZED\]" /tmp/bpfmid

# a point that was not baked (vfs_write): perf_event_open() fails, ENOENT;
# the kernel's log says how to bake it
kbpfrun /tmp/bpfnb vfs_write 1
sed 's/^/KPRW-INFO kbpf vfs_write: /' /tmp/bpfnb.err
check "bpf: PMU: a program on vfs_write (not baked) is refused: 'kbpf: cannot attach a kprobe program to vfs_write: No such file or directory'" \
    sh -c "[ $rc = 1 ] && grep -qx 'kbpf: cannot attach a kprobe program to vfs_write: No such file or directory' /tmp/bpfnb.err"
check "bpf: PMU: dmesg: 'kprewrite: vfs_write+OFF/SIZE is not baked into this kernel: bake it (...)'" \
    sh -c "dmesg | grep -Eq 'kprewrite: vfs_write\+0x[04]/0x[0-9a-f]+ is not baked into this kernel: bake it \(kprewrite --kernel --probe SYM vmlinux; SYM%return for a return probe\)'"

# the legacy path: without the PMU's type file (a tmpfs over its directory),
# libbpf makes a kprobe_events event for each program, opens its
# tracepoint's perf event and attaches the program to it
mount -t tmpfs none $PMU
kbpfrun /tmp/bpfl $FN 444
sed 's/^/KPRW-INFO kbpf legacy: /' /tmp/bpfl /tmp/bpfl.err
check "bpf: legacy: kbpf attached both programs with the PMU hidden (exit $rc)" sh -c "[ $rc = 0 ] && grep -qx 'attach legacy' /tmp/bpfl"
check "bpf: legacy: libbpf's two kprobe_events events were there, 'p:kprobes/libbpf_PID_${FN}_0x0_N $FN' and 'rMAXACTIVE:kretprobes/libbpf_PID_${FN}_0x0_N $FN'" \
    sh -c "[ \"\$(grep -Ec '^event p:kprobes/libbpf_[0-9]+_${FN}_0x0_[0-9]+ $FN\$' /tmp/bpfl) \$(grep -Ec '^event r[0-9]*:kretprobes/libbpf_[0-9]+_${FN}_0x0_[0-9]+ $FN\$' /tmp/bpfl)\" = '1 1' ]"
counted /tmp/bpfl 444 legacy
check "bpf: legacy: libbpf removed its events afterwards" [ "$(grep -c libbpf_ $TR/kprobe_events)" = 0 ]
# not baked: libbpf's write to kprobe_events is refused, error_log says why
echo > $TR/error_log
kbpfrun /tmp/bpflnb vfs_write 1
sed 's/^/KPRW-INFO kbpf legacy vfs_write: /' /tmp/bpflnb.err
check "bpf: legacy: a program on vfs_write (not baked) is refused (exit $rc)" \
    sh -c "[ $rc = 1 ] && grep -qx 'kbpf: cannot attach a kprobe program to vfs_write: No such file or directory' /tmp/bpflnb.err"
check "bpf: legacy: error_log: 'Not baked into this kernel: bake it (...)' for libbpf's definition" \
    grep -qF 'trace_kprobe: error: Not baked into this kernel: bake it' $TR/error_log
umount $PMU
check "bpf: @ENTRY@ [OPTIMIZED] still" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list
