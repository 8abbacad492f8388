#!/bin/sh
# Baking jump-optimized probes into programs linked with the runtime:
# identical output, exact counts, the handler API, rewriting twice, removal,
# a pool that is too small, atomic writes.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" cmp
D=$(tmpdir bake)
use_runtime
SRC="$KP_SRCDIR/t/data"
build() { # OUT CFLAGS...
    out=$1; shift
    $CC "$@" -mgeneral-regs-only -I"$KP_SRCDIR/include" -c -o "$out.o" "$SRC/bake-prog.c" &&
    $CC "$@" -I"$KP_SRCDIR/include" -c -o "$out-fpu.o" "$SRC/bake-fpu.c" &&
    $CC "$@" -o "$out" "$out.o" "$out-fpu.o" "$SRC/bake-asm.S" $RT
}
# a mid-function point of FUNC: the first instruction past its entry DCR
# (a point inside the entry's DCR would only demote the entry probe)
mid() {
    listing=$("$KPREWRITE" --check --disasm --probe "$2" "$1")
    line=$("$KPREWRITE" --check --probe "$2" "$1")
    start=${line%% *}   # the entry probe's address (after any endbr64)
    dcr=$(printf '%s' "$line" | sed -n 's/.*dcr \([0-9]*\):.*/\1/p')
    printf '%s\n' "$listing" | awk 'NR > 1 { print $1 }' | while read -r a; do
        [ $((0x$a - 0x$start)) -ge "${dcr:-5}" ] && { echo "$a"; break; }
    done
}

for opt in -O0 -O2; do
  for pie in -fPIE/-pie -fno-pie/-no-pie; do
    for cf in "" -fcf-protection; do
        cflags="$opt ${pie%/*} $cf"; lflags=${pie#*/}
        tag="$opt ${pie%/*}${cf:+ $cf}"
        V=$D/prog$opt${pie%/*}$cf
        if ! build "$V" $cflags $lflags 2>"$D/cc.err"; then
            ok 1 "$tag: build the fixture ($(head -n 1 "$D/cc.err"))"; continue
        fi
        want=$("$V"); cp "$V" "$V.orig"
        is "$want" "$("$V")" "$tag: linked with the runtime and never rewritten, it runs unchanged"
        mids=""
        for f in mix recurse; do a=$(mid "$V" $f); [ -n "$a" ] && mids="$mids --probe 0x$a"; done
        # regtest_point: every register known there (the handler API test)
        rt_f=$(nm "$V" | awk '$3 == "regtest" { print $1 }'); rt_p=$(nm "$V" | awk '$3 == "regtest_point" { print $1 }')
        rt_off=$((0x$rt_p - 0x$rt_f))
        mids="$mids --probe regtest+$rt_off"
        # inline detours (the default here), then shared ones (--detours=shared)
        for det in inline shared; do
            W=$V; [ $det = shared ] && { W=$V-shared; cp "$V.orig" "$W"; tag="$tag shared"; }
            "$KPREWRITE" --detours=$det --probe '*' --probe flagtest+2 $mids "$W" >"$D/report" 2>"$D/err"
            rc=$?
            ok $([ $rc -le 3 ] && [ $rc -ne 1 ]; echo $?) "$tag: rewrite every function entry (exit $rc: $(tail -n 1 "$D/err"))"
            n=$(grep -c OPTIMIZED "$D/report")
            ok $([ "$n" -ge 20 ]; echo $?) "$tag: $n probes baked"
            is "$want" "$("$W")" "$tag: output identical with every probe baked (count-only)"
            hits=$(KPREWRITE_REPORT=all "$W" 2>&1 >/dev/null | awk '$4 ~ /^mix\+0x[04]$/ { print $6 }')
            is 1000 "$hits" "$tag: exact hit count (mix called 1000 times)"
            is "api ok" "$("$W" api)" "$tag: handler API: registers (all 15, sp, ip, flags, writes), flags, batch rollback, -EINVAL, -ENOENT, nmissed"
            is "threads rc 0 hits 400001" "$("$W" threads)" "$tag: exact hits from 4 threads"
            is "fpu rc 0 value 6.0" "$("$W" fpu)" "$tag: KPROBE_FLAG_FPU handler keeps the probed code's xmm registers"
        done
        # a shared detour is a 14-byte head and the DCR: the pool holds far less code
        pool_text() { "$KPREWRITE" "$@" --probe '*' -o "$D/sz" "$V.orig" 2>&1 |
                      sed -n 's/.*pool use: text \([0-9]*\),.*/\1/p'; }
        ts=$(pool_text --detours=shared); ti=$(pool_text --detours=inline)
        ok $([ "${ts:-0}" -gt 0 ] && [ $((ts * 2)) -lt "${ti:-0}" ]; echo $?) \
            "$tag: shared detours use less than half the pool text of inline ones ($ts vs $ti bytes)"
    done
  done
done

V=$D/prog-O2-fPIE
cp "$V.orig" "$D/twice"; chmod 750 "$D/twice"
"$KPREWRITE" --probe add3 "$D/twice" >/dev/null 2>&1
"$KPREWRITE" --probe mix "$D/twice" >"$D/report" 2>&1
like '^[0-9a-f]+  k  add3\+0x0  \[OPTIMIZED\]' "$(cat "$D/report")" "a second run keeps the first run's probes"
hits=$(KPREWRITE_REPORT=all "$D/twice" 2>&1 >/dev/null | awk '{ print $4, $6 }' | sort | tr '\n' ' ')
is "add3+0x0 1000 mix+0x0 1000 " "$hits" "both probes count after two runs"
is 750 "$(stat -c %a "$D/twice")" "in-place rewrite keeps the mode"
"$KPREWRITE" --remove add3 --remove mix "$D/twice" >/dev/null 2>&1
cmp -s "$V.orig" "$D/twice"; ok $? "removing every probe gives back the original bytes"
cp "$D/twice" "$D/before"
err=$("$KPREWRITE" --remove add3 "$D/twice" 2>&1); rc=$?
is "1:kprewrite: $D/twice: --remove add3: no probe is baked there" "$rc:$err" "removing a probe that is not baked is an error"
cmp -s "$D/before" "$D/twice"; ok $? "a failed run leaves the image untouched"
"$KPREWRITE" --probe add3 -o "$D/out" "$D/twice" >/dev/null 2>&1
cmp -s "$D/before" "$D/twice"; ok $? "-o leaves the input untouched"
is "$want" "$("$D/out")" "-o writes a working image"

# a pool too small for the probes: the error names the sizes needed
printf '#include <kprewrite/pool.h>\nKPREWRITE_POOL(256, 512, 64)\n' >"$D/tiny.c"
build "$D/tiny" -O2 && $CC -O2 -o "$D/tiny" "$D/tiny.o" "$D/tiny-fpu.o" "$SRC/bake-asm.S" -I"$KP_SRCDIR/include" "$D/tiny.c" $RT
cp "$D/tiny" "$D/tiny.orig"
err=$("$KPREWRITE" --probe '*' "$D/tiny" 2>&1 >/dev/null); rc=$?
like '^kprewrite: .*tiny: the pool is too small for [0-9]+ probes: \.kprewrite\.text needs [0-9]+ bytes \(has 256\)' "$err" "too-small pool: the error names the size needed"
is 1 $rc "too-small pool: exit 1"
cmp -s "$D/tiny" "$D/tiny.orig"; ok $? "too-small pool: image untouched"
"$KPREWRITE" --probe work "$D/tiny" >/dev/null 2>&1
is "threads rc 0 hits 400001" "$("$D/tiny" threads)" "KPREWRITE_POOL() replaces the default pool"

# no pool, and no dynamic linking to load the runtime with: a static
# executable gets the static runtime in its pool (t/static.t tests it)
if $CC -O2 -static -o "$D/nopool" "$SRC/verdicts.S" "$SRC/verdicts-main.c" 2>"$D/cc.err"; then
    out=$("$KPREWRITE" --probe f_opt -o "$D/nopool.p" "$D/nopool" 2>&1); rc=$?
    like "nopool.p: 3 probes baked into a pool added to the image .*the static runtime" "$out" \
        "a static image without a pool: the static runtime added (f_opt, and its guards _exit and __libc_sigaction)"
    is "0 $("$D/nopool"; echo $?)" "$rc $("$D/nopool.p"; echo $?)" "a static image without a pool: it runs as before"
    err=$("$KPREWRITE" --probe f_opt --runtime /nonexistent/lib.so -o "$D/nopool.r" "$D/nopool" 2>&1)
    is 0 $? "a static image: --runtime, which names a library, does not apply ($err)"
else
    ok 1 "the static fixture builds ($(head -n 1 "$D/cc.err"))"
fi

# a static-pie: ET_DYN with DF_1_PIE and no interpreter; a DT_NEEDED on the
# runtime would never be loaded: the static runtime too
if $CC -O2 -static-pie -o "$D/spie" "$SRC/verdicts.S" "$SRC/verdicts-main.c" 2>"$D/cc.err"; then
    out=$("$KPREWRITE" --probe f_opt -o "$D/spie.out" "$D/spie" 2>&1); rc=$?
    like "the static runtime" "$out" "a static-pie: the static runtime added"
    is "0 $("$D/spie"; echo $?)" "$rc $("$D/spie.out"; echo $?)" "a static-pie: it runs as before"
    err=$("$KPREWRITE" --check --probe f_opt "$D/spie" 2>&1)
    case $err in *__sigaction*) ok 1 "--check on a static-pie: no libc guard probes (they are for libc.so.6)" ;;
                 *) ok 0 "--check on a static-pie: no libc guard probes (they are for libc.so.6)" ;; esac
else
    ok 1 "the static-pie fixture builds ($(head -n 1 "$D/cc.err"))"
fi

# the static runtime
build "$D/static-rt" -O2 && $CC -O2 -o "$D/static-rt" "$D/static-rt.o" "$D/static-rt-fpu.o" "$SRC/bake-asm.S" \
    -Wl,-u,__kprewrite_pool $RT_STATIC
"$KPREWRITE" --probe work --probe add3 --probe flagtest+2 "$D/static-rt" >/dev/null 2>&1
is "threads rc 0 hits 400001" "$("$D/static-rt" threads)" "static runtime: exact counts"

# hits before any constructor (.preinit_array): the runtime has not run its
# own, the pool's has not registered it: the first hit finds the pool from
# its state (the object holding it) and every hit counts
$CC -O2 -o "$D/early" "$SRC/early-prog.c" $RT
want=$("$D/early")
"$KPREWRITE" --probe early_fn "$D/early" >/dev/null 2>&1
is "$want" "$("$D/early")" "hits before constructors: output unchanged"
is 12 "$(KPREWRITE_REPORT=all "$D/early" 2>&1 >/dev/null | awk '$4 == "early_fn+0x0" { print $6 }')" \
    "hits before constructors: all 12 counted (7 from .preinit_array, 5 from main)"

# a shared library linked with the runtime, opened, closed and opened again
# by a program that is not (a plugin host): the runtime comes in with the
# library, and closing the library must unmap neither (the runtime's control
# thread would run unmapped code; the runtime keeps the library's table)
mkdir -p "$D/plugin"
$CC -O2 -shared -fPIC -Wl,-soname,libpb.so -o "$D/plugin/libpb.so" "$SRC/prebuilt-lib.c" -Wl,-u,__kprewrite_pool $RT
$CC -O2 -DDLOPEN -o "$D/host" "$SRC/prebuilt-lib.c" -ldl $KP_SAN_FLAGS   # (an ASan library needs an ASan host)
want=$("$D/host" "$D/plugin/libpb.so")
"$KPREWRITE" --probe lib_scale "$D/plugin/libpb.so" >/dev/null 2>&1
out=$(KPREWRITE_REPORT=all "$D/host" "$D/plugin/libpb.so" "$D/plugin/libpb.so" 2>"$D/plugin/hits"); rc=$?
is "0|$want
$want|1554" "$rc|$out|$(awk '$4 == "lib_scale+0x0" { print $6 }' "$D/plugin/hits")" \
    "a library linked with the runtime, opened twice by a host without it: no crash, output identical, both openings counted"
done_testing
