/* t/undecodable-operands.t: functions whose RIP-relative lea the test
 * kprewrite (t/kprewrite-zyfail, KP_ZYDIS_FAIL_OPS=lea) cannot decode the
 * operands of. lea_first: the probed instruction (refused); lea_second: the
 * second of its DCR (int3, whose copy holds only the nop); lea_after: past
 * its DCR (optimized: the lea is not copied). Each returns value + k. */
    .text
    .globl lea_first
    .type lea_first, @function
lea_first:
    lea value(%rip), %rax
    mov (%rax), %eax
    add $1, %eax
    ret
    .size lea_first, .-lea_first

    .globl lea_second
    .type lea_second, @function
lea_second:
    nop
    lea value(%rip), %rax
    mov (%rax), %eax
    add $2, %eax
    ret
    .size lea_second, .-lea_second

    .globl lea_after
    .type lea_after, @function
lea_after:
    mov $3, %ecx
    lea value(%rip), %rax
    add (%rax), %ecx
    mov %ecx, %eax
    ret
    .size lea_after, .-lea_after

    .data
value:
    .long 40
    .section .note.GNU-stack, "", @progbits
