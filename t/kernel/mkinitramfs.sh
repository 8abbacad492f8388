#!/bin/sh
# mkinitramfs.sh OUT.cpio INIT_SCRIPT [FILE...]: a newc initramfs with
# busybox-static (applets installed at boot), INIT_SCRIPT as /init and each
# FILE in /bin.
set -e
out=${1:?usage: mkinitramfs.sh OUT.cpio INIT [FILE...]}; init=${2:?}; shift 2
bb=/bin/busybox
[ -x "$bb" ] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' ||
    { echo "mkinitramfs.sh: $bb is not busybox-static (apt-get install busybox-static)" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$bb" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$init" "$root/init"
chmod +x "$root/init"
for f in "$@"; do cp "$f" "$root/bin/"; done
(cd "$root" && find . | cpio -o -H newc --quiet) > "$out"
