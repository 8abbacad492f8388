/* A landing-pad piece the way GCC splits a function: hot's call of thrower
 * has its landing pad in `piece`, a separate code range with its own FDE,
 * named through an explicit LPStart: piece itself, so the pad is at
 * piece + 1 (an LSDA cannot name offset 0) and piece starts with a nop. */
        .text
        .globl hot, piece, pad_hits
        .type hot,@function
        .p2align 4
hot:                            /* int hot(int x): thrower(x) + 1; a throw passes through the pad */
        .cfi_startproc
        .cfi_personality 0x9b, DW.ref.__gxx_personality_v0
        .cfi_lsda 0x1b, .LLSDA
        push %rbx
        .cfi_def_cfa_offset 16
        .cfi_offset %rbx, -16
        mov %edi, %ebx
.Lcall:
        call thrower
.Lcall_end:
        add $1, %eax
        pop %rbx
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
        .size hot, .-hot

        .type piece,@function
        .p2align 4
piece:                          /* the cleanup: count, then go on unwinding */
        .cfi_startproc
        .cfi_personality 0x9b, DW.ref.__gxx_personality_v0
        .cfi_def_cfa_offset 16
        .cfi_offset %rbx, -16
        nop                     /* +0: never runs */
        mov %rax, %rbx          /* +1: the landing pad */
        addl $1, pad_hits(%rip)
        mov %rbx, %rdi
        call _Unwind_Resume@PLT
        .cfi_endproc
        .size piece, .-piece

        .section .gcc_except_table,"a",@progbits
        .p2align 2
.LLSDA:
        .byte 0x1b              /* LPStart: pcrel | sdata4 */
        .long piece - .
        .byte 0xff              /* no type table */
        .byte 0x1               /* call sites: uleb128 */
        .uleb128 .LCSE - .LCSB
.LCSB:
        .uleb128 .Lcall - hot
        .uleb128 .Lcall_end - .Lcall
        .uleb128 1              /* the pad: LPStart + 1 */
        .uleb128 0              /* a cleanup */
.LCSE:

        .data
        .p2align 2
pad_hits: .long 0
        .hidden DW.ref.__gxx_personality_v0
        .weak DW.ref.__gxx_personality_v0
        .section .data.rel.local.DW.ref.__gxx_personality_v0,"awG",@progbits,DW.ref.__gxx_personality_v0,comdat
        .p2align 3
        .type DW.ref.__gxx_personality_v0, @object
        .size DW.ref.__gxx_personality_v0, 8
DW.ref.__gxx_personality_v0:
        .quad __gxx_personality_v0
        .section .note.GNU-stack,"",@progbits
