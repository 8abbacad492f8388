#!/bin/sh
# make check-reloc: every ELF file under DIRS (default /usr/bin and
# /usr/lib/x86_64-linux-gnu) that kprewrite accepts is rewritten with
# --probe '*' in the three detour layouts (compact, inline, shared) into a scratch
# directory, and t/reloc/reloc-check checks every relocated copy and every
# changed byte. Prints a summary (files, refusals by reason, probes checked,
# mismatches by rule, the worst files); every mismatch line goes to
# BUILDDIR/check-reloc.mismatches (at most RELOC_LINES a rule, file and
# layout; all are counted), what happened to each file to
# BUILDDIR/check-reloc.results. Exit 1 when any mismatch was found.
#
#   sh t/reloc/sweep.sh BUILDDIR [DIR...]
# Environment: RELOC_JOBS (2), RELOC_LINES (lines kept a rule and file, 20),
# RELOC_LAYOUTS (the layouts, "compact inline shared").
set -u
if [ "${1:-}" = --one ]; then
    # one file: FILE -> "file FILE", then per layout "refused|checked|failed ..." lines
    f=$2
    W=$(mktemp -d "$RELOC_WORK/jobs/XXXXXX") || exit 1
    # a file of results a job: two jobs' lines never interleave
    exec >"$RELOC_WORK/res/${W##*/}"
    echo "file $f"
    for layout in ${RELOC_LAYOUTS:-compact inline shared}; do
        "$KP" --runtime "$RT" --detours "$layout" --probe '*' -o "$W/out" "$f" >/dev/null 2>"$W/err"
        rc=$?
        if [ ! -s "$W/out" ] || [ $rc -eq 1 ] || [ $rc -gt 3 ]; then
            # the reason (the last line: one before may count refused points)
            # without the file name: "kprewrite: FILE: reason (details)"
            why=$(tail -n 1 "$W/err" | sed -e 's|^kprewrite: ||' | awk -v f="$f: " 'index($0, f) == 1 { $0 = substr($0, length(f) + 1) }
                { sub(/ \(.*/, ""); sub(/;.*/, ""); gsub(/[0-9]+/, "N"); print substr($0, 1, 90) }')
            echo "refused $layout ${why:-exit $rc, no message}"
            rm -f "$W/out"
            continue
        fi
        "$RC" -m "${RELOC_LINES:-20}" -L "$f ($layout)" "$f" "$W/out" >"$W/rc" 2>"$W/rc.err"
        crc=$?
        if [ $crc -gt 1 ]; then
            echo "failed $layout $(head -n 1 "$W/rc.err")"
        else
            grep -v '^reloc-check: ' "$W/rc" | sed 's/^/mismatch /'
            sed -n 's/^reloc-check: .*: \([0-9]*\) entries (\([0-9]*\) optimized, \([0-9]*\) int3), \([0-9]*\) instructions checked, \([0-9]*\) site boundaries checked, \([0-9]*\) mismatches:*\(.*\)$/checked '"$layout"' \1 \2 \3 \4 \6 \5\7/p' "$W/rc"
        fi
        rm -f "$W/out"
    done
    rm -rf "$W"
    exit 0
fi

BUILDDIR=$1
shift
[ $# -gt 0 ] || set -- /usr/bin /usr/lib/x86_64-linux-gnu
KP=$BUILDDIR/kprewrite
RC=$BUILDDIR/t/reloc/reloc-check
RT=$BUILDDIR/.libs/libkprewrite-rt.so.0
for x in "$KP" "$RC" "$RT"; do
    [ -e "$x" ] || { echo "check-reloc: $x is missing: build first (make, make t/reloc/reloc-check)" >&2; exit 2; }
done
RELOC_WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-reloc.XXXXXX")
trap 'rm -rf "$RELOC_WORK"' EXIT INT TERM
export KP RC RT RELOC_WORK
mkdir -p "$RELOC_WORK/jobs" "$RELOC_WORK/res"
OUT=$BUILDDIR/check-reloc.mismatches
start=$(date +%s)

# files, symlinks followed (/usr/bin/fdfind points into /usr/lib/cargo), each
# inode once (a library and its symlinks, hard links), ELF by magic
find -L "$@" -type f -printf '%D:%i %p\n' 2>/dev/null | sort -k1,1 -u | cut -d' ' -f2- |
    while IFS= read -r f; do
        [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] && printf '%s\0' "$f"
    done >"$RELOC_WORK/list"
nfiles=$(tr -cd '\0' <"$RELOC_WORK/list" | wc -c)
echo "check-reloc: $nfiles ELF files under $*, rewritten in the layouts ${RELOC_LAYOUTS:-compact inline shared}, ${RELOC_JOBS:-2} at a time"

nice -n 10 xargs -0 -P "${RELOC_JOBS:-2}" -n 1 sh "$0" --one <"$RELOC_WORK/list"
find "$RELOC_WORK/res" -type f -exec cat {} + >"$RELOC_WORK/results"

grep '^mismatch ' "$RELOC_WORK/results" | sed 's/^mismatch //' >"$OUT"
cp "$RELOC_WORK/results" "$BUILDDIR/check-reloc.results"
end=$(date +%s)
awk -v nfiles="$nfiles" -v secs=$((end - start)) -v out="$OUT" '
    $1 == "file" { f = substr($0, 6); next }
    $1 == "refused" {
        why = $0; sub(/^refused [a-z]* /, "", why)
        if (!(f in refused)) { refused[f] = why; nref[why]++; nrefused++ }
        lay_ref[$2]++
        next
    }
    $1 == "failed" { failed[f " (" $2 ")"] = $0; nfailed++; next }
    $1 == "checked" {
        lay = $2; checked[f] = 1
        entries[lay] += $3; opt[lay] += $4; int3[lay] += $5; insns[lay] += $6; mis[lay] += $7; bounds[lay] += $8
        worst[f] += $7
        # "rule n, rule n" after the counts
        rest = $0; sub(/^checked [a-z]* [0-9]* [0-9]* [0-9]* [0-9]* [0-9]* [0-9]*:? ?/, "", rest)
        n = split(rest, parts, /, /)
        for (i = 1; i <= n; i++) {
            split(parts[i], rp, " ")
            if (rp[1] != "") {
                byrule[rp[1]] += rp[2]; rl[rp[1], lay] += rp[2]
                if (!((rp[1], f) in seen)) { seen[rp[1], f] = 1; files_rule[rp[1]]++ }
            }
        }
        next
    }
    END {
        nchecked = 0; for (x in checked) nchecked++
        printf "check-reloc: %d files, %d checked, %d refused by kprewrite, %d checker failures (%d s)\n",
            nfiles, nchecked, nrefused, nfailed, secs
        if (nrefused) {
            print "refused by kprewrite, by reason (files):"
            for (w in nref) printf "  %6d  %s\n", nref[w], w | "sort -rn"
            close("sort -rn")
        }
        for (x in failed) print "checker failure: " failed[x]
        split("compact inline shared", lays, " ")
        for (li = 1; li <= 3; li++) if ((lay = lays[li]) in entries)
            printf "%-7s probes checked: %d (%d optimized, %d int3), %d instructions, %d site boundaries, %d mismatches\n",
                lay, entries[lay], opt[lay], int3[lay], insns[lay], bounds[lay], mis[lay]
        if (length(byrule)) {
            print "mismatches by rule (compact / inline / shared; files):"
            for (r in byrule)
                printf "  %6d  %-20s %d / %d / %d; %d files\n", byrule[r], r, rl[r, "compact"], rl[r, "inline"], rl[r, "shared"], files_rule[r] | "sort -rn"
            close("sort -rn")
            print "worst files (mismatches, all layouts):"
            for (x in worst) if (worst[x]) printf "  %6d  %s\n", worst[x], x | "sort -rn | head -n 15"
            close("sort -rn | head -n 15")
            printf "every mismatch line: %s\n", out
        } else {
            print "no mismatch"
        }
    }' "$RELOC_WORK/results"
[ -s "$OUT" ] && exit 1
grep -q '^failed ' "$RELOC_WORK/results" && exit 1
exit 0
