#!/bin/sh
# make reach-kernel: kprewrite --kernel --check --probe '*' on Debian's own
# generic-flavour vmlinux images (the linux-image-*-amd64-dbg packages, with
# symbols) of 6.1 and 6.12, and the reach table by verdict and reason.
# 6.12's vmlinux has its relocations stripped: they come from the matching
# -unsigned package's bzImage (t/kernel/vmlinuz-relocs.sh). On 6.1, where
# the .rela sections are kept, both sources are checked to agree.
# Packages are cached in $KP_DBG_CACHE (default BUILD/kbuild/dbg): ~2 GB.
src=$1 build=$2
K=$build/kprewrite
C=${KP_DBG_CACHE:-$build/kbuild/dbg}
mkdir -p "$C" || exit 1
cd "$C" || exit 1
die() { echo "reach-kernel: $*" >&2; exit 1; }
now() { date +%s.%N; }

# image META: the versioned package META depends on; its vmlinux and relocs
# in $C/NAME/
image() {
    dbg=$(apt-cache depends "$1" 2>/dev/null | awk '/Depends: linux-image-.*-dbg/ { print $2; exit }')
    [ -n "$dbg" ] || die "apt knows no $1 (apt-get update; bookworm-security in sources.list for 6.12)"
    name=${dbg%-dbg}
    mkdir -p "$name"
    if [ ! -s "$name/vmlinux" ]; then
        ls ${dbg}_*.deb > /dev/null 2>&1 || apt-get download "$dbg" > /dev/null || die "cannot download $dbg"
        dpkg-deb --fsys-tarfile ${dbg}_*.deb | tar -xO --wildcards './usr/lib/debug/boot/vmlinux-*' > "$name/vmlinux.tmp" &&
            mv "$name/vmlinux.tmp" "$name/vmlinux" || die "no vmlinux in ${dbg}_*.deb"
    fi
    if [ ! -s "$name/vmlinux.relocs" ]; then
        u=$name-unsigned
        ls ${u}_*.deb > /dev/null 2>&1 || apt-get download "$u" > /dev/null || die "cannot download $u"
        dpkg-deb --fsys-tarfile ${u}_*.deb | tar -xO --wildcards './boot/vmlinuz-*' > "$name/vmlinuz" ||
            die "no vmlinuz in ${u}_*.deb"
        sh "$src/t/kernel/vmlinuz-relocs.sh" "$name/vmlinuz" "$name/vmlinux.relocs.tmp" &&
            mv "$name/vmlinux.relocs.tmp" "$name/vmlinux.relocs" || die "no relocs in $name/vmlinuz"
    fi
    echo "$name"
}

names=
for meta in linux-image-amd64-dbg linux-image-6.12-amd64-dbg; do
    n=$(image $meta) || exit 1
    names="$names $n"
    v=$n/vmlinux
    r=
    readelf -SW "$v" | grep -q ' \.rela\.text ' || r="--relocs $n/vmlinux.relocs"
    t0=$(now)
    "$K" --kernel --check $r --probe '*' "$v" > "$n/check.txt" 2> "$n/check.err"
    rc=$? t1=$(now)
    [ $rc = 2 ] || [ $rc = 3 ] || { cat "$n/check.err"; die "$n: kprewrite --check exit $rc"; }
    echo "$t0 $t1" | awk '{ printf "%.2f\n", $2 - $1 }' > "$n/seconds"
    echo "# $n: kprewrite --kernel --check${r:+ --relocs vmlinux.relocs} --probe '*': $(cat "$n/seconds") s, $(wc -l < "$n/check.txt") entries"
    if [ -z "$r" ]; then
        # the same relocation sites from both sources: where the .rela
        # sections' relocations moved to the copy (or refused), the relocs
        # file's, which cannot move, make the entry int3 or refused
        "$K" --kernel --check --relocs "$n/vmlinux.relocs" --probe '*' "$v" 2>/dev/null |
            awk '/reserved:relocation/ { print $3 }' | sort > "$n/sites.relocs"
        awk '/reserved:relocation|KASLR relocation moved/ { print $3 }' "$n/check.txt" | sort > "$n/sites.rela"
        # (an entry int3 for another reason does not mention a relocation
        # after its first instruction)
        comm -3 "$n/sites.relocs" "$n/sites.rela" > "$n/sites.diff"
        other=$(awk 'NR == FNR { d["  " $1 "  "] = 1; next }
                     { for (k in d) if (index($0, k) && $4 != "[OPTIMIZED]") n++ } END { print n + 0 }' \
                "$n/sites.diff" "$n/check.txt")
        [ "$other" = "$(wc -l < "$n/sites.diff")" ] &&
            echo "# $n: its bzImage's relocs and its .rela sections name the same entries' relocations ($(wc -l < "$n/sites.rela"); $other more int3 for another reason)" ||
            echo "# $n: its bzImage's relocs and its .rela sections DIFFER ($(wc -l < "$n/sites.relocs") and $(wc -l < "$n/sites.rela") entries)"
    fi
done

# the table: one row per verdict and reason (reserved:TABLE apart), a column
# per image
for n in $names; do
    awk '{ if ($4 == "[OPTIMIZED]") r = "jump-optimized"
           else if ($4 == "[INT3]") r = "int3 " $5
           else if ($4 == "refused:" && $5 == "blacklisted") {
               r = "refused blacklisted " $6; for (i = 7; i <= NF && r !~ /\)$/; i++) r = r " " $i
               if (r ~ /\(piece of /) r = "refused blacklisted (a piece of such a function)"
           }
           else if ($4 == "refused:") r = "refused " $5
           else r = "? " $4
           print r }' "$n/check.txt" > "$n/verdicts"
done
set -- $names
awk -v a="$1" -v b="$2" '
    FNR == 1 { f++ }
    { c[f, $0]++; keys[$0] = 1; tot[f]++; if ($0 ~ /^refused blacklisted/) bl[f]++; if ($0 == "jump-optimized") opt[f]++ }
    END {
        printf "%-50s %16s %16s\n", "verdict reason", substr(a, 13), substr(b, 13)
        n = 0
        for (k in keys) order[++n] = k
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
            if (c[1, order[j]] + c[2, order[j]] > c[1, order[i]] + c[2, order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
        for (i = 1; i <= n; i++) printf "%-50s %16d %16d\n", order[i], c[1, order[i]], c[2, order[i]]
        printf "%-50s %16d %16d\n", "entries", tot[1], tot[2]
        printf "%-50s %16d %16d\n", "probe-able (not blacklisted)", tot[1] - bl[1], tot[2] - bl[2]
        printf "%-50s %15.2f%% %15.2f%%\n", "jump-optimized of probe-able", 100 * opt[1] / (tot[1] - bl[1]), 100 * opt[2] / (tot[2] - bl[2])
    }' "$1/verdicts" "$2/verdicts"
printf '%-50s %15ss %15ss\n' "time of the --check" "$(cat "$1/seconds")" "$(cat "$2/seconds")"
