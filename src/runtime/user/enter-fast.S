/*
 * __kprewrite_enter: the entry of a compact detour, a kprobe at a call
 * entry (x86_emit_compact_detour), through the pool's fifth slot:
 *
 *   D-4: .long state - R
 *   D:   call *enter_slot(%rip)     pushes R
 *   R:   relocated DCR; jmp site+dcr_len
 *
 * The detour saves nothing: this keeps every register (the flags are dead
 * at a call entry, and GCC treats them as clobbered by every call). The
 * common case, a point with no handler, only counts the hit in the
 * thread's counter: three registers saved, no frame, no call (the
 * dispatcher's count-only path costs the detour's nine saves and a call
 * more). A point with handlers (a kprobe, an event) counts here too and
 * goes to the dispatcher's handler part with the pt_regs an inline detour
 * builds, below the red zone. Anything else -- the thread's first hit, a
 * hit inside a handler, a pool not registered yet -- goes through the
 * whole dispatcher.
 */
#include "rt-offsets.h"
#include "kprewrite/ptrace.h"

#define ESAVED 3                                /* registers pushed below */
#define ENTER_HEAD 10                           /* R - the state word: 4 + 6 */
#define UPPER (PTREGS_SIZE - PTREGS_ORIG_AX)    /* pt_regs above the pushed registers */

        .text
        .globl  __kprewrite_enter
        .type   __kprewrite_enter, @function
        .p2align 5
__kprewrite_enter:
        push    %rax
        push    %rcx
        push    %rdx
        mov     (ESAVED * 8)(%rsp), %rdx        /* R */
        movslq  -ENTER_HEAD(%rdx), %rax
        mov     ST_RT(%rdx,%rax), %rdx          /* the point */
        test    %rdx, %rdx
        jz      .Le_slow
        THREAD_COUNTER .Le_slow
        COUNT_WINDOW rt_enter_count_window, .Le_out, %rax
        cmpq    $0, PT_HANDLERS(%rdx)
        jne     .Le_handlers
.Le_out:
        pop     %rdx
        pop     %rcx
        pop     %rax
        ret

/* Handlers, the hit counted: the pt_regs of an inline detour, below the
 * red zone (free at a call entry), filled where it lies -- ax, cx and dx
 * from their pushed copies -- and straight to the dispatcher's handler
 * part (rt_dispatch_handlers: rdx the point, rsi regs, rax rt_self's
 * offset), which would otherwise look the point up and count again */
#define REGS_BELOW (128 + PTREGS_SIZE - 8 - ESAVED * 8)   /* from %rsp here (below R and the pushes) to pt_regs */
#define PUSHED(n) (PTREGS_SIZE + 128 - 8 - 8 * (n))    /* the n-th push (1..3), from pt_regs */
.Le_handlers:
        lea     -REGS_BELOW(%rsp), %rsp
        mov     %rdi, PTREGS_DI(%rsp)
        mov     %rsi, PTREGS_SI(%rsp)
        mov     %r8, PTREGS_R8(%rsp)
        mov     %r9, PTREGS_R9(%rsp)
        mov     %r10, PTREGS_R10(%rsp)
        mov     %r11, PTREGS_R11(%rsp)
        mov     PUSHED(1)(%rsp), %rdi
        mov     %rdi, PTREGS_AX(%rsp)
        mov     PUSHED(2)(%rsp), %rdi
        mov     %rdi, PTREGS_CX(%rsp)
        mov     PUSHED(3)(%rsp), %rdi
        mov     %rdi, PTREGS_DX(%rsp)
        mov     %rsp, %rsi
        mov     rt_self@gottpoff(%rip), %rax
        test    $15, %spl
        jnz     .Le_hunaligned
        call    rt_dispatch_handlers
.Le_hback:
        /* a handler's writes to regs take effect */
        mov     PTREGS_R11(%rsp), %r11
        mov     PTREGS_R10(%rsp), %r10
        mov     PTREGS_R9(%rsp), %r9
        mov     PTREGS_R8(%rsp), %r8
        mov     PTREGS_AX(%rsp), %rax
        mov     PTREGS_CX(%rsp), %rcx
        mov     PTREGS_DX(%rsp), %rdx
        mov     PTREGS_SI(%rsp), %rsi
        mov     PTREGS_DI(%rsp), %rdi
        lea     (PTREGS_SIZE + 128 - 8)(%rsp), %rsp     /* to R */
        ret
.Le_hunaligned:
        and     $-16, %rsp
        push    %rsi
        push    %rsi
        call    rt_dispatch_handlers
        pop     %rsp
        jmp     .Le_hback

/* Everything else (a thread's first hit, a hit inside a handler, a point
 * not filled yet) through the whole dispatcher */
.Le_slow:
        pop     %rdx
        pop     %rcx
        pop     %rax
        /* the frame of an inline detour, whose %rsp would be the probed
         * one: ours + 8 (R) */
        lea     -(128 + UPPER - 8)(%rsp), %rsp
        PUSH_CALLER_SAVED
        lea     -PTREGS_R11(%rsp), %rsp
        mov     (PTREGS_SIZE + 128 - 8)(%rsp), %rax     /* R */
        movslq  -ENTER_HEAD(%rax), %rdi
        add     %rax, %rdi                      /* the state */
        mov     %rsp, %rsi
        /* pt_regs is 16-aligned when the probed function was entered as
         * the ABI says (%rsp = 8 mod 16): the dispatcher is called from
         * here; an entry that was not (the ELF entry point, code nobody
         * named) realigns and comes back through the saved %rsp */
        test    $15, %spl
        jnz     .Le_unaligned
        call    rt_dispatch                     /* (state, regs) */
.Le_back:
        lea     PTREGS_R11(%rsp), %rsp
        POP_CALLER_SAVED
        lea     (128 + UPPER - 8)(%rsp), %rsp
        ret
.Le_unaligned:
        and     $-16, %rsp
        push    %rsi
        push    %rsi
        call    rt_dispatch
        pop     %rsp
        jmp     .Le_back
        .size   __kprewrite_enter, .-__kprewrite_enter

        .section .note.GNU-stack,"",@progbits
