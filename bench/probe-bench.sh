#!/bin/sh
# make bench: per-hit cost of kprewrite's optimized probes beside the
# hand-written reference detours (../shared/reference/detour-floor), all in
# this one run, rounds interleaved. Usage: probe-bench.sh SRCDIR BUILDDIR.
# ROUNDS (3) x REPS (3) samples per mechanism; N (10000000) calls a sample.
set -e
src=$1; build=$2
ROUNDS=${ROUNDS:-3}; REPS=${REPS:-3}; N=${N:-10000000}; N_SLOW=${N_SLOW:-300000}; N_EVENT=${N_EVENT:-100000}; N_HOT=${N_HOT:-8000}
cc=${CC:-cc}
w=$build/bench-work; rm -rf "$w"; mkdir -p "$w"
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
rt="-I$src/include -L$build/.libs -L$build -Wl,-u,__kprewrite_pool -lkprewrite-pool -lkprewrite-rt -lpthread"
$cc -O2 -o "$w/plain" "$src/bench/probe-bench.c" "$src/bench/bench-probed.S" $rt
# the default detours (compact at a function entry), inline ones, shared ones
"$build/kprewrite" --probe bench_probed -o "$w/probed" "$w/plain" >/dev/null 2>&1
"$build/kprewrite" --detours=inline --probe bench_probed -o "$w/probed_inline" "$w/plain" >/dev/null 2>&1
"$build/kprewrite" --probe 'bench_probed%return' -o "$w/probed_ret" "$w/plain" >/dev/null 2>&1
"$build/kprewrite" --detours=shared --probe bench_probed -o "$w/probed_shared" "$w/plain" >/dev/null 2>&1
# a prebuilt image: linked without the pool, which kprewrite adds (default detours)
$cc -O2 -o "$w/plain_nopool" "$src/bench/probe-bench.c" "$src/bench/bench-probed.S" -I"$src/include" -L"$build/.libs" -lkprewrite-rt -lpthread
"$build/kprewrite" --runtime "$build/.libs/libkprewrite-rt.so.0" --probe bench_probed -o "$w/probed_prebuilt" "$w/plain_nopool" >/dev/null 2>&1
# a static executable (the static runtime): count-only and events, an
# event's string in %rsi (static-bench.c); N_STATIC_EVENT records a sample,
# every sample's in its 4 MiB ring (none dropped)
N_STATIC_EVENT=${N_STATIC_EVENT:-12000}
$cc -O2 -static -mno-red-zone -o "$w/static" "$src/bench/static-bench.c" "$src/bench/bench-probed.S"
"$build/kprewrite" --probe bench_probed -o "$w/static_count" "$w/static" >/dev/null 2>&1
"$build/kprewrite" --probe 'p:b bench_probed a=%di b=%bx' -o "$w/static_ev2" "$w/static" >/dev/null 2>&1
"$build/kprewrite" --probe 'p:b bench_probed a=%di b=%bx c=+0(%sp):u64 s=+0(%si):string' -o "$w/static_ev4" "$w/static" \
    >/dev/null 2>&1
"$build/kprewrite" --probe 'r:b bench_probed ret=$retval' -o "$w/static_ret" "$w/static" >/dev/null 2>&1
ref=$src/../shared/reference/detour-floor
[ -d "$ref" ] || ref=$(cd "$src/.." && pwd)/shared/reference/detour-floor
have_ref=false
if [ -f "$ref/bench.c" ]; then
    $cc -O2 -o "$w/ref" "$ref/bench.c" "$ref/handler.c" "$ref/probed.S" "$ref/detour.S" && have_ref=true
fi
: >"$w/all"
for round in $(seq 1 "$ROUNDS"); do
    "$w/probed" count_only "$N" "$REPS" >>"$w/all"
    "$w/probed_inline" inline_count_only "$N" "$REPS" >>"$w/all"
    "$w/probed_prebuilt" prebuilt_count_only "$N" "$REPS" >>"$w/all"
    BENCH_HANDLER=1 "$w/probed" kprewrite_empty_handler "$N" "$REPS" >>"$w/all"
    BENCH_HANDLER=1 "$w/probed_inline" inline_empty_handler "$N" "$REPS" >>"$w/all"
    BENCH_KRET=1 "$w/probed_ret" kretprobe_empty_handler "$N" "$REPS" >>"$w/all"
    "$w/probed_shared" shared_count_only "$N" "$REPS" >>"$w/all"
    # an event with 4 arguments (two registers, one dereference, one short
    # string), recorded (none dropped: the 64 MiB ring holds every sample's
    # N_EVENT records, ~22 MB; no reader meanwhile: formatting is the
    # reader's cost, not the probe's; 10,000 events a sample moved the
    # median by a third between runs); beside it the timestamp alone
    KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' \
        KPREWRITE_TRACE_BUFFER=65536 "$w/probed" event_4args "$N_EVENT" "$REPS" >>"$w/all"
    KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' \
        KPREWRITE_TRACE_BUFFER=65536 "$w/probed_inline" inline_event_4args "$N_EVENT" "$REPS" >>"$w/all"
    # the same events with the buffers emptied before each sample (BENCH_CLEAR,
    # through the control directory: FUSE), a 1 MiB ring holding a sample's
    # N_HOT events written again where it was, in cache, as a drained ring
    # is: the probe's own cost, without 8 MB of fresh memory a sample; and
    # an event with no argument (the recording machinery alone)
    KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' BENCH_CLEAR=1 KPREWRITE_CTL_DELAY_MS=0 \
        KPREWRITE_TRACE_BUFFER=1024 "$w/probed" event_4args_hot "$N_HOT" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' BENCH_CLEAR=1 KPREWRITE_CTL_DELAY_MS=0 \
        KPREWRITE_TRACE_BUFFER=1024 "$w/probed_inline" inline_event_4args_hot "$N_HOT" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    KPREWRITE_EVENTS='p:b bench_probed' BENCH_CLEAR=1 KPREWRITE_CTL_DELAY_MS=0 \
        KPREWRITE_TRACE_BUFFER=1024 "$w/probed" event_0args_hot "$N_HOT" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    # the same two with the C recorder (KPREWRITE_RECORDER=c) where the
    # rows above have the generated one (src/arch/x86/recorder.c)
    KPREWRITE_RECORDER=c KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' BENCH_CLEAR=1 \
        KPREWRITE_CTL_DELAY_MS=0 KPREWRITE_TRACE_BUFFER=1024 "$w/probed" event_4args_hot_c "$N_HOT" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    KPREWRITE_RECORDER=c KPREWRITE_EVENTS='p:b bench_probed' BENCH_CLEAR=1 KPREWRITE_CTL_DELAY_MS=0 \
        KPREWRITE_TRACE_BUFFER=1024 "$w/probed" event_0args_hot_c "$N_HOT" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    # a return event (the return value and the latency histogram)
    KPREWRITE_EVENTS='r bench_probed ret=$retval' KPREWRITE_TRACE_BUFFER=65536 "$w/probed_ret" return_event "$N_EVENT" "$REPS" >>"$w/all"
    "$w/probed" event_floor_rdtsc "$N" "$REPS" >>"$w/all"
    "$w/probed" event_floor_clock_gettime "$N" "$REPS" >>"$w/all"
    BENCH_HANDLER=1 "$w/probed_shared" shared_empty_handler "$N" "$REPS" >>"$w/all"
    "$w/static_count" static_count_only "$N" "$REPS" >>"$w/all"
    "$w/static_ev2" static_event_2regs "$N_STATIC_EVENT" "$REPS" >>"$w/all"
    "$w/static_ev4" static_event_4args "$N_STATIC_EVENT" "$REPS" >>"$w/all"
    "$w/static_ret" static_return_event "$N_STATIC_EVENT" "$REPS" >>"$w/all"
    # int3 and disabled probes: need the control directory (FUSE)
    # (the control directory at once: by default it comes 20 ms after start-up)
    BENCH_STATE=disabled KPREWRITE_CTL_DELAY_MS=0 "$w/probed" kprewrite_disabled "$N" "$REPS" >>"$w/all" 2>"$w/ctl.err" || true
    # the same event defined, then turned off (untrace b): what a probe
    # whose event is off costs
    BENCH_STATE=untrace KPREWRITE_CTL_DELAY_MS=0 KPREWRITE_EVENTS='p:b bench_probed a=%di b=%bx c=@bench_calls:u64 s=+0(@bench_name):string' \
        "$w/probed" event_off "$N" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    BENCH_STATE=int3 BENCH_HANDLER=1 KPREWRITE_CTL_DELAY_MS=0 "$w/probed" kprewrite_int3_empty_handler "$N_SLOW" "$REPS" >>"$w/all" 2>>"$w/ctl.err" || true
    if $have_ref; then
        for m in detour_jmp detour_cs_noflags detour_full_lahf detour_full; do
            "$w/ref" "$m" "$N" "$REPS" | sed 's/ empty_ns [0-9.]*//' >>"$w/all"
        done
        "$w/ref" int3 "$N_SLOW" "$REPS" | sed 's/ empty_ns [0-9.]*//; s/mode int3 /mode int3_sigtrap_floor /' >>"$w/all"
    fi
done
# median and minimum of the over_ns samples per mechanism
awk '/^rep / { m = $4; v[m] = v[m] " " $12; n[m]++ }
     END { for (m in v) { k = split(v[m], a, " "); for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
              printf "%s %d %.2f %.2f\n", m, k, a[1], (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 } }' \
    "$w/all" | sort >"$w/table"
base=$(awk '/^rep / { print $8 }' "$w/all" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
med() { awk -v m="$1" '$1 == m { print $4 }' "$w/table"; }
floor=$(med detour_cs_noflags); full=$(med detour_full); trapfloor=$(med int3_sigtrap_floor)
printf '\nper-hit overhead, ns (median and min of %s samples; plain call %s ns)\n' "$((ROUNDS * REPS))" "$base"
printf '%-30s %9s %9s %13s %8s %12s\n' mechanism median min "x cs_noflags" "x full" "x int3 floor"
while read -r m k mn md; do
    r1=-; r2=-; r3=-
    [ -n "$floor" ] && r1=$(echo "scale=2; $md / $floor" | bc)
    [ -n "$full" ] && r2=$(echo "scale=2; $md / $full" | bc)
    [ -n "$trapfloor" ] && r3=$(echo "scale=3; $md / $trapfloor" | bc)
    printf '%-30s %9s %9s %13s %8s %12s\n' "$m" "$md" "$mn" "$r1" "$r2" "$r3"
done <"$w/table"
kp=$(med kprewrite_empty_handler); kr=$(med kretprobe_empty_handler); ki=$(med inline_empty_handler)
ks=$(med shared_empty_handler); kc=$(med count_only); ksc=$(med shared_count_only); kic=$(med inline_count_only)
kpc=$(med prebuilt_count_only); ke=$(med event_4args); kie=$(med inline_event_4args)
r() { echo "scale=2; $1 / $2" | bc; }
[ -n "$kpc" ] && [ -n "$kic" ] && printf 'prebuilt image, default detours / inline detour (count only, medians): %s\n' "$(r "$kpc" "$kic")"
[ -n "$kc" ] && [ -n "$kic" ] && printf 'compact detour (the default) / inline detour (medians): count only %s, empty handler %s\n' \
    "$(r "$kc" "$kic")" "$(r "$kp" "$ki")"
[ -n "$ki" ] && [ -n "$ks" ] && printf 'shared detour / inline detour (medians): count only %s, empty handler %s\n' \
    "$(r "$ksc" "$kic")" "$(r "$ks" "$ki")"
[ -n "$ke" ] && [ -n "$kc" ] && printf 'event with 4 args / count-only hit (medians): %s; an event costs %s ns more (inline detours: %s ns more)\n' \
    "$(r "$ke" "$kc")" "$(echo "$ke - $kc" | bc)" "$(echo "${kie:-0} - ${kic:-0}" | bc)"
[ -n "$kp" ] && [ -n "$kr" ] && printf 'kretprobe hit / kprobe hit (empty handlers, medians): %s\n' "$(r "$kr" "$kp")"
keh=$(med event_4args_hot); kieh=$(med inline_event_4args_hot); ke0=$(med event_0args_hot); rdf=$(med event_floor_rdtsc)
[ -n "$keh" ] && [ -n "$rdf" ] && printf 'event with 4 args, buffers in cache (medians): %s ns compact, %s ns inline; no argument %s ns; the timestamp alone %s ns; 4 args / (empty handler + timestamp): %s\n' \
    "$keh" "${kieh:--}" "${ke0:--}" "$rdf" "$(r "$keh" "$(echo "$kp + $rdf" | bc)")"
kehc=$(med event_4args_hot_c); ke0c=$(med event_0args_hot_c)
[ -n "$keh" ] && [ -n "$kehc" ] && printf 'generated recorder / C recorder (KPREWRITE_RECORDER=c), in cache (medians): 4 args %s (%s vs %s ns), no argument %s (%s vs %s ns)\n' \
    "$(r "$keh" "$kehc")" "$keh" "$kehc" "$(r "${ke0:-0}" "${ke0c:-1}")" "${ke0:--}" "${ke0c:--}"
sc=$(med static_count_only); s2=$(med static_event_2regs); s4=$(med static_event_4args); sr=$(med static_return_event)
[ -n "$sc" ] && [ -n "$kc" ] && printf 'static runtime (medians): count only %s ns (runtime library %s: a shared counter, lock add); event with 2 registers %s ns, with 4 args (a dereference and a string: a system call each) %s ns; a return event ($retval: the call hooked) %s ns\n' \
    "$sc" "$kc" "$s2" "$s4" "${sr:--}"
[ -s "$w/ctl.err" ] && { echo "(int3/disabled rows need the control directory:)"; head -n 2 "$w/ctl.err"; }
$have_ref || echo "(reference detours not found at $ref: ratios unavailable)"
