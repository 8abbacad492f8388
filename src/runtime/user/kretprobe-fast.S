/*
 * The common cases of a return probe's hit, in assembly: a kretprobe hit
 * is two passes through the runtime (entry and return), and in C each
 * cost twice its work in prologues, spills and re-derived addresses
 * (measured: 126 instructions of C a hit, 3.1x a kprobe hit's time).
 *
 *   __kprewrite_kret_enter  the entry, from a return probe's detour, and
 *   rt_kretprobe_enter      from dispatch.S, when the point's only handler
 *                           is a kretprobe with no entry_handler: take an
 *                           instance from the thread's cache, fill it, put
 *                           it first on the thread's hooked calls
 *   __kprewrite_kret_return the return, jumped to by the detour: the return
 *   __kprewrite_return      frame around it, or called by a frame in the
 *                           image (the int3 path, older pools): the thread's
 *                           newest hooked call returns, outside any
 *                           handler, with no FPU handler: run the handler,
 *                           give the instance back to the cache
 *
 * Anything else goes to the C in kretprobe.c, which holds the reasons
 * (stale instances, an empty cache, a thief at work, the int3 path).
 */
#include "rt-offsets.h"
#include "kprewrite/ptrace.h"


/*
 * Take a free instance of holder \h for the call whose return address is
 * at \slot, and make it the thread's newest hooked call (\ri). rax =
 * rt_self's TLS offset. To \miss, having changed nothing, when a thief is
 * at work, an older call waits at \slot (C reclaims it), or neither the
 * thread's hot place (free when its __slot is NULL, see kretprobe.c) nor
 * \h's home way has one. \ractive and \tmp are
 * scratch, and so is \h once the call is taken. TAKE_CACHED is the common
 * path, TAKE_CACHED_COLD the rest, placed apart by the caller. ri->rp is
 * set since registration, and a cached instance was given back by this
 * thread, so its thread is set too.
 *
 * The stores come in runs to one cache line (the thread's, the
 * instance's, the thread's): the core writes stores to the cache in
 * program order, two in a cycle only when both are to one line, and a
 * hit's forty stores are most of its time (measured here: 8 stores a
 * loop take 1.05 ns to one line, 2.15 ns alternating between two).
 */

.macro TAKE_CACHED name, h, slot, ri, ractive, tmp, miss
        cmpl    $0, %fs:TH_STEAL(%rax)
        jne     \miss
        mov     %fs:TH_RACTIVE(%rax), \ractive  /* the thread's hooked calls */
        test    \ractive, \ractive
        jnz     .L\name\()_walk
.L\name\()_hot:
        mov     %fs:TH_HOT(%rax), \ri           /* the last instance given back */
        test    \ri, \ri
        jz      .L\name\()_way
        cmp     \h, RI_HOLDER(\ri)
        jne     .L\name\()_way
        cmpq    $0, RI_SLOT(\ri)                /* in use by an outer call */
        jne     .L\name\()_way
.L\name\()_fill:                                /* the hot place stays as it is */
        mov     (\slot), \tmp
        mov     \tmp, RI_RET(\ri)
        mov     \slot, RI_SLOT(\ri)
        mov     \ractive, RI_NEXT(\ri)
        mov     \ri, %fs:TH_RACTIVE(%rax)
.endm

.macro TAKE_CACHED_COLD name, h, slot, ri, ractive, tmp, miss
.L\name\()_walk:
        mov     \ractive, \ri
1:      cmp     \slot, RI_SLOT(\ri)             /* an older call at this slot is dead: */
        je      \miss                           /* C reclaims it */
        mov     RI_NEXT(\ri), \ri
        test    \ri, \ri
        jnz     1b
        jmp     .L\name\()_hot
.L\name\()_way:
        movslq  H_KC_OFF(\h), \tmp
        add     %rax, \tmp                      /* the holder's home way: a TLS offset */
        cmp     \h, %fs:KC_HOLDER(\tmp)
        jne     \miss
        mov     %fs:KC_HEAD(\tmp), \ri
        test    \ri, \ri
        jz      \miss
        mov     RI_NEXT(\ri), \h                /* taken: \h is free */
        mov     \h, %fs:KC_HEAD(\tmp)
        decl    %fs:KC_N(\tmp)
        jmp     .L\name\()_fill
.endm

        .text
/*
 * rt_kretprobe_enter: rdi = the kretprobe, rsi = the return address's
 * slot, rdx = the point, rax = rt_self's TLS offset; the thread is marked
 * as running the point's handlers (what keeps thieves off its cache and
 * what unregister waits on), which this ends. Returns non-zero when the
 * call is taken. Reached by a jmp from __kprewrite_dispatch: it may use
 * the caller-saved registers only (the detour saved those, not the rest).
 */
        .globl  rt_kretprobe_enter
        .hidden rt_kretprobe_enter
        .type   rt_kretprobe_enter, @function
        .p2align 5
rt_kretprobe_enter:
        testl   $KPROBE_FLAG_DISABLED_VALUE, KP_FLAGS(%rdi)
        jnz     .Lnot_taken
        mov     KRP_HOLDER(%rdi), %r8           /* its holder */
        TAKE_CACHED enter, %r8, %rsi, %r10, %r11, %rcx, .Lenter_c
        movq    $0, %fs:TH_RUNNING(%rax)        /* the mark ends after the cache */
        mov     $1, %eax
        ret
        TAKE_CACHED_COLD enter, %r8, %rsi, %r10, %r11, %rcx, .Lenter_c
.Lnot_taken:
        movq    $0, %fs:TH_RUNNING(%rax)
        xor     %eax, %eax
        ret
.Lenter_c:
        jmp     rt_kretprobe_fast_entry         /* (rp, slot) */
        .size   rt_kretprobe_enter, .-rt_kretprobe_enter

/*
 * __kprewrite_kret_enter: a return probe's detour calls this at the probed
 * function's entry (x86_emit_detour), through the pool's third slot, with
 * %r11 = the probe's state. It keeps every register but %r11 and the
 * flags and answers in %r11 and ZF: non-zero (ZF clear) when a kretprobe
 * took the call (the detour then calls the function from the return
 * slot, so that it returns into the detour).
 *
 * The detour saves %r11 itself (push %r11 before the call, pop after it):
 * GCC's -fipa-ra lets a caller keep a value in any register a callee is
 * known to leave alone, r11 included, so a probe may change no register
 * the original instructions did not. Such a detour passes the state's
 * address + 1 (states are 8-aligned): the return slot is then 8 bytes
 * further up, above the saved %r11. Detours baked before that pass the
 * state itself, and lose %r11.
 *
 * Here: the point's only handler an enabled kretprobe with no
 * entry_handler (pt->kret), or no handler at all. The hit is counted,
 * then the instance comes from the thread's hot place or home way, or
 * from C (rt_kretprobe_take_c) when neither has one. Anything else builds
 * the pt_regs an ordinary detour builds (below the red zone, as if the
 * detour had) and goes through __kprewrite_dispatch; pt_regs.r11 shows
 * the probed code's r11 (the saved one; a handler's write to it takes
 * effect), or, from an older detour, the state's address.
 */
#define KSAVED 5                                /* registers pushed below */
#define KSLOT ((KSAVED + 1) * 8)                /* the return slot: the probed %rsp */
#define UPPER (PTREGS_SIZE - PTREGS_ORIG_AX)    /* pt_regs above the pushed registers */
.macro KRESTORE                                 /* the KSAVED registers */
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rax
.endm
/* The slow way: the frame of an ordinary detour, whose %rsp would be
 * the probed %rsp, \above bytes over ours (the detour's return address,
 * and the r11 it saved when it did), and the dispatcher. */
.macro KSLOW_FRAME above
        lea     -(128 + UPPER - \above)(%rsp), %rsp
        PUSH_CALLER_SAVED
        lea     -PTREGS_R11(%rsp), %rsp
        mov     %r11, %rdi
        and     $-8, %rdi                       /* the state */
.if \above == 16
        mov     (PTREGS_SIZE + 128 - 8)(%rsp), %rax  /* the probed code's r11 */
        mov     %rax, PTREGS_R11(%rsp)
.endif
        mov     %rsp, %rsi
        and     $-16, %rsp                      /* as the detour does for a caller */
        push    %rsi                            /* that broke the ABI's alignment */
        push    %rsi
        call    rt_dispatch                     /* (state, regs): did a kretprobe take it? */
        pop     %rsp
        mov     %rax, PTREGS_ORIG_AX(%rsp)
.if \above == 16
        mov     PTREGS_R11(%rsp), %rax          /* a handler's write takes effect: */
        mov     %rax, (PTREGS_SIZE + 128 - 8)(%rsp)  /* the detour pops it */
.endif
        lea     PTREGS_R11(%rsp), %rsp
        POP_CALLER_SAVED
        mov     (%rsp), %r11                    /* the answer, at orig_ax */
        lea     (128 + UPPER - \above)(%rsp), %rsp
        test    %r11, %r11
        ret
.endm
        .globl  __kprewrite_kret_enter
        .type   __kprewrite_kret_enter, @function
        .p2align 5
__kprewrite_kret_enter:
        push    %rax
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        mov     %r11, %rdx
        and     $-8, %rdx                       /* the state, without the tag */
        mov     ST_RT(%rdx), %rdx               /* the point */
        test    %rdx, %rdx
        jz      .Lk_slow
        THREAD_COUNTER .Lk_slow
        mov     PT_KRET(%rdx), %rsi
        test    %rsi, %rsi
        jnz     1f
        cmpq    $0, PT_HANDLERS(%rdx)           /* handlers, but not only a plain kretprobe */
        jne     .Lk_slow
1:      COUNT_WINDOW rt_kret_count_window, .Lk_off, %rdi
        /* counted: from here on, C (.Lk_c) is the way out, not the
         * dispatcher, and the state in %r11 is no longer needed */
        test    %rsi, %rsi
        jz      .Lk_off                         /* no handler: count only */
        /* The mark comes only now, for a hit that will take an instance
         * (a count-only hit stores nothing into the thread), and h is read
         * again under it: NULL means unregistered since */
        mov     %rdx, %fs:TH_RUNNING(%rax)      /* the mark, before h is read */
        mov     PT_KRET(%rdx), %rdx             /* h */
        test    %rdx, %rdx
        jz      .Lk_none
        lea     KSLOT(%rsp), %rcx               /* the slot */
        test    $1, %r11b                       /* above the detour's saved r11 */
        jz      2f
        add     $8, %rcx
2:      TAKE_CACHED kret, %rdx, %rcx, %rdi, %rsi, %r11, .Lk_c
        movq    $0, %fs:TH_RUNNING(%rax)
        mov     $1, %r11d
.Lk_out:
        KRESTORE
        test    %r11, %r11                      /* the answer in ZF too */
        ret
        TAKE_CACHED_COLD kret, %rdx, %rcx, %rdi, %rsi, %r11, .Lk_c
.Lk_none:
        movq    $0, %fs:TH_RUNNING(%rax)
.Lk_off:
        xor     %r11d, %r11d
        jmp     .Lk_out
.Lk_c:  /* counted: C finds an instance, or counts a miss; it ends the mark */
        push    %r8
        push    %r9
        push    %r10
        push    %rbx
        mov     %rsp, %rbx
        and     $-16, %rsp                      /* whatever the caller's alignment */
        mov     %rdx, %rdi
        mov     %rcx, %rsi
        call    rt_kretprobe_take_c             /* (h, slot) */
        mov     %rbx, %rsp
        pop     %rbx
        pop     %r10
        pop     %r9
        pop     %r8
        mov     %rax, %r11
        jmp     .Lk_out
.Lk_slow:
        KRESTORE
        test    $1, %r11b
        jnz     .Lk_slow_saved
        KSLOW_FRAME 8
.Lk_slow_saved:
        KSLOW_FRAME 16
        .size   __kprewrite_kret_enter, .-__kprewrite_kret_enter

/*
 * The return of a hooked call: rdi = regs, just below the return slot,
 * with all fifteen general registers saved in it, reloaded from there
 * afterwards; rbx = regs too. May use every register but rbx and rsp.
 * To \done with rax = where the probed function really returns to, or to
 * \slow (regs in rdi, the thread unmarked) when C must decide: the
 * returning call is not the thread's newest hooked call (stale ones on
 * top), a return inside a handler, or no plain handler to call (disabled,
 * FPU, unregistered). \pad: what aligns %rsp to 16 for the handler call.
 */
.macro RETURN_FAST name, done, slow, pad
        mov     rt_self@gottpoff(%rip), %rbp
        mov     %fs:TH_RACTIVE(%rbp), %r12      /* ri: the newest hooked call */
        test    %r12, %r12
        jz      \slow
        lea     PTREGS_SIZE(%rdi), %r13         /* the slot */
        cmp     %r13, RI_SLOT(%r12)
        jne     \slow                           /* not the newest: stale ones on top */
        mov     RI_NEXT(%r12), %rcx
        test    %rcx, %rcx
        jz      1f
        cmp     %r13, RI_SLOT(%rcx)             /* a tail call's: C says where the */
        je      \slow                           /* outer call returns (regs->ip) */
1:
        cmpq    $0, %fs:TH_RUNNING(%rbp)
        jne     \slow                           /* a return inside a handler */
        /* what a return handler sees besides the registers (C fills
         * them again), stored beside the registers' (see TAKE_CACHED) */
        mov     RI_RET(%r12), %r15
        lea     8(%r13), %rdx
        movq    $-1, PTREGS_ORIG_AX(%rdi)       /* in address order */
        mov     %r15, PTREGS_IP(%rdi)
        movq    $0x202, PTREGS_FLAGS(%rdi)
        mov     %rdx, PTREGS_SP(%rdi)
        mov     RI_HOLDER(%r12), %r14           /* h */
        mov     H_PT(%r14), %rax
        mov     %rax, %fs:TH_RUNNING(%rbp)      /* the mark, then the handler is read */
        mov     H_FAST(%r14), %rax              /* the handler; NULL: C decides */
        test    %rax, %rax                      /* (disabled, FPU, unregistered) */
        jz      .L\name\()_unmark
        mov     RI_NEXT(%r12), %rcx
        mov     %rcx, %fs:TH_RACTIVE(%rbp)
        mov     %rdi, %rsi
        mov     %r12, %rdi
.if \pad
        sub     $\pad, %rsp
.endif
        call    *%rax                           /* handler(ri, regs) */
.if \pad
        add     $\pad, %rsp
.endif
.L\name\()_put: /* ri back to the thread's hot place, or to its home way,
         * unless there is no cache, it is another's or full, or a thief is
         * at work */
        cmpl    $0, %fs:TH_STEAL(%rbp)
        jne     .L\name\()_put_c
        cmp     %r12, %fs:TH_HOT(%rbp)
        jne     2f
        movq    $0, RI_SLOT(%r12)               /* the hot one: free again, in place */
        jmp     .L\name\()_unmark_done
2:      cmpq    $0, %fs:TH_HOT(%rbp)
        jne     1f
        cmpl    $1, rt_kc_on(%rip)
        jne     .L\name\()_put_c
        cmpl    $0, %fs:TH_LISTED(%rbp)
        je      .L\name\()_put_c
        movq    $0, RI_SLOT(%r12)
        mov     %r12, %fs:TH_HOT(%rbp)
        jmp     .L\name\()_unmark_done
1:      mov     H_KC_OFF(%r14), %eax
        add     %rbp, %rax
        cmp     %r14, %fs:KC_HOLDER(%rax)       /* h's way: the thread is listed */
        jne     .L\name\()_put_c
        cmpl    $KC_MAX_VALUE, %fs:KC_N(%rax)
        jae     .L\name\()_put_c
        mov     %fs:KC_HEAD(%rax), %rdx
        mov     %rdx, RI_NEXT(%r12)
        mov     %r12, %fs:KC_HEAD(%rax)
        incl    %fs:KC_N(%rax)
.L\name\()_unmark_done:
        movq    $0, %fs:TH_RUNNING(%rbp)
        mov     %r15, %rax
        jmp     \done
.L\name\()_put_c:
        mov     %r14, %rdi
        mov     %r12, %rsi
.if \pad
        sub     $\pad, %rsp
.endif
        call    rt_kretprobe_put                /* (h, ri) */
.if \pad
        add     $\pad, %rsp
.endif
        jmp     .L\name\()_unmark_done
.L\name\()_unmark:
        movq    $0, %fs:TH_RUNNING(%rbp)        /* C marks the thread again */
        jmp     \slow
.endm

/*
 * unsigned long __kprewrite_return(struct pt_regs *regs): returns where
 * the probed function really returns to. regs sits just below the return
 * slot. Its callers, the image's return trampoline (the int3 path) and
 * the return frame of detours in pools without __kprewrite_kret_return
 * (src/arch/x86/detour.c), have saved all fifteen general registers in
 * regs and reload them from there afterwards, and keep regs in %rbx: so
 * this may use every register but %rbx and %rsp, and needs no saves of
 * its own.
 */
        .globl  __kprewrite_return
        .type   __kprewrite_return, @function
        .p2align 5
__kprewrite_return:
        RETURN_FAST ret, .Lret_done, .Lret_slow, 8
.Lret_done:
        ret
.Lret_slow:
        jmp     rt_kretprobe_return_slow        /* (regs) */
        .size   __kprewrite_return, .-__kprewrite_return

/*
 * __kprewrite_kret_return: a hooked call returns into its detour, which
 * jumps here (x86_emit_detour), with %rsp = S + 8, S the return slot.
 * The return frame: pt_regs below S with all fifteen general registers
 * (a handler sees them, and its writes take effect), the return's work,
 * the real return address at S, the registers back, and a `ret` that the
 * return stack buffer predicts (the caller's own call pushed it). Flags
 * are dead at a return (ABI). Jumped to rather than called by the detour,
 * which saves a call and a return a hit (0.4 ns of 8.4 measured).
 */
        .globl  __kprewrite_kret_return
        .type   __kprewrite_kret_return, @function
        .p2align 5
__kprewrite_kret_return:
        lea     -(8 + UPPER)(%rsp), %rsp        /* S - 8 .. S: ss ... orig_ax */
        PUSH_CALLER_SAVED
        PUSH_CALLEE_SAVED
        mov     %rsp, %rdi                      /* regs */
        mov     %rsp, %rbx
        and     $-16, %rsp                      /* whatever the function's alignment */
        RETURN_FAST frame, .Lframe_done, .Lframe_slow, 0
.Lframe_slow:
        call    rt_kretprobe_return_slow        /* (regs) */
.Lframe_done:
        mov     %rbx, %rsp
        mov     %rax, PTREGS_SIZE(%rsp)         /* at S */
        POP_CALLEE_SAVED
        POP_CALLER_SAVED
        lea     UPPER(%rsp), %rsp               /* %rsp = S */
        ret
        .size   __kprewrite_kret_return, .-__kprewrite_kret_return

        .section .note.GNU-stack,"",@progbits
