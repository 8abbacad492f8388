/*
 * The static runtime's entry points (x86-64). Position independent, no
 * relocations: the blob is copied as bytes into the image's pool.
 *
 *   kprs_head    the head the rewriter fills in (blob.h)
 *   kprs_start   e_entry: saves every register the kernel set, sets the
 *                runtime up (kprs_init, C) and restores them all, %rsp
 *                included, before it jumps to the program's entry: the
 *                program sees the stack, argc, argv, envp and auxv, and
 *                %rdx, exactly as the kernel left them (the jump goes
 *                through the word below the kernel's %rsp, which nothing
 *                else uses yet: no register is spent on it)
 *   kprs_enter   a compact detour's call (the pool's fifth slot):
 *                counts the hit keeping every register but the flags
 *                (dead at a call entry); a guard point calls C
 *   kprs_kret_enter  a return probe's detour's call (the third slot): the
 *                hit counted as kprs_enter counts it; the call is never
 *                taken (ZF set): a count-only return probe has nothing to
 *                run at the return, as in the user runtime
 *   kprs_sigreturn the restorer of the SIGTRAP handler
 */
#include "runtime/static/blob.h"

#define PT_HITS 0
#define PT_DISABLED 8
#define PT_GUARD 10
#define ENTER_HEAD 10                           /* R - the state word: 4 + 6 (x86_emit_compact_detour) */

        .section .kprs.head, "ax"
        .globl  kprs_head
        .hidden kprs_head
kprs_head:
        .long   0x5350524b                      /* KPRS_HEAD_MAGIC */
        .long   KPRS_VERSION
        .long   kprs_start - kprs_head
        .long   0
        .quad   0                               /* table_rel */
        .quad   0                               /* area_rel */
        .quad   0                               /* entry_rel */
        .quad   0                               /* sigaction_rel */
        .quad   0, 0                            /* exit_rel[KPRS_EXITS] */

        .text
        .globl  kprs_start
        .hidden kprs_start
        .type   kprs_start, @function
kprs_start:
        lea     -8(%rsp), %rsp                  /* the word the jump goes through */
        pushfq
        push    %rax
        push    %rbx
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        push    %rbp
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %r12
        push    %r13
        push    %r14
        push    %r15
        mov     %rsp, %rbx
        lea     (17 * 8)(%rsp), %rdi            /* the kernel's %rsp: argc */
        and     $-16, %rsp
        call    kprs_init
        lea     kprs_head(%rip), %rax
        add     32(%rax), %rax                  /* entry_rel: the program's entry */
        mov     %rax, (16 * 8)(%rbx)            /* the word below the kernel's %rsp */
        mov     %rbx, %rsp
        pop     %r15
        pop     %r14
        pop     %r13
        pop     %r12
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rbp
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rbx
        pop     %rax
        popfq
        lea     8(%rsp), %rsp                   /* the kernel's %rsp (lea: the flags stay) */
        jmp     *-8(%rsp)
        .size   kprs_start, .-kprs_start

        .globl  kprs_enter
        .hidden kprs_enter
        .type   kprs_enter, @function
kprs_enter:
        push    %rax
        push    %rdx
        mov     16(%rsp), %rdx                  /* R */
        movslq  -ENTER_HEAD(%rdx), %rax
        mov     (%rdx,%rax), %rdx               /* state->rt: the point */
        test    %rdx, %rdx
        jz      1f                              /* before kprs_init: not counted */
        cmpb    $0, PT_DISABLED(%rdx)
        jne     1f
        lock incq PT_HITS(%rdx)
        cmpb    $0, PT_GUARD(%rdx)
        jne     2f
1:      pop     %rdx
        pop     %rax
        ret
2:      /* a guard: C (point, the probed function's first two arguments),
         * every caller-saved register kept, on the guards' stack unless
         * another guard holds it (another thread's, or this one's that a
         * signal handler interrupted): then on the program's */
        push    %rcx
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %rbp
        push    %rbx
        mov     %rsp, %rbp
        lea     kprs_head(%rip), %rcx
        add     KPRS_HEAD_AREA_REL(%rcx), %rcx  /* the area */
        mov     $1, %ebx
        xchgb   %bl, KPRS_AREA_STACK_BUSY(%rcx)
        xor     $1, %ebx                        /* 1: this guard took the stack */
        jz      3f
        mov     KPRS_AREA_STACK_TOP(%rcx), %rsp
3:      and     $-16, %rsp
        mov     %rdx, %rax                      /* (rax is saved) */
        mov     %rsi, %rdx
        mov     %rdi, %rsi
        mov     %rax, %rdi
        call    kprs_guard
        mov     %rbp, %rsp
        test    %ebx, %ebx
        jz      4f
        lea     kprs_head(%rip), %rcx
        add     KPRS_HEAD_AREA_REL(%rcx), %rcx
        movb    $0, KPRS_AREA_STACK_BUSY(%rcx)  /* (a store releases on x86) */
4:      pop     %rbx
        pop     %rbp
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rcx
        jmp     1b
        .size   kprs_enter, .-kprs_enter

/* %r11 = the state's address + 1 (the detour saved %r11 and pops it);
 * every other register kept, the flags dead at a function entry */
        .globl  kprs_kret_enter
        .hidden kprs_kret_enter
        .type   kprs_kret_enter, @function
kprs_kret_enter:
        and     $-8, %r11                       /* the state, without the tag */
        mov     (%r11), %r11                    /* state->rt: the point */
        test    %r11, %r11
        jz      1f
        cmpb    $0, PT_DISABLED(%r11)
        jne     1f
        lock incq PT_HITS(%r11)
1:      xor     %r11d, %r11d                    /* ZF set: not taken */
        ret
        .size   kprs_kret_enter, .-kprs_kret_enter

        .globl  kprs_sigreturn
        .hidden kprs_sigreturn
        .type   kprs_sigreturn, @function
kprs_sigreturn:
        mov     $15, %eax                       /* rt_sigreturn */
        syscall
        .size   kprs_sigreturn, .-kprs_sigreturn

        .section .note.GNU-stack, "", @progbits
