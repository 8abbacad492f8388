#!/bin/sh
# Kernel-contract detours (what kprewrite bakes into a vmlinux), run in user
# space: a static program standing in for a vmlinux links the kernel pool
# (src/runtime/kernel/pool.S) and a kprewrite_dispatch() that records the
# pt_regs the detour built. Built without a red zone, as kernel code is.
. "$KP_SRCDIR/t/lib.sh"
need "$CC" od cmp nm
D=$(tmpdir kernel-detour)
# (pool.S includes abi.h, which integrate.sh copies next to it in a kernel tree)
pool="-DCONFIG_KPREWRITE_TEXT_KB=16 -DCONFIG_KPREWRITE_TABLE_KB=8 -DCONFIG_KPREWRITE_DATA_KB=4 -I$KP_SRCDIR/include/kprewrite"
printf 'int main(void) { return 0; }\n' >"$D/static.c"
# the stand-in is static: without a static C library (libc6-dev) it cannot
# be built, which is a failure, and nothing else can run
if $CC -static -o "$D/static" "$D/static.c" 2>"$D/cc.err"; then
    ok 0 "a static program links (the stand-in needs the static C library)"
else
    ok 1 "a static program links (the stand-in needs the static C library): $(head -n 1 "$D/cc.err")"; done_testing
fi
if ! $CC -O2 -mno-red-zone -static -I"$KP_SRCDIR/include" -o "$D/k" "$KP_SRCDIR/t/data/kdetour-main.c" \
        "$KP_SRCDIR/t/data/kdetour-fn.S" -x assembler-with-cpp "$KP_SRCDIR/src/runtime/kernel/pool.S" $pool \
        2>"$D/cc.log"; then
    echo "Bail out! the stand-in does not build: $(grep -m 1 error "$D/cc.log")"   # a fixture that broke is a failure
    exit 1
fi
mid=$("$D/k" mid)
"$D/k" run > "$D/orig.out"

# an event definition: the kernel's runtime has no events (yet), refused in one line
"$KPREWRITE" --kernel --probe kloop --probe 'p:kev kfn a=%di' -o "$D/kev" "$D/k" >"$D/kev.out" 2>"$D/kev.err"
is "1|kprewrite: $D/k: --probe 'p:kev kfn a=%di': col 1: fetch-arg events are user-space only for now (bake the point alone: --probe SPEC)|no" \
    "$?|$(cat "$D/kev.err")|$([ -e "$D/kev" ] && echo yes || echo no)" \
    "a vmlinux: --probe DEFINITION is refused (events are user-space only), one line, nothing written"
out=$("$KPREWRITE" --kernel --probe kfn --probe "kfn+$mid" --probe kloop -o "$D/k2" "$D/k" 2>&1)
like "3 probes baked" "$out" "the stand-in vmlinux is rewritten"
check=$("$KPREWRITE" --kernel --check --probe kfn --probe "kfn+$mid" --probe kloop "$D/k")
like "kfn\\+0x0  \\[OPTIMIZED\\]" "$check" "kfn+0 is jump-optimized"
like "kfn\\+$(printf '0x%x' "$mid")  \[OPTIMIZED\].*flags live" "$check" "the mid point is optimized with live flags"
like "kloop\\+0x0  \\[INT3\\] jump-into-dcr" "$check" "kloop+0 needs int3"

for f in ftrace_regs_caller verify_cpu; do
    like "$f\\+0x0  refused: blacklisted \\(copied by ftrace, or CPU bring-up code\\)" \
        "$("$KPREWRITE" --kernel --check --probe $f "$D/k")" "$f+0 is refused (its bytes are copied, or run before the runtime can)"
done
like "ftrace_regs_caller\\+0x1  refused: blacklisted" "$("$KPREWRITE" --kernel --check --probe ftrace_regs_caller+1 "$D/k")" \
    "and so is any point up to ftrace_regs_caller_end"
like "kinit\\+0x0  refused: blacklisted \\(\\.init\\.text\\)" \
    "$("$KPREWRITE" --kernel --check --probe kinit "$D/k")" "a probe in .init.text is refused"

# the int3 site keeps its bytes: the kernel runtime arms it after hooking the trap
kloop=$(nm "$D/k" | awk '$3 == "kloop" { print $1 }')
text=$(readelf -SW "$D/k" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".text" { print $3, $4 }')
set -- $text
at=$(( 0x$kloop - 0x$1 + 0x$2 ))
ok $([ "$(od -An -tx1 -j $at -N 7 "$D/k")" = "$(od -An -tx1 -j $at -N 7 "$D/k2")" ]; echo $?) \
    "the int3 probe's site is left as it was"
ok $(! cmp -s "$D/k" "$D/k2"; echo $?) "the optimized sites changed"

"$D/k2" run > "$D/plain.out"
like "^kfn\(5\) = 1007 kloop\(\) = 3" "$(cat "$D/plain.out")" "the rewritten program computes what the original does"
ok $([ "$(head -n 1 "$D/plain.out")" = "$(head -n 1 "$D/orig.out")" ]; echo $?) "same first line as the original"
like "hits 1 1" "$(cat "$D/plain.out")" "each detour called kprewrite_dispatch once"
like "entry: di 5 sp-ok 1" "$(cat "$D/plain.out")" "entry: pt_regs has the argument and the probed code's sp"
like "mid: di 5 bx 0x1122334455667788 zf 1 if 1 sp-ok 1" "$(cat "$D/plain.out")" \
    "mid: callee-saved bx, the whole flags word (ZF, IF) and sp are in pt_regs"

"$D/k2" run modify > "$D/mod.out"
# di 100 at entry; ZF cleared (no +1000) and bx 0 (no +1) at the mid point
like "^kfn\(5\) = 101 " "$(cat "$D/mod.out")" "a handler's writes to di, the flags and bx take effect"
like "mid: di 100 " "$(cat "$D/mod.out")" "the mid point sees the di the entry handler wrote"

# a return probe in a kernel: one entry of kind r for SYM and SYM%return,
# whose detour is the kprobe's (the kernel runtime takes the return address
# over from pt_regs.sp): the image differs from the kprobe-only one in the
# entry's kind and flags alone
like "  r  kfn\\+0x0  \\[OPTIMIZED\\]" "$("$KPREWRITE" --kernel --check --probe kfn --probe 'kfn%return' "$D/k")" \
    "kfn%return is jump-optimized in a kernel"
"$KPREWRITE" --kernel --probe kfn -o "$D/kk" "$D/k" >/dev/null 2>&1
like "1 probe baked" "$("$KPREWRITE" --kernel --probe kfn --probe 'kfn%return' -o "$D/kr" "$D/k" 2>&1)" \
    "kfn and kfn%return are baked as one entry"
ok $([ "$(cmp -l "$D/kk" "$D/kr" | awk '{ print $2, $3 }' | tr '\n' ' ')" = "4 14 153 162 " ]; echo $?) \
    "the only bytes changed: the entry's flags (+KPRW_F_KPROBE) and kind (k to r)"
like "hits 1 0" "$("$D/kr" run)" "its detour runs as a kprobe's"

# a fentry site (a kernel built with ftrace): ftrace keeps it, its
# __mcount_loc slot and the slot's relocation untouched; the probe named
# kfentry+0 is baked right after the call (the state there is the entry's)
$CC -O2 -mno-red-zone -static -Wl,-q -I"$KP_SRCDIR/include" -o "$D/kf" "$KP_SRCDIR/t/data/kdetour-main.c" \
    "$KP_SRCDIR/t/data/kdetour-fn.S" -x assembler-with-cpp "$KP_SRCDIR/src/runtime/kernel/pool.S" $pool
like "kfentry\\+0x0  \\[OPTIMIZED\\].*after ftrace's fentry call" \
    "$("$KPREWRITE" --kernel --check --probe kfentry "$D/kf")" "kfentry+0 goes past the fentry call"
"$KPREWRITE" --kernel --probe kfentry -o "$D/kf2" "$D/kf" >/dev/null 2>&1
mstart=$(nm "$D/kf" | awk '$3 == "__start_mcount_loc" { print $1 }')
# (the stand-in's linker keeps __mcount_loc as a section of its own)
so=$(readelf -SW "$D/kf" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == "__mcount_loc" { print $4 }')
[ -z "$so" ] || so=$((0x$so))
ok $([ -n "$so" ] && [ "$(od -An -tx8 -j "$so" -N 8 "$D/kf" | tr -d ' ')" != 0000000000000000 ]; echo $?) \
    "the stand-in lists kfentry in __mcount_loc"
ok $([ -n "$so" ] && [ "$(od -An -tx8 -j "$so" -N 8 "$D/kf2")" = "$(od -An -tx8 -j "$so" -N 8 "$D/kf")" ]; echo $?) \
    "the baked image's __mcount_loc slot for kfentry is kept"
rel=$(readelf -rW "$D/kf2" | awk -v a="$mstart" '$1 ~ a "$" { print $3; exit }')
ok $([ "$rel" = R_X86_64_64 ]; echo $?) "and its relocation (${rel:-none})"
kfe=$(nm "$D/kf" | awk '$3 == "kfentry" { print $1 }')
tset=$(readelf -SW "$D/kf" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".text" { print $3, $4 }')
set -- $tset
fo=$(( 0x$kfe - 0x$1 + 0x$2 ))
ok $([ "$(od -An -tx1 -j $fo -N 5 "$D/kf2")" = "$(od -An -tx1 -j $fo -N 5 "$D/kf")" ]; echo $?) \
    "the call __fentry__ keeps its bytes"
like "^ *e9" "$(od -An -tx1 -j $((fo + 5)) -N 1 "$D/kf2")" "the jump is right after it"
out=$("$D/kf2" run)
like "hits 1 0" "$out" "the detour past the fentry call runs"
like "kfentry\(5\) = 12" "$out" "and kfentry computes what it did"
"$KPREWRITE" --kernel --remove kfentry -o "$D/kf3" "$D/kf2" >/dev/null 2>&1
ok $([ "$(od -An -tx1 -j $fo -N 12 "$D/kf3")" = "$(od -An -tx1 -j $fo -N 12 "$D/kf")" ]; echo $?) \
    "--remove puts kfentry's bytes back"

# KASLR relocations move with their instruction: the stand-in linked with
# --emit-relocs (as a relocatable vmlinux is) keeps .rela.text; kreloc's
# first instruction holds an R_X86_64_32S the relocs tool would list
if $CC -O2 -mno-red-zone -static -Wl,-q -I"$KP_SRCDIR/include" -o "$D/kq" "$KP_SRCDIR/t/data/kdetour-main.c" \
        "$KP_SRCDIR/t/data/kdetour-fn.S" -x assembler-with-cpp "$KP_SRCDIR/src/runtime/kernel/pool.S" $pool \
        2>"$D/cc.log"; then
    ok 0 "the stand-in links with --emit-relocs"
else
    ok 1 "the stand-in links with --emit-relocs: $(grep -m 1 error "$D/cc.log")"
fi
like "kreloc\\+0x0  \\[OPTIMIZED\\]  dcr 7: .*  \\[KASLR relocation moved to the copy\\]" \
    "$("$KPREWRITE" --kernel --check --probe kreloc "$D/kq")" "a relocation in the first instruction: jump-optimized, moved"
like "1 probe baked" "$("$KPREWRITE" --kernel --probe kreloc -o "$D/kq2" "$D/kq" 2>&1)" "baked"
# foff FILE HEXADDR: the file offset of an address (sh arithmetic: these
# addresses are low, a static program's)
foff() {
    readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | while read -r name type addr off size rest; do
        [ "$type" = PROGBITS ] || continue
        if [ $((0x$2)) -ge $((0x$addr)) ] && [ $((0x$2)) -lt $((0x$addr + 0x$size)) ]; then
            echo $((0x$2 - 0x$addr + 0x$off)); break
        fi
    done
}
# table IMAGE: its probe table's file offset ($to), flags ($flags), and
# where what follows the strings starts ($after: the masks, the records)
table() {
    to=$(foff "$1" "$(nm "$1" | awk '$3 == "kprewrite_pool_table" { print $1 }')")
    flags=$(od -An -tu4 -j $((to + 40)) -N 4 "$1" | tr -d ' ')
    so=$(od -An -tu4 -j $((to + 12)) -N 4 "$1" | tr -d ' '); ss=$(od -An -tu4 -j $((to + 16)) -N 4 "$1" | tr -d ' ')
    after=$((to + (so + ss + 3) / 4 * 4))
}
kr=$(nm "$D/kq" | awk '$3 == "kreloc" { print $1 }')
pool_lo=$(nm "$D/kq" | awk '$3 == "kprewrite_pool_text" { print $1 }')
pool_hi=$(nm "$D/kq" | awk '$3 == "kprewrite_pool_text_end" { print $1 }')
# the relocation against kfn_sp: at kreloc+3 before, in the pool after
rel_before=$(readelf -rW "$D/kq" | awk '$5 == "kfn_sp" && $3 ~ /32S/ { print $1 }' | head -n 1)
rel_after=$(readelf -rW "$D/kq2" | awk '$5 == "kfn_sp" && $3 ~ /32S/ { print $1 }' | sort | tr '\n' ' ')
is "$(printf '%016x' $((0x$kr + 3)))" "$rel_before" "before: the R_X86_64_32S is at kreloc+3"
ok $([ "$(echo $rel_after | wc -w)" = 1 ] && [ $((0x$rel_after)) -ge $((0x$pool_lo)) ] && [ $((0x$rel_after)) -lt $((0x$pool_hi)) ]; echo $?) \
    "after: it is in the pool's text ($rel_after, pool $pool_lo-$pool_hi), nowhere else"
sp=$(nm "$D/kq" | awk '$3 == "kfn_sp" { print $1 }')
imm=$(printf ' %02x %02x %02x %02x' $((0x$sp & 255)) $((0x$sp >> 8 & 255)) $((0x$sp >> 16 & 255)) $((0x$sp >> 24 & 255)))
is "$imm" "$(od -An -tx1 -j $(foff "$D/kq" $(printf '%x' $((0x$kr + 3)))) -N 4 "$D/kq")" "the site's field: &kfn_sp ($sp)"
is "$imm" "$(od -An -tx1 -j $(foff "$D/kq2" $rel_after) -N 4 "$D/kq2")" "the copy's field holds the same immediate"
like "^ e9" "$(od -An -tx1 -j $(foff "$D/kq2" $kr) -N 1 "$D/kq2")" "the site holds the jump, which KASLR no longer touches"
"$D/kq2" run > "$D/kq2.out"
like "kreloc\\(\\) is &kfn_sp: 1" "$(cat "$D/kq2.out")" "the copy computes what the original does"
like "hits 1 0" "$(cat "$D/kq2.out")" "and the probe counted its one call"
# the table: KPRW_T_KASLR (flags at byte 40), kreloc's masks after the strings
table "$D/kq2"
ok $([ $((flags & 128)) = 128 ]; echo $?) "the table has KPRW_T_KASLR (flags $flags)"
is "8 0" "$(od -An -tu4 -j $after -N 8 "$D/kq2" | awk '{ print $1, $2 }')" \
   "kreloc's entry: a field to add the KASLR offset to at byte 3 (mask 8), none to subtract it from"
like "its probes moved KASLR relocations into their detours: bake the vmlinux as it was linked" \
    "$("$KPREWRITE" --kernel --probe kfn -o "$D/kq3" "$D/kq2" 2>&1)" "baking it again is refused"
ok $([ ! -e "$D/kq3" ]; echo $?) "and nothing written"

# a return site follows its instruction: kretsite's jmp to the return thunk
# (+2, listed in .return_sites) is in the DCR of a probe at +0; the bake
# re-points the entry to the copy, which main() then patches to ret as the
# kernel's apply_returns() does at boot
like "return sites: 1 patched, 0 in the pool" "$("$D/k" returns)" "unbaked: the listed site is patched in place"
like "kretsite\\+0x0  \\[OPTIMIZED\\]  dcr 7: .*\\[boot-patched site moved to the copy, its table entry re-pointed\\]" \
    "$("$KPREWRITE" --kernel --check --probe kretsite "$D/k")" "a return site in the DCR: jump-optimized, the site moves"
like "1 probe baked" "$("$KPREWRITE" --kernel --probe kretsite -o "$D/kr2" "$D/k" 2>&1)" "baked"
out=$("$D/kr2" returns)
like "return sites: 1 patched, 1 in the pool" "$out" "baked: the entry names the copy in the pool, which is patched"
like "kretsite\\(\\) = 0, hits 1" "$out" "the probe counts kretsite's call, which returns through the patched copy"
ks=$(nm "$D/k" | awk '$3 == "kretsite" { print $1 }')
like "^ e9" "$(od -An -tx1 -j $(foff "$D/kr2" $ks) -N 1 "$D/kr2")" "the site holds the detour's jump"
# the table: KPRW_T_FOLLOW (256), kretsite's record after the strings:
# the site at DCR byte 2, its copy 2 bytes into the out-of-line copy, 5 long
table "$D/kr2"
ok $([ $((flags & 256)) = 256 ] && [ $((flags & 128)) = 0 ]; echo $?) "the table has KPRW_T_FOLLOW and not KPRW_T_KASLR (flags $flags)"
is "2 2 5 1 0 0 0 0" "$(od -An -tu1 -j $after -N 8 "$D/kr2" | awk '{ $1 = $1; print }')" \
   "kretsite's record: DCR byte 2, copy byte 2, 5 bytes, a return site (1); no second site"
like "its probes moved boot-patched sites into their detours: bake the vmlinux as it was linked" \
    "$("$KPREWRITE" --kernel --probe kfn -o "$D/kr3" "$D/kr2" 2>&1)" "baking it again is refused"
ok $([ ! -e "$D/kr3" ]; echo $?) "and nothing written"

# alternatives follow their instruction: kalt's mov $0, %eax is the site of
# an .altinstructions entry whose replacement (mov $1) is position-independent
# like it; kalt2's jmp to +5 is one whose replacement jumps to +8, out of
# itself, which the kernel aims from where it puts it. Probes at +0 move the
# entries to the copies, where main() applies them
out=$("$D/k" alternatives)
like "kalt\\(\\) = 0, kalt2\\(\\) = 0 as linked" "$out" "unbaked: kalt() and kalt2() return 0 as linked"
like "alternatives: 2 applied, 0 in the pool" "$out" "unbaked: the alternatives are applied in place"
like "kalt\\(\\) = 1, kalt2\\(\\) = 2, hits 0 0" "$out" "unbaked: then kalt() returns 1, kalt2() 2"
check=$("$KPREWRITE" --kernel --check --probe kalt --probe kalt2 "$D/k")
like "kalt\\+0x0  \\[OPTIMIZED\\]  dcr 5: .*\\[boot-patched site moved to the copy, its table entry re-pointed\\]" \
    "$check" "kalt's alternative is the probed instruction: jump-optimized, the site moves"
like "kalt2\\+0x0  \\[OPTIMIZED\\]  dcr 5: .*\\[boot-patched site moved to the copy, its table entry re-pointed\\]" \
    "$check" "kalt2's, whose replacement jumps out of itself: jump-optimized, the site moves"
like "2 probes baked" "$("$KPREWRITE" --kernel --probe kalt --probe kalt2 -o "$D/ka2" "$D/k" 2>&1)" "baked"
out=$("$D/ka2" alternatives)
like "kalt\\(\\) = 0, kalt2\\(\\) = 0 as linked" "$out" "baked: both return 0 through the detours' copies as linked"
like "alternatives: 2 applied, 2 in the pool" "$out" "baked: the entries name the copies in the pool, where they are applied"
like "kalt\\(\\) = 1, kalt2\\(\\) = 2, hits 2 2" "$out" \
    "baked: kalt() returns 1 and kalt2() 2 through the patched copies; each probe counted both calls"
table "$D/ka2"
recs=$(od -An -tu1 -j $after -N 16 "$D/ka2" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
is "0 0 5 0 0 0 0 0 0 0 5 2 0 0 0 0" "$recs" \
   "the records: kalt's site at DCR byte 0, 5 bytes, its copy's bytes put back (0); kalt2's re-aimed (2)"

# a pool too small for the probes names the Kconfig options to raise
$CC -O2 -mno-red-zone -static -I"$KP_SRCDIR/include" -o "$D/small" "$KP_SRCDIR/t/data/kdetour-main.c" \
    "$KP_SRCDIR/t/data/kdetour-fn.S" -x assembler-with-cpp "$KP_SRCDIR/src/runtime/kernel/pool.S" \
    -DCONFIG_KPREWRITE_TEXT_KB=64+0 -DCONFIG_KPREWRITE_TABLE_KB=8 -DCONFIG_KPREWRITE_DATA_KB=4 \
    -I"$KP_SRCDIR/include/kprewrite" 2>"$D/cc.log"   # 64+0 * 1024: 64 bytes
ok $? "the small pool's stand-in builds ($(grep -m 1 error "$D/cc.log"))"
like "pool is too small for 2 probes: detours need [0-9]+ bytes \\(has 64\\).*raise CONFIG_KPREWRITE_TEXT_KB" \
    "$("$KPREWRITE" --kernel --probe kfn --probe "kfn+$mid" -o "$D/out" "$D/small" 2>&1)" "a full kernel pool says what to raise"

# shared detours are for user space: a vmlinux says so, and nothing is written
like "shared detours are for user-space images \\(use --detours=inline\\)" \
    "$("$KPREWRITE" --kernel --detours=shared --probe kfn -o "$D/shared" "$D/k" 2>&1)" "--detours=shared on a kernel: refused"
ok $([ ! -e "$D/shared" ]; echo $?) "and nothing written"

# a kernel image without the runtime's dispatcher is refused, with the reason
$CC -O2 -mno-red-zone -static -I"$KP_SRCDIR/include" -DNO_DISPATCH -o "$D/nodisp" "$KP_SRCDIR/t/data/kdetour-fn.S" \
    -x c - -x assembler-with-cpp "$KP_SRCDIR/src/runtime/kernel/pool.S" $pool <<'C'
int main(void) { return 0; }
C
like "no kprewrite_dispatch: build it with CONFIG_KPREWRITE=y" \
    "$("$KPREWRITE" --kernel --probe kfn -o "$D/out" "$D/nodisp" 2>&1)" "no dispatcher: refused"
$CC -O2 -static -o "$D/nopool" "$KP_SRCDIR/t/data/kdetour-fn.S" -x c - <<'C'
int main(void) { return 0; }
C
like "no kprewrite pool: build the kernel with CONFIG_KPREWRITE=y" \
    "$("$KPREWRITE" --kernel --probe kfn -o "$D/out" "$D/nopool" 2>&1)" "no pool: refused"
ok $([ ! -e "$D/out" ]; echo $?) "and nothing written"
done_testing
