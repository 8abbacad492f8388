/*
 * A tiny "vmlinux": an ET_EXEC image carrying every kernel table that
 * kprewrite reads (src/rewriter/ktables.c), each in its real entry format
 * (doc: ../shared/design/kprobes-reference.md section 2). Used by
 * t/kernel-tables.t. Plain GNU as, no preprocessor:
 *
 *   as -o fake-vmlinux.o fake-vmlinux.S
 *   ld -q -static -nostdlib -e fn_plain -Ttext=0xffffffff81000000 \
 *      -z max-page-size=4096 --unique=.data..percpu -o vmlinux fake-vmlinux.o
 *
 * (-q = --emit-relocs keeps .rela.text, like the kernel's vmlinux link;
 * --unique keeps .data..percpu out of .data, where ld's default script
 * would merge it.)
 *
 * One function per expected verdict. Every instruction is written out so
 * that the offsets in the comments are exact; the test relies on them.
 * Assembling with --defsym CORRUPT_xxx=1 (ALT, ALTREPL, LOCKS, JL, BUG,
 * MCOUNT) adds one broken entry to a table (see the tables at the end) so
 * that the test can check that such a table is an error.
 */

        .macro FUNC name
        .p2align 4, 0xcc
        .globl \name
        .type \name, @function
\name:
        .endm

        .macro ENDF name
        .size \name, . - \name
        .endm

        /* nopl 0x0(%rax,%rax,1): the 5-byte nop of a jump label / fentry site */
        .macro NOP5
        .byte 0x0f, 0x1f, 0x44, 0x00, 0x00
        .endm

        /* jmp rel32, never relaxed to jmp8 */
        .macro JMP32 target
        .byte 0xe9
        .long \target - . - 4
        .endm

/* ------------------------------------------------------------------ */
/* .text.unlikely: the cold piece of a blacklisted function.           */
/* ld puts .text.unlikely at the start of .text.                       */
        .section .text.unlikely, "ax", @progbits
        .p2align 4, 0xcc
        .type fn_blacklisted.cold, @function
fn_blacklisted.cold:
        mov $-22, %rax          /* +0  7 */
        ret                     /* +7  1 */
        .size fn_blacklisted.cold, . - fn_blacklisted.cold

/* ------------------------------------------------------------------ */
        .text

/* optimized: nothing special */
FUNC fn_plain
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_plain

/* ftrace's hook: just returns */
FUNC __fentry__
        ret
ENDF __fentry__

/* entry is a `call __fentry__` listed in __mcount_loc: +0 is optimized
 * right after it (ftrace keeps the call) */
FUNC fn_fentry
.Lfentry_site:
        call __fentry__         /* +0  5  __mcount_loc */
        push %rbp               /* +5  1 */
        mov %rsp, %rbp          /* +6  3 */
        mov %rdi, %rax          /* +9  3 */
        pop %rbp                /* +12 1 */
        ret                     /* +13 1 */
ENDF fn_fentry

/* the same entry call, but NOT listed in __mcount_loc: a plain call */
FUNC fn_nofentry
        call __fentry__         /* +0  5 */
        push %rbp               /* +5  1 */
        mov %rsp, %rbp          /* +6  3 */
        mov %rdi, %rax          /* +9  3 */
        pop %rbp                /* +12 1 */
        ret                     /* +13 1 */
ENDF fn_nofentry

/* a call inside the DCR (+0: push; call) */
FUNC fn_call
        push %rbp               /* +0  1 */
        call fn_plain           /* +1  5 */
        pop %rbp                /* +6  1 */
        ret                     /* +7  1 */
ENDF fn_call

/* __ex_table: +10 may fault (fixup +21); +16 has a second entry whose
 * fixup lands inside fn_exfix's DCR */
FUNC fn_ex
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        mov %rsi, %rdx          /* +7  3 */
.Lex_insn:
        mov (%rdi), %rax        /* +10 3  __ex_table insn */
        mov %rax, %rcx          /* +13 3 */
.Lex_insn2:
        mov (%rsi), %rdx        /* +16 3  __ex_table insn */
        pop %rbp                /* +19 1 */
        ret                     /* +20 1 */
.Lex_fix:
        xor %eax, %eax          /* +21 2  fixup of +10 */
        pop %rbp                /* +23 1 */
        ret                     /* +24 1 */
ENDF fn_ex

/* an __ex_table fixup targets +1: jump into the DCR of +0 */
FUNC fn_exfix
        push %rbp               /* +0  1 */
.Lexfix_tgt:
        mov %rsp, %rbp          /* +1  3  fixup of fn_ex+16 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_exfix

/* __jump_table: a nop5 site at +4, its target +14 */
FUNC fn_jl
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Ljl_site:
        NOP5                    /* +4  5  __jump_table code */
        mov %rdi, %rax          /* +9  3 */
        pop %rbp                /* +12 1 */
        ret                     /* +13 1 */
.Ljl_yes:
        mov $1, %eax            /* +14 5  __jump_table target */
        pop %rbp                /* +19 1 */
        ret                     /* +20 1 */
ENDF fn_jl

/* __jump_table: a 2-byte site (nop2) at +0; +2 is free */
FUNC fn_jl2
.Ljl2_site:
        .byte 0x66, 0x90        /* +0  2  __jump_table code (xchg %ax,%ax) */
        mov %rdi, %rax          /* +2  3 */
        mov %rsi, %rdx          /* +5  3 */
        ret                     /* +8  1 */
ENDF fn_jl2

/* the jump label of fn_jl2 targets +1: jump into the DCR of +0 */
FUNC fn_jltgt
        push %rbp               /* +0  1 */
.Ljltgt:
        mov %rsp, %rbp          /* +1  3  __jump_table target */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_jltgt

/* .altinstructions: 3-byte site at +4 */
FUNC fn_alt
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lalt_orig:
        .byte 0x0f, 0x1f, 0x00  /* +4  3  nopl (%rax): alternative site */
        mov %rdi, %rax          /* +7  3 */
        pop %rbp                /* +10 1 */
        ret                     /* +11 1 */
ENDF fn_alt

/* an alternative whose replacement jumps (to +1, rel32): it moves with
 * the DCR of +4, the runtime aiming the jump from the site again when it
 * puts it back; +1 is a branch target inside the DCR of +0 */
FUNC fn_alt2
        push %rbp               /* +0  1 */
.Lalt2_1:
        mov %rsp, %rbp          /* +1  3 */
.Lalt2_orig:
        .byte 0x0f, 0x1f, 0x44, 0x00, 0x00  /* +4  5  nopl: alternative site */
        mov %rdi, %rax          /* +9  3 */
        pop %rbp                /* +12 1 */
        ret                     /* +13 1 */
ENDF fn_alt2

/* an alternative whose replacement is a call: it cannot move (a kernel's
 * DCR holds no call) */
FUNC fn_alt4
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lalt4_orig:
        .byte 0x0f, 0x1f, 0x44, 0x00, 0x00  /* +4  5  nopl: alternative site */
        mov %rdi, %rax          /* +9  3 */
        pop %rbp                /* +12 1 */
        ret                     /* +13 1 */
ENDF fn_alt4

/* static_cpu_has()'s slow path in .altinstr_aux jumps back to +3, inside
 * the DCR of +0 */
FUNC fn_aux
        xor %eax, %eax          /* +0  2 */
        inc %eax                /* +2  2 */
.Laux_back:
        inc %eax                /* +4  2 */
        ret                     /* +6  1 */
ENDF fn_aux
        .section .altinstr_aux, "ax", @progbits
        testb $1, jl_key(%rip)
        jnz .Laux_back
        JMP32 fn_plain
        .text

/* an alternative of two instructions (nop, nopl) at +4: the DCR of +0
 * ends after the first, so the site would be split */
FUNC fn_alt3
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lalt3_orig:
        nop                     /* +4  1  alternative site, 4 bytes */
        .byte 0x0f, 0x1f, 0x00  /* +5  3 */
        mov %rdi, %rax          /* +8  3 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_alt3

/* .smp_locks: the lock prefix at +4 */
FUNC fn_lock
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Llock:
        lock incl (%rdi)        /* +4  3  f0 ff 07 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_lock

/* .static_call_sites: call at +4 */
FUNC fn_sc
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lsc:
        call sc_tramp           /* +4  5  static call site */
        pop %rbp                /* +9  1 */
        ret                     /* +10 1 */
ENDF fn_sc

/* the static call trampoline (__SCT__...) */
FUNC sc_tramp
        JMP32 fn_plain          /* +0  5 */
ENDF sc_tramp

/* .retpoline_sites: call of a retpoline thunk at +4 */
FUNC fn_retpo
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lretpo:
        call __x86_indirect_thunk_rax   /* +4  5 */
        pop %rbp                /* +9  1 */
        ret                     /* +10 1 */
ENDF fn_retpo

FUNC __x86_indirect_thunk_rax
        jmp *%rax
        int3
ENDF __x86_indirect_thunk_rax

/* .return_sites: the jmp to the return thunk at +3 */
FUNC fn_ret
.Lret_mov:
        mov %rdi, %rax          /* +0  3 */
.Lret:
        JMP32 __x86_return_thunk /* +3  5  return site */
ENDF fn_ret

FUNC __x86_return_thunk
        ret
        int3
ENDF __x86_return_thunk

/* .call_sites: direct call at +4 */
FUNC fn_cs
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lcs:
        call fn_plain           /* +4  5  call site */
        pop %rbp                /* +9  1 */
        ret                     /* +10 1 */
ENDF fn_cs

/* .ibt_endbr_seal: a sealed endbr64 at the entry; fn_ibt+0 means +4 */
FUNC fn_ibt
.Libt_seal:
        endbr64                 /* +0  4  sealed */
        push %rbp               /* +4  1 */
        mov %rsp, %rbp          /* +5  3 */
        mov %rdi, %rax          /* +8  3 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_ibt

/* IBT and ftrace: endbr64, then a `call __fentry__` listed in __mcount_loc:
 * fn_ibt_fentry+0 means +4, baked past the call, at +9 */
FUNC fn_ibt_fentry
        endbr64                 /* +0  4 */
.Libt_fentry_site:
        call __fentry__         /* +4  5  __mcount_loc */
        push %rbp               /* +9  1 */
        mov %rsp, %rbp          /* +10 3 */
        mov %rdi, %rax          /* +13 3 */
        pop %rbp                /* +16 1 */
        ret                     /* +17 1 */
ENDF fn_ibt_fentry

/* .ibt_endbr_seal: a sealed endbr64 in the middle, at +4 */
FUNC fn_ibt2
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Libt2_seal:
        endbr64                 /* +4  4  sealed */
        mov %rdi, %rax          /* +8  3 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_ibt2

/* kCFI: the __cfi_ preamble (16 bytes) right before fn_cfi; .cfi_sites
 * names the preamble and a hash load at fn_cfi+4 */
        .p2align 4, 0xcc
        .globl __cfi_fn_cfi
        .type __cfi_fn_cfi, @function
__cfi_fn_cfi:
.Lcfi_pre:
        movl $0x12345678, %eax  /* +0  5  type hash */
        .fill 11, 1, 0x90       /* +5 11 */
        .size __cfi_fn_cfi, . - __cfi_fn_cfi
        .globl fn_cfi
        .type fn_cfi, @function
fn_cfi:
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lcfi_site:
        movl $0x6789abcd, %r10d /* +4  6  cfi site */
        pop %rbp                /* +10 1 */
        ret                     /* +11 1 */
ENDF fn_cfi

/* function padding: __pfx_fn_pfx (16 nops) right before fn_pfx */
        .p2align 4, 0xcc
        .globl __pfx_fn_pfx
        .type __pfx_fn_pfx, @function
__pfx_fn_pfx:
        .fill 16, 1, 0x90
        .size __pfx_fn_pfx, . - __pfx_fn_pfx
        .globl fn_pfx
        .type fn_pfx, @function
fn_pfx:
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_pfx

/* __bug_table: ud2 at +4 */
FUNC fn_bug
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lbug:
        ud2                     /* +4  2  WARN() */
        pop %rbp                /* +6  1 */
        ret                     /* +7  1 */
ENDF fn_bug

/* .parainstructions: a 6-byte pv call at +4 */
FUNC fn_para
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
.Lpara:
        call *pv_ops+8(%rip)    /* +4  6  paravirt patch site */
        pop %rbp                /* +10 1 */
        ret                     /* +11 1 */
ENDF fn_para

/* R_X86_64_32S at +7 (in the mov at +4): KASLR relocates it, and a probe's
 * jump moves it to the copy */
FUNC fn_reloc
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        movq $reloc_var, %rax   /* +4  7  48 c7 c0 imm32, R_X86_64_32S at +7 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_reloc

/* R_X86_64_32S at +3, in the first instruction, a call (int3 in a
 * vmlinux: call-in-dcr): the site must keep its relocation, so the
 * out-of-line copy could not have one: refused */
FUNC fn_reloc_call
        call *reloc_var         /* +0  7  ff 14 25 abs32, R_X86_64_32S at +3 */
        ret                     /* +7  1 */
ENDF fn_reloc_call

/* R_X86_64_PC32 against a .data..percpu symbol at +7 (inverse: KASLR
 * subtracts its offset) */
FUNC fn_percpu
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov percpu_var(%rip), %rax /* +4 7  48 8b 05 rel32 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_percpu

/* R_X86_64_32S against a .data..percpu symbol at +7 (a %gs: offset): the
 * per-cpu area is zero-based, KASLR leaves it (arch/x86/tools/relocs) */
FUNC fn_percpu_abs
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %gs:percpu_var, %rax /* +4 9  65 48 8b 04 25 abs32 */
        pop %rbp                /* +13 1 */
        ret                     /* +14 1 */
ENDF fn_percpu_abs

/* R_X86_64_PC32 against an ordinary symbol: not reserved (re-pointed) */
FUNC fn_riprel
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov reloc_var(%rip), %rax  /* +4 7 */
        pop %rbp                /* +11 1 */
        ret                     /* +12 1 */
ENDF fn_riprel

/* NOKPROBE_SYMBOL(fn_blacklisted); its cold piece is in .text.unlikely */
FUNC fn_blacklisted
        test %rdi, %rdi         /* +0  3 */
        jne fn_blacklisted.cold /* +3 */
        mov %rdi, %rax
        ret
ENDF fn_blacklisted

/* __kprobes: bounded by __kprobes_text_start/__kprobes_text_end symbols
 * (no section of its own) */
        .p2align 4, 0xcc
        .globl __kprobes_text_start
__kprobes_text_start:
FUNC fn_kprobes
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_kprobes
        .globl __kprobes_text_end
__kprobes_text_end:

/* a function after the __kprobes range: free again */
FUNC fn_after_kprobes
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_after_kprobes

/* ------------------------------------------------------------------ */
        .section .noinstr.text, "ax", @progbits
FUNC fn_noinstr
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_noinstr

/* a runtime constant (6.12's runtime_const_ptr()): the movabs's imm64,
 * named by section runtime_ptr_fake, is patched at boot */
        .text
FUNC fn_rconst
        movabs $0x0123456789abcdef, %rax /* +0 10  48 b8 imm64 at +2 */
.Lrconst:
        ret                     /* +10 1 */
ENDF fn_rconst
        .section runtime_ptr_fake, "a", @progbits
        .long .Lrconst - 8 - .

/* boot code (.head.text: run before the kernel is at its link address) */
        .section .head.text, "ax", @progbits
FUNC fn_head
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_head

/* a static call's trampoline (jmp to the current function, then the
 * signature bytes): static_call_update() rewrites the jmp at run time */
        .section .static_call.text, "ax", @progbits
FUNC __SCT__fake_call
        jmp fn_plain            /* +0  5 */
        .byte 0x0f, 0xb9, 0xcc  /* +5  3  ud1 %esp, %ecx */
ENDF __SCT__fake_call

        .section .entry.text, "ax", @progbits
FUNC fn_entry
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_entry

/* a built-in driver's exit function: never runs, freed with the init memory */
        .section .exit.text, "ax", @progbits
FUNC fn_exit
        push %rbp               /* +0  1 */
        mov %rsp, %rbp          /* +1  3 */
        mov %rdi, %rax          /* +4  3 */
        pop %rbp                /* +7  1 */
        ret                     /* +8  1 */
ENDF fn_exit

        .section .altinstr_replacement, "ax", @progbits
.Lalt_repl:
        lfence                  /* 3 bytes */
.Lalt_repl_end:
.Lalt2_repl:
        JMP32 .Lalt2_1          /* 5 bytes */
.Lalt2_repl_end:
.Lalt3_repl:
        lfence                  /* 3 bytes */
        nop
.Lalt3_repl_end:
.Lalt4_repl:
        call fn_plain           /* 5 bytes */
.Lalt4_repl_end:

/* ------------------------------------------------------------------ */
/* Data the code and tables refer to.                                  */
        .data
        .balign 8
        .globl jl_key, sc_key, reloc_var, pv_ops
jl_key:     .quad 0
sc_key:     .quad 0
reloc_var:  .quad 0
pv_ops:     .quad 0, 0, 0, 0

        .section .data..percpu, "aw", @progbits
        .balign 8
        .globl percpu_var
percpu_var: .quad 0

        .section .rodata, "a", @progbits
.Lbug_file: .asciz "kernel/fake.c"

/* ------------------------------------------------------------------ */
/* The tables.                                                         */

/* struct exception_table_entry { int insn, fixup, data; } */
        .section __ex_table, "a", @progbits
        .balign 4
        .long .Lex_insn - .
        .long .Lex_fix - .
        .long 1                 /* EX_TYPE_DEFAULT */
        .globl ex_entry_far
ex_entry_far:
        .long .Lex_insn2 - .
        .long .Lexfix_tgt - .
        .long 1

/* a fixup outside every function (code no symbol covers): its way back is
 * not seen, so the function of its entry (fn_ex) stays int3 */
.ifdef FIXUP_OUTSIDE
        .text
.Lnofunc_fix:
        jmp fn_ex + 4
        .section __ex_table, "a", @progbits
        .long .Lex_insn - .
        .long .Lnofunc_fix - .
        .long 1
        /* and fn_ret's: int3 throughout, its return site cannot move */
        .long .Lret_mov - .
        .long .Lnofunc_fix - .
        .long 1
.endif

/* struct alt_instr { s32 instr, repl; u32 ft_flags; u8 instrlen, replacementlen; } __packed */
        .section .altinstructions, "a", @progbits
        .long .Lalt_orig - .
        .long .Lalt_repl - .
        .long 3*32+18           /* ft_flags: a CPU feature bit */
        .byte 3                 /* instrlen */
        .byte .Lalt_repl_end - .Lalt_repl /* replacementlen */
        .long .Lalt2_orig - .
        .long .Lalt2_repl - .
        .long 3*32+18
        .byte 5, .Lalt2_repl_end - .Lalt2_repl
        .long .Lalt3_orig - .
        .long .Lalt3_repl - .
        .long 3*32+18
        .byte 4, .Lalt3_repl_end - .Lalt3_repl
        .long .Lalt4_orig - .
        .long .Lalt4_repl - .
        .long 3*32+18
        .byte 5, .Lalt4_repl_end - .Lalt4_repl
.ifdef CORRUPT_ALTREPL
        .long .Lalt_orig - .
        .long fn_plain - .      /* replacement outside .altinstr_replacement */
        .long 0
        .byte 3, 3
.endif
.ifdef CORRUPT_ALT
        .byte 0                 /* 15 bytes: no layout fits */
.endif

/* s32 relative, pointing at the lock prefix. The table is bounded by
 * __smp_locks/__smp_locks_end (a real .smp_locks is padded to a page); the
 * word after the end is not part of it, and is not a valid entry. */
        .section .smp_locks, "a", @progbits
        .balign 4
        .globl __smp_locks, __smp_locks_end
__smp_locks:
        .long .Llock - .
        .long 0                 /* zero: padding, skipped */
.ifdef CORRUPT_LOCKS
        .long jl_key - .        /* points into .data */
.endif
__smp_locks_end:
        .long 0x7fff0000        /* outside the bounds: must be ignored */

/* struct jump_entry { s32 code, target; long key; } */
        .section __jump_table, "aw", @progbits
        .balign 8
        .long .Ljl_site - .
        .long .Ljl_yes - .
        .quad jl_key - .
        .globl jt_entry_far
jt_entry_far:
        .long .Ljl2_site - .
        .long .Ljltgt - .
        .quad jl_key + 1 - .    /* low bit: branch default true */
.ifdef CORRUPT_JL
        .long jl_key - .        /* code in .data */
        .long .Ljl_yes - .
        .quad jl_key - .
.endif

/* struct static_call_site { s32 addr, key; } */
        .section .static_call_sites, "a", @progbits
        .balign 4
        .long .Lsc - .
        .long sc_key - .

        .section .retpoline_sites, "a", @progbits
        .balign 4
        .long .Lretpo - .

        .section .return_sites, "a", @progbits
        .balign 4
        .long .Lret - .

        .section .call_sites, "a", @progbits
        .balign 4
        .long .Lcs - .

        .section .ibt_endbr_seal, "a", @progbits
        .balign 4
        .long .Libt_seal - .
        .long .Libt2_seal - .

        .section .cfi_sites, "a", @progbits
        .balign 4
        .long .Lcfi_pre - .
        .long .Lcfi_site - .

/* struct paravirt_patch_site { u8 *instr; u8 type; u8 len; } (16 bytes) */
        .section .parainstructions, "a", @progbits
        .balign 8
        .quad .Lpara
        .byte 8                 /* type */
        .byte 6                 /* len */
        .skip 6

/* struct bug_entry { s32 bug_addr_disp, file_disp; u16 line, flags; } */
        .section __bug_table, "aw", @progbits
        .balign 4
        .long .Lbug - .
        .long .Lbug_file - .
        .word 42                /* line */
        .word 1 << 1            /* BUGFLAG_WARNING */
.ifdef CORRUPT_BUG
        .long fn_plain - .      /* not a ud2 */
        .long .Lbug_file - .
        .word 43
        .word 1 << 1
.endif

/* unsigned long: the fentry call sites; NULL entries are linker padding */
        .section __mcount_loc, "a", @progbits
        .balign 8
        .quad .Lfentry_site
        .quad .Libt_fentry_site
        .quad 0
.ifdef CORRUPT_MCOUNT
        .quad jl_key            /* not code */
.endif

/* NOKPROBE_SYMBOL(): function addresses */
        .section _kprobe_blacklist, "aw", @progbits
        .balign 8
        .quad fn_blacklisted

        .section .note.GNU-stack, "", @progbits
