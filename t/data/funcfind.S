# Hand-written functions without CFI or sizes, which nothing names once
# the program is stripped (t/funcfind.t): kprewrite's finder must find
# each from what leads to it (a call, a call from found code, a tail jump
# from found code and from C, a function-pointer table), and must not
# take the decoys: data that looks like a function, the cases of a jump
# table and the target of a computed jump (code reached only by
# indirect jumps), a label inside a function that a pointer names.
        .text
        .globl  ff_text_start, ff_called, ff_decoy_data, ff_sum_decoy, ff_outer, ff_outer_mid, ff_inner
        .globl  ff_tailed, ff_ptr_a, ff_ptr_b, ff_c_tail, ff_switch, ff_text_end
        .hidden ff_text_start, ff_called, ff_decoy_data, ff_sum_decoy, ff_outer, ff_outer_mid, ff_inner
        .hidden ff_tailed, ff_ptr_a, ff_ptr_b, ff_c_tail, ff_switch, ff_text_end

        .p2align 4
ff_text_start:
ff_called:                      # called by C
        lea     1(%rdi), %eax
        ret

        .p2align 4
ff_decoy_data:                  # data: push %rbx; mov %edi,%eax; add $1,%eax; pop %rbx; ret
        .byte   0x53, 0x89, 0xf8, 0x83, 0xc0, 0x01, 0x5b, 0xc3

        .p2align 4
ff_sum_decoy:                   # called by C: the decoy's bytes, summed
        lea     ff_decoy_data(%rip), %rsi
        xor     %eax, %eax
        mov     $8, %ecx
1:      movzbl  (%rsi), %edx
        add     %edx, %eax
        inc     %rsi
        dec     %ecx
        jnz     1b
        ret

        .p2align 4
ff_outer:                       # called by C: calls ff_inner, tail-jumps to ff_tailed
        push    %rbx
        mov     %edi, %ebx
        call    ff_inner
ff_outer_mid:                   # a pointer in data names this label
        add     %ebx, %eax
        pop     %rbx
        mov     %eax, %edi
        jmp     ff_tailed

        .p2align 4
ff_inner:                       # called by ff_outer only
        lea     (%rdi,%rdi,1), %eax
        ret

        .p2align 4
ff_tailed:                      # reached by ff_outer's tail jump only
        lea     100(%rdi), %eax
        ret

        .p2align 4
ff_ptr_a:                       # in C's table of function pointers
        lea     (%rdi,%rdi,2), %eax
        ret

        .p2align 4
ff_ptr_b:                       # in C's table of function pointers
        mov     %edi, %eax
        shl     $4, %eax
        sub     $3, %eax
        ret

        .p2align 4
ff_c_tail:                      # reached by a C function's tail call
        imul    $7, %edi, %eax
        ret

        .p2align 4
ff_switch:                      # called by C: a bounded jump table, a computed jump
        cmp     $3, %edi
        ja      .Ldefault
        mov     %edi, %edi
        lea     .Ltable(%rip), %rdx
        movslq  (%rdx,%rdi,4), %rax
        add     %rdx, %rax
        jmp     *%rax
.Ldefault:
        lea     .Lcomputed(%rip), %rax
        jmp     *%rax
        # each target looks like a function: aligned, after a jump, ends in ret
        .p2align 4
.Lcase0:
        mov     $10, %eax
        ret
        .p2align 4
.Lcase1:
        mov     $11, %eax
        ret
        .p2align 4
.Lcase2:
        mov     $12, %eax
        ret
        .p2align 4
.Lcase3:
        mov     $13, %eax
        ret
        .p2align 4
.Lcomputed:
        mov     $99, %eax
        ret
ff_text_end:

        .section .rodata
        .p2align 2
.Ltable:
        .long   .Lcase0 - .Ltable, .Lcase1 - .Ltable, .Lcase2 - .Ltable, .Lcase3 - .Ltable

        .section .note.GNU-stack, "", @progbits
