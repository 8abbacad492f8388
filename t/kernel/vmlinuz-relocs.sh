#!/bin/sh
# vmlinuz-relocs.sh BZIMAGE OUT: the vmlinux.relocs a bzImage carries.
# The compressed payload is vmlinux.bin (the stripped ELF) followed by
# vmlinux.relocs (arch/x86/boot/compressed/Makefile); a 6.12 vmlinux has
# no .rela sections left, so this is where kprewrite --relocs finds them.
set -e
z=$1 out=$2
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
u16() { od -An -tu2 -j "$2" -N2 "$1" | tr -d ' '; }
setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$z" | tr -d ' ')
[ "$setup" != 0 ] || setup=4
[ "$(u32 "$z" $((0x202)))" = 1400005704 ] || { echo "$z: not a bzImage (no HdrS)" >&2; exit 1; }
start=$(( (setup + 1) * 512 + $(u32 "$z" $((0x248))) )) len=$(u32 "$z" $((0x24c)))
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dd if="$z" of="$tmp/payload" bs=4096 iflag=skip_bytes,count_bytes skip=$start count=$len status=none
case $(od -An -tx1 -N4 "$tmp/payload" | tr -d ' ') in
fd377a58) xz -dc --single-stream "$tmp/payload" > "$tmp/all" ;;
28b52ffd) zstd -qdc "$tmp/payload" > "$tmp/all" 2>/dev/null || [ -s "$tmp/all" ] ;;   # (a size word trails)
1f8b*) gzip -dc "$tmp/payload" > "$tmp/all" 2>/dev/null || [ -s "$tmp/all" ] ;;
*) echo "$z: payload compressed with neither xz, zstd nor gzip" >&2; exit 1 ;;
esac
[ "$(od -An -tx1 -N4 "$tmp/all" | tr -d ' ')" = 7f454c46 ] || { echo "$z: payload is not an ELF" >&2; exit 1; }
# the ELF ends with its section headers (objcopy -S puts them last)
shoff=$(od -An -tu8 -j 40 -N8 "$tmp/all" | tr -d ' ')
end=$((shoff + $(u16 "$tmp/all" 58) * $(u16 "$tmp/all" 60)))
size=$(stat -c %s "$tmp/all")
[ $end -lt $size ] || { echo "$z: no relocations after the ELF (a kernel built without CONFIG_RELOCATABLE?)" >&2; exit 1; }
tail -c $((size - end)) "$tmp/all" > "$out"
