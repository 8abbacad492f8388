#!/bin/sh
# make check-kernel (TAP). For small 6.1 kernels built with the kprewrite
# integration (cached under BUILDDIR/kbuild) -- one with the kernel's own
# kprobes (kprobes.config), one without (nokprobes.config) -- it bakes probes
# with the build system's post-link step (make KPREWRITE_PROBES=...), boots the
# rewritten vmlinux under qemu TCG with a busybox initramfs and reads the
# guest's checks from the serial log; the kprobes kernel is also booted as a
# bzImage, where KASLR moves it (the relocations must still be right). A
# third kernel has ftrace (ftrace.config): its probes at +0 go past the
# fentry calls, which ftrace keeps: the guest traces the probed functions,
# every function, and livepatches a probed one meanwhile. The
# kernels unwind with ORC but nokprobes, which uses frame pointers; the
# guest checks what each unwinder sees from inside a handler.
# KP_KERNEL_BENCH=1 adds the benchmark phase (make bench-kernel), its
# kprobe_events row (guest-bpf-bench.sh) and its BPF
# row: a BPF kprobe program on a baked point (6.1 nokprobes) against one on
# the kernel's kprobe (6.1 kprobes). Where the kernel has no kprobes but
# kprobe_events and BPF_EVENTS, the guest checks them (guest-events.sh,
# guest-bpf.sh with kbpf, a static libbpf program).
# KP_KERNEL_VARIANTS="6.1-kprobes 6.12-mitigations ..." runs only those
# kernels (of 6.1-kprobes, with its bzImage boot, 6.1-nokprobes,
# 6.1-ftrace, 6.1-every, 6.12-nokprobes, 6.12-mitigations, 6.12-every;
# default all); KP_KERNEL_EVERY=0 leaves the two every-function ones out.
# usage: check-kernel.sh SRCDIR BUILDDIR
src=${1:?usage: check-kernel.sh SRCDIR BUILDDIR}; build=${2:?}
K=$build/kprewrite
kb=$build/kbuild
tree=$kb/linux-source-6.1
W=$build/kwork
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
bail() { echo "Bail out! $*"; exit 1; }
# wanted VER-VARIANT: is that kernel to be run (KP_KERNEL_VARIANTS)?
wanted() { [ -z "${KP_KERNEL_VARIANTS:-}" ] || case " $KP_KERNEL_VARIANTS " in *" $1 "*) ;; *) return 1 ;; esac; }
# timed VER-VARIANT COMMAND...: runs it, then says how long it took
timed() { l=$1; shift; t0=$(date +%s); "$@"; echo "# time: $l took $(( $(date +%s) - t0 )) s (build, bake, boot and checks)"; }
for t in qemu-system-x86_64 cpio gcc objdump nm; do command -v $t >/dev/null || bail "$t not found (scripts/install-deps.sh)"; done
mkdir -p "$W"
gcc -O2 -static -o "$W/kdrive" "$src/t/kernel/kdrive.c" || bail "cannot build kdrive statically"
# the BPF kprobe programs' loader (libbpf, linked statically for the
# busybox initramfs) and its programs, for the kernels with BPF_EVENTS
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu -c "$src/t/kernel/kbpf.bpf.c" -o "$W/kbpf.bpf.o" ||
    bail "cannot build kbpf.bpf.o (clang -target bpf, libbpf-dev: scripts/install-deps.sh)"
gcc -O2 -static -o "$W/kbpf" "$src/t/kernel/kbpf.c" -lbpf -lelf -lz || bail "cannot build kbpf statically (libbpf-dev, libelf-dev, zlib1g-dev)"
# (an fentry program, for the ftrace kernel, which has BTF)
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu -c "$src/t/kernel/kbpf-fentry.bpf.c" -o "$W/kbpf-fentry.bpf.o" ||
    bail "cannot build kbpf-fentry.bpf.o (clang -target bpf, libbpf-dev: scripts/install-deps.sh)"

# table_counts VMLINUX: "ENTRIES OPTIMIZED" of the probe table baked into
# VMLINUX (struct kprw_table, 64 bytes, then 28-byte entries, the verdict
# at byte 26: include/kprewrite/abi.h)
table_counts() {
    ta=$(nm "$1" | awk '$3 == "kprewrite_pool_table" { print $1 }')
    readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$3 ~ /^[0-9a-f]+$/ && $4 ~ /^[0-9a-f]+$/ { print $3, $4, $5 }' |
    while read -r sa so sz; do
        # (48 bits of each address: sh arithmetic is signed 64-bit)
        rel=$((0x$(echo "$ta" | cut -c5-) - 0x$(echo "$sa" | cut -c5-)))
        if [ ${#sa} = 16 ] && [ "$rel" -ge 0 ] && [ "$rel" -lt $((0x$sz)) ]; then
            t=$((0x$so + rel))
            n=$(od -An -tu4 -j $((t + 8)) -N 4 "$1" | tr -d ' ')
            # the entries' bytes in one read, one a line; verdict 0 = a jump
            od -An -v -tu1 -w1 -j $((t + 64)) -N $((n * 28)) "$1" |
                awk -v n="$n" 'NR % 28 == 27 && $1 == 0 { opt++ } END { print n, opt + 0 }'
            break
        fi
    done
}

# fill FILE BENCH: a guest script with the probes' names filled in
fill() {
    sed "s/@ENTRY@/$entry/g; s/@SYSCALL@/$syscall/g; s/@MID@/$mid/g;
         s/@INT3@/$int3p/g; s/@SIGNAL@/$signal/g; s/@TICK@/$tickp/g; s/@BENCH@/$2/g;
         s/@BMREAD@/$bmread/g; s/@BMWRITE@/$bmwrite/g; s/@LOADMISC@/$loadmisc/g;
         s/@NPOINTS@/$npoints/g; s/@NOPT@/$nopt/g; s/@RELOC@/$relo/g; s/@RETSITE@/$retsite/g; s/@RETMOVED@/$retmoved/g; s/@MODPOINTS@/$modpoints/g; s/@MODOPT@/$modopt/g; s/@NRET@/$((5 + kunit))/g; s/@FLAGFN@/$flagfn/g" "$1"
}

# boot LABEL IMAGE DIR BENCH BPFBENCH: boots IMAGE, one TAP line per guest check
boot() {
    label=$1 image=$2 d=$3
    fill "$src/t/kernel/guest-init.sh" "$4" > "$d/init"
    # kprobe_events' checks (guest-events.sh), where the kernel has them
    ev=
    if grep -q '^CONFIG_KPROBE_EVENTS=y' "$obj/.config" && ! grep -q '^CONFIG_KPROBES=y' "$obj/.config"; then
        fill "$src/t/kernel/guest-events.sh" "$4" > "$d/guest-events.sh"
        ev=$d/guest-events.sh
    fi
    # BPF kprobe programs' checks (guest-bpf.sh), where it has them (perf's
    # kprobe PMU comes with kprobe_events: the ftrace kernel's BPF is for an
    # fentry program)
    if grep -q '^CONFIG_BPF_EVENTS=y' "$obj/.config" && grep -q '^CONFIG_KPROBE_EVENTS=y' "$obj/.config" &&
        ! grep -q '^CONFIG_KPROBES=y' "$obj/.config"; then
        fill "$src/t/kernel/guest-bpf.sh" "$4" > "$d/guest-bpf.sh"
        ev="$ev $d/guest-bpf.sh $W/kbpf $W/kbpf.bpf.o"
    fi
    # an fentry BPF program on a probed function (the ftrace kernel: BTF)
    if grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$obj/.config"; then
        ev="$ev $W/kbpf $W/kbpf-fentry.bpf.o"
    fi
    # make bench-kernel's BPF row (guest-bpf-bench.sh)
    if [ "${5:-0}" = 1 ]; then
        fill "$src/t/kernel/guest-bpf-bench.sh" "$4" > "$d/guest-bpf-bench.sh"
        ev="$ev $d/guest-bpf-bench.sh $W/kbpf $W/kbpf.bpf.o"
    fi
    sh "$src/t/kernel/mkinitramfs.sh" "$d/initrd.cpio" "$d/init" "$W/kdrive" $extra $ev || bail "initramfs"
    log=$d/serial-$(basename "$image").log
    start=$(date +%s)
    sh "$src/t/kernel/boot.sh" "$image" "$d/initrd.cpio" "$log" "${KP_BOOT_TIMEOUT:-300}"
    ok $? "$label: the guest ran and powered off in $(( $(date +%s) - start )) s (qemu TCG)"
    grep -q KPRW-END "$log"; ok $? "$label: the guest finished its checks"
    grep -E '^KPRW-(OK|NOTOK) ' "$log" | tr -d '\r' > "$d/guest.txt"
    while IFS= read -r line; do
        case $line in
        KPRW-OK*) ok 0 "$label: ${line#KPRW-OK }" ;;
        *) ok 1 "$label: ${line#KPRW-NOTOK }" ;;
        esac
    done < "$d/guest.txt"
    [ "$(wc -l < "$d/guest.txt")" -ge 40 ]; ok $? "$label: the guest reported its checks ($(wc -l < "$d/guest.txt"))"
    # the kernel's kprobes KUnit suite, if it ran: its lines verbatim
    grep '^KPRW-KUNIT ' "$log" | tr -d '\r' | sed 's/^KPRW-KUNIT /# /' > "$d/kunit.txt"
    cat "$d/kunit.txt"
    tr -d '\r' < "$log" | grep '^KPRW-INFO ' | sed 's/^KPRW-INFO /# /'   # (what the CPU turned on)
    [ $failed = 0 ] || { echo "# serial log: $log"; tail -n 30 "$log" | sed 's/^/# /'; }
}

# name_of SYM FILE: SYM's entry as kprewrite names it in FILE (a --check
# report): SYM+0x0, or SYM+0x4 past the endbr64 an IBT kernel starts it with
name_of() { awk -v s="$1" '$3 == s "+0x0" || $3 == s "+0x4" { print $3; exit }' "$2"; }

# kreloc_opt OBJ: KR, the option that gives kprewrite a vmlinux's KASLR
# relocations where 6.12's post-link step stripped them from it (the bake in
# the build ran before that step, with the .rela sections)
kreloc_opt() {
    KR=
    if ! readelf -SW "$1/vmlinux" | grep -q ' \.rela\.text '; then
        [ -f "$1/arch/x86/boot/compressed/vmlinux.relocs" ] || bail "$1: vmlinux has no .rela.text and no vmlinux.relocs"
        KR="--relocs $1/arch/x86/boot/compressed/vmlinux.relocs"
    fi
}

# variant NAME: build, choose and check the probes, bake, boot
variant() {
    v=$1 ver=${2:-6.1} modpoints=0 modopt=0
    L="$ver $v" obj=$kb/$v d=$W/$v tree=$kb/linux-source-$ver
    [ "$ver" = 6.1 ] || { obj=$kb/$ver-$v d=$W/$ver-$v; }
    mkdir -p "$d"
    sh "$src/t/kernel/build-kernel.sh" "$kb" "$v" "$ver" > "$d/build.log" 2>&1 ||
        { tail -n 20 "$d/build.log"; bail "$L: kernel build failed ($d/build.log)"; }
    ok 0 "$L: $(tail -n 1 "$d/build.log")"
    cp "$obj/vmlinux" "$d/vmlinux.plain"
    kreloc_opt "$obj"
    # the mid-function point: right after ksys_read's first call but
    # __fentry__'s (straight line, reached once per read(2) that got a
    # file); addresses are beyond
    # sh arithmetic, so objdump names the offset itself
    a=$(nm "$d/vmlinux.plain" | awk '$3 == "ksys_read" { print $1 }')
    [ -n "$a" ] || bail "$L: no ksys_read in vmlinux"
    mid=$(objdump -d --prefix-addresses --no-show-raw-insn --start-address=0x$a \
        --stop-address=0xffffffff$(printf '%08x' $((0x${a#ffffffff} + 256))) "$d/vmlinux.plain" |
        awk '$3 == "call" && $0 !~ /__fentry__/ { take = 1; next } take { gsub(/[<>]/, "", $2); print $2; exit }')
    case $mid in ksys_read+0x*) ;; *) bail "$L: no instruction after a call in ksys_read ($mid)" ;; esac
    # return probes: vfs_read and getpid(2) beside their kprobes (one entry
    # each, kind r), get_signal alone (a task killed by a signal never
    # returns from it), scheduler_tick (called in the timer's interrupt),
    # ksys_read (vfs_read's caller: unwinding under a return probe)
    # (the timer's tick is sched_tick since 6.10)
    tick=scheduler_tick
    ! nm "$d/vmlinux.plain" | grep -q ' sched_tick$' || tick=sched_tick
    # cpuinfo_open: a KASLR relocation in its DCR (mov $cpuinfo_op, %rsi),
    # which moves to the copy (opening /proc/cpuinfo runs it); with ftrace,
    # its DCR is past the fentry call
    "$K" --kernel --check $KR --probe cpuinfo_open "$d/vmlinux.plain" > "$d/relo.txt"
    relo=$(name_of cpuinfo_open "$d/relo.txt")
    # the int3 point: the instruction before do_sys_openat2's call of getname
    # (a DCR holding a call is int3 in a kernel), once per open(2)
    a=$(nm "$d/vmlinux.plain" | awk '$3 == "do_sys_openat2" { print $1 }')
    int3p=$(objdump -d --prefix-addresses --no-show-raw-insn --start-address=0x$a \
        --stop-address=0xffffffff$(printf '%08x' $((0x${a#ffffffff} + 512))) "$d/vmlinux.plain" |
        awk '$3 == "call" && $0 ~ /<getname>/ { print prev; exit } { s = $2; gsub(/[<>]/, "", s); prev = s }')
    case $int3p in do_sys_openat2+0x*) ;; *) bail "$L: no instruction before do_sys_openat2's call of getname ($int3p)" ;; esac
    # read_null (/dev/null's read): with return thunks, the jmp to the
    # thunk is in its DCR, a .return_sites entry, which moves to the copy
    printf 'vfs_read\nvfs_read%%return\n__x64_sys_getpid\n__x64_sys_getpid%%return\n%s\nstrncpy_from_user\nget_signal%%return\n%s%%return\nksys_read%%return\n%s\n%s\nread_null\n' \
        "$mid" "$tick" "$relo" "$int3p" > "$d/probes.list"
    # a function whose first instruction touches the trap or interrupt flag
    # (pushf, cli): a post_handler there is refused. The first such function
    # the rewriter can bake
    flagfn=
    for f in $(objdump -d --no-show-raw-insn "$d/vmlinux.plain" | awk '/^[0-9a-f]+ <[^>]+>:$/ { n = $2; first = 1; next }
            first && NF { first = 0; if ($2 ~ /^(pushf|cli)/) { gsub(/[<>:]/, "", n); print n } }' |
            head -n 20); do
        if "$K" --kernel --check $KR --probe "$f" "$d/vmlinux.plain" 2>/dev/null | grep -Eq "  $f\+0x[04]  \[(OPTIMIZED|INT3)\]"; then
            flagfn=$f; break
        fi
    done
    [ -n "$flagfn" ]; ok $? "$L: a function that starts with pushf or cli can be baked (${flagfn:-none})"
    echo "$flagfn" >> "$d/probes.list"
    # with ftrace: the function livepatch-sample.ko patches (the guest
    # livepatches it)
    lp=0
    [ "$v" != ftrace ] || { echo cmdline_proc_show >> "$d/probes.list"; lp=1; }
    # the kernel's kprobes KUnit suite (lib/test_kprobes.c, built where
    # kprewrite provides the kprobes API) registers on these at boot
    kunit=0 kk=0   # the KUnit suite's points: return probes, kprobes only
    if grep -q '^CONFIG_KPROBES_SANITY_TEST=y' "$obj/.config"; then
        # (and samples/kprobes' modules probe kernel_clone)
        kunit=5
        printf 'kprobe_target\nkprobe_target%%return\nkprobe_target2\nkprobe_target2%%return\nkprobe_stacktrace_target%%return\nkprobe_stacktrace_internal_target%%return\nkernel_clone\nkernel_clone%%return\n' \
            >> "$d/probes.list"
        # 6.12's suite also probes a function its handlers call (recursion)
        if nm "$d/vmlinux.plain" | grep -q ' kprobe_recursed_target$'; then
            echo kprobe_recursed_target >> "$d/probes.list"
            kk=1
        fi
    fi
    "$K" --kernel --check $KR --probe-file "$d/probes.list" "$d/vmlinux.plain" > "$d/check.txt"
    sed 's/^/# /' "$d/check.txt"
    entry=$(name_of vfs_read "$d/check.txt") syscall=$(name_of __x64_sys_getpid "$d/check.txt")
    strn=$(name_of strncpy_from_user "$d/check.txt") signal=$(name_of get_signal "$d/check.txt")
    tickp=$(name_of $tick "$d/check.txt")
    bmread=bm_status_read+0x0 bmwrite=bm_status_write+0x0 loadmisc=load_misc_binary+0x0
    # the points (a probe and a return probe at one address are one) and
    # those optimized, which the guest checks its list against
    npoints=$(awk '$4 ~ /^\[(OPTIMIZED|INT3)\]$/ { print $1 }' "$d/check.txt" | sort -u | wc -l)
    nopt=$(awk '$4 == "[OPTIMIZED]" { print $1 }' "$d/check.txt" | sort -u | wc -l)
    wantpts=$((11 + kunit + kk + lp))
    if [ -z "$KR" ]; then
        [ "$npoints" = $wantpts ]; ok $? "$L: the $(wc -l < "$d/probes.list") probes are $wantpts points ($npoints), $nopt of them optimized"
    else
        # (a relocation --relocs names in a first instruction refuses the
        # point in --check; the build step moves it)
        [ "$npoints" -le $wantpts ]; ok $? "$L: the $(wc -l < "$d/probes.list") probes are at most $wantpts points with --relocs ($npoints), $nopt of them optimized"
    fi
    grep -q "$entry  \[OPTIMIZED\]" "$d/check.txt"; ok $? "$L: $entry can be jump-optimized"
    if [ "$v" = ftrace ]; then
        grep -q "$entry  \[OPTIMIZED\].*\[after ftrace's fentry call, which ftrace keeps" "$d/check.txt"
        ok $? "$L: vfs_read+0 is baked past its fentry call, which ftrace keeps"
        a=$(nm "$d/vmlinux.plain" | awk '$3 == "vfs_read" { print $1 }')
        [ "$(awk -v e="$entry" '$3 == e && $2 == "k" { print $1 }' "$d/check.txt")" = \
          "ffffffff$(printf %08x $((0x${a#ffffffff} + 5)))" ]
        ok $? "$L: its jump is at vfs_read+5"
    fi
    if [ -z "$KR" ]; then
        grep -q "$syscall  \[OPTIMIZED\]" "$d/check.txt"; ok $? "$L: $syscall can be jump-optimized"
        grep -q "$relo  \[OPTIMIZED\].*\[KASLR relocation moved to the copy\]" "$d/check.txt"
        ok $? "$L: $relo can be jump-optimized, its KASLR relocation moved to the copy"
    else
        # (a stripped 6.12 vmlinux: relocations from vmlinux.relocs stay
        # where they are; the build step, which saw the .rela sections,
        # moves them: the guest checks what it baked)
        grep -q "$relo  \[INT3\] reserved:relocation" "$d/check.txt"
        ok $? "$L: with --relocs, $relo's relocation cannot move (int3)"
    fi
    grep -q "$mid  \[OPTIMIZED\]" "$d/check.txt"; ok $? "$L: $mid (mid-function) can be jump-optimized"
    retsite=$(name_of read_null "$d/check.txt") retmoved=0
    if readelf -SW "$d/vmlinux.plain" | grep -q ' \.return_sites '; then
        retmoved=1
        grep -q "$retsite  \[OPTIMIZED\].*\[boot-patched site moved to the copy" "$d/check.txt"
        ok $? "$L: $retsite can be jump-optimized, its return site (.return_sites) moved to the copy"
    else
        grep -q "$retsite  \[OPTIMIZED\]\|$retsite  \[INT3\]" "$d/check.txt"; ok $? "$L: $retsite can be baked (no return thunks)"
    fi
    "$K" --kernel --check $KR --probe verify_cpu "$d/vmlinux.plain" | grep -Eq 'verify_cpu\+0x[04]  refused: blacklisted \(copied by ftrace, or CPU bring-up code\)'
    ok $? "$L: verify_cpu (CPU bring-up) is refused"
    # the kernel's kprobe blacklist, kept without CONFIG_KPROBES too, and
    # the runtime's own trap and return paths on it
    for f in notify_die kprw_kret_return kprw_debug; do
        "$K" --kernel --check $KR --probe $f "$d/vmlinux.plain" | grep -Eq "$f\+0x[04]  refused: blacklisted \(_kprobe_blacklist\)"
        ok $? "$L: $f (NOKPROBE_SYMBOL) is refused"
    done
    if nm "$d/vmlinux.plain" | grep -q ' ftrace_regs_caller$'; then
        "$K" --kernel --check $KR --probe ftrace_regs_caller "$d/vmlinux.plain" |
            grep -Eq 'ftrace_regs_caller\+0x[04]  refused: blacklisted \(copied by ftrace, or CPU bring-up code\)'
        ok $? "$L: ftrace_regs_caller (copied into ftrace's trampolines) is refused"
    fi
    grep -q "$int3p  \[INT3\] " "$d/check.txt"; ok $? "$L: $int3p falls back to int3 (a call in its DCR)"
    # its __ex_table entries are past its DCR, their fixups in the function
    grep -q "$strn  \[OPTIMIZED\]" "$d/check.txt"
    ok $? "$L: $strn is jump-optimized: the function's __ex_table entries are past its DCR"
    grep -q "  r  $entry  \[OPTIMIZED\]" "$d/check.txt"; ok $? "$L: vfs_read%return can be jump-optimized"
    # (with --relocs, 6.12's per-cpu access in its DCR stays: int3 in
    # --check; the build step moves it)
    [ -n "$KR" ] || { grep -q "  r  $syscall  \[OPTIMIZED\]" "$d/check.txt"; ok $? "$L: __x64_sys_getpid%return can be jump-optimized"; }
    grep -F "  r  $signal  " "$d/check.txt" | grep -Eq '\[(OPTIMIZED|INT3)\]'; ok $? "$L: get_signal%return can be baked"

    # the build system's post-link step bakes them into vmlinux
    mk="make -C $tree -s O=$obj ARCH=x86_64 KPREWRITE=$K KPREWRITE_PROBES=$d/probes.list"
    $mk vmlinux > "$d/bake.log" 2>&1
    ok $? "$L: make KPREWRITE_PROBES=... relinks and bakes vmlinux"
    grep -q "$wantpts probes baked" "$d/bake.log"; ok $? "$L: the post-link step baked $wantpts points"
    cp "$obj/vmlinux" "$d/vmlinux"
    cmp -s "$d/vmlinux" "$d/vmlinux.plain"; [ $? = 1 ]; ok $? "$L: the baked vmlinux differs from the plain one"
    # what the guest lists is what the build step baked: it saw the link's
    # relocations, which 6.12's post-link step strips before vmlinux.plain
    # was copied, and moved those in DCRs (--check with --relocs leaves
    # them: int3 or refused there)
    set -- $(table_counts "$d/vmlinux")
    [ "$1" = "$wantpts" ]; ok $? "$L: the baked table has the $wantpts points ($1; $npoints in --check), $2 of them optimized ($nopt in --check)"
    npoints=${1:-$npoints}
    nopt=${2:-$nopt}
    # the kernel's samples/kprobes, unmodified, as modules against the kernel
    # that provides the kprobes API (the guest loads them)
    extra=
    if [ $kunit != 0 ]; then
        rm -rf "$d/samples"; mkdir -p "$d/samples"
        cp "$tree/samples/kprobes/kprobe_example.c" "$tree/samples/kprobes/kretprobe_example.c" "$d/samples/"
        # and the legacy documents' examples on kprw_ names (t/kernel/examples)
        cp "$src/t/kernel/examples/jprobe_example.c" "$src/t/kernel/examples/fault_example.c" "$d/samples/"
        printf 'obj-m += kprobe_example.o kretprobe_example.o jprobe_example.o fault_example.o\n' > "$d/samples/Kbuild"
        # the module build step bakes a probe into each (their exit
        # function: int3, it loads an address), which the guest lists
        printf 'cleanup_module\n' > "$d/samples.list"
        { $mk modules &&
          make -C "$tree" -s O="$obj" ARCH=x86_64 M="$d/samples" KPREWRITE="$K" KPREWRITE_PROBES="$d/samples.list" modules
        } > "$d/samples.log" 2>&1
        ok $? "$L: samples/kprobes and the jprobe and fault_handler examples build as modules against it (make M=... KPREWRITE_PROBES=...)"
        [ "$(grep -c '1 probe baked into the module' "$d/samples.log")" = 4 ]
        ok $? "$L: the module build step baked cleanup_module into the 4 modules"
        cmp -s "$obj/vmlinux" "$d/vmlinux"; ok $? "$L: building modules did not relink vmlinux"
        extra="$d/samples/kprobe_example.ko $d/samples/kretprobe_example.ko $d/samples/jprobe_example.ko $d/samples/fault_example.ko"
        # a module of the kernel's own with probes baked into it after the
        # build (the guest loads it, hits, toggles, probes and unloads it)
        m=$obj/fs/binfmt_misc.ko
        printf 'bm_status_read\nbm_status_write\nbm_register_write\nload_misc_binary\nload_misc_binary%%return\nbm_get_tree\n' \
            > "$d/module.list"
        "$K" --kernel --check --probe-file "$d/module.list" "$m" > "$d/module-check.txt"
        sed 's/^/# /' "$d/module-check.txt"
        bmread=$(name_of bm_status_read "$d/module-check.txt") bmwrite=$(name_of bm_status_write "$d/module-check.txt")
        loadmisc=$(name_of load_misc_binary "$d/module-check.txt")
        modpoints=$(awk '$4 ~ /^\[(OPTIMIZED|INT3)\]$/ { print $1 }' "$d/module-check.txt" | sort -u | wc -l)
        modopt=$(awk '$4 == "[OPTIMIZED]" { print $1 }' "$d/module-check.txt" | sort -u | wc -l)
        [ "$modpoints" = 5 ]; ok $? "$L: binfmt_misc.ko: the 6 probes are 5 points ($modpoints), $modopt of them optimized"
        grep -Eq 'bm_get_tree\+0x[04]  \[OPTIMIZED\]  dcr [0-9]+: (push %rbp; )?mov \$' "$d/module-check.txt"
        ok $? "$L: binfmt_misc.ko: bm_get_tree+0 is jump-optimized (the address the loader writes into its DCR moves with the copy)"
        "$K" --kernel --probe-file "$d/module.list" -o "$d/binfmt_misc.ko" "$m" > "$d/module-bake.log" 2>&1
        rc=$?; [ $rc = 0 ] || [ $rc = 2 ]; ok $? "$L: kprewrite --kernel bakes them into binfmt_misc.ko (exit $rc)"
        readelf -SW "$d/binfmt_misc.ko" | grep -q ' \.kprewrite\.table ' && readelf -rW "$d/binfmt_misc.ko" | grep -q 'kprewrite_dispatch - 4'
        ok $? "$L: readelf reads the baked module (its pool, the loader's relocations)"
        extra="$extra $d/binfmt_misc.ko"
    fi
    if [ "$v" = ftrace ]; then
        # samples/livepatch/livepatch-sample.c, unmodified (CONFIG_SAMPLE_LIVEPATCH=m)
        $mk modules > "$d/livepatch.log" 2>&1 && [ -f "$obj/samples/livepatch/livepatch-sample.ko" ]
        ok $? "$L: samples/livepatch/livepatch-sample.ko builds against it"
        cmp -s "$obj/vmlinux" "$d/vmlinux"; ok $? "$L: building modules did not relink vmlinux"
        # a module's entry probe goes past its fentry call too: the patch's
        # new function, probed (the guest counts its calls while patched)
        lpm=$obj/samples/livepatch/livepatch-sample.ko
        "$K" --kernel --check --probe livepatch_cmdline_proc_show "$lpm" > "$d/lp-check.txt"
        grep -q "livepatch_cmdline_proc_show+0x0  \[OPTIMIZED\].*\[after ftrace's fentry call" "$d/lp-check.txt"
        ok $? "$L: livepatch-sample.ko: livepatch_cmdline_proc_show+0 is baked past its fentry call"
        "$K" --kernel --probe livepatch_cmdline_proc_show -o "$d/livepatch-sample.ko" "$lpm" > "$d/lp-bake.log" 2>&1
        ok $? "$L: kprewrite --kernel bakes it into livepatch-sample.ko"
        extra="$d/livepatch-sample.ko"
        # ftrace's list of fentry calls is the plain vmlinux's: the probed
        # functions' too
        ms=$(nm "$d/vmlinux" | awk '$3 == "__start_mcount_loc" { print $1 }')
        me=$(nm "$d/vmlinux" | awk '$3 == "__stop_mcount_loc" { print $1 }')
        objdump -s --start-address=0x$ms --stop-address=0x$me "$d/vmlinux.plain" | sed 1,2d > "$d/mcount.plain"
        objdump -s --start-address=0x$ms --stop-address=0x$me "$d/vmlinux" | sed 1,2d > "$d/mcount.baked"
        [ -n "$ms" ] && [ "$(wc -l < "$d/mcount.plain")" -gt 1000 ] && cmp -s "$d/mcount.plain" "$d/mcount.baked"
        ok $? "$L: __mcount_loc, its $(( (0x${me#ffffffff} - 0x${ms#ffffffff}) / 8 )) fentry calls, is unchanged by the bake"
    fi
    readelf -h "$d/vmlinux" >/dev/null 2>&1; ok $? "$L: readelf reads the baked vmlinux"
    b=0 bb=0
    [ "$v" != kprobes ] || b=${KP_KERNEL_BENCH:-0}   # the comparison needs the kernel's kprobes
    # a BPF program on the baked point against one on the kernel's kprobe:
    # the 6.1 kernels without and with kprobes, one boot each
    [ "$ver $v" != "6.1 kprobes" ] && [ "$ver $v" != "6.1 nokprobes" ] || bb=${KP_KERNEL_BENCH:-0}
    boot "$L vmlinux" "$d/vmlinux" "$d" "$b" "$bb"
    # the unwinding checks ran under the unwinder the kernel was built with
    want=orc
    [ "$v" != nokprobes ] || want=frame-pointer
    grep -q "unwind ($want), " "$d/guest.txt"; ok $? "$L: the guest ran the unwinding checks ($want unwinder)"
}

# the same baked kernel as a compressed bzImage: KASLR relocates it
bzimage() {
    d=$W/kprobes
    $mk bzImage > "$d/bzimage.log" 2>&1
    ok $? "6.1 kprobes: make bzImage from the baked vmlinux (relocations from it)"
    cmp -s "$kb/kprobes/vmlinux" "$d/vmlinux"; ok $? "6.1 kprobes: the bzImage step did not relink vmlinux"
    boot "6.1 kprobes bzImage (KASLR)" "$kb/kprobes/arch/x86/boot/bzImage" "$d" 0 0
    linked=$(nm "$d/vmlinux" | awk '$3 == "vfs_read" { print $1 }')
    ran=$(tr -d '\r' < "$d/serial-bzImage.log" | awk -v e="  $entry  " 'index($0, e) { print $1; exit }')
    [ -n "$ran" ] && [ "$ran" != "$linked" ]; ok $? "6.1 kprobes bzImage: KASLR moved the kernel (vfs_read at $ran, linked at $linked)"
}
! wanted 6.1-kprobes || timed 6.1-kprobes eval 'variant kprobes; bzimage'

# after a kernel without kprobes: it has none, and lib/test_kprobes.c,
# unmodified, passed against kprewrite's kprobes API, every case
nokprobes_checks() {
    ! grep -q '^CONFIG_KPROBES=y' "$obj/.config"; ok $? "$L: the kernel has no CONFIG_KPROBES"
    # kprobe_events on the kprobes API kprewrite provides (nokprobes.config
    # and mitigations.config ask for it): the guest ran guest-events.sh
    grep -q '^CONFIG_KPROBE_EVENTS=y' "$obj/.config"; ok $? "$L: the kernel has CONFIG_KPROBE_EVENTS (kernel/trace/trace_kprobe.c on kprewrite)"
    ne=$(grep -v ' bpf: ' "$d/guest.txt" | grep -Ec ' (kprobe_events|trace_pipe|kprobe_profile|filter|hist trigger|error_log)')
    [ "$ne" = 28 ]; ok $? "$L: the guest ran the 28 kprobe_events checks ($ne)"
    # BPF kprobe programs on it (nokprobes.config and mitigations.config)
    grep -q '^CONFIG_BPF_EVENTS=y' "$obj/.config"; ok $? "$L: the kernel has CONFIG_BPF_EVENTS (BPF kprobe programs on kprewrite)"
    nb=$(grep -c ' bpf: ' "$d/guest.txt")
    [ "$nb" = 24 ]; ok $? "$L: the guest ran the 24 BPF checks ($nb)"
    k=$d/kunit.txt
    # (6.12's suite has a seventh case: recursion counted as missed, and
    # post_handlers for the hit that was not)
    cases="test_kprobe test_kprobes test_kretprobe test_kretprobes test_stacktrace_on_kretprobe test_stacktrace_on_nested_kretprobe"
    ! grep -q 'KUNIT_CASE(test_kprobe_missed)' "$tree/lib/test_kprobes.c" || cases="$cases test_kprobe_missed"
    nc=$(echo $cases | wc -w)
    grep -Eq "^# +# kprobes_test: pass:$nc fail:0 skip:0 total:$nc\$" "$k"
    ok $? "$L: the kernel's kprobes KUnit suite passed: $(grep 'kprobes_test: pass' "$k" | sed 's/^# *//')"
    for c in $cases; do
        grep -Eq "^# +ok [0-9]+ (- )?$c\$" "$k"; ok $? "$L: kprobes_test: $c"
    done
    extra=
}
! wanted 6.1-nokprobes || timed 6.1-nokprobes eval 'variant nokprobes; nokprobes_checks'
ftrace_checks() {
    grep -q 'ftrace: the function tracer is on' "$W/ftrace/guest.txt"; ok $? "6.1 ftrace: the guest ran the ftrace checks"
}
! wanted 6.1-ftrace || timed 6.1-ftrace eval 'variant ftrace; ftrace_checks'
# A kernel with every probe-able function entry baked, count-only: boots,
# counts, goes all off and on again (t/kernel/guest-every.sh). Baked
# straight into the linked vmlinux, which 6.1 leaves with its relocations
# (the build step takes exit 2 only: '*' has refusals, the blacklist's).
every() {
    ver=$1 L="$1 every function entry"
    obj=$kb/every d=$W/every
    [ "$ver" = 6.1 ] || { obj=$kb/$ver-every d=$W/$ver-every; }
    mkdir -p "$d"
    sh "$src/t/kernel/build-kernel.sh" "$kb" every "$ver" > "$d/build.log" 2>&1 ||
        { tail -n 20 "$d/build.log"; bail "$L: kernel build failed ($d/build.log)"; }
    cp "$obj/vmlinux" "$d/vmlinux.plain"
    kreloc_opt "$obj"
    "$K" --kernel --summary $KR --probe '*' -o "$d/vmlinux" "$d/vmlinux.plain" > "$d/bake.txt" 2> "$d/bake.log"
    rc=$?; [ $rc = 2 ] || [ $rc = 3 ]; ok $? "$L: kprewrite --kernel --probe '*' bakes it (exit $rc)"
    grep '^summary: ' "$d/bake.txt" | sed 's/^/# /'
    ! grep '^summary: refused ' "$d/bake.txt" | grep -Evq '^summary: refused +(blacklisted|reserved|exception-table|not-relocatable) '
    ok $? "$L: refusals only for the blacklist, kernel tables, exception tables, or a first instruction that cannot run out of line"
    set -- $(table_counts "$d/vmlinux")
    npoints=${1:-0} nopt=${2:-0}
    [ "$npoints" -gt 5000 ]; ok $? "$L: $npoints points baked, $nopt of them jumps"
    # the points whose DCRs held boot-patched sites (alternatives, return
    # sites), moved to their copies: the guest toggles the busiest of them
    moved=$(awk '/boot-patched site moved/ { print $3 }' "$d/bake.txt" | sort -u | paste -sd ' ')
    [ -n "$moved" ]; ok $? "$L: boot-patched sites moved with their copies at $(echo $moved | wc -w) points ($(echo $moved | cut -d' ' -f1-6)...)"
    sed "s/@NPOINTS@/$npoints/g; s/@NOPT@/$nopt/g; s/@MOVED@/$moved/g" "$src/t/kernel/guest-every.sh" > "$d/init"
    sh "$src/t/kernel/mkinitramfs.sh" "$d/initrd.cpio" "$d/init" || bail "initramfs"
    log=$d/serial.log
    start=$(date +%s)
    sh "$src/t/kernel/boot.sh" "$d/vmlinux" "$d/initrd.cpio" "$log" "${KP_BOOT_TIMEOUT:-300}"
    ok $? "$L: the guest ran and powered off in $(( $(date +%s) - start )) s (qemu TCG)"
    grep -q KPRW-END "$log"; ok $? "$L: the guest finished its checks"
    tr -d '\r' < "$log" | grep '^KPRW-INFO ' | sed 's/^KPRW-INFO /# /'
    tr -d '\r' < "$log" | grep -E '^KPRW-(OK|NOTOK) ' > "$d/guest.txt"
    while IFS= read -r line; do
        case $line in
        KPRW-OK*) ok 0 "$L: ${line#KPRW-OK }" ;;
        *) ok 1 "$L: ${line#KPRW-NOTOK }" ;;
        esac
    done < "$d/guest.txt"
    [ "$(wc -l < "$d/guest.txt")" = 13 ]; ok $? "$L: the guest reported its 13 checks"
}
# (KP_KERNEL_EVERY=0 leaves the two every-function kernels out)
[ "${KP_KERNEL_EVERY:-1}" = 0 ] || ! wanted 6.1-every || timed 6.1-every every 6.1

# the current LTS
! wanted 6.12-nokprobes || timed 6.12-nokprobes eval 'variant nokprobes 6.12; nokprobes_checks'
# 6.12 with what distribution kernels build in: IBT (a function's entry
# probe goes after its endbr64), return thunks, call-depth tracking,
# retpolines; every check of the others
mitigations_checks() {
    for o in X86_KERNEL_IBT MITIGATION_RETHUNK MITIGATION_CALL_DEPTH_TRACKING MITIGATION_RETPOLINE; do
        grep -q "^CONFIG_$o=y" "$obj/.config"; ok $? "$L: CONFIG_$o is built in"
    done
    case $entry in vfs_read+0x4) ok 0 "$L: entry probes go after endbr64 ($entry)" ;; *) ok 1 "$L: entry probes go after endbr64 ($entry)" ;; esac
}
! wanted 6.12-mitigations || timed 6.12-mitigations eval 'variant mitigations 6.12; nokprobes_checks; mitigations_checks'
[ "${KP_KERNEL_EVERY:-1}" = 0 ] || ! wanted 6.12-every || timed 6.12-every every 6.12

bench=$(grep -h '^KPRW-BENCH' "$W/kprobes/serial-vmlinux.log" 2>/dev/null | tr -d '\r')
if [ "${KP_KERNEL_BENCH:-0}" = 1 ] && [ -n "$bench" ]; then
    # TSC ticks per getpid(2) under TCG (an emulator's time): overheads over
    # the original code, and the ratios that carry over to hardware
    echo "$bench" | awk '
    function median(k,   i, j, t, a) {
        for (i = 1; i <= r; i++) a[i] = v[k, i] + 0
        for (i = 2; i <= r; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return a[int((r + 1) / 2)] }
    { r++; for (i = 2; i < NF; i += 2) v[$i, r] = $(i + 1) }
    END {
        b = median("base"); o = median("baked-opt"); i3 = median("baked-int3")
        ko = median("kprobe-opt"); ki = median("kprobe-int3")
        printf "# kernel bench, getpid(2), TSC ticks per call under qemu TCG (median of %d rounds, each best of 5 x 20000)\n", r
        printf "#   original code            %8.1f\n", b
        printf "#   baked optimized probe    %8.1f  (+%.1f)\n", o, o - b
        printf "#   kernel optprobe          %8.1f  (+%.1f)  optimized=%s\n", ko, ko - b, v["kprobe-optimized", r]
        printf "#   baked int3 probe         %8.1f  (+%.1f)\n", i3, i3 - b
        printf "#   kernel int3 kprobe       %8.1f  (+%.1f)\n", ki, ki - b
        if (ko > b) printf "#   baked optimized / kernel optprobe overhead: %.2f\n", (o - b) / (ko - b)
        if (ki > b) printf "#   baked int3 / kernel int3 overhead:          %.2f\n", (i3 - b) / (ki - b)
        kr = median("baked-kret"); kk = median("kretprobe")
        printf "#   baked kretprobe          %8.1f  (+%.1f)\n", kr, kr - b
        printf "#   kernel kretprobe         %8.1f  (+%.1f)\n", kk, kk - b
        if (kk > b) printf "#   baked kretprobe / kernel kretprobe overhead: %.2f\n", (kr - b) / (kk - b)
        # (TCG times drift between phases: the per-call ratio and the rounds
        # each won are steadier than overheads over the base)
        for (i = 1; i <= r; i++) wonopt += v["baked-opt", i] < v["kprobe-opt", i]
        if (ko > 0) printf "#   baked optimized / kernel optprobe per call:   %.2f (baked faster in %d of %d rounds)\n", o / ko, wonopt, r
        for (i = 1; i <= r; i++) won += v["baked-kret", i] < v["kretprobe", i]
        if (kk > 0) printf "#   baked kretprobe / kernel kretprobe per call: %.2f (baked faster in %d of %d rounds)\n", kr / kk, won, r
        for (i = 1; i <= r; i++) won3 += v["baked-int3", i] < v["kprobe-int3", i]
        if (ki > 0) printf "#   baked int3 / kernel int3 kprobe per call:     %.2f (baked faster in %d of %d rounds)\n", i3 / ki, won3, r
        # the overhead ratio of each round, baked / kernel: how much they swing
        split("opt:baked-opt:kprobe-opt int3:baked-int3:kprobe-int3 kretprobe:baked-kret:kretprobe", rows, " ")
        for (k = 1; k <= 3; k++) {
            split(rows[k], f, ":"); line = ""
            for (i = 1; i <= r; i++) {
                kb = v[f[3], i] - v["base", i]
                line = line (kb > 0 ? sprintf(" %.2f", (v[f[2], i] - v["base", i]) / kb) : " -")
            }
            printf "#     %-9s each round'"'"'s overhead ratio:%s\n", f[1], line
        }
    }'
fi
# cross_boot TAG WHAT WITH INFO RATIO: a row of two boots (guest-bpf-bench.sh's
# "TAG kp base B with W info I" lines), the baked point (6.1 nokprobes)
# against the kernel's kprobe (6.1 kprobes): each boot's overhead over its
# own original code, each round's, and their ratio
cross_boot() {
    rows=$(cat "$W/kprobes/serial-vmlinux.log" "$W/nokprobes/serial-vmlinux.log" 2>/dev/null | tr -d '\r' | grep "^$1 ")
    [ "${KP_KERNEL_BENCH:-0}" = 1 ] && [ -n "$rows" ] || return 0
    echo "$rows" | awk -v what="$2" -v with="$3" -v info="$4" -v ratio="$5" '
    function median(k, r,   i, j, t, a) {
        for (i = 1; i <= r; i++) a[i] = v[k, i] + 0
        for (i = 2; i <= r; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return a[int((r + 1) / 2)] }
    { k = $2; r[k]++; v[k "base", r[k]] = $4; v[k "with", r[k]] = $6; v[k "over", r[k]] = $6 - $4; o[k] = o[k] " " $8 }
    END {
        if (!r["baked"] || !r["kprobe"]) exit
        printf "# kernel bench, %s on getpid(2), TSC ticks per call under qemu TCG (median of %d and %d rounds, each best of 5 x 20000)\n", what, r["baked"], r["kprobe"]
        for (k = 0; k < 2; k++) {
            n = k ? "kprobe" : "baked"
            printf "#   %-38s base %8.1f  with the %s %8.1f  (+%.1f)  %s:%s\n", k ? "6.1 kprobes, the kernel'"'"'s kprobe" : "6.1 nokprobes, the baked point", median(n "base", r[n]), with, median(n "with", r[n]), median(n "over", r[n]), info, o[n]
            line = ""; for (i = 1; i <= r[n]; i++) line = line sprintf(" %+.1f", v[n "over", i])
            printf "#     each round'"'"'s overhead:%s\n", line
        }
        if (median("kprobeover", r["kprobe"]) > 0)
            printf "#   %s, baked / kernel kprobe overhead: %.2f\n", ratio, median("bakedover", r["baked"]) / median("kprobeover", r["kprobe"])
    }'
}
# the BPF row: a BPF kprobe program (counting); the kprobe_events row: an
# event with two fetch-args, enabled (recording into the ring buffer)
cross_boot KPRW-BPFBENCH "a BPF kprobe program (counting)" program optimized "BPF program"
cross_boot KPRW-EVBENCH "a kprobe_events event (a=%di b=+0(%di):u64, enabled)" event "hits+missed a round" "kprobe_events event"
echo "1..$n"
[ $failed = 0 ]
