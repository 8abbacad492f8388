#!/bin/sh
# Jump tables of real compilers are recovered, so switch functions stay
# jump-optimizable; a table-less indirect jump does not.
. "$KP_SRCDIR/t/lib.sh"
need "$CC"
D=$(tmpdir jumptables)
compilers=$CC
command -v clang >/dev/null 2>&1 && compilers="$compilers clang"
for cc in $compilers; do
    for pie in -fPIE/-pie -fno-pie/-no-pie; do
        cf=${pie%/*}; lf=${pie#*/}
        V=$D/switch-$(basename "$cc")$cf
        if ! $cc -O2 $cf $lf -fno-inline -o "$V" "$KP_SRCDIR/t/data/switch.c" 2>"$D/cc.err"; then
            ok 1 "$(basename "$cc") $cf: the fixture builds ($(head -n 1 "$D/cc.err"))"; continue
        fi
        tag="$(basename "$cc") $cf"
        json=$("$KPREWRITE" --check --json --probe classify --probe name "$V" | tr -d '\n')
        n=$(printf '%s' "$json" | sed -n 's/.*"jump_tables": \([0-9]*\).*/\1/p')
        if objdump -d "$V" | grep -q 'jmp  *\*'; then
            ok $([ "${n:-0}" -ge 1 ]; echo $?) "$tag: jump tables recovered (${n:-0})"
            like '"optimized": 2, "int3": 0' "$json" "$tag: both switch functions are jump-optimized"
        else
            skip "$tag: the compiler emitted no jump table"; skip "$tag: no table"
        fi
    done
done
# The same dispatch with its bound check removed must not be trusted.
sed -e '/cmp/d' -e '/ja /d' >"$D/nobound.s" <<'ASM'
	.text
	.globl f
	.type f,@function
f:
	cmp $2, %edi
	ja 9f
	lea 8f(%rip), %rdx
	movslq (%rdx,%rdi,4), %rax
	add %rdx, %rax
	jmp *%rax
1:	mov $1, %eax
	ret
9:	mov $-1, %eax
	ret
	.size f, .-f
	.section .rodata
	.balign 4
8:	.long 1b-8b, 1b-8b, 1b-8b
	.section .note.GNU-stack,"",@progbits
ASM
printf 'int f(int);\nint main(void){return f(0)!=1;}\n' >"$D/m.c"
$CC -o "$D/nobound" "$D/nobound.s" "$D/m.c"
# No bound check (a spilled or masked index): the table is read while its
# entries land in code. Every real entry is among them, so f stays
# jump-optimized...
like 'f\+0x0  \[OPTIMIZED\]' "$(check1 "$D/nobound" f)" "no bound check: the table is read by its entries"
# ...and a target the entries name inside a DCR still makes that probe int3
cat >"$D/nobound2.s" <<'ASM'
	.text
	.globl f
	.type f,@function
f:
	lea 8f(%rip), %rdx
	movslq (%rdx,%rdi,4), %rax
0:	add %rdx, %rax
	jmp *%rax
1:	mov $1, %eax
	ret
	.size f, .-f
	.section .rodata
	.balign 4
8:	.long 1b-8b, 0b-8b
	.section .note.GNU-stack,"",@progbits
ASM
$CC -o "$D/nobound2" "$D/nobound2.s" "$D/m.c"
like 'f\+0x7  \[INT3\] jump-into-dcr' "$("$KPREWRITE" --check --probe f+7 "$D/nobound2")" \
    "no bound check: an entry pointing into the DCR still refuses the jump"
# ...but a table read past its end (no bound) names no target in another
# function: the next data, read as entries relative to this table, lands
# in victim's DCR; compilers put no other function's labels in a switch
cat >"$D/overread.s" <<'ASM'
	.text
	.globl f, victim
	.type f,@function
f:
	lea 8f(%rip), %rdx
	movslq (%rdx,%rdi,4), %rax
	add %rdx, %rax
	jmp *%rax
1:	mov $1, %eax
	ret
2:	mov $2, %eax
	ret
	.size f, .-f
	.type victim,@function
victim:
	xor %eax, %eax
	mov $3, %ecx
	ret
	.size victim, .-victim
	.section .rodata
	.balign 4
8:	.long 1b-8b, 2b-8b
	.long victim+2-8b	/* the next data (another table's, say) */
	.long 0x7fffffff
	.section .note.GNU-stack,"",@progbits
ASM
$CC -o "$D/overread" "$D/overread.s" "$D/m.c"
like 'victim\+0x0  \[OPTIMIZED\]' "$("$KPREWRITE" --check --probe victim --probe f "$D/overread")" \
    "a table read past its end: what lands in another function is no target (victim stays optimized)"
# a table-less indirect jump (a pointer from an argument) proves nothing
cat >"$D/ptr.s" <<'ASM'
	.text
	.globl f
	.type f,@function
f:
	mov %rdi, %rax
	add $1, %rsi
	jmp *%rax
	.size f, .-f
	.section .note.GNU-stack,"",@progbits
ASM
printf 'int f(void *, long);\nstatic int g(void){return 1;}\nint main(void){return f((void *)g, 0)!=1;}\n' >"$D/m2.c"
$CC -o "$D/ptr" "$D/ptr.s" "$D/m2.c"
like 'f\+0x0  \[OPTIMIZED\]' "$(check1 "$D/ptr" f)" \
    "a jump through a pointer argument: no address inside f is taken, so it leaves f"

# An indirect jump lands on an address the image materializes: a tail call
# through a function pointer, a computed goto through a table of labels.
# Only such an address on an instruction of the DCR after its first keeps a
# probe int3 (cgoto2); arithmetic on an address the function takes of
# itself (selfgo) could land on any instruction of a DCR of more than one.
# Both kinds, as PIE and not.
cat >"$D/ind.s" <<'ASM'
	.text
	.globl tail, cgoto, cgoto2, selfgo, tailcfi, tailnocfi, onejmp
	.type tail,@function
tail:                                   # tail(obj): return obj->vtbl->fn(obj)
	mov (%rdi), %rax
	add $0, %rsi
	jmp *8(%rax)
	.size tail, .-tail
	.type cgoto,@function
cgoto:                                  # cgoto(i): goto *tab[i]
	lea tab(%rip), %rdx
	mov (%rdx,%rdi,8), %rax
	jmp *%rax
1:	mov $1, %eax
	ret
2:	mov $2, %eax
	ret
	.size cgoto, .-cgoto
	.type cgoto2,@function
cgoto2:                                 # the same, with a label on its second instruction
	xor %eax, %eax
3:	lea tab2(%rip), %rdx
	mov (%rdx,%rdi,8), %rax
	jmp *%rax
	.size cgoto2, .-cgoto2
	.type selfgo,@function
selfgo:                                 # goto *(&&selfgo + i): its own start, plus arithmetic
	xor %eax, %eax
	lea selfgo(%rip), %rdx
	add %rdi, %rdx
	jmp *%rdx
	.size selfgo, .-selfgo
	.type one,@function
one:	mov $1, %eax
	ret
	.size one, .-one
	.type tailcfi,@function
tailcfi:                                # return pick()(x), by a tail call after the epilogue;
	.cfi_startproc                  # it takes an address inside itself (1f), so only its
	push %rbx                       # unwind data proves the jump leaves: CFA = rsp + 8 there
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	lea 1f(%rip), %rcx
	mov %rdi, %rbx
	call pick
	mov %rbx, %rdi
	pop %rbx
	.cfi_def_cfa_offset 8
	jmp *%rax
1:	ret
	.cfi_endproc
	.size tailcfi, .-tailcfi
	.type tailnocfi,@function
tailnocfi:                              # the same without unwind data: unproven
	push %rbx
	lea 1f(%rip), %rcx
	mov %rdi, %rbx
	call pick
	mov %rbx, %rdi
	pop %rbx
	jmp *%rax
1:	ret
	.size tailnocfi, .-tailnocfi
	.type onejmp,@function
onejmp:                                 # arithmetic on its own start, but a DCR of one
	lea onejmp(%rip), %rax          # 7-byte instruction: nothing can land inside it
	add %rdi, %rax
	jmp *%rax
	.size onejmp, .-onejmp
	.section .data.rel.ro,"aw"
	.balign 8
tab:	.quad 1b, 2b
tab2:	.quad 3b
	.globl vtbl
vtbl:	.quad 0, one
	.section .note.GNU-stack,"",@progbits
ASM
printf 'int tail(void *, long);\nint cgoto(long);\nextern void *vtbl[];\nstatic int ret1(void){return 1;}\nvoid *pick(void){return (void *)ret1;}\nint tailcfi(long);\nint main(void){void *o = vtbl; return tail(&o, 0) + cgoto(1) + tailcfi(0) != 4;}\n' >"$D/m3.c"
for pie in -fPIE/-pie -fno-pie/-no-pie; do
    cf=${pie%/*}; lf=${pie#*/}
    $CC $cf $lf -o "$D/ind$cf" "$D/ind.s" "$D/m3.c"
    ok $("$D/ind$cf"; echo $?) "$cf: the fixture runs"
    out=$("$KPREWRITE" --check --summary --probe tail --probe cgoto --probe cgoto2 --probe selfgo "$D/ind$cf")
    like 'tail\+0x0  \[OPTIMIZED\]' "$out" "$cf: a tail call through a vtable leaves its function: optimized"
    like 'cgoto\+0x0  \[OPTIMIZED\]' "$out" "$cf: a computed goto whose labels lie past the DCR: optimized"
    like "cgoto2\\+0x0  \\[INT3\\] jump-into-dcr \\(address 0x0*$(printf %x $((0x$(addr_of "$D/ind$cf" cgoto2) + 2))) is taken" \
        "$out" "$cf: a label of a computed goto on the DCR's second instruction: int3, naming the address"
    like 'selfgo\+0x0  \[INT3\] indirect-jump' "$out" "$cf: arithmetic on the function's own start: int3"
    out2=$("$KPREWRITE" --check --summary --probe tailcfi --probe tailnocfi --probe onejmp "$D/ind$cf")
    like 'tailcfi\+0x0  \[OPTIMIZED\]' "$out2" "$cf: a tail call after the epilogue, by the function's CFI: optimized"
    like 'tailnocfi\+0x0  \[INT3\] indirect-jump' "$out2" "$cf: the same without unwind data: int3"
    like 'onejmp\+0x0  \[OPTIMIZED\]  dcr 7: lea .*\[one instruction: the function.s unproven indirect jump cannot land inside it\]' \
        "$out2" "$cf: arithmetic on its own start, but a DCR of one instruction: optimized"
    like '0 indirect jumps through loaded pointers, 1 tail calls \(frame at entry\), 0 onto taken addresses, 2 unproven' \
        "$out2" "$cf: the summary counts the tail call"
    like '3 indirect jumps through loaded pointers, 0 tail calls \(frame at entry\), 0 onto taken addresses, 1 unproven' \
        "$out" "$cf: the summary counts them"
    like 'tail\+0x0  \[INT3\] indirect-jump' "$("$KPREWRITE" --check --strict-indirect --probe tail "$D/ind$cf")" \
        "$cf: --strict-indirect keeps the tail call int3"
done
done_testing
