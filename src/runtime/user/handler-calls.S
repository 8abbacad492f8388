/*
 * Calls into handlers that may not come back the usual way.
 *
 * long rt_guard_call(struct rt_guard *g, long (*fn)(void *, void *), void *a,
 *                    void *b): fn(a, b), with what a return from here needs
 * (the callee-saved registers, %rsp and the return address) kept in g, so
 * that a fault in fn that its kprobe's fault_handler handles (fault.c)
 * ends the call as if fn had returned 0: the fault's context is given
 * these back, with %rax 0.
 *
 * jprobe_return(): what a jprobe's handler ends with (jprobe.c). It traps;
 * the runtime's SIGTRAP handler puts back the probed function's registers
 * and stack as they were at its entry, and it goes on. A handler that
 * returns instead comes here too (its return address was made this).
 */
#include "rt-offsets.h"

        .text
        .globl  rt_guard_call
        .hidden rt_guard_call
        .type   rt_guard_call, @function
        .p2align 4
rt_guard_call:
        mov     %rbx, G_RBX(%rdi)
        mov     %rbp, G_RBP(%rdi)
        mov     %r12, G_R12(%rdi)
        mov     %r13, G_R13(%rdi)
        mov     %r14, G_R14(%rdi)
        mov     %r15, G_R15(%rdi)
        lea     8(%rsp), %rax                   /* %rsp once returned */
        mov     %rax, G_RSP(%rdi)
        mov     (%rsp), %rax                    /* where we return */
        mov     %rax, G_RIP(%rdi)
        mov     %rsi, %rax
        mov     %rdx, %rdi
        mov     %rcx, %rsi
        sub     $8, %rsp                        /* aligned for the call */
        call    *%rax
        add     $8, %rsp
        ret
        .size   rt_guard_call, .-rt_guard_call

        .globl  jprobe_return
        .type   jprobe_return, @function
        .globl  rt_jprobe_int3
        .hidden rt_jprobe_int3
        .p2align 4
jprobe_return:
        endbr64
rt_jprobe_int3:
        int3
        ud2                                     /* never comes back here */
        .size   jprobe_return, .-jprobe_return

        .section .note.GNU-stack,"",@progbits
