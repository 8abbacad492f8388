#!/bin/sh
# boot.sh VMLINUX INITRAMFS LOG [TIMEOUT]: boots the uncompressed vmlinux
# (PVH entry) under qemu's TCG, two CPUs (KP_SMP=N: N), with the serial console into LOG. The guest
# ends by rebooting (-no-reboot makes qemu exit). Exit 0 when qemu exited by
# itself, 124 on the timeout.
vmlinux=${1:?usage: boot.sh VMLINUX INITRAMFS LOG [TIMEOUT]}; initrd=${2:?}; log=${3:?}; limit=${4:-300}
command -v qemu-system-x86_64 >/dev/null || { echo "boot.sh: qemu-system-x86_64 missing" >&2; exit 1; }
timeout "$limit" qemu-system-x86_64 -accel tcg -cpu max -smp ${KP_SMP:-2} -m 256M -no-reboot \
    -kernel "$vmlinux" -initrd "$initrd" -append "console=ttyS0 panic=-1 quiet loglevel=4" \
    -serial "file:$log" -monitor none -display none </dev/null >/dev/null 2>&1
