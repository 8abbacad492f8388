/* Return probes, t/kretprobe.t: a function whose DCR cannot run out of
 * line (its return probe runs through int3), then functions a return probe
 * must refuse (never called). */
    .text
    .globl short_inc
    .type short_inc, @function
short_inc:                  /* the jrcxz cannot run out of line */
    lea 1(%rdi), %eax
    jrcxz 1f
1:  ret
    .size short_inc, .-short_inc

    .globl spin_forever
    .type spin_forever, @function
spin_forever:               /* noreturn: no ret, no jump out */
    push %rbp
    mov %rsp, %rbp
1:  pause
    jmp 1b
    .size spin_forever, .-spin_forever

    .globl on_stack
    .type on_stack, @function
on_stack:                   /* runs %rsi on the stack %rdi: stack-switch */
    push %rbp
    mov %rsp, %rbp
    mov %rdi, %rsp
    call *%rsi
    mov %rbp, %rsp
    pop %rbp
    ret
    .size on_stack, .-on_stack

    .type getcontext, @function   /* local: returns twice, by its name */
getcontext:
    push %rbp
    mov %rsp, %rbp
    xor %eax, %eax
    pop %rbp
    ret
    .size getcontext, .-getcontext
    .section .note.GNU-stack,"",@progbits
