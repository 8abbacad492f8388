/*
 * t/reloc.t: one function per instruction shape a DCR copy must relocate
 * (reloc-main.c calls each and prints what it returned and where its
 * callee was called from). Every s_* function is probed with --probe '*';
 * the callees rs_callee* are global labels of no type (no probe of their
 * own), so that they may be called with any stack alignment. Offsets in
 * the comments: what the DCR at +0 holds.
 */
        .text

/* callees: %rdi (rs_callee) or %rsi (rs_callee_si) -> 3x + 1, and the
 * return address they were called with in rs_last_ret */
        .globl rs_callee, rs_callee_si
rs_callee:
        mov (%rsp), %rax
        mov %rax, rs_last_ret(%rip)
        lea 1(%rdi,%rdi,2), %rax
        ret
rs_callee_si:
        mov (%rsp), %rax
        mov %rax, rs_last_ret(%rip)
        lea 1(%rsi,%rsi,2), %rax
        ret

#define FN(name) .globl name; .type name,@function; .p2align 4; name:
#define END(name) .size name, .-name

/* jmp *disp(%rip) at the entry: a tail call through a pointer in memory */
FN(s_jmp_rip)                   /* x */
        jmp *rs_fp(%rip)        /* 6 */
END(s_jmp_rip)

/* the same through the GOT, to libc (a GOT tail jump) */
FN(s_jmp_got)                   /* x -> labs(x) */
        jmp *labs@GOTPCREL(%rip)
END(s_jmp_got)

/* call *disp(%rip) ending the DCR (-fno-plt) */
FN(s_call_rip_end)              /* x */
        push %rbx               /* 1 */
        call *rs_fp(%rip)       /* 6: ends the DCR */
        pop %rbx
        ret
END(s_call_rip_end)

FN(s_call_got_end)              /* x -> labs(x) */
        push %rbx
        call *labs@GOTPCREL(%rip)
        pop %rbx
        ret
END(s_call_got_end)

/* call *%rax ending the DCR */
FN(s_call_rax)                  /* x, fn */
        push %rbx               /* 1 */
        mov %rsi, %rax          /* 3 */
        call *%rax              /* 2: ends the DCR */
        pop %rbx
        ret
END(s_call_rax)

/* call *8(%rsp): a stack operand the emulation's push moves */
FN(s_call_rsp8)                 /* x, fn */
        push %rsi               /* 1 */
        push %rsi               /* 1: 8(%rsp) is fn */
        push %rsi               /* 1 */
        call *8(%rsp)           /* 4: ends the DCR */
        add $24, %rsp
        ret
END(s_call_rsp8)

/* call *(%rdi): through a pointer an argument points to */
FN(s_call_mem)                  /* &fnptr, x */
        sub $8, %rsp            /* 4 */
        call *(%rdi)            /* 2: ends the DCR (callee takes %rsi) */
        add $8, %rsp
        ret
END(s_call_mem)

/* call *%rsi that does not end the DCR (the analysis lets an indirect
 * call stay inside one) */
FN(s_call_mid)                  /* x, fn */
        call *%rsi              /* 2: the callee sees the stack unaligned, and does not care */
        add $1, %rax            /* 4 */
        ret
END(s_call_mid)

/* jmp *%rax */
FN(s_jmp_rax)                   /* x, fn */
        mov %rsi, %rax          /* 3 */
        jmp *%rax               /* 2 */
END(s_jmp_rax)

/* jcc rel8 inside the DCR, to a target after it */
FN(s_jcc)                       /* x -> x ? x + 1 : -1 */
        test %edi, %edi         /* 2 */
        je 1f                   /* 2: rel8 */
        lea 1(%rdi), %eax       /* 3 */
        ret
1:      mov $-1, %eax
        ret
END(s_jcc)

/* RIP-relative load, store, lea */
FN(s_rip_load)                  /* x -> rs_var + x */
        mov rs_var(%rip), %eax  /* 6 */
        add %edi, %eax
        ret
END(s_rip_load)

FN(s_rip_store)                 /* x: rs_var = x */
        mov %edi, rs_var(%rip)  /* 6 */
        ret
END(s_rip_store)

FN(s_rip_lea)                   /* -> &rs_var */
        lea rs_var(%rip), %rax  /* 7 */
        ret
END(s_rip_lea)

/* RIP-relative with an immediate after the displacement */
FN(s_cmpl_imm)                  /* -> rs_var == 1 */
        cmpl $1, rs_var(%rip)   /* 7: imm8 after disp32 */
        sete %al
        movzbl %al, %eax
        ret
END(s_cmpl_imm)

FN(s_movq_imm)                  /* rs_var64 = 0x12345 */
        movq $0x12345, rs_var64(%rip)   /* 11: imm32 after disp32 */
        mov rs_var64(%rip), %rax
        ret
END(s_movq_imm)

FN(s_movb_imm)                  /* rs_bytes[1] = 0x5a */
        movb $0x5a, rs_bytes+1(%rip)    /* 7 */
        movzbl rs_bytes+1(%rip), %eax
        ret
END(s_movb_imm)

FN(s_cmpw_imm)                  /* -> (uint16_t)rs_var == 0x1234 */
        cmpw $0x1234, rs_var(%rip)      /* 9: 66 prefix, imm16 */
        sete %al
        movzbl %al, %eax
        ret
END(s_cmpw_imm)

FN(s_lock_inc)                  /* ++rs_var, locked */
        lock incl rs_var(%rip)  /* 7 */
        mov rs_var(%rip), %eax
        ret
END(s_lock_inc)

/* RIP-relative SSE, AVX (VEX) and AVX-512 (EVEX) forms */
FN(s_sse)                       /* -> 2 * rs_dbl */
        movsd rs_dbl(%rip), %xmm0       /* 8 */
        addsd %xmm0, %xmm0
        ret
END(s_sse)

FN(s_sse_packed)                /* rs_out = rs_vec + rs_vec (4 x int32) */
        movdqa rs_vec(%rip), %xmm0      /* 8 */
        paddd rs_vec(%rip), %xmm0
        movdqa %xmm0, rs_out(%rip)
        ret
END(s_sse_packed)

FN(s_avx)                       /* rs_out = rs_vec + rs_vec (8 x int32) */
        vmovdqu rs_vec(%rip), %ymm0     /* 8: VEX */
        vpaddd rs_vec(%rip), %ymm0, %ymm0
        vmovdqu %ymm0, rs_out(%rip)
        vzeroupper
        ret
END(s_avx)

FN(s_avx512)                    /* rs_out = rs_vec + rs_vec (8 x int64) */
        vmovdqu64 rs_vec(%rip), %zmm1   /* 10: EVEX */
        vpaddq rs_vec(%rip), %zmm1, %zmm1
        vmovdqu64 %zmm1, rs_out(%rip)
        vzeroupper
        ret
END(s_avx512)

/* call rel32 ending the DCR */
FN(s_call_rel_end)              /* x */
        push %rbx               /* 1 */
        call rs_callee          /* 5: ends the DCR */
        pop %rbx
        ret
END(s_call_rel_end)

/* an int3 probe whose instruction is an indirect call: a loop comes back
 * to +2, inside the DCR (jump-into-dcr), so +0 gets an int3 and an
 * out-of-line copy of the call alone */
FN(s_int3_call)                 /* x > 0, fn -> fn(x) + x */
        call *%rsi              /* 2: the int3 entry's instruction */
1:      add $1, %rax            /* +2: the loop's target */
        sub $1, %edi
        jne 1b
        ret
END(s_int3_call)

/* an int3 probe on a RIP-relative load: the function has an indirect jump
 * through an address taken inside it (indirect-jump) */
FN(s_int3_rip)                  /* x -> rs_var + x */
        mov rs_var(%rip), %eax  /* 6 */
        add %edi, %eax
        lea 1f(%rip), %rcx
        jmp *%rcx
1:      ret
END(s_int3_rip)

        .section .data.rel.ro, "aw"
        .p2align 3
        .globl rs_fp, rs_fpp
rs_fp:  .quad rs_callee
rs_fpp: .quad rs_callee_si

        .data
        .p2align 6
        .globl rs_var, rs_var64, rs_bytes, rs_dbl, rs_vec, rs_out, rs_last_ret
rs_vec: .quad 1, 2, 3, 4, 5, 6, 7, 8
rs_out: .zero 64
rs_var: .long 7
        .p2align 3
rs_var64: .quad 0
rs_dbl: .double 1.25
rs_last_ret: .quad 0
rs_bytes: .byte 1, 2, 3, 4

        .section .note.GNU-stack, "", @progbits
