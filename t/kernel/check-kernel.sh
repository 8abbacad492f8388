#!/bin/sh
# make check-kernel (TAP): builds the small 6.1 kernel with the kprewrite
# integration (cached under BUILDDIR/kbuild), bakes probes with the build
# system's post-link step (make KPREWRITE_PROBES=...), boots the rewritten
# vmlinux under qemu TCG with a busybox initramfs, and reads the guest's
# checks from the serial log. usage: check-kernel.sh SRCDIR BUILDDIR
src=${1:?usage: check-kernel.sh SRCDIR BUILDDIR}; build=${2:?}
K=$build/kprewrite
kb=$build/kbuild
W=$build/kwork
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
bail() { echo "Bail out! $*"; exit 1; }
for t in qemu-system-x86_64 cpio gcc objdump nm; do command -v $t >/dev/null || bail "$t not found (scripts/install-deps.sh)"; done
mkdir -p "$W"
sh "$src/t/kernel/build-kernel.sh" "$kb" > "$W/build.log" 2>&1 || { tail -n 20 "$W/build.log"; bail "kernel build failed ($W/build.log)"; }
tree=$kb/linux-source-6.1
cp "$tree/vmlinux" "$W/vmlinux.plain"
ok 0 "$(tail -n 1 "$W/build.log")"

# the mid-function point: right after ksys_read's first call (straight line,
# reached once per read(2) that got a file)
a=$(nm "$W/vmlinux.plain" | awk '$3 == "ksys_read" { print $1 }')
[ -n "$a" ] || bail "no ksys_read in vmlinux"
# (addresses are beyond sh arithmetic: objdump names the offsets itself)
lo=${a#ffffffff}
mid=$(objdump -d --prefix-addresses --no-show-raw-insn --start-address=0x$a \
    --stop-address=0xffffffff$(printf '%08x' $((0x$lo + 256))) "$W/vmlinux.plain" |
    awk '$3 == "call" { take = 1; next } take { gsub(/[<>]/, "", $2); print $2; exit }')
case $mid in ksys_read+0x*) ;; *) bail "cannot find an instruction after a call in ksys_read ($mid)" ;; esac
printf 'vfs_read\n__x64_sys_getpid\n%s\nstrncpy_from_user\n' "$mid" > "$W/probes.list"
"$K" --kernel --check --probe-file "$W/probes.list" "$W/vmlinux.plain" > "$W/check.txt"
cat "$W/check.txt" | sed 's/^/# /'
grep -q 'vfs_read+0x0  \[OPTIMIZED\]' "$W/check.txt"; ok $? "vfs_read+0 can be jump-optimized"
grep -q '__x64_sys_getpid+0x0  \[OPTIMIZED\]' "$W/check.txt"; ok $? "__x64_sys_getpid+0 can be jump-optimized"
grep -q "$mid  \[OPTIMIZED\]" "$W/check.txt"; ok $? "$mid (mid-function) can be jump-optimized"
grep -q 'strncpy_from_user+0x0  \[INT3\] exception-table' "$W/check.txt"; ok $? "strncpy_from_user+0 falls back to int3 (exception table)"

# the build system's post-link step bakes them into vmlinux
make -C "$tree" -s ARCH=x86_64 KPREWRITE="$K" KPREWRITE_PROBES="$W/probes.list" vmlinux > "$W/bake.log" 2>&1
ok $? "make KPREWRITE_PROBES=... relinks and bakes vmlinux"
grep -q '4 probes baked' "$W/bake.log"; ok $? "the post-link step baked 4 probes"
cp "$tree/vmlinux" "$W/vmlinux"
cmp -s "$W/vmlinux" "$W/vmlinux.plain"; [ $? = 1 ]; ok $? "the baked vmlinux differs from the plain one"
readelf -h "$W/vmlinux" >/dev/null 2>&1; ok $? "readelf reads the baked vmlinux"

gcc -O2 -static -o "$W/kdrive" "$src/t/kernel/kdrive.c" || bail "cannot build kdrive statically"
sed "s/@ENTRY@/vfs_read+0x0/g; s/@SYSCALL@/__x64_sys_getpid+0x0/g; s/@MID@/$mid/g; s/@INT3@/strncpy_from_user+0x0/g;
     s/@BENCH@/${KP_KERNEL_BENCH:-0}/g" \
    "$src/t/kernel/guest-init.sh" > "$W/init"
sh "$src/t/kernel/mkinitramfs.sh" "$W/initrd.cpio" "$W/init" "$W/kdrive" || bail "initramfs"
start=$(date +%s)
sh "$src/t/kernel/boot.sh" "$W/vmlinux" "$W/initrd.cpio" "$W/serial.log" "${KP_BOOT_TIMEOUT:-300}"
rc=$?
ok $rc "the guest ran and powered off in $(( $(date +%s) - start )) s (qemu TCG)"
grep -q KPRW-END "$W/serial.log"; ok $? "the guest finished its checks"
guest=$(grep -c '^KPRW-' "$W/serial.log")
grep -E '^KPRW-(OK|NOTOK) ' "$W/serial.log" | tr -d '\r' > "$W/guest.txt"
while IFS= read -r line; do
    case $line in
    KPRW-OK*) ok 0 "guest: ${line#KPRW-OK }" ;;
    *) ok 1 "guest: ${line#KPRW-NOTOK }" ;;
    esac
done < "$W/guest.txt"
[ "$(wc -l < "$W/guest.txt")" -ge 30 ]; ok $? "the guest reported its checks ($(wc -l < "$W/guest.txt"))"
bench=$(grep '^KPRW-BENCH' "$W/serial.log" | tr -d '\r')
if [ -n "$bench" ]; then
    # ns per getpid(2) under TCG (an emulator's nanoseconds): overheads over
    # the original code, and the ratios that carry over to hardware
    echo "$bench" | awk '{
        for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
        b = v["base"]
        printf "# kernel bench, getpid(2), ns per call under qemu TCG, best of 5 x 20000\n"
        printf "#   original code            %8.1f\n", b
        printf "#   baked optimized probe    %8.1f  (+%.1f)\n", v["baked-opt"], v["baked-opt"] - b
        printf "#   kernel optprobe          %8.1f  (+%.1f)  optimized=%s\n", v["kprobe-opt"], v["kprobe-opt"] - b, v["kprobe-optimized"]
        printf "#   baked int3 probe         %8.1f  (+%.1f)\n", v["baked-int3"], v["baked-int3"] - b
        printf "#   kernel int3 kprobe       %8.1f  (+%.1f)\n", v["kprobe-int3"], v["kprobe-int3"] - b
        ko = v["kprobe-opt"] - b; ki = v["kprobe-int3"] - b
        if (ko > 0) printf "#   baked optimized / kernel optprobe overhead: %.2f\n", (v["baked-opt"] - b) / ko
        if (ki > 0) printf "#   baked int3 / kernel int3 overhead:          %.2f\n", (v["baked-int3"] - b) / ki
    }'
fi
[ $failed = 0 ] || { echo "# serial log: $W/serial.log"; tail -n 40 "$W/serial.log" | sed 's/^/# /'; }
echo "1..$n"
[ $failed = 0 ]
