/* Code that is jumped to, not called (t/pieces.t): a piece of `parent`
 * entered by a jump with the parent's frame, as GCC's .cold pieces are.
 * Its top of stack is the parent's data (no return address: a return
 * probe there must be refused), and %rsp is 0 mod 16, not the 8 mod 16 of
 * a call entry (a detour must not assume it). */
        .text
        .globl parent, parent_piece
        .type parent,@function
        .p2align 4
parent:                         /* long parent(long x): x + 2000 if x is odd, else x */
        .cfi_startproc
        push %rbx
        .cfi_def_cfa_offset 16
        .cfi_offset %rbx, -16
        sub $16, %rsp
        .cfi_def_cfa_offset 32
        mov %rdi, (%rsp)        /* the parent's data, on top */
        mov %rdi, %rbx
        test $1, %rdi
        jnz parent_piece
        mov (%rsp), %rax
.Lback:
        add $16, %rsp
        .cfi_remember_state
        .cfi_def_cfa_offset 16
        pop %rbx
        .cfi_def_cfa_offset 8
        ret
        .cfi_restore_state
        .cfi_endproc
        .size parent, .-parent

        .type parent_piece,@function
        .p2align 4
parent_piece:                   /* entered by jnz: CFA = %rsp + 32 */
        .cfi_startproc
        .cfi_def_cfa_offset 32
        .cfi_offset %rbx, -16
        mov (%rsp), %rax        /* reads the parent's data */
        lea 1000(%rax), %rax
        add %rbx, %rax
        sub (%rsp), %rax
        add $1000, %rax
        jmp .Lback
        .cfi_endproc
        .size parent_piece, .-parent_piece
        .section .note.GNU-stack,"",@progbits
