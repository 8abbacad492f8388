#!/bin/sh
# make check-deb (TAP): builds the Debian packages from the release tarball
# (dpkg-buildpackage -us -uc -b: configure, build, make check, install),
# runs lintian on them, installs them on this machine (root), and runs the
# README's demo against the installed files only: the example built with
# the installed pkg-config file and kprewrite, its probes baked and hit;
# kprewrite-rt(3) and kprewrite(1) found by man, the bash completion and
# the CMake package in place, the kernel runtime's integrate.sh there. The
# packages are purged at the end (KP_DEB_KEEP=1 keeps them).
# KP_DEB_NOCHECK=1 builds them with DEB_BUILD_OPTIONS=nocheck: the test
# command sets it when make distcheck has just run the same tarball's
# make check (four runs of the suite do not fit CI's time).
# usage: check-deb.sh SRCDIR BUILDDIR
src=${1:?usage: check-deb.sh SRCDIR BUILDDIR}; build=${2:?}
W=$build/deb-work
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
bail() { echo "Bail out! $*"; exit 1; }
for t in dpkg-buildpackage dh lintian fakeroot; do command -v $t >/dev/null || bail "$t not found (scripts/install-deps.sh)"; done
[ "$(id -u)" = 0 ] || bail "installing the packages needs root"
rm -rf "$W"; mkdir -p "$W"

# the release tarball, with debian/ (make dist takes it)
make -s -C "$build" dist >"$W/dist.log" 2>&1 || bail "make dist failed ($W/dist.log)"
tar -C "$W" -xzf "$build"/kprewrite-*.tar.gz || bail "no tarball"
tree=$(ls -d "$W"/kprewrite-*/ | head -n 1)
ok $([ -f "$tree/debian/control" ]; echo $?) "the tarball has debian/"
if [ "${KP_DEB_NOCHECK:-0}" = 1 ]; then
    (cd "$tree" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b) >"$W/build.log" 2>&1
    ok $? "dpkg-buildpackage -us -uc -b builds it, nocheck (make distcheck ran its make check) ($(grep -m 1 -E '^dpkg-buildpackage: error' "$W/build.log"))"
else
    (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$W/build.log" 2>&1
    ok $? "dpkg-buildpackage -us -uc -b builds it, make check included ($(grep -m 1 -E '^(FAIL|dpkg-buildpackage: error)' "$W/build.log"))"
fi
debs=$(ls "$W"/*.deb 2>/dev/null)
for p in kprewrite libkprewrite-rt0 libkprewrite-rt-dev kprewrite-kernel-source; do
    ls "$W"/${p}_*.deb >/dev/null 2>&1; ok $? "the $p package was built"
done
changes=$(ls "$W"/*.changes 2>/dev/null | head -n 1)
lintian --fail-on error "$changes" >"$W/lintian.log" 2>&1
ok $? "lintian: no error ($(grep -c '^E:' "$W/lintian.log") errors, $(grep -c '^W:' "$W/lintian.log") warnings)"
grep -E '^(E|W):' "$W/lintian.log" | sed 's/^/# /'

# install them, then only the installed files
dpkg -i $debs >"$W/install.log" 2>&1
ok $? "dpkg -i installs them"
ok $([ -x /usr/bin/kprewrite ] && [ -f /usr/lib/x86_64-linux-gnu/pkgconfig/kprewrite-rt.pc ]; echo $?) \
    "kprewrite and kprewrite-rt.pc are installed"
ex=$W/example
mkdir -p "$ex"; cp "$src/examples/wordfreq.c" "$src/examples/handlers.c" "$src/examples/Makefile" "$ex/"
env -u PKG_CONFIG_PATH PATH=/usr/bin:/bin make -s -C "$ex" KPREWRITE=/usr/bin/kprewrite wordfreq >"$ex/make.log" 2>&1
ok $? "the example builds and bakes with the installed kprewrite and pkg-config file ($(grep -m 1 -i error "$ex/make.log"))"
out=$(env -u LD_LIBRARY_PATH "$ex/wordfreq" "the quick brown fox jumps over the lazy dog. The dog sleeps, the fox trots on." 2>&1)
echo "$out" | sed 's/^/# /' | tail -n 8
echo "$out" | grep -Eq 'count_word +16 hits'; ok $? "the demo runs against the installed runtime: count_word 16 hits"
echo "$out" | grep -q "count_word handler: 5 words start with 't'"; ok $? "its handlers ran"
# (/lib is /usr/lib on a merged-/usr system)
ldd "$ex/wordfreq" | grep -Eq '=> (/usr)?/lib/x86_64-linux-gnu/libkprewrite-rt.so.0 '; ok $? "it loads the installed libkprewrite-rt.so.0"

man -w kprewrite-rt >/dev/null 2>&1 && man -w kprewrite >/dev/null 2>&1; ok $? "man kprewrite-rt and man kprewrite find their pages"
ok $([ -f /usr/share/bash-completion/completions/kprewrite ]; echo $?) "the bash completion is installed"
ok $([ -f /usr/lib/x86_64-linux-gnu/cmake/kprewrite/kprewriteConfig.cmake ]; echo $?) "the CMake package is installed"
# every file the installed integrate.sh copies into a kernel tree is there
k=/usr/src/kprewrite/src/runtime/kernel
miss=
if [ -x $k/integrate.sh ]; then
    for f in $(sed -n 's/^for f in \(.*\); do$/\1/p' $k/integrate.sh | head -n 1) kprewrite.h; do
        [ -f $k/$f ] || miss="$miss $f"
    done
    for f in $(sed -n 's/.*put "\$top\/\([^"$]*\)".*/\1/p' $k/integrate.sh) src/runtime/core/control.c \
            src/runtime/core/table.c src/runtime/core/wanted.c; do
        [ -f /usr/src/kprewrite/$f ] || miss="$miss $f"
    done
else
    miss=integrate.sh
fi
ok $([ -z "$miss" ]; echo $?) "the kernel runtime and every file integrate.sh copies are in /usr/src/kprewrite${miss:+ (missing:$miss)}"
if command -v cmake >/dev/null; then
    mkdir -p "$W/cm/cmake"; cp "$src/examples/wordfreq.c" "$src/examples/handlers.c" "$W/cm/"
    cp "$src/examples/cmake/CMakeLists.txt" "$src/examples/cmake/probes.txt" "$W/cm/cmake/"
    (cmake -S "$W/cm/cmake" -B "$W/cm/b" && cmake --build "$W/cm/b") >"$W/cm.log" 2>&1
    ok $? "the CMake example builds against the installed package"
fi
if [ "${KP_DEB_KEEP:-0}" != 1 ]; then
    # every package installed from here (the -dbgsym ones too)
    dpkg --purge $(for d in $debs; do dpkg-deb -f "$d" Package; done) >"$W/purge.log" 2>&1
    ok $? "dpkg --purge removes them"
    ok $([ ! -e /usr/bin/kprewrite ] && [ ! -e /usr/src/kprewrite ] && ! dpkg -l 'kprewrite*' 'libkprewrite*' 2>/dev/null | grep -q '^[a-z][a-z] '; echo $?) \
        "and nothing of them is left"
fi
echo "1..$n"
[ $failed = 0 ]
