/*
 * fault_handler, as the kernel had it until 5.14
 * (../shared/seeds/kprobes-with-fault-handler.txt): a fault in a kprobe's
 * pre_handler or post_handler, in a jprobe's handler (jprobe.c), or in the
 * instruction a post_handler's single step runs (trap.c), calls the
 * kprobe's fault_handler(kp, regs, trapnr) with regs as the pre_handler
 * had them and the x86 trap number. 1: handled, and the thread goes on as
 * if the handler had returned (0; a jprobe's, as after jprobe_return());
 * 0, or no fault_handler: the fault takes its default course -- the
 * program's own handler for the signal, or the default action. A fault is
 * a SIGSEGV, SIGBUS, SIGFPE or SIGILL the CPU raised (si_code > 0); one
 * sent with kill() is never the handler's. A fault in a fault_handler
 * takes its default course.
 *
 * Those four signals are the runtime's only while a kprobe with a
 * fault_handler is registered: its first registration installs the
 * runtime's action and keeps the program's, the last unregistration puts
 * the program's back. Meanwhile sigaction() and signal() on them record
 * the program's action (trap.c interposes them), which gets every fault
 * the runtime does not handle as if it were installed (its mask, its
 * flags, SA_RESETHAND), and masks the program sets keep them unblocked (a
 * thread that blocked one before keeps it blocked: a fault there ends the
 * process, as the kernel forces a blocked fault signal to).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "events.h"
#include "rt.h"
#include "safe-read.h"
#include "rt-offsets.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

OFFSET_CHECK(offsetof(struct rt_guard, rbx), G_RBX);
OFFSET_CHECK(offsetof(struct rt_guard, rbp), G_RBP);
OFFSET_CHECK(offsetof(struct rt_guard, r12), G_R12);
OFFSET_CHECK(offsetof(struct rt_guard, r13), G_R13);
OFFSET_CHECK(offsetof(struct rt_guard, r14), G_R14);
OFFSET_CHECK(offsetof(struct rt_guard, r15), G_R15);
OFFSET_CHECK(offsetof(struct rt_guard, rsp), G_RSP);
OFFSET_CHECK(offsetof(struct rt_guard, rip), G_RIP);

static const int fault_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
#define NSIGS (sizeof fault_sigs / sizeof fault_sigs[0])
static struct sigaction prog[NSIGS];   /* the program's actions, as it believes them installed */
static _Atomic bool installed;
static unsigned users;                 /* kprobes with a fault_handler; under rt_lock */

static int sig_index(int sig)
{
    for (unsigned i = 0; i < NSIGS; i++)
        if (fault_sigs[i] == sig)
            return (int)i;
    return -1;
}

/* sig's place in prog[]; only fault_sigs reach the handler */
static unsigned at(int sig)
{
    int i = sig_index(sig);
    return i < 0 ? 0 : (unsigned)i;
}

bool rt_fault_signal(int sig) { return atomic_load(&installed) && sig_index(sig) >= 0; }

int rt_fault_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
    unsigned i = at(sig);
    struct sigaction old = prog[i];
    if (act)
        prog[i] = *act;
    if (oact)
        *oact = old;
    return 0;
}

/* ---- the handlers' calls ---- */

static long call_pre(void *kp, void *regs)
{
    return ((struct kprobe *)kp)->pre_handler(kp, regs);
}

static long call_post(void *kp, void *regs)
{
    ((struct kprobe *)kp)->post_handler(kp, regs, 0);
    return 0;
}

static long guarded(struct kprobe *kp, struct pt_regs *regs, long (*fn)(void *, void *))
{
    struct rt_guard g = { .kp = kp, .regs = regs, .outer = rt_self.guard };
    rt_self.guard = &g;
    atomic_signal_fence(memory_order_seq_cst);
    long r = rt_guard_call(&g, fn, kp, regs);
    atomic_signal_fence(memory_order_seq_cst);
    rt_self.guard = g.outer;
    return *(volatile int *)&g.faulted ? 0 : r;
}

int rt_call_pre(struct kprobe *kp, struct pt_regs *regs) { return (int)guarded(kp, regs, call_pre); }
void rt_call_post(struct kprobe *kp, struct pt_regs *regs) { guarded(kp, regs, call_post); }

/* ---- the signals ---- */

static void on_fault(int sig, siginfo_t *si, void *uc);

static void install(void)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_fault;
    /* NODEFER: a fault in a fault_handler comes here again (and takes its
     * default course); ONSTACK: a stack overflow's fault needs the
     * alternate stack when the thread has one */
    a.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    sigemptyset(&a.sa_mask);
    for (unsigned i = 0; i < NSIGS; i++)
        __sigaction(fault_sigs[i], NULL, &prog[i]);
    atomic_store(&installed, true);
    for (unsigned i = 0; i < NSIGS; i++)
        __sigaction(fault_sigs[i], &a, NULL);
}

static void uninstall(void)
{
    atomic_store(&installed, false);
    for (unsigned i = 0; i < NSIGS; i++)
        __sigaction(fault_sigs[i], &prog[i], NULL);
}

void rt_fault_users(int delta)
{
    users += (unsigned)delta;
    if (users && !atomic_load(&installed))
        install();
    else if (!users && atomic_load(&installed))
        uninstall();
}

/* The point's kprobes each count a fault in a handler as missed, as the
 * kernel's kprobe_fault_handler does (kprobes_inc_nmissed_count). */
void rt_fault_count(struct point *pt)
{
    for (struct kprobe *kp = pt ? atomic_load_explicit(&pt->handlers, memory_order_acquire) : NULL; kp;
         kp = kp->__next)
        __atomic_fetch_add(&kp->nmissed, 1, __ATOMIC_RELAXED);
}

/* A fault in a guarded pre/post handler: its kprobe's fault_handler says. */
static bool guard_fault(ucontext_t *uc, int trapnr)
{
    struct rt_guard *g = rt_self.guard;
    rt_self.guard = NULL;   /* a fault in the fault_handler takes its default course */
    rt_fault_count(g->kp->__point);
    int handled = g->kp->fault_handler(g->kp, g->regs, trapnr);
    rt_self.guard = g;
    if (!handled)
        return false;
    greg_t *r = uc->uc_mcontext.gregs;
    g->faulted = 1;
    r[REG_RBX] = (greg_t)g->rbx, r[REG_RBP] = (greg_t)g->rbp, r[REG_R12] = (greg_t)g->r12;
    r[REG_R13] = (greg_t)g->r13, r[REG_R14] = (greg_t)g->r14, r[REG_R15] = (greg_t)g->r15;
    r[REG_RSP] = (greg_t)g->rsp, r[REG_RIP] = (greg_t)g->rip, r[REG_RAX] = 0;
    return true;
}

/* Does the program handle sig itself (not its default action)? */
static bool program_catches(int sig)
{
    const struct sigaction *a = &prog[at(sig)];
    return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

/* The program's action for a fault (or a sent signal) the runtime did not
 * handle. Its default (or ignoring a fault, which the kernel does not
 * allow): that action is put in place and the fault comes again (a sent
 * signal is raised again). */
static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction a = prog[at(sig)];
    bool from_cpu = si->si_code > 0;
    if (!program_catches(sig)) {
        if (a.sa_handler == SIG_IGN && !from_cpu)
            return;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        __sigaction(sig, &dfl, NULL);
        if (!from_cpu)
            raise(sig);   /* SA_NODEFER: not blocked here */
        return;
    }
    if (a.sa_flags & SA_RESETHAND) {
        prog[at(sig)].sa_handler = SIG_DFL;
        prog[at(sig)].sa_flags &= ~SA_SIGINFO;
    }
    sigset_t mask = a.sa_mask, old;
    if (!(a.sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    sigdelset(&mask, SIGTRAP);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, &old, sizeof(uint64_t));
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, si, uc);
    else
        a.sa_handler(sig);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(uint64_t));
}

/* A fault the program's handler gets may interrupt a handler of ours (not
 * handled by its fault_handler, or with none), and the program's handler
 * may not come back: siglongjmp out of it is common. So for the runtime
 * that handler is abandoned while the program's runs (the thread no longer
 * runs a probe's handlers, nor an int3 probe, nor a jprobe's handler), and
 * taken up again if it comes back. */
struct abandoned {
    struct point *running;
    struct rt_guard *guard;
    struct jprobe *jp;
    int traps;
};

static void abandon(struct abandoned *a)
{
    a->running = atomic_load_explicit(&rt_self.running, memory_order_relaxed);
    a->guard = rt_self.guard;
    a->jp = rt_jprobe_abandon(NULL);
    a->traps = trap_abandon(-1);
    rt_self.guard = NULL;
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
}

static void take_up(const struct abandoned *a)
{
    atomic_store_explicit(&rt_self.running, a->running, memory_order_relaxed);
    rt_self.guard = a->guard;
    rt_jprobe_abandon(a->jp);
    trap_abandon(a->traps);
}

/* A fault in an event's read of the program's memory (safe-read-x86.S, or
 * a generated recorder's load: recorder.c): the read resumes at its fixup
 * and says it faulted. */
static bool safe_read_fault(ucontext_t *uc)
{
    greg_t *ip = &uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t fixup = rt_safe_read_fixup((uintptr_t)*ip);
    if (!fixup)
        fixup = ev_recorder_fixup((uintptr_t)*ip);
    if (fixup)
        *ip = (greg_t)fixup;
    return fixup != 0;
}

static void on_fault(int sig, siginfo_t *si, void *vuc)
{
    int saved_errno = errno;
    ucontext_t *uc = vuc;
    int trapnr = (int)uc->uc_mcontext.gregs[REG_TRAPNO];
    bool handled = false;
    if (si->si_code > 0) {
        if (safe_read_fault(uc))
            handled = true;
        else if (rt_self.guard)
            handled = guard_fault(uc, trapnr);
        else if (rt_self.jctx && rt_jprobe_fault(uc, trapnr))
            handled = true;
        else
            handled = trap_step_fault(uc, trapnr, program_catches(sig));
    }
    if (!handled) {
        struct abandoned a;
        abandon(&a);
        chain(sig, si, vuc);
        take_up(&a);
    }
    errno = saved_errno;
}

/* Masks the program sets keep the fault signals unblocked while they are
 * the runtime's (trap.c's trap_undeliverable): their bits, or 0. */
uint64_t rt_fault_bits(void)
{
    uint64_t bits = 0;
    if (atomic_load(&installed))
        for (unsigned i = 0; i < NSIGS; i++)
            bits |= 1ull << (fault_sigs[i] - 1);
    return bits;
}
