/* Register transparency, t/regs.t: leaf functions that change only %rax
 * (and the flags), probed at their entry, return, and through int3, and
 * call_with_regs, which calls one with every general and vector register
 * set from a struct regs and stores every one of them back after the
 * call. A caller built with GCC's -fipa-ra keeps values in any register
 * such a leaf leaves alone; a probe must leave them all alone too. */
    .text

/* struct regs: rax rbx rcx rdx rsi rdi rbp r8..r15 (15 words, no rsp),
 * then flags, then xmm0..xmm15 (16 bytes each) */
#define R_FLAGS (15 * 8)
#define R_XMM   (16 * 8)

    .globl leaf_entry
    .type leaf_entry, @function
leaf_entry:                 /* an entry kprobe: a 7-byte DCR of one instruction */
    lea 0x1234567(%rdi), %rax
    ret
    .size leaf_entry, .-leaf_entry

    .globl leaf_ret
    .type leaf_ret, @function
leaf_ret:                   /* a return probe */
    lea 0x7654321(%rdi), %rax
    add %rdi, %rax
    ret
    .size leaf_ret, .-leaf_ret

    .globl leaf_int3
    .type leaf_int3, @function
leaf_int3:                  /* an int3 probe: jrcxz cannot run out of line */
    mov %rdi, %rax
    jrcxz 1f
    inc %rax
1:  ret
    .size leaf_int3, .-leaf_int3

    .globl leaf_int3_ret
    .type leaf_int3_ret, @function
leaf_int3_ret:              /* an int3 return probe */
    mov %rdi, %rax
    jrcxz 1f
    add $2, %rax
1:  ret
    .size leaf_int3_ret, .-leaf_int3_ret

    .globl leaf_mid
    .type leaf_mid, @function
leaf_mid:                   /* a probe at +3, where the flags of the cmp are live */
    cmp %rsi, %rdi
    setl %al
    movzbl %al, %eax
    ret
    .size leaf_mid, .-leaf_mid

/* void call_with_regs(long (*fn)(void), const struct regs *in, struct regs *out) */
    .globl call_with_regs
    .type call_with_regs, @function
call_with_regs:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    push %rdx               /* out: 56(%rsp) after the pushes below */
    push %rdi               /* fn:  48(%rsp) */
    sub $8, %rsp            /* %rsp = 0 mod 16 at the call */
    mov %rsi, %rax
    movdqu R_XMM + 0*16(%rax), %xmm0
    movdqu R_XMM + 1*16(%rax), %xmm1
    movdqu R_XMM + 2*16(%rax), %xmm2
    movdqu R_XMM + 3*16(%rax), %xmm3
    movdqu R_XMM + 4*16(%rax), %xmm4
    movdqu R_XMM + 5*16(%rax), %xmm5
    movdqu R_XMM + 6*16(%rax), %xmm6
    movdqu R_XMM + 7*16(%rax), %xmm7
    movdqu R_XMM + 8*16(%rax), %xmm8
    movdqu R_XMM + 9*16(%rax), %xmm9
    movdqu R_XMM + 10*16(%rax), %xmm10
    movdqu R_XMM + 11*16(%rax), %xmm11
    movdqu R_XMM + 12*16(%rax), %xmm12
    movdqu R_XMM + 13*16(%rax), %xmm13
    movdqu R_XMM + 14*16(%rax), %xmm14
    movdqu R_XMM + 15*16(%rax), %xmm15
    pushq R_FLAGS(%rax)
    popfq
    mov 1*8(%rax), %rbx
    mov 2*8(%rax), %rcx
    mov 3*8(%rax), %rdx
    mov 4*8(%rax), %rsi
    mov 5*8(%rax), %rdi
    mov 6*8(%rax), %rbp
    mov 7*8(%rax), %r8
    mov 8*8(%rax), %r9
    mov 9*8(%rax), %r10
    mov 10*8(%rax), %r11
    mov 11*8(%rax), %r12
    mov 12*8(%rax), %r13
    mov 13*8(%rax), %r14
    mov 14*8(%rax), %r15
    mov 0*8(%rax), %rax
    call *8(%rsp)
    pushfq                  /* before anything changes them */
    push %rax
    mov 16+16(%rsp), %rax   /* out: above the two pushes, the pad and fn */
    mov %rbx, 1*8(%rax)
    mov %rcx, 2*8(%rax)
    mov %rdx, 3*8(%rax)
    mov %rsi, 4*8(%rax)
    mov %rdi, 5*8(%rax)
    mov %rbp, 6*8(%rax)
    mov %r8, 7*8(%rax)
    mov %r9, 8*8(%rax)
    mov %r10, 9*8(%rax)
    mov %r11, 10*8(%rax)
    mov %r12, 11*8(%rax)
    mov %r13, 12*8(%rax)
    mov %r14, 13*8(%rax)
    mov %r15, 14*8(%rax)
    pop %rcx
    mov %rcx, 0*8(%rax)
    pop %rcx
    mov %rcx, R_FLAGS(%rax)
    movdqu %xmm0, R_XMM + 0*16(%rax)
    movdqu %xmm1, R_XMM + 1*16(%rax)
    movdqu %xmm2, R_XMM + 2*16(%rax)
    movdqu %xmm3, R_XMM + 3*16(%rax)
    movdqu %xmm4, R_XMM + 4*16(%rax)
    movdqu %xmm5, R_XMM + 5*16(%rax)
    movdqu %xmm6, R_XMM + 6*16(%rax)
    movdqu %xmm7, R_XMM + 7*16(%rax)
    movdqu %xmm8, R_XMM + 8*16(%rax)
    movdqu %xmm9, R_XMM + 9*16(%rax)
    movdqu %xmm10, R_XMM + 10*16(%rax)
    movdqu %xmm11, R_XMM + 11*16(%rax)
    movdqu %xmm12, R_XMM + 12*16(%rax)
    movdqu %xmm13, R_XMM + 13*16(%rax)
    movdqu %xmm14, R_XMM + 14*16(%rax)
    movdqu %xmm15, R_XMM + 15*16(%rax)
    add $24, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
    .size call_with_regs, .-call_with_regs
    .section .note.GNU-stack,"",@progbits
