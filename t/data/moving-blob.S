/* Code that moves at run time, t/moving.t: a blob marked as V8 marks its
 * embedded builtins (the local labels v8_Default_embedded_blob_code_ and
 * v8_Default_embedded_blob_code_size_, Builtins_* functions; the getters
 * v8::internal::DefaultEmbeddedBlobCode() and DefaultEmbeddedBlobCodeSize()
 * exported, in the forms Debian's libnode.so.108 and node 20 compile them
 * to), which moving-prog.c copies far away and runs there, as V8 does with
 * short builtin calls. The blob is position-independent: calls inside it
 * are rel32 and move with it. Laid out by hand: what lies within 128 bytes
 * of what matters. */
        .text
        .globl Builtins_Add, Builtins_Mul3, Builtins_SumTo, before_blob, after_blob, after_blob_big, outside_fn
        .hidden Builtins_Add, Builtins_Mul3, Builtins_SumTo   /* gone when stripped, as V8's */

/* More than 128 bytes without padding right before the blob: no
 * trampoline room there. 6 */
        .p2align 4, 0xcc
        .type before_blob,@function
before_blob:
        .cfi_startproc
        .fill 160, 1, 0x90
        mov $6, %eax
        ret
        .cfi_endproc
        .size before_blob, .-before_blob
v8_Default_embedded_blob_code_:

/* a + b (the blob needs no alignment of its own here) */
        .type Builtins_Add,@function
Builtins_Add:
        .cfi_startproc
        lea (%rdi,%rsi), %rax
        ret
        .cfi_endproc
        .size Builtins_Add, .-Builtins_Add
        .p2align 4, 0xcc        /* padding inside the blob: no trampoline may go there */

/* 3 * a */
        .type Builtins_Mul3,@function
Builtins_Mul3:
        .cfi_startproc
        imul $3, %rdi, %rax
        ret
        .cfi_endproc
        .size Builtins_Mul3, .-Builtins_Mul3
        .p2align 4, 0xcc

/* 1 + 2 + ... + n, each step a call of Builtins_Add and of Builtins_Mul3
 * (3 * sum / 3): calls inside the blob */
        .type Builtins_SumTo,@function
Builtins_SumTo:
        .cfi_startproc
        push %rbx
        .cfi_adjust_cfa_offset 8
        push %r12
        .cfi_adjust_cfa_offset 8
        mov %rdi, %rbx
        xor %r12d, %r12d
1:      test %rbx, %rbx
        jz 2f
        mov %r12, %rdi
        mov %rbx, %rsi
        call Builtins_Add
        mov %rax, %rdi
        call Builtins_Mul3
        xor %edx, %edx
        mov $3, %ecx
        div %rcx
        mov %rax, %r12
        dec %rbx
        jmp 1b
2:      mov %r12, %rax
        pop %r12
        .cfi_adjust_cfa_offset -8
        pop %rbx
        .cfi_adjust_cfa_offset -8
        ret
        .cfi_endproc
        .size Builtins_SumTo, .-Builtins_SumTo
        .p2align 4, 0xcc

/* A jump out of the blob into the DCR of outside_fn (never run: the copy
 * would land elsewhere): the branch may not be re-pointed, since the blob's
 * bytes stay as they are. */
        .type Builtins_Tail,@function
Builtins_Tail:
        .cfi_startproc
        jmp outside_fn_inside
        .cfi_endproc
        .size Builtins_Tail, .-Builtins_Tail
        .p2align 4, 0xcc
v8_Default_embedded_blob_code_end:

/* Right after the blob, too short for a jump and without padding of its
 * own: its short jump needs a trampoline within rel8 reach, and the only
 * padding there is the blob's. 7 */
        .type after_blob,@function
after_blob:
        .cfi_startproc
        mov $7, %al
        ret
        .cfi_endproc
        .size after_blob, .-after_blob
/* More than 127 bytes without padding: no other trampoline room near. 8 */
        .type after_blob_big,@function
after_blob_big:
        .cfi_startproc
        .fill 160, 1, 0x90
        mov $8, %eax
        ret
        .cfi_endproc
        .size after_blob_big, .-after_blob_big

/* outside_fn(x) = x + 5; its second instruction is the target of
 * Builtins_Tail's jump */
        .p2align 4, 0xcc
        .type outside_fn,@function
outside_fn:
        .cfi_startproc
        mov %rdi, %rax
outside_fn_inside:
        add $5, %rax
        ret
        .cfi_endproc
        .size outside_fn, .-outside_fn

/* The getters, exported (moving-prog.c links with -rdynamic): the blob's
 * start through a pointer (Debian's libnode.so.108: lea; mov (%rax)), its
 * size straight from .rodata (node 20) */
        .globl _ZN2v88internal23DefaultEmbeddedBlobCodeEv, _ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv
        .p2align 4, 0xcc
        .type _ZN2v88internal23DefaultEmbeddedBlobCodeEv,@function
_ZN2v88internal23DefaultEmbeddedBlobCodeEv:
        .cfi_startproc
        lea blob_code_ptr(%rip), %rax
        mov (%rax), %rax
        ret
        .cfi_endproc
        .size _ZN2v88internal23DefaultEmbeddedBlobCodeEv, .-_ZN2v88internal23DefaultEmbeddedBlobCodeEv
        .p2align 4, 0xcc
        .type _ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv,@function
_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv:
        .cfi_startproc
        mov v8_Default_embedded_blob_code_size_(%rip), %eax
        ret
        .cfi_endproc
        .size _ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv, .-_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv

        .section .rodata
        .p2align 2
v8_Default_embedded_blob_code_size_:
        .long v8_Default_embedded_blob_code_end - v8_Default_embedded_blob_code_

        .section .data.rel.ro, "aw"
        .p2align 3
blob_code_ptr:
        .quad v8_Default_embedded_blob_code_

        .section .note.GNU-stack, "", @progbits
