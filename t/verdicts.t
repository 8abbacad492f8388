#!/bin/sh
# Every user-ELF verdict reason on a fixture built here, asserted exactly.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" nm
D=$(tmpdir verdicts)
# A fixture that does not build is a failure, and nothing else can run.
if $CC -O1 -o "$D/v" "$KP_SRCDIR/t/data/verdicts.S" "$KP_SRCDIR/t/data/verdicts-main.c" 2>"$D/cc.err"; then
    ok 0 "the fixture builds"
else
    ok 1 "the fixture builds ($(head -n 1 "$D/cc.err"))"; done_testing
fi
V=$D/v
a() { printf '0x%x' $((0x$(addr_of "$V" "$1") + $2)); }   # SYM OFF -> address

is "k  f_opt+0x0  [OPTIMIZED]  dcr 9: push %rbp; mov %rsp, %rbp; mov \$0x1, %eax" \
   "$(check1 "$V" f_opt)" "plain prologue is optimized, DCR of whole instructions >= 5 bytes"
is "k  f_opt+0x2  refused: not-instruction-boundary (inside the instruction at $(a f_opt 1); boundaries $(a f_opt 1) and $(a f_opt 4))" \
   "$(check1 "$V" f_opt+2)" "offset inside an instruction names the boundaries around it"
is "k  f_opt+0x64  refused: outside-function (f_opt is 0xb bytes long)" \
   "$(check1 "$V" f_opt+100)" "offset past the function end"
is "k  f_endbr+0x4  [OPTIMIZED]  dcr 7: push %rbx; mov %rdi, %rbx; mov %rbx, %rax  [after endbr64]" \
   "$(check1 "$V" f_endbr)" "SYM+0 on endbr64 is placed after it and says so"
is "$("$KPREWRITE" --check --probe f_endbr "$V" | cut -c1-16)" "$("$KPREWRITE" --check --probe f_endbr+4 "$V" | cut -c1-16)" \
   "SYM+4 on endbr64 is the same address"
is "k  f_short+0x0  [INT3] too-short (the function is 3 bytes long; no room within rel8 reach for a trampoline)  dcr 2: xor %eax, %eax" \
   "$(check1 "$V" f_short)" "too-short: no padding within 128 bytes for the short jump's trampoline"
is "k  f_padded+0x0  [OPTIMIZED]  dcr 5: xor %eax, %eax; ret  [the jump ends in the padding after the function]" \
   "$(check1 "$V" f_padded)" "padding tactic: a 3-byte function whose jump ends in the padding after it"
short8='\[OPTIMIZED\]  dcr 2: xor %eax, %eax  \[a jmp rel8 to a trampoline: the function is shorter than a jmp rel32\]$'
like "$short8" "$(check1 "$V" f_padtight)" "padding tactic: not when the next function starts within the jump (a short jump instead)"
like "$short8" "$(check1 "$V" f_padjumped)" "padding tactic: not when a branch targets the padding (a short jump instead)"
like 'summary: tactics: 1 plain jump, 1 jump into the padding after the function, 1 short jump to a trampoline, 1 with 1 branches or table entries re-pointed to the copy; 0 one-instruction' \
   "$("$KPREWRITE" --check --summary --probe f_padded --probe f_opt --probe f_padtight --probe f_switch+27 "$V" 2>&1)" \
   "--summary counts the tactics"
like '"tactics": \{"jump": 1, "padding": 1, "short_jump": 1, "retarget": 1, "retargeted": 1, "one_instruction": 0, "evicted_windows": 0\}' \
   "$("$KPREWRITE" --check --json --probe f_padded --probe f_opt --probe f_padtight --probe f_switch+27 "$V" 2>&1)" \
   "--json counts the tactics"
is "k  f_tail+0x7  [INT3] crosses-function (2 bytes to the end of f_tail; no room within rel8 reach for a trampoline)  dcr 2: add %esi, %eax" \
   "$(check1 "$V" f_tail+7)" "crosses-function: no padding for the short jump's trampoline"
is "k  f_jumpin+0x0  [INT3] jump-into-dcr (branch at $(a f_jumpin 7) to $(a f_jumpin 2); a rel8, and no room within its reach for a trampoline)  dcr 5: xor %eax, %eax; add \$0x1, %eax" \
   "$(check1 "$V" f_jumpin)" "jump-into-dcr names the branch, a rel8 with no room for a trampoline"
is "k  f_jumpin+0x2  [OPTIMIZED]  dcr 5: add \$0x1, %eax; cmp %edi, %eax" \
   "$(check1 "$V" f_jumpin+2)" "a branch to the DCR's first byte is fine"
is "k  f_indirect+0x0  [INT3] indirect-jump (at $(a f_indirect 7))  dcr 7: mov %rdi, %rax; add \$0x8, %rax" \
   "$(check1 "$V" f_indirect --strict-indirect)" "--strict-indirect: an unbounded indirect jump falls back to int3"
like '^k  f_indirect\+0x0  \[OPTIMIZED\]' "$(check1 "$V" f_indirect)" \
   "without it, the jump leaves f_indirect: no address inside it is taken"
is "k  f_sys+0x0  [INT3] not-relocatable (syscall-like at $(a f_sys 2))  dcr 5: mov %edi, %eax; syscall; nop" \
   "$(check1 "$V" f_sys)" "syscall in the DCR"
is "k  f_trap+0x1  refused: not-relocatable (int3 at the probe address)" \
   "$(check1 "$V" f_trap+1)" "int3 at the probe address is refused"
is "k  f_ud+0x0  refused: not-relocatable (ud (bug/trap site) at the probe address)" \
   "$(check1 "$V" f_ud)" "ud2 at the probe address is refused"
like '^k  f_rip\+0x0  \[OPTIMIZED\]  dcr 6: mov 0x[0-9a-f]+, %eax  \[RIP-relative operand re-pointed\]$' \
   "$(check1 "$V" f_rip)" "RIP-relative operand is relocatable"
is "k  f_call+0x0  [OPTIMIZED]  dcr 9: sub \$0x8, %rsp; call $(a f_opt 0)  [call at the end of the DCR returns to the original code]" \
   "$(check1 "$V" f_call)" "a call in the DCR stays a call"
like '^k  f_jcc\+0x0  \[OPTIMIZED\]  dcr 9: test %edi, %edi; jz 0x[0-9a-f]+; mov \$0x3, %eax  \[relative branch re-encoded as rel32\]$' \
   "$(check1 "$V" f_jcc)" "a short jcc in the DCR is re-encoded"
like '^k  f_switch\+0x0  \[OPTIMIZED\]' "$(check1 "$V" f_switch)" \
   "a function with a bounded jump table is optimized"
is "k  f_switch+0x1b  [OPTIMIZED]  dcr 7: nop; nop; mov \$0xb, %eax  [branches or jump-table entries into the DCR re-pointed to its copy]" \
   "$(check1 "$V" f_switch+27)" "a jump-table entry into the DCR is re-pointed to the copy"
is "k  f_unbounded+0xe  [INT3] jump-into-dcr (jump table of the jmp at $(a f_unbounded 14) to $(a f_unbounded 16))  dcr 7: jmp %rax; mov \$0x1, %eax" \
   "$(check1 "$V" f_unbounded+14)" "an entry of a table read past a missing bound is never re-pointed"
like '^k  f_unbounded\+0x0  \[OPTIMIZED\]' "$(check1 "$V" f_unbounded)" \
   "a table dispatch without a bound check is read while its entries land in code"
is "k  f_loop+0x0  [INT3] not-relocatable (loop/jrcxz (rel8 only) at $(a f_loop 3))  dcr 5: or \$0x4, %ecx; loop $(a f_loop 3)" \
   "$(check1 "$V" f_loop)" "loop in the DCR"
like '^k  f_tailcall_got\+0x0  \[OPTIMIZED\]' "$(check1 "$V" f_tailcall_got)" \
   "a tail call through the GOT does not taint the function"
is "r  f_opt+0x0  [OPTIMIZED]  dcr 9: push %rbp; mov %rsp, %rbp; mov \$0x1, %eax" \
   "$(check1 "$V" 'f_opt%return')" "SYM%return is an r probe"
is "$(check1 "$V" f_opt)" "$(check1 "$V" "$(a f_opt 0)")" "0xADDR resolves like SYM"
is "k  _init+0x0  refused: init-fini-stub (.init)" "$(check1 "$V" _init)" ".init stub refused"
plt=$(objdump -d -j .plt "$V" 2>/dev/null | awk '/^ *[0-9a-f]+:/ { sub(":", "", $1); print $1; exit }')
is "k  0x$plt  refused: plt-stub (.plt)" "$(check1 "$V" "0x$plt")" "PLT stub refused"

out=$("$KPREWRITE" --check --probe 'f_*' "$V" | wc -l)
is 21 "$out" "glob f_* expands to every f_ function entry"
"$KPREWRITE" --check --probe 'f_*' --probe f_opt "$V" >/dev/null 2>&1
is 3 $? "exit 3 when something is refused"
"$KPREWRITE" --check --probe f_short --probe f_opt "$V" >/dev/null 2>&1
is 2 $? "exit 2 when some fall back to int3 and none is refused"
"$KPREWRITE" --check --probe f_opt --probe f_call "$V" >/dev/null 2>&1
is 0 $? "exit 0 when all are optimized"
err=$("$KPREWRITE" --check --probe nosuch "$V" 2>&1); rc=$?
is "1:kprewrite: $V: --probe: unknown symbol 'nosuch'" "$rc:$err" "unknown symbol: one line, exit 1"
err=$("$KPREWRITE" --check --probe counter "$V" 2>&1); rc=$?
is "1:kprewrite: $V: --probe: 'counter' is not a function" "$rc:$err" "data symbol: one line, exit 1"
err=$("$KPREWRITE" --check --probe 'zz*' "$V" 2>&1); rc=$?
is "1:kprewrite: $V: --probe: no function matches 'zz*'" "$rc:$err" "empty glob is an error"

printf '# a probe file\nf_opt\n  f_short   # comment\n\nf_opt+2\n' >"$D/probes"
out=$("$KPREWRITE" --check --probe-file "$D/probes" "$V" | awk '{ print $3 }' | tr '\n' ' ')
is "f_opt+0x0 f_short+0x0 f_opt+0x2 " "$out" "--probe-file reads one spec a line"
printf 'f_opt\nf_opt+0xg\n' >"$D/bad"
err=$("$KPREWRITE" --check --probe-file "$D/bad" "$V" 2>&1); rc=$?
is "1:kprewrite: $D/bad:2:9: bad offset (decimal or 0x hex)" "$rc:$err" "bad probe-file line as file:line:column"

json=$("$KPREWRITE" --check --json --probe f_jumpin --probe f_opt+2 --probe f_opt "$V")
like '"spec": "f_jumpin".*"verdict": "int3", "reason": "jump-into-dcr"' "$(printf '%s' "$json" | tr -d '\n')" "JSON int3 verdict and reason"
like '"verdict": "refused", "reason": "not-instruction-boundary"' "$json" "JSON refused verdict"
like '"verdict": "optimized", "reason": null, .*"dcr": \{"length": 9, "instructions": \["push %rbp", "mov %rsp, %rbp", "mov \$0x1, %eax"\]\}' "$json" "JSON DCR instructions"
like '"summary": \{"probes": 3, "optimized": 1, "int3": 1, "refused": 1' "$(printf '%s' "$json" | tr -d '\n')" "JSON summary counts"
if command -v python3 >/dev/null 2>&1; then
    printf '%s' "$json" | python3 -c 'import json,sys; json.load(sys.stdin)' 2>/dev/null
    ok $? "--json output is valid JSON"
else
    skip "python3 not found"
fi
done_testing
