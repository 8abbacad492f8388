#!/bin/sh
# Kernel tables: every vmlinux table kprewrite reads, on a fake vmlinux built
# here (t/data/fake-vmlinux.S), one function per verdict, asserted exactly.
# Also: exit codes, --json, a stripped copy with --system-map, broken tables.
. "$KP_SRCDIR/t/lib.sh"
AS=${AS:-as}
LD=${LD:-ld}
need "$AS" "$LD" nm strip
D=$(tmpdir kernel-tables)
S=$KP_SRCDIR/t/data/fake-vmlinux.S
LDFLAGS_K="-q -static -nostdlib -e fn_plain -Ttext=0xffffffff81000000 -z max-page-size=4096 --unique=.data..percpu"

# build NAME [as options...]: assemble and link the fixture as $D/NAME
build() {
    name=$1; shift
    "$AS" "$@" -o "$D/$name.o" "$S" 2>"$D/$name.err" &&
        $LD $LDFLAGS_K -o "$D/$name" "$D/$name.o" 2>>"$D/$name.err"
}
if ! build vmlinux; then
    # A fixture that does not build is a failure, not a skip.
    echo "not ok 1 - build the fake vmlinux"
    sed 's/^/# /' "$D/vmlinux.err"
    echo "1..1"
    exit 0
fi
V=$D/vmlinux

# a SYM OFF: address of SYM+OFF as printed in details (0x%llx). Kernel
# addresses do not fit sh arithmetic, so only the low 32 bits are added to.
a() {
    x=$(addr_of "$V" "$1")
    [ -n "$x" ] || { echo "0x?$1"; return; }
    hi=${x%????????}; lo=${x#????????}
    printf '0x%s%08x' "$(printf '%s' "$hi" | sed 's/^0*//')" $((0x$lo + $2))
}
# v SPEC [options...] [IMAGE]: "EXIT|k  SYM+0xOFF  verdict (detail)  dcr N  [notes]"
# for one probe, without the address column and the DCR's instruction text.
v() {
    spec=$1; shift
    out=$("$KPREWRITE" --check "$@" --probe "$spec" "${IMG:-$V}" 2>&1); rc=$?
    printf '%s|%s' "$rc" "$(printf '%s\n' "$out" | sed -e 's/^[0-9a-f]\{16\}  //' \
        -e 's/  dcr \([0-9][0-9]*\): [^[]*\(  \[\)/  dcr \1\2/' -e 's/  dcr \([0-9][0-9]*\): [^[]*$/  dcr \1/')"
}
OV="[OPTIMIZED]"
FENTRY_NOTE="[after ftrace's fentry call, which ftrace keeps: the jump is past it]"

like '"kind": "vmlinux"' "$("$KPREWRITE" --check --json --probe fn_plain "$V" 2>&1)" \
     "an ET_EXEC with __ex_table is read as a vmlinux"

# --- plain code, fentry, calls -----------------------------------------
is "0|k  fn_plain+0x0  $OV  dcr 7" "$(v fn_plain)" "no table entry: optimized"
is "0|k  fn_fentry+0x0  $OV  dcr 7  $FENTRY_NOTE" "$(v fn_fentry)" \
   "__mcount_loc: a probe at the fentry call goes past it, still named SYM+0"
like "^$(a fn_fentry 5 | sed 's/^0x//')  k  fn_fentry\+0x0  \[OPTIMIZED\]  dcr 7: push %rbp; mov %rsp, %rbp; mov %rdi, %rax  \[" \
   "$("$KPREWRITE" --check --probe fn_fentry "$V" 2>&1)" "its jump is at +5: the DCR is what follows the call ftrace keeps"
is "0|r  fn_fentry+0x0  $OV  dcr 7  $FENTRY_NOTE" "$(v 'fn_fentry%return')" \
   "fn_fentry%return goes past the fentry call too"
is "0|k  fn_fentry+0x5  $OV  dcr 7" "$(v fn_fentry+5)" "__mcount_loc reserves only the 5-byte site"
like "k  fn_fentry\+0x5  refused: reserved:__mcount_loc \(the site of fn_fentry\+0x0, baked past ftrace's call\)" \
   "$("$KPREWRITE" --check --probe fn_fentry --probe fn_fentry+5 "$V" 2>&1)" \
   "fn_fentry+5 beside fn_fentry: its site is fn_fentry+0's point"
is "2|k  fn_nofentry+0x0  [INT3] call-in-dcr  dcr 5" "$(v fn_nofentry)" \
   "a call __fentry__ not listed in __mcount_loc is an ordinary call: call-in-dcr"
is "2|k  fn_call+0x0  [INT3] call-in-dcr  dcr 6" "$(v fn_call)" "vmlinux: a call in the DCR is int3 call-in-dcr"

# --- __ex_table -------------------------------------------------------
is "3|k  fn_ex+0xa  refused: exception-table (the probed instruction may fault to a fixup)" \
   "$(v fn_ex+10)" "__ex_table: probe on the faulting instruction is refused"
is "0|k  fn_ex+0x0  $OV  dcr 7" "$(v fn_ex)" \
   "__ex_table: an entry elsewhere in the function, its fixup in the function too: the DCR is free of it"
is "2|k  fn_ex+0xd  [INT3] exception-table (__ex_table entry for $(a fn_ex 16))  dcr 6" \
   "$(v fn_ex+13)" "__ex_table: a DCR over a faulting instruction is int3 exception-table"
if build fixout --defsym FIXUP_OUTSIDE=1; then
    is "2|k  fn_ex+0x0  [INT3] exception-table (__ex_table entry for $(a fn_ex 10))  dcr 7" "$(IMG=$D/fixout v fn_ex)" \
       "__ex_table: a fixup in code no function covers keeps the function of its entry int3 throughout"
    is "3|k  fn_ret+0x3  refused: reserved:.return_sites (site $(a fn_ret 3) is the probed instruction, which the kernel patches at boot: only a jump's copy can take its place)  [relative branch re-encoded as rel32]" \
       "$(IMG=$D/fixout v fn_ret+3)" ".return_sites: an int3 probe on the site (its function int3 throughout) is refused"
else
    is "built" "$(head -n 1 "$D/fixout.err")" "build the variant with a fixup outside every function"
fi
is "2|k  fn_exfix+0x0  [INT3] jump-into-dcr (__ex_table entry at $(a ex_entry_far 0) to $(a fn_exfix 1))  dcr 7" \
   "$(v fn_exfix)" "__ex_table: a fixup into another function's DCR is a branch target"

# --- __jump_table -----------------------------------------------------
is "2|k  fn_jl+0x0  [INT3] reserved:__jump_table (site $(a fn_jl 4) in the DCR)  dcr 9" \
   "$(v fn_jl)" "__jump_table: nop5 site in the DCR"
is "3|k  fn_jl+0x4  refused: reserved:__jump_table (site $(a fn_jl 4) overlaps the probed instruction)" \
   "$(v fn_jl+4)" "__jump_table: probe on the site is refused"
is "0|k  fn_jl+0x9  $OV  dcr 5" "$(v fn_jl+9)" \
   "__jump_table: 5-byte site, and a target just past the DCR is fine"
is "3|k  fn_jl2+0x0  refused: reserved:__jump_table (site $(a fn_jl2 0) overlaps the probed instruction)" \
   "$(v fn_jl2)" "__jump_table: probe on a 2-byte site is refused"
is "0|k  fn_jl2+0x2  $OV  dcr 6" "$(v fn_jl2+2)" "__jump_table: a nop2 site reserves 2 bytes only"
is "2|k  fn_jltgt+0x0  [INT3] jump-into-dcr (__jump_table entry at $(a jt_entry_far 0) to $(a fn_jltgt 1))  dcr 7" \
   "$(v fn_jltgt)" "__jump_table: a jump_entry target inside the DCR is jump-into-dcr"

# --- .altinstructions, .smp_locks --------------------------------------
# an alternative whose every form is position-independent moves with the
# copy (its entry re-pointed there); one that is not, or that the DCR would
# split, keeps its place
MOVED="[boot-patched site moved to the copy, its table entry re-pointed]"
is "0|k  fn_alt+0x0  $OV  dcr 7  $MOVED" "$(v fn_alt)" ".altinstructions: a site in the DCR moves with the copy"
is "0|k  fn_alt+0x4  $OV  dcr 6  $MOVED" "$(v fn_alt+4)" ".altinstructions: a probe on the site: jump-optimized, the site moves"
is "0|k  fn_alt2+0x4  $OV  dcr 5  $MOVED" "$(v fn_alt2+4)" \
   ".altinstructions: a replacement with a rel32 jump out moves too (the runtime aims it again)"
is "2|k  fn_alt4+0x0  [INT3] reserved:.altinstructions (site $(a fn_alt4 4) in the DCR)  dcr 9" \
   "$(v fn_alt4)" ".altinstructions: a replacement that calls cannot move with the copy"
is "3|k  fn_alt4+0x4  refused: reserved:.altinstructions (site $(a fn_alt4 4) overlaps the probed instruction)" \
   "$(v fn_alt4+4)" ".altinstructions: a probe on such a site is refused"
like "^2\\|k  fn_alt2\\+0x0  \\[INT3\\] jump-into-dcr \\(\\.altinstructions entry at 0x[0-9a-f]+ to $(a fn_alt2 1)\\)  dcr 9\$" "$(v fn_alt2)" \
   ".altinstructions: a replacement's jump out of itself is a branch target (into the DCR of +0)"
is "2|k  fn_alt3+0x0  [INT3] reserved:.altinstructions (site $(a fn_alt3 4) in the DCR)  dcr 5" \
   "$(v fn_alt3)" ".altinstructions: a site the DCR would split stays"
is "0|k  fn_alt3+0x4  $OV  dcr 7  $MOVED" "$(v fn_alt3+4)" ".altinstructions: a DCR holding the whole site moves it"
is "0|k  fn_alt+0x7  $OV  dcr 5" "$(v fn_alt+7)" ".altinstructions: the site is instrlen (3) bytes long"
is "2|k  fn_lock+0x0  [INT3] reserved:.smp_locks (site $(a fn_lock 4) in the DCR)  dcr 7" \
   "$(v fn_lock)" ".smp_locks: lock prefix in the DCR"
is "3|k  fn_lock+0x4  refused: reserved:.smp_locks (site $(a fn_lock 4) overlaps the probed instruction)" \
   "$(v fn_lock+4)" ".smp_locks: probe on the lock prefix is refused"

# --- call/jmp site tables ---------------------------------------------
for t in "fn_sc .static_call_sites" "fn_retpo .retpoline_sites" "fn_cs .call_sites"; do
    f=${t% *}; tab=${t#* }
    is "2|k  $f+0x0  [INT3] reserved:$tab (site $(a $f 4) in the DCR)  dcr 9" \
       "$(v $f)" "$tab: site in the DCR (before call-in-dcr)"
    is "3|k  $f+0x4  refused: reserved:$tab (site $(a $f 4) overlaps the probed instruction)" \
       "$(v $f+4)" "$tab: probe on the site is refused"
done
# return sites follow their instruction into a jump's copy (the entry is
# re-pointed at the bake); an int3 probe cannot carry one it starts on
is "0|k  fn_ret+0x0  $OV  dcr 8  [relative branch re-encoded as rel32]  $MOVED" \
   "$(v fn_ret)" ".return_sites: jmp to the return thunk in the DCR: moves with it"
is "0|k  fn_ret+0x3  $OV  dcr 5  [relative branch re-encoded as rel32]  [flags live: saved]  $MOVED" \
   "$(v fn_ret+3)" ".return_sites: a probe on the site: jump-optimized, the site moves"

like "^2\\|k  fn_aux\\+0x0  \\[INT3\\] jump-into-dcr \\(\\.altinstr_aux branch at 0x[0-9a-f]+ to $(a fn_aux 4)\\)  dcr 6\$" \
     "$(v fn_aux)" ".altinstr_aux: its jumps back into functions are branch targets"

# --- IBT / kCFI ---------------------------------------------------------
is "0|k  fn_ibt+0x4  $OV  dcr 7  [after endbr64]" "$(v fn_ibt)" \
   ".ibt_endbr_seal: SYM+0 goes after the sealed endbr64, which stays"
is "0|k  fn_ibt_fentry+0x4  $OV  dcr 7  [after endbr64]  $FENTRY_NOTE" "$(v fn_ibt_fentry)" \
   "endbr64 then the fentry call: SYM+0 is SYM+0x4, baked past the call"
like "^$(a fn_ibt_fentry 9 | sed 's/^0x//')  k  fn_ibt_fentry\+0x4  \[OPTIMIZED\]  dcr 7: push %rbp" \
   "$("$KPREWRITE" --check --probe fn_ibt_fentry "$V" 2>&1)" "its jump is at +9"
is "2|k  fn_ibt2+0x0  [INT3] reserved:.ibt_endbr_seal (site $(a fn_ibt2 4) in the DCR)  dcr 8" \
   "$(v fn_ibt2)" ".ibt_endbr_seal: sealed endbr64 in the DCR"
is "3|k  fn_ibt2+0x4  refused: reserved:.ibt_endbr_seal (site $(a fn_ibt2 4) overlaps the probed instruction)" \
   "$(v fn_ibt2+4)" ".ibt_endbr_seal: probe on the endbr64 is refused"
is "2|k  fn_cfi+0x0  [INT3] reserved:.cfi_sites (site $(a fn_cfi 4) in the DCR)  dcr 10" \
   "$(v fn_cfi)" ".cfi_sites: site in the DCR"
is "3|k  fn_cfi+0x4  refused: reserved:.cfi_sites (site $(a fn_cfi 4) overlaps the probed instruction)" \
   "$(v fn_cfi+4)" ".cfi_sites: probe on the site is refused"
is "3|k  __cfi_fn_cfi+0x0  refused: blacklisted (__cfi_/__pfx_)" "$(v __cfi_fn_cfi)" \
   "__cfi_ preamble is blacklisted"
is "3|k  __pfx_fn_pfx+0x0  refused: blacklisted (__cfi_/__pfx_)" "$(v __pfx_fn_pfx)" \
   "__pfx_ padding is blacklisted"
is "0|k  fn_pfx+0x0  $OV  dcr 7" "$(v fn_pfx)" "the function after its __pfx_ padding is not"
globbed=$("$KPREWRITE" --check --probe '*' "$V" 2>/dev/null)
like "  fn_pfx\+0x0  " "$globbed" "a glob takes fn_pfx"
ok $(! printf '%s\n' "$globbed" | grep -Eq '  __(pfx|cfi)_'; echo $?) \
    "a glob takes no __pfx_/__cfi_ padding symbol (they are no function's entry)"
like "no function matches '__pfx_\*'" "$("$KPREWRITE" --check --probe '__pfx_*' "$V" 2>&1)" \
    "a glob of padding symbols alone matches nothing"

# --- __bug_table, .parainstructions ------------------------------------
is "3|k  fn_bug+0x4  refused: not-relocatable (ud (bug/trap site) at the probe address)" \
   "$(v fn_bug+4)" "__bug_table: probe on the ud2 is refused"
is "2|k  fn_bug+0x0  [INT3] not-relocatable (ud (bug/trap site) at $(a fn_bug 4))  dcr 6" \
   "$(v fn_bug)" "__bug_table: ud2 in the DCR is int3"
is "2|k  fn_para+0x0  [INT3] reserved:.parainstructions (site $(a fn_para 4) in the DCR)  dcr 10  [RIP-relative operand re-pointed]" \
   "$(v fn_para)" ".parainstructions: site in the DCR"
is "3|k  fn_para+0x4  refused: reserved:.parainstructions (site $(a fn_para 4) overlaps the probed instruction)" \
   "$(v fn_para+4)" ".parainstructions: probe on the site is refused"

# --- relocations into code ----------------------------------------------
MOVED="[KASLR relocation moved to the copy]"
is "0|k  fn_reloc+0x0  $OV  dcr 11  $MOVED" "$(v fn_reloc)" "R_X86_64_32S in the DCR: moved to the copy"
is "0|k  fn_reloc+0x4  $OV  dcr 7  $MOVED" "$(v fn_reloc+4)" "R_X86_64_32S in the probed instruction: moved to the copy"
is "0|k  fn_percpu+0x4  $OV  dcr 7  [RIP-relative operand re-pointed]  $MOVED" "$(v fn_percpu+4)" \
   "R_X86_64_PC32 against .data..percpu (an inverse relocation): moved to the copy"
is "3|k  fn_reloc_call+0x0  refused: reserved:relocation (a relocation KASLR applies overlaps the probed instruction, and only a jump's copy can carry it)" \
   "$(v fn_reloc_call)" "an int3 probe (a call: call-in-dcr) on an instruction KASLR relocates: refused"
like '"notes": \["kaslr-relocation-moved"\]' "$("$KPREWRITE" --check --json --probe fn_reloc "$V")" "--json: the note"
is "0|k  fn_riprel+0x4  $OV  dcr 7  [RIP-relative operand re-pointed]" "$(v fn_riprel+4)" \
   "R_X86_64_PC32 against an ordinary symbol is not"
is "0|k  fn_percpu_abs+0x4  $OV  dcr 9" "$(v fn_percpu_abs+4)" \
   "R_X86_64_32S against .data..percpu is not (KASLR leaves the zero-based per-cpu area)"

# --- relocations stripped (6.12's post-link step) and --relocs ------------
# (as 6.12's arch/x86/Makefile.postlink strips them)
objcopy --remove-section='.rela.*' --remove-section='.rela__*' "$V" "$D/norela"
readelf -SW "$D/norela" | grep -q ' RELA ' && ! readelf -SW "$D/norela" | grep -q '\.rela[^ ]*text'
ok $? "a copy without its code's .rela sections keeps other .rela sections (as a 6.12 vmlinux keeps .relaruntime_*)"
out=$("$KPREWRITE" --check --probe fn_reloc "$D/norela" 2>&1); rc=$?
is "1|kprewrite: $D/norela: its code's relocations were stripped (the arch's post-link step, as 6.12's): give --relocs with the vmlinux.relocs written from it, or bake before that step" \
   "$rc|$out" "code relocations stripped: refused, naming the way out"
# le32 N...: N as 32-bit little-endian words
le32() {
    for x; do
        printf "\\$(printf %03o $((x & 255)))\\$(printf %03o $((x >> 8 & 255)))"
        printf "\\$(printf %03o $((x >> 16 & 255)))\\$(printf %03o $((x >> 24 & 255)))"
    done
}
lo() { a "$1" "$2" | sed 's/^0xffffffff/0x/'; }
# what the kernel's relocs tool writes for the fixture: no 64-bit site, the
# per-cpu PC32 as inverse 32-bit, the 32S (fn_reloc's and the data's)
le32 0 0 $(lo fn_percpu 7) 0 $(lo fn_reloc 7) > "$D/vmlinux.relocs"
for p in fn_riprel+4 fn_percpu_abs+4 fn_plain; do
    is "$(v $p)" "$(IMG=$D/norela v $p --relocs "$D/vmlinux.relocs")" \
       "--relocs vmlinux.relocs: $p has the verdict the .rela sections give"
done
# (relocations from a vmlinux.relocs stay: no .rela entry to re-point)
is "2|k  fn_reloc+0x0  [INT3] reserved:relocation (site $(a fn_reloc 7) in the DCR)  dcr 11" \
   "$(IMG=$D/norela v fn_reloc --relocs "$D/vmlinux.relocs")" "--relocs: R_X86_64_32S in the DCR: int3"
is "3|k  fn_reloc+0x4  refused: reserved:relocation (site $(a fn_reloc 7) overlaps the probed instruction)" \
   "$(IMG=$D/norela v fn_reloc+4 --relocs "$D/vmlinux.relocs")" "--relocs: in the probed instruction: refused"
is "3|k  fn_percpu+0x4  refused: reserved:relocation (site $(a fn_percpu 7) overlaps the probed instruction)" \
   "$(IMG=$D/norela v fn_percpu+4 --relocs "$D/vmlinux.relocs")" "--relocs: the inverse one too"
is "0|k  fn_reloc+0x4  $OV  dcr 7" "$(IMG=$D/norela v fn_reloc+4 --relocs /dev/null)" \
   "--relocs /dev/null is no relocations at all (a kernel that is not relocatable)"
# broken files: one line naming the file and what is wrong
printf 'abc' > "$D/r3"
le32 0 0 0 0 > "$D/r4stops"
le32 0 0 0x1000 > "$D/rlow"
le32 $(lo fn_reloc 7) 0 0 0 > "$D/rnostop"
le32 0 $(lo fn_reloc 7) 0 > "$D/r2stops"
for c in "r3|its size is not a multiple of 4: not a vmlinux.relocs" \
         "r4stops|word 3 (0x00000000) after the third stop" \
         "rlow|word 2 (0x00001000) is not a kernel address" \
         "rnostop|word 0 ($(lo fn_reloc 7)) before the first stop" \
         "r2stops|2 stops (0 words) in 3 words, not 3: not an x86-64 vmlinux.relocs"; do
    f=${c%%|*} want=${c#*|}
    out=$("$KPREWRITE" --check --probe fn_plain --relocs "$D/$f" "$V" 2>&1); rc=$?
    like "^1\|kprewrite: $D/$f: $(printf '%s' "$want" | sed 's/[().]/\\&/g')" "$rc|$out" "--relocs $f: $want"
done

# --- blacklists ---------------------------------------------------------
is "3|k  fn_blacklisted+0x0  refused: blacklisted (_kprobe_blacklist)" "$(v fn_blacklisted)" \
   "_kprobe_blacklist: the function entry"
is "3|k  fn_blacklisted+0x3  refused: blacklisted (_kprobe_blacklist)" "$(v fn_blacklisted+3)" \
   "_kprobe_blacklist: the whole function"
is "3|k  fn_blacklisted.cold+0x0  refused: blacklisted (piece of fn_blacklisted (_kprobe_blacklist))" \
   "$(v fn_blacklisted.cold)" "_kprobe_blacklist: the .cold piece of a blacklisted function"
is "3|k  fn_kprobes+0x0  refused: blacklisted (.kprobes.text)" "$(v fn_kprobes)" \
   "__kprobes_text_start/__kprobes_text_end bound a blacklisted range"
is "0|k  fn_after_kprobes+0x0  $OV  dcr 7" "$(v fn_after_kprobes)" "past __kprobes_text_end is free"
is "3|k  fn_noinstr+0x0  refused: blacklisted (.noinstr.text)" "$(v fn_noinstr)" ".noinstr.text section"
is "3|k  fn_rconst+0x0  refused: reserved:runtime_const (site $(a fn_rconst 2) overlaps the probed instruction)" \
   "$(v fn_rconst)" "runtime_ptr_*: a runtime constant's immediate, patched at boot, is refused"
is "3|k  fn_head+0x0  refused: blacklisted (.head.text)" "$(v fn_head)" \
   ".head.text: boot code, run before the kernel is at its link address"
is "3|k  __SCT__fake_call+0x0  refused: blacklisted (.static_call.text)" "$(v __SCT__fake_call)" \
   ".static_call.text: a static call's trampoline (static_call_update() rewrites it)"
is "3|k  fn_entry+0x0  refused: blacklisted (.entry.text)" "$(v fn_entry)" ".entry.text section"
is "3|k  fn_exit+0x0  refused: blacklisted (.exit.text)" "$(v fn_exit)" \
   ".exit.text section (a built-in exit function never runs; the kernel frees it)"

# --- exit codes -----------------------------------------------------------
"$KPREWRITE" --check --probe fn_plain --probe fn_fentry --probe fn_jl+9 --probe fn_jl2+2 \
    --probe fn_alt+7 --probe fn_ibt --probe fn_pfx --probe fn_riprel+4 --probe fn_after_kprobes \
    "$V" >/dev/null 2>&1
is 0 $? "exit 0 when every probe is optimized"
"$KPREWRITE" --check --probe fn_plain --probe fn_jl --probe fn_call --probe fn_ex --probe fn_reloc \
    "$V" >/dev/null 2>&1
is 2 $? "exit 2 for int3 fallbacks and no refusal"
"$KPREWRITE" --check --probe fn_plain --probe fn_jl --probe fn_jl+4 "$V" >/dev/null 2>&1
is 3 $? "exit 3 when something is refused"
out=$("$KPREWRITE" --check --summary --probe fn_plain --probe fn_jl --probe fn_jl+4 --probe fn_ex+10 \
    --probe fn_blacklisted "$V" 2>&1)
like '^summary: 5 probes: 1 optimized, 1 int3, 3 refused$' "$out" "--summary counts the verdicts"

# --- --json -----------------------------------------------------------------
json=$("$KPREWRITE" --check --json --probe fn_jl+4 --probe fn_call --probe fn_fentry --probe fn_ex+10 "$V" 2>&1)
like '"symbol": "fn_jl", "offset": 4, "verdict": "refused", "reason": "reserved:__jump_table"' "$json" \
     "--json: refused reserved:__jump_table"
like '"symbol": "fn_call", "offset": 0, "verdict": "int3", "reason": "call-in-dcr"' "$json" \
     "--json: int3 call-in-dcr"
like '"symbol": "fn_fentry", "offset": 0, "verdict": "optimized", "reason": null, .*"notes": \["after-fentry"\]' \
     "$json" "--json: optimized with the after-fentry note"
like '"symbol": "fn_ex", "offset": 10, "verdict": "refused", "reason": "exception-table"' "$json" \
     "--json: refused exception-table"

# --- stripped copy + System.map ---------------------------------------------
strip -s -o "$D/stripped" "$V"
nm "$V" | grep '^[0-9a-f]' >"$D/System.map"
nsym=$(nm "$D/stripped" 2>/dev/null | wc -l)
is 0 "$nsym" "the stripped copy has no symbols"
for p in fn_jl+4 fn_jl fn_lock fn_fentry fn_ex+10 fn_ex fn_jltgt fn_blacklisted fn_blacklisted.cold \
         fn_kprobes fn_noinstr __cfi_fn_cfi fn_alt+7; do
    is "$(v $p)" "$(IMG=$D/stripped v $p --system-map "$D/System.map")" \
       "stripped + --system-map: $p has the same verdict"
done

# --- broken tables: exit 1, one line naming the table -----------------------
# variant DEFSYM TABLE: the fixture with one bad entry in TABLE
bad() {
    if ! build "bad-$1" --defsym "$1=1"; then
        is "built" "$(head -n 1 "$D/bad-$1.err")" "$2: build the broken variant"
        return
    fi
    err=$("$KPREWRITE" --check --probe fn_plain "$D/bad-$1" 2>&1 >"$D/bad-$1.out"); rc=$?
    tab=$(printf '%s' "$2" | sed 's/\./\\./g')
    like "^1:1:0:kprewrite: $D/bad-$1: table $tab \([0-9]+ bytes at 0x[0-9a-f]+\): entry layout not recognised; refusing to guess\$" \
         "$rc:$(printf '%s\n' "$err" | wc -l | tr -d ' '):$(wc -c <"$D/bad-$1.out" | tr -d ' '):$err" "$3"
}
bad CORRUPT_ALT .altinstructions ".altinstructions of 15 bytes fits no layout"
bad CORRUPT_ALTREPL .altinstructions ".altinstructions replacement outside .altinstr_replacement"
bad CORRUPT_LOCKS .smp_locks ".smp_locks entry pointing into .data"
bad CORRUPT_JL __jump_table "__jump_table code pointing into .data"
bad CORRUPT_BUG __bug_table "__bug_table entry not on a ud"
bad CORRUPT_MCOUNT __mcount_loc "__mcount_loc address not in code"

# --- relocations of non-allocated sections are not code sites -----------
# --emit-relocs keeps .rela.debug_*: their offsets are section offsets. Linked
# low, such an offset equals a code address; it must not reserve it.
cat >"$D/lowrel.s" <<'EOF'
        .text
        .globl f, g
        .type f, @function
f:      push %rbp
        mov %rsp, %rbp
        mov %rdi, %rax
        pop %rbp
        ret
        .size f, . - f
        .type g, @function
g:      push %rbp
        mov %rsp, %rbp
        movq $f, %rax
        pop %rbp
        ret
        .size g, . - g
        .section .debug_fake, "", @progbits
        .skip 0x1001
        .quad f
        .section __ex_table, "a", @progbits
        .section .note.GNU-stack, "", @progbits
EOF
if "$AS" -o "$D/lowrel.o" "$D/lowrel.s" 2>"$D/lowrel.err" &&
   $LD -q -static -nostdlib -e f -Ttext=0x1000 -z max-page-size=4096 -o "$D/lowrel" "$D/lowrel.o" 2>>"$D/lowrel.err"; then
    is "0|k  f+0x0  $OV  dcr 7" "$(IMG=$D/lowrel v f)" \
       "a relocation in .rela.debug_fake at offset 0x1001 does not reserve code at 0x1001"
    is "0|k  g+0x0  $OV  dcr 11  $MOVED" "$(IMG=$D/lowrel v g)" \
       "while R_X86_64_32S in .rela.text is one (moved to the copy)"
else
    is "built" "$(head -n 1 "$D/lowrel.err")" "build the low-linked relocation fixture"
fi

done_testing
