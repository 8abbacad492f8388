#!/bin/sh
# The reason vocabulary lives in one header; the docs list exactly it, and
# the troubleshooting page says what to do about each.
. "$KP_SRCDIR/t/lib.sh"
H=$KP_SRCDIR/include/kprewrite/reasons.h
names=$(sed -n 's/^ *X([A-Z0-9_]*, *"\([a-z-]*\)".*/\1/p' "$H")
ok $([ "$(printf '%s\n' "$names" | wc -l)" -ge 15 ]; echo $?) "the header defines the vocabulary"
for n in $names; do
    [ "$n" = none ] && continue
    grep -q "^| \`$n" "$KP_SRCDIR/doc/reasons.md"; ok $? "doc/reasons.md lists $n"
    grep -q "^### \`$n\`\$" "$KP_SRCDIR/doc/troubleshooting.md"; ok $? "doc/troubleshooting.md says what to do about $n"
    grep -q "^\.B $(printf '%s' "$n" | sed 's/-/\\\\-/g')" "$KP_SRCDIR/doc/kprewrite.1"; ok $? "kprewrite(1) lists $n"
done
for n in $(sed -n 's/^| `\([a-z-]*\).*/\1/p' "$KP_SRCDIR/doc/reasons.md"); do
    printf '%s\n' "$names" | grep -qx "$n"; ok $? "doc/reasons.md: $n is a real reason"
done
done_testing
