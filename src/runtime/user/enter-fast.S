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
 *
 * A Go point (KPRW_F_GO) runs no C on the goroutine's stack, whose guard
 * leaves a chain of NOSPLIT functions little room: past the count, its
 * pt_regs goes on the thread's own runtime stack (below, .Le_go).
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
/* The scratch registers the compact detour did not push, into pt_regs at %rsp. */
.macro SAVE_SCRATCH
        mov     %rdi, PTREGS_DI(%rsp)
        mov     %rsi, PTREGS_SI(%rsp)
        mov     %r8, PTREGS_R8(%rsp)
        mov     %r9, PTREGS_R9(%rsp)
        mov     %r10, PTREGS_R10(%rsp)
        mov     %r11, PTREGS_R11(%rsp)
.endm

#define REGS_BELOW (128 + PTREGS_SIZE - 8 - ESAVED * 8)   /* from %rsp here (below R and the pushes) to pt_regs */
#define PUSHED(n) (PTREGS_SIZE + 128 - 8 - 8 * (n))    /* the n-th push (1..3), from pt_regs */
.Le_handlers:
        testb   $KPRW_F_GO_VALUE, PT_FLAGS(%rdx)
        jnz     .Le_go_handlers
        lea     -REGS_BELOW(%rsp), %rsp
        SAVE_SCRATCH
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
        test    %rdx, %rdx
        jz      1f
        testb   $KPRW_F_GO_VALUE, PT_FLAGS(%rdx)
        jnz     .Le_go_slow
1:      pop     %rdx
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

/* A Go point's hit that runs C: with handlers, or through the whole
 * dispatcher (the thread's first hit, one inside a handler). The goroutine
 * stack holds R and the three pushes (32 bytes below the probed %rsp) and
 * nothing more: pt_regs goes at the top of the thread's runtime stack,
 * with the goroutine's %rsp above it and regs->sp the probed one (the
 * dispatcher leaves it so: rt_dispatch_handlers_go). A thread's first such
 * hit maps that stack (GO_MAP), with system calls made here: no C runs
 * before it exists. The thread's stack_save[0] says the stack is busy (being mapped,
 * or C running on it): a hit then -- by Go's signal handler, on the
 * thread's signal stack, which interrupted that C -- runs no C and is
 * counted missed (the point's count of misses), as a hit inside a
 * handler is. */
.macro GO_SWITCH nomap
        mov     rt_self@gottpoff(%rip), %rcx
        cmpq    $0, %fs:TH_STACK_SAVE(%rcx)
        jne     .Le_go_missed
        mov     %fs:TH_STACK_TOP(%rcx), %rax
        test    %rax, %rax
        jz      \nomap
        movq    $1, %fs:TH_STACK_SAVE(%rcx)     /* busy until .Le_go_back has left it */
        mov     %rsp, -8(%rax)                  /* the goroutine stack: rdx, rcx, rax, R */
        mov     %rsp, %rcx
        lea     -(PTREGS_SIZE + 8)(%rax), %rsp  /* pt_regs, 16-aligned */
        SAVE_SCRATCH
        mov     16(%rcx), %rdi
        mov     %rdi, PTREGS_AX(%rsp)
        mov     8(%rcx), %rdi
        mov     %rdi, PTREGS_CX(%rsp)
        mov     (%rcx), %rdi
        mov     %rdi, PTREGS_DX(%rsp)
        lea     (ESAVED * 8 + 8)(%rcx), %rdi    /* the probed %rsp, above R */
        mov     %rdi, PTREGS_SP(%rsp)
.endm

/* The runtime stack mapped (mmap, then mprotect of a guard page below
 * it), the registers the system calls take kept in the thread's
 * stack_save meanwhile; then to again. No memory: no handlers for this
 * hit. */
.macro GO_MAP again
        mov     rt_self@gottpoff(%rip), %rax
        movq    $1, %fs:TH_STACK_SAVE(%rax)     /* (GO_SWITCH found it 0) */
        mov     %rdi, %fs:(TH_STACK_SAVE + 8)(%rax)
        mov     %rsi, %fs:(TH_STACK_SAVE + 16)(%rax)
        mov     %rdx, %fs:(TH_STACK_SAVE + 24)(%rax)
        mov     %r8, %fs:(TH_STACK_SAVE + 32)(%rax)
        mov     %r9, %fs:(TH_STACK_SAVE + 40)(%rax)
        mov     %r10, %fs:(TH_STACK_SAVE + 48)(%rax)
        mov     %r11, %fs:(TH_STACK_SAVE + 56)(%rax)
        xor     %edi, %edi
        mov     $(RT_STACK_SIZE + RT_STACK_GUARD), %esi
        mov     $3, %edx                        /* PROT_READ | PROT_WRITE */
        mov     $0x24022, %r10d                 /* MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK */
        mov     $-1, %r8
        xor     %r9d, %r9d
        mov     $9, %eax                        /* mmap */
        syscall
        cmp     $-4095, %rax
        jae     1f
        mov     %rax, %r8
        mov     %rax, %rdi
        mov     $RT_STACK_GUARD, %esi
        xor     %edx, %edx                      /* PROT_NONE */
        mov     $10, %eax                       /* mprotect */
        syscall
        lea     (RT_STACK_SIZE + RT_STACK_GUARD)(%r8), %rcx
        mov     rt_self@gottpoff(%rip), %rax
        mov     %rcx, %fs:TH_STACK_TOP(%rax)
1:      mov     rt_self@gottpoff(%rip), %rax
        mov     %fs:(TH_STACK_SAVE + 8)(%rax), %rdi
        mov     %fs:(TH_STACK_SAVE + 16)(%rax), %rsi
        mov     %fs:(TH_STACK_SAVE + 24)(%rax), %rdx
        mov     %fs:(TH_STACK_SAVE + 32)(%rax), %r8
        mov     %fs:(TH_STACK_SAVE + 40)(%rax), %r9
        mov     %fs:(TH_STACK_SAVE + 48)(%rax), %r10
        mov     %fs:(TH_STACK_SAVE + 56)(%rax), %r11
        movq    $0, %fs:TH_STACK_SAVE(%rax)
        cmpq    $0, %fs:TH_STACK_TOP(%rax)
        jne     \again
        jmp     .Le_out
.endm

.Le_go_handlers:
        mov     rt_self@gottpoff(%rip), %rax
        cmpq    $0, %fs:TH_STACK_SAVE(%rax)
        je      1f
        mov     PT_ID(%rdx), %ecx               /* busy: counted above, a miss instead */
        mov     %fs:TH_HITS(%rax), %rax
        subq    $1, (%rax,%rcx,8)
        jmp     .Le_go_missed
1:      GO_SWITCH .Le_go_map_h
        mov     %rsp, %rsi
        mov     rt_self@gottpoff(%rip), %rax
        call    rt_dispatch_handlers_go         /* (rdx point, rsi regs, rax) */
        jmp     .Le_go_back
.Le_go_slow:
        GO_SWITCH .Le_go_map_s
        mov     PTREGS_SIZE(%rsp), %rax         /* the goroutine stack */
        mov     (ESAVED * 8)(%rax), %rax        /* R */
        movslq  -ENTER_HEAD(%rax), %rdi
        add     %rax, %rdi                      /* the state */
        mov     %rsp, %rsi
        call    rt_dispatch                     /* (state, regs) */
.Le_go_back:
        /* a handler's writes to regs take effect; every one read before
         * %rsp leaves the runtime stack (a signal may land there after) */
        mov     PTREGS_SIZE(%rsp), %rcx         /* the goroutine stack */
        mov     PTREGS_AX(%rsp), %rax
        mov     %rax, 16(%rcx)
        mov     PTREGS_CX(%rsp), %rax
        mov     %rax, 8(%rcx)
        mov     PTREGS_DX(%rsp), %rax
        mov     %rax, (%rcx)
        mov     PTREGS_R11(%rsp), %r11
        mov     PTREGS_R10(%rsp), %r10
        mov     PTREGS_R9(%rsp), %r9
        mov     PTREGS_R8(%rsp), %r8
        mov     PTREGS_SI(%rsp), %rsi
        mov     PTREGS_DI(%rsp), %rdi
        mov     %rcx, %rsp
        mov     rt_self@gottpoff(%rip), %rax
        movq    $0, %fs:TH_STACK_SAVE(%rax)     /* off it: free (rax is popped below) */
        jmp     .Le_out
.Le_go_missed:
        lock incq PT_MISSED(%rdx)
        jmp     .Le_out
.Le_go_map_h:
        GO_MAP  .Le_go_handlers
.Le_go_map_s:
        GO_MAP  .Le_go_slow
        .size   __kprewrite_enter, .-__kprewrite_enter

        .section .note.GNU-stack,"",@progbits
