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

        .data
        .globl rip_value
rip_value: .long 1000
        .section .note.GNU-stack,"",@progbits
