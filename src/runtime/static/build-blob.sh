#!/bin/sh
# Builds the static runtime's blob (src/runtime/static): freestanding,
# compiled position independent and linked twice, at two bases; the two
# flat images must be the same bytes (nothing in the blob depends on where
# it lies: it is copied into a static executable's pool as it is).
#   sh build-blob.sh CC SRCDIR OUT SOURCES...
set -e
cc=$1 src=$2 out=$3
shift 3
dir=$out.d
rm -rf "$dir"
mkdir -p "$dir"
flags="-std=gnu11 -O2 -Wall -Wextra -Werror -ffreestanding -nostdlib -fPIE -fvisibility=hidden -mgeneral-regs-only
       -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-builtin
       -fno-tree-loop-distribute-patterns -ffunction-sections -fdata-sections -fcf-protection=none
       -I$src/include -I$src/src"
objs=
for f in "$@"; do
    o=$dir/$(basename "$f" | sed 's/\.[cS]$/.o/')
    $cc $flags -c -o "$o" "$src/$f"
    objs="$objs $o"
done
for base in 0 0x100000; do
    ld -o "$dir/blob-$base.elf" --gc-sections -T "$src/src/runtime/static/blob.lds" --defsym=BLOB_BASE=$base $objs
    objcopy -O binary "$dir/blob-$base.elf" "$dir/blob-$base.bin"
done
if ! cmp -s "$dir/blob-0.bin" "$dir/blob-0x100000.bin"; then
    echo "build-blob.sh: the static runtime depends on where it is loaded (an absolute address in it)" >&2
    exit 1
fi
cp "$dir/blob-0.bin" "$out"
rm -rf "$dir"
