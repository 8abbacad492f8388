/*
 * __kprewrite_dispatch(struct kprw_state *st, struct pt_regs *regs): called
 * by every detour with %rsp = 8 mod 16. The detour has stored the
 * caller-saved registers (and the flags, when live) into regs; bx, bp and
 * r12-r15 still hold the probed code's values. The common cases are here:
 *
 *   count only   the thread's counter for the point, nothing else
 *   a kretprobe  the point's only handler, with no entry_handler: the
 *                instance is taken without pt_regs (kretprobe-fast.S)
 *   handlers     fill the rest of pt_regs, run the pre_handlers (newest
 *                first; what they return is ignored, as by the kernel's
 *                optimized_callback) with the thread marked as running them
 *                (the recursion guard, and what unregister_kprobe waits
 *                on), reload bx, bp, r12-r15 from pt_regs so that a
 *                handler's writes take effect
 *
 * Returns non-zero when a kretprobe's entry took the call: a return-probe
 * detour then hooks the function's return (detour.c).
 *
 * Everything else (first hit of a thread, a hit inside a handler, a hit
 * before the image registered, KPROBE_FLAG_FPU handlers, fault_handlers)
 * is in C, hits.c.
 * Written in assembly because C cannot leave the callee-saved registers
 * alone on the fast path and still show and take them on the slow one.
 */
#include "rt-offsets.h"
#include "kprewrite/ptrace.h"

/* the probed code's %rsp: above pt_regs and the red zone the detour skipped */
#define FRAME (PTREGS_SIZE + 128)

/* pt_regs at %rsi, its sp filled: the callee-saved registers, ip, orig_ax
 * and the flags (point %rdx; %rcx taken) */
.macro FILL_REST
        mov     %rbx, PTREGS_BX(%rsi)
        mov     %rbp, PTREGS_BP(%rsi)
        mov     %r12, PTREGS_R12(%rsi)
        mov     %r13, PTREGS_R13(%rsi)
        mov     %r14, PTREGS_R14(%rsi)
        mov     %r15, PTREGS_R15(%rsi)
        mov     PT_ADDR(%rdx), %rcx
        inc     %rcx                            /* addr + 1: as after the kernel's int3 */
        mov     %rcx, PTREGS_IP(%rsi)
        movq    $-1, PTREGS_ORIG_AX(%rsi)
        testb   $KPRW_F_FLAGS_SAVED_VALUE, PT_FLAGS(%rdx)
        jnz     1f
        movq    $0x202, PTREGS_FLAGS(%rsi)      /* dead flags: show IF and the fixed bit */
1:
.endm

        .text
        .globl  __kprewrite_dispatch
        .type   __kprewrite_dispatch, @function
        .globl  rt_dispatch                     /* the same, for calls from the runtime */
        .hidden rt_dispatch
        .p2align 5
__kprewrite_dispatch:
rt_dispatch:
        mov     ST_RT(%rdi), %rdx               /* struct point */
        test    %rdx, %rdx
        jz      .Lslow
        THREAD_COUNTER .Lslow
        COUNT_WINDOW rt_count_window, .Lret, %r8
        cmpq    $0, PT_HANDLERS(%rdx)
        jne     .Lhandlers
.Lret:
        xor     %eax, %eax                      /* no return probe took the call */
        ret

.Lslow:
        push    %rsi
        call    rt_dispatch_slow                /* the point if handlers run, or NULL */
        pop     %rsi
        test    %rax, %rax
        jz      .Lret
        mov     %rax, %rdx
        testb   $KPRW_F_GO_VALUE, PT_FLAGS(%rdx)
        mov     rt_self@gottpoff(%rip), %rax
        jnz     rt_dispatch_handlers_go

/* rdx = point, rsi = regs, rax = rt_self's TLS offset; the hit counted
 * (also the entry of a compact detour's hit with handlers, enter-fast.S) */
        .globl  rt_dispatch_handlers
        .hidden rt_dispatch_handlers
rt_dispatch_handlers:
.Lhandlers:
        mov     %rdx, %fs:TH_RUNNING(%rax)      /* before the handlers are read */
        /* The point's only handler a kretprobe with no entry_handler: no
         * pt_regs to show, so C takes the call from the return slot alone */
        mov     PT_HANDLERS(%rdx), %rcx
        test    %rcx, %rcx
        jz      .Lfill
        mov     KP_FLAGS(%rcx), %r8d
        and     $(KPROBE_FLAG_RT_RECORDER_VALUE | KPROBE_FLAG_DISABLED_VALUE), %r8d
        cmp     $KPROBE_FLAG_RT_RECORDER_VALUE, %r8d
        je      .Lrecorder
        lea     rt_kretprobe_entry(%rip), %r8
        cmp     %r8, KP_PRE_HANDLER(%rcx)
        jne     .Lfill
        cmpq    $0, KP_NEXT(%rcx)
        jne     .Lfill
        cmpq    $0, KRP_ENTRY_HANDLER(%rcx)
        jne     .Lfill
        mov     %rcx, %rdi
        lea     FRAME(%rsi), %rsi               /* the return slot: the probed %rsp */
        jmp     rt_kretprobe_enter              /* (rp, slot, point, rax): ends the mark */
/* The point's only handler an event's generated recorder, enabled, no
 * C path: its direct entry called alone (events.c, rt.h), which takes bx,
 * bp, r12-r15 from the registers and sp from where pt_regs is, and fills
 * the rest of pt_regs itself only when it hands the hit to C; no register
 * to reload after it, no kretprobe to ask about */
.Lrecorder:
        cmpq    $0, KP_NEXT(%rcx)
        jne     .Lfill
        cmpl    $0, PT_CPATH(%rdx)
        jne     .Lfill
        mov     %rcx, %rdi
        push    %rax                            /* rt_self's offset; %rsp 16-aligned */
        call    *KP_DIRECT(%rdi)                /* (kp, regs) */
        pop     %rax
        movq    $0, %fs:TH_RUNNING(%rax)
        xor     %eax, %eax                      /* no return probe took the call */
        ret
.Lfill:
        lea     FRAME(%rsi), %rcx
        mov     %rcx, PTREGS_SP(%rsi)
.Lfill_sp:
        FILL_REST
        mov     %rax, %r13                      /* rt_self's offset, for the end */
        cmpl    $0, PT_CPATH(%rdx)              /* KPROBE_FLAG_FPU, fault_handler: C */
        jne     .Lfpu
        mov     %rsi, %r12                      /* bx, r12, r13 come back from regs below */
        mov     PT_HANDLERS(%rdx), %rbx
        sub     $8, %rsp
        test    %rbx, %rbx                      /* unregistered meanwhile */
        jz      3f
.Lnext:
        testl   $KPROBE_FLAG_DISABLED_VALUE, KP_FLAGS(%rbx)
        jnz     2f
        mov     KP_PRE_HANDLER(%rbx), %rax
        test    %rax, %rax
        jz      2f
        mov     %rbx, %rdi
        mov     %r12, %rsi
        call    *%rax                           /* pre_handler(kp, regs) */
2:      mov     KP_NEXT(%rbx), %rbx
        test    %rbx, %rbx
        jnz     .Lnext
3:      add     $8, %rsp
.Ldone:
        movq    $0, %fs:TH_RUNNING(%r13)
        mov     %fs:TH_HOOK(%r13), %rax         /* did a kretprobe take the call? */
        movq    $0, %fs:TH_HOOK(%r13)           /* (the return-probe detour asks) */
        /* a handler's writes to bx, bp, r12-r15 take effect */
        mov     PTREGS_BX(%r12), %rbx
        mov     PTREGS_BP(%r12), %rbp
        mov     PTREGS_R13(%r12), %r13
        mov     PTREGS_R14(%r12), %r14
        mov     PTREGS_R15(%r12), %r15
        mov     PTREGS_R12(%r12), %r12
        ret

/* The same for a Go point (KPRW_F_GO): its regs are on the thread's
 * runtime stack, not below the probed %rsp, their sp filled already
 * (enter-fast.S); no kretprobe is there (Go functions get no return
 * point) */
        .globl  rt_dispatch_handlers_go
        .hidden rt_dispatch_handlers_go
rt_dispatch_handlers_go:
        mov     %rdx, %fs:TH_RUNNING(%rax)
        jmp     .Lfill_sp

.Lfpu:
        mov     %rsi, %r12
        sub     $8, %rsp
        mov     %rdx, %rdi
        call    rt_run_handlers_c               /* (point, regs): FPU saved, faults guarded */
        add     $8, %rsp
        jmp     .Ldone
        .size   __kprewrite_dispatch, .-__kprewrite_dispatch

        .section .note.GNU-stack,"",@progbits
