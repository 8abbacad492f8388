/*
 * The int3 path: a SIGTRAP handler that finds the probe by address (binary
 * search in a sorted index), runs its handlers on a pt_regs built from the
 * signal context, and resumes at the out-of-line copy (boosted: no single
 * step unless a post_handler wants one).
 *
 * It keeps the program's own SIGTRAP handling intact: sigaction() and
 * signal() on SIGTRAP are interposed and only record the program's wish;
 * a SIGTRAP that is not a probe goes to that handler, or gets the default
 * action. Since a blocked SIGTRAP would kill the process at the first int3
 * probe (the kernel forces the signal), SIGTRAP is kept out of the masks
 * the program blocks (sigprocmask, pthread_sigmask, sa_mask). When libc
 * itself is probed, the runtime comes after it in the lookup scope and
 * interposes nothing: libc-guard.c routes the same calls here from probes
 * on libc's own __sigaction and pthread_sigmask.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "rawsys.h"
#include "rt.h"
#include "arch/x86/site.h"
#include "util/array.h"

#define EFLAGS_TF 0x100ul
/* a signal's bit in the kernel's 64-bit mask (sigset_t's first word) */
#define SIG_BIT(sig) (1ull << ((sig) - 1))
#define GLIBC_SIGCANCEL 32   /* __SIGRTMIN, SIGRTMIN - 2 */
#define GLIBC_SIGSETXID 33
/* what a handler may change: CF PF AF ZF SF DF OF */
#define EFLAGS_HANDLER 0xcd5ul

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

struct trap_index {
    size_t n;
    uintptr_t *addr;
    struct point **pt;
    struct trap_index *older;   /* the one this replaced: kept, and reachable */
};

static struct trap_index *_Atomic tindex;
static struct sigaction prog_act;      /* the program's SIGTRAP action, as it believes installed */
static _Atomic bool installed;
pid_t trap_server_tid;
static TLS int trapping;               /* this thread's share of rt_traps_running() */

static TLS struct point *stepping;     /* a post_handler waits for this thread's single step */

/* ---- the index: rebuilt under rt_lock, read lock-free by the handler ---- */

static int cmp_addr(const void *a, const void *b)
{
    const struct point *x = *(struct point *const *)a, *y = *(struct point *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Over the filled points: every site that can hold an int3 is one (the
 * int3 entries are filled at registration, the others before anything can
 * unoptimize them). */
void trap_index_rebuild(void)
{
    struct trap_index *ix = malloc(sizeof *ix);
    size_t n = rt_point_count();
    struct point **v = malloc((n ? n : 1) * sizeof *v);
    uintptr_t *a = malloc((n ? n : 1) * sizeof *a);
    if (!ix || !v || !a) {
        free(ix), free(v), free(a);
        return;   /* keep the old index: probes of the new image trap as foreign */
    }
    /* the filled points in fill order (not by scanning the states: that
     * would fault in every page of them at start-up) */
    if (n)
        memcpy(v, rt_point_list(), n * sizeof *v);
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = v[i - 1]->addr <= v[i]->addr;
    if (!sorted)
        qsort(v, n, sizeof *v, cmp_addr);
    for (size_t i = 0; i < n; i++)
        a[i] = v[i]->addr;
    ix->n = n;
    ix->addr = a;
    ix->pt = v;
    ix->older = atomic_load_explicit(&tindex, memory_order_relaxed);
    /* The old index is never freed: a handler may be reading it. Images
     * register once each, so this is bounded by the number of images. */
    atomic_store_explicit(&tindex, ix, memory_order_release);
}

static struct point *lookup(uintptr_t addr)
{
    struct trap_index *ix = atomic_load_explicit(&tindex, memory_order_acquire);
    if (!ix)
        return NULL;
    size_t lo = LOWER_BOUND(ix->n, i, ix->addr[i] < addr);
    return lo < ix->n && ix->addr[lo] == addr ? ix->pt[lo] : NULL;
}

/* ---- pt_regs <-> signal context ---- */

void trap_regs_from(struct pt_regs *r, const void *gregs)
{
    const greg_t *g = gregs;
    r->r15 = g[REG_R15], r->r14 = g[REG_R14], r->r13 = g[REG_R13], r->r12 = g[REG_R12];
    r->bp = g[REG_RBP], r->bx = g[REG_RBX], r->r11 = g[REG_R11], r->r10 = g[REG_R10];
    r->r9 = g[REG_R9], r->r8 = g[REG_R8], r->ax = g[REG_RAX], r->cx = g[REG_RCX];
    r->dx = g[REG_RDX], r->si = g[REG_RSI], r->di = g[REG_RDI];
    r->orig_ax = ~0ul;
    r->ip = g[REG_RIP];
    r->cs = (unsigned long)g[REG_CSGSFS] & 0xffff;
    r->flags = g[REG_EFL];
    r->sp = g[REG_RSP];
    r->ss = 0x2b;
}

void trap_regs_to(void *gregs, const struct pt_regs *r)
{
    greg_t *g = gregs;
    g[REG_R15] = r->r15, g[REG_R14] = r->r14, g[REG_R13] = r->r13, g[REG_R12] = r->r12;
    g[REG_RBP] = r->bp, g[REG_RBX] = r->bx, g[REG_R11] = r->r11, g[REG_R10] = r->r10;
    g[REG_R9] = r->r9, g[REG_R8] = r->r8, g[REG_RAX] = r->ax, g[REG_RCX] = r->cx;
    g[REG_RDX] = r->dx, g[REG_RSI] = r->si, g[REG_RDI] = r->di;
    g[REG_EFL] = (greg_t)(((unsigned long)g[REG_EFL] & ~EFLAGS_HANDLER) | (r->flags & EFLAGS_HANDLER));
}

static bool has_post(struct point *pt)
{
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->post_handler)
            return true;
    return false;
}

/* An int3 of ours: the handlers, then resume at the out-of-line copy. As
 * the kernel's kprobe_int3_handler: regs->ip is the address + 1 (after the
 * int3); a pre_handler that returns non-zero has set regs->ip, where the
 * thread goes (the probed instruction and the post_handlers are skipped);
 * otherwise a changed regs->ip is ignored (the kernel's single step sets
 * it). A jprobe sends the thread to its handler. */
static void probe_hit(struct point *pt, ucontext_t *uc)
{
    greg_t *g = uc->uc_mcontext.gregs;
    uintptr_t addr = (uintptr_t)g[REG_RIP] - 1;
    if (rt_in_handler) {
        rt_count_missed(pt);
        g[REG_RIP] = (greg_t)pt->ool;
        return;
    }
    /* an int3 met just before the point was disabled: run on, uncounted */
    if (atomic_load_explicit(&pt->code, memory_order_acquire) == CODE_DISABLED) {
        g[REG_RIP] = (greg_t)pt->ool;
        return;
    }
    atomic_fetch_add_explicit(&pt->hits, 1, memory_order_relaxed);
    if (atomic_load_explicit(&pt->handlers, memory_order_acquire)) {
        struct pt_regs r;
        int changed = 0;
        trap_regs_from(&r, g);
        r.ip = addr + 1;
        rt_run_handlers(pt, &r, &changed);
        rt_hooks.trap_done(pt);
        trap_regs_to(g, &r);
        if (rt_jprobe_divert(pt, uc))
            return;
        if (changed) {
            g[REG_RIP] = (greg_t)r.ip;   /* a handler redirected the thread */
            return;
        }
    }
    trap_resume(pt, g);
}

/* The thread goes on at pt's out-of-line copy, single-stepping its first
 * instruction when a post_handler is to run after it. */
void trap_resume(struct point *pt, void *gregs)
{
    greg_t *g = gregs;
    if (atomic_load_explicit(&pt->handlers, memory_order_acquire) && has_post(pt)) {
        stepping = pt;
        g[REG_EFL] |= (greg_t)EFLAGS_TF;
    }
    g[REG_RIP] = (greg_t)pt->ool;
}

/* The single step after a post_handler's probe: one instruction of the
 * out-of-line copy has run (or a part of an emulated call: step on). The
 * post_handlers see the next instruction in place, as the kernel's
 * resume_singlestep gives it; the thread goes on in the copy unless one
 * changed regs->ip. */
static void step_done(greg_t *g)
{
    struct point *pt = stepping;
    uintptr_t ip = (uintptr_t)g[REG_RIP];
    uint64_t in_place = x86_step_in_place(pt->orig, pt->site_len, pt->addr, pt->ool, ip);
    if (!in_place)
        return;   /* TF stays: the next trap comes after the next instruction */
    stepping = NULL;
    g[REG_EFL] &= ~(greg_t)EFLAGS_TF;
    struct pt_regs r;
    trap_regs_from(&r, g);
    r.ip = in_place;
    rt_run_post_handlers(pt, &r);
    trap_regs_to(g, &r);
    if (r.ip != in_place)
        g[REG_RIP] = (greg_t)r.ip;
}

bool trap_hitting(void) { return trapping > 0; }

/* n < 0: this thread's int3 probes in progress are abandoned (a fault's
 * handler of the program's may leave them: fault.c); how many. Else take
 * n up again. */
int trap_abandon(int n)
{
    if (n < 0) {
        int was = trapping;
        for (; trapping > 0; trapping--)
            rt_trap_leave();
        return was;
    }
    for (; trapping < n; trapping++)
        rt_trap_enter();
    return n;
}

/* A fault of the instruction being single-stepped for a post_handler (from
 * fault.c, in its signal handler): the point's fault_handlers are asked,
 * newest first, with regs->ip the probe address (the kernel's
 * kprobe_fault_handler). Handled: the thread goes to a changed regs->ip,
 * or else retries the instruction (still stepping). Not handled: the step
 * is abandoned, and the program's handler for the signal sees the fault
 * at the probe address (the instruction in place), as in the kernel; with
 * no handler of the program's the copy faults again, to the default
 * action. */
bool trap_step_fault(void *vuc, int trapnr, bool to_program)
{
    ucontext_t *uc = vuc;
    greg_t *g = uc->uc_mcontext.gregs;
    struct point *pt = stepping;
    uintptr_t ip = (uintptr_t)g[REG_RIP];
    if (!pt || ip < pt->ool || ip >= pt->ool + X86_COPY_SPAN)
        return false;
    struct pt_regs r;
    trap_regs_from(&r, g);
    r.ip = pt->addr;
    int handled = 0;
    atomic_store_explicit(&rt_self.running, pt, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp && !handled;
         kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->fault_handler)
            handled = kp->fault_handler(kp, &r, trapnr);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
    if (handled) {
        trap_regs_to(g, &r);
        if (r.ip != pt->addr) {
            stepping = NULL;
            g[REG_EFL] &= ~(greg_t)EFLAGS_TF;
            g[REG_RIP] = (greg_t)r.ip;
        }
        return true;
    }
    stepping = NULL;
    g[REG_EFL] &= ~(greg_t)EFLAGS_TF;
    if (to_program)
        g[REG_RIP] = (greg_t)pt->addr;
    return false;
}

/* ---- checkpoints: where is every other thread? ---- */

static _Atomic int ckpt_gen, ckpt_acks, ckpt_inside;
static bool (*ckpt_fn)(uintptr_t);
/* The checkpoint signal: a real-time one, so it queues and never merges
 * with a trap (a pending SIGTRAP would swallow an int3's SIGTRAP).
 * SIGRTMAX-4, or $KPREWRITE_SIGNAL; 0 when the program took it. */
static _Atomic int ckpt_sig;

static void ckpt_ack(int gen, uintptr_t ip)
{
    if (gen != atomic_load(&ckpt_gen))
        return;
    if (ckpt_fn(ip))
        atomic_fetch_add(&ckpt_inside, 1);
    atomic_fetch_add(&ckpt_acks, 1);
}

/* The user pc of a thread blocked in a system call, from
 * /proc/self/task/TID/syscall ("NR args.. sp pc"); 0 when it runs. */
static uintptr_t blocked_pc(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9')
        return 0;   /* "running", or "-1 ..." (stopped outside a system call) */
    buf[n] = 0;
    char *last = strrchr(buf, ' ');
    return last ? (uintptr_t)strtoull(last + 1, NULL, 0) : 0;
}

static void nap(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

/* Is any other thread at an address inside(ip) says is unsafe? Threads
 * blocked in a system call are read from /proc; running ones are asked
 * with a queued signal whose handler answers with the interrupted ip. A
 * thread stopped inside by a signal handler that has not returned is not
 * seen (its interrupted context is a frame further down). Retries for a while; -EBUSY if one stays inside. */
int trap_checkpoint(bool (*inside)(uintptr_t ip))
{
    pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
    int sig = atomic_load(&ckpt_sig);
    if (!sig)
        return -EBUSY;   /* the program uses our signal: no way to ask */
    for (int attempt = 0; attempt < 100; attempt++) {
        int gen = atomic_fetch_add(&ckpt_gen, 1) + 1, sent = 0, busy = 0;
        ckpt_fn = inside;
        atomic_store(&ckpt_acks, 0);
        atomic_store(&ckpt_inside, 0);
        DIR *d = opendir("/proc/self/task");
        if (!d)
            return -errno;
        struct dirent *de;
        while ((de = readdir(d))) {
            pid_t tid = (pid_t)atoi(de->d_name);
            if (tid <= 0 || tid == self || tid == trap_server_tid)
                continue;
            uintptr_t pc = blocked_pc(tid);
            if (pc) {
                busy += inside(pc);
                continue;
            }
            siginfo_t si;
            memset(&si, 0, sizeof si);
            si.si_signo = sig;
            si.si_code = SI_QUEUE;
            si.si_pid = pid;
            si.si_uid = getuid();
            si.si_value.sival_int = gen;
            if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &si) == 0)
                sent++;
        }
        closedir(d);
        /* answers come within microseconds; a thread that exited meanwhile
         * never answers, so give up waiting after 50 ms and look again */
        for (int w = 0; w < 5000 && atomic_load(&ckpt_acks) < sent; w++)
            nap(10000);
        if (!busy && atomic_load(&ckpt_acks) >= sent && atomic_load(&ckpt_inside) == 0)
            return 0;
        nap(1000000);
    }
    return -EBUSY;
}

/* ---- the handler and the program's own ---- */

static void die_by_default(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __sigaction(SIGTRAP, &dfl, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTRAP);
    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &s, NULL, sizeof(uint64_t));
    raise(SIGTRAP);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction a = prog_act;
    bool from_cpu = si->si_code > 0 || si->si_code == SI_KERNEL;
    if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN) {
        if (from_cpu)
            die_by_default();   /* the kernel ignores no forced trap */
        return;
    }
    if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL) {
        die_by_default();
        return;
    }
    if (a.sa_flags & SA_RESETHAND) {
        prog_act.sa_handler = SIG_DFL;
        prog_act.sa_flags &= ~SA_SIGINFO;
    }
    sigset_t old;
    sigdelset(&a.sa_mask, SIGTRAP);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &a.sa_mask, &old, sizeof(uint64_t));
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, si, uc);
    else
        a.sa_handler(sig);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(uint64_t));
}

static void on_trap(int sig, siginfo_t *si, void *vuc)
{
    ucontext_t *uc = vuc;
    greg_t *g = uc->uc_mcontext.gregs;
    int saved_errno = errno;
    struct point *pt;

    bool brk = si->si_code == SI_KERNEL || si->si_code == TRAP_BRKPT;   /* TRAP_BRKPT: valgrind's int3 */
    if (si->si_code == TRAP_TRACE && stepping) {
        step_done(g);
    } else if (brk && (pt = lookup((uintptr_t)g[REG_RIP] - 1))) {
        rt_trap_enter();
        trapping++;
        probe_hit(pt, uc);
        trapping--;
        rt_trap_leave();
    } else if (brk && rt_jprobe_trap(uc)) {
        /* jprobe_return(): the probed function goes on */
    } else {
        chain(sig, si, vuc);
    }
    errno = saved_errno;
}

static void on_ckpt(int sig, siginfo_t *si, void *vuc)
{
    (void)sig;
    int saved_errno = errno;
    if (si->si_code == SI_QUEUE && si->si_pid == getpid())
        ckpt_ack(si->si_value.sival_int, (uintptr_t)((ucontext_t *)vuc)->uc_mcontext.gregs[REG_RIP]);
    errno = saved_errno;
}

void trap_install(void)
{
    const char *env = getenv("KPREWRITE_SIGNAL");
    int sig = env && *env ? atoi(env) : SIGRTMAX - 4;
    struct sigaction c;
    memset(&c, 0, sizeof c);
    c.sa_sigaction = on_ckpt;
    c.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&c.sa_mask);
    if (sig >= SIGRTMIN && sig <= SIGRTMAX && __sigaction(sig, &c, NULL) == 0)
        atomic_store(&ckpt_sig, sig);

    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_trap;
    /* NODEFER: a probe hit inside a handler traps again (and counts as
     * missed); ONSTACK: on the thread's alternate stack when it has one */
    a.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    sigemptyset(&a.sa_mask);
    if (__sigaction(SIGTRAP, &a, &prog_act) == 0)
        atomic_store(&installed, true);
    else
        fprintf(stderr, "kprewrite-rt: cannot install the SIGTRAP handler: %s (int3 probes will kill)\n",
                strerror(errno));
}

/* ---- the program's signal calls: interposed here, or routed from a
 * probed libc's own functions (libc-guard.c) ---- */

/* What sigaction(sig, act, oact) becomes: TRAP_ACT_RECORDED, done (the
 * program's action for SIGTRAP, or for a fault signal while fault.c holds
 * it, is only recorded and *oact is what it believes installed);
 * TRAP_ACT_COPY, install *copy instead (act with SIGTRAP out of its
 * handler's mask); TRAP_ACT_PASS, install act as it is. */
int trap_route_action(int sig, const struct sigaction *act, struct sigaction *oact, struct sigaction *copy)
{
    if (rt_fault_signal(sig)) {   /* fault.c's while a fault_handler is registered */
        rt_fault_sigaction(sig, act, oact);
        return TRAP_ACT_RECORDED;
    }
    if (sig == SIGTRAP && atomic_load(&installed)) {
        struct sigaction old = prog_act;
        if (act)
            prog_act = *act;
        if (oact)
            *oact = old;
        return TRAP_ACT_RECORDED;
    }
    if (sig == atomic_load(&ckpt_sig) && act)
        atomic_store(&ckpt_sig, 0);   /* the program's now: re-optimizing after a disable gives EBUSY */
    if (act && atomic_load(&installed) && (act->sa_mask.__val[0] & SIG_BIT(SIGTRAP))) {
        *copy = *act;
        copy->sa_mask.__val[0] &= ~SIG_BIT(SIGTRAP);
        return TRAP_ACT_COPY;
    }
    return TRAP_ACT_PASS;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
    struct sigaction copy;
    switch (trap_route_action(sig, act, oact, &copy)) {
    case TRAP_ACT_RECORDED: return 0;
    case TRAP_ACT_COPY: return __sigaction(sig, &copy, oact);
    default: return __sigaction(sig, act, oact);
    }
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    a.sa_flags = SA_RESTART;
    sigemptyset(&a.sa_mask);
    if (sigaction(sig, &a, &o) < 0)
        return SIG_ERR;
    return o.sa_handler;
}

/* What a mask to block may not hold, as bits of the kernel's 64-bit mask:
 * SIGTRAP (an int3 probe's trap with it blocked kills the process), the
 * checkpoint signal, the fault signals while fault.c holds them, and
 * glibc's own two (SIGCANCEL, SIGSETXID), which glibc keeps out of masks
 * too. Bits, not sigdelset: the guard of a probed libc (libc-guard.c)
 * runs this on every pthread_sigmask, and calls no libc. */
uint64_t trap_undeliverable(void)
{
    uint64_t bits = SIG_BIT(GLIBC_SIGCANCEL) | SIG_BIT(GLIBC_SIGSETXID) | rt_fault_bits();
    int ck = atomic_load(&ckpt_sig);
    if (atomic_load(&installed))
        bits |= SIG_BIT(SIGTRAP);
    if (ck > 0 && ck <= 64)
        bits |= SIG_BIT(ck);
    return bits;
}

static int set_mask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t s;
    if (set && (how == SIG_BLOCK || how == SIG_SETMASK)) {
        s = *set;
        s.__val[0] &= ~trap_undeliverable();
        set = &s;
    }
    return (int)syscall(SYS_rt_sigprocmask, how, set, old, sizeof(uint64_t));
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    return set_mask(how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    return set_mask(how, set, old) < 0 ? errno : 0;
}

/* The runtime's own threads (the control directory's server, the trace
 * writer) block every signal but those: through the system call, not
 * libc's pthread_sigmask, which the runtime does not interpose when libc
 * itself is probed (it comes after libc in the lookup scope), and whose
 * probes would be hits inside the runtime. old: the mask before. */
void trap_block_all(uint64_t *old)
{
    uint64_t all = ~trap_undeliverable();
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, sizeof all);
}

void trap_set_mask(const uint64_t *mask)
{
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, mask, 0, sizeof *mask);
}

/* A forked child has one thread: the others' traps never end there. */
void trap_fork_child(void)
{
    rt_traps_reset(trapping);
}
