/*
 * Return probes. A kretprobe is a kprobe on the function entry (a point
 * baked as SYM%return) whose pre_handler takes an instance, runs the
 * entry_handler and replaces the return address with the image's return
 * trampoline (in the pool). The function's `ret` then lands in the
 * trampoline, which calls __kprewrite_return: it finds the call's instance,
 * runs the handler, gives the instance back and returns the real address.
 *
 * Instances: maxactive of them per kretprobe, allocated at registration,
 * on a lock-free free list (index + tag against ABA). Each thread keeps its
 * hooked calls on a list, newest first, with the stack address of each
 * return address ("slot").
 *
 * Stale instances (a longjmp, siglongjmp or exception left the frame
 * without returning) are found by stack address: a call entered at a slot
 * where an older instance still waits proves that one dead; a return at
 * slot S proves dead every newer instance (its frame was below S, or on a
 * stack that was left). Exceptions: before the unwinder runs, every hooked
 * return address of the thread is put back (see unwind.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kprewrite/pool.h"
#include "rt.h"

struct holder {
    struct kretprobe *_Atomic rp;      /* NULL once unregistered */
    struct point *pt;
    uintptr_t tramp;
    size_t isize;                      /* bytes an instance */
    uint32_t n;
    _Atomic uint64_t free_head;        /* tag << 32 | (index + 1); low half 0: empty */
    char *mem;
};

static struct kretprobe_instance *inst(const struct holder *h, uint32_t i)
{
    return (struct kretprobe_instance *)(h->mem + (size_t)i * h->isize);
}

static struct kretprobe_instance *inst_get(struct holder *h)
{
    uint64_t old = atomic_load_explicit(&h->free_head, memory_order_acquire);
    for (;;) {
        uint32_t i = (uint32_t)old;
        if (!i)
            return NULL;
        struct kretprobe_instance *ri = inst(h, i - 1);
        uint32_t next = __atomic_load_n(&ri->__free_next, __ATOMIC_RELAXED);
        uint64_t nw = (((old >> 32) + 1) << 32) | next;
        if (atomic_compare_exchange_weak_explicit(&h->free_head, &old, nw, memory_order_acquire,
                                                  memory_order_acquire))
            return ri;
    }
}

static void inst_put(struct holder *h, struct kretprobe_instance *ri)
{
    uint32_t i = (uint32_t)(((char *)ri - h->mem) / h->isize) + 1;
    uint64_t old = atomic_load_explicit(&h->free_head, memory_order_relaxed);
    for (;;) {
        __atomic_store_n(&ri->__free_next, (uint32_t)old, __ATOMIC_RELAXED);
        uint64_t nw = (((old >> 32) + 1) << 32) | i;
        if (atomic_compare_exchange_weak_explicit(&h->free_head, &old, nw, memory_order_release,
                                                  memory_order_relaxed))
            return;
    }
}

/* Give back an instance whose frame is gone; put its return address back
 * first when asked and the slot still holds the trampoline. */
static void drop(struct kretprobe_instance *ri, bool unhook)
{
    struct holder *h = ri->__holder;
    if (unhook && *ri->__slot == h->tramp)
        *ri->__slot = (unsigned long)ri->ret_addr;
    inst_put(h, ri);
}

/* The entry: a kretprobe's kp.pre_handler (a handler of its point). */
int rt_kretprobe_entry(struct kprobe *kp, struct pt_regs *regs)
{
    struct kretprobe *rp = (struct kretprobe *)kp;
    struct holder *h = rp->__holder;
    unsigned long *slot = (unsigned long *)regs->sp;
    /* an older call hooked at this very slot is dead: its frame is reused */
    for (struct kretprobe_instance **pp = &rt_self.ractive; *pp;) {
        if ((*pp)->__slot == slot) {
            struct kretprobe_instance *dead = *pp;
            *pp = dead->__next;
            drop(dead, false);
        } else {
            pp = &(*pp)->__next;
        }
    }
    struct kretprobe_instance *ri = inst_get(h);
    if (!ri) {
        __atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    ri->rp = rp;
    ri->ret_addr = (void *)*slot;
    ri->thread = pthread_self();
    ri->__slot = slot;
    if (rp->entry_handler && rp->entry_handler(ri, regs)) {
        inst_put(h, ri);
        return 0;
    }
    ri->__next = rt_self.ractive;
    rt_self.ractive = ri;
    *slot = h->tramp;
    return 0;
}

struct ret_call { struct kretprobe *rp; struct kretprobe_instance *ri; struct pt_regs *regs; };
static void ret_call_cb(void *arg)
{
    struct ret_call *c = arg;
    c->rp->handler(c->ri, c->regs);
}

/* Called by the image's return trampoline; returns where the probed
 * function really returns to. regs sits just below the return slot. */
EXPORT unsigned long __kprewrite_return(void *vregs)
{
    struct pt_regs *regs = vregs;
    unsigned long *slot = (unsigned long *)((char *)regs + PTREGS_SIZE);
    struct point *outer = atomic_load_explicit(&rt_self.running, memory_order_relaxed);
    struct kretprobe_instance *ri;
    while ((ri = rt_self.ractive) && ri->__slot != slot) {
        /* newer than our call, so dead. Below us on this stack: that memory
         * is ours now (this frame), never write it. Above: another stack
         * that was left (a coroutine may come back): unhook it. */
        rt_self.ractive = ri->__next;
        drop(ri, ri->__slot > slot);
    }
    if (!ri) {
        static const char msg[] = "kprewrite-rt: a return trampoline was reached with no matching call "
                                  "(a return address was moved or a stack was switched); aborting\n";
        if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
        abort();
    }
    rt_self.ractive = ri->__next;
    unsigned long ret = (unsigned long)ri->ret_addr;
    struct holder *h = ri->__holder;
    if (!outer) {
        /* the recursion guard first: unregister waits on it, then rp */
        atomic_store_explicit(&rt_self.running, h->pt, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        struct kretprobe *rp = atomic_load_explicit(&h->rp, memory_order_acquire);
        if (rp && rp->handler && !(rp->kp.flags & KPROBE_FLAG_DISABLED)) {
            regs->ip = ret;
            regs->sp = (unsigned long)(slot + 1);
            regs->orig_ax = ~0ul;
            regs->flags = 0x202;
            struct ret_call rc = { rp, ri, regs };
            if (rp->kp.flags & KPROBE_FLAG_FPU)
                rt_with_xstate_saved(ret_call_cb, &rc);   /* xmm0/xmm1 may hold the return value */
            else
                ret_call_cb(&rc);
        }
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
    } else {
        /* a return inside a handler: no handler runs */
        struct kretprobe *rp = atomic_load_explicit(&h->rp, memory_order_acquire);
        atomic_fetch_add_explicit(&h->pt->missed, 1, memory_order_relaxed);
        if (rp)
            __atomic_fetch_add(&rp->kp.nmissed, 1, __ATOMIC_RELAXED);
    }
    inst_put(h, ri);
    return ret;
}

/* A thread exits (pthread_exit inside probed calls): its frames are gone. */
void rt_kretprobe_thread_exit(struct rt_thread *t)
{
    struct kretprobe_instance *ri;
    while ((ri = t->ractive)) {
        t->ractive = ri->__next;
        drop(ri, false);
    }
}

/* An exception is about to unwind this thread's stack: every hooked frame
 * gets its real return address back, so the unwinder finds its FDE. The
 * frames it does not unwind return normally, without their return handler. */
void rt_kretprobe_unhook_all(void)
{
    struct kretprobe_instance *ri;
    while ((ri = rt_self.ractive)) {
        rt_self.ractive = ri->__next;
        drop(ri, true);
    }
}

/* Does this process run with a CET shadow stack? A replaced return address
 * would then kill it at the first hooked return. */
static bool shadow_stack(void)
{
    const char *t = getenv("KPREWRITE_TEST_SHSTK");   /* tests: pretend */
    if (t && *t == '1')
        return true;
    unsigned long features = 0;
    /* ARCH_SHSTK_STATUS (Linux 6.6); older kernels: EINVAL, no shadow stack */
    return syscall(SYS_arch_prctl, 0x5005, &features) == 0 && (features & 1);
}

static int default_maxactive(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 5 ? (int)(2 * n) : 10;
}

EXPORT int register_kretprobe(struct kretprobe *rp)
{
    if (!rp || rp->__holder)
        return -EINVAL;
    struct kprobe *kp = &rp->kp;
    if ((kp->symbol_name && kp->addr) || (!kp->symbol_name && !kp->addr) || kp->__point)
        return -EINVAL;
    if (kp->offset != 0)
        return -EINVAL;   /* a return probe is on the function entry */
    if (shadow_stack()) {
        fprintf(stderr, "kprewrite-rt: register_kretprobe(%s): this process runs with a CET shadow stack, "
                "which forbids replacing return addresses; return probes are refused\n",
                kp->symbol_name ? kp->symbol_name : "(address)");
        return -EOPNOTSUPP;
    }
    rt_unwind_hooks_linked();
    if (rp->maxactive <= 0)
        rp->maxactive = default_maxactive();
    if (rp->maxactive > (1 << 20))
        return -E2BIG;
    size_t isize = (sizeof(struct kretprobe_instance) + rp->data_size + 15) & ~(size_t)15;
    struct holder *h = calloc(1, sizeof *h);
    char *mem = calloc((size_t)rp->maxactive, isize);
    if (!h || !mem) {
        free(h);
        free(mem);
        return -ENOMEM;
    }
    h->isize = isize;
    h->n = (uint32_t)rp->maxactive;
    h->mem = mem;
    for (uint32_t i = 0; i < h->n; i++) {
        inst(h, i)->__holder = h;
        inst(h, i)->__free_next = i + 2 <= h->n ? i + 2 : 0;
    }
    atomic_store(&h->free_head, 1);
    pthread_mutex_lock(&rt_lock);
    struct point *pt = rt_find_point(kp->symbol_name, 0, (uintptr_t)kp->addr);
    int rc = -ENOENT;   /* not baked as SYM%return */
    if (pt && pt->kind == KPRW_KIND_R && pt->tramp) {
        h->pt = pt;
        h->tramp = pt->tramp;
        atomic_store(&h->rp, rp);
        rp->__holder = h;
        rp->nmissed = 0;
        kp->pre_handler = rt_kretprobe_entry;
        kp->post_handler = NULL;
        rc = rt_register_kprobe_at(kp, pt);
        if (rc < 0)
            rp->__holder = NULL;
    }
    pthread_mutex_unlock(&rt_lock);
    if (rc < 0) {
        free(h);
        free(mem);
    }
    return rc;
}

EXPORT void unregister_kretprobe(struct kretprobe *rp)
{
    if (!rp || !rp->__holder)
        return;
    struct holder *h = rp->__holder;
    atomic_store_explicit(&h->rp, NULL, memory_order_release);
    unregister_kprobe(&rp->kp);   /* waits for entry and return handlers */
    rp->__holder = NULL;
    /* Calls hooked before this may still return through the trampoline:
     * their instances stay valid, so the holder is kept (never freed). */
}

EXPORT int register_kretprobes(struct kretprobe **rps, int num)
{
    if (!rps || num <= 0)
        return -EINVAL;
    for (int i = 0; i < num; i++) {
        int rc = register_kretprobe(rps[i]);
        if (rc < 0) {
            for (int j = 0; j < i; j++)
                unregister_kretprobe(rps[j]);
            return rc;
        }
    }
    return 0;
}

EXPORT void unregister_kretprobes(struct kretprobe **rps, int num)
{
    for (int i = 0; rps && i < num; i++)
        unregister_kretprobe(rps[i]);
}

EXPORT int enable_kretprobe(struct kretprobe *rp) { return rp ? enable_kprobe(&rp->kp) : -EINVAL; }
EXPORT int disable_kretprobe(struct kretprobe *rp) { return rp ? disable_kprobe(&rp->kp) : -EINVAL; }
