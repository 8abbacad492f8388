/* The static runtime's parts (src/runtime/static): no writable globals --
 * the blob is copied into a read-only segment -- so every piece of state
 * is reached from the head (kprs_head, which the rewriter filled in). */
#ifndef KPRS_RT_H
#define KPRS_RT_H
#include "blob.h"
#include "sys.h"
#include "kprewrite/abi.h"

extern const struct kprs_head kprs_head KPRS_HIDDEN;

/* Where everything is, from the head. */
struct kprs_rt {
    const struct kprw_table *t;
    const struct kprw_entry *e;      /* t's entries */
    struct kprw_state *state;        /* .kprewrite.data */
    struct kprs_area *area;
    struct kprs_point *pt;           /* area's points, one an entry */
    uint32_t *sorted;                /* entry indices by site */
};

/* The head's address, laundered: what it leads to is no part of the
 * object kprs_head as C sees it (the table, the area). */
static inline const struct kprs_head *kprs_head_addr(void)
{
    const struct kprs_head *h;
    __asm__("lea kprs_head(%%rip), %0" : "=r"(h));
    return h;
}

static inline void kprs_rt_get(struct kprs_rt *r)
{
    const struct kprs_head *head = kprs_head_addr();
    const char *h = (const char *)head;
    r->t = (const struct kprw_table *)(h + head->table_rel);
    r->e = (const struct kprw_entry *)(r->t + 1);
    r->state = (struct kprw_state *)((char *)r->t + r->t->state_rel);
    r->area = (struct kprs_area *)(h + head->area_rel);
    r->pt = (struct kprs_point *)(r->area + 1);
    r->sorted = (uint32_t *)(r->pt + r->t->nentries);
}

/* An entry's name when it has one in the table or the image's dynamic
 * strings; NULL for one named by its address (fde@, fn@). */
static inline const char *kprs_name(const struct kprs_rt *r, const struct kprw_entry *e)
{
    if (KPRW_NAME_BY_ADDR(e->name_off))
        return 0;
    return (e->name_off & KPRW_NAME_DYN) ? (const char *)r->t + r->t->dynstr_rel + (e->name_off & ~KPRW_NAME_DYN)
                                         : (const char *)r->t + r->t->strings_off + e->name_off;
}

static inline uintptr_t kprs_site(const struct kprs_rt *r, uint32_t i)
{
    return (uintptr_t)r->t + (uintptr_t)(intptr_t)r->e[i].site_rel;
}

/* init.c */
void kprs_init(uint64_t *sp) KPRS_HIDDEN;
uint64_t kprs_dispatch(struct kprw_state *st, void *regs) KPRS_HIDDEN;
/* init.c: a guard's or an event's hit, with the probed code's pt_regs
 * (start-x86.S, trap.c, kprs_dispatch); can_hook: a return event's call
 * may be hooked (non-zero returned when it was) */
uint64_t kprs_hit(struct kprs_point *pt, void *regs, uint64_t can_hook) KPRS_HIDDEN;
/* init.c: "kprewrite: static runtime: " a, b[0..n), c, a newline on stderr */
void kprs_note3(const char *a, const char *b, size_t n, const char *c) KPRS_HIDDEN;
/* report.c: an entry's name (by address: fde@0x..., fn@0x...) */
void kprs_entry_name(const struct kprs_rt *r, const struct kprw_entry *e, char *buf, size_t size) KPRS_HIDDEN;
/* trap.c */
int kprs_trap_install(void) KPRS_HIDDEN;
void kprs_sort_sites(struct kprs_rt *r) KPRS_HIDDEN;
/* guard.c: a guard point's hit, with the probed function's first two
 * arguments and its %rsp */
void kprs_guard(struct kprs_point *pt, uint64_t arg0, uint64_t arg1, uint64_t sp) KPRS_HIDDEN;
/* guard.c: every int3 of the runtime's put back (the SIGTRAP is no longer
 * its), the int3 probes disabled */
void kprs_int3_restore(const struct kprs_rt *r) KPRS_HIDDEN;
/* report.c: KPREWRITE_REPORT at _exit */
void kprs_report(const struct kprs_rt *r) KPRS_HIDDEN;
/* start-x86.S */
void kprs_enter(void) KPRS_HIDDEN;
void kprs_dispatch_entry(void) KPRS_HIDDEN;
void kprs_kret_enter(void) KPRS_HIDDEN;
void kprs_kret_return(void) KPRS_HIDDEN;
void kprs_sigreturn(void) KPRS_HIDDEN;
#endif
