/*
 * The kprobes API of the user runtime (include/kprewrite/kprobes.h):
 * register_kprobe and its kin, enable/disable, and the point statistics.
 * kretprobe.c builds return probes on it.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "rt.h"

EXPORT int register_kprobe(struct kprobe *kp)
{
    if (!kp || (kp->symbol_name && kp->addr) || (!kp->symbol_name && !kp->addr) || kp->__point)
        return -EINVAL;
    rt_lock_take();
    struct point *pt = rt_find_point(kp->symbol_name, kp->offset, (uintptr_t)kp->addr);
    int rc = pt ? rt_register_kprobe_at(kp, pt) : -ENOENT;
    rt_lock_drop();
    return rc;
}

/* register_kprobe on a point found already. Under rt_lock. */
int rt_register_kprobe_at(struct kprobe *kp, struct point *pt)
{
    if (kp->post_handler) {
        /* a post_handler runs after the probed instruction: only the int3
         * path can do that (single step), so the point is unoptimized */
        pt->npost++;
        int rc = patch_apply(pt);
        if (rc < 0) {
            pt->npost--;
            patch_apply(pt);
            return rc;
        }
    }
    if (kp->symbol_name)
        kp->flags |= KPROBE_FLAG_ADDR_RESOLVED;
    kp->addr = (void *)pt->addr;
    kp->__point = pt;
    kp->nmissed = 0;
    kp->flags &= ~(unsigned)(KPROBE_FLAG_GONE | KPROBE_FLAG_OPTIMIZED);
    if (patch_wanted(pt) == CODE_OPTIMIZED)
        kp->flags |= KPROBE_FLAG_OPTIMIZED;
    if (kp->flags & KPROBE_FLAG_FPU)
        atomic_fetch_add(&pt->fpu, 1);
    /* append, so handlers run in registration order */
    struct kprobe *_Atomic *pp = &pt->handlers;
    while (*pp)
        pp = (struct kprobe *_Atomic *)&(*pp)->__next;
    kp->__next = NULL;
    atomic_store_explicit(pp, kp, memory_order_release);
    rt_point_changed(pt);
    return 0;
}

/* What a return probe's entry fast path reads (kretprobe-fast.S): the
 * holder of the point's only handler when that is an enabled kretprobe
 * with no entry_handler. Under rt_lock. */
void rt_point_changed(struct point *pt)
{
    struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_relaxed);
    void *h = NULL;
    if (kp && !kp->__next && (kp->flags & KPROBE_FLAG_RETPROBE) &&
        !(__atomic_load_n(&kp->flags, __ATOMIC_RELAXED) & KPROBE_FLAG_DISABLED) &&
        !((struct kretprobe *)kp)->entry_handler)
        h = ((struct kretprobe *)kp)->__holder;
    atomic_store_explicit(&pt->kret, h, memory_order_release);
}

/* After unregister_kprobe returns, no thread runs the handlers it removed
 * (as synchronize_rcu does in the kernel): each thread shows the point
 * whose handlers it runs; one membarrier makes our unlink visible to every
 * running thread and their marks visible to us. Not from inside a handler
 * of that point (it would wait for itself). */
void rt_wait_for_handlers(struct point *pt)
{
    if (!rt_membarrier())
        atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        bool busy = rt_traps_running() != 0 && !rt_in_handler;
        rt_lock_take();
        for (struct rt_thread *c = rt_threads(); c && !busy; c = c->next)
            if (c != &rt_self && atomic_load_explicit(&c->running, memory_order_acquire) == pt)
                busy = true;
        rt_lock_drop();
        if (!busy)
            return;
        sched_yield();
    }
}

EXPORT void unregister_kprobe(struct kprobe *kp)
{
    if (!kp)
        return;
    rt_lock_take();
    struct point *pt = kp->__point;
    bool found = false;
    if (pt) {
        for (struct kprobe *_Atomic *pp = &pt->handlers; *pp; pp = (struct kprobe *_Atomic *)&(*pp)->__next)
            if (*pp == kp) {
                /* kp->__next stays valid for a thread still walking past kp */
                atomic_store_explicit(pp, kp->__next, memory_order_release);
                found = true;
                break;
            }
    }
    if (found) {
        rt_point_changed(pt);
        if (kp->flags & KPROBE_FLAG_FPU)
            atomic_fetch_sub(&pt->fpu, 1);
        if (kp->post_handler && pt->npost) {
            pt->npost--;
            patch_apply(pt);   /* may optimize again */
        }
        kp->__point = NULL;
        /* Unlike the kernel, forget an address we resolved, so the same
         * struct kprobe (symbol_name set) can be registered again. */
        if (kp->flags & KPROBE_FLAG_ADDR_RESOLVED) {
            kp->addr = NULL;
            kp->flags &= ~KPROBE_FLAG_ADDR_RESOLVED;
        }
    } else {
        kp->addr = NULL;   /* as the kernel does for an incorrect probe */
    }
    rt_lock_drop();
    if (found)
        rt_wait_for_handlers(pt);
}

EXPORT int register_kprobes(struct kprobe **kps, int num)
{
    if (!kps || num <= 0)
        return -EINVAL;
    for (int i = 0; i < num; i++) {
        int rc = register_kprobe(kps[i]);
        if (rc < 0) {
            /* roll back the ones registered so far */
            for (int j = 0; j < i; j++)
                unregister_kprobe(kps[j]);
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

/* enable_kprobe / disable_kprobe: the flag, then what the fast paths
 * precompute from it (kretprobe-fast.S). */
static int set_disabled(struct kprobe *kp, bool disabled)
{
    if (!kp || !kp->__point)
        return -EINVAL;
    rt_lock_take();
    if (disabled)
        __atomic_or_fetch(&kp->flags, (unsigned)KPROBE_FLAG_DISABLED, __ATOMIC_RELEASE);
    else
        __atomic_and_fetch(&kp->flags, ~(unsigned)KPROBE_FLAG_DISABLED, __ATOMIC_RELEASE);
    rt_hooks.kprobe_toggled(kp);
    if (kp->__point)   /* unregistered since the check above */
        rt_point_changed(kp->__point);
    rt_lock_drop();
    return 0;
}

EXPORT int enable_kprobe(struct kprobe *kp) { return set_disabled(kp, false); }
EXPORT int disable_kprobe(struct kprobe *kp) { return set_disabled(kp, true); }

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
    rt_lock_take();
    int rc = stats_of(symbol_name ? rt_find_point(symbol_name, offset, 0) : NULL, st);
    rt_lock_drop();
    return rc;
}

EXPORT int kprewrite_point_stats_addr(const void *addr, struct kprewrite_point_stats *st)
{
    rt_lock_take();
    int rc = stats_of(rt_find_point(NULL, 0, (uintptr_t)addr), st);
    rt_lock_drop();
    return rc;
}
