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

/* tail_outer(x) = tail_inner(x + 1) by a tail call (jmp: the inner call
 * returns straight to the outer one's caller); tail_outer3 likewise from
 * an int3 probe (jrcxz in its DCR); tail_inner(x) = 2x */
    .globl tail_outer, tail_outer3, tail_inner
    .type tail_outer, @function
tail_outer:
    add $1, %rdi
    nop
    nop
    jmp tail_inner
    .size tail_outer, .-tail_outer
    .type tail_outer3, @function
tail_outer3:
    add $1, %rdi
    jrcxz 1f
1:  jmp tail_inner
    .size tail_outer3, .-tail_outer3
    .type tail_inner, @function
tail_inner:
    lea (%rdi,%rdi), %rax
    nop
    nop
    ret
    .size tail_inner, .-tail_inner

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
