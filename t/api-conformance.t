#!/bin/sh
# The kprobes API against the kernel's: t/data/api-conf.c checks each
# behaviour of Documentation/trace/kprobes.rst, kernel/kprobes.c and the
# legacy documents (jprobes, fault_handler) on baked probes, one line a
# check naming the kernel's answer; this runs it (whole, and each section
# alone: a crash in one section must not hide the others) and checks the
# documents' examples' output.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir api-conformance)
use_runtime
export KPREWRITE_CTL_DIR="$D/ctl"
export KPREWRITE_CTL_DELAY_MS=0   # the fixture reads its own control directory
S=$KP_SRCDIR/t/data
PROBES="--probe f_opt --probe f_opt2 --probe f_alt --probe f_hang --probe f_race --probe f_ret --probe f_ret%return
        --probe f_plain --probe f_deep%return --probe kr_mid%return --probe kr_deep%return --probe f_fault --probe jp_fn --probe my_do_fork
        --probe jp_dbl --probe f_int3 --probe step_fn --probe jcc_fn+2 --probe load_fn --probe past_a --probe past_b"
has() { # ERE FILE DESCRIPTION: a line of FILE matches
    if grep -Eq -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; printf '# no line of %s matches %s\n' "$2" "$1"; fi
}
SECTIONS="registration handlers toggling threads kretprobes statistics jprobes fault_handlers examples"
# a sanitizer build: the fixture skips what ASan changes (api-conf.c says which)
[ -z "$KP_SAN_FLAGS" ] || export KP_SANITIZED=1

for v in "-O2 -fPIE -pie" "-O0 -fno-pie -no-pie"; do
    P=$D/conf$(echo $v | tr -d ' ')
    if ! $CC $v -mgeneral-regs-only -c -I"$KP_SRCDIR/include" -o "$P.o" "$S/api-conf.c" 2>"$D/cc.err" ||
       ! $CC $v -c -I"$KP_SRCDIR/include" -o "$P-fp.o" "$S/api-conf-fp.c" 2>>"$D/cc.err" ||
       ! $CC $v -o "$P" "$P.o" "$P-fp.o" "$S/api-conf-asm.S" $RT 2>>"$D/cc.err"; then
        ok 1 "$v: build the fixture ($(head -n 1 "$D/cc.err"))"; continue
    fi
    # shellcheck disable=SC2086
    "$KPREWRITE" $PROBES "$P" >"$D/report" 2>"$D/err"
    has 'wrote .*: 20 probes baked' "$D/err" "$v: every probe is baked"
    has '  k  f_opt\+0x0  \[OPTIMIZED\]' "$D/report" "$v: f_opt is jump-optimized"
    has '  k  f_int3\+0x0  \[INT3\]' "$D/report" "$v: f_int3 is an int3 probe"
    "$P" >"$D/out" 2>"$D/stderr"; rc=$?
    while IFS= read -r line; do
        case $line in
        "ok - "*) ok 0 "$v: ${line#ok - }" ;;
        "not ok - "*) ok 1 "$v: ${line#not ok - }" ;;
        "skip - "*) skip "$v: ${line#skip - }" ;;
        esac
    done <"$D/out"
    is "0 $(grep -c '^ok - ' "$D/out")" "$rc $(sed -n 's/^checks \([0-9]*\) failed 0$/\1/p' "$D/out")" \
        "$v: the checks all ran, none failed, exit 0 ($(tail -n 1 "$D/out"))"
    for s in $SECTIONS; do
        "$P" $s >"$D/$s.out" 2>&1; rc=$?
        is "0 0" "$rc $(grep -c '^not ok' "$D/$s.out")" "$v: section $s alone"
    done
    # the documents' examples (samples/kprobes)
    pre=$(grep '^<f_opt2> pre_handler:' "$D/out")
    addr=$(printf '%s\n' "$pre" | sed -n 's/.*p->addr = 0x\([0-9a-f]*\),.*/\1/p')
    ip=$(printf '%s\n' "$pre" | sed -n 's/.*ip = \([0-9a-f]*\),.*/\1/p')
    is "$(printf '%x' $((0x${addr:-0} + 1)))" "${ip:-none}" "$v: kprobe_example: pre_handler prints ip = p->addr + 1"
    has "^Planted kprobe at 0x$addr\$" "$D/out" "$v: kprobe_example: planted at the probe address"
    has '^<f_opt2> post_handler: p->addr = 0x[0-9a-f]+, flags = 0x0$' "$D/out" "$v: kprobe_example: post_handler"
    has '^f_ret returned 40 and took 1 ticks to execute$' "$D/out" "$v: kretprobe_example: the return value, data from the entry"
    has '^Missed probing 0 instances of f_ret$' "$D/out" "$v: kretprobe_example: nmissed"
    has '^jprobe: clone_flags = 0x1200011, stack_size = 0x2000, stack_start = 0x7000$' "$D/out" \
        "$v: jprobe_example: jdo_fork gets do_fork's arguments"
done
done_testing
