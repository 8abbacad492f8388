#!/bin/sh
# Same output from two kprewrite binaries: every input rewritten by both
# with the same options must give byte-identical files, the same report and
# the same messages (the output paths aside). A restructure of the rewriter
# that changes nothing passes it.
#
#   sh scripts/same-output.sh OLD-KPREWRITE NEW-KPREWRITE RUNTIME WORKDIR [INPUT...]
#
# RUNTIME: the absolute path of libkprewrite-rt.so.0 (written into prebuilt
# images as their DT_NEEDED: the same for both). An INPUT is an ELF file, or
# kernel:FILE[:SPEC] for a vmlinux (or the stand-in of t/kernel-detour.t),
# probed on SPEC ('k*' by default). Without inputs: a list of system binaries and libraries. Each
# user-space input is rewritten with --probe '*', '*%return', both, the
# inline, shared and compact detours, then rewritten again (a second run on
# its own output, which reads the first run's table back) and with three
# probes removed. One line per difference; exit 1 if there is any.
set -u
old=$1 new=$2 rt=$3 work=$4
shift 4
[ $# -gt 0 ] || set -- /usr/bin/python3.11 /usr/bin/git /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
    /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/ls /usr/bin/pigz /usr/bin/bc /usr/bin/rg /usr/bin/sort \
    /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0
mkdir -p "$work/old" "$work/new"
runs=0 diffs=0

# run NAME ARGS...: both binaries, output to $work/{old,new}/NAME (the last
# argument is the input; -o is added)
run() {
    name=$1; shift
    for v in old new; do
        eval "bin=\$$v"
        rm -f "$work/$v/$name"
        "$bin" "$@" -o "$work/$v/$name" >"$work/$v/$name.out" 2>"$work/$v/$name.err"
        echo $? >"$work/$v/$name.rc"
        sed "s|$work/old/|OUT/|g; s|$work/new/|OUT/|g" "$work/$v/$name.err" >"$work/$v/$name.msg"
    done
    runs=$((runs + 1))
    for f in "" .out .msg .rc; do
        if [ -e "$work/old/$name$f" ] || [ -e "$work/new/$name$f" ]; then
            if ! cmp -s "$work/old/$name$f" "$work/new/$name$f"; then
                echo "DIFFERENT: $name$f ($*)"
                diffs=$((diffs + 1))
            fi
        fi
    done
    printf '%-40s rc %s %s\n' "$name" "$(cat "$work/old/$name.rc")" \
        "$( [ -e "$work/old/$name" ] && echo "$(wc -c <"$work/old/$name") bytes" || head -c 120 "$work/old/$name.msg")"
}

for input in "$@"; do
    kernel=false
    kspec='k*'
    case $input in kernel:*) kernel=true; input=${input#kernel:} ;; esac
    case $input in *:*) kspec=${input#*:}; input=${input%%:*} ;; esac
    base=$(basename "$input")
    if $kernel; then
        run "$base.k" --kernel --probe "$kspec" "$input"
        run "$base.k-inline" --kernel --detours inline --probe "$kspec" "$input"
        [ -e "$work/old/$base.k" ] || continue
        run "$base.k-again" --kernel --probe "$kspec" "$work/old/$base.k"
        first=$("$old" --kernel --check --probe "$kspec" "$input" 2>/dev/null | awk '/OPTIMIZED/ { print "0x" $1; exit }')
        [ -n "$first" ] && run "$base.k-rm" --kernel --remove "$first" "$work/old/$base.k"
        continue
    fi
    run "$base.all" --runtime "$rt" --probe '*' "$input"
    run "$base.ret" --runtime "$rt" --probe '*%return' "$input"
    run "$base.both" --runtime "$rt" --probe '*' --probe '*%return' "$input"
    run "$base.inline" --runtime "$rt" --detours inline --probe '*' "$input"
    run "$base.shared" --runtime "$rt" --detours shared --probe '*' "$input"
    run "$base.compact" --runtime "$rt" --detours compact --probe '*' --probe '*%return' "$input"
    [ -e "$work/old/$base.all" ] || continue
    # a second run on the first one's output: its table read back, its sites put back
    run "$base.again" --runtime "$rt" --probe '*' "$work/old/$base.all"
    run "$base.again-ret" --runtime "$rt" --probe '*%return' "$work/old/$base.all"
    # three probes taken out: the first, one in the middle and the last optimized one
    set -- $("$old" --check --probe '*' "$input" 2>/dev/null | awk '/OPTIMIZED/ { a[n++] = "0x" $1 }
        END { if (n) print a[0], a[int(n / 2)], a[n - 1] }')
    [ $# -eq 3 ] && run "$base.rm" --remove "$1" --remove "$2" --remove "$3" "$work/old/$base.all"
done
echo "same-output: $runs runs, $diffs differences"
[ "$diffs" -eq 0 ]
