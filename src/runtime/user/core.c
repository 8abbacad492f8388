/*
 * The user runtime's core: the lock, the threads and their hit counters,
 * the registry of points, the global knobs, and the few primitives every
 * other part uses (membarrier, the vector-state save). It calls none of
 * the other parts by name: what they must hear of (a fork, points filled,
 * a pool added, a thread gone, a kprobe toggled, an int3 hit handled) goes
 * through rt_hooks, which startup.c fills.
 *
 * Counting: no atomic on the hot path. Each thread counts in its own
 * array; counts are summed over threads when read, and folded into the
 * totals when a thread exits.
 *
 * Built with -mgeneral-regs-only: the dispatcher must not touch the probed
 * code's vector registers, which detours do not save.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cpuid.h>

#include "rt.h"
#include "rt-offsets.h"
#include "util/array.h"

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

static struct point **rt_points;      /* by id */
static uint32_t rt_npoints;
TLS struct rt_thread rt_self;

static bool knobs[RT_NKNOBS] = { [RT_KNOB_ENABLED] = true, [RT_KNOB_OPTIMIZATION] = true };
static size_t cap_points;               /* rt_points' room */
static uint32_t reserved;               /* the entries of every pool */
static struct rt_thread *threads;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Atomic int traps;               /* SIGTRAP handlers running a probe now (trap.c) */

OFFSET_CHECK(offsetof(struct kprw_state, rt), ST_RT);
OFFSET_CHECK(offsetof(struct point, addr), PT_ADDR);
OFFSET_CHECK(offsetof(struct point, flags), PT_FLAGS);
OFFSET_CHECK(offsetof(struct point, id), PT_ID);
OFFSET_CHECK(offsetof(struct point, handlers), PT_HANDLERS);
OFFSET_CHECK(offsetof(struct point, cpath), PT_CPATH);
OFFSET_CHECK(offsetof(struct point, missed), PT_MISSED);
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
OFFSET_CHECK(offsetof(struct rt_thread, stack_top), TH_STACK_TOP);
OFFSET_CHECK(offsetof(struct rt_thread, stack_save), TH_STACK_SAVE);
OFFSET_CHECK(KPRW_F_GO, KPRW_F_GO_VALUE);
OFFSET_CHECK(CODE_DISABLED, CODE_DISABLED_VALUE);
OFFSET_CHECK(KPRW_F_FLAGS_SAVED, KPRW_F_FLAGS_SAVED_VALUE);
OFFSET_CHECK(KPROBE_FLAG_DISABLED, KPROBE_FLAG_DISABLED_VALUE);
OFFSET_CHECK(KPROBE_FLAG_RT_RECORDER, KPROBE_FLAG_RT_RECORDER_VALUE);

bool rt_knob(enum rt_knob k) { return knobs[k]; }
void rt_set_knob(enum rt_knob k, bool on) { knobs[k] = on; }

int rt_traps_running(void) { return atomic_load(&traps); }
void rt_trap_enter(void) { atomic_fetch_add_explicit(&traps, 1, memory_order_acquire); }
void rt_trap_leave(void) { atomic_fetch_sub_explicit(&traps, 1, memory_order_release); }
void rt_traps_reset(int n) { atomic_store(&traps, n); }

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
    rt_hooks.thread_exit(c);
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
    /* the runtime stack of Go points (enter-fast.S): a later hit maps another */
    uintptr_t top = rt_self.stack_top;
    rt_self.stack_top = 0;
    if (top)
        munmap((void *)(top - RT_STACK_SIZE - RT_STACK_GUARD), RT_STACK_SIZE + RT_STACK_GUARD);
    rt_leave(e);
}


/* fork() while other threads run (a threaded program starting a worker or
 * a helper): the child has only the thread that forked. It must not
 * inherit rt_lock held by a thread it does not have (its first hit of a
 * point, or any registration, would wait forever), nor wait for those
 * threads' handlers (unregister_kprobe would). So rt_lock is held across
 * fork, as libc does with its own locks (startup.c registers these with
 * pthread_atfork), and the child forgets the other threads as if they had
 * exited (their counts stay in its totals). */
static _Atomic int membarrier_state;   /* rt_membarrier_ready(): 0 unknown, 1 registered, -1 unavailable */

void rt_fork_prepare(void) { rt_lock_take(); }
void rt_fork_parent(void) { rt_lock_drop(); }
void rt_fork_child(void)
{
    for (struct rt_thread *c = threads, *next; c; c = next) {
        next = c->next;
        if (c != &rt_self) {
            uint32_t cap;
            uint64_t *h = forget(c, &cap);
            counters_free(h, cap);
        }
    }
    /* A hit counts once, in the process it happened in: the child starts
     * from zero (its report and list are its own; summed with the
     * parent's, they give every hit once, as its trace gives every event) */
    for (uint32_t i = 0; i < rt_npoints; i++) {
        atomic_store_explicit(&rt_points[i]->hits, 0, memory_order_relaxed);
        atomic_store_explicit(&rt_points[i]->missed, 0, memory_order_relaxed);
        atomic_store_explicit(&rt_points[i]->ev_dropped, 0, memory_order_relaxed);
    }
    if (rt_self.hits)
        memset(rt_self.hits, 0, rt_self.cap * sizeof *rt_self.hits);
    atomic_store(&membarrier_state, 0);
    rt_hooks.fork_child();
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

static void count_slow_cb(void *arg) { count_slow(*(uint32_t *)arg); }

/* Count a hit of pt by this thread, the first one of its array's reach
 * included (that one takes the lock and calls libc: vector state saved). */
void rt_count_hit(struct point *pt)
{
    if (pt->id < rt_self.cap)
        rt_self.hits[pt->id]++;
    else
        rt_with_xstate_saved(count_slow_cb, &pt->id);
}

/* Room for n more points in rt_points (under rt_lock); false when out of
 * memory. The calling thread gets a counter for every point now, from
 * plain C: its first hits then take no slow path, which would save the
 * vector state. */
bool rt_points_reserve(uint32_t n)
{
    if (!ARRAY_RESERVE(rt_points, cap_points, (size_t)reserved + n))
        return false;
    reserved += n;
    pthread_once(&key_once, make_key);
    counters_grow(reserved);
    return true;
}

uint32_t rt_point_count(void) { return rt_npoints; }
struct point *const *rt_point_list(void) { return rt_points; }

/* Give pt the next id (room was reserved); under rt_lock. */
void rt_point_add(struct point *pt)
{
    pt->id = rt_npoints;
    rt_points[rt_npoints++] = pt;
}

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
        if (rt_is_kretprobe(kp))
            m += (uint64_t)__atomic_load_n(&((struct kretprobe *)kp)->nmissed, __ATOMIC_RELAXED);
    *missed = m;
}

/* membarrier(PRIVATE_EXPEDITED) needs the process registered first (it
 * fails with EPERM otherwise): done once, here (and once again in a child
 * of fork, whose mm is not the one registered). Is it usable? */
bool rt_membarrier_ready(void)
{
    int s = atomic_load_explicit(&membarrier_state, memory_order_acquire);
    if (!s) {
        s = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
        atomic_store_explicit(&membarrier_state, s, memory_order_release);
    }
    return s == 1;
}

/* A full barrier on every running thread of the process; false if none
 * could be issued. */
bool rt_membarrier(void)
{
    return rt_membarrier_ready() && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
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
