#!/bin/sh
# /init of the check-kernel guest. The host fills in the probe names
# (@ENTRY@, @SYSCALL@, @MID@, @INT3@) and reads the serial log:
# every check prints "KPRW-OK desc" or "KPRW-NOTOK desc (why)".
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev; mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t debugfs none /sys/kernel/debug
K=/sys/kernel/debug/kprewrite
N=1000
check() { # DESC COMMAND...: ok when COMMAND succeeds
    d=$1; shift
    if "$@"; then echo "KPRW-OK $d"; else echo "KPRW-NOTOK $d"; fi
}
# delta SPEC ACTION: the hit count's growth over N actions
delta() { kdrive "$1" "$2" $N | awk '{ print $5 }'; }
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

dmesg > /tmp/dmesg
check "dmesg: the runtime armed the probes" grep -q "kprewrite: 4 probes armed (3 optimized)" /tmp/dmesg
check "dmesg: no WARNING, BUG, Oops" sh -c "! grep -E 'WARNING|BUG|Oops|Call Trace' /tmp/dmesg"
grep -E 'kprewrite|WARNING|BUG|Oops' /tmp/dmesg
echo KPRW-END
reboot -f
