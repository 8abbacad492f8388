#!/bin/sh
# Functions nobody named (src/rewriter/funcfind.c): in a stripped program,
# hand-written functions without symbols or CFI are found from what leads
# to them, named fn@0xADDR, probed under the same rules, and counted apart;
# decoys (data that looks like a function, code reached only by indirect
# jumps, a label inside a function) are not taken. t/data/funcfind.S says
# which is which.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" strip nm
D=$(tmpdir funcfind)
$CC -O2 -o "$D/full" "$KP_SRCDIR/t/data/funcfind-main.c" "$KP_SRCDIR/t/data/funcfind.S" 2>"$D/cc.err"
ok $? "the fixture builds"
strip -s -o "$D/stripped" "$D/full"
fn() { printf 'fn@0x%s' "$(addr_of "$D/full" "$1" | sed 's/^0*//')"; }

# Every function of the assembly, and nothing else of it, is found.
"$KPREWRITE" --check --summary --probe '*' "$D/stripped" >"$D/report"
s=$(addr_of "$D/full" ff_text_start); e=$(addr_of "$D/full" ff_text_end)
got=$(awk -v s="$s" -v e="$e" '$3 ~ /^fn@/ && ($1 "") >= (s "") && ($1 "") < (e "") { sub(/\+.*/, "", $3); print $3 }' "$D/report" | sort | tr '\n' ' ')
want=$(for f in ff_called ff_sum_decoy ff_outer ff_inner ff_tailed ff_ptr_a ff_ptr_b ff_c_tail ff_switch; do fn $f; echo; done | sort | tr '\n' ' ')
is "$want" "$got" "'*' finds the 9 functions of the assembly (called, called by found code, tail-jumped to from found code and from C, in a table of function pointers), and no decoy"
for f in ff_decoy_data ff_outer_mid; do
    out=$("$KPREWRITE" --check --probe "$(fn $f)" "$D/stripped" 2>&1)
    like "unknown symbol 'fn@0x" "$out" "$f is no function: $(fn $f) is unknown"
done
switch=$(addr_of "$D/full" ff_switch); tail_end=$(addr_of "$D/full" ff_text_end)
n=$(awk -v s="$switch" -v e="$tail_end" '$3 ~ /^fn@/ && ($1 "") > (s "") && ($1 "") < (e "")' "$D/report" | wc -l)
is 0 "$n" "the jump table's cases and the computed jump's target (after ff_switch's ret, aligned, ending in ret) are not taken"
like "^summary: 13 functions found without symbols or CFI \(fn@0xADDR\): 6 called, 1 tail-called, 4 pointed-to, 2 jumped-to; 13 probes on them$" \
     "$(grep 'found without' "$D/report")" "--summary counts them apart (with crt's 4: deregister_tm_clones called, frame_dummy jumping to register_tm_clones)"
like "^summary: 7 candidates left out: read-as-data 1, jump-table-target 4, inside-a-function 2;" \
     "$(grep 'left out' "$D/report")" "--summary counts the candidates left out by reason"
like '"found_functions": \{"found": 13, "probes": 13, "by": \{"called": 6, "tail-called": 1, "pointed-to": 4, "jumped-to": 2\}, "left_out": \{"read-as-data": 1, "jump-table-target": 4, "inside-a-function": 2\}' \
     "$("$KPREWRITE" --check --json --probe '*' "$D/stripped")" "--json counts them too"

# --check names them; each is jump-optimized (a 4-byte one through the padding after it)
is "k  $(fn ff_called)+0x0  [OPTIMIZED]  dcr 5: lea 0x1(%rdi), %eax; ret  [the jump ends in the padding after the function]" \
   "$(check1 "$D/stripped" "$(fn ff_called)")" "--check names a found function fn@0xADDR"
is "k  $(fn ff_outer)+0x0  [OPTIMIZED]  dcr 8: push %rbx; mov %edi, %ebx; call 0x$(addr_of "$D/full" ff_inner | sed 's/^0*//')  [call at the end of the DCR returns to the original code]" \
   "$(check1 "$D/stripped" "$(fn ff_outer)")" "fn@ADDR of a function found by a call from C"
is "$(check1 "$D/stripped" "$(fn ff_outer)")" "$(check1 "$D/stripped" "0x$(addr_of "$D/full" ff_outer | sed 's/^0*//')")" "0xADDR names it too"
n=$("$KPREWRITE" --check --probe 'fn@*' "$D/stripped" | grep -c OPTIMIZED)
is 13 "$n" "the glob fn@* matches the 13 found functions, all optimized"
# a function no call proves gets no call-entry assumptions: a return probe
# is refused, and an entry probe saves live flags
like "refused: not-called \(no call leads to it" "$(check1 "$D/stripped" "$(fn ff_tailed)%return")" \
     "a return probe on a function only jumped to is refused"
like "refused: not-called" "$(check1 "$D/stripped" "$(fn ff_ptr_a)%return")" \
     "a return probe on a function only in a table of pointers is refused"
like "OPTIMIZED" "$(check1 "$D/stripped" "$(fn ff_c_tail)%return")" "a return probe on a function a C tail call reaches is optimized"
like "OPTIMIZED" "$(check1 "$D/stripped" "$(fn ff_inner)%return")" "a return probe on a function found code calls is optimized"

# Run: every entry, then every return, probed; output identical, exact hits.
preload_sanitizer
want_out=$("$D/stripped")
hits() { awk -v n="$2" '$4 == n "+0x0" { print $6 }' "$1"; }
for mode in entry return; do
    spec='*'; [ $mode = return ] && spec='*%return'
    cp "$D/stripped" "$D/probed.$mode"
    "$KPREWRITE" --runtime "$KP_BUILDDIR/.libs/libkprewrite-rt.so.0" --probe "$spec" "$D/probed.$mode" >/dev/null 2>"$D/err.$mode"
    out=$(KPREWRITE_REPORT=1 "$D/probed.$mode" 2>"$D/hits.$mode")
    is "$want_out" "$out" "$mode: every function probed, found ones too: output identical (the decoy's bytes too)"
done
got=""
for f in ff_called ff_outer ff_inner ff_tailed ff_ptr_a ff_ptr_b ff_c_tail ff_switch ff_sum_decoy; do
    got="$got $f=$(hits "$D/hits.entry" "$(fn $f)")"
done
is " ff_called=3 ff_outer=2 ff_inner=2 ff_tailed=2 ff_ptr_a=4 ff_ptr_b=5 ff_c_tail=6 ff_switch=7 ff_sum_decoy=2" "$got" \
   "entry: the runtime names each found function as kprewrite does, with exact hits"
got=""
for f in ff_called ff_inner ff_c_tail ff_switch; do
    got="$got $f=$(hits "$D/hits.return" "$(fn $f)")"
done
is " ff_called=3 ff_inner=2 ff_c_tail=6 ff_switch=7" "$got" "return: exact hits on the called ones"
strings -a "$D/probed.entry" | grep -q "^fn@"; ok $([ $? -ne 0 ]; echo $?) "the image stores no fn@ name"
done_testing
