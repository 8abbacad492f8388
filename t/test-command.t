#!/bin/sh
# scripts/test.sh, README's test command, counts honestly: it runs in a
# stand-in tree (its install and build steps, and the build's make targets,
# are stubs) and each way a part can fail is counted as a failure; no log
# left by an earlier run is read as this run's; the last line's failed
# count is 0 exactly when the exit status is 0.
. "$KP_SRCDIR/t/lib.sh"
need make
D=$(tmpdir test-command)

# tree NAME: a stand-in tree with the real scripts/test.sh; its Makefile's
# targets do what the variables CHECK, DEB (shell commands) say
tree() {
    R=$D/$1; rm -rf "$R"; mkdir -p "$R/scripts" "$R/build"
    cp "$KP_SRCDIR/scripts/test.sh" "$R/scripts/"
    printf 'exit 0\n' >"$R/scripts/install-deps.sh"; printf 'exit 0\n' >"$R/scripts/build.sh"
    printf 'check:\n\t@$(CHECK)\ncheck-deb:\n\t@$(DEB)\n' >"$R/build/Makefile"
}
# log PASS FAIL SKIP: what automake's harness writes into test-suite.log
log() { printf '# TOTAL: %s\n# PASS:  %s\n# SKIP:  %s\n# XFAIL: 0\n# FAIL:  %s\n# XPASS: 0\n# ERROR: 0\n' \
    $(($1 + $2 + $3)) "$1" "$3" "$2"; }
# run: the test command in $R, only its first suite, and check-deb where
# DEB is set (the outer make's variables kept away from the stub's make)
run() {
    out=$(cd "$R" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL KP_SANITIZERS=0 KP_DISTCHECK=0 \
        KP_DEB=$([ -n "$DEB" ] && echo 1 || echo 0) KP_KERNEL=0 KP_CORPUS=0 KP_FRESH=0 CHECK="$CHECK" DEB="$DEB" \
        sh scripts/test.sh 2>&1)
    rc=$?
    last=$(printf '%s\n' "$out" | tail -n 1)
}
# agrees: the last line says 0 failed exactly when the exit status is 0
agrees() {
    f=$(printf '%s\n' "$last" | sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p')
    ok $([ -n "$f" ] && { [ "$f" -eq 0 ] && [ $rc -eq 0 ] || { [ "$f" -gt 0 ] && [ $rc -ne 0 ]; }; }; echo $?) \
        "$1: the last line ($last) agrees with the exit status $rc"
}

tree pass; log 5 0 1 >"$D/good.log"
CHECK="cp $D/good.log test-suite.log" DEB=; run
is "0|5 passed, 0 failed, 1 skipped" "$rc|$last" "a passing suite: its counts, exit 0"
agrees "a passing suite"

# a test program that does not compile: make check fails before the
# harness writes a log; an earlier run's log says all passed
tree nobuild; log 5 0 0 >"$R/build/test-suite.log"
CHECK="echo 't/foo-test.c:1: error: expected declaration' >&2; exit 2" DEB=; run
is "1|0 passed, 1 failed" "$rc|$last" "a test program that does not build: one failure, not the stale log's counts"
agrees "a test program that does not build"
like "no test-suite.log counts" "$out" "and it says there were no counts"

# make check fails while its log counts no failure (a harness error)
tree harness; log 3 0 0 >"$D/clean.log"
CHECK="cp $D/clean.log test-suite.log; exit 2" DEB=; run
is "1|3 passed, 1 failed" "$rc|$last" "make check fails with a log of no failures: one failure counted"
agrees "make check fails with a clean log"

# a failing test: its count
tree fail; log 4 2 0 >"$D/bad.log"
CHECK="cp $D/bad.log test-suite.log; exit 2" DEB=; run
is "1|4 passed, 2 failed" "$rc|$last" "two failing tests: 2 failed, exit 1"
agrees "two failing tests"

# a TAP target (check-deb) that fails before writing its log, an old log of
# ok lines beside it
tree deb; printf 'ok 1 - a\nok 2 - b\n' >"$R/build/check-deb.log"
CHECK="cp $D/good.log test-suite.log" DEB="exit 2"; run
is "1|5 passed, 1 failed, 1 skipped" "$rc|$last" "check-deb failing before its log: one failure, the old log's ok lines not counted"
agrees "check-deb failing before its log"
tree deb-ok
CHECK="cp $D/good.log test-suite.log" DEB="printf 'ok 1 - a\nok 2 - b\n' >check-deb.log"; run
is "0|7 passed, 0 failed, 1 skipped" "$rc|$last" "check-deb passing: its ok lines counted"

# the install step failing: a last line all the same
tree nodeps; printf 'echo install-deps: no network >&2; exit 1\n' >"$R/scripts/install-deps.sh"
CHECK=: DEB=; run
is "1|0 passed, 1 failed" "$rc|$last" "install-deps failing: 0 passed, 1 failed, exit 1"
done_testing
