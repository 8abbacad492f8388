#!/bin/sh
# Configures and builds kprewrite in ./build (out of tree).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] && [ Makefile.in -nt Makefile.am ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure -q
make -s -j"$(nproc)" >/dev/null
