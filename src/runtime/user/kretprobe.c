/*
 * Return probes. A kretprobe is a kprobe on the function entry (a point
 * baked as SYM%return) whose pre_handler takes an instance, runs the
 * entry_handler and tells the detour to hook the return: the detour keeps
 * the stack as it was but calls the function body, so that the function's
 * ret lands back in the detour (see src/arch/x86/detour.c). On the int3
 * path the return address is replaced with the image's return trampoline
 * instead. Either way the return calls __kprewrite_return: it finds the
 * call's instance, runs the handler, gives the instance back and returns
 * the real address.
 *
 * Instances: maxactive of them per kretprobe, allocated at registration,
 * on a lock-free free list (index + tag against ABA). Each thread keeps its
 * hooked calls on a list, newest first, with the stack address of each
 * return address ("slot"). An unregistered kretprobe's instances are freed
 * once every one is back on its free list (see unregister_kretprobe).
 *
 * Stale instances (a longjmp, siglongjmp or exception left the frame
 * without returning) are found by stack address: a call entered at a slot
 * where an older instance still waits proves that one dead, unless the
 * slot still holds that one's hook -- a tail call (jmp g from f, whose
 * return is hooked): both stand, the newer returns into the older's hook,
 * as the kernel's kretprobes nest through their trampoline; a return at
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
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kprewrite/pool.h"
#include "rt.h"
#include "rt-offsets.h"

/* kretprobe-fast.S reads rp, pt, kc_off and fast (rt-offsets.h) */
struct holder {
    struct kretprobe *_Atomic rp;      /* NULL once unregistered */
    struct point *pt;
    uint32_t kc_off;                   /* offsetof(struct rt_thread, kc[way]) */
    uint32_t way;                      /* its home way in each thread's cache */
    kretprobe_handler_t _Atomic fast;  /* what a return's fast path calls: rp's
                                          handler, or NULL when C decides
                                          (disabled, FPU, unregistered) */
    size_t isize;                      /* bytes an instance */
    uint32_t n;
    _Atomic uint64_t free_head;        /* tag << 32 | (index + 1); low half 0: empty */
    /* instances off the free list (in calls, or in threads' caches), and
     * H_DEAD once unregistered: H_DEAD alone, it may be freed */
    _Atomic uint64_t out;
    char *mem;
    struct holder *all_next;           /* the list of every holder */
};
#define H_DEAD (1ull << 63)

/* Every holder not freed yet, reachable from here even when the struct
 * kretprobe was on a stack (leak checkers see memory kept on purpose). */
static struct holder *all_holders;

OFFSET_CHECK(offsetof(struct kretprobe, __holder), KRP_HOLDER);
OFFSET_CHECK(offsetof(struct kretprobe_instance, ret_addr), RI_RET);
OFFSET_CHECK(offsetof(struct kretprobe_instance, __slot), RI_SLOT);
OFFSET_CHECK(offsetof(struct kretprobe_instance, __holder), RI_HOLDER);
OFFSET_CHECK(offsetof(struct kretprobe_instance, __next), RI_NEXT);
OFFSET_CHECK(offsetof(struct holder, pt), H_PT);
OFFSET_CHECK(offsetof(struct holder, kc_off), H_KC_OFF);
OFFSET_CHECK(offsetof(struct holder, fast), H_FAST);
OFFSET_CHECK(offsetof(struct rt_thread, ractive), TH_RACTIVE);
OFFSET_CHECK(offsetof(struct rt_thread, listed), TH_LISTED);
OFFSET_CHECK(offsetof(struct rt_thread, steal), TH_STEAL);
OFFSET_CHECK(offsetof(struct rt_thread, hot), TH_HOT);
OFFSET_CHECK(offsetof(struct rt_kcache, holder), KC_HOLDER);
OFFSET_CHECK(offsetof(struct rt_kcache, head), KC_HEAD);
OFFSET_CHECK(offsetof(struct rt_kcache, n), KC_N);
OFFSET_CHECK(sizeof(void *), 8);   /* 64-bit loads and stores of the pointers above */

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
                                                  memory_order_acquire)) {
            atomic_fetch_add_explicit(&h->out, 1, memory_order_relaxed);
            return ri;
        }
    }
}

static void inst_put(struct holder *h, struct kretprobe_instance *ri)
{
    ri->__sibling = 0;
    uint32_t i = (uint32_t)(((char *)ri - h->mem) / h->isize) + 1;
    uint64_t old = atomic_load_explicit(&h->free_head, memory_order_relaxed);
    for (;;) {
        __atomic_store_n(&ri->__free_next, (uint32_t)old, __ATOMIC_RELAXED);
        uint64_t nw = (((old >> 32) + 1) << 32) | i;
        if (atomic_compare_exchange_weak_explicit(&h->free_head, &old, nw, memory_order_release,
                                                  memory_order_relaxed))
            break;
    }
    /* the last access to h: once it is dead and every instance back, a
     * reap may free it */
    atomic_fetch_sub_explicit(&h->out, 1, memory_order_release);
}

/*
 * Per-thread caches. A thread keeps up to KC_MAX free instances of each of
 * a few kretprobes for its next calls, so that a hit costs no atomic
 * operation (two lock cmpxchg were most of a hit's cost), and one more of
 * any kretprobe, the last given back (`hot`, where the return's fast path
 * puts it without first loading which kretprobe it is). The hot instance
 * stays in place while a call of the thread uses it (its __slot set) and
 * is free again when __slot is NULL, so that neither taking nor giving it
 * back writes `hot` (each store a hit saves counts, see
 * kretprobe-fast.S); it is never on the shared list. Only the thread
 * touches its cache, and only while it runs handlers (rt_self.running
 * set). An entry that finds neither a cached nor a shared free instance
 * takes the cache of another thread that is not running handlers: it sets
 * that thread's `steal`, issues membarrier() (a barrier on every thread of
 * the process: either the thread sees `steal` in its next window, or its
 * window shows in `running`), and takes the instances when `running` is
 * clear. So an entry misses while an instance is free only when that
 * instance is cached by a thread inside a handler at that moment.
 * Without membarrier (old kernels, some sandboxes) there is no cache.
 */
#define KC_MAX KC_MAX_VALUE
#define KC_WAYS (sizeof rt_self.kc / sizeof rt_self.kc[0])
int rt_kc_on;   /* 0 unknown, 1 on, -1 off (read by kretprobe-fast.S) */

static inline struct rt_kcache *kc_way(struct rt_thread *t, const struct holder *h)
{
    if (t->kc[h->way].holder == h)   /* its home way, nearly always */
        return &t->kc[h->way];
    for (size_t i = 0; i < KC_WAYS; i++)
        if (t->kc[i].holder == h)
            return &t->kc[i];
    return NULL;
}

/* Another thread's cached instances of h: one for us, the rest shared.
 * Called when the shared list is empty; never waits. */
static struct kretprobe_instance *steal(struct holder *h)
{
    if (rt_kc_on != 1 || pthread_mutex_trylock(&rt_lock) != 0)
        return NULL;
    struct kretprobe_instance *got = NULL;
    for (struct rt_thread *t = rt_threads(); t && !got; t = t->next) {
        struct rt_kcache *w = t == &rt_self ? NULL : kc_way(t, h);
        struct kretprobe_instance *hot = t == &rt_self ? NULL : __atomic_load_n(&t->hot, __ATOMIC_RELAXED);
        if (!(w && __atomic_load_n(&w->n, __ATOMIC_RELAXED)) && !(hot && hot->__holder == h && !hot->__slot))
            continue;
        atomic_store_explicit(&t->steal, 1, memory_order_relaxed);
        if (rt_membarrier() && !atomic_load_explicit(&t->running, memory_order_acquire)) {
            struct kretprobe_instance *ri;
            if ((ri = t->hot) && ri->__holder == h && !ri->__slot) {   /* free, not in use */
                t->hot = NULL;
                got = ri;
            }
            while (w && (ri = w->head)) {
                w->head = ri->__next;
                if (got)
                    inst_put(h, ri);
                else
                    got = ri;
            }
            if (w)
                w->n = 0;
        }
        atomic_store_explicit(&t->steal, 0, memory_order_release);
    }
    pthread_mutex_unlock(&rt_lock);
    return got;
}

/* A free instance, inside a handler window: the cache, the shared list,
 * another thread's cache. */
static struct kretprobe_instance *local_get(struct holder *h)
{
    if (rt_kc_on == 1 && !atomic_load_explicit(&rt_self.steal, memory_order_relaxed)) {
        struct rt_kcache *w = kc_way(&rt_self, h);
        struct kretprobe_instance *ri = rt_self.hot;
        if (ri && ri->__holder == h && !ri->__slot)
            return ri;   /* stays hot: the caller's fill makes it in use */
        if (w && (ri = w->head)) {
            w->head = ri->__next;
            w->n--;
            return ri;
        }
    }
    struct kretprobe_instance *ri = inst_get(h);
    return ri ? ri : steal(h);
}

/* Give an instance back, inside a handler window. An unregistered
 * kretprobe's goes to its free list, never to a cache. */
static inline void local_put(struct holder *h, struct kretprobe_instance *ri)
{
    ri->__sibling = 0;   /* (the assembly's takes leave it as it was) */
    if (!atomic_load_explicit(&h->rp, memory_order_relaxed)) {
        if (rt_self.hot == ri)
            rt_self.hot = NULL;
        inst_put(h, ri);
        return;
    }
    bool usable = rt_kc_on == 1 && rt_self.listed && !atomic_load_explicit(&rt_self.steal, memory_order_relaxed);
    if (rt_self.hot == ri) {
        if (usable) {
            ri->__slot = NULL;   /* free, and still hot */
            return;
        }
        /* A thief may be reading our hot place (steal set): it takes an
         * instance there whose __slot is NULL. ri leaves the place still
         * looking in use, or both of us would own it: the thief, and the
         * free list it goes to below (a call's instance then taken by
         * another thread's call, its hooked calls' list broken). */
        rt_self.hot = NULL;
    }
    if (usable) {
        if (!rt_self.hot) {
            ri->__slot = NULL;
            rt_self.hot = ri;
            return;
        }
        struct rt_kcache *w = kc_way(&rt_self, h);
        for (size_t i = 0; !w && i < KC_WAYS; i++) {
            struct rt_kcache *c = &rt_self.kc[(h->way + i) % KC_WAYS];   /* home first */
            struct holder *o = c->holder;
            /* a free way, or one of an unregistered kretprobe (alive while
             * a way names it: see reap), whose instances go back */
            if (!o || !c->n || !atomic_load_explicit(&o->rp, memory_order_relaxed)) {
                for (struct kretprobe_instance *d; o && (d = c->head);) {
                    c->head = d->__next;
                    inst_put(o, d);
                }
                c->holder = h;
                c->head = NULL;
                c->n = 0;
                w = c;
            }
        }
        if (w && w->n < KC_MAX) {
            ri->__next = w->head;
            w->head = ri;
            w->n++;
            return;
        }
    }
    inst_put(h, ri);
}

/* Does v, read at ri's slot, still stand for ri's call: our hook (the
 * detour's, or the return trampoline of the int3 path)? */
static bool our_hook(const struct kretprobe_instance *ri, unsigned long v)
{
    const struct point *pt = ((const struct holder *)ri->__holder)->pt;
    return v && (v == pt->hook || v == pt->tramp);
}

/* Give back an instance whose frame is gone; put its return address back
 * first when asked and the slot still holds our hook. Outside a handler
 * window (unwinding, thread exit): to the shared list. */
static void drop(struct kretprobe_instance *ri, bool unhook, bool in_window)
{
    if (unhook && our_hook(ri, *ri->__slot))
        *ri->__slot = (unsigned long)ri->ret_addr;
    if (in_window) {
        local_put(ri->__holder, ri);
        return;
    }
    if (rt_self.hot == ri)   /* to the shared list: no longer hot */
        rt_self.hot = NULL;
    inst_put(ri->__holder, ri);
}

/* ri now stands for rp's call entering at slot, on thread self. (ri->rp
 * is rp's since registration, and a cached instance's thread is already
 * self: kretprobe-fast.S skips both.) */
static inline void fill(struct kretprobe_instance *ri, struct kretprobe *rp, unsigned long *slot, pthread_t self)
{
    ri->rp = rp;
    ri->ret_addr = (void *)*slot;
    ri->thread = self;
    ri->__slot = slot;
}

/* An instance for a call entering at slot, or NULL (nmissed counted). */
static struct kretprobe_instance *take(struct kretprobe *rp, unsigned long *slot)
{
    struct holder *h = rp->__holder;
    /* Another kretprobe of this point took this very call in this hit
     * (rt_self.hook stays set until the dispatcher ends the hit): the
     * instance at slot is this call's, its sibling, which returns with it
     * (as the kernel runs every kretprobe of a function at its return). */
    const struct kretprobe_instance *same = rt_self.hook;
    bool sibling = same && same->__slot == slot && rt_self.ractive == same;
    /* an older call hooked at this very slot is dead: its frame is reused;
     * unless the slot still holds its hook: this call was reached by a
     * tail call from that one (or from a newer one that was) */
    for (struct kretprobe_instance **pp = &rt_self.ractive; !sibling && *pp;) {
        if ((*pp)->__slot == slot && !our_hook(*pp, *slot)) {
            struct kretprobe_instance *dead = *pp;
            *pp = dead->__next;
            drop(dead, false, true);
        } else {
            pp = &(*pp)->__next;
        }
    }
    struct kretprobe_instance *ri = local_get(h);
    if (!ri) {
        __atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    fill(ri, rp, slot, rt_self.self ? rt_self.self : pthread_self());
    ri->__sibling = sibling;
    return ri;
}

/* The call is taken: its return comes back through the detour (pt->hook). */
static void hooked(struct kretprobe_instance *ri)
{
    ri->__next = rt_self.ractive;
    rt_self.ractive = ri;
}

/* The entry: a kretprobe's kp.pre_handler (a handler of its point). */
int rt_kretprobe_entry(struct kprobe *kp, struct pt_regs *regs)
{
    struct kretprobe *rp = (struct kretprobe *)kp;
    struct kretprobe_instance *ri = take(rp, (unsigned long *)regs->sp);
    if (!ri)
        return 0;
    if (rp->entry_handler && rp->entry_handler(ri, regs)) {
        local_put(rp->__holder, ri);
        return 0;
    }
    hooked(ri);
    /* the dispatcher hands this to the detour, which calls the function
     * from the slot: it returns into the detour (pt->hook) */
    rt_self.hook = ri;
    return 0;
}

/* Take an instance for rp's call at slot (none: rp NULL, or a miss
 * counted), hook the call, end the thread's mark. Non-zero: taken. */
static long take_and_unmark(struct kretprobe *rp, unsigned long *slot)
{
    long taken = 0;
    struct kretprobe_instance *ri;
    if (rp && (ri = take(rp, slot))) {
        hooked(ri);
        taken = 1;
    }
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
    return taken;
}

/* kretprobe-fast.S (rt_kretprobe_enter, the dispatcher's path), when the
 * point's only handler is rp, rp has no entry_handler and the common case
 * does not hold: no pt_regs to fill or reload. The thread is marked as
 * running pt's handlers; this ends the mark. Non-zero: the call is taken. */
long rt_kretprobe_fast_entry(struct kretprobe *rp, unsigned long *slot)
{
    bool off = __atomic_load_n(&rp->kp.flags, __ATOMIC_RELAXED) & KPROBE_FLAG_DISABLED;
    return take_and_unmark(off ? NULL : rp, slot);
}

/* kretprobe-fast.S (__kprewrite_kret_enter), the hit counted, when the
 * thread has no instance of h at hand or an older call waits at this slot.
 * The thread is marked as running h's point; this ends the mark.
 * Non-zero: the call is taken. */
long rt_kretprobe_take_c(struct holder *h, unsigned long *slot)
{
    return take_and_unmark(atomic_load_explicit(&h->rp, memory_order_acquire), slot);
}

/* The int3 path ran the handlers: a call taken there returns through the
 * image's trampoline instead (a replaced return address). */
void rt_kretprobe_trap_hook(struct point *pt)
{
    struct kretprobe_instance *ri = rt_self.hook;
    if (!ri)
        return;
    rt_self.hook = NULL;
    *ri->__slot = pt->tramp;
}

/* What a return handler sees besides the registers: ri's return address,
 * or where the calls it was tail-called from return (their hooks, at the
 * same slot, stand for them). */
static inline void ret_regs(struct pt_regs *regs, const struct kretprobe_instance *ri, unsigned long *slot)
{
    unsigned long ret = (unsigned long)ri->ret_addr;
    const struct kretprobe_instance *p = ri;
    for (const struct kretprobe_instance *n = ri->__next; n && n->__slot == slot; p = n, n = n->__next) {
        if (p->__sibling)   /* n: the same call's, another kretprobe's */
            continue;
        if (!our_hook(n, ret))
            break;
        ret = (unsigned long)n->ret_addr;
    }
    regs->ip = ret;
    regs->sp = (unsigned long)(slot + 1);
    regs->orig_ax = ~0ul;
    regs->flags = 0x202;
}

struct ret_call { struct kretprobe *rp; struct kretprobe_instance *ri; struct pt_regs *regs; };
static void ret_call_cb(void *arg)
{
    struct ret_call *c = arg;
    c->rp->handler(c->ri, c->regs);
}

/* The return of ri's call: its handler runs (inside a handler: none,
 * a miss counted, on the point once a return), and ri goes back. */
static void return_one(struct kretprobe_instance *ri, struct pt_regs *regs, unsigned long *slot, bool inside,
                       bool first)
{
    struct holder *h = ri->__holder;
    struct kretprobe *rp = atomic_load_explicit(&h->rp, memory_order_acquire);
    if (!inside) {
        /* also when disabled since the entry: the kernel runs it
         * (kretprobe_rethook_handler); not once unregistered */
        if (rp && rp->handler) {
            ret_regs(regs, ri, slot);
            struct ret_call rc = { rp, ri, regs };
            if (rp->kp.flags & KPROBE_FLAG_FPU)
                rt_with_xstate_saved(ret_call_cb, &rc);   /* xmm0/xmm1 may hold the return value */
            else
                ret_call_cb(&rc);
        }
    } else {
        /* a return inside a handler: no handler runs */
        if (first)
            atomic_fetch_add_explicit(&h->pt->missed, 1, memory_order_relaxed);
        if (rp)
            __atomic_fetch_add(&rp->kp.nmissed, 1, __ATOMIC_RELAXED);
    }
    local_put(h, ri);
}

/* Put ri's return address back where the hook still holds its place, on
 * a stack that may be gone: a coroutine's, freed while it was suspended.
 * Through process_vm_readv/writev, which fail instead of faulting. */
static void unhook_elsewhere(const struct kretprobe_instance *ri)
{
    unsigned long v = 0, ret = (unsigned long)ri->ret_addr;
    struct iovec mine = { &v, sizeof v }, there = { ri->__slot, sizeof v };
    pid_t self = getpid();
    if (process_vm_readv(self, &mine, 1, &there, 1, 0) != (ssize_t)sizeof v || !our_hook(ri, v))
        return;
    mine.iov_base = &ret;
    (void)process_vm_writev(self, &mine, 1, &there, 1, 0);   /* failing, it stays hooked */
}

/* __kprewrite_return (kretprobe-fast.S) when the returning call is not simply
 * the newest of a thread outside handlers, or a handler needs the vector
 * state saved. */
unsigned long rt_kretprobe_return_slow(struct pt_regs *regs)
{
    unsigned long *slot = (unsigned long *)((char *)regs + PTREGS_SIZE);
    struct point *outer = atomic_load_explicit(&rt_self.running, memory_order_relaxed);
    struct kretprobe_instance *ri = rt_self.ractive;
    while (ri && ri->__slot != slot)
        ri = ri->__next;
    if (!ri) {
        static const char msg[] = "kprewrite-rt: a hooked return was reached with no matching call "
                                  "(a return address was moved or a stack was switched); aborting\n";
        if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
        abort();
    }
    struct holder *h = ri->__holder;
    if (!outer) {
        /* the window first: the recursion guard, what unregister waits on
         * (then rp is read), and what keeps other threads off our cache */
        atomic_store_explicit(&rt_self.running, h->pt, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
    }
    struct kretprobe_instance *d;
    /* below this, no frame of ours: this function's, and drop()'s under it */
    uintptr_t ours = (uintptr_t)__builtin_frame_address(0) - 4096;
    while ((d = rt_self.ractive) != ri) {
        /* newer than our call: dead (left by longjmp or an exception), or
         * suspended on another stack (a coroutine, which may come back).
         * Its return address goes back where it was, unless that memory
         * may be in use: just below our slot, it is this very return's
         * frame. Above our slot, or far below, it is another stack, or a
         * dead frame of this one, where the write is harmless. A coroutine
         * resumed later then returns normally, without its handler (instead
         * of into a hook no instance stands for). */
        rt_self.ractive = d->__next;
        uintptr_t at = (uintptr_t)d->__slot;
        if (at > (uintptr_t)slot || at < ours)
            unhook_elsewhere(d);
        drop(d, false, true);
    }
    unsigned long ret = (unsigned long)ri->ret_addr;
    /* ri, then its siblings: the other kretprobes of the point that took
     * the same call (take), each with its own instance */
    for (bool first = true;; first = false) {
        rt_self.ractive = ri->__next;
        struct kretprobe_instance *next = ri->__sibling ? ri->__next : NULL;
        return_one(ri, regs, slot, outer != NULL, first);
        if (!next || next->__slot != slot || rt_self.ractive != next)
            break;
        ri = next;
    }
    if (!outer) {
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
    }
    return ret;
}

/* kretprobe-fast.S, returning a call: give ri back outside the common case
 * (another way, a full one, a thief at work). */
void rt_kretprobe_put(struct holder *h, struct kretprobe_instance *ri)
{
    local_put(h, ri);
}

/* A thread exits (pthread_exit inside probed calls): its frames are gone. */
void rt_kretprobe_thread_exit(struct rt_thread *t)
{
    /* under rt_lock, so no thread is stealing. The hot instance first:
     * when in use, the calls below give it back */
    struct kretprobe_instance *ri = t->hot;
    t->hot = NULL;
    if (ri && !ri->__slot)
        inst_put(ri->__holder, ri);
    while ((ri = t->ractive)) {
        t->ractive = ri->__next;
        drop(ri, false, false);
    }
    for (size_t i = 0; i < KC_WAYS; i++) {
        struct rt_kcache *w = &t->kc[i];
        while ((ri = w->head)) {
            w->head = ri->__next;
            inst_put(w->holder, ri);
        }
        w->n = 0;
        w->holder = NULL;
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
        drop(ri, true, false);
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

/* The kernel's default: max(10, 2 x possible CPUs). */
static int default_maxactive(void)
{
    long n = sysconf(_SC_NPROCESSORS_CONF);
    return n > 5 ? (int)(2 * n) : 10;
}

/* A holder for maxactive instances of data_size bytes, all free; NULL
 * when out of memory. */
static struct holder *holder_new(struct kretprobe *rp, int maxactive)
{
    size_t isize = (sizeof(struct kretprobe_instance) + rp->data_size + 15) & ~(size_t)15;
    struct holder *h = calloc(1, sizeof *h);
    char *mem = calloc((size_t)maxactive, isize);
    if (!h || !mem) {
        free(h);
        free(mem);
        return NULL;
    }
    h->isize = isize;
    h->n = (uint32_t)maxactive;
    h->mem = mem;
    for (uint32_t i = 0; i < h->n; i++) {
        inst(h, i)->rp = rp;
        inst(h, i)->__holder = h;
        inst(h, i)->__free_next = i + 2 <= h->n ? i + 2 : 0;
    }
    atomic_store(&h->free_head, 1);
    static uint32_t next_way;   /* the first KC_WAYS kretprobes never share one */
    h->way = next_way++ % KC_WAYS;
    h->kc_off = (uint32_t)(offsetof(struct rt_thread, kc) + h->way * sizeof(struct rt_kcache));
    return h;
}

/* As the kernel's register_kretprobe: the function's entry (-EINVAL
 * elsewhere, -ENOENT where no SYM%return was baked), data_size at most
 * KRETPROBE_MAX_DATA_SIZE (-E2BIG), maxactive <= 0 for the default. A
 * failure leaves rp as it was. Under rt_lock. */
static int kretprobe_register(struct kretprobe *rp)
{
    struct kprobe *kp = &rp->kp;
    struct point *pt;
    int rc = rt_resolve(kp, &pt, true);   /* a return probe is on the function entry */
    if (rc < 0)
        return rc;
    if (pt->kind != KPRW_KIND_R || !pt->tramp)
        return -ENOENT;   /* not baked as SYM%return */
    if (rp->data_size > KRETPROBE_MAX_DATA_SIZE)
        return -E2BIG;
    if (shadow_stack()) {
        fprintf(stderr, "kprewrite-rt: register_kretprobe(%s): this process runs with a CET shadow stack, "
                "which forbids replacing return addresses; return probes are refused\n",
                kp->symbol_name ? kp->symbol_name : "(address)");
        return -EOPNOTSUPP;
    }
    int maxactive = rp->maxactive <= 0 ? default_maxactive() : rp->maxactive;
    if (maxactive > (1 << 20))
        return -E2BIG;
    struct holder *h = holder_new(rp, maxactive);
    if (!h)
        return -ENOMEM;
    h->pt = pt;
    atomic_store(&h->rp, rp);
    struct kprobe old = *kp;
    rp->__holder = h;
    kp->pre_handler = rt_kretprobe_entry;
    kp->post_handler = NULL;
    kp->fault_handler = NULL;   /* as the kernel did: none for a kretprobe */
    if ((rc = rt_register_kprobe_at(kp, pt, false)) < 0) {
        *kp = old;
        rp->__holder = NULL;
        free(h->mem);
        free(h);
        return rc;
    }
    rp->maxactive = maxactive;
    rp->nmissed = 0;
    rt_kretprobe_changed(rp);
    h->all_next = all_holders;
    all_holders = h;
    return 0;
}

static void reap(void);

EXPORT int register_kretprobe(struct kretprobe *rp)
{
    if (!rp || rp->__holder)
        return -EINVAL;
    rt_unwind_hooks_linked();
    if (!rt_kc_on)   /* per-thread caches need membarrier (see steal) */
        rt_kc_on = rt_membarrier_ready() ? 1 : -1;
    rt_lock_take();
    reap();
    int rc = kretprobe_register(rp);
    rt_lock_drop();
    return rc == -ENOENT ? rt_no_point(&rp->kp) : rc;
}

/* Take h's instances out of thread t's cache (its way, its hot place), as
 * steal() takes them: unless t is running handlers. Under rt_lock. False:
 * try again later. */
static bool purge(struct rt_thread *t, struct holder *h)
{
    struct rt_kcache *w = kc_way(t, h);
    struct kretprobe_instance *hot = __atomic_load_n(&t->hot, __ATOMIC_RELAXED);
    bool hot_ours = hot && hot->__holder == h;
    if (!w && !hot_ours)
        return true;
    if (t != &rt_self) {
        atomic_store_explicit(&t->steal, 1, memory_order_relaxed);
        if (!rt_membarrier() || atomic_load_explicit(&t->running, memory_order_acquire)) {
            atomic_store_explicit(&t->steal, 0, memory_order_release);
            return false;
        }
    }
    struct kretprobe_instance *ri;
    if (hot_ours && !hot->__slot) {   /* in use: its call gives it back */
        t->hot = NULL;
        inst_put(h, hot);
    }
    while (w && (ri = w->head)) {
        w->head = ri->__next;
        inst_put(h, ri);
    }
    if (w) {
        w->n = 0;
        w->holder = NULL;
    }
    if (t != &rt_self)
        atomic_store_explicit(&t->steal, 0, memory_order_release);
    return true;
}

/* Free the unregistered kretprobes' instances that no thread holds any
 * more: not in a call (one that returns gives its instance back; one left
 * by longjmp is reclaimed when its thread next enters or returns through a
 * return probe at or above it, or exits), nor in a cache. Under rt_lock. */
static void reap(void)
{
    for (struct holder **hp = &all_holders, *h; (h = *hp);) {
        bool cached = false;
        if (atomic_load(&h->out) & H_DEAD)
            for (struct rt_thread *t = rt_threads(); t; t = t->next)
                cached |= !purge(t, h);
        if (cached || atomic_load_explicit(&h->out, memory_order_acquire) != H_DEAD) {
            hp = &h->all_next;
            continue;
        }
        *hp = h->all_next;
        free(h->mem);
        free(h);
    }
}

/* As the kernel's: no handler runs for rp once this returns, also for
 * calls hooked before, which still return through their instances; those
 * are freed with the rest once every one is back. */
EXPORT void unregister_kretprobe(struct kretprobe *rp)
{
    if (!rp || !rp->__holder) {
        if (rp)
            rp->kp.addr = NULL;   /* as for a kprobe not registered */
        return;
    }
    struct holder *h = rp->__holder;
    /* as the kernel's: the entry off the point, then the holder's rp
     * cleared (no return handler from now on), then the wait for handlers
     * running; an entry that ran its entry_handler before this misses its
     * return handler only when its call is still in flight */
    rt_lock_take();
    struct point *pt = rt_unlink_kprobe(&rp->kp);
    atomic_store_explicit(&h->rp, NULL, memory_order_release);
    atomic_store_explicit(&h->fast, NULL, memory_order_release);
    rt_lock_drop();
    if (pt)
        rt_wait_for_handlers(pt);   /* entry and return handlers */
    rp->__holder = NULL;
    rt_lock_take();
    atomic_fetch_or(&h->out, H_DEAD);
    reap();
    rt_lock_drop();
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

static int no_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri, (void)regs;
    return 0;
}

/* rp was registered, unregistered, enabled or disabled: what its returns'
 * fast path calls. Under rt_lock. */
void rt_kretprobe_changed(struct kretprobe *rp)
{
    struct holder *h = rp->__holder;
    if (!h)
        return;
    unsigned f = __atomic_load_n(&rp->kp.flags, __ATOMIC_RELAXED);
    kretprobe_handler_t fn = NULL;
    if (atomic_load(&h->rp) && !(f & KPROBE_FLAG_FPU))   /* disabled or not: see return_slow */
        fn = rp->handler ? rp->handler : no_handler;
    atomic_store_explicit(&h->fast, fn, memory_order_release);
}

EXPORT int enable_kretprobe(struct kretprobe *rp) { return rp ? enable_kprobe(&rp->kp) : -EINVAL; }
EXPORT int disable_kretprobe(struct kretprobe *rp) { return rp ? disable_kprobe(&rp->kp) : -EINVAL; }
