#!/bin/sh
# make fuzz: builds the libFuzzer harnesses (clang, ASan+UBSan), a seed corpus
# from the test fixtures, and runs each harness for FUZZ_SECONDS. Corpora and
# findings stay under BUILDDIR/fuzz-work, so a later run goes on from there.
# Exit 1 when any harness found a crash, a hang (> 10 s), a leak or an OOM.
#   sh fuzz/run.sh SRCDIR BUILDDIR "CORE-SOURCES..." [HARNESS...]
# Environment: FUZZ_CC (clang), FUZZ_SECONDS (60), FUZZ_JOBS (1 process each).
set -u
src=$1 build=$2 core=$3
shift 3
harnesses=${*:-spec elf check rewrite}
cc=${FUZZ_CC:-clang}
secs=${FUZZ_SECONDS:-60}
W=$build/fuzz-work
mkdir -p "$W/obj" "$W/seeds" "$W/artifacts"
command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (Debian: clang and libclang-rt-14-dev)" >&2; exit 1; }

flags="-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
inc="-DHAVE_CONFIG_H -DKPRW_RUNTIME_DEFAULT=\"libkprewrite-rt.so.0\" -I$build -I$src/include -I$src/src -I$src/src/rewriter -I$src/fuzz"
objs=
for f in $core; do
    case $f in *.c) ;; *) continue ;; esac
    o=$W/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
    # rebuilt when its source or any header changed (no dependency tracking here)
    if [ ! -f "$o" ] || [ "$src/$f" -nt "$o" ] ||
        [ -n "$(find "$src/src" "$src/include" "$src/fuzz" -name '*.h' -newer "$o" | head -n 1)" ]; then
        $cc $flags $inc -c -o "$o" "$src/$f" || exit 1
    fi
    objs="$objs $o"
done
for h in $harnesses; do
    $cc $flags -fsanitize=fuzzer $inc -o "$W/fuzz-$h" "$src/fuzz/fuzz-$h.c" $objs -lelf -lZydis -lZycore || exit 1
done

# Seeds: the fixtures as ELF images (user programs, one with a pool and one
# already rewritten, a fake vmlinux with every kernel table), and spec lines.
seed() { # NAME COMMAND...: build the seed NAME unless it is there
    n=$1; shift
    [ -s "$W/seeds/elf/$n" ] || "$@" >/dev/null 2>&1 || echo "fuzz: seed $n did not build" >&2
}
mkdir -p "$W/seeds/elf" "$W/seeds/spec"
D=$W/seeds/elf T=$src/t/data
seed verdicts gcc -O1 -o "$D/verdicts" "$T/verdicts.S" "$T/verdicts-main.c"
seed switch gcc -O2 -o "$D/switch" "$T/switch.c"
seed lp g++ -O2 -o "$D/lp" "$T/landing-pads.cc"
# a kernel module stand-in (a relocatable object: --kernel bakes into it)
seed kmod gcc -O2 -mcmodel=kernel -mno-red-zone -fno-pic -fno-asynchronous-unwind-tables -c -o "$D/kmod" "$T/kmod-fn.c"
# the same with a last byte that makes the rewrite harness bake it as a module
[ -s "$D/kmod-kernel" ] || { [ -s "$D/kmod" ] && { cat "$D/kmod"; printf '\002'; } > "$D/kmod-kernel"; }
if [ ! -s "$D/vmlinux" ]; then
    as -o "$W/fake-vmlinux.o" "$T/fake-vmlinux.S" && ld -q -static -nostdlib -e fn_plain \
        -Ttext=0xffffffff81000000 -z max-page-size=4096 --unique=.data..percpu -o "$D/vmlinux" "$W/fake-vmlinux.o"
fi
if [ ! -s "$D/pool" ]; then
    gcc -O2 -mgeneral-regs-only -I"$src/include" -o "$D/pool" "$T/kret-prog.c" "$T/kret-asm.S" \
        -Wl,-u,__kprewrite_pool -L"$build" -lkprewrite-pool -L"$build/.libs" -lkprewrite-rt -lpthread &&
        "$build/kprewrite" --probe square --probe 'square%return' --probe short_inc -o "$D/pool-baked" "$D/pool" >/dev/null 2>&1
fi
for s in main main+4 'f_*' 'do_sys_open%return' 0xffffffff81000000 'vfs_[rw]*+0x10' 'a-1' '%return' 'x+0y'; do
    printf '%s\n' "$s" >"$W/seeds/spec/$(printf '%s' "$s" | od -An -tx1 | tr -d ' \n')"
done

status=0
printf '%-8s %8s %12s  %s\n' harness seconds executions findings
for h in $harnesses; do
    case $h in spec) seeds=$W/seeds/spec ;; *) seeds=$W/seeds/elf ;; esac
    corpus=$W/corpus-$h
    mkdir -p "$corpus"
    before=$(ls "$W/artifacts" | wc -l)
    KP_FUZZ_TMP=${KP_FUZZ_TMP:-/dev/shm} "$W/fuzz-$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$W/artifacts/$h-" "$corpus" "$seeds" >"$W/$h.log" 2>&1
    rc=$?
    after=$(ls "$W/artifacts" | wc -l)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$W/$h.log" | tail -n 1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$W/$h.log" | tail -n 1)
    found=$((after - before))
    if [ $rc -ne 0 ] || [ $found -gt 0 ]; then
        status=1
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$W/$h.log" | head -n 5 | sed "s/^/  $h: /"
    fi
    printf '%-8s %8s %12s  %s\n' "$h" "${took:-?}" "${runs:-?}" "$found (exit $rc)"
done
exit $status
