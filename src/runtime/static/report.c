/*
 * KPREWRITE_REPORT in a static program: printed at the exit guard (_exit,
 * guard.c), once, by the process that set the runtime up (a forked
 * child's counters are its parent's copy: it prints nothing; a vfork child
 * shares them). Lines as the user runtime's (startup.c), one write each.
 */
#include "rt.h"

struct line {
    char s[512];
    size_t n;
};

static void put(struct line *l, const char *s)
{
    while (*s && l->n < sizeof l->s - 1)
        l->s[l->n++] = *s++;
}

static void put_num(struct line *l, uint64_t v, unsigned base, int width)
{
    char d[24];
    int n = 0;
    do {
        d[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (width-- > n && l->n < sizeof l->s - 1)
        l->s[l->n++] = '0';
    while (n-- && l->n < sizeof l->s - 1)
        l->s[l->n++] = d[n];
}

void kprs_entry_name(const struct kprs_rt *r, const struct kprw_entry *e, char *buf, size_t size)
{
    struct line l = { .n = 0 };
    const char *name = kprs_name(r, e);
    if (name) {
        put(&l, name);
    } else {
        put(&l, e->name_off == KPRW_NAME_FDE ? KPRW_FDE_PREFIX : KPRW_FOUND_PREFIX);
        put_num(&l, r->t->link_addr + (uint64_t)(int64_t)e->site_rel - e->offset, 16, 0);
    }
    size_t n = l.n < size - 1 ? l.n : size - 1;
    memcpy(buf, l.s, n);
    buf[n] = 0;
}

static void report_line(const struct kprs_rt *r, int fd, uint32_t i)
{
    struct line l = { .n = 0 };
    put(&l, "kprewrite: ");
    put_num(&l, kprs_site(r, i), 16, 16);
    char kind[5] = { ' ', ' ', (char)r->e[i].kind, ' ', 0 };
    put(&l, kind);
    put(&l, " ");
    char name[300];
    kprs_entry_name(r, &r->e[i], name, sizeof name);
    put(&l, name);
    put(&l, "+0x");
    put_num(&l, r->e[i].offset, 16, 0);
    put(&l, "  hits ");
    put_num(&l, __atomic_load_n(&r->pt[i].hits, __ATOMIC_RELAXED), 10, 0);
    put(&l, "  nmissed ");   /* calls a return event could not hook (hook.c) */
    put_num(&l, __atomic_load_n(&r->pt[i].missed, __ATOMIC_RELAXED), 10, 0);
    uint64_t dropped = __atomic_load_n(&r->pt[i].dropped, __ATOMIC_RELAXED);
    if (dropped) {   /* as the runtime library's: the events a full ring lost */
        put(&l, "  dropped ");
        put_num(&l, dropped, 10, 0);
    }
    put(&l, "\n");
    kprs_sys(SYS_write, fd, (long)l.s, (long)l.n, 0);
}

static int before(const struct kprs_rt *r, uint32_t a, uint32_t b)
{
    uint64_t ha = r->pt[a].hits, hb = r->pt[b].hits;
    return ha != hb ? ha > hb : kprs_site(r, a) < kprs_site(r, b);
}

/* the hit points, busiest first (an insertion sort into v: reports are
 * of hit points, a few hundred in practice) */
static uint32_t hit_points(const struct kprs_rt *r, uint32_t *v)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->t->nentries; i++) {
        if (!r->pt[i].hits)
            continue;
        uint32_t k = n++;
        for (; k > 0 && before(r, i, v[k - 1]); k--)
            v[k] = v[k - 1];
        v[k] = i;
    }
    return n;
}

void kprs_report(const struct kprs_rt *r)
{
    int fd = r->area->report_fd;
    uint32_t n = r->t->nentries;
    if (r->area->report_all) {
        for (uint32_t k = 0; k < n; k++)
            report_line(r, fd, r->sorted[k]);
        return;
    }
    long len = ((long)n * 4 + 4095) & ~4095L;
    uint32_t *v = (uint32_t *)kprs_sys6(SYS_mmap, 0, len ? len : 4096, 3 /* rw */, 0x22 /* private, anonymous */, -1, 0);
    if ((unsigned long)v > -4096UL)
        return;
    uint32_t hit = hit_points(r, v);
    for (uint32_t k = 0; k < hit; k++)
        report_line(r, fd, v[k]);
    struct line l = { .n = 0 };
    put(&l, "kprewrite: ");
    put_num(&l, hit, 10, 0);
    put(&l, " points hit, ");
    put_num(&l, n - hit, 10, 0);
    put(&l, " never hit (KPREWRITE_REPORT=all lists them)\n");
    kprs_sys(SYS_write, fd, (long)l.s, (long)l.n, 0);
    kprs_sys(SYS_munmap, (long)v, len ? len : 4096, 0, 0);
}
