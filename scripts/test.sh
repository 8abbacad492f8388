#!/bin/sh
# README's second command: install, build, run the whole test suite, and end
# with "N passed, N failed[, N skipped]" from the harness's own counts.
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/scripts/install-deps.sh" || exit 1
sh "$top/scripts/build.sh" || exit 1
cd "$top/build"
make -s -j"$(nproc)" check >check.out 2>&1
status=$?
grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' check.out | grep -v '^PASS' || true
[ $status -eq 0 ] || { echo "== test-suite.log"; sed -n '1,200p' test-suite.log; }
count() { sed -n "s/^# $1: *\([0-9]*\)/\1/p" test-suite.log | head -n 1; }
pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); xpass=$(count XPASS); skip=$(count SKIP)
xfail=$(count XFAIL)
passed=$(( ${pass:-0} + ${xfail:-0} )); failed=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} ))
if [ "${skip:-0}" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skip skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $status -eq 0 ] && [ $failed -eq 0 ]
