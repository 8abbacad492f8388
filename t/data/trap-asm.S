/* Functions whose probes can only be int3 (too short for a 5-byte jump). */
        .text
        .globl short3
        .type short3,@function
short3:                         /* (a, b) -> a + b; int3: the jrcxz in its DCR */
        lea     (%rdi,%rsi),%eax        /* cannot run out of line */
        jrcxz   1f
1:      ret
        .size short3, .-short3

        .globl foreign_int3
        .type foreign_int3,@function
foreign_int3:                   /* an int3 of the program's own, not a probe */
        int3
        ret
        .size foreign_int3, .-foreign_int3
        .section .note.GNU-stack,"",@progbits
