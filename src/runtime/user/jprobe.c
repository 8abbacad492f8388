/*
 * jprobes, as the kernel had them until 4.15
 * (../shared/seeds/kprobes-legacy-jprobes.txt): a handler with the probed
 * function's own signature runs at its entry, with its registers and
 * stack (so it gets its arguments), and ends by calling jprobe_return();
 * the function then runs as if nothing had happened.
 *
 * As the kernel's: a kprobe at the function's entry whose pre_handler
 * (setjmp_pre_handler there) has the int3 path keep the registers, the FPU
 * state and the top of the stack (the callee owns its arguments there:
 * the handler may write them) and send the thread to the handler;
 * jprobe_return() traps (handler-calls.S), and the trap puts all of it
 * back (longjmp_break_handler) and runs the probed instruction, single-
 * stepped when a post_handler is to run. A jprobe needs the int3 path
 * (the kernel never optimized one either), goes last among its point's
 * handlers (the kernel's list_add_tail_rcu) and is alone there (-EEXIST).
 * Its handler runs as a handler: probes hit in it run nothing and count
 * as missed, and unregister_jprobe() waits for it. A handler that returns
 * instead of calling jprobe_return() comes back the same way: its return
 * address is jprobe_return's (the saved stack has the real one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <ucontext.h>

#include "rt.h"

#define JPROBE_STACK 64          /* the kernel's MAX_STACK_SIZE: the return address, 7 arguments */
#define FP_XSTATE_MAGIC1_ 0x46505853u
#define FP_SW_BYTES 464          /* where the kernel's sw_reserved words are in the FPU frame */

extern const char rt_jprobe_int3[];   /* handler-calls.S */

/* What a jprobe's hit saved, per thread (one jprobe handler at a time runs
 * on a thread: a probe hit inside one runs nothing). Mapped at the
 * thread's first jprobe hit, from the signal handler, and unmapped when
 * the thread exits. */
struct rt_jctx {
    struct jprobe *jp;           /* the jprobe whose handler runs; NULL: none */
    struct point *pt;
    greg_t gregs[NGREG];         /* at the hit, after the pre_handlers; RIP: where to go on */
    unsigned long sp;
    size_t nstack;               /* bytes of it kept: the stack may end sooner */
    unsigned char stack[JPROBE_STACK];
    size_t size;                 /* of the mapping */
    size_t fpsize;               /* of the signal frame's FPU state (XSAVE layout) */
    unsigned char fp[] __attribute__((aligned(64)));
};

static TLS struct jprobe *pending;   /* rt_jprobe_entry -> rt_jprobe_divert */

/* The bytes of a signal frame's FPU state: the XSAVE area with its
 * extension when the kernel marked one, else the legacy 512. */
static size_t fp_size(const ucontext_t *uc)
{
    const unsigned char *fp = (const unsigned char *)uc->uc_mcontext.fpregs;
    if (!fp)
        return 0;
    uint32_t sw[2];
    memcpy(sw, fp + FP_SW_BYTES, sizeof sw);
    return sw[0] == FP_XSTATE_MAGIC1_ && sw[1] >= 512 && sw[1] <= (1u << 20) ? sw[1] : 512;
}

/* The top of the stack at sp, up to JPROBE_STACK bytes: fewer where the
 * stack ends sooner (a coroutine's, at its top; the kernel's
 * MIN_STACK_SIZE), read through process_vm_readv, which fails instead of
 * faulting. At least the return address. */
static size_t stack_copy(unsigned char *to, unsigned long sp)
{
    size_t n = JPROBE_STACK;
    while (n > sizeof(unsigned long)) {
        struct iovec mine = { to, n }, there = { (void *)sp, n };
        ssize_t got = process_vm_readv(getpid(), &mine, 1, &there, 1, 0);
        if (got > 0 && (size_t)got >= sizeof(unsigned long))
            return (size_t)got;
        n /= 2;
    }
    memcpy(to, (void *)sp, sizeof(unsigned long));
    return sizeof(unsigned long);
}

static struct rt_jctx *jctx_for(const ucontext_t *uc)
{
    size_t fpsize = fp_size(uc), need = sizeof(struct rt_jctx) + fpsize;
    struct rt_jctx *c = rt_self.jctx;
    if (c && c->size >= need)
        return c;
    if (c)
        munmap(c, c->size);
    rt_self.jctx = NULL;
    size_t size = (need + 4095) & ~(size_t)4095;
    c = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);   /* a system call: */
    if (c == MAP_FAILED)                                                                  /* fine here */
        return NULL;
    c->size = size;
    rt_self.jctx = c;
    return c;
}

/* A jprobe's kp.pre_handler: on the int3 path, the diversion is asked for
 * (rt_jprobe_divert, after the other handlers and the return hook) and the
 * remaining handlers end. A detour that ran it (a hit that read the code
 * before the jprobe made its point int3) runs nothing. */
int rt_jprobe_entry(struct kprobe *kp, struct pt_regs *regs)
{
    (void)regs;
    if (!trap_hitting())
        return 0;
    pending = (struct jprobe *)kp;
    return 1;
}

bool rt_jprobe_divert(struct point *pt, void *vuc)
{
    struct jprobe *jp = pending;
    pending = NULL;
    if (!jp)
        return false;
    ucontext_t *uc = vuc;
    greg_t *g = uc->uc_mcontext.gregs;
    struct rt_jctx *c = jp->kp.__point == pt ? jctx_for(uc) : NULL;
    if (!c) {   /* nothing to keep it in: the function runs without the handler */
        __atomic_fetch_add(&jp->kp.nmissed, 1, __ATOMIC_RELAXED);
        trap_resume(pt, g);
        return true;
    }
    c->jp = jp;
    c->pt = pt;
    memcpy(c->gregs, g, sizeof c->gregs);
    c->sp = (unsigned long)g[REG_RSP];
    c->nstack = stack_copy(c->stack, c->sp);
    c->fpsize = fp_size(uc);
    memcpy(c->fp, uc->uc_mcontext.fpregs, c->fpsize);
    *(unsigned long *)c->sp = (unsigned long)jprobe_return;
    g[REG_RIP] = (greg_t)jp->entry;
    /* the handler runs as one: what unregister waits for, and the
     * recursion guard */
    atomic_store_explicit(&rt_self.running, pt, memory_order_release);
    return true;
}

/* Everything back as at the hit, in the context uc: the registers but the
 * segment and fault words, the FPU state (the handler may use it: the
 * function's floating-point arguments are in it), the top of the stack;
 * then the probed instruction. */
static void jprobe_restore(struct rt_jctx *c, ucontext_t *uc)
{
    static const int regs[] = { REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RDI,
                                REG_RSI, REG_RBP, REG_RBX, REG_RDX, REG_RAX, REG_RCX, REG_RSP, REG_EFL };
    greg_t *g = uc->uc_mcontext.gregs;
    memcpy((void *)c->sp, c->stack, c->nstack);
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        g[regs[i]] = c->gregs[regs[i]];
    size_t fpsize = fp_size(uc);
    if (uc->uc_mcontext.fpregs)   /* the same layout in every frame of the process */
        memcpy(uc->uc_mcontext.fpregs, c->fp, fpsize == c->fpsize ? fpsize : FP_SW_BYTES);
    struct point *pt = c->pt;
    c->jp = NULL;
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
    trap_resume(pt, g);
}

bool rt_jprobe_trap(void *vuc)
{
    ucontext_t *uc = vuc;
    struct rt_jctx *c = rt_self.jctx;
    if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1 != (uintptr_t)rt_jprobe_int3 || !c || !c->jp)
        return false;
    jprobe_restore(c, uc);
    return true;
}

/* A fault in the handler: the jprobe's fault_handler sees the registers of
 * the hit (as a pre_handler does: ip is the address + 1). Handled: as if
 * the handler had called jprobe_return(). */
bool rt_jprobe_fault(void *vuc, int trapnr)
{
    ucontext_t *uc = vuc;
    struct rt_jctx *c = rt_self.jctx;
    if (!c || !c->jp || !c->jp->kp.fault_handler)
        return false;
    struct kprobe *kp = &c->jp->kp;
    struct pt_regs r;
    trap_regs_from(&r, c->gregs);
    r.ip = c->pt->addr + 1;
    rt_fault_count(c->pt);
    if (!kp->fault_handler(kp, &r, trapnr))
        return false;
    trap_regs_to(c->gregs, &r);
    jprobe_restore(c, uc);
    return true;
}

/* jp NULL: forget the jprobe whose handler runs on this thread (the
 * program's fault handler may leave it: fault.c), and say which; else
 * take it up again. */
struct jprobe *rt_jprobe_abandon(struct jprobe *jp)
{
    struct rt_jctx *c = rt_self.jctx;
    if (!c)
        return NULL;
    struct jprobe *was = c->jp;
    c->jp = jp;
    return was;
}

void rt_jprobe_thread_exit(struct rt_thread *t)
{
    if (t->jctx)
        munmap(t->jctx, t->jctx->size);
    t->jctx = NULL;
}

/* ---- the API ---- */

static bool has_jprobe(struct point *pt)
{
    for (struct kprobe *kp = atomic_load(&pt->handlers); kp; kp = kp->__next)
        if (rt_is_jprobe(kp))
            return true;
    return false;
}

/* As the kernel's register_jprobe: jp->kp at a function's entry (-EINVAL
 * elsewhere), jp->entry set; one jprobe a point (-EEXIST). Not in Go code
 * (-EINVAL): its handler would run on the goroutine's stack, which has no
 * room for C (enter-fast.S). */
EXPORT int register_jprobe(struct jprobe *jp)
{
    if (!jp || !jp->entry)
        return -EINVAL;
    rt_lock_take();
    struct point *pt;
    int rc = rt_resolve(&jp->kp, &pt, true);
    if (rc == 0 && has_jprobe(pt))
        rc = -EEXIST;
    if (rc == 0 && (pt->flags & KPRW_F_GO))
        rc = -EINVAL;
    if (rc == 0) {
        kprobe_pre_handler_t old = jp->kp.pre_handler;
        jp->kp.pre_handler = rt_jprobe_entry;
        if ((rc = rt_register_kprobe_at(&jp->kp, pt, true)) < 0)
            jp->kp.pre_handler = old;
    }
    rt_lock_drop();
    return rc == -ENOENT ? rt_no_point(&jp->kp) : rc;
}

EXPORT void unregister_jprobe(struct jprobe *jp)
{
    if (jp)
        unregister_kprobe(&jp->kp);
}

EXPORT int register_jprobes(struct jprobe **jps, int num)
{
    if (!jps || num <= 0)
        return -EINVAL;
    for (int i = 0; i < num; i++) {
        int rc = register_jprobe(jps[i]);
        if (rc < 0) {
            unregister_jprobes(jps, i);
            return rc;
        }
    }
    return 0;
}

EXPORT void unregister_jprobes(struct jprobe **jps, int num)
{
    for (int i = 0; jps && i < num; i++)
        unregister_jprobe(jps[i]);
}

EXPORT int enable_jprobe(struct jprobe *jp) { return jp ? enable_kprobe(&jp->kp) : -EINVAL; }
EXPORT int disable_jprobe(struct jprobe *jp) { return jp ? disable_kprobe(&jp->kp) : -EINVAL; }
