#!/bin/sh
# Benchmark (not a test): kprewrite --check --probe '*' over large images.
# Usage: bench/check-speed.sh KPREWRITE [IMAGE...]; without IMAGEs it uses
# the largest binaries found on the machine and a Debian vmlinux if present.
kp=${1:?usage: check-speed.sh KPREWRITE [IMAGE...]}; shift
[ $# -gt 0 ] || for f in /usr/lib/debug/boot/vmlinux-* /usr/bin/gdb /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
    /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/ls; do [ -r "$f" ] && set -- "$@" "$f"; done
for img in "$@"; do
    start=$(date +%s.%N)
    out=$(taskset -c 0 "$kp" --check --summary --probe '*' "$img" 2>&1 | grep '^summary:')
    end=$(date +%s.%N)
    n=$(printf '%s\n' "$out" | sed -n 's/^summary: \([0-9]*\) probes.*/\1/p' | head -n 1)
    printf '%s: %s function entries in %.2f s (one core)\n' "$img" "${n:-?}" "$(echo "$end - $start" | bc)"
    printf '%s\n' "$out" | sed 's/^/    /'
done
