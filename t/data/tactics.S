/* The jump tactics at run time, t/tactics.t. Each function is built so that
 * a plain jump at the probe would break it, and says which tactic saves it.
 * Laid out by hand: what lies within 128 bytes of what matters. */
        .text
        .globl t_loop, t_far, t_switch, t_short, t_next, t_short_ret, t_after

/* A loop back to the DCR's second instruction with a rel8 jnz: re-pointed
 * through a trampoline in the padding below. t_loop(n) = n + (n-1) + ... + 1 */
        .p2align 4
        .type t_loop,@function
t_loop:
        xor %eax, %eax          /* +0, 2 bytes */
1:      add %rdi, %rax          /* +2, 3 bytes: the loop's target, inside the DCR */
        dec %rdi
        jnz 1b                  /* rel8 */
        ret
        .size t_loop, .-t_loop
        .p2align 4, 0xcc

/* The same with a rel32 jump from 256 bytes away: its displacement is
 * rewritten in place. t_far(n) = n + (n-1) + ... + 1, through far_back */
        .type t_far,@function
t_far:
        xor %eax, %eax          /* +0 */
2:      add %rdi, %rax          /* +2: inside the DCR */
        dec %rdi
        jz 3f
        jmp far_back            /* to the bottom, which jumps back to 2b */
3:      ret
        .fill 256, 1, 0x90      /* pushes far_back out of rel8 reach */
far_back:
        .byte 0xe9              /* jmp 2b, rel32 */
        .long 2b - (. + 4)
        .size t_far, .-t_far
        .p2align 4, 0xcc

/* A PIC switch whose case 1 lands inside the DCR of a probe at +27:
 * the table entry is re-pointed. t_switch(0..2) = 10, 11, 12; else -1 */
        .type t_switch,@function
t_switch:
        cmp $2, %rdi            /* +0, 4 */
        ja 9f                   /* +4, 2 */
        lea .Ltab(%rip), %rdx   /* +6, 7 */
        movslq (%rdx,%rdi,4), %rax
        add %rdx, %rax
        jmp *%rax               /* +20 */
.Lc0:   mov $10, %eax           /* +22 */
        ret
        nop                     /* +28: the probe t_switch+28 ... */
.Lc1:   nop                     /* +29: ... whose DCR case 1 lands in */
        mov $11, %eax
        ret
.Lc2:   mov $12, %eax
        ret
9:      mov $-1, %eax
        ret
        .size t_switch, .-t_switch
        .p2align 4, 0xcc

/* Shorter than a jmp rel32, with the next function right behind: the site
 * gets a jmp rel8 to a trampoline in the padding above. */
        .type t_short,@function
t_short:                        /* t_short(x) = x + 7; 4 bytes */
        lea 7(%rdi), %eax
        ret
        .size t_short, .-t_short
        .type t_next,@function
t_next:                         /* right after it: t_next(x) = 3x */
        lea (%rdi,%rdi,2), %eax
        ret
        .size t_next, .-t_next
        .type t_short_ret,@function
t_short_ret:                    /* a return probe on a 4-byte function: x - 1 */
        lea -1(%rdi), %eax
        ret
        .size t_short_ret, .-t_short_ret
        .type t_after,@function
t_after:                        /* x ^ 5 */
        mov %edi, %eax
        xor $5, %eax
        ret
        .size t_after, .-t_after
        .p2align 4, 0xcc

/* Functions packed with no padding between them (as python3.11 is built):
 * a short one and a rel8 loop into an entry DCR find no padding within 128
 * bytes, so windows of pk_before's and pk_after's straight code are
 * evicted (run out of line) to make room for their trampolines. */
        .section .text.packed,"ax",@progbits
        .globl pk_before, pk_short, pk_loop, pk_after
        .type pk_before,@function
pk_before:                      /* pk_before(x) = x + 40 */
        mov %rdi, %rax
        .rept 40
        add $1, %rax
        .endr
        ret
        .size pk_before, .-pk_before
        .type pk_short,@function
pk_short:                       /* pk_short(x) = x + 7; 4 bytes */
        lea 7(%rdi), %eax
        ret
        .size pk_short, .-pk_short
        .type pk_loop,@function
pk_loop:                        /* pk_loop(n) = n + ... + 1 */
        xor %eax, %eax
1:      add %rdi, %rax
        dec %rdi
        jnz 1b
        ret
        .size pk_loop, .-pk_loop
        .type pk_after,@function
pk_after:                       /* pk_after(x) = x - 40 */
        mov %rdi, %rax
        .rept 40
        sub $1, %rax
        .endr
        ret
        .size pk_after, .-pk_after

        .section .rodata
        .balign 4
.Ltab:  .long .Lc0 - .Ltab, .Lc1 - .Ltab, .Lc2 - .Ltab
        .section .note.GNU-stack,"",@progbits
