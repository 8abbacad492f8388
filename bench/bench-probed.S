/* Probe targets and call loops for bench/probe-bench.c, in assembly so the
 * probed entry instructions and the loops are exactly known. */
        .text
        .globl bench_probed, bench_base, bench_empty_loop, bench_loop, bench_base_loop
        .type bench_probed,@function
        .p2align 6
bench_probed:                   /* the probe goes on its entry: push, mov, xor = 6 bytes */
        push %rbp
        mov %rsp, %rbp
        xor %eax, %eax
        addq $1, bench_calls(%rip)
        pop %rbp
        ret
        .size bench_probed, .-bench_probed

        .type bench_base,@function
        .p2align 6
bench_base:                     /* the same function, never probed */
        push %rbp
        mov %rsp, %rbp
        xor %eax, %eax
        addq $1, bench_calls(%rip)
        pop %rbp
        ret
        .size bench_base, .-bench_base

/* void bench_loop(long n): calls bench_probed n times (likewise the others) */
        .type bench_loop,@function
        .p2align 6
bench_loop:
        push %rbx
        mov %rdi, %rbx
        test %rbx, %rbx
        jle 2f
1:      call bench_probed
        dec %rbx
        jnz 1b
2:      pop %rbx
        ret
        .size bench_loop, .-bench_loop

        .type bench_base_loop,@function
        .p2align 6
bench_base_loop:
        push %rbx
        mov %rdi, %rbx
        test %rbx, %rbx
        jle 2f
1:      call bench_base
        dec %rbx
        jnz 1b
2:      pop %rbx
        ret
        .size bench_base_loop, .-bench_base_loop

        .type bench_empty_loop,@function
        .p2align 6
bench_empty_loop:
        test %rdi, %rdi
        jle 2f
1:      dec %rdi
        jnz 1b
2:      ret
        .size bench_empty_loop, .-bench_empty_loop

        .data
        .globl bench_calls
bench_calls: .quad 0
        .section .note.GNU-stack,"",@progbits
