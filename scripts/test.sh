#!/bin/sh
# README's second command: install, build, run the whole test suite twice --
# the normal build (./build) and the ASan+UBSan build (./build-san) -- and end
# with "N passed, N failed[, N skipped]", the harness's own counts summed.
# KP_SANITIZERS=0 skips the sanitizer run. Then `make distcheck`, `make
# check-deb` (the Debian packages built, installed, demo run; KP_DEB=0
# skips it), `make
# check-kernel` (small kernels built, baked and booted under qemu: two of
# its seven, KP_KERNEL_VARIANTS=all for every one; KP_KERNEL=0 skips it) and `make
# check-corpus-quick` (Debian programs and libraries probed on every function
# and every return, their workloads' output compared with the originals';
# one row a file and mode; KP_CORPUS=0 skips it), and last `make
# check-fresh` (README's two commands on a fresh Debian 12 root, from /root
# and from under a mktemp -d with KP_FRESH=1, from under a mktemp -d alone
# with KP_FRESH=quick, as .ci/run asks, when CI's hour has room for it).
# Every part that fails adds at least one to the failed count, so the last
# line always agrees with the exit status (0 exactly when it says 0 failed).
top=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0 status=0
# took LABEL: how long the part since the last `took` took (CI's budget is
# 90 minutes on 2 cores: each part's time is printed, the whole at the end)
t_start=$(date +%s) t_last=$(date +%s)
took() { t_now=$(date +%s); echo "time: $1 took $((t_now - t_last)) s"; t_last=$t_now; }
summary() {
    if [ "$skipped" -gt 0 ]; then
        echo "$passed passed, $failed failed, $skipped skipped"
    else
        echo "$passed passed, $failed failed"
    fi
}
for step in install-deps build; do
    sh "$top/scripts/$step.sh" && continue
    echo "$step: scripts/$step.sh failed"; failed=1; summary; exit 1
done
took "install-deps and build"

count() { sed -n "s/^# $1: *\([0-9]*\)/\1/p" test-suite.log | head -n 1; }
suite() { # BUILD-DIR LABEL
    cd "$1" || { failed=$((failed + 1)); status=1; return; }
    # a test-suite.log left by an earlier run must not be read as this one's
    rm -f test-suite.log
    make -s -j"$(nproc)" check >check.out 2>&1
    rc=$?
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' check.out | grep -v '^PASS' | sed "s/^/[$2] /" || true
    [ $rc -eq 0 ] || { status=1; echo "== $2: make check exited $rc"; [ -f test-suite.log ] && sed -n '1,200p' test-suite.log; }
    pass= fail= err= xpass= xfail= skip=
    if [ -f test-suite.log ]; then
        pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); xpass=$(count XPASS); xfail=$(count XFAIL)
        skip=$(count SKIP)
    fi
    # no counts (a test program did not build, the harness did not run):
    # one failure
    [ -n "$pass" ] || { fail=1; echo "== $2: no test-suite.log counts"; tail -n 30 check.out; }
    # make check failed but the log counts no failure: one failure
    [ $rc -eq 0 ] || [ $(( ${fail:-0} + ${err:-0} + ${xpass:-0} )) -gt 0 ] || fail=1
    passed=$((passed + ${pass:-0} + ${xfail:-0}))
    failed=$((failed + ${fail:-0} + ${err:-0} + ${xpass:-0}))
    skipped=$((skipped + ${skip:-0}))
    echo "$2: ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} + ${xpass:-0} )) failed, ${skip:-0} skipped"
}

suite "$top/build" normal
took "make check"
if [ "${KP_SANITIZERS:-1}" != 0 ]; then
    mkdir -p "$top/build-san"
    if (cd "$top/build-san" && { [ -f Makefile ] || ../configure -q --enable-sanitizers; } &&
        make -s -j"$(nproc)" >build.out 2>&1); then
        suite "$top/build-san" asan+ubsan
    else
        echo "asan+ubsan: the sanitizer build failed"; tail -n 30 "$top/build-san/build.out" 2>/dev/null
        failed=$((failed + 1)); status=1
    fi
    took "asan+ubsan build and make check"
fi

# make distcheck: the tarball builds, passes make check and installs out of
# tree, from a read-only source tree (KP_DISTCHECK=0 skips it)
if [ "${KP_DISTCHECK:-1}" != 0 ]; then
    if make -s -C "$top/build" distcheck >"$top/build/distcheck.log" 2>&1; then
        passed=$((passed + 1)); echo "distcheck: 1 passed, 0 failed"
    else
        failed=$((failed + 1)); status=1; echo "distcheck: 0 passed, 1 failed"
        tail -n 30 "$top/build/distcheck.log"
    fi
    took distcheck
fi

# tap_target TARGET LABEL: make TARGET in build/, which writes TARGET.log
# (TAP); its ok and not-ok lines counted
tap_target() {
    log=$top/build/$1.log
    rm -f "$log"   # an earlier run's log is not this one's
    make -s -C "$top/build" "$1" >/dev/null 2>&1
    rc=$?
    tpass=$(grep -c '^ok' "$log" 2>/dev/null); tfail=$(grep -c -E '^(not ok|Bail out)' "$log" 2>/dev/null)
    [ $rc -eq 0 ] || { status=1; [ "${tfail:-0}" -gt 0 ] || tfail=1; grep -E '^(not ok|Bail out)' "$log"; tail -n 20 "$log"; }
    passed=$((passed + ${tpass:-0})); failed=$((failed + ${tfail:-0}))
    # a target that ran a test command of its own reports it ("; inside: ...")
    echo "$2: ${tpass:-0} passed, ${tfail:-0} failed$(sed -n 's/^check-[a-z]*: .*\(; inside: .*\)$/\1/p' "$log" 2>/dev/null)"
    took "$1"
}

# make check-deb: the Debian packages built from the tarball, lintian,
# installed and the demo run against them, purged (KP_DEB=0 skips it)
# (nocheck when distcheck has just run the same tarball's make check)
[ "${KP_DISTCHECK:-1}" = 0 ] || export KP_DEB_NOCHECK=${KP_DEB_NOCHECK:-1}
[ "${KP_DEB:-1}" = 0 ] || tap_target check-deb deb
# the kernels: two of make check-kernel's seven by default, as CI's time
# allows (6.1 with the kernel's kprobes beside baked ones, the KASLR
# bzImage boot; 6.12 without CONFIG_KPROBES, with IBT and the other
# mitigations, the kernel's kprobes KUnit suite on baked probes);
# KP_KERNEL_VARIANTS=all runs every one (doc/kernel.md has each one's time)
kv=${KP_KERNEL_VARIANTS-6.1-kprobes 6.12-mitigations}
[ "$kv" != all ] || kv=
export KP_KERNEL_VARIANTS="$kv"
[ "${KP_KERNEL:-1}" = 0 ] || tap_target check-kernel kernel

if [ "${KP_CORPUS:-1}" != 0 ]; then
    log=$top/build/check-corpus.log
    make -s -C "$top/build" check-corpus-quick >"$log" 2>&1
    rc=$?
    cpass=$(sed -n 's/^corpus: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log" | tail -n 1)
    cfail=$(sed -n 's/^corpus: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log" | tail -n 1)
    if [ $rc -ne 0 ]; then
        status=1; [ "${cfail:-0}" -gt 0 ] || cfail=1
        echo "== corpus: $log"
        sed -n '/^FILE /,$p' "$log" | grep -v '^corpus: ' || tail -n 30 "$log"
    fi
    passed=$((passed + ${cpass:-0})); failed=$((failed + ${cfail:-0}))
    echo "corpus: ${cpass:-0} passed, ${cfail:-0} failed"
    took check-corpus-quick
fi
# make check-fresh: README's two commands on a fresh Debian 12 root, last.
# KP_FRESH=1: from a clone in /root (the whole test command) and from
# under a mktemp -d (the normal suite); KP_FRESH=quick (what .ci/run asks
# for): under a mktemp -d only, and only when it fits in what is left of
# KP_TIME_BUDGET seconds (3600: CI's hour) by its measured time
# (KP_FRESH_NEEDS, 1500 s: doc/hardening.md), else one skip saying so;
# unset or 0: not run
fresh_fits() {
    used=$(( $(date +%s) - t_start ))
    [ $(( used + ${KP_FRESH_NEEDS:-1500} )) -le "${KP_TIME_BUDGET:-3600}" ]
}
case ${KP_FRESH:-0} in
    0) ;;
    quick) if fresh_fits; then export KP_FRESH_SCOPE=quick; tap_target check-fresh fresh
           else skipped=$((skipped + 1))
                echo "fresh: skipped: $used s used of KP_TIME_BUDGET=${KP_TIME_BUDGET:-3600}, it needs ${KP_FRESH_NEEDS:-1500}"
           fi ;;
    *) export KP_FRESH_SCOPE=full; tap_target check-fresh fresh ;;
esac
echo "time: all took $(( $(date +%s) - t_start )) s"

# each part counts its own failure; this only guards the promise above
[ $status -eq 0 ] || [ $failed -gt 0 ] || failed=1
summary
[ $failed -eq 0 ]
