#!/bin/sh
# Probing a prebuilt binary (issue 6): a probe on every function entry of a
# large stripped binary from a Debian package (default /usr/bin/git):
# rewrite time, share of jumps / int3 / refused, size growth, and start-up
# time (`BIN --version`) against the original, in the same run.
#   sh bench/prebuilt-bench.sh KPREWRITE RUNTIME-LIB [BINARY]
# Environment: BENCH_STARTS (runs per start-up sample, 200), BENCH_ROUNDS (5).
set -u
kp=$1 rt=$2 bin=${3:-/usr/bin/git}
[ -x "$bin" ] || { echo "prebuilt-bench: $bin not found" >&2; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$bin" "$W/orig"
now() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
calc() { awk "BEGIN { print $1 }"; }

for i in $(seq "${BENCH_ROUNDS:-5}"); do
    s=$(now)
    "$kp" --runtime "$rt" --probe '*' -o "$W/probed" "$W/orig" >"$W/report" 2>"$W/err"
    e=$(now)
    echo $(( (e - s) / 1000 ))
done | median >"$W/rewrite_us"
[ -s "$W/probed" ] || { cat "$W/err" >&2; exit 1; }
n=$(grep -c '^[0-9a-f]\{16\} ' "$W/report")
opt=$(grep -c '\[OPTIMIZED\]' "$W/report")
int3=$(grep -c '\[INT3\]' "$W/report")
ref=$(grep -c ' refused: ' "$W/report")
so=$(wc -c <"$W/orig"); sp=$(wc -c <"$W/probed")

starts=${BENCH_STARTS:-200}
run() { # PROGRAM: microseconds a start, over $starts runs
    s=$(now)
    i=0
    while [ $i -lt "$starts" ]; do "$@" --version >/dev/null 2>&1; i=$((i + 1)); done
    e=$(now)
    echo $(( (e - s) / 1000 / starts ))
}
: >"$W/o"; : >"$W/p"; : >"$W/q"
for i in $(seq "${BENCH_ROUNDS:-5}"); do   # interleaved, so drift hits all three
    run "$W/orig" >>"$W/o"
    run "$W/probed" >>"$W/p"
    KPREWRITE_CTL_DIR=/proc/kprewrite-none run "$W/probed" >>"$W/q"
done
to=$(median <"$W/o"); tp=$(median <"$W/p"); tq=$(median <"$W/q")

echo "prebuilt binary: $bin ($(dpkg -S "$bin" 2>/dev/null | cut -d: -f1 | head -n 1)), $so bytes, $n function entries"
printf '  rewrite time          %8.3f s   (median of %s)\n' "$(calc "$(cat "$W/rewrite_us") / 1000000")" "${BENCH_ROUNDS:-5}"
printf '  jump-optimized        %8d   %5.1f %%\n' "$opt" "$(calc "100 * $opt / $n")"
printf '  int3                  %8d   %5.1f %%\n' "$int3" "$(calc "100 * $int3 / $n")"
printf '  refused               %8d   %5.1f %%\n' "$ref" "$(calc "100 * $ref / $n")"
printf '  size                  %8d -> %d bytes   +%.1f %%\n' "$so" "$sp" "$(calc "100 * ($sp - $so) / $so")"
printf '  start-up (--version)  %8d us original, %d us probed (%.2fx), %d us probed without a control directory (%.2fx)\n' \
    "$to" "$tp" "$(calc "$tp / $to")" "$tq" "$(calc "$tq / $to")"
echo "  targets: >= 99 % jumps, <= 1 s for ~7000 entries, size <= +10 %, start-up <= 1.2x"
