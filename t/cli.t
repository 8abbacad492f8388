#!/bin/sh
# The command line: --help and the man page describe the same options.
. "$KP_SRCDIR/t/lib.sh"
help=$("$KPREWRITE" --help); rc=$?
is 0 $rc "--help exits 0"
for opt in $(printf '%s\n' "$help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$(printf '%s' "$opt" | sed 's/-/\\\\-/g')" "$KP_SRCDIR/doc/kprewrite.1"
    ok $? "kprewrite(1) documents $opt"
done
for opt in $(grep -o '^\.B \\-\\-[a-z-]*' "$KP_SRCDIR/doc/kprewrite.1" | sed 's/^\.B //; s/\\//g' | sort -u); do
    printf '%s\n' "$help" | grep -q -- "$opt"
    ok $? "--help mentions $opt from the man page"
done
like '^kprewrite [0-9]+\.[0-9]+' "$("$KPREWRITE" --version)" "--version"
err=$("$KPREWRITE" --detours=fast --probe main /bin/true 2>&1); rc=$?
is "1|kprewrite: --detours takes compact, inline or shared, not 'fast'" "$rc|$err" "--detours with a bad mode: one line, exit 1"
for code in 0 1 2 3; do
    grep -q "^\.B $code\$" "$KP_SRCDIR/doc/kprewrite.1"
    ok $? "exit status $code is documented"
done
done_testing
