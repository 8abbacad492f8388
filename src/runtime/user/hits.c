/*
 * The hit path in C: what dispatch.S (the detours' dispatcher) does not
 * handle itself - a point's first hit, a hit before its image registered,
 * a hit inside a handler, handlers that want the vector state saved - and
 * running handlers for the int3 path (trap.c).
 */
#include "rt.h"

static void run_handlers_cb(void *arg);
static void find_linked_cb(void *arg);
struct handler_call { struct point *pt; struct pt_regs *regs; };

/* The pre_handlers of pt, newest first. With changed_ip (the int3 path),
 * the first that returns non-zero ends them and sets *changed_ip: it has
 * set regs->ip, and the probed instruction is skipped (the kernel's
 * aggr_pre_handler and kprobe_int3_handler). The detour passes NULL: all
 * run and what they return is ignored, as with the kernel's optprobes
 * (opt_pre_handler). A kprobe with a fault_handler runs guarded (fault.c). */
static inline void run_pre_handlers(struct point *pt, struct pt_regs *regs, int *changed_ip)
{
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->pre_handler) {
            int r = kp->fault_handler ? rt_call_pre(kp, regs) : kp->pre_handler(kp, regs);
            if (changed_ip && r) {
                *changed_ip = 1;
                return;
            }
        }
}

/* The int3 path (a signal handler: the kernel saved the vector state). */
void rt_run_handlers(struct point *pt, struct pt_regs *regs, int *changed_ip)
{
    atomic_store_explicit(&rt_self.running, pt, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    run_pre_handlers(pt, regs, changed_ip);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
}

/* After the single step, newest first (the kernel's aggr_post_handler). */
void rt_run_post_handlers(struct point *pt, struct pt_regs *regs)
{
    atomic_store_explicit(&rt_self.running, pt, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->post_handler) {
            if (kp->fault_handler)
                rt_call_post(kp, regs);
            else
                kp->post_handler(kp, regs, 0);
        }
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&rt_self.running, NULL, memory_order_release);
}

/* A probe hit inside a handler: no handler runs, nmissed counts it. */
void rt_count_missed(struct point *pt)
{
    atomic_fetch_add_explicit(&pt->missed, 1, memory_order_relaxed);
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        __atomic_fetch_add(&kp->nmissed, 1, __ATOMIC_RELAXED);
}

/* The detour's dispatcher (dispatch.S) handles the common cases; this is
 * the rest: a hit before the image registered, a hit inside a handler, this
 * thread's first hit on this point. Returns the point when its handlers
 * are to run (dispatch.S runs them). */
struct point *rt_dispatch_slow(struct kprw_state *st, struct pt_regs *regs)
{
    (void)regs;
    struct point *pt = __atomic_load_n(&st->rt, __ATOMIC_ACQUIRE);
    if (rt_in_handler) {
        /* inside a handler, or inside the runtime (a probed libc function
         * it called): no lock, no handler. A point not filled yet (only
         * in an image loaded since the last registration) is not counted. */
        if (pt)
            rt_count_missed(pt);
        return NULL;
    }
    /* this thread's first hit on one of the runtime's own threads (glibc's
     * start_thread, before the thread's function set the guard): the
     * guard is set for the thread's life, the hit missed */
    if (rt_self.cap == 0 && rt_on_own_stack()) {
        atomic_store_explicit(&rt_self.running, RT_INSIDE, memory_order_relaxed);
        if (pt)
            rt_count_missed(pt);
        return NULL;
    }
    /* what follows calls libc, which may be probed */
    bool entered = rt_enter();
    if (!pt) {
        /* the point's first hit (filled lazily: no libc call but the
         * lock's), or a hit before the image's constructor ran (which
         * registers the image: libc, so the vector state is saved) */
        rt_lock_take();
        bool known = rt_pool_fill_state(st);
        rt_lock_drop();
        if (!known)
            rt_with_xstate_saved(find_linked_cb, st);
        pt = __atomic_load_n(&st->rt, __ATOMIC_ACQUIRE);
    }
    /* a thread that was already in the detour when the point was
     * disabled: its hit does not count (nothing counts once disable
     * has returned) */
    if (pt && atomic_load_explicit(&pt->code, memory_order_relaxed) != CODE_DISABLED) {
        rt_count_hit(pt);
        if (!atomic_load_explicit(&pt->handlers, memory_order_relaxed))
            pt = NULL;
    } else {
        pt = NULL;
    }
    rt_leave(entered);
    return pt;
}

/* The detour's handlers when one of them asked for KPROBE_FLAG_FPU or has
 * a fault_handler, from dispatch.S (which has marked the thread as running
 * pt's handlers). */
void rt_run_handlers_c(struct point *pt, struct pt_regs *regs)
{
    struct handler_call hc = { pt, regs };
    if (pt->nfpu)
        rt_with_xstate_saved(run_handlers_cb, &hc);
    else
        run_handlers_cb(&hc);
}

static void run_handlers_cb(void *arg)
{
    struct handler_call *hc = arg;
    run_pre_handlers(hc->pt, hc->regs, NULL);
}

static void find_linked_cb(void *arg) { rt_pool_find_linked(arg); }
