#!/bin/sh
# make check-corpus (doc/corpus.md): rewrites every file of
# t/corpus/corpus.list with a probe on every function entry (--probe '*')
# and again with a return probe on every function (--probe '*%return'),
# count-only (no handlers: the runtime counts hits), runs the file's
# workload (t/corpus/workloads.sh) against the rewritten copy, and prints one
# table: a row a file and mode. Mode trace: every entry probed as in mode
# entry, and at run time an event with four fetch-args on every point
# (KPREWRITE_EVENTS, TRACE_DEF below), written as text to a file
# (KPREWRITE_TRACE); its row also needs the events written plus those
# dropped to equal the hits counted.
#   sh t/corpus/run.sh SRCDIR BUILDDIR
# Environment:
#   KP_CORPUS_TIMING  1 (default): after the checked run, 3 interleaved runs
#                     (original, probed, ...) time the workload; 0: the quick
#                     mode, one run each, no timing (CI)
#   KP_CORPUS_RUNS    interleaved pairs timed (3)
#   KP_CORPUS_ONLY    an ERE: only the files or workloads it matches
#   KP_CORPUS_MODES   "entry return" (default), or any of entry, return, trace
#   KP_CORPUS_TIMEOUT seconds a run may take (120)
#   KP_CORPUS_WORK    the work directory (BUILDDIR/corpus-work): logs, table
#   KP_CORPUS_PORT    the servers' TCP port on 127.0.0.1 (47379)
#   KP_CORPUS_RECORD  1: write the original outputs' checksums into corpus.list
# Exit status 0 when every row's output is identical to the original's.
set -u
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
KPREWRITE=$build/kprewrite
RT=$build/.libs/libkprewrite-rt.so.0
here=$src/t/corpus
timing=${KP_CORPUS_TIMING:-1}
runs=${KP_CORPUS_RUNS:-3}
only=${KP_CORPUS_ONLY:-}
modes=${KP_CORPUS_MODES-entry return}
tmo=${KP_CORPUS_TIMEOUT:-120}
W=${KP_CORPUS_WORK:-$build/corpus-work}
[ -x "$KPREWRITE" ] && [ -f "$RT" ] || { echo "check-corpus: build kprewrite first ($KPREWRITE, $RT)" >&2; exit 1; }

export LC_ALL=C TZ=UTC
export IN="$W/in" DATA="$here/data" PORT="${KP_CORPUS_PORT:-47379}"
export KPREWRITE_CTL_DIR="$W/ctl"
unset KPREWRITE_REPORT LD_PRELOAD LD_LIBRARY_PATH KP_LIBDIR KP_SUBJECT KP_PROBED KP_LDDCHECK 2>/dev/null

mkdir -p "$W" || exit 1
# the inputs are kept between runs while the workloads and data are the same
stamp=$(cat "$here/workloads.sh" "$here"/data/* | sha256sum | cut -c1-16)
[ "$(cat "$W/in.stamp" 2>/dev/null)" = "$stamp" ] || rm -rf "$IN"
mkdir -p "$IN" && echo "$stamp" >"$W/in.stamp"
rm -rf "$W/logs" "$W/files" "$W/run" "$W/ctl"
mkdir -p "$W/logs" "$W/files" "$W/run" "$W/ctl"
L=$W/logs
: >"$W/rows"; : >"$W/originals"
seen_files=
. "$here/workloads.sh"

now() { date +%s%N; }

# mode trace: the event on every point (two registers, a 16-bit one, a
# stack slot: what every function has), and its output file
TRACE_DEF='p * a=%di b=%si:s32 c=%dx:u16 ret=$stack0'
trace_on() { # ROW [static]: a static executable's definition is baked (static_exe)
    rm -f "$W/run/$1.trace"
    export KPREWRITE_TRACE="$W/run/$1.trace"
    [ "${2:-}" = static ] || export KPREWRITE_EVENTS="$TRACE_DEF"
}
trace_off() { unset KPREWRITE_EVENTS KPREWRITE_TRACE; }
# trace_counts ROW LOG: "EVENTS DROPPED HITS MISSED": the trace file's lines
# (one an event), and the sums of every process's KPREWRITE_REPORT=all lines
trace_counts() {
    ev=$(wc -l <"$W/run/$1.trace" 2>/dev/null || echo 0)
    awk -v ev="$ev" '$1 == "kprewrite:" && $5 == "hits" { h += $6; m += $8; if ($9 == "dropped") d += $10 }
                     END { printf "%d %d %d %d\n", ev, d, h, m }' "$2"
    rm -f "$W/run/$1.trace"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The probed processes' control directories: unmount what a crash left.
ctl_cleanup() {
    awk -v d="$W/ctl/" 'index($2, d) == 1 { print $2 }' /proc/mounts | while read -r m; do umount -l "$m" 2>/dev/null; done
    rm -rf "$W/ctl"/* 2>/dev/null
}

# run_once WORKLOAD LABEL LOG: runs the workload once in a fresh directory;
# sets r_status (ok, CRASH SIGxxx (prog), TIMEOUT, EXIT n), r_sum, r_ms;
# the output is left in $W/run/LABEL.out, backtraces of the first 3 cores in LOG.gdb
run_once() {
    rd=$W/run/$2
    rm -rf "$rd"; mkdir -p "$rd"
    : >"$rd.status"
    t0=$(now)
    (cd "$rd" && KP_LOG=$3 KP_STATUS=$rd.status exec timeout -k 10 "$tmo" \
        sh -c 'ulimit -c unlimited; . "$1"; wl_'"$1" sh "$here/workloads.sh") >"$rd.out" 2>>"$3"
    rc=$?
    t1=$(now)
    r_ms=$(( (t1 - t0) / 1000000 ))
    r_status=ok
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        r_status=TIMEOUT
    else
        crash=$(awk '$2 ~ /^1(3[2-6]|39|59)$/ { print $2 - 128, $1; exit }' "$rd.status")
        if [ -n "$crash" ]; then
            r_status="CRASH SIG$(kill -l "${crash%% *}") (${crash#* })"
        elif [ $rc != 0 ]; then
            r_status="EXIT $rc"
        fi
    fi
    r_sum=$( { cat "$rd.out"; echo "--- exit statuses"; sort "$rd.status"; } | sha256sum | cut -c1-16)
    # backtraces of the cores the crashes left, addresses also as FILE+0xVADDR
    if command -v gdb >/dev/null 2>&1; then
        find "$rd" -name 'core*' -type f 2>/dev/null | sort | head -n 3 | while read -r c; do
            exe=$(file "$c" | sed -n "s/.*execfn: '\([^']*\)'.*/\1/p")
            { echo "=== $(file -b "$c" | sed 's/, real uid.*execfn/, execfn/')"
              timeout 120 gdb -batch -nx -ex 'info proc mappings' -ex 'info registers rip rsp' -ex 'x/4i $pc' \
                  -ex 'bt 40' -ex 'info threads' "$exe" "$c" 2>&1 |
                  awk -f "$here/backtrace.awk" | grep -v -e '^\[New LWP' -e 'reg-xstate' -e '^$' -e 'libthread_db'
            } >>"$3.gdb"
        done
    fi
    ctl_cleanup
    rm -rf "$rd"
}

# summary of a kprewrite --summary report: reasons, compact
reasons() { # REPORT
    awk '$1 == "summary:" && ($2 == "int3" || $2 == "refused") && $NF ~ /^[0-9]+$/ {
             r[$2] = r[$2] (r[$2] == "" ? "" : ", ") $3 " " $NF }
         END { s = ""
               if (r["int3"] != "") s = "int3: " r["int3"]
               if (r["refused"] != "") s = s (s == "" ? "" : "; ") "refused: " r["refused"]
               print s == "" ? "-" : s }' "$1"
}

# hits REPORT LOG: per probe hit in LOG (KPREWRITE_REPORT=all lines, every
# process summed), "HITS NAME+OFF VERDICT", most hit first. A probe is
# known by its name and the low 12 bits of its address (the load bias is
# page-aligned; two processes of a PIE have different ones)
hits() {
    awk 'FNR == NR { if (length($1) == 16 && $1 ~ /^[0-9a-f]+$/) {
                         k = $3 "|" substr($1, 14, 3)
                         v = $4 == "[OPTIMIZED]" ? "jump" : $4 == "[INT3]" ? "int3:" $5 : "refused"
                         # (not verdict[k] = (k in verdict ...): mawk makes verdict[k] first)
                         w = (k in verdict && verdict[k] != v) ? "?" : v
                         verdict[k] = w }
                     next }
         $1 == "kprewrite:" && $5 == "hits" && $6 > 0 { h[$4 "|" substr($2, 14, 3)] += $6 }
         END { for (k in h) { split(k, p, "|"); print h[k], p[1], (k in verdict ? verdict[k] : "?") } }' "$1" "$2" |
        sort -k1,1nr -k2,2
}

fmt='%-16s %-6s %-9s %6s %6s %5s %5s %6s %6s %-28s %8s %6s %5s  %s\n'
header() {
    printf "$fmt" FILE MODE WORKLOAD PROBES JUMP% INT3 REFUS SIZE% REWRIT STATUS SLOWDOWN HIT TOP100 "INT3/REFUSED BY REASON"
    printf "$fmt" "" "" "" "" "" "" "" "" "(s)" "" "(x)" "probes" "int3" ""
}
echo "check-corpus: $(grep -c '^/' "$here/corpus.list") files of t/corpus/corpus.list, modes: $modes, $([ "$timing" = 1 ] && echo "timing: median of $runs interleaved runs" || echo "quick: one run each, no timing"); work directory $W"
header | tee "$W/table"

orig_notes=
for wl in $(awk '!/^#/ && NF >= 3 && !seen[$3]++ { print $3 }' "$here/corpus.list"); do
    files=$(awk -v w="$wl" -v o="$only" '!/^#/ && $3 == w { n = $1; sub(/.*\//, "", n)
              if (o == "" || n ~ o || w ~ o) print $1 }' "$here/corpus.list")
    [ -n "$files" ] || continue
    expected=$(awk -v w="$wl" '!/^#/ && $3 == w { print $4; exit }' "$here/corpus.list")
    (cd "$IN" && "gen_$wl") >"$L/$wl.gen.log" 2>&1
    # the original, the reference of this run
    export KP_SUBJECT='' KP_PROBED='' KP_LIBDIR='' KP_LDDCHECK=''
    run_once "$wl" "$wl.orig" "$L/$wl.orig.log"
    cp "$W/run/$wl.orig.out" "$L/$wl.orig.out"
    osum=$r_sum ostatus=$r_status oms=$r_ms
    if [ "$ostatus" != ok ]; then
        orig_notes="$orig_notes
  $wl: the ORIGINAL failed ($ostatus, see $L/$wl.orig.log): its rows are not valid"
    elif [ "$expected" != "-" ] && [ "$expected" != "$osum" ]; then
        orig_notes="$orig_notes
  $wl: the original's output is $osum, corpus.list records $expected (a changed package or environment?)"
    fi
    echo "$wl $osum $oms" >>"$W/originals"
    for f in $files; do
        base=${f##*/}
        real=$(readlink -f "$f")
        if [ ! -f "$real" ]; then
            for mode in $modes; do
                printf "$fmt" "$base" "$mode" "$wl" - - - - - - "MISSING ($f)" - - - "" | tee -a "$W/table"
                echo "$base	$mode	$wl	0	0	0	0	0	0	MISSING	-	0	0	-" >>"$W/rows"
            done
            continue
        fi
        case $(readelf -h "$real" 2>/dev/null | awk '/Type:/ { print $2 }') in
        DYN) soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p') ;;
        *) soname= ;;
        esac
        # a PIE executable is DYN too, but has no soname
        # a static executable (no interpreter; EXEC, or a static-pie) has
        # the static runtime: its trace row's definition is baked
        static_exe=0
        if [ -z "$soname" ] && ! readelf -lW "$real" 2>/dev/null | grep -q 'INTERP'; then
            readelf -h "$real" | grep -q 'Type: *EXEC' && static_exe=1
            readelf -d "$real" 2>/dev/null | grep -q 'Flags:.* PIE' && static_exe=1
        fi
        # (a file in two workloads' rows: the second's logs named apart)
        tag=$base; case " $seen_files " in *" $base "*) tag=$base.$wl ;; esac
        seen_files="$seen_files $base"
        for mode in $modes; do
            row=$tag.$mode
            spec='*'; [ "$mode" = return ] && spec='*%return'
            if [ -n "$soname" ]; then
                out=$W/files/$mode/lib-$base/$soname
            else
                out=$W/files/$mode/$base
            fi
            mkdir -p "${out%/*}"
            t0=$(now)
            if [ "$static_exe" = 1 ] && [ "$mode" = trace ]; then   # (its definition baked)
                "$KPREWRITE" --summary --probe "$spec" --probe "$TRACE_DEF" -o "$out" "$real" >"$L/$row.report" \
                    2>"$L/$row.rewrite.log"
            else
                "$KPREWRITE" --summary --runtime "$RT" --probe "$spec" -o "$out" "$real" >"$L/$row.report" \
                    2>"$L/$row.rewrite.log"
            fi
            rrc=$?
            t1=$(now)
            rw=$(awk -v n=$(( (t1 - t0) / 1000000 )) 'BEGIN { printf "%.2f", n / 1000 }')
            set -- $(sed -n 's/^summary: \([0-9]*\) probes: \([0-9]*\) optimized, \([0-9]*\) int3, \([0-9]*\) refused.*/\1 \2 \3 \4/p' "$L/$row.report") 0 0 0 0
            probes=$1 opt=$2 int3=$3 ref=$4
            why=$(reasons "$L/$row.report")
            jump=$(awk -v o="$opt" -v p="$probes" 'BEGIN { if (p > 0) printf "%.1f", 100 * o / p; else print "-" }')
            if [ $rrc -ne 0 ] && [ $rrc -ne 2 ] && [ $rrc -ne 3 ] || [ ! -f "$out" ]; then
                status="REWRITE-FAILED ($rrc)" size=- slow=- hitn=0 top=0 so=0 sp=0
            else
                so=$(stat -c %s "$real"); sp=$(stat -c %s "$out")
                size=$(awk -v a="$so" -v b="$sp" 'BEGIN { printf "%+.1f", 100 * (b - a) / a }')
                if [ -n "$soname" ]; then
                    export KP_SUBJECT='' KP_PROBED='' KP_LIBDIR="${out%/*}" KP_LDDCHECK="$W/run/$row.ldd"
                else
                    export KP_SUBJECT="$f" KP_PROBED="$out" KP_LIBDIR='' KP_LDDCHECK=''
                fi
                : >"$W/run/$row.ldd"
                # the checked run: counts every hit (KPREWRITE_REPORT=all)
                export KPREWRITE_REPORT=all
                [ "$mode" = trace ] && trace_on "$row" "$([ "$static_exe" = 1 ] && echo static)"
                run_once "$wl" "$row" "$L/$row.log"
                unset KPREWRITE_REPORT; trace_off
                # (the report lists every probe of each process: keep the hit ones)
                sed -i '/^kprewrite: [0-9a-f]*  [kr]  [^ ]*  hits 0  nmissed 0$/d' "$L/$row.log"
                status=$r_status
                echo "checked run (KPREWRITE_REPORT=all): $r_ms ms; the original: $oms ms" >"$L/$row.timing.log"
                cp "$W/run/$row.out" "$L/$row.out"
                if [ "$status" = ok ]; then
                    if [ "$r_sum" = "$osum" ]; then status=identical; else status=DIFFERENT; fi
                fi
                [ "$status" = identical ] || diff "$L/$wl.orig.out" "$L/$row.out" >"$L/$row.diff" 2>&1
                [ "$status" = DIFFERENT ] && [ ! -s "$L/$row.diff" ] && echo "(the outputs are the same: an exit status differs)" >"$L/$row.diff"
                if [ -n "$soname" ] && [ ! -s "$W/run/$row.ldd" ]; then
                    status="NOT-LOADED"   # no program of the workload loaded the probed copy
                fi
                if [ "$mode" = trace ]; then
                    set -- $(trace_counts "$row" "$L/$row.log")
                    echo "events written $1, dropped $2; hits $3 (missed $4)" >"$L/$row.events"
                    # each hit records an event or drops it (a hit missed
                    # inside a handler is no hit). A process the workload
                    # ends by a signal (a server killed, a pipe's writer
                    # after head: TRACE_SIGNAL_DEATHS) prints no report:
                    # its events are written, its hits not counted
                    # (or a Go program's threads run on past its counts: TRACE_EXIT_RACES)
                    if case " $TRACE_SIGNAL_DEATHS $TRACE_EXIT_RACES " in *" $wl "*) [ $(($1 + $2)) -lt "$3" ] ;; *) [ $(($1 + $2)) != "$3" ] ;; esac; then
                        [ "$status" = identical ] && status="EVENTS $1+$2 != HITS $3"
                    fi
                fi
                hits "$L/$row.report" "$L/$row.log" >"$L/$row.hits"
                hitn=$(wc -l <"$L/$row.hits")
                head -n 100 "$L/$row.hits" | awk '$3 ~ /^int3/' >"$L/$row.top100-int3"
                top=$(wc -l <"$L/$row.top100-int3")
                [ "$status" = identical ] && [ "$hitn" = 0 ] && status="NO-HITS"
                slow=-
                if [ "$timing" = 1 ] && [ "$status" = identical ]; then
                    : >"$W/run/$row.to"; : >"$W/run/$row.tp"
                    i=0
                    while [ $i -lt "$runs" ]; do
                        (export KP_SUBJECT='' KP_PROBED='' KP_LIBDIR='' KP_LDDCHECK=''
                         run_once "$wl" "$row.t-orig" "$L/$row.timing-runs.log"; echo "$r_ms" >>"$W/run/$row.to"
                         [ "$r_sum" = "$osum" ] || echo "original run $i: $r_status, output $r_sum" >>"$L/$row.timing.log")
                        (KP_LDDCHECK=; [ "$mode" = trace ] && trace_on "$row.t-probed"
                         run_once "$wl" "$row.t-probed" "$L/$row.timing-runs.log"; echo "$r_ms" >>"$W/run/$row.tp"
                         rm -f "$W/run/$row.t-probed.trace"
                         [ "$r_sum" = "$osum" ] || echo "probed run $i: $r_status, output $r_sum" >>"$L/$row.timing.log"
                         [ "$r_sum" = "$osum" ] || echo flaky >"$W/run/$row.flaky")
                        i=$((i + 1))
                    done
                    to=$(median <"$W/run/$row.to"); tp=$(median <"$W/run/$row.tp")
                    slow=$(awk -v a="$to" -v b="$tp" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')
                    echo "original ms: $(tr '\n' ' ' <"$W/run/$row.to") probed ms: $(tr '\n' ' ' <"$W/run/$row.tp")" >>"$L/$row.timing.log"
                    [ -f "$W/run/$row.flaky" ] && status="DIFFERENT (a timed run)"
                fi
            fi
            printf "$fmt" "$base" "$mode" "$wl" "$probes" "$jump" "$int3" "$ref" "$size" "$rw" "$status" "$slow" "$hitn" "$top" "$why" |
                tee -a "$W/table"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$base" "$mode" "$wl" "$probes" "$opt" "$int3" "$ref" \
                "$size" "$rw" "$status" "$slow" "$hitn" "$top" "$why" "$so" "$sp" >>"$W/rows"
        done
    done
done

# ---- the summary ----
{
echo
awk -F '\t' '{ m = $2; n[m]++; p[m] += $4; o[m] += $5; P += $4; O += $5; so[m] += $15; sp[m] += $16
               if ($10 == "identical") ok[m]++
               if ($11 != "-" && $11 > 0) { t[m]++; lg[m] += log($11); if ($11 > w[m]) { w[m] = $11; wf[m] = $1 } } }
     END { for (i = 1; i <= 3; i++) { m = i == 1 ? "entry" : i == 2 ? "return" : "trace"; if (!(m in n)) continue
               printf "%-6s: %d rows, %d identical; ", m, n[m], ok[m]
               if (t[m]) printf "slowdown geometric mean %.2fx, worst %.2fx (%s) over the %d timed rows; ", exp(lg[m] / t[m]), w[m], wf[m], t[m]
               else printf "no timed row; "
               printf "%.2f %% of %d function entries jump-optimized; size %+.1f %% over all files\n",
                      (p[m] ? 100 * o[m] / p[m] : 0), p[m], (so[m] ? 100 * (sp[m] - so[m]) / so[m] : 0) }
           printf "overall: %.2f %% of %d function entries jump-optimized\n", (P ? 100 * O / P : 0), P }' "$W/rows"
for e in "$L"/*.trace.events; do
    [ -f "$e" ] && echo "trace ${e##*/}: $(cat "$e")" | sed 's/\.events:/:/'
done
ntop=$(awk -F '\t' '$13 > 0' "$W/rows" | wc -l)
if [ "$ntop" -gt 0 ]; then
    echo "int3 probes among a workload's 100 most-hit: YES, in $ntop rows (hits, probe, verdict):"
    awk -F '\t' '$13 > 0 { print $1 "." $2 }' "$W/rows" | while read -r row; do
        echo "  $row: $(head -n 5 "$L/$row.top100-int3" | awk '{ printf "%s%s %s (%s)", (NR > 1 ? ", " : ""), $1, $2, $3 }')$( [ "$(wc -l <"$L/$row.top100-int3")" -gt 5 ] && echo ", ...")"
    done
else
    echo "int3 probes among a workload's 100 most-hit: none"
fi
[ -n "$orig_notes" ] && echo "notes:$orig_notes"
awk -F '\t' '$10 != "identical" { print "  " $1 " " $2 ": " $10 }' "$W/rows" | sed '1i failed rows (logs: ROW.log, ROW.log.gdb, ROW.diff):' | grep . || true
echo "logs: $L (per row FILE.MODE: .report (kprewrite), .log (stderr, hit counts), .log.gdb (backtraces), .hits, .diff, .timing.log, .timing-runs.log); table: $W/table"
} | tee -a "$W/table"

if [ "${KP_CORPUS_RECORD:-0}" = 1 ]; then
    awk 'FNR == NR { s[$1] = $2; next }
         !/^#/ && NF >= 4 && ($3 in s) { printf "%-45s %-19s %-10s %s\n", $1, $2, $3, s[$3]; next } { print }' \
        "$W/originals" "$here/corpus.list" >"$W/corpus.list.new" && cat "$W/corpus.list.new" >"$here/corpus.list"
    echo "recorded the originals' checksums in $here/corpus.list"
fi

passed=$(awk -F '\t' '$10 == "identical"' "$W/rows" | wc -l)
failed=$(awk -F '\t' '$10 != "identical"' "$W/rows" | wc -l)
echo "corpus: $passed passed, $failed failed" | tee -a "$W/table"
[ "$failed" = 0 ]
