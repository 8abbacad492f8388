/* User-space fixture: one function per verdict reason (t/verdicts.t).
 * Offsets in the comments are what the test expects. */
        .text
        .globl f_opt, f_endbr, f_short, f_tail, f_jumpin, f_indirect, f_sys, f_trap
        .globl f_ud, f_rip, f_call, f_jcc, f_switch, f_loop, f_tailcall_got

        .type f_opt,@function
f_opt:                          /* +0 push %rbp; +1 mov %rsp,%rbp (3 bytes); +4 */
        push %rbp
        mov %rsp, %rbp
        mov $1, %eax
        pop %rbp
        ret
        .size f_opt, .-f_opt

        .type f_endbr,@function
f_endbr:                        /* endbr64; +4 push %rbx; mov %rdi,%rbx */
        endbr64
        push %rbx
        mov %rdi, %rbx
        mov %rbx, %rax
        pop %rbx
        ret
        .size f_endbr, .-f_endbr

        .type f_short,@function
f_short:                        /* 3 bytes */
        xor %eax, %eax
        ret
        .size f_short, .-f_short

        .type f_tail,@function
f_tail:                         /* +7: 3 bytes left */
        mov $2, %eax            /* 5 */
        add %edi, %eax          /* 2 */
        add %esi, %eax          /* 2 */
        ret                     /* 1 */
        .size f_tail, .-f_tail

        .type f_jumpin,@function
f_jumpin:                       /* a loop branches back to +2, inside a DCR at +0 */
        xor %eax, %eax          /* +0, 2 bytes */
1:      add $1, %eax            /* +2, 3 bytes */
        cmp %edi, %eax
        jne 1b
        ret
        .size f_jumpin, .-f_jumpin

        .type f_indirect,@function
f_indirect:                     /* a computed jump nobody can bound */
        mov %rdi, %rax          /* +0, 3 bytes */
        add $8, %rax            /* +3, 4 bytes */
        jmp *%rax
        .size f_indirect, .-f_indirect

        .type f_sys,@function
f_sys:                          /* syscall inside the DCR of +0 */
        mov %edi, %eax          /* 2 */
        syscall                 /* 2 at +2 */
        nop
        nop
        ret
        .size f_sys, .-f_sys

        .type f_trap,@function
f_trap:
        nop                     /* +0 */
        int3                    /* +1 */
        ret
        .size f_trap, .-f_trap

        .type f_ud,@function
f_ud:
        ud2                     /* +0 */
        .size f_ud, .-f_ud

        .type f_rip,@function
f_rip:                          /* RIP-relative load: re-pointed in the detour */
        mov counter(%rip), %eax /* 6 */
        ret
        .size f_rip, .-f_rip

        .type f_call,@function
f_call:                         /* a call in the DCR stays a real call */
        sub $8, %rsp            /* 4 */
        call f_opt              /* 5 at +4 */
        add $8, %rsp
        ret
        .size f_call, .-f_call

        .type f_jcc,@function
f_jcc:                          /* a short jcc in the DCR is re-encoded */
        test %edi, %edi         /* 2 */
        jz 1f                   /* 2 */
        mov $3, %eax            /* 5 */
        ret
1:      xor %eax, %eax
        ret
        .size f_jcc, .-f_jcc

        /* A PIC switch like gcc's: bounded, so its targets are known. */
        .type f_switch,@function
f_switch:
        cmp $2, %edi            /* +0, 3 */
        ja .Ldefault            /* +3, 2 */
        lea .Ltable(%rip), %rdx /* +5, 7 */
        movslq (%rdx,%rdi,4), %rax
        add %rdx, %rax
        jmp *%rax
.Lcase0:
        mov $10, %eax           /* 5 */
        ret
.Lcase1:                        /* +27: case 1 lands at +29, inside a DCR at +27 */
        nop
        nop
.Lcase1b:
        mov $11, %eax
        ret
.Lcase2:
        mov $12, %eax
        ret
.Ldefault:
        mov $-1, %eax
        ret
        .size f_switch, .-f_switch

        .type f_unbounded,@function
        .globl f_unbounded
f_unbounded:                    /* the same dispatch without its bound check */
        lea .Ltable2(%rip), %rdx
        movslq (%rdx,%rdi,4), %rax
        add %rdx, %rax
        jmp *%rax
.Lu0:   mov $1, %eax
        ret
        .size f_unbounded, .-f_unbounded

        .type f_loop,@function
f_loop:                         /* loop has only a rel8 form: not relocatable */
        or $4, %ecx             /* 3 */
1:      loop 1b                 /* 2 at +3 */
        ret
        .size f_loop, .-f_loop

        .type f_tailcall_got,@function
f_tailcall_got:                 /* tail call through the GOT: targets are function entries */
        mov %rdi, %rax          /* 3 */
        add $1, %rax            /* 4 */
        jmp *puts@GOTPCREL(%rip)
        .size f_tailcall_got, .-f_tailcall_got

        .section .rodata
        .balign 4
.Ltable:
        .long .Lcase0 - .Ltable
        .long .Lcase1b - .Ltable
        .long .Lcase2 - .Ltable
.Ltable2:
        .long .Lu0 - .Ltable2

/* The padding tactic: a function too short for the jump, whose jump may
 * end in the int3 padding after it (nothing reaches those bytes) ... */
        .text
        .globl f_padded, f_padtight, f_padnext, f_padjumped, f_padjumper
        .p2align 4
        .type f_padded,@function
f_padded:                       /* 3 bytes, then 13 of int3 */
        xor %eax, %eax
        ret
        .size f_padded, .-f_padded
        .p2align 4, 0xcc
/* ... but not when the next function starts within the 5 bytes ... */
        .type f_padtight,@function
f_padtight:                     /* 3 bytes, 1 of padding, then f_padnext */
        xor %eax, %eax
        ret
        .byte 0xcc
        .size f_padtight, .-f_padtight - 1
        .type f_padnext,@function
f_padnext:
        mov $7, %eax
        ret
        .size f_padnext, .-f_padnext
        .p2align 4, 0xcc
/* ... nor when something jumps into the padding. */
        .type f_padjumped,@function
f_padjumped:                    /* 3 bytes, then padding that f_padjumper jumps into */
        xor %eax, %eax
        ret
        .size f_padjumped, .-f_padjumped
.Lpadtarget:
        .byte 0xcc, 0xcc, 0xcc
        .p2align 4, 0xcc
        .type f_padjumper,@function
f_padjumper:
        test %edi, %edi
        jz .Lpadtarget
        ret
        .size f_padjumper, .-f_padjumper

        .data
        .globl counter
        .type counter,@object
counter: .long 42
        .size counter, 4
        .section .note.GNU-stack,"",@progbits
