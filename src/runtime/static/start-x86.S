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
 *                (dead at a call entry); a guard's or an event's point
 *                calls C with pt_regs, on one of the runtime's stacks
 *   kprs_dispatch_entry  inline and shared detours' call (the first
 *                slot): pt_regs completed, then C (init.c)
 *   kprs_kret_enter  a return probe's detour's call (the third slot): the
 *                hit counted as kprs_enter counts it; the call is never
 *                taken (ZF set): a count-only return probe has nothing to
 *                run at the return, as in the user runtime
 *   kprs_sigreturn the restorer of the SIGTRAP handler
 */
#include "runtime/static/blob.h"

#include "kprewrite/ptrace.h"

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

/* An event only (the point in %rdx, %rax and %rdx pushed): with less than
 * a record's most free in the ring, the event is dropped here, with no
 * stack taken and no C (the ring's words only read: a full ring costs the
 * threads hitting it no written line), and on to \out; else to \full */
.macro DROP_IF_FULL full, out
        push    %rcx
        lea     kprs_head(%rip), %rax
        add     KPRS_HEAD_AREA_REL(%rax), %rax  /* the area */
        mov     KPRS_AREA_RING_HEAD(%rax), %rcx
        sub     KPRS_AREA_RING_TAIL(%rax), %rcx
        add     $KPRS_REC_MAX, %rcx
        cmp     KPRS_AREA_RING_SIZE(%rax), %rcx
        pop     %rcx
        jbe     \full
        lock incq KPRS_PT_DROPPED(%rdx)
        jmp     \out
.endm

/* A guard or an event (the point in %rdx; %rax and %rdx pushed below the
 * detour's return address, and \spoff more bytes above it before the
 * probed %rsp): pt_regs, then C (kprs_hit: the point, pt_regs; \mode 1:
 * its answer, did it hook the call, in %r11 at \out; \mode 2: a hooked
 * call's return, kprs_kret_ret with pt_regs, no point) on one of
 * the runtime's stacks, taken with a lock bts on the area's mask. None
 * free (more threads in C at once than stacks, or a signal handler's hit
 * meanwhile): on the stack it is on, unless the point is a Go function's,
 * whose goroutine stack may be a few KiB: then a guard runs there all the
 * same (the report must be printed), an event is dropped. Then to \out,
 * %rax and %rdx still pushed. What goes on the program's stack: the
 * detour's return address, 6 words. */
#define F_BIT 0                                 /* the frame, from %rbx: the stack's bit + 1 (0: none) */
#define F_PT 8                                  /* the point */
#define F_RBX 16
#define F_RCX 24
#define F_RDX 32
#define F_RAX 40
#define F_SP 56                                 /* (the return address at 48) the probed %rsp, + \spoff */
.macro FULL_PATH spoff, out, mode
        push    %rcx
        push    %rbx
        push    %rdx
        push    $0
        mov     %rsp, %rbx
        lea     kprs_head(%rip), %rcx
        add     KPRS_HEAD_AREA_REL(%rcx), %rcx  /* the area */
.Ltake\@:
        mov     KPRS_AREA_STACK_BUSY(%rcx), %rax
        not     %eax
        and     $((1 << KPRS_STACKS) - 1), %eax
        jz      .Lnone\@
        bsf     %eax, %eax
        lock btsq %rax, KPRS_AREA_STACK_BUSY(%rcx)
        jc      .Ltake\@                        /* taken meanwhile */
        lea     1(%rax), %rdx
        mov     %rdx, F_BIT(%rbx)
        shl     $KPRS_STACK_SHIFT, %rdx
        add     KPRS_AREA_STACKS(%rcx), %rdx    /* its top */
        mov     %rdx, %rsp
        jmp     .Lregs\@
.Lnone\@:
.if \mode != 2
        mov     F_PT(%rbx), %rdx
        cmpb    $0, KPRS_PT_GUARD(%rdx)
        jne     .Lregs\@
        cmpb    $0, KPRS_PT_GO(%rdx)
        je      .Lregs\@
        lock incq KPRS_PT_DROPPED(%rdx)         /* a Go point's event, no stack free */
        movq    $0, F_PT(%rbx)                  /* (not hooked) */
        jmp     .Ldone\@
.endif
.Lregs\@:
        and     $-16, %rsp
        sub     $(PTREGS_SIZE + 8), %rsp
        mov     %r15, PTREGS_R15(%rsp)
        mov     %r14, PTREGS_R14(%rsp)
        mov     %r13, PTREGS_R13(%rsp)
        mov     %r12, PTREGS_R12(%rsp)
        mov     %rbp, PTREGS_BP(%rsp)
        mov     F_RBX(%rbx), %rax
        mov     %rax, PTREGS_BX(%rsp)
        mov     %r11, PTREGS_R11(%rsp)
        mov     %r10, PTREGS_R10(%rsp)
        mov     %r9, PTREGS_R9(%rsp)
        mov     %r8, PTREGS_R8(%rsp)
        mov     F_RAX(%rbx), %rax
        mov     %rax, PTREGS_AX(%rsp)
        mov     F_RCX(%rbx), %rax
        mov     %rax, PTREGS_CX(%rsp)
        mov     F_RDX(%rbx), %rax
        mov     %rax, PTREGS_DX(%rsp)
        mov     %rsi, PTREGS_SI(%rsp)
        mov     %rdi, PTREGS_DI(%rsp)
        movq    $-1, PTREGS_ORIG_AX(%rsp)
        movq    $0, PTREGS_IP(%rsp)             /* (kprs_hit: the point's site) */
        movq    $0x33, PTREGS_CS(%rsp)
        pushfq
        pop     %rax
        mov     %rax, PTREGS_FLAGS(%rsp)
        lea     (F_SP + \spoff)(%rbx), %rax
        mov     %rax, PTREGS_SP(%rsp)
        movq    $0x2b, PTREGS_SS(%rsp)
.if \mode == 2
        mov     %rsp, %rdi
        call    kprs_kret_ret
.else
        mov     F_PT(%rbx), %rdi
        mov     %rsp, %rsi
        mov     $1, %edx                        /* a call may be hooked */
        call    kprs_hit
        mov     %rax, F_PT(%rbx)                /* (the answer) */
.endif
        mov     PTREGS_R11(%rsp), %r11          /* the caller-saved registers C may have used */
        mov     PTREGS_R10(%rsp), %r10
        mov     PTREGS_R9(%rsp), %r9
        mov     PTREGS_R8(%rsp), %r8
        mov     PTREGS_SI(%rsp), %rsi
        mov     PTREGS_DI(%rsp), %rdi
        mov     F_BIT(%rbx), %rax
        test    %rax, %rax
        jz      .Ldone\@
        dec     %rax
        lea     kprs_head(%rip), %rcx
        add     KPRS_HEAD_AREA_REL(%rcx), %rcx
        lock btrq %rax, KPRS_AREA_STACK_BUSY(%rcx)
.Ldone\@:
.if \mode == 1
        mov     F_PT(%rbx), %r11                /* the answer */
.endif
        lea     16(%rbx), %rsp                  /* past the bit and the point */
        pop     %rbx
        pop     %rcx
        jmp     \out
.endm

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
        jz      .Lenter_out                     /* before kprs_init: not counted */
        cmpb    $0, KPRS_PT_DISABLED(%rdx)
        jne     .Lenter_out
        lock incq KPRS_PT_HITS(%rdx)
        cmpb    $0, KPRS_PT_GUARD(%rdx)
        jne     .Lenter_full
        cmpw    $0, KPRS_PT_EV(%rdx)
        je      .Lenter_out
        cmpb    $0, KPRS_PT_EV_OFF(%rdx)        /* untraced (ctl untrace): counted only */
        je      .Lenter_event
.Lenter_out:
        pop     %rdx
        pop     %rax
        ret
.Lenter_event:
        DROP_IF_FULL .Lenter_full, .Lenter_out
.Lenter_full:
        FULL_PATH 0, .Lenter_out, 0
        .size   kprs_enter, .-kprs_enter

/* An inline or shared detour's call of the dispatcher (the first slot):
 * %rdi the state, %rsi pt_regs with the caller-saved registers and the
 * flags stored; the callee-saved ones are stored here (C would keep them
 * but not show them), then C (init.c) on the stack it is on (a Go
 * function has no such detour: go-stack) */
        .globl  kprs_dispatch_entry
        .hidden kprs_dispatch_entry
        .type   kprs_dispatch_entry, @function
kprs_dispatch_entry:
        mov     %r15, PTREGS_R15(%rsi)
        mov     %r14, PTREGS_R14(%rsi)
        mov     %r13, PTREGS_R13(%rsi)
        mov     %r12, PTREGS_R12(%rsi)
        mov     %rbp, PTREGS_BP(%rsi)
        mov     %rbx, PTREGS_BX(%rsi)
        lea     (PTREGS_SIZE + 128)(%rsi), %rax /* the probed %rsp: above pt_regs and the red zone */
        mov     %rax, PTREGS_SP(%rsi)
        jmp     kprs_dispatch
        .size   kprs_dispatch_entry, .-kprs_dispatch_entry

/* %r11 = the state's address + 1 (the detour saved %r11 and pops it);
 * every other register kept, the flags dead at a function entry. The call
 * is taken (ZF clear, %r11 non-zero) only for a return event whose call C
 * hooked (hook.c): a count-only return probe has nothing to run at the
 * return. A return point serves entry events and guards too: as
 * kprs_enter's, with the probed %r11 from the detour's push (above the
 * return address: the probed %rsp 8 bytes further up). */
        .globl  kprs_kret_enter
        .hidden kprs_kret_enter
        .type   kprs_kret_enter, @function
kprs_kret_enter:
        and     $-8, %r11                       /* the state, without the tag */
        mov     (%r11), %r11                    /* state->rt: the point */
        test    %r11, %r11
        jz      1f
        cmpb    $0, KPRS_PT_DISABLED(%r11)
        jne     1f
        lock incq KPRS_PT_HITS(%r11)
        cmpb    $0, KPRS_PT_GUARD(%r11)
        jne     2f
        cmpw    $0, KPRS_PT_EV(%r11)
        je      1f
        cmpb    $0, KPRS_PT_EV_OFF(%r11)        /* untraced: counted only, no call hooked */
        je      2f
1:      xor     %r11d, %r11d                    /* ZF set: not taken */
        ret
2:      push    %rax
        push    %rdx
        mov     %r11, %rdx                      /* the point */
        mov     24(%rsp), %r11                  /* the probed %r11 (the detour's push) */
        cmpb    $0, KPRS_PT_GUARD(%rdx)
        jne     .Lkret_full
        cmpb    $0, KPRS_PT_RET(%rdx)           /* a return event: nothing recorded at the entry */
        jne     .Lkret_full
        DROP_IF_FULL .Lkret_full, .Lkret_none
.Lkret_full:
        FULL_PATH 8, .Lkret_out, 1
.Lkret_none:
        xor     %r11d, %r11d
.Lkret_out:
        pop     %rdx
        pop     %rax
        test    %r11, %r11                      /* the answer in ZF (the detour pops %r11) */
        ret
        .size   kprs_kret_enter, .-kprs_kret_enter

/* A hooked call returns into its detour, which jumps here (detour.c: the
 * return slot) with %rsp = S + 8, S the slot of the return address, which
 * holds the hook now: C (kprs_kret_ret, on one of the runtime's stacks)
 * puts the real return address there and records the event; every
 * general register is kept (the return value's rax and rdx, and any a
 * caller may keep across the call: -fipa-ra), the xmm ones are never
 * touched (the blob is built -mgeneral-regs-only), the flags are dead at
 * a return. Then ret: to the caller. */
        .globl  kprs_kret_return
        .hidden kprs_kret_return
        .type   kprs_kret_return, @function
kprs_kret_return:
        lea     -8(%rsp), %rsp                  /* S */
        push    %rax
        push    %rdx
        FULL_PATH 0, .Lret_out, 2
.Lret_out:
        pop     %rdx
        pop     %rax
        ret
        .size   kprs_kret_return, .-kprs_kret_return

        .globl  kprs_sigreturn
        .hidden kprs_sigreturn
        .type   kprs_sigreturn, @function
kprs_sigreturn:
        mov     $15, %eax                       /* rt_sigreturn */
        syscall
        .size   kprs_sigreturn, .-kprs_sigreturn

        .section .note.GNU-stack, "", @progbits
