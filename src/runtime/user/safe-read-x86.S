/*
 * Reads that cannot fault the program (an event's dereferences and
 * strings): a fault inside the copy loops below is taken by the runtime's
 * fault handler (fault.c), which resumes at the loop's fixup
 * (rt_safe_read_fixup). No system call: a read that works costs a load.
 *
 *   size_t rt_safe_read(void *dst, uintptr_t src, size_t n)
 *       the bytes copied before a fault (n: all)
 *   size_t rt_safe_read_str(char *dst, uintptr_t src, size_t max)
 *       the string's length with its NUL (truncated to max - 1 and
 *       terminated), or 0 on a fault
 */
    .text
    .globl rt_safe_read, rt_safe_read_str
    .globl rt_safe_read_begin, rt_safe_read_end, rt_safe_read_fault
    .globl rt_safe_str_begin, rt_safe_str_end, rt_safe_str_fault
    .hidden rt_safe_read, rt_safe_read_str
    .hidden rt_safe_read_begin, rt_safe_read_end, rt_safe_read_fault
    .hidden rt_safe_str_begin, rt_safe_str_end, rt_safe_str_fault

    .type rt_safe_read, @function
rt_safe_read:
    .cfi_startproc
    endbr64
    xor %eax, %eax
    /* whole words while 8 or more bytes are left */
1:  mov %rdx, %rcx
    sub %rax, %rcx
    cmp $8, %rcx
    jb 2f
rt_safe_read_begin:
    mov (%rsi,%rax), %r8
    mov %r8, (%rdi,%rax)
    add $8, %rax
    jmp 1b
2:  cmp %rdx, %rax
    jae 3f
    movzbl (%rsi,%rax), %r8d
    mov %r8b, (%rdi,%rax)
    inc %rax
    jmp 2b
rt_safe_read_end:
3:  ret
rt_safe_read_fault:          /* %rax: the bytes copied */
    ret
    .cfi_endproc
    .size rt_safe_read, . - rt_safe_read

    .type rt_safe_read_str, @function
rt_safe_read_str:
    .cfi_startproc
    endbr64
    xor %eax, %eax
    test %rdx, %rdx
    jz 3f
    dec %rdx                 /* room for the bytes before the NUL */
1:  cmp %rdx, %rax
    jae 2f
rt_safe_str_begin:
    movzbl (%rsi,%rax), %ecx
rt_safe_str_end:
    mov %cl, (%rdi,%rax)
    inc %rax
    test %ecx, %ecx
    jnz 1b
    ret                      /* the NUL was copied: %rax counts it */
2:  movb $0, (%rdi,%rax)
    inc %rax
3:  ret
rt_safe_str_fault:
    xor %eax, %eax
    ret
    .cfi_endproc
    .size rt_safe_read_str, . - rt_safe_read_str
    .section .note.GNU-stack, "", @progbits
