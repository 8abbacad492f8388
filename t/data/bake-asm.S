/* Hand-placed probe points for t/bake.t. */
        .text
        .globl flagtest
        .type flagtest,@function
flagtest:                       /* (a, b) -> a < b ? 1 : 2; probe at +2 sits between cmp and jl */
        cmp %esi, %edi          /* +0, 2 bytes */
        jl 1f                   /* +2, 2 bytes: reads the flags the probe must keep */
        mov $2, %eax            /* +4 */
        ret
1:      mov $1, %eax
        ret
        .size flagtest, .-flagtest

        .globl riptest
        .type riptest,@function
riptest:                        /* RIP-relative load in the DCR */
        mov rip_value(%rip), %eax
        add %edi, %eax
        ret
        .size riptest, .-riptest

        .globl calltest
        .type calltest,@function
calltest:                       /* a call in the DCR */
        sub $8, %rsp
        call riptest
        add $8, %rsp
        add $1, %eax
        ret
        .size calltest, .-calltest

/* void regtest(void): every general register gets a known value (r1 = 1 x
 * 0x0101..., in the order ax cx dx bx bp si di r8-r15), then a probe point
 * (regtest_point, mid-function: the stack is not known aligned there), then
 * every register is stored to reg_out[15] in the same order. reg_sp is %rsp
 * at the point. */
        .globl regtest, regtest_point
        .type regtest,@function
regtest:
        push %rbx
        push %rbp
        push %r12
        push %r13
        push %r14
        push %r15
        mov %rsp, reg_sp(%rip)
        movabs $0x0101010101010101, %rax
        movabs $0x0202020202020202, %rcx
        movabs $0x0303030303030303, %rdx
        movabs $0x0404040404040404, %rbx
        movabs $0x0505050505050505, %rbp
        movabs $0x0606060606060606, %rsi
        movabs $0x0707070707070707, %rdi
        movabs $0x0808080808080808, %r8
        movabs $0x0909090909090909, %r9
        movabs $0x0a0a0a0a0a0a0a0a, %r10
        movabs $0x0b0b0b0b0b0b0b0b, %r11
        movabs $0x0c0c0c0c0c0c0c0c, %r12
        movabs $0x0d0d0d0d0d0d0d0d, %r13
        movabs $0x0e0e0e0e0e0e0e0e, %r14
        movabs $0x0f0f0f0f0f0f0f0f, %r15
regtest_point:
        nopl 0x0(%rax,%rax,1)           /* 5 bytes: the DCR */
        mov %rax, reg_out+0(%rip)
        mov %rcx, reg_out+8(%rip)
        mov %rdx, reg_out+16(%rip)
        mov %rbx, reg_out+24(%rip)
        mov %rbp, reg_out+32(%rip)
        mov %rsi, reg_out+40(%rip)
        mov %rdi, reg_out+48(%rip)
        mov %r8, reg_out+56(%rip)
        mov %r9, reg_out+64(%rip)
        mov %r10, reg_out+72(%rip)
        mov %r11, reg_out+80(%rip)
        mov %r12, reg_out+88(%rip)
        mov %r13, reg_out+96(%rip)
        mov %r14, reg_out+104(%rip)
        mov %r15, reg_out+112(%rip)
        pop %r15
        pop %r14
        pop %r13
        pop %r12
        pop %rbp
        pop %rbx
        ret
        .size regtest, .-regtest

        .bss
        .globl reg_out, reg_sp
        .p2align 3
reg_out: .zero 15 * 8
reg_sp: .zero 8

        .data
        .globl rip_value
rip_value: .long 1000
        .section .note.GNU-stack,"",@progbits
