#!/bin/sh
# Builds the small test kernel with the kprewrite integration, cached:
#   build-kernel.sh OUTDIR [EXTRA_CONFIG_FILE]
# unpacks /usr/src/linux-source-6.1.tar.xz into OUTDIR/linux-source-6.1 once,
# applies src/runtime/kernel/integrate.sh (refreshes the runtime's files),
# configures tinyconfig + t/kernel/config.fragment (+ EXTRA), builds vmlinux.
# A built tree is reused: only what changed is rebuilt.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:?usage: build-kernel.sh OUTDIR [EXTRA_CONFIG]}
extra=$2
tarball=/usr/src/linux-source-6.1.tar.xz
[ -f "$tarball" ] || { echo "build-kernel.sh: $tarball missing (apt-get install linux-source-6.1)" >&2; exit 1; }
mkdir -p "$out"
src=$out/linux-source-6.1
start=$(date +%s)
[ -f "$src/Makefile" ] || tar -C "$out" -xf "$tarball"
sh "$top/src/runtime/kernel/integrate.sh" "$src" >/dev/null
frag=$out/config.wanted
cat "$here/config.fragment" ${extra:+"$extra"} > "$frag"
if [ ! -f "$src/.config" ] || [ "$frag" -nt "$src/.config" ] || ! cmp -s "$frag" "$out/config.applied"; then
    make -C "$src" -s ARCH=x86_64 tinyconfig >/dev/null
    "$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" "$frag" >/dev/null
    make -C "$src" -s ARCH=x86_64 olddefconfig >/dev/null
    # every option asked for must have stuck
    grep -v '^#' "$frag" | grep . | while IFS= read -r line; do
        opt=${line%%=*}; val=${line#*=}
        if [ "$val" = n ]; then
            ! grep -q "^$opt=" "$src/.config" || { echo "build-kernel.sh: $opt is still set" >&2; exit 1; }
        else
            grep -qx "$line" "$src/.config" || { echo "build-kernel.sh: $line did not stick" >&2; exit 1; }
        fi
    done
    cp "$frag" "$out/config.applied"
fi
make -C "$src" -s ARCH=x86_64 -j"$(nproc)" vmlinux
echo "build-kernel.sh: $src/vmlinux built in $(( $(date +%s) - start )) s"
