/* t/api-conformance.t: functions whose instructions the checks must know. */
        .text
        .globl  f_int3, step_fn, jcc_fn, load_fn, past_a, past_b

        .type   f_int3, @function
f_int3:                         /* (a, b) -> a + b; int3: the jrcxz in its DCR */
        lea     (%rdi,%rsi), %eax
        jrcxz   1f
1:      ret
        .size   f_int3, .-f_int3

        .type   step_fn, @function
step_fn:                        /* (x) -> x + 1; a 5-byte first instruction */
        mov     $1, %eax                /* b8 01 00 00 00 */
        add     %edi, %eax
        ret
        .size   step_fn, .-step_fn

        .type   jcc_fn, @function
jcc_fn:                         /* (x) -> 2 if x == 0, else 1 */
        test    %edi, %edi              /* +0: 2 bytes */
        jz      1f                      /* +2: 74 rel8 */
        mov     $1, %eax                /* +4 */
        nop
        nop
        ret
1:      mov     $2, %eax                /* +12 */
        nop
        nop
        ret
        .size   jcc_fn, .-jcc_fn

        .type   load_fn, @function
load_fn:                        /* (int *p) -> *p */
        mov     (%rdi), %eax            /* +0: 2 bytes, may fault */
        nop
        nop
        nop
        ret
        .size   load_fn, .-load_fn

        .type   past_a, @function
past_a:                         /* () -> 1, and past_b right after it */
        mov     $1, %eax
        nop
        nop
        ret
        .size   past_a, .-past_a
        .type   past_b, @function
past_b:                         /* () -> 2 */
        mov     $2, %eax
        nop
        nop
        ret
        .size   past_b, .-past_b
        .section .note.GNU-stack,"",@progbits
