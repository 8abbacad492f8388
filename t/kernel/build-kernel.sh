#!/bin/sh
# Builds a small test kernel with the kprewrite integration, cached:
#   build-kernel.sh OUTDIR VARIANT [VERSION]
# unpacks /usr/src/linux-source-VERSION.tar.xz (6.1 unless given) into
# OUTDIR/linux-source-VERSION once, applies src/runtime/kernel/integrate.sh
# (refreshes the runtime's files), configures tinyconfig +
# t/kernel/config.fragment (+ t/kernel/config-VERSION.fragment if there is
# one) + t/kernel/VARIANT.config in OUTDIR/VARIANT (6.1) or
# OUTDIR/VERSION-VARIANT (make O=) and builds vmlinux there. A built tree
# is reused: only what changed is rebuilt.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:?usage: build-kernel.sh OUTDIR VARIANT [VERSION]}; variant=${2:?usage: build-kernel.sh OUTDIR VARIANT [VERSION]}
ver=${3:-6.1}
[ -f "$here/$variant.config" ] || { echo "build-kernel.sh: no $here/$variant.config" >&2; exit 1; }
tarball=/usr/src/linux-source-$ver.tar.xz
[ -f "$tarball" ] || { echo "build-kernel.sh: $tarball missing (apt-get install linux-source-$ver)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)   # make -C would take a relative O= from the source tree
src=$out/linux-source-$ver
obj=$out/$variant
[ "$ver" = 6.1 ] || obj=$out/$ver-$variant
start=$(date +%s)
[ -f "$src/Makefile" ] || tar -C "$out" -xf "$tarball"
sh "$top/src/runtime/kernel/integrate.sh" "$src" >/dev/null
mkdir -p "$obj"
frag=$obj/config.wanted
cat "$here/config.fragment" $(ls "$here/config-$ver.fragment" 2>/dev/null) "$here/$variant.config" > "$frag"
if [ ! -f "$obj/.config" ] || ! cmp -s "$frag" "$obj/config.applied"; then
    make -C "$src" -s O="$obj" ARCH=x86_64 tinyconfig >/dev/null
    "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >/dev/null
    make -C "$src" -s O="$obj" ARCH=x86_64 olddefconfig >/dev/null
    # every option asked for (its last line) must have stuck
    grep '^CONFIG_' "$frag" | awk -F= '{ v[$1] = $0 } END { for (k in v) print v[k] }' |
    while IFS= read -r line; do
        opt=${line%%=*}; val=${line#*=}
        if [ "$val" = n ]; then
            ! grep -q "^$opt=" "$obj/.config" || { echo "build-kernel.sh: $opt is still set" >&2; exit 1; }
        else
            grep -qx "$line" "$obj/.config" || { echo "build-kernel.sh: $line did not stick" >&2; exit 1; }
        fi
    done
    cp "$frag" "$obj/config.applied"
fi
make -C "$src" -s O="$obj" ARCH=x86_64 -j"$(nproc)" vmlinux
echo "build-kernel.sh: $ver $variant vmlinux built in $(( $(date +%s) - start )) s"
