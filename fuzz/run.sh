#!/bin/sh
# make fuzz: builds the libFuzzer harnesses (clang, ASan+UBSan), a seed corpus
# from the test fixtures, and runs each harness for FUZZ_SECONDS. Corpora and
# findings stay under BUILDDIR/fuzz-work, so a later run goes on from there.
# Exit 1 when any harness found a crash, a hang (> 10 s), a leak or an OOM;
# the last lines are a table: per harness, seconds, executions and findings
# by kind.
#   sh fuzz/run.sh SRCDIR BUILDDIR "CORE-SOURCES..." [HARNESS...]
# Environment: FUZZ_CC (clang), FUZZ_SECONDS (60 a harness, run one after
# another), KP_FUZZ_TMP (/dev/shm: where the inputs are written as files).
set -u
src=$1 build=$2 core=$3
shift 3
harnesses=${*:-spec elf check rewrite prebuilt recorder}
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
    extra=   # the recorder harness: the emitter and the runtime's reads, beside the core
    [ "$h" = recorder ] && extra="$src/src/arch/x86/recorder.c $src/src/runtime/user/safe-read-x86.S"
    $cc $flags -fsanitize=fuzzer $inc -o "$W/fuzz-$h" "$src/fuzz/fuzz-$h.c" $extra $objs -lelf -lZydis -lZycore || exit 1
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
# event definitions for the recorder harness (each kind it compiles, and some it does not)
mkdir -p "$W/seeds/recorder"
for s in 'f a=%di b=%bx c=+0(%di):u64 s=+0(+8(%di)):string' 'f a=%cx:u8 b=%cx:s16 c=%cx:u32 d=%cx:x64 e=%bx:s8' \
    'f s=+0(%si):string t=+16(%di):string u=+0(+24(%di)):string' 'f g=@glob:u64 h=+0(@ptr):string i=@name:string' \
    'f st=$stack0 a7=$arg7 x=+8(%sp):u64 i=%ip' 'f a=+0(%dx):u64 b=+0(+0(%dx)):string' 'f a=%di if a == 1' 'f'; do
    printf '%s\n0123456789abcdefghijklmnopqrstuvwxyz0123456789\n' "$s" >"$W/seeds/recorder/$(printf '%s' "$s" | od -An -tx1 | tr -d ' \n' | cut -c1-60)"
done

# Prebuilt layouts (t/phdr.t makes the same): the pool added over two
# PT_NOTEs (the programs above), over one in a library, by growing the
# program header table in place (no PT_NOTE), or by moving it (data right
# after it); and the crafted PIEs of issue 33 (t/bad-input.t).
ldscript() { # MODE NAME SED: the linker's default script for MODE, edited, in $W/NAME.ld
    [ -s "$W/$2.ld" ] && return 0
    case $1 in
    -shared) set -- "$2" "$3" -shared -fPIC "$T/prebuilt-lib.c" ;;
    *) set -- "$2" "$3" "$1" "$T/prebuilt-prog.c" -pthread ;;
    esac
    name=$1 edit=$2
    shift 2
    gcc "$@" -Wl,--verbose -o "$W/ld-probe" 2>/dev/null | sed -n '/^======/,/^======/p' | sed '1d;$d' |
        sed "$edit" >"$W/$name.ld"
}
if [ "$(uname -m)" = x86_64 ]; then
    NONOTES='s|/DISCARD/ : {|/DISCARD/ : { *(.note.gnu.property) *(.note.ABI-tag)|'
    FIRST='s|\(+ SIZEOF_HEADERS;\)|\1 .kp_first : { KEEP(*(.kp_first)) }|'
    for m in pie shared; do
        ldscript "-$m" "$m-nonotes" "$NONOTES"
        ldscript "-$m" "$m-first" "$NONOTES;$FIRST"
    done
    P="$T/prebuilt-prog.c -pthread"
    seed pie-grow gcc -O2 -fPIE -pie -Wl,-T,"$W/pie-nonotes.ld" -Wl,--build-id=none -o "$D/pie-grow" $P
    seed pie-move gcc -O2 -fPIE -pie -Wl,-T,"$W/pie-first.ld" -Wl,--build-id=none -o "$D/pie-move" $P "$T/phdr-first.c"
    seed nopie gcc -O2 -fno-pie -no-pie -o "$D/nopie" $P
    seed lib-1note gcc -O2 -shared -fPIC -Wl,--build-id=sha1 -o "$D/lib-1note" "$T/prebuilt-lib.c"
    seed lib-grow gcc -O2 -shared -fPIC -Wl,-T,"$W/shared-nonotes.ld" -Wl,--build-id=none -o "$D/lib-grow" "$T/prebuilt-lib.c"
    seed lib-move gcc -O2 -shared -fPIC -Wl,-T,"$W/shared-first.ld" -Wl,--build-id=none -o "$D/lib-move" \
        "$T/prebuilt-lib.c" "$T/phdr-first.c"
    patch="perl $src/t/data/phdr-patch.pl"
    [ -s "$D/pie-grow" ] && {
        seed crafted-offset $patch "$D/pie-grow" "$D/crafted-offset" load:0 p_offset=0x8000000000000000 p_filesz=0x8000000000001000
        seed crafted-vaddr $patch "$D/pie-grow" "$D/crafted-vaddr" load:1 p_vaddr=0xfffffffffffff000 p_memsz=0x2000
    }
fi

# Findings by kind, from the names libFuzzer gives what it writes.
kinds="crash leak timeout oom"
count() { # HARNESS KIND: the artifacts of that kind this run wrote
    find "$W/artifacts" -name "$1-$2-*" -newer "$W/started-$1" 2>/dev/null | wc -l
}
TMPD=${KP_FUZZ_TMP:-/dev/shm}/kpfuzz.$$   # the inputs as files, private to this run
mkdir -p "$TMPD" || exit 1
status=0
summary=
for h in $harnesses; do
    case $h in spec) seeds=$W/seeds/spec ;; recorder) seeds=$W/seeds/recorder ;; *) seeds=$W/seeds/elf ;; esac
    corpus=$W/corpus-$h
    mkdir -p "$corpus"
    touch "$W/started-$h"
    t0=$(date +%s)
    echo "fuzz: $h for $secs s ($W/$h.log)"
    KP_FUZZ_TMP=$TMPD "$W/fuzz-$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$W/artifacts/$h-" "$corpus" "$seeds" >"$W/$h.log" 2>&1
    rc=$?
    took=$(($(date +%s) - t0))
    # executions: the final count, or (a run that stopped on a finding) the last status line's
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$W/$h.log" | tail -n 1)
    [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$W/$h.log" | tail -n 1)
    line=$(printf '%-9s %8s %12s' "$h" "$took" "${runs:-?}")
    total=0
    for k in $kinds; do
        c=$(count "$h" "$k")
        total=$((total + c))
        line="$line $(printf '%8s' "$c")"
    done
    other=0
    [ $rc -ne 0 ] && [ $total -eq 0 ] && other=1   # a non-zero exit with nothing written
    line="$line $(printf '%6s' "$other")"
    summary="$summary$line
"
    if [ $rc -ne 0 ] || [ $total -gt 0 ]; then
        status=1
        grep -E 'ERROR|SUMMARY|runtime error|fuzz-prebuilt:|Test unit written' "$W/$h.log" | head -n 6 | sed "s/^/  $h: /"
    fi
done
rm -rf "$TMPD"
echo
printf '%-9s %8s %12s %8s %8s %8s %8s %6s\n' harness seconds executions crashes leaks timeouts ooms other
printf '%s' "$summary"
[ $status -eq 0 ] && echo "fuzz: no findings" || echo "fuzz: FINDINGS (artifacts in $W/artifacts)"
exit $status
