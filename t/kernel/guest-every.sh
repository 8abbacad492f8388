#!/bin/sh
# /init of check-kernel's "every function entry" guest: a kernel with every
# probe-able function entry baked (count-only). The host fills in
# @NPOINTS@ and @NOPT@ (from the baked table) and reads the serial log:
# "KPRW-OK desc" or "KPRW-NOTOK desc" a check.
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev; mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t debugfs none /sys/kernel/debug
K=/sys/kernel/debug/kprewrite
check() { # DESC COMMAND...: ok when COMMAND succeeds
    d=$1; shift
    if "$@"; then echo "KPRW-OK $d"; else echo "KPRW-NOTOK $d"; fi
}
total() { awk '{ for (i = 1; i < NF; i++) if ($i == "hits") s += $(i + 1) } END { printf "%d\n", s }' "$1"; }
hit() { awk '{ for (i = 1; i < NF; i++) if ($i == "hits" && $(i + 1) > 0) n++ } END { print n + 0 }' "$1"; }
work() { for i in 1 2 3; do ls -lR /proc/self /sys/kernel > /dev/null 2>&1; cat /proc/meminfo /proc/stat > /dev/null; done; }

echo KPRW-BEGIN
cat $K/list > /tmp/l0
n=$(wc -l < /tmp/l0)
check "list has the @NPOINTS@ baked points ($n)" [ "$n" = @NPOINTS@ ]
check "@NOPT@ of them optimized ($(grep -c '\[OPTIMIZED\]' /tmp/l0))" [ "$(grep -c '\[OPTIMIZED\]' /tmp/l0)" = @NOPT@ ]
work
cat $K/list > /tmp/l1
echo "KPRW-INFO $(hit /tmp/l1) of $n points hit, $(total /tmp/l1) hits in all, since boot"
check "points were hit since boot: $(hit /tmp/l1) of $n" [ "$(hit /tmp/l1)" -gt 1000 ]
echo 0 > $K/enabled
cat $K/list > /tmp/l2
check "enabled 0: no point is a jump" [ "$(grep -c '\[OPTIMIZED\]' /tmp/l2)" = 0 ]
work
cat $K/list > /tmp/l3
check "enabled 0: nothing counted over a workload ($(total /tmp/l2) then $(total /tmp/l3))" [ "$(total /tmp/l2)" = "$(total /tmp/l3)" ]
echo 1 > $K/enabled
cat $K/list > /tmp/l4
check "enabled 1: the @NOPT@ jumps are back" [ "$(grep -c '\[OPTIMIZED\]' /tmp/l4)" = @NOPT@ ]
work
cat $K/list > /tmp/l5
check "enabled 1: counting again ($(total /tmp/l4) then $(total /tmp/l5))" [ "$(total /tmp/l5)" -gt "$(total /tmp/l4)" ]
# @MOVED@: points whose DCRs held sites the kernel patched at boot
# (alternatives, return sites), moved to the copies, which the kernel
# patched instead; disabling one puts back what the kernel patched. The
# busiest of them since boot, disabled over a workload, then enabled
hits_of() { awk -v p="$1" '$3 == p { for (i = 1; i < NF; i++) if ($i == "hits") print $(i + 1) }' "$2" | head -n 1; }
busy= most=-1
for p in @MOVED@; do
    h=$(hits_of $p /tmp/l5); echo "KPRW-INFO moved site at $p: ${h:-?} hits"
    [ "${h:-0}" -le "$most" ] || { busy=$p most=$h; }
done
check "a point whose boot-patched site moved was hit: $busy ($most hits)" [ "$most" -gt 0 ]
echo "disable $busy" > $K/control
h0=$(hits_of $busy $K/list); work; h1=$(hits_of $busy $K/list)
check "$busy disabled (its site as the kernel patched it): nothing counted over a workload ($h0 then $h1)" [ "$h0" = "$h1" ]
echo "enable $busy" > $K/control
work; sleep 1; h2=$(hits_of $busy $K/list)
check "$busy enabled again: counting ($h1 then $h2)" [ "$h2" -gt "$h1" ]
dmesg > /tmp/dmesg
check "dmesg: the runtime armed the probes" grep -q "kprewrite: @NPOINTS@ probes armed (@NOPT@ optimized)" /tmp/dmesg
check "dmesg: no WARNING, BUG, Oops" sh -c "! grep -E 'WARNING|BUG|Oops|Call Trace' /tmp/dmesg"
check "dmesg: every point armed (none 'not patched')" sh -c "! grep -E 'could not be armed|not patched' /tmp/dmesg"
grep -E 'kprewrite|WARNING|BUG|Oops' /tmp/dmesg
echo KPRW-END
reboot -f
