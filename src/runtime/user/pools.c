/*
 * Finding and registering probe tables: the pools of images linked with
 * the runtime (their constructor calls __kprewrite_register_pool, or a hit
 * comes first), and those kprewrite added to prebuilt images (named by the
 * object's KPRW_DT_TABLE, found at start-up and after each dlopen). Each
 * table is checked (table-check.c) before anything in it is followed; its
 * points are filled from its entries lazily, and looked up by name or
 * address. Registered objects are pinned (RTLD_NODELETE).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kprewrite/pool.h"
#include "rt.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older kernels say EINVAL */
#endif

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
    bool events_due;          /* KPRW_T_EVENTS: its definitions wait to be defined (rt_pool_take_events) */
    const char *object;       /* its image, for messages */
    struct pool *next;
};


static struct pool *pools;
static bool index_stale;   /* points filled since the trap index was built */

/* Tables refused once (rt_table_check): not checked nor reported again. */
#define MAX_REFUSED 16
static const struct kprw_table *refused[MAX_REFUSED];
static bool refused_pinned[MAX_REFUSED];   /* its object made undeletable: the address stays its */
static unsigned nrefused;

/* *int3s: how many of its entries are int3 probes (when not refused). A
 * table is checked even when no more refusals can be remembered: then its
 * refusal is only said again. */
static bool table_refused(const struct kprw_table *t, uint32_t *int3s, uint64_t *dynspan, const char **image)
{
    *int3s = t->nentries;
    *dynspan = 0;
    for (unsigned i = 0; i < nrefused; i++)
        if (refused[i] == t)
            return true;
    const char *object = "?";
    char why[200];
    const char *bad = t->magic != KPRW_MAGIC ? "bad magic" : rt_table_check(t, &object, int3s, dynspan, why, sizeof why);
    *image = object;
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

/* KPRW_FDE_PREFIX (KPRW_NAME_FDE) or KPRW_FOUND_PREFIX (KPRW_NAME_FOUND)
 * and addr in lower-case hex, as the rewriter names a function that has no
 * symbol, into buf (FDE_NAME_MAX); without libc (see below). */
static const char *addr_name(char *buf, uint32_t name_off, uint64_t addr)
{
    static const char hex[] = "0123456789abcdef";
    const char *prefix = name_off == KPRW_NAME_FDE ? KPRW_FDE_PREFIX : KPRW_FOUND_PREFIX;
    size_t n = 0, digits = 1;
    while (prefix[n])
        n++;
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
    pt->name = KPRW_NAME_BY_ADDR(e->name_off) ? addr_name(pt->fde_name, e->name_off,
                                                          t->link_addr + (uint64_t)(int64_t)e->site_rel - e->offset)
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
    rt_point_add(pt);
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
        rt_hooks.points_filled();
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
bool rt_pool_fill_state(struct kprw_state *st)
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
    const char *object;
    if (table_refused(t, &int3s, &dynspan, &object))
        return false;
    struct pool *p = calloc(1, sizeof *p);
    struct point *pts = map_points(t->nentries);
    if (!p || !pts || !rt_points_reserve(t->nentries)) {
        free(p);
        if (pts)
            munmap(pts, (t->nentries ? t->nentries : 1) * sizeof *pts);
        fprintf(stderr, "kprewrite-rt: out of memory registering probes\n");
        return false;
    }
    const struct kprw_entry *e = (const void *)(t + 1);
    p->t = t;
    p->dynspan = dynspan;
    p->dynstr = dynspan ? (const char *)t + t->dynstr_rel : NULL;
    p->points = pts;
    p->state = (void *)((char *)t + t->state_rel);
    p->unready = t->nentries;
    p->events_due = t->flags & KPRW_T_EVENTS;
    p->object = object;
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
    rt_hooks.points_filled();
    index_stale = false;
    if (t->nentries)
        rt_hooks.pool_added();   /* the control directory; the knobs' state for its points */
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
    trace_env_pools_added();   /* KPREWRITE_EVENTS waiting for these points */
    rt_leave(e);
}

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

/* A hit on st before its image registered (rt_dispatch_slow, vector state
 * saved): register the linked pool it belongs to, if any. */
void rt_pool_find_linked(struct kprw_state *st)
{
    rt_lock_take();
    struct linked_find f = { st, NULL, 0, 0 };
    bool known_dead = false;
    for (unsigned i = 0; i < ndead && !known_dead; i++)
        known_dead = (uintptr_t)st >= dead[i].lo && (uintptr_t)st < dead[i].hi;
    if (!known_dead && !rt_pool_fill_state(st)) {   /* a linked pool not registered yet */
        dl_iterate_phdr(find_linked_table, &f);
        if (!(f.t && add_pool(f.t) && rt_pool_fill_state(st)) && f.hi && ndead < MAX_DEAD) {
            dead[ndead].lo = f.lo;
            dead[ndead++].hi = f.hi;
        }
    }
    rt_lock_drop();
}

const struct kprw_table *rt_pool_take_events(const char **object)
{
    const struct kprw_table *t = NULL;
    rt_lock_take();
    for (struct pool *p = pools; p && !t; p = p->next)
        if (p->events_due) {
            p->events_due = false;
            t = p->t;
            *object = p->object;
        }
    rt_lock_drop();
    return t;
}

bool rt_point_in_table(const struct point *pt, const struct kprw_table *t)
{
    for (struct pool *p = pools; p; p = p->next)
        if (p->t == t)
            return pt >= p->points && pt < p->points + t->nentries;
    return false;
}

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
        trace_env_pools_added();
        rt_leave(e);
    }
    return h;
}

/* At start-up: the added pools of every object loaded by then (dlopen
 * above looks again for libraries opened later). */
void rt_pools_find_added(void)
{
    dl_iterate_phdr(find_added_pools, NULL);
    pin_new_pools();   /* a prebuilt library that a dlopen of libc's brought in with the runtime */
}
