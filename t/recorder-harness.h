/* What t/recorder-test and fuzz/fuzz-recorder share to run a generated
 * event recorder (src/arch/x86/recorder.c) outside the runtime: an
 * instance, a point and a ring laid out as the runtime's are not (the code
 * takes offsets only), their thread-local pointers, the code's buffer and
 * its loads' fixups with the fault handler that resumes at them (as
 * fault.c does), the environment, and the direct entry's call as the
 * dispatcher makes it. */
#ifndef KPREWRITE_T_RECORDER_HARNESS_H
#define KPREWRITE_T_RECORDER_HARNESS_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include "arch/recorder.h"
#include "runtime/user/safe-read.h"

struct t_point {
    uint32_t pad;
    uint8_t flags;   /* FLAGS_SAVED: the detour saved the flags into pt_regs */
};
#define FLAGS_SAVED 0x10
#define FRAME 296     /* the probed %rsp, from pt_regs (the direct entry) */
struct t_inst {
    char kp[40];
    uint32_t id;
    uint8_t pad, enabled;
    uint64_t addr;
    void *hist;
    const struct t_point *pt;
};
struct t_ring {
    uint64_t tail, head;
    uint32_t tid, size;
    uint8_t *data;
};
static __thread struct t_ring *ring_tls;   /* (an executable's: a fixed offset from the thread pointer) */
static __thread uint32_t cpu_tls;

static struct kprw_recorder_fixup fix[KPRW_RECORDER_FIXUPS];
static unsigned nfix;
static uint8_t *code;   /* the recorder's bytes (the caller maps them) */
static int faults;      /* resumed at a fixup */

/* SIGSEGV, SIGBUS: a read of rt_safe_read_* or of the code resumes at its
 * fixup; any other fault is a bug (abort) */
static void on_segv(int sig, siginfo_t *si, void *vuc)
{
    (void)sig; (void)si;
    ucontext_t *uc = vuc;
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], to = rt_safe_read_fixup(ip);
    for (unsigned i = 0; !to && i < nfix; i++)
        if (ip >= (uintptr_t)code + fix[i].load && ip < (uintptr_t)code + fix[i].load_end)
            to = (uintptr_t)code + fix[i].fixup;
    if (!to)
        abort();
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
    faults++;
}

static struct kprw_recorder_env harness_env(int clock, int (*fallback)(void *, void *))
{
    return (struct kprw_recorder_env){
        .inst_enabled = offsetof(struct t_inst, enabled), .inst_hist = offsetof(struct t_inst, hist),
        .inst_id = offsetof(struct t_inst, id), .inst_addr = offsetof(struct t_inst, addr),
        .ring_tls = (int32_t)((char *)&ring_tls - (char *)__builtin_thread_pointer()),
        .ring_head = offsetof(struct t_ring, head), .ring_tail = offsetof(struct t_ring, tail),
        .ring_size = offsetof(struct t_ring, size), .ring_tid = offsetof(struct t_ring, tid),
        .ring_data = offsetof(struct t_ring, data), .clock = clock,
        .cpu_tls = (int32_t)((char *)&cpu_tls - (char *)__builtin_thread_pointer()),
        .read_str = (uint64_t)(uintptr_t)rt_safe_read_str, .fallback = (uint64_t)(uintptr_t)fallback,
        .frame = FRAME, .inst_point = offsetof(struct t_inst, pt), .point_flags = offsetof(struct t_point, flags),
        .flags_saved = FLAGS_SAVED,
    };
}

/* The direct entry's call, as the dispatcher makes it
 * (src/runtime/user/dispatch.S .Lrecorder): bx, bp, r12-r15 loaded from
 * callee[] (the probed values, which the entry reads where they are),
 * then fn(kp, regs). */
int call_direct(void *fn, void *kp, void *regs, const unsigned long *callee);
__asm__(".text\n"
        ".globl call_direct\n"
        "call_direct:\n"
        "  push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
        "  sub $8, %rsp\n"
        "  mov %rdi, %rax; mov %rsi, %rdi; mov %rdx, %rsi\n"
        "  mov 0(%rcx), %rbx; mov 8(%rcx), %rbp; mov 16(%rcx), %r12\n"
        "  mov 24(%rcx), %r13; mov 32(%rcx), %r14; mov 40(%rcx), %r15\n"
        "  call *%rax\n"
        "  add $8, %rsp\n"
        "  pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
        "  ret\n");
#endif
