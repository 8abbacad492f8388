#!/bin/sh
# Second opinion on the decoder: every instruction boundary kprewrite finds
# in a function is one libopcodes (objdump) finds too, and the lengths agree.
. "$KP_SRCDIR/t/lib.sh"
OBJDUMP=${OBJDUMP:-objdump}
need "$CC" "$OBJDUMP"
D=$(tmpdir decode-vs-objdump)
$CC -O2 -o "$D/switch" "$KP_SRCDIR/t/data/switch.c"
$CC -O1 -o "$D/verdicts" "$KP_SRCDIR/t/data/verdicts.S" "$KP_SRCDIR/t/data/verdicts-main.c"
set -- "$D/switch" "$D/verdicts"
for lib in /lib/x86_64-linux-gnu/libz.so.1 /usr/bin/ls; do [ -r "$lib" ] && set -- "$@" "$lib"; done
for img in "$@"; do
    "$KPREWRITE" --check --disasm --probe '*' "$img" |
        awk 'NF >= 3 && $1 !~ /^0000/ { print $1, $2 }' | sort -u >"$D/ours"
    "$OBJDUMP" -d --no-show-raw-insn -w "$img" |
        awk '/^ *[0-9a-f]+:\t/ { a = $1; sub(":", "", a); print a }' | sort -u >"$D/theirs"
    total=$(wc -l <"$D/ours")
    missing=$(cut -d' ' -f1 "$D/ours" | comm -23 - "$D/theirs" | wc -l)
    ok $([ "$total" -gt 50 ] && [ "$missing" -eq 0 ]; echo $?) \
        "$(basename "$img"): $total instruction starts, $missing unknown to objdump"
    [ "$missing" -eq 0 ] || cut -d' ' -f1 "$D/ours" | comm -23 - "$D/theirs" | head -n 5 | sed 's/^/# /'
    # lengths: objdump's next address minus this one, for consecutive pairs we both have
    bad=$(perl -e 'open(T, $ARGV[0]) or die; my %t = map { chomp; ($_ => 1) } <T>;
        open(O, $ARGV[1]) or die; my $n = 0;
        while (<O>) { my ($a, $l) = split; $n++ unless $t{sprintf("%x", hex($a) + $l)} } print "$n\n"' \
        "$D/theirs" "$D/ours")
    # the last instruction of a section has no successor: allow a handful
    ok $([ "$bad" -le 3 ]; echo $?) "$(basename "$img"): lengths agree with objdump ($bad ends unmatched)"
done
done_testing
