#!/bin/sh
# A return event's caller, and a `symbol` argument, are named by the
# function symbol whose bytes hold the address, as the kernel's kallsyms
# names them (doc/tracing.md, "Reading events"): from the image's .symtab
# (static functions too), else its .dynsym -- not by the nearest probed
# function below the address, nor only by what the loader exports.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" objdump strip
D=$(tmpdir trace-caller)
use_runtime
preload_sanitizer
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
P=$D/tc
if $CC -O2 -g -o "$P.orig" "$KP_SRCDIR/t/data/trace-caller.c" 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
# after FN: FN+0xOFF of the instruction after FN's call of callee (objdump)
after_call() {
    objdump -d --no-show-raw-insn "$P.orig" | awk -v fn="<$1>:" '
        $2 == fn { start = strtonum_hex($1); inside = 1; next }
        inside && /^$/ { exit }
        inside && called { sub(":", "", $1); printf "+0x%x\n", hex($1) - start; exit }
        inside && /[ \t]call[q]? .*<callee>/ { called = 1 }
        function hex(s,   i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)); v = v * 16 + c - 1 } return v }
        function strtonum_hex(s) { return hex(s) }'
}
qoff=$(after_call quiet_caller); moff=$(after_call main)
ok $([ -n "$qoff" ] && [ -n "$moff" ]; echo $?) "objdump shows where callee returns to in quiet_caller ($qoff) and main ($moff)"
"$KPREWRITE" --runtime "$RTLIB" --probe 'callee%return' -o "$P" "$P.orig" >"$D/bake.out" 2>&1
ok $? "bake callee's return alone"
body() { sed -E 's/^ *[^ ]+-[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]{6}: //'; }

KPREWRITE_EVENTS='r callee ret=$retval:s64; p:at callee from=$stack0:symbol' KPREWRITE_TRACE=$D/t1.txt "$P" 3 >"$D/out1" 2>"$D/err1"
is "$("$P.orig" 3)|" "$(cat "$D/out1")|$(cat "$D/err1")" "traced: the output is the original's, stderr empty"
printf '%s\n' "at: (callee+0x0) from=main$moff" "r_callee_0: (main$moff <- callee) ret=4" \
    "at: (callee+0x0) from=quiet_caller$qoff" "r_callee_0: (quiet_caller$qoff <- callee) ret=4" >"$D/t1.want"
body <"$D/t1.txt" >"$D/t1.body"
if cmp -s "$D/t1.want" "$D/t1.body"; then ok 0 "callers named by .symtab: main and the static quiet_caller (not callee+OFF), at their exact offsets"
else ok 1 "callers named by .symtab: got"; sed 's/^/# /' "$D/t1.body"; fi

# --- a library with .dynsym only (stripped): its exported functions ---------------
cat >"$D/lib.c" <<'C'
__attribute__((noinline)) long lib_leaf(long a) { __asm__ volatile("" ::: "memory"); return a * 3; }
__attribute__((noinline)) long lib_outer(long a) { long r = lib_leaf(a); __asm__ volatile("" : "+r"(r)); return r + 1; }
C
printf '%s\n' 'long lib_outer(long);' '#include <stdio.h>' 'int main(void) { printf("%ld\n", lib_outer(2)); return 0; }' >"$D/main.c"
if $CC -O2 -shared -fPIC -o "$D/libtc.so" "$D/lib.c" 2>"$D/cc2.err" && strip --strip-unneeded "$D/libtc.so" &&
   $CC -O2 -o "$D/lm" "$D/main.c" -L"$D" -ltc 2>>"$D/cc2.err"; then
    ok 0 "a stripped library builds"
else
    ok 1 "a stripped library builds ($(head -n 1 "$D/cc2.err"))"
fi
"$KPREWRITE" --runtime "$RTLIB" --probe 'lib_leaf%return' "$D/libtc.so" >"$D/bake2.out" 2>&1
ok $? "bake lib_leaf's return into it"
LD_LIBRARY_PATH="$D${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KPREWRITE_EVENTS='r lib_leaf ret=$retval:s64' KPREWRITE_TRACE=$D/t2.txt \
    "$D/lm" >"$D/out2" 2>&1
like '^r_lib_leaf_0: \(lib_outer\+0x[0-9a-f]+ <- lib_leaf\) ret=6$' "$(body <"$D/t2.txt")" "the caller in a library without .symtab: named by .dynsym"
done_testing
