/* Field offsets the assembly (dispatch.S, kretprobe-fast.S, handler-calls.S) uses;
 * rt.c and kretprobe.c check every one of them against the C structures
 * at compile time. */
#ifndef KPREWRITE_RT_OFFSETS_H
#define KPREWRITE_RT_OFFSETS_H

/* struct kprw_state (abi.h) */
#define ST_RT 0
/* struct point (rt.h) */
#define PT_ADDR 0
#define PT_FLAGS 20
#define PT_ID 24
#define PT_HANDLERS 56
#define PT_CPATH 64
#define PT_MISSED 80
#define PT_CODE 88
#define PT_KRET 112
/* struct kprobe (kprobes.h) */
#define KP_PRE_HANDLER 24
#define KP_FLAGS 56
#define KP_NEXT 72
#define KP_DIRECT 120                  /* events.h: an event's kprobe's struct ev_inst, its direct entry */
/* struct kretprobe (kprobes.h) */
#define KRP_ENTRY_HANDLER 88
#define KRP_HOLDER 112
/* struct kretprobe_instance (kprobes.h) */
#define RI_RET 8
#define RI_SLOT 24
#define RI_HOLDER 32
#define RI_NEXT 40
/* struct holder (kretprobe.c) */
#define H_PT 8
#define H_KC_OFF 16
#define H_FAST 24
/* struct rt_thread (rt.h) */
#define TH_HITS 0
#define TH_CAP 8
#define TH_RUNNING 16
#define TH_RACTIVE 32
#define TH_HOOK 40
#define TH_LISTED 12
#define TH_STEAL 48
#define TH_HOT 56
#define TH_STACK_TOP 192
#define TH_STACK_SAVE 200
/* struct rt_kcache (rt.h), at H_KC_OFF in struct rt_thread */
#define KC_HOLDER 0
#define KC_HEAD 8
#define KC_N 16

/* struct rt_guard (rt.h) */
#define G_RBX 0
#define G_RBP 8
#define G_R12 16
#define G_R13 24
#define G_R14 32
#define G_R15 40
#define G_RSP 48
#define G_RIP 56

/* constants */
#define CODE_DISABLED_VALUE 2          /* enum code_state CODE_DISABLED */
#define KPRW_F_FLAGS_SAVED_VALUE 2     /* abi.h */
#define KPRW_F_GO_VALUE 128            /* abi.h */
#define RT_STACK_SIZE 0x40000          /* a thread's runtime stack, for Go points (enter-fast.S) */
#define RT_STACK_GUARD 0x1000          /* and the inaccessible page below it */
#define KPROBE_FLAG_DISABLED_VALUE 2   /* kprobes.h */
#define KPROBE_FLAG_RT_RECORDER_VALUE 0x40000000   /* rt.h */
#define KC_MAX_VALUE 2                 /* kretprobe.c: cached instances a way */
#ifndef __ASSEMBLER__
/* for the C files' compile-time checks of the offsets above */
#define OFFSET_CHECK(a, b) _Static_assert((a) == (b), #a " != " #b " (rt-offsets.h)")
#else
/* rdx = a point. rax = rt_self's TLS offset, ecx = the point's id; to
 * \slow on a hit inside a handler or in a thread with no counter for it. */
.macro THREAD_COUNTER slow
        mov     rt_self@gottpoff(%rip), %rax
        cmpq    $0, %fs:TH_RUNNING(%rax)        /* a hit inside a handler */
        jne     \slow
        mov     PT_ID(%rdx), %ecx
        cmp     %fs:TH_CAP(%rax), %ecx          /* no counter for it yet */
        jae     \slow
.endm

/* The general registers in pt_regs order, as a detour pushes them: the
 * caller-saved (di ... r11), then the callee-saved (bx ... r15) */
.macro PUSH_CALLER_SAVED
        push    %rdi
        push    %rsi
        push    %rdx
        push    %rcx
        push    %rax
        push    %r8
        push    %r9
        push    %r10
        push    %r11
.endm
.macro POP_CALLER_SAVED
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rax
        pop     %rcx
        pop     %rdx
        pop     %rsi
        pop     %rdi
.endm
.macro PUSH_CALLEE_SAVED
        push    %rbx
        push    %rbp
        push    %r12
        push    %r13
        push    %r14
        push    %r15
.endm
.macro POP_CALLEE_SAVED
        pop     %r15
        pop     %r14
        pop     %r13
        pop     %r12
        pop     %rbp
        pop     %rbx
.endm

/* Then count the hit, or go to \off if the point's code is disabled. A
 * thread stopped between \name and \name\()_end may count a hit after
 * its point was disabled: patch.c waits until no thread is there. */
.macro COUNT_WINDOW name, off, tmp
        .globl  \name, \name\()_end
        .hidden \name, \name\()_end
\name:
        cmpl    $CODE_DISABLED_VALUE, PT_CODE(%rdx)
        je      \off                            /* was in the detour when disabled */
        mov     %fs:TH_HITS(%rax), \tmp
        addq    $1, (\tmp,%rcx,8)
\name\()_end:
.endm
#endif
#endif
