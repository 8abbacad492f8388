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
 * ftrace has at each entry, listed in __mcount_loc: a probe at +0 takes the
 * site over from ftrace */
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

        .section .rodata
        .balign 8
kfn_mid_off:
        .quad   .Lmid - kfn

        .data
        .balign 8
kfn_sp: .quad   0

        .section .note.GNU-stack,"",@progbits
