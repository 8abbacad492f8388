#!/bin/sh
# Installs what kprewrite needs to build and test, from Debian 12 packages:
# every tool a test or script runs (a fresh machine has only what
# debootstrap --variant=minbase gives: make check-fresh tries it), the
# packages of make check-kernel (libbpf-dev, zlib1g-dev: its static BPF
# loader) and check-deb, and debootstrap for check-fresh.
set -e
pkgs="build-essential autoconf automake libtool pkg-config libelf-dev libzydis-dev libzycore-dev
      binutils g++ valgrind perl strace clang libclang-rt-14-dev util-linux gdb liblief-dev
      linux-source-6.1 linux-source-6.12 qemu-system-x86 busybox-static bc bison flex libssl-dev cpio xz-utils kmod
      libbpf-dev zlib1g-dev musl-tools
      pigz elfutils ripgrep fd-find fuse3 cmake meson ninja-build dwarves
      debhelper dh-autoreconf lintian fakeroot debootstrap
      procps python3 libpython3.11 libnettle8 man-db groff-base golang-go"
missing=
for p in $pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    [ "$(id -u)" = 0 ] || { echo "install-deps: run as root to install:$missing" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
