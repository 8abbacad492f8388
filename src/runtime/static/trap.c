/*
 * The static runtime's int3 probes: a SIGTRAP handler (raw rt_sigaction)
 * that finds the point whose site the int3 is at, counts the hit and
 * resumes at the point's out-of-line copy (an int3 probe's copy of its
 * first instruction, or an optimized point's relocated instructions in
 * its detour, where kprewrite ctl unoptimize put an int3), as the user
 * runtime does. Any other SIGTRAP is the program's: the default action
 * is put back and the signal sent again, so that the process ends as it
 * would have without the runtime. A return probe's int3 counts like a
 * kprobe's: its return is not hooked (count-only, kprs_kret_enter).
 */
#include "rt.h"
#include "kprewrite/ptrace.h"

/* ucontext_t (x86-64): uc_mcontext.gregs at 40, in the order of
 * <sys/ucontext.h>'s REG_R8 ... REG_RIP, REG_EFL */
#define UC_GREG(uc, n) ((uint64_t *)((char *)(uc) + 40) + (n))
enum { G_R8, G_R9, G_R10, G_R11, G_R12, G_R13, G_R14, G_R15, G_RDI, G_RSI, G_RBP, G_RBX, G_RDX, G_RAX, G_RCX, G_RSP,
       G_RIP, G_EFL };
#define UC_RIP(uc) UC_GREG(uc, G_RIP)
#define SI_KERNEL 0x80

/* The probed code's registers at the int3, for a guard or an event. */
static void regs_of(void *uc, struct pt_regs *p)
{
    const uint64_t *g = UC_GREG(uc, 0);
    *p = (struct pt_regs){ .r15 = g[G_R15], .r14 = g[G_R14], .r13 = g[G_R13], .r12 = g[G_R12], .bp = g[G_RBP],
                           .bx = g[G_RBX], .r11 = g[G_R11], .r10 = g[G_R10], .r9 = g[G_R9], .r8 = g[G_R8],
                           .ax = g[G_RAX], .cx = g[G_RCX], .dx = g[G_RDX], .si = g[G_RSI], .di = g[G_RDI],
                           .orig_ax = ~0ul, .cs = 0x33, .flags = g[G_EFL], .sp = g[G_RSP], .ss = 0x2b };
}

/* The entry whose site is addr, or -1 (a binary search of sorted). */
static long point_at(const struct kprs_rt *r, uintptr_t addr)
{
    long lo = 0, hi = (long)r->t->nentries - 1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        uintptr_t s = kprs_site(r, r->sorted[mid]);
        if (s == addr)
            return r->sorted[mid];
        if (s < addr)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static void pass_on(void)
{
    struct kprs_sigaction dfl = { 0 };
    kprs_sys(SYS_rt_sigaction, KPRS_SIGTRAP, (long)&dfl, 0, 8);
    long pid = kprs_sys(SYS_getpid, 0, 0, 0, 0), tid = kprs_sys(SYS_gettid, 0, 0, 0, 0);
    kprs_sys(SYS_tgkill, pid, tid, KPRS_SIGTRAP, 0);   /* delivered when the handler returns */
}

static void on_trap(int sig, void *info, void *uc)
{
    (void)sig;
    struct kprs_rt r;
    kprs_rt_get(&r);
    int code = *(int *)((char *)info + 8);   /* siginfo_t's si_code */
    uint64_t *rip = UC_RIP(uc);
    long i = code == SI_KERNEL ? point_at(&r, *rip - 1) : -1;
    if (i < 0) {
        pass_on();
        return;
    }
    struct kprs_point *pt = &r.pt[i];
    if (!__atomic_load_n(&pt->disabled, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&pt->hits, 1, __ATOMIC_RELAXED);
        if (pt->guard || pt->ev) {
            struct pt_regs regs;
            regs_of(uc, &regs);
            kprs_hit(pt, &regs, 0);   /* (a return event's call is not hooked on the int3 path) */
        }
    }
    const struct kprw_entry *e = &r.e[i];
    *rip = (uintptr_t)r.t + (uintptr_t)(intptr_t)e->code_rel + e->ool_off;
}

int kprs_trap_install(void)
{
    struct kprs_sigaction sa = { .handler = (void *)on_trap,
                                 .flags = KPRS_SA_SIGINFO | KPRS_SA_RESTORER | KPRS_SA_NODEFER | KPRS_SA_ONSTACK,
                                 .restorer = kprs_sigreturn };
    return kprs_sys(SYS_rt_sigaction, KPRS_SIGTRAP, (long)&sa, 0, 8) < 0 ? -1 : 0;
}

/* sorted: the entry indices by site address (a heap sort: no memory but
 * the array, n log n for busybox's thousands of points) */
static void sift(const struct kprs_rt *r, uint32_t *v, long root, long n)
{
    for (long child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && kprs_site(r, v[child + 1]) > kprs_site(r, v[child]))
            child++;
        if (kprs_site(r, v[root]) >= kprs_site(r, v[child]))
            return;
        uint32_t x = v[root];
        v[root] = v[child];
        v[child] = x;
    }
}

void kprs_sort_sites(struct kprs_rt *r)
{
    long n = r->t->nentries;
    uint32_t *v = r->sorted;
    for (long i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    for (long i = n / 2 - 1; i >= 0; i--)
        sift(r, v, i, n);
    for (long end = n - 1; end > 0; end--) {
        uint32_t x = v[0];
        v[0] = v[end];
        v[end] = x;
        sift(r, v, 0, end);
    }
}
