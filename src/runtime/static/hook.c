/*
 * Return events in the static runtime: calls hooked at a return point's
 * entry, their return events recorded when they return.
 *
 * The detour (src/arch/x86/detour.c) asks kprs_kret_enter whether it takes
 * the call; when it does, the detour calls the function from its pool, so
 * that the function returns into the pool, which jumps to kprs_kret_return
 * (start-x86.S): C there gives back the real return address.
 *
 * The runtime has no TLS of its own (the program's may not be set up yet
 * when a probed function runs), so the hooked calls of every thread live
 * in one table in the area, keyed by the address of the call's
 * return-address slot (the probed %rsp at the entry): unique among the
 * live frames of all threads, so that neither the entry nor the return
 * needs to know its thread. Open addressing from a hash of the slot, over
 * KPRS_HOOK_PROBE entries; an entry is claimed by a compare-and-swap of
 * its key (bit 0 set while it is filled or freed: others pass it by).
 *
 * - A call at a slot that an entry holds already: that entry is stale (a
 *   longjmp left its frame) and is taken over, unless the slot holds the
 *   entry's hook (the pool's address its function returns to): then this
 *   is a tail call from that function, whose return address is the hook,
 *   and the call is not hooked (counted as missed: the outer call's event
 *   comes at the real return).
 * - Stale entries of the same thread (a longjmp out of hooked frames:
 *   their slots no longer hold the hook) are taken over too, found as
 *   the search passes them; the thread is its %fs base
 *   (rdfsbase, or arch_prctl where the kernel has not enabled it): one
 *   value a live thread, kept by fork's child, where the frames are the
 *   parent's.
 * - No entry free: the call is not hooked, counted on the point as missed
 *   (kretprobe's nmissed); the program runs as it would.
 * - The unwinder (C++ exceptions, pthread_exit, backtrace) reads return
 *   addresses to find frames: at its entry points (guard points, guard.c)
 *   the thread's hooked calls above its %rsp get their real return
 *   addresses back (where the slot still holds the hook) and are dropped:
 *   those calls record no return event.
 */
#include "rt.h"
#include "events.h"
#include "runtime/core/event.h"
#include "kprewrite/ptrace.h"

#define SYS_arch_prctl 158
#define ARCH_GET_FS 0x1003
#define AT_HWCAP2 26
#define HWCAP2_FSGSBASE 2
#define BUSY 1u

_Static_assert(sizeof(((struct kprs_hook *)0)->entry) / 8 == KPRW_EV_ENTRY_ARGS, "a hook's entry slots");
_Static_assert((KPRS_HOOKS & (KPRS_HOOKS - 1)) == 0 && KPRS_HOOK_PROBE <= KPRS_HOOKS, "the hook table");

static struct kprs_hook *table(const struct kprs_rt *r)
{
    return (struct kprs_hook *)((char *)r->area + kprs_area_layout(r->t->nentries).hooks);
}

static uint32_t home(uint64_t slot)
{
    return (uint32_t)((slot >> 3) * 0x9e3779b97f4a7c15ull >> 40) & (KPRS_HOOKS - 1);
}

static uint64_t thread_id(const struct kprs_area *a)
{
    uint64_t fs = 0;
    if (a->fsgsbase)
        __asm__ volatile("rdfsbase %0" : "=r"(fs));
    else
        kprs_sys(SYS_arch_prctl, ARCH_GET_FS, (long)&fs, 0, 0);
    return fs;
}

/* Where entry i's function returns into its detour when its call is hooked. */
static uint64_t hook_addr(const struct kprs_rt *r, uint32_t i)
{
    return (uint64_t)(uintptr_t)r->t + (uint64_t)(int64_t)r->e[i].code_rel + r->e[i].hook_off;
}

void kprs_hooks_init(const struct kprs_rt *r, const uint64_t *sp)
{
    struct kprs_area *a = r->area;
    const struct kprs_head *h = kprs_head_addr();
    const uint64_t *v = sp + 1 + sp[0] + 1;   /* envp, then auxv */
    while (*v)
        v++;
    for (v++; v[0]; v += 2)
        if (v[0] == AT_HWCAP2 && (v[1] & HWCAP2_FSGSBASE))
            a->fsgsbase = 1;
    uint32_t guarded = 0;
    for (uint32_t i = 0; i < r->t->nentries; i++)
        guarded += r->pt[i].guard == KPRS_GUARD_UNWIND;
    /* every entry point of the unwinder the image names has its guard */
    a->hook_ok = h->hook_ok && guarded >= h->hook_ok - 1;
}

bool kprs_hook_point_ok(const struct kprs_rt *r, uint32_t i)
{
    const struct kprw_entry *e = &r->e[i];
    return r->area->hook_ok && e->kind == KPRW_KIND_R && e->verdict == KPRW_OPTIMIZED && e->hook_off &&
           !(e->flags & KPRW_F_GO);
}

/* Does the slot of entry k (its key) still hold its hook? A live call's
 * does; one a longjmp left is another frame's memory by now, or unmapped
 * (a signal stack freed): read without a fault. */
static bool live(const struct kprs_rt *r, const struct kprs_hook *k, uint64_t key)
{
    uint64_t now = 0;
    return k->point < r->t->nentries && kprs_read_word(&now, key) && now == hook_addr(r, k->point);
}

/* Claim entry k (its key old) for slot: filled by the caller, then
 * published by kprs_hook_publish. */
static bool claim(struct kprs_hook *k, uint64_t old, uint64_t slot)
{
    return __atomic_compare_exchange_n(&k->slot, &old, slot | BUSY, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

uint64_t kprs_hook(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs)
{
    struct kprs_area *a = r->area;
    struct kprs_point *pt = &r->pt[i];
    uint64_t slot = regs->sp, ret = *(const uint64_t *)(uintptr_t)slot, self = thread_id(a);
    struct kprs_hook *tab = table(r), *got = 0;
    /* a first pass takes a free entry; the second, the thread's own stale
     * ones too (a system call each to look: rarely needed). An entry of
     * this slot ends either: the search never passes it, so that a
     * return finds the newest first. */
    for (int reclaim = 0; reclaim < 2 && !got; reclaim++) {
        uint32_t at = home(slot), n = 0;
        for (; n < KPRS_HOOK_PROBE && !got; n++, at = (at + 1) & (KPRS_HOOKS - 1)) {
            struct kprs_hook *k = &tab[at];
            uint64_t key = __atomic_load_n(&k->slot, __ATOMIC_ACQUIRE);
            if (key == slot) {
                if (ret == hook_addr(r, k->point))
                    break;   /* a tail call from a hooked call: its return address is the hook */
                if (claim(k, key, slot))
                    got = k;   /* stale: its frame was left by a longjmp */
                break;
            }
            if (key == 0 || (reclaim && !(key & BUSY) && k->thread == self && !live(r, k, key)))
                if (claim(k, key, slot))   /* free, or the thread's own left by a longjmp */
                    got = k;
        }
        if (n < KPRS_HOOK_PROBE && !got)
            break;   /* (the tail call, or the stale entry taken meanwhile) */
    }
    if (!got) {
        __atomic_fetch_add(&pt->missed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    got->ret = ret;
    got->thread = self;
    got->point = i;
    kprs_event_entry(r, i, regs, got->entry);
    got->ts = kprs_event_now(a);
    __atomic_store_n(&got->slot, slot, __ATOMIC_RELEASE);
    return 1;
}

static void die(const char *what)
{
    kprs_note3(what, "", 0, "; aborted");
    long pid = kprs_sys(SYS_getpid, 0, 0, 0, 0);
    kprs_sys(SYS_tgkill, pid, kprs_sys(SYS_gettid, 0, 0, 0, 0), 6 /* SIGABRT */, 0);
    kprs_sys(231 /* exit_group */, 134, 0, 0, 0);
    __builtin_unreachable();
}

/* A hooked call returns (kprs_kret_return, on one of the runtime's stacks
 * when one is free): regs as the function returned, sp above the slot,
 * which holds the hook; the real return address goes there. */
void kprs_kret_ret(struct pt_regs *regs)
{
    struct kprs_rt r;
    kprs_rt_get(&r);
    uint64_t slot = regs->sp - 8;
    struct kprs_hook *tab = table(&r), *got = 0;
    uint32_t at = home(slot);
    for (uint32_t n = 0; n < KPRS_HOOK_PROBE; n++, at = (at + 1) & (KPRS_HOOKS - 1))
        if (__atomic_load_n(&tab[at].slot, __ATOMIC_ACQUIRE) == slot) {
            got = &tab[at];
            break;
        }
    if (!got || got->point >= r.t->nentries)
        die("a hooked call returned that the runtime has no record of (its return address is lost)");
    uint32_t i = got->point;
    uint64_t ret = got->ret, ts = got->ts, entry[KPRW_EV_ENTRY_ARGS];
    memcpy(entry, got->entry, sizeof entry);
    __atomic_store_n(&got->slot, 0, __ATOMIC_RELEASE);
    *(uint64_t *)(uintptr_t)slot = ret;
    regs->ip = ret;
    struct kprs_point *pt = &r.pt[i];
    if (pt->ev && pt->ret && !__atomic_load_n(&pt->disabled, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&pt->ev_off, __ATOMIC_RELAXED))
        kprs_event_return(&r, i, regs, entry, ret, ts);
}

/* The unwinder is entered (a guard point, on the thread's stack at sp):
 * the thread's hooked calls above sp get their return addresses back. */
void kprs_unhook_thread(const struct kprs_rt *r, uint64_t sp)
{
    struct kprs_hook *tab = table(r);
    uint64_t self = thread_id(r->area);
    for (uint32_t at = 0; at < KPRS_HOOKS; at++) {
        struct kprs_hook *k = &tab[at];
        uint64_t key = __atomic_load_n(&k->slot, __ATOMIC_ACQUIRE);
        if (!key || (key & BUSY) || key < sp || k->thread != self || !claim(k, key, key))
            continue;
        /* a live call's (one a longjmp left has its slot in another
         * frame's memory now: not written) */
        if (live(r, k, key))
            *(uint64_t *)(uintptr_t)key = k->ret;
        __atomic_store_n(&k->slot, 0, __ATOMIC_RELEASE);
    }
}
