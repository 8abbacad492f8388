/*
 * The static runtime's guard points, where it acts besides counting:
 *   _exit             KPREWRITE_REPORT is printed (report.c), then
 *                     KPREWRITE_TRACE written (events.c), once, by the
 *                     process that set the runtime up
 *   sigaction         glibc's and musl's __libc_sigaction, which
 *                     sigaction, signal and the like go through (kprewrite
 *                     writes its address in the head): a program that installs its own
 *                     SIGTRAP handler would get the int3 probes' traps and
 *                     resume in the middle of an instruction. So before
 *                     that, every int3 of the runtime's goes: the site's
 *                     first byte is put back (the original instruction's
 *                     for an int3 probe, the jump's for an unoptimized
 *                     point), the int3 probes are disabled, and one line
 *                     says so. A one-byte store, as kprewrite ctl makes.
 *   the unwinder      _Unwind_RaiseException, _Unwind_Resume_or_Rethrow,
 *                     _Unwind_ForcedUnwind, _Unwind_Backtrace (by name):
 *                     the thread's calls hooked for return events get
 *                     their return addresses back before it reads them
 *                     (hook.c), as the runtime library's unwind.c does
 */
#include "rt.h"
#include "events.h"

#define SYS_mprotect 10
#define PROT_RX 5
#define PROT_RWX 7

static void note(const char *what)
{
    kprs_sys(SYS_write, 2, (long)what, (long)kprs_strlen(what), 0);
}

/* The byte at a site of the image's text (r-x), written. */
static void poke(uintptr_t at, uint8_t byte)
{
    uintptr_t page = at & ~(uintptr_t)4095;
    if (kprs_sys(SYS_mprotect, (long)page, 4096, PROT_RWX, 0) < 0)
        return;
    __atomic_store_n((uint8_t *)at, byte, __ATOMIC_RELAXED);
    kprs_sys(SYS_mprotect, (long)page, 4096, PROT_RX, 0);
}

void kprs_int3_restore(const struct kprs_rt *r)
{
    struct kprs_area *a = r->area;
    if (__atomic_exchange_n(&a->trap_taken, 1, __ATOMIC_RELAXED))
        return;
    for (uint32_t i = 0; i < r->t->nentries; i++) {
        const struct kprw_entry *e = &r->e[i];
        struct kprs_point *pt = &r->pt[i];
        uintptr_t code = (uintptr_t)r->t + (uintptr_t)(intptr_t)e->code_rel;
        if (e->verdict == KPRW_INT3) {
            const uint8_t *orig = (e->flags & KPRW_F_ORIG_AT_COPY)
                                      ? (const uint8_t *)(code + e->ool_off)
                                      : (const uint8_t *)r->t + r->t->strings_off + e->orig_off;
            __atomic_store_n(&pt->disabled, 1, __ATOMIC_RELAXED);
            poke(kprs_site(r, i), orig[0]);
        } else if (pt->unoptimized) {
            poke(kprs_site(r, i), pt->site0);
            __atomic_store_n(&pt->unoptimized, 0, __ATOMIC_RELAXED);
        }
    }
}

static void give_up_sigtrap(const struct kprs_rt *r)
{
    if (__atomic_load_n(&r->area->trap_taken, __ATOMIC_RELAXED))
        return;
    kprs_int3_restore(r);
    note("kprewrite: static runtime: the program installs a SIGTRAP handler of its own: the int3 probes are "
         "disabled, their instructions put back (the jumps stay)\n");
}

void kprs_guard(struct kprs_point *pt, uint64_t arg0, uint64_t arg1, uint64_t sp)
{
    struct kprs_rt r;
    kprs_rt_get(&r);
    if (pt->guard == KPRS_GUARD_UNWIND) {
        kprs_unhook_thread(&r, sp);
        return;
    }
    if (pt->guard == KPRS_GUARD_SIGACTION) {
        if (arg0 == KPRS_SIGTRAP && arg1)   /* sigaction(SIGTRAP, act, ...) */
            give_up_sigtrap(&r);
        return;
    }
    struct kprs_area *a = r.area;
    if (kprs_sys(SYS_getpid, 0, 0, 0, 0) != a->pid || __atomic_exchange_n(&a->reported, 1, __ATOMIC_RELAXED))
        return;
    if (a->report_fd >= 0)   /* the counts first: other threads run on until the process ends */
        kprs_report(&r);
    kprs_trace_flush(&r);
}
