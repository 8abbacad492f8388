/*
 * The kprobes API of the user runtime (include/kprewrite/kprobes.h):
 * register_kprobe and its kin, enable/disable, and the point statistics,
 * as kernel/kprobes.c does them wherever a baked probe can (kprewrite-rt(3)
 * says where it cannot). kretprobe.c and jprobe.c build on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <string.h>

#include "rt.h"

/* ---- where a kprobe names ---- */

struct symbol_start { const char *sym; uintptr_t start; };
static void symbol_start_cb(struct point *pt, void *arg)
{
    struct symbol_start *s = arg;
    if (!s->start && strcmp(pt->name, s->sym) == 0)
        s->start = pt->addr - pt->offset;
}

struct covering { uintptr_t a; struct point *pt; };
static void covering_cb(struct point *pt, void *arg)
{
    struct covering *c = arg;
    if (!c->pt && c->a > pt->addr && c->a < pt->addr + pt->site_len)
        c->pt = pt;
}

/* Is a in an executable segment of a loaded object? (The kernel refuses an
 * address outside its text with -EINVAL.) */
static int in_text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t a = *(uintptr_t *)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && a >= lo && a - lo < ph->p_memsz)
            return 1;
    }
    return 0;
}

/* -ENOENT from rt_resolve for an addr that lies in no code: -EINVAL, as
 * the kernel says for an address outside its text. Without rt_lock: the
 * loader's lock is taken before it (pools.c registers pools from inside
 * dl_iterate_phdr). */
int rt_no_point(const struct kprobe *kp)
{
    uintptr_t a = (uintptr_t)kp->addr + kp->offset;
    return kp->symbol_name || dl_iterate_phdr(in_text_cb, &a) ? -ENOENT : -EINVAL;
}

/* As the kernel's _kprobe_addr: symbol_name or addr (not both, not
 * neither), plus offset, for either; symbol + offset past the function's
 * end names what lies there. need_entry (a kretprobe, a jprobe): -EINVAL
 * unless that is a function's entry (the kernel's kprobe_on_func_entry,
 * checked first). Then what is there: a baked point, or inside one's
 * bytes (-EILSEQ: not an instruction boundary, or an instruction its jump
 * replaced), or nothing baked (-ENOENT; rt_no_point tells an address in no
 * code). */
int rt_resolve(const struct kprobe *kp, struct point **ptp, bool need_entry)
{
    const char *sym = kp->symbol_name;
    if ((sym && kp->addr) || (!sym && !kp->addr) || kp->__point)
        return -EINVAL;
    struct point *pt = sym ? rt_find_point(sym, kp->offset, 0) : NULL;
    uintptr_t a = (uintptr_t)kp->addr + kp->offset;
    if (!pt && sym) {
        struct symbol_start s = { sym, 0 };
        rt_each_ready_point(symbol_start_cb, &s);   /* (rt_find_point made them ready) */
        if (!s.start)
            return -ENOENT;
        if (need_entry && kp->offset)
            return -EINVAL;
        a = s.start + kp->offset;
    }
    if (!pt)
        pt = rt_find_point(NULL, 0, a);
    if (!pt) {
        struct covering c = { a, NULL };
        rt_each_ready_point(covering_cb, &c);
        return c.pt ? -EILSEQ : -ENOENT;
    }
    if (need_entry && pt->offset != 0 && !(pt->flags & KPRW_F_AFTER_ENDBR))
        return -EINVAL;
    *ptp = pt;
    return 0;
}

/* ---- the point's code ---- */

/* Called from a handler (the thread marks a point, not the runtime): the
 * code it writes calls libc, so the probed code's vector state is saved. */
static bool from_handler(void)
{
    return atomic_load_explicit(&rt_self.running, memory_order_relaxed) != RT_INSIDE;
}

struct follow { struct point *pt; int rc; };
static void follow_cb(void *arg)
{
    struct follow *f = arg;
    f->rc = patch_apply(f->pt);
}

/* Bring pt's code to what it wants now (patch_wanted). 0 when it is armed
 * as needed: an int3 where the jump could not be written back yet (a
 * thread may be inside) is armed. Under rt_lock. */
static int code_follow(struct point *pt)
{
    struct follow f = { pt, 0 };
    if (from_handler())
        rt_with_xstate_saved(follow_cb, &f);
    else
        follow_cb(&f);
    enum code_state want = patch_wanted(pt), have = (enum code_state)atomic_load(&pt->code);
    if (want == have || (want == CODE_OPTIMIZED && have == CODE_INT3))
        return 0;
    return f.rc < 0 ? f.rc : -EIO;
}

/* What the fast paths and the code read from the point's kprobes (under
 * rt_lock): pt->kret, the holder of its only kprobe when that is an
 * enabled kretprobe with no entry_handler (kretprobe-fast.S); pt->api_off,
 * kprobes registered and all disabled, which disarms the point as the
 * kernel's __disable_kprobe does. The caller brings the code along. */
void rt_point_changed(struct point *pt)
{
    struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_relaxed);
    void *h = NULL;
    if (kp && !kp->__next && rt_is_kretprobe(kp) &&
        !(__atomic_load_n(&kp->flags, __ATOMIC_RELAXED) & KPROBE_FLAG_DISABLED) &&
        !((struct kretprobe *)kp)->entry_handler)
        h = ((struct kretprobe *)kp)->__holder;
    atomic_store_explicit(&pt->kret, h, memory_order_release);
    bool off = kp != NULL;
    for (; kp; kp = kp->__next)
        off &= (__atomic_load_n(&kp->flags, __ATOMIC_RELAXED) & KPROBE_FLAG_DISABLED) != 0;
    pt->api_off = off;
}

/* ---- register, unregister ---- */

EXPORT int register_kprobe(struct kprobe *kp)
{
    if (!kp)
        return -EINVAL;
    rt_lock_take();
    struct point *pt;
    int rc = rt_resolve(kp, &pt, false);
    if (rc == 0)
        rc = rt_register_kprobe_at(kp, pt, false);
    rt_lock_drop();
    return rc == -ENOENT ? rt_no_point(kp) : rc;
}

static void link_kprobe(struct point *pt, struct kprobe *kp, bool last)
{
    struct kprobe *_Atomic *pp = &pt->handlers;
    while (last && *pp)
        pp = (struct kprobe *_Atomic *)&(*pp)->__next;
    kp->__next = *pp;
    atomic_store_explicit(pp, kp, memory_order_release);
}

/* register_kprobe on a resolved point. A failure leaves kp as it was.
 * Handlers run newest first, as the kernel's add_new_kprobe puts a kprobe
 * at the head of its address's list; a jprobe goes last (the kernel's
 * break_handler kprobes went to the tail). Under rt_lock. */
int rt_register_kprobe_at(struct kprobe *kp, struct point *pt, bool jprobe)
{
    unsigned flags = kp->flags & KPROBE_CALLER_FLAGS;   /* nothing of the runtime's */
    bool int3 = kp->post_handler || jprobe, was_off = pt->api_off;
    /* the code first: a post_handler or a jprobe needs the int3 path, and
     * an enabled kprobe arms a point whose kprobes were all disabled */
    pt->nint3 += int3;
    pt->api_off = (flags & KPROBE_FLAG_DISABLED) && (was_off || !atomic_load(&pt->handlers));
    int rc = code_follow(pt);
    if (rc < 0) {
        pt->nint3 -= int3;
        pt->api_off = was_off;
        code_follow(pt);
        return rc;
    }
    kp->flags = flags;
    kp->addr = (void *)pt->addr;   /* kept after unregister, as the kernel keeps it */
    kp->__point = pt;
    kp->nmissed = 0;
    if (flags & KPROBE_FLAG_FPU)
        pt->nfpu++;
    if ((flags & KPROBE_FLAG_FPU) || kp->fault_handler)
        atomic_fetch_add(&pt->cpath, 1);
    if (kp->fault_handler)
        rt_fault_users(1);
    link_kprobe(pt, kp, jprobe);
    rt_point_changed(pt);
    return 0;
}

/* The runtime's own kprobe on pt (libc-guard.c): the last of its
 * handlers, so that those the program registers see its call as it made
 * it; pt is never disarmed from now on (patch_wanted). Under rt_lock. */
int rt_register_guard(struct kprobe *kp, struct point *pt)
{
    kp->flags = 0;
    kp->addr = (void *)pt->addr;
    kp->__point = pt;
    kp->nmissed = 0;
    pt->guard = true;
    link_kprobe(pt, kp, true);
    rt_point_changed(pt);
    return code_follow(pt);
}

/* After unregister_kprobe returns, no thread runs the handlers it removed
 * (as synchronize_rcu does in the kernel): each thread shows the point
 * whose handlers it runs; one membarrier makes our unlink visible to every
 * running thread and their marks visible to us. Called from a handler
 * (which the kernel does not allow), it cannot wait for threads that wait
 * in the same way (two such threads on one point would wait for each other
 * forever): those are past their handlers of the point but for the one
 * they are in, which is not the unregistered kprobe's unless both
 * unregister the same one. */
void rt_wait_for_handlers(struct point *pt)
{
    bool inside = rt_in_handler;
    if (inside)
        atomic_store(&rt_self.unreg_waiting, true);
    if (!rt_membarrier())
        atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        bool busy = rt_traps_running() != 0 && !inside;
        rt_lock_take();
        for (struct rt_thread *c = rt_threads(); c && !busy; c = c->next)
            if (c != &rt_self && atomic_load_explicit(&c->running, memory_order_acquire) == pt &&
                !(inside && atomic_load(&c->unreg_waiting)))
                busy = true;
        rt_lock_drop();
        if (!busy)
            break;
        sched_yield();
    }
    if (inside)
        atomic_store(&rt_self.unreg_waiting, false);
}

/* Take kp off its point; the point to wait for, or NULL when kp was not
 * registered (its addr is then cleared, as the kernel does for "an
 * incorrect probe"). Under rt_lock. */
struct point *rt_unlink_kprobe(struct kprobe *kp)
{
    struct point *pt = kp->__point;
    bool found = false;
    for (struct kprobe *_Atomic *pp = pt ? &pt->handlers : NULL; pp && *pp;
         pp = (struct kprobe *_Atomic *)&(*pp)->__next)
        if (*pp == kp) {
            /* kp->__next stays valid for a thread still walking past kp */
            atomic_store_explicit(pp, kp->__next, memory_order_release);
            found = true;
            break;
        }
    if (!found) {
        kp->addr = NULL;
        return NULL;
    }
    kp->__point = NULL;
    if (kp->flags & KPROBE_FLAG_FPU)
        pt->nfpu--;
    if ((kp->flags & KPROBE_FLAG_FPU) || kp->fault_handler)
        atomic_fetch_sub(&pt->cpath, 1);
    if (kp->fault_handler)
        rt_fault_users(-1);
    if ((kp->post_handler || rt_is_jprobe(kp)) && pt->nint3)
        pt->nint3--;
    rt_point_changed(pt);
    code_follow(pt);   /* may optimize again, or disarm: best effort */
    return pt;
}

EXPORT void unregister_kprobe(struct kprobe *kp)
{
    if (!kp)
        return;
    rt_lock_take();
    struct point *pt = rt_unlink_kprobe(kp);
    rt_lock_drop();
    if (pt)
        rt_wait_for_handlers(pt);
}

EXPORT int register_kprobes(struct kprobe **kps, int num)
{
    if (!kps || num <= 0)
        return -EINVAL;
    for (int i = 0; i < num; i++) {
        int rc = register_kprobe(kps[i]);
        if (rc < 0) {
            unregister_kprobes(kps, i);   /* the ones registered so far */
            return rc;
        }
    }
    return 0;
}

EXPORT void unregister_kprobes(struct kprobe **kps, int num)
{
    for (int i = 0; kps && i < num; i++)
        unregister_kprobe(kps[i]);
}

/* ---- enable, disable ---- */

/* enable_kprobe / disable_kprobe: the flag, what the fast paths precompute
 * from it (kretprobe-fast.S), and the point's code: the last enabled
 * kprobe of a point disarms it, the first arms it again (the kernel's
 * __disable_kprobe, enable_kprobe). A failure to write the code leaves the
 * flag as it was. */
static int set_disabled(struct kprobe *kp, bool disabled)
{
    if (!kp)
        return -EINVAL;
    rt_lock_take();
    struct point *pt = kp->__point;
    int rc = -EINVAL;
    if (pt) {
        unsigned old = __atomic_load_n(&kp->flags, __ATOMIC_RELAXED);
        if (disabled)
            __atomic_or_fetch(&kp->flags, (unsigned)KPROBE_FLAG_DISABLED, __ATOMIC_RELEASE);
        else
            __atomic_and_fetch(&kp->flags, ~(unsigned)KPROBE_FLAG_DISABLED, __ATOMIC_RELEASE);
        rt_point_changed(pt);
        if ((rc = code_follow(pt)) < 0) {
            __atomic_store_n(&kp->flags, old, __ATOMIC_RELEASE);
            rt_point_changed(pt);
            code_follow(pt);
        }
        rt_hooks.kprobe_toggled(kp);
    }
    rt_lock_drop();
    return rc;
}

EXPORT int enable_kprobe(struct kprobe *kp) { return set_disabled(kp, false); }
EXPORT int disable_kprobe(struct kprobe *kp) { return set_disabled(kp, true); }

/* ---- statistics (kprewrite's) ---- */

static int stats_of(struct point *pt, struct kprewrite_point_stats *st)
{
    if (!pt)
        return -ENOENT;
    uint64_t h, m;
    rt_stats(pt, &h, &m);
    st->hits = h;
    st->nmissed = m;
    return 0;
}

EXPORT int kprewrite_point_stats(const char *symbol_name, unsigned int offset, struct kprewrite_point_stats *st)
{
    if (!symbol_name || !st)
        return -EINVAL;
    rt_lock_take();
    int rc = stats_of(rt_find_point(symbol_name, offset, 0), st);
    rt_lock_drop();
    return rc;
}

EXPORT int kprewrite_point_stats_addr(const void *addr, struct kprewrite_point_stats *st)
{
    if (!st)
        return -EINVAL;
    rt_lock_take();
    int rc = stats_of(rt_find_point(NULL, 0, (uintptr_t)addr), st);
    rt_lock_drop();
    return rc;
}
