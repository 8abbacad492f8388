/*
 * libkprewrite-rt: the user-space runtime. Finds the probe tables of the
 * images that link a pool, dispatches detour hits to kprobe handlers, and
 * counts hits per thread (no atomic on the hot path: counts are summed over
 * threads when read, and folded into the totals when a thread exits).
 *
 * Built with -mgeneral-regs-only: the dispatcher must not touch the probed
 * code's vector registers, which detours do not save.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cpuid.h>

#include "kprewrite/pool.h"
#include "rt.h"
#include "rt-offsets.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older kernels say EINVAL */
#endif

/* private kprobe flag: addr was filled in from symbol_name at registration */
#define KPROBE_FLAG_ADDR_RESOLVED 0x80000000u

/* A pool's points are filled lazily (a prebuilt binary may carry thousands
 * and run for a millisecond): at the first hit of each (rt_dispatch_slow),
 * or all at once when something needs them all (listing, control, lookup
 * by name; rt_points_ready). The int3 ones are filled at once: the SIGTRAP
 * handler must know every site that holds an int3. A filled point is
 * state[i].rt; ids are given in the order points are filled, and points are
 * handed out from one mapping per pool in that order, so a short run touches
 * a page or two of them and of each thread's counters, not one page per hit
 * point. */
struct pool {
    const struct kprw_table *t;
    const char *dynstr;       /* the image's dynamic string table (KPRW_NAME_DYN) */
    uint64_t dynspan;         /* the bytes a name there may start in */
    struct kprw_state *state;
    struct point *points;     /* mapped for every entry, handed out in fill order */
    uint32_t unready;         /* entries not filled: points[nentries - unready] is next */
    bool pinned;              /* its object made undeletable (pin_new_pools) */
    struct pool *next;
};

pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

bool rt_enter(void)
{
    if (atomic_load_explicit(&rt_self.running, memory_order_relaxed))
        return false;
    atomic_store_explicit(&rt_self.running, RT_INSIDE, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    return true;
}

void rt_leave(bool entered)
{
    if (!entered)
        return;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&rt_self.running, NULL, memory_order_relaxed);
}

/* The mark first: pthread_mutex_lock may be probed too. rt_lock is not
 * recursive, so one flag a thread is enough. */
void rt_lock_take(void)
{
    bool e = rt_enter();
    pthread_mutex_lock(&rt_lock);
    rt_self.lock_entered = e;
}

void rt_lock_drop(void)
{
    bool e = rt_self.lock_entered;
    rt_self.lock_entered = false;
    pthread_mutex_unlock(&rt_lock);
    rt_leave(e);
}
struct point **rt_points;
uint32_t rt_npoints;
bool rt_enabled = true, rt_optimization = true;
TLS struct rt_thread rt_self;

static struct pool *pools;
static uint32_t cap_points, reserved;   /* rt_points: room, and entries of all pools */
static bool index_stale;   /* points filled since the trap index was built */
static struct rt_thread *threads;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

OFFSET_CHECK(offsetof(struct kprw_state, rt), ST_RT);
OFFSET_CHECK(offsetof(struct point, addr), PT_ADDR);
OFFSET_CHECK(offsetof(struct point, flags), PT_FLAGS);
OFFSET_CHECK(offsetof(struct point, id), PT_ID);
OFFSET_CHECK(offsetof(struct point, handlers), PT_HANDLERS);
OFFSET_CHECK(offsetof(struct point, fpu), PT_FPU);
OFFSET_CHECK(offsetof(struct point, code), PT_CODE);
OFFSET_CHECK(offsetof(struct point, kret), PT_KRET);
OFFSET_CHECK(offsetof(struct kprobe, pre_handler), KP_PRE_HANDLER);
OFFSET_CHECK(offsetof(struct kprobe, flags), KP_FLAGS);
OFFSET_CHECK(offsetof(struct kprobe, __next), KP_NEXT);
OFFSET_CHECK(offsetof(struct kretprobe, entry_handler), KRP_ENTRY_HANDLER);
OFFSET_CHECK(offsetof(struct rt_thread, hits), TH_HITS);
OFFSET_CHECK(offsetof(struct rt_thread, cap), TH_CAP);
OFFSET_CHECK(offsetof(struct rt_thread, running), TH_RUNNING);
OFFSET_CHECK(offsetof(struct rt_thread, hook), TH_HOOK);
OFFSET_CHECK(CODE_DISABLED, CODE_DISABLED_VALUE);
OFFSET_CHECK(KPRW_F_FLAGS_SAVED, KPRW_F_FLAGS_SAVED_VALUE);
OFFSET_CHECK(KPROBE_FLAG_DISABLED, KPROBE_FLAG_DISABLED_VALUE);

static void fold(void *p);
static void make_key(void) { pthread_key_create(&exit_key, fold); }

struct rt_thread *rt_threads(void) { return threads; }

/* Counter arrays: large ones are mapped (zero pages, faulted in as the
 * points they count are hit: a short run of a program with thousands of
 * probes touches a page or two), small ones come from the heap. */
#define COUNTERS_MAPPED (16384 / sizeof(uint64_t))
static uint64_t *counters_alloc(uint32_t cap)
{
    if (cap < COUNTERS_MAPPED)
        return calloc(cap, sizeof(uint64_t));
    void *m = mmap(NULL, cap * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void counters_free(uint64_t *h, uint32_t cap)
{
    if (h && cap < COUNTERS_MAPPED)
        free(h);
    else if (h)
        munmap(h, cap * sizeof(uint64_t));
}

/* Under rt_lock: thread c is gone; its counts go to the totals, its
 * return-probe instances back to their kretprobes. Returns its counters,
 * for the caller to free once the lock is dropped. */
static uint64_t *forget(struct rt_thread *c, uint32_t *cap)
{
    /* hits after this (other destructors) count in the totals directly:
     * listing the thread again would leave it on the list once its TLS
     * is gone */
    c->gone = 1;
    for (struct rt_thread **pp = &threads; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    for (uint32_t i = 0; i < c->cap && i < rt_npoints; i++)
        atomic_fetch_add_explicit(&rt_points[i]->hits, c->hits[i], memory_order_relaxed);
    rt_kretprobe_thread_exit(c);
    uint64_t *h = c->hits;
    *cap = c->cap;
    c->hits = NULL;
    c->cap = 0;
    c->listed = 0;
    return h;
}

/* A thread exits: add its counts to the totals. */
static void fold(void *p)
{
    /* marked until the end: the free below may be probed */
    bool e = rt_enter();
    rt_lock_take();
    uint32_t cap;
    uint64_t *h = forget(p, &cap);
    rt_lock_drop();
    counters_free(h, cap);
    rt_leave(e);
}

/* fork() while other threads run (a threaded program starting a worker or
 * a helper): the child has only the thread that forked. It must not
 * inherit rt_lock held by a thread it does not have (its first hit of a
 * point, or any registration, would wait forever), nor wait for those
 * threads' handlers (unregister_kprobe would). So rt_lock is held across
 * fork, as libc does with its own locks, and the child forgets the other
 * threads as if they had exited (their counts stay in its totals). */
static void fork_prepare(void) { rt_lock_take(); }
static void fork_parent(void) { rt_lock_drop(); }
static void fork_child(void)
{
    for (struct rt_thread *c = threads, *next; c; c = next) {
        next = c->next;
        if (c != &rt_self) {
            uint32_t cap;
            uint64_t *h = forget(c, &cap);
            counters_free(h, cap);
        }
    }
    trap_fork_child();
    ctlfs_fork_child();
    rt_lock_drop();
}

/* Room for cap counters in this thread's array (under rt_lock); false when
 * out of memory. */
static bool counters_grow(uint32_t cap)
{
    struct rt_thread *c = &rt_self;
    if (c->cap >= cap)
        return true;
    uint64_t *h = counters_alloc(cap);
    if (!h)
        return false;
    if (c->hits)
        memcpy(h, c->hits, c->cap * sizeof *h);
    counters_free(c->hits, c->cap);
    c->hits = h;
    c->cap = cap;
    if (!c->listed) {
        c->listed = 1;
        c->self = pthread_self();
        c->next = threads;
        threads = c;
        pthread_setspecific(exit_key, c);
    }
    return true;
}

/* Slow path of a hit: this thread has no counter for id yet. */
static __attribute__((noinline)) void count_slow(uint32_t id)
{
    if (rt_self.gone) {   /* a hit after this thread's counts were folded */
        rt_lock_take();
        if (id < rt_npoints && rt_points[id])
            atomic_fetch_add_explicit(&rt_points[id]->hits, 1, memory_order_relaxed);
        rt_lock_drop();
        return;
    }
    pthread_once(&key_once, make_key);
    rt_lock_take();
    uint32_t cap = rt_npoints > id ? rt_npoints : id + 1;
    if (counters_grow(cap < 64 ? 64 : cap * 2))
        rt_self.hits[id]++;   /* else out of memory: this hit goes uncounted, nothing breaks */
    rt_lock_drop();
}

/* Tables refused once (rt_table_check): not checked nor reported again. */
#define MAX_REFUSED 16
static const struct kprw_table *refused[MAX_REFUSED];
static bool refused_pinned[MAX_REFUSED];   /* its object made undeletable: the address stays its */
static unsigned nrefused;

/* *int3s: how many of its entries are int3 probes (when not refused). A
 * table is checked even when no more refusals can be remembered: then its
 * refusal is only said again. */
static bool table_refused(const struct kprw_table *t, uint32_t *int3s, uint64_t *dynspan)
{
    *int3s = t->nentries;
    *dynspan = 0;
    for (unsigned i = 0; i < nrefused; i++)
        if (refused[i] == t)
            return true;
    const char *object;
    char why[200];
    const char *bad = t->magic != KPRW_MAGIC ? "bad magic" : rt_table_check(t, &object, int3s, dynspan, why, sizeof why);
    if (!bad)
        return false;
    if (nrefused < MAX_REFUSED)
        refused[nrefused++] = t;
    fprintf(stderr, "kprewrite-rt: %s: probe table refused: %s; its %u probes are not armed\n",
            t->magic != KPRW_MAGIC ? "?" : object, bad, t->magic != KPRW_MAGIC ? 0 : t->nentries);
    return true;
}

/* The points of a pool: room for one per entry, mapped and left to fault
 * in as points are filled (in fill order: a short run touches a page or
 * two). Points live as long as the image. */
static struct point *map_points(uint32_t n)
{
    size_t size = (n ? n : 1) * sizeof(struct point);
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* KPRW_FDE_PREFIX and addr in lower-case hex, as the rewriter names a function
 * that has no symbol, into buf (FDE_NAME_MAX); without libc (see below). */
static const char *fde_name(char *buf, uint64_t addr)
{
    static const char prefix[] = KPRW_FDE_PREFIX, hex[] = "0123456789abcdef";
    size_t n = sizeof prefix - 1, digits = 1;
    for (uint64_t v = addr; v >= 16; v >>= 4)
        digits++;
    for (size_t i = 0; i < n; i++)
        buf[i] = prefix[i];
    for (size_t i = digits; i-- > 0; addr >>= 4)
        buf[n + i] = hex[addr & 15];
    buf[n + digits] = 0;
    return buf;
}

/* A name in the image's dynamic string table (checked to start in it),
 * when it ends there too; without libc. */
static const char *dyn_name(const struct pool *p, uint64_t off)
{
    for (uint64_t k = off; k < p->dynspan; k++)
        if (!p->dynstr[k])
            return p->dynstr + off;
    return "?";
}

/* Fill point i of p from its entry, under rt_lock; its state then leads
 * the detour's dispatcher to it. Calls nothing in libc (the first hit of a
 * point fills it from the detour, where the probed code's vector registers
 * are live): add_pool made room in rt_points and p->points, and the table
 * check made sure no state names a record before the runtime fills it. */
static void point_fill(struct pool *p, uint32_t i)
{
    struct kprw_state *st = &p->state[i];
    if (__atomic_load_n(&st->rt, __ATOMIC_RELAXED))
        return;
    const struct kprw_table *t = p->t;
    struct point *pt = &p->points[t->nentries - p->unready];
    const struct kprw_entry *e = (const struct kprw_entry *)(t + 1) + i;
    const char *strings = (const char *)t + t->strings_off;
    pt->addr = (uintptr_t)t + (uintptr_t)(intptr_t)e->site_rel;
    pt->offset = e->offset;
    pt->name = e->name_off == KPRW_NAME_FDE ? fde_name(pt->fde_name, t->link_addr + (uint64_t)(int64_t)e->site_rel - e->offset)
             : (e->name_off & KPRW_NAME_DYN) ? dyn_name(p, e->name_off & ~KPRW_NAME_DYN)
                                             : strings + e->name_off;
    pt->flags = e->flags;
    pt->kind = e->kind;
    pt->verdict = e->verdict;
    pt->site_len = e->dcr_len;
    uintptr_t code = (uintptr_t)t + (uintptr_t)(intptr_t)e->code_rel;
    pt->orig = (e->flags & KPRW_F_ORIG_AT_COPY)
                   ? (const uint8_t *)(code + e->ool_off)   /* (in the pool's text, which never changes) */
                   : (const uint8_t *)strings + e->orig_off;
    pt->detour = e->verdict == KPRW_OPTIMIZED ? code : 0;
    pt->ool = code + e->ool_off;
    pt->code = e->verdict == KPRW_OPTIMIZED ? CODE_OPTIMIZED : CODE_INT3;
    pt->hook = e->hook_off ? code + e->hook_off : 0;
    pt->tramp = e->kind == KPRW_KIND_R && t->tramp_rel ? (uintptr_t)t + (uintptr_t)t->tramp_rel : 0;
    pt->id = rt_npoints;
    rt_points[rt_npoints++] = pt;
    __atomic_store_n(&st->rt, pt, __ATOMIC_RELEASE);
    p->unready--;
    index_stale = true;
}

/* Fill every point of every pool, and bring the trap index up to date:
 * before anything may put an int3 on a site (under rt_lock). */
void rt_points_ready(void)
{
    for (struct pool *p = pools; p; p = p->next)
        for (uint32_t i = 0; p->unready && i < p->t->nentries; i++)
            point_fill(p, i);
    if (index_stale) {
        trap_index_rebuild();
        index_stale = false;
    }
}

/* The filled points, pool by pool in table (address) order, under rt_lock:
 * calls fn on each. */
void rt_each_ready_point(void (*fn)(struct point *, void *), void *arg)
{
    for (struct pool *p = pools; p; p = p->next)
        for (uint32_t i = 0; i < p->t->nentries; i++) {
            struct point *pt = __atomic_load_n(&p->state[i].rt, __ATOMIC_RELAXED);
            if (pt)
                fn(pt, arg);
        }
}

/* The pool whose states hold st, filling st's point; false if none does. */
static bool ready_state(struct kprw_state *st)
{
    for (struct pool *p = pools; p; p = p->next)
        if (st >= p->state && st < p->state + p->t->nentries) {
            point_fill(p, (uint32_t)(st - p->state));
            return true;
        }
    return false;
}

/* Register the pool whose table is t (under rt_lock); false if it cannot be
 * used (never filled, refused, out of memory). */
static bool add_pool(const struct kprw_table *t)
{
    if (t->magic == 0)
        return false;   /* a pool kprewrite never filled */
    for (struct pool *p = pools; p; p = p->next)
        if (p->t == t)
            return true;
    uint32_t int3s;
    uint64_t dynspan;
    if (table_refused(t, &int3s, &dynspan))
        return false;
    struct pool *p = calloc(1, sizeof *p);
    struct point *pts = map_points(t->nentries);
    if (p && pts && reserved + t->nentries > cap_points) {
        struct point **v = realloc(rt_points, (reserved + t->nentries) * sizeof *v);
        if (v) {
            rt_points = v;
            cap_points = reserved + t->nentries;
        }
    }
    if (!p || !pts || reserved + t->nentries > cap_points) {
        free(p);
        if (pts)
            munmap(pts, (t->nentries ? t->nentries : 1) * sizeof *pts);
        fprintf(stderr, "kprewrite-rt: out of memory registering probes\n");
        return false;
    }
    const struct kprw_entry *e = (const void *)(t + 1);
    reserved += t->nentries;
    /* The registering thread (the main one, for an image loaded at
     * start-up) gets a counter for every point now, from plain C: its first
     * hits then take no slow path, which would save the vector state */
    pthread_once(&key_once, make_key);
    counters_grow(reserved);
    p->t = t;
    p->dynspan = dynspan;
    p->dynstr = dynspan ? (const char *)t + t->dynstr_rel : NULL;
    p->points = pts;
    p->state = (void *)((char *)t + t->state_rel);
    p->unready = t->nentries;
    /* A point's first hit reads its state (a fault that maps the zero
     * page) and then fills it (a second, costlier fault). When the states
     * are a few pages, which scattered first hits soon touch anyway, one
     * call makes them writable for less: git --version (5890 states, 12
     * pages) starts about 2 % sooner (perf stat, 11 paired rounds of 500). */
    size_t states = t->nentries * sizeof *p->state;
    if (states && states <= 64 * 1024) {
        uintptr_t a = (uintptr_t)p->state & ~(uintptr_t)4095;
        madvise((void *)a, (uintptr_t)p->state + states - a, MADV_POPULATE_WRITE);
    }
    p->next = pools;
    pools = p;
    /* the int3 sites trap from the start: the handler must know them */
    for (uint32_t i = 0; int3s && i < t->nentries; i++)
        if (e[i].verdict != KPRW_OPTIMIZED) {
            point_fill(p, i);
            int3s--;
        }
    trap_index_rebuild();
    index_stale = false;
    if (t->nentries)
        ctlfs_start();
    /* A point the knobs want in another state than the baked one
     * (a library loaded while `enabled` is 0, say). */
    if (!rt_enabled || !rt_optimization) {
        rt_points_ready();
        for (uint32_t i = 0; i < t->nentries; i++) {
            struct point *pt = p->state[i].rt;
            if (patch_wanted(pt) != (enum code_state)pt->code)
                patch_apply(pt);
        }
    }
    return true;
}

static void pin_new_pools(void);

/* From the pool's constructor in an image linked with the runtime: a
 * library among them may be opened by a program that does not go through
 * this runtime's dlopen (one not linked with it: the runtime then came in
 * with the library), so it is pinned here. */
EXPORT void __kprewrite_register_pool(const void *table)
{
    rt_lock_take();
    add_pool(table);
    rt_lock_drop();
    bool e = rt_enter();
    pin_new_pools();
    rt_leave(e);
}


static void run_handlers_cb(void *arg);
static void count_slow_cb(void *arg);
static void add_pool_cb(void *arg);
struct handler_call { struct point *pt; struct pt_regs *regs; };

/* The pre_handlers of pt, in registration order. *changed_ip (the int3
 * path) is set when one returns non-zero: as with kprobes, it has set
 * regs->ip and the probed instruction is skipped. The detour passes NULL:
 * return values are ignored there, as for optprobes. */
static inline void run_pre_handlers(struct point *pt, struct pt_regs *regs, int *changed_ip)
{
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->pre_handler) {
            int r = kp->pre_handler(kp, regs);
            if (changed_ip && r)
                *changed_ip = 1;
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

void rt_run_post_handlers(struct point *pt, struct pt_regs *regs)
{
    atomic_store_explicit(&rt_self.running, pt, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    for (struct kprobe *kp = atomic_load_explicit(&pt->handlers, memory_order_acquire); kp; kp = kp->__next)
        if (!(kp->flags & KPROBE_FLAG_DISABLED) && kp->post_handler)
            kp->post_handler(kp, regs, 0);
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
    /* what follows calls libc, which may be probed */
    bool entered = rt_enter();
    if (!pt) {
        /* the point's first hit (filled lazily: no libc call but the
         * lock's), or a hit before the image's constructor ran (which
         * registers the image: libc, so the vector state is saved) */
        rt_lock_take();
        bool known = ready_state(st);
        rt_lock_drop();
        if (!known)
            rt_with_xstate_saved(add_pool_cb, st);
        pt = __atomic_load_n(&st->rt, __ATOMIC_ACQUIRE);
    }
    /* a thread that was already in the detour when the point was
     * disabled: its hit does not count (nothing counts once disable
     * has returned) */
    if (pt && atomic_load_explicit(&pt->code, memory_order_relaxed) != CODE_DISABLED) {
        if (pt->id < rt_self.cap)
            rt_self.hits[pt->id]++;
        else
            rt_with_xstate_saved(count_slow_cb, &pt->id);
        if (!atomic_load_explicit(&pt->handlers, memory_order_relaxed))
            pt = NULL;
    } else {
        pt = NULL;
    }
    rt_leave(entered);
    return pt;
}

/* Handlers that asked for KPROBE_FLAG_FPU, from dispatch.S (which has
 * marked the thread as running pt's handlers). */
void rt_run_handlers_fpu(struct point *pt, struct pt_regs *regs)
{
    struct handler_call hc = { pt, regs };
    rt_with_xstate_saved(run_handlers_cb, &hc);
}

/* Run fn(arg) with every enabled extended state component (x87, SSE, AVX,
 * ...) saved and restored around it: for KPROBE_FLAG_FPU handlers, and for
 * the runtime's own rare paths that call into libc (whose string functions
 * use vector registers the probed code may hold live). */
void rt_with_xstate_saved(void (*fn)(void *), void *arg)
{
    static unsigned size;
    unsigned a, b, c, d;
    if (!size) {
        if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b < 576)
            b = 4096;
        size = b;
    }
    unsigned char *raw = __builtin_alloca(size + 64);
    unsigned char *area = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    for (int i = 0; i < 8; i++)   /* XRSTOR wants a clean header; no memset: it may use AVX */
        ((volatile uint64_t *)(area + 512))[i] = 0;
    __asm__ volatile("xsave64 (%0)" :: "r"(area), "a"(~0u), "d"(~0u) : "memory");
    fn(arg);
    __asm__ volatile("xrstor64 (%0)" :: "r"(area), "a"(~0u), "d"(~0u) : "memory");
}

static void run_handlers_cb(void *arg)
{
    struct handler_call *hc = arg;
    run_pre_handlers(hc->pt, hc->regs, NULL);
}

static void count_slow_cb(void *arg) { count_slow(*(uint32_t *)arg); }

/* The table of a linked pool whose states hold st, before the pool's
 * constructor registered it (a hit from an earlier constructor): the object
 * holding st is searched for a table (64-aligned in a read-only segment)
 * whose states hold st. add_pool checks it like any other. */
struct linked_find {
    const void *st;
    const struct kprw_table *t;
    uintptr_t lo, hi;                 /* the segment holding st */
};
/* no_sanitize: the search reads whatever the segments hold, by design */
__attribute__((no_sanitize("address")))
static int find_linked_table(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct linked_find *f = arg;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && (uintptr_t)f->st >= lo && (uintptr_t)f->st < lo + ph->p_memsz;
        if (mine)
            f->lo = lo, f->hi = lo + ph->p_memsz;
    }
    for (int i = 0; mine && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ph->p_memsz < sizeof(struct kprw_table))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, end = lo + ph->p_memsz - sizeof(struct kprw_table);
        for (uintptr_t a = (lo + 63) & ~(uintptr_t)63; a <= end; a += 64) {
            const struct kprw_table *t = (const void *)a;
            if (t->magic != KPRW_MAGIC || (t->version < KPRW_VERSION_MIN || t->version > KPRW_VERSION))
                continue;
            uintptr_t states = a + (uintptr_t)t->state_rel, at = (uintptr_t)f->st;   /* any value: no pointer yet */
            if (at >= states && (at - states) / sizeof(struct kprw_state) < t->nentries) {
                f->t = t;
                return 1;
            }
        }
    }
    return mine;
}

/* Segments whose states lead to no usable pool (none found, or refused):
 * their hits are not searched again. */
#define MAX_DEAD 16
static struct { uintptr_t lo, hi; } dead[MAX_DEAD];
static unsigned ndead;

static void add_pool_cb(void *arg)
{
    struct kprw_state *st = arg;
    rt_lock_take();
    struct linked_find f = { st, NULL, 0, 0 };
    bool known_dead = false;
    for (unsigned i = 0; i < ndead && !known_dead; i++)
        known_dead = (uintptr_t)st >= dead[i].lo && (uintptr_t)st < dead[i].hi;
    if (!known_dead && !ready_state(st)) {   /* a linked pool not registered yet */
        dl_iterate_phdr(find_linked_table, &f);
        if (!(f.t && add_pool(f.t) && ready_state(st)) && f.hi && ndead < MAX_DEAD) {
            dead[ndead].lo = f.lo;
            dead[ndead++].hi = f.hi;
        }
    }
    rt_lock_drop();
}

/* ---- the kprobes API ---- */

/* The baked point at sym+offset or addr (a kprobe may use any point; a
 * kretprobe needs one of kind 'r'). Under rt_lock. */
struct point *rt_find_point(const char *sym, unsigned offset, uintptr_t addr)
{
    rt_points_ready();
    for (struct pool *p = pools; p; p = p->next)
        for (uint32_t i = 0; i < p->t->nentries; i++) {
            struct point *pt = p->state[i].rt;   /* all filled now */
            /* SYM+0 placed after a prefix (endbr64, a landing-pad piece's
             * nop): the function's start names it too */
            bool after = pt->flags & KPRW_F_AFTER_ENDBR;
            if (sym) {
                if (strcmp(pt->name, sym) == 0 && (pt->offset == offset || (after && offset == 0)))
                    return pt;
            } else if (pt->addr == addr || (after && pt->addr - pt->offset == addr)) {
                return pt;
            }
        }
    return NULL;
}

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
    if (kp && !kp->__next && kp->pre_handler == rt_kretprobe_entry &&
        !(__atomic_load_n(&kp->flags, __ATOMIC_RELAXED) & KPROBE_FLAG_DISABLED) &&
        !((struct kretprobe *)kp)->entry_handler)
        h = ((struct kretprobe *)kp)->__holder;
    atomic_store_explicit(&pt->kret, h, memory_order_release);
}

/* membarrier(PRIVATE_EXPEDITED) needs the process registered first (it
 * fails with EPERM otherwise): done once, here. Is it usable? */
bool rt_membarrier_ready(void)
{
    static _Atomic int state;   /* 0 unknown, 1 registered, -1 unavailable */
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (!s) {
        s = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
        atomic_store_explicit(&state, s, memory_order_release);
    }
    return s == 1;
}

/* A full barrier on every running thread of the process; false if none
 * could be issued. */
bool rt_membarrier(void)
{
    return rt_membarrier_ready() && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
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
        bool busy = atomic_load(&trap_active) != 0 && !rt_in_handler;
        rt_lock_take();
        for (struct rt_thread *c = threads; c && !busy; c = c->next)
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
    if (kp->pre_handler == rt_kretprobe_entry)
        rt_kretprobe_changed((struct kretprobe *)kp);
    if (kp->__point)   /* unregistered since the check above */
        rt_point_changed(kp->__point);
    rt_lock_drop();
    return 0;
}

EXPORT int enable_kprobe(struct kprobe *kp) { return set_disabled(kp, false); }
EXPORT int disable_kprobe(struct kprobe *kp) { return set_disabled(kp, true); }

/* Under rt_lock. */
void rt_stats(struct point *pt, uint64_t *hits, uint64_t *missed)
{
    uint64_t h = atomic_load(&pt->hits);
    for (struct rt_thread *c = threads; c; c = c->next)
        if (pt->id < c->cap)
            h += __atomic_load_n(&c->hits[pt->id], __ATOMIC_RELAXED);
    *hits = h;
    uint64_t m = atomic_load(&pt->missed);
    for (struct kprobe *kp = atomic_load(&pt->handlers); kp; kp = kp->__next)
        if (kp->pre_handler == rt_kretprobe_entry)
            m += (uint64_t)__atomic_load_n(&((struct kretprobe *)kp)->nmissed, __ATOMIC_RELAXED);
    *missed = m;
}

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

/* KPREWRITE_REPORT=1: print every point's counts at exit (stderr). */
static int report_fd = 2;   /* a copy of stderr: programs may close theirs before exit */

static void report_point(struct point *pt, void *arg)
{
    (void)arg;
    struct kprewrite_point_stats st = { 0, 0 };
    stats_of(pt, &st);
    dprintf(report_fd, "kprewrite: %016lx  %c  %s+0x%x  hits %lu  nmissed %lu\n", (unsigned long)pt->addr,
            pt->kind, pt->name, pt->offset, st.hits, st.nmissed);
}

static void report(void)
{
    rt_lock_take();
    rt_points_ready();
    rt_each_ready_point(report_point, NULL);
    rt_lock_drop();
}

/* Pools kprewrite added to prebuilt images (KPRW_T_ADDED_POOL): no
 * constructor registers them; each table starts a non-writable PT_LOAD of
 * its own, which the object's KPRW_DT_TABLE names. Their detours call
 * thunks that read the slots, which stay empty (probes count nothing) until
 * the table is trusted. */

/* The link-time address of an added pool's table (KPRW_DT_TABLE), from the
 * object's dynamic section, which the loader has read already; 0: none. */
static uintptr_t tagged_table(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *d = (const void *)(info->dlpi_addr + ph->p_vaddr);
        for (size_t k = 0; k < ph->p_memsz / sizeof *d && d[k].d_tag != DT_NULL; k++)
            if (d[k].d_tag == KPRW_DT_TABLE)
                return d[k].d_un.d_ptr;
    }
    return 0;
}

static int find_added_pools(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    uintptr_t want = tagged_table(info);
    for (int i = 0; want && i < info->dlpi_phnum; i++) {
        /* the tag must name the start of a read-only PT_LOAD of the object */
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_vaddr != want || (ph->p_flags & PF_W) ||
            ph->p_filesz < sizeof(struct kprw_table))
            continue;
        const struct kprw_table *t = (const void *)(info->dlpi_addr + ph->p_vaddr);
        if (t->magic != KPRW_MAGIC || !(t->flags & KPRW_T_ADDED_POOL))
            continue;
        rt_lock_take();
        if (add_pool(t)) {   /* checked: the slots are in a writable segment of that object */
            void *_Atomic *slot = (void *_Atomic *)((char *)t + t->slot_rel);
            /* the return before the entry: a detour jumps to the return
             * only after the entry took its call */
            if (t->flags & KPRW_T_ENTER)         /* the pool has the fifth slot */
                atomic_store(&slot[KPRW_SLOT_ENTER], (void *)__kprewrite_enter);
            if (t->flags & KPRW_T_KRET_RETURN)   /* the pool has the fourth slot */
                atomic_store(&slot[KPRW_SLOT_KRET_RETURN], (void *)__kprewrite_kret_return);
            if (t->flags & KPRW_T_KRET_ENTRY)    /* the pool has the third slot */
                atomic_store(&slot[KPRW_SLOT_KRET_ENTER], (void *)__kprewrite_kret_enter);
            atomic_store(&slot[KPRW_SLOT_RETURN], (void *)__kprewrite_return);
            atomic_store(&slot[KPRW_SLOT_DISPATCH], (void *)__kprewrite_dispatch);
        }
        rt_lock_drop();
    }
    return 0;
}

static void *(*libc_dlopen(void))(const char *, int)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return real;
}

/* Every pool armed (and every table refused) since the last call: their
 * objects, which dlclose could unmap under the runtime that keeps their
 * tables, states and code for as long as the process runs (the points'
 * records, list, lookups by name; the same library opened again would meet
 * records of the old copy), are made undeletable (RTLD_NODELETE: dlclose
 * then unmaps nothing and runs no destructor; the main program has no name
 * to pin, and needs none). Called as pools register and after each dlopen,
 * with no lock held: the loader's lock is taken after rt_lock nowhere else. */
static void pin_new_pools(void)
{
    void *(*real)(const char *, int) = libc_dlopen();
    for (;;) {
        const void *t = NULL;
        rt_lock_take();
        for (struct pool *p = pools; p && !t; p = p->next)
            if (!p->pinned) {
                p->pinned = true;
                t = p->t;
            }
        for (unsigned i = 0; i < nrefused && !t; i++)
            if (!refused_pinned[i]) {
                refused_pinned[i] = true;
                t = refused[i];
            }
        rt_lock_drop();
        if (!t)
            return;
        Dl_info di;
        struct link_map *map = NULL;
        if (real && dladdr1(t, &di, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name && map->l_name[0])
            real(map->l_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);   /* (its dependencies stay too: the runtime) */
    }
}

/* A library opened later may carry an added pool too: look again once
 * dlopen returns (its constructors have run by then: probes hit in them
 * count nothing). The runtime comes first in lookup order (it is the first
 * DT_NEEDED of a prebuilt image), so this definition is the one called. */
EXPORT void *dlopen(const char *file, int mode)
{
    void *(*real)(const char *, int) = libc_dlopen();
    void *h = real ? real(file, mode) : NULL;
    if (h) {
        bool e = rt_enter();
        dl_iterate_phdr(find_added_pools, NULL);
        pin_new_pools();
        rt_leave(e);
    }
    return h;
}

/* glibc passes constructors the program's arguments and environment. */
__attribute__((constructor(101))) static void rt_init(int argc, char **argv, char **envp)
{
    (void)argc; (void)argv;
    /* A libc with probes baked in needs the runtime, so the runtime's
     * constructor runs before libc's, which sets environ: without this,
     * getenv would see no KPREWRITE_* variable. libc sets it the same. */
    if (!environ && envp)
        environ = envp;
    bool e = rt_enter();   /* the libc it calls may be probed */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    trap_install();
    /* every object loaded at start-up is mapped by now (dlopen above
     * looks again for libraries opened later) */
    dl_iterate_phdr(find_added_pools, NULL);
    pin_new_pools();   /* a prebuilt library that a dlopen of libc's brought in with the runtime */
    const char *r = getenv("KPREWRITE_REPORT");
    if (r && *r && strcmp(r, "0") != 0) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0)
            report_fd = fd;
        atexit(report);
    }
    rt_leave(e);
}
