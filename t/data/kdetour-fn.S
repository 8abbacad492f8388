/*
 * Probed code for t/kernel-detour.t, built like kernel code (no red zone):
 * kfn(a) = a + 1 + (ZF after cmp ? 1000 : 0) + (%rbx >> 60), with %rbx set
 * to a known value and %rsp recorded before the mid-function point, so the
 * kernel-contract detour's pt_regs can be checked and a handler's writes to
 * %rdi, the flags and %rbx seen in the result.
 */
        .text
        .globl  kfn, kfn_sp, kfn_mid_off
        .type   kfn, @function
kfn:
        push    %rbx
        movabs  $0x1122334455667788, %rbx
        mov     %rsp, kfn_sp(%rip)
        cmp     %rdi, %rdi
.Lmid:                                  /* flags live: the jne reads ZF */
        mov     %rdi, %rax
        lea     1(%rax), %rax
        jne     1f
        add     $1000, %rax
1:      mov     %rbx, %rcx
        shr     $60, %rcx
        add     %rcx, %rax
        pop     %rbx
        ret
        .size   kfn, .-kfn

/* kloop+0: the DCR would cover the loop's target: an int3 probe, whose
 * site a kernel image keeps as it was (the runtime arms it) */
        .globl  kloop
        .type   kloop, @function
kloop:
        xor     %eax, %eax
2:      inc     %eax
        cmp     $3, %eax
        jne     2b
        ret
        .size   kloop, .-kloop

/* kreloc() = the address of kfn_sp, from an immediate the linker
 * relocates (R_X86_64_32S at +3): what KASLR relocates in a kernel. Built
 * with --emit-relocs, a probe at +0 moves the relocation to its copy */
        .globl  kreloc
        .type   kreloc, @function
kreloc:
        movq    $kfn_sp, %rax
        ret
        .size   kreloc, .-kreloc

/* kfentry(a) = a + 7, with the `call __fentry__` a kernel built with
 * ftrace has at each entry, listed in __mcount_loc: a probe at +0 is baked
 * right after it, which ftrace keeps */
        .globl  kfentry, __fentry__
        .type   kfentry, @function
kfentry:
        call    __fentry__
        mov     %rdi, %rax
        add     $7, %rax
        ret
        .size   kfentry, .-kfentry
        .type   __fentry__, @function
__fentry__:
        ret
        .size   __fentry__, .-__fentry__

        .section __mcount_loc, "a"
        .balign 8
        .globl  __start_mcount_loc, __stop_mcount_loc
__start_mcount_loc:
        .quad   kfentry
__stop_mcount_loc:

        .text
/* code freed after boot: the rewriter refuses it in a kernel */
        .section .init.text, "ax"
        .globl  kinit
        .type   kinit, @function
kinit:
        xor     %eax, %eax
        add     $1, %eax
        ret
        .size   kinit, .-kinit

/* code a kernel's ftrace copies, and CPU bring-up code: refused in a kernel */
        .text
        .globl  ftrace_regs_caller, ftrace_regs_caller_end, verify_cpu
        .type   ftrace_regs_caller, @function
ftrace_regs_caller:
        pushfq
        sub     $0xa8, %rsp
        add     $0xa8, %rsp
        popfq
ftrace_regs_caller_end:
        ret
        .size   ftrace_regs_caller, .-ftrace_regs_caller
        .type   verify_cpu, @function
verify_cpu:
        pushfq
        push    $0
        popfq
        xor     %eax, %eax
        popfq
        ret
        .size   verify_cpu, .-verify_cpu

/* kretsite() = 0, returning through the return thunk: a .return_sites
 * entry names its jmp at +2, which main() patches to ret as the kernel's
 * apply_returns() does at boot (where the entry points: the copy, once a
 * probe at +0 moved it) */
        .text
        .globl  kretsite, __x86_return_thunk, kdetour_return_sites, kdetour_return_sites_end
        .type   kretsite, @function
kretsite:
        xor     %eax, %eax
.Lkret_site:
        .byte   0xe9
        .long   __x86_return_thunk - . - 4
        .size   kretsite, .-kretsite
        .type   __x86_return_thunk, @function
__x86_return_thunk:
        ret
        int3
        .size   __x86_return_thunk, .-__x86_return_thunk

        .section .return_sites, "a"
        .balign 4
kdetour_return_sites:
        .long   .Lkret_site - .
kdetour_return_sites_end:

/* kalt() = 0 as linked, 1 once main() applied its alternative (mov $0
 * becomes mov $1, %eax), as the kernel's apply_alternatives() does at boot
 * (where the entry points: the copy, once a probe at +0 moved it) */
        .text
        .globl  kalt, kdetour_alt, kdetour_alt_end
        .type   kalt, @function
kalt:
.Lkalt_site:
        movl    $0, %eax
        ret
        .size   kalt, .-kalt

/* kalt2() = 0 as linked (its jmp at +0 goes to +5), 2 once main() applied
 * its alternative (a jmp to +8): a replacement with a branch out of
 * itself, which the kernel aims from where it puts it */
        .globl  kalt2
        .type   kalt2, @function
kalt2:
.Lkalt2_site:
        .byte   0xe9
        .long   .Lkalt2_zero - . - 4
.Lkalt2_zero:
        xor     %eax, %eax
        ret
.Lkalt2_two:
        movl    $2, %eax
        ret
        .size   kalt2, .-kalt2

        .section .altinstr_replacement, "ax"
.Lkalt_repl:
        movl    $1, %eax
.Lkalt_repl_end:
.Lkalt2_repl:
        .byte   0xe9
        .long   .Lkalt2_two - . - 4
.Lkalt2_repl_end:

/* struct alt_instr (6.1's 12 bytes): s32 instr, s32 repl, u16 cpuid,
 * u8 instrlen, u8 replacementlen */
        .section .altinstructions, "a"
        .balign 4
kdetour_alt:
        .long   .Lkalt_site - .
        .long   .Lkalt_repl - .
        .word   3*32+18
        .byte   5, .Lkalt_repl_end - .Lkalt_repl
        .long   .Lkalt2_site - .
        .long   .Lkalt2_repl - .
        .word   3*32+18
        .byte   5, .Lkalt2_repl_end - .Lkalt2_repl
kdetour_alt_end:

        .section .rodata
        .balign 8
kfn_mid_off:
        .quad   .Lmid - kfn

        .data
        .balign 8
kfn_sp: .quad   0

        .section .note.GNU-stack,"",@progbits
