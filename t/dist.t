#!/bin/sh
# What `make dist` puts in the tarball, checked from the Makefiles (make
# distcheck, which .ci/run runs, builds and tests the tarball itself):
# no EXTRA_DIST entry is named like a make target (make dist would run that
# target: `fuzz` ran the fuzzers), and every header under src/ and include/
# is named in a Makefile (a header no _SOURCES, _HEADERS or EXTRA_DIST
# lists is left out, and the tarball does not build).
. "$KP_SRCDIR/t/lib.sh"
cd "$KP_SRCDIR" || exit 1
mk="Makefile.am t/Makefile.inc"

# the words of EXTRA_DIST assignments, continuation lines joined
extra=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' $mk | sed -n 's/^EXTRA_DIST *+*= *//p' | tr -s ' \t' '\n' | grep -v '^\$' | sort -u)
targets=$(sed -n 's/^\([A-Za-z0-9_./-][A-Za-z0-9_./-]*\):\([^=]\|$\).*/\1/p' $mk | sort -u)
[ -n "$extra" ] && [ -n "$targets" ]; ok $? "the Makefiles have EXTRA_DIST entries ($(echo $extra | wc -w)) and targets ($(echo $targets | wc -w))"
D=$(tmpdir dist)
printf '%s\n' $extra > "$D/extra"
both=$(printf '%s\n' $targets | grep -Fx -f "$D/extra" | tr '\n' ' ')
is "" "$both" "no EXTRA_DIST entry is named like a target"

# headers: named in a Makefile, or inside a directory EXTRA_DIST takes whole
dirs=$(for e in $extra; do [ -d "$e" ] && echo "$e/"; done)
missing=
for h in $(find src include -name '*.h' | sort); do
    grep -qF "$h" $mk && continue
    inside=
    for d in $dirs; do case $h in "$d"*) inside=1 ;; esac; done
    [ -n "$inside" ] || missing="$missing $h"
done
is "" "$missing" "every header under src/ and include/ goes into the tarball"
done_testing
