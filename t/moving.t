#!/bin/sh
# Code that moves at run time (doc/analysis.md): a blob marked as V8 marks
# its embedded builtins (t/data/moving-blob.S), which the program copies far
# away and runs there (t/data/moving-prog.c), as node's V8 does with short
# builtin calls. kprewrite refuses probes there (moves-at-run-time, naming
# the range and why), writes nothing there, probes the rest, and the program
# runs as before: with its symbols, and stripped (found by the exported
# getters), PIE and not.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" nm strip "${OBJDUMP:-objdump}"
D=$(tmpdir moving)
S=$KP_SRCDIR/t/data
RTLIB=$KP_BUILDDIR/.libs/libkprewrite-rt.so.0
OBJDUMP=${OBJDUMP:-objdump}
$CC -O2 -rdynamic -o "$D/prog" "$S/moving-prog.c" "$S/moving-blob.S"; ok $? "the PIE fixture builds"
$CC -O2 -no-pie -rdynamic -o "$D/nopie" "$S/moving-prog.c" "$S/moving-blob.S"; ok $? "the non-PIE fixture builds"
strip -s -o "$D/prog-stripped" "$D/prog" && strip -s -o "$D/nopie-stripped" "$D/nopie"; ok $? "stripped copies"
want=$("$D/prog"; echo "exit $?")
like "^blob: 106 bytes, copied" "$want" "the original runs the blob from its copy"
like "exit 0\$" "$want" "the original exits 0"

hex() { addr_of "$1" "$2" | sed 's/^0*//'; }
start=$(hex "$D/prog" v8_Default_embedded_blob_code_) end=$(hex "$D/prog" v8_Default_embedded_blob_code_end)
why="V8 copies them into its code range at run time (short builtin calls)"
is "k  Builtins_SumTo+0x0  refused: moves-at-run-time (V8's embedded builtins (v8_Default_embedded_blob_code_ and _size_) 0x$start-0x$end: $why)" \
   "$(check1 "$D/prog" Builtins_SumTo)" "--check names the range, how it is marked and why (symbols)"
is "r  Builtins_Add+0x0  refused: moves-at-run-time (V8's embedded builtins (v8_Default_embedded_blob_code_ and _size_) 0x$start-0x$end: $why)" \
   "$(check1 "$D/prog" Builtins_Add%return)" "a return probe there too"
summary() { "$KPREWRITE" --check --summary --probe "$2" "$1" | awk '$1 == "summary:" && $3 == "moves-at-run-time" { print $4 }'; }
is 4 "$(summary "$D/prog" '*')" "'*': the blob's 4 functions refused, none else"
like "^k  outside_fn\+0x0  \[INT3\] jump-into-dcr \(branch at 0x$(hex "$D/prog" Builtins_Tail) to 0x$(hex "$D/prog" outside_fn_inside) \(in code that moves at run time: it stays as it is\)\)" \
     "$(check1 "$D/prog" outside_fn)" "a branch from the blob into a DCR is not re-pointed (the blob's bytes stay)"
like "^k  after_blob\+0x0  \[INT3\] too-short \(the function is 3 bytes long; no room within rel8 reach for a trampoline\)" \
     "$(check1 "$D/prog" after_blob)" "no trampoline goes into the blob's padding (the only padding in reach)"

# the blob's bytes in FILE, disassembled (the same in every file: nothing written there)
blob_bytes() { "$OBJDUMP" -d --start-address=0x$start --stop-address=0x$end "$1" | sed -n '/^Disassembly/,$p'; }
orig_blob=$(blob_bytes "$D/prog")
preload_sanitizer
n=0
for spec in '*' '*%return' after_blob outside_fn; do
    n=$((n + 1))
    "$KPREWRITE" --runtime "$RTLIB" --probe "$spec" -o "$D/p$n" "$D/prog" >"$D/p$n.report" 2>"$D/p$n.err"
    ok $([ -f "$D/p$n" ]; echo $?) "bake '$spec'"
    is "$orig_blob" "$(blob_bytes "$D/p$n")" "bake '$spec': the blob's bytes are as they were"
    is "$want" "$("$D/p$n" 2>>"$D/p$n.err"; echo "exit $?")" "bake '$spec': the program runs the blob's copy as before"
done
KPREWRITE_REPORT=1 "$D/p1" 2>"$D/hits" >/dev/null
is 10 "$(awk '$4 == "square+0x0" { print $6 }' "$D/hits")" "'*': the rest is probed (square counted 10 hits)"

# stripped: the symbols are gone; the exported getters say where the blob is
for f in prog-stripped nopie-stripped; do
    base=${f%-stripped}
    s=$(hex "$D/$base" v8_Default_embedded_blob_code_) e=$(hex "$D/$base" v8_Default_embedded_blob_code_end)
    is "k  fde@0x$(hex "$D/$base" Builtins_SumTo)+0x0  refused: moves-at-run-time (V8's embedded builtins (v8::internal::DefaultEmbeddedBlobCode(), ...Size()) 0x$s-0x$e: $why)" \
       "$(check1 "$D/$f" "0x$(hex "$D/$base" Builtins_SumTo)")" "$f: the getters give the range"
    is 4 "$(summary "$D/$f" '*')" "$f: '*' refuses the blob's 4 functions"
    "$KPREWRITE" --runtime "$RTLIB" --probe '*' -o "$D/$f.p" "$D/$f" >/dev/null 2>"$D/$f.err"
    is "$want" "$("$D/$f.p" 2>>"$D/$f.err"; echo "exit $?")" "$f with every function probed runs as before"
done
done_testing
