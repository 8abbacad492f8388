#!/bin/sh
# Installs the corpus of `make check-corpus` (the PACKAGE column of
# t/corpus/corpus.list) and what drives it: the servers' clients (curl,
# redis-tools, libmemcached-tools, ffmpeg), gdb and file for the crashes' backtraces.
# Debian 12 packages only; nothing is started (policy-rc.d as set up, or
# services are simply not running in a container).
set -e
here=$(cd "$(dirname "$0")" && pwd)
pkgs="$(awk '!/^#/ && NF >= 3 { print $2 }' "$here/corpus.list" | sort -u | tr '\n' ' ')"
pkgs="$pkgs curl redis-tools libmemcached-tools ffmpeg gdb file coreutils gawk mawk"
missing=
for p in $pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
[ "$(id -u)" = 0 ] || { echo "corpus/install: run as root to install:$missing" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
