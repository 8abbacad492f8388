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
 *   bool rt_safe_read_word(uint64_t *dst, uintptr_t src)
 *       the 8 bytes at src into *dst: true, or false on a fault (a
 *       pointer or a u64 of an event: one load, no loop)
 */
    .text
    .globl rt_safe_read, rt_safe_read_str, rt_safe_read_word
    .globl rt_safe_word_begin, rt_safe_word_end, rt_safe_word_fault
    .globl rt_safe_strw_begin, rt_safe_strw_end
    .hidden rt_safe_strw_begin, rt_safe_strw_end
    .hidden rt_safe_read_word, rt_safe_word_begin, rt_safe_word_end, rt_safe_word_fault
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
    mov $0x0101010101010101, %r9
    mov %r9, %r10
    shl $7, %r10             /* 0x8080808080808080 */
    /* whole words while one fits in the room and does not cross a page
     * (a word within one page faults only where its first byte would: the
     * same answer as byte by byte); a word with a zero byte ends it */
4:  lea 8(%rax), %rcx
    cmp %rdx, %rcx
    ja 1f
    lea (%rsi,%rax), %rcx
    and $4095, %ecx
    cmp $4088, %ecx
    ja 1f
rt_safe_strw_begin:
    mov (%rsi,%rax), %r8
rt_safe_strw_end:
    mov %r8, (%rdi,%rax)     /* room: rax + 8 <= max - 1 */
    mov %r8, %rcx
    sub %r9, %rcx
    not %r8
    and %r8, %rcx
    and %r10, %rcx           /* the lowest bit set: the first zero byte's top bit */
    jnz 5f
    add $8, %rax
    jmp 4b
5:  bsf %rcx, %rcx
    shr $3, %ecx
    lea 1(%rax,%rcx), %rax   /* the bytes up to the NUL, and the NUL */
    ret
    /* byte by byte: the rest */
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

    .type rt_safe_read_word, @function
rt_safe_read_word:
    .cfi_startproc
    endbr64
    xor %eax, %eax
rt_safe_word_begin:
    mov (%rsi), %rcx
rt_safe_word_end:
    mov %rcx, (%rdi)
    inc %eax
rt_safe_word_fault:          /* %eax: 0 */
    ret
    .cfi_endproc
    .size rt_safe_read_word, . - rt_safe_read_word
    .section .note.GNU-stack, "", @progbits
