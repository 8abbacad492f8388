/*
 * Events in the static runtime: the definitions kprewrite baked into the
 * table (--probe 'p:EVENT SPEC ARGS [if FILTER]'; runtime/core/event.h),
 * parsed and bound at start-up with the runtime core's parser, one
 * definition a point (pt->ev). A hit fetches the arguments into a record
 * on the stack it runs on (one of the runtime's: start-x86.S), filters it,
 * and copies it into the process's ring, in the area; a full ring drops
 * the record and counts it on the point. No lock, no allocation; system
 * calls: gettid for the record's thread, and one process_vm_readv a read
 * of the program's memory (a dereference, a string; the process's id
 * cached in a page a fork wipes), which cannot fault the program -- the static runtime has no signal handler of its own for
 * faults, and a Go program's would not let it have one.
 *
 * The ring: many writers (the threads), one reader at a time (the exit
 * guard writing KPREWRITE_TRACE, or kprewrite ctl PID trace from outside,
 * through /proc/PID/mem). A writer reserves by compare-and-swap on
 * ring_head, pads to the ring's end when the record would wrap, writes the
 * record and then its size (the commit). The reader takes committed
 * records from ring_tail, zeroes their bytes (a later record may start
 * anywhere in them: its size must read 0 until committed) and moves
 * ring_tail on.
 */
#include "rt.h"
#include "events.h"
#include "arch/x86/regs.h"
#include "runtime/core/event.h"
#include "runtime/core/kprw-core.h"

#include <cpuid.h>

#define SYS_process_vm_readv 310
#define SYS_prctl 157
#define PR_GET_NAME 16

/* ---- reads that cannot fault ---- */

/* This process's id: cached in a page a fork's child finds zeroed
 * (MADV_WIPEONFORK), so that a child reads its own memory, never its
 * parent's; a vfork child shares its parent's memory, and reads it. */
static long self_pid(void)
{
    const struct kprs_head *h = kprs_head_addr();
    const struct kprs_area *a = (const struct kprs_area *)((const char *)h + h->area_rel);
    int32_t *cache = (int32_t *)(uintptr_t)a->self;
    int32_t pid = cache ? __atomic_load_n(cache, __ATOMIC_RELAXED) : 0;
    if (!pid) {
        pid = (int32_t)kprs_sys(SYS_getpid, 0, 0, 0, 0);
        if (cache)
            __atomic_store_n(cache, pid, __ATOMIC_RELAXED);
    }
    return pid;
}

static size_t vm_read(void *dst, uintptr_t src, size_t n)
{
    struct { void *base; size_t len; } local = { dst, n }, remote = { (void *)src, n };
    long pid = self_pid();
    long got = kprs_sys6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
    return got < 0 ? 0 : (size_t)got;
}

static bool vm_read_word(uint64_t *dst, uintptr_t src)
{
    return vm_read(dst, src, 8) == 8;
}

/* A page at a time: a string may end just before a page nothing maps. */
static size_t vm_read_str(char *dst, uintptr_t src, size_t max)
{
    size_t n = 0;
    while (n < max - 1) {
        size_t chunk = 4096 - ((src + n) & 4095);
        if (chunk > max - 1 - n)
            chunk = max - 1 - n;
        size_t got = vm_read(dst + n, src + n, chunk);
        for (size_t k = 0; k < got; k++)
            if (!dst[n + k])
                return n + k + 1;
        n += got;
        if (got < chunk) {   /* a fault: none at the start; past it, what was read */
            if (!n)
                return 0;
            break;
        }
    }
    dst[n] = 0;
    return n + 1;
}

/* ---- the clock ---- */

static uint64_t kprs_mono_ns(void)
{
    struct { long s, ns; } ts = { 0, 0 };
    kprs_sys(SYS_clock_gettime, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0, 0);
    return (uint64_t)ts.s * 1000000000u + (uint64_t)ts.ns;
}

/* A record's time and CPU: rdtscp (Linux keeps the CPU's number in
 * TSC_AUX) where the CPU has it and an invariant TSC; else
 * CLOCK_MONOTONIC and getcpu, system calls (a virtual machine may hide
 * rdtscp: it would end the program, SIGILL) */
static uint64_t tsc_cpu(const struct kprs_area *a, uint32_t *cpu)
{
    if (a->clock_tsc) {
        uint32_t lo, hi, aux;
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
        *cpu = aux & 0xfff;
        return (uint64_t)hi << 32 | lo;
    }
    unsigned c = 0;
    kprs_sys(SYS_getcpu, (long)&c, 0, 0, 0);
    *cpu = c;
    return kprs_mono_ns();
}

void kprs_clock_now(const struct kprs_area *a, uint64_t *tsc, uint64_t *ns)
{
    uint32_t cpu;
    *tsc = tsc_cpu(a, &cpu);
    *ns = a->clock_tsc ? kprs_mono_ns() : *tsc;   /* (without the TSC, the mapping is one to one) */
}

/* rdtscp and an invariant TSC (CPUID 0x80000001 EDX 27, 0x80000007 EDX
 * 8), unless KPREWRITE_TEST_CLOCK=monotonic asks for the other way */
static uint8_t clock_tsc(const char *test)
{
    unsigned a, b, c, d;
    if (test && !kprs_strcmp(test, "monotonic"))
        return 0;
    bool invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
    bool rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
    return invariant && rdtscp;
}

/* ---- recording ---- */

static const struct kprw_event *event_of(const struct kprs_area *a, const struct kprs_point *pt)
{
    return &((const struct kprw_event *)(uintptr_t)a->events)[pt->ev - 1];
}

/* Room for size bytes in the ring: where, or NULL when it is full. */
static uint8_t *ring_reserve(struct kprs_area *a, uint32_t size)
{
    uint8_t *ring = (uint8_t *)(uintptr_t)a->ring;
    uint64_t mask = a->ring_size - 1, head = __atomic_load_n(&a->ring_head, __ATOMIC_RELAXED), pad;
    do {
        uint64_t tail = __atomic_load_n(&a->ring_tail, __ATOMIC_ACQUIRE);
        pad = (head & mask) + size > a->ring_size ? a->ring_size - (head & mask) : 0;
        if (head + pad + size - tail > a->ring_size)
            return 0;
    } while (!__atomic_compare_exchange_n(&a->ring_head, &head, head + pad + size, true, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));
    if (pad) {   /* to the ring's end: a record of no event */
        struct kprw_rec *p = (struct kprw_rec *)(ring + (head & mask));
        p->id = KPRS_REC_PAD;
        __atomic_store_n(&p->size, (uint32_t)pad, __ATOMIC_RELEASE);
    }
    return ring + ((head + pad) & mask);
}

/* One record of entry i's event into the ring: the header, the return
 * part (ret: NULL for an entry event), the arguments (entry: the $argN a
 * return event kept at the entry); the filter decides. */
static void emit(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs, const uint64_t *entry,
                 const struct kprw_rec_ret *ret)
{
    struct kprs_area *a = r->area;
    struct kprs_point *pt = &r->pt[i];
    const struct kprw_event *ev = event_of(a, pt);
    /* a full ring drops at once, before any system call (a racy look: the
     * reservation below decides) */
    if (__atomic_load_n(&a->ring_head, __ATOMIC_RELAXED) + ev->max_size -
            __atomic_load_n(&a->ring_tail, __ATOMIC_RELAXED) > a->ring_size) {
        __atomic_fetch_add(&pt->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    uint8_t rec[KPRS_REC_MAX] __attribute__((aligned(8)));
    char comm[16] = { 0 };
    if (ev->uses_comm)
        kprs_sys(SYS_prctl, PR_GET_NAME, (long)comm, 0, 0);
    struct kprw_fetch_env env = { (const unsigned long *)regs, entry, comm, vm_read, vm_read_str, vm_read_word, X86_SP };
    struct kprw_rec *h = (struct kprw_rec *)rec;
    h->id = i;
    h->tid = (uint32_t)kprs_sys(SYS_gettid, 0, 0, 0, 0);
    h->ip = kprs_site(r, i);
    if (ret)
        memcpy(h + 1, ret, sizeof *ret);
    uint32_t size = kprw_event_fetch(ev, &env, rec);
    if (ev->filter && !kprw_event_match(ev, rec))
        return;
    h->ts = tsc_cpu(a, &h->cpu);
    uint8_t *at = ring_reserve(a, size);
    if (!at) {
        __atomic_fetch_add(&pt->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    memcpy(at + 4, rec + 4, size - 4);
    __atomic_store_n((uint32_t *)at, size, __ATOMIC_RELEASE);   /* the commit */
}

void kprs_event(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs)
{
    emit(r, i, regs, 0, 0);
}

void kprs_event_return(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs, const uint64_t *entry,
                       uint64_t ret_ip, uint64_t entry_ts)
{
    struct kprw_rec_ret ret = { ret_ip, entry_ts };
    emit(r, i, regs, entry, &ret);
}

void kprs_event_entry(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs, uint64_t *entry)
{
    const struct kprw_event *ev = event_of(r->area, &r->pt[i]);
    if (!ev->nentry)
        return;
    struct kprw_fetch_env env = { (const unsigned long *)regs, 0, "", vm_read, vm_read_str, vm_read_word, X86_SP };
    kprw_event_fetch_entry(ev, &env, entry);
}

uint64_t kprs_event_now(const struct kprs_area *a)
{
    uint32_t cpu;
    return tsc_cpu(a, &cpu);
}

bool kprs_read_word(uint64_t *dst, uintptr_t src)
{
    return vm_read_word(dst, src);
}

/* ---- start-up ---- */

static bool resolve_entry(void *ctx, const char *sym, uint64_t *addr)
{
    const struct kprs_rt *r = ctx;
    for (uint32_t i = 0; i < r->t->nentries; i++) {
        const char *name = kprs_name(r, &r->e[i]);
        uint32_t skipped = r->e[i].flags & KPRW_F_AFTER_ENDBR ? r->e[i].offset : 0;
        if (name && r->e[i].offset == skipped && !kprs_strcmp(name, sym)) {
            *addr = kprs_site(r, i) - skipped;
            return true;
        }
    }
    return false;
}

static void note_def(const char *def, size_t len, const char *why)
{
    kprs_note3("KPREWRITE event '", def, len, why);
}

/* Does ev bind to entry i (user runtime's point_fits: an entry event, on
 * what its spec names; a return event, on a return point whose calls can
 * be hooked, the spec without its %return)? */
static bool fits(const struct kprs_rt *r, const struct kprw_event *ev, uint32_t i)
{
    const struct kprw_entry *e = &r->e[i];
    uint32_t skipped = e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0;
    size_t len = ev->spec_len;
    static const char ret[] = "%return";
    if (ev->is_return) {
        if (!kprs_hook_point_ok(r, i))
            return false;
        size_t k = 0, n = sizeof ret - 1;
        while (len > n && k < n && ev->spec[len - n + k] == ret[k])
            k++;
        if (k == n)
            len -= n;
    } else if (ev->uses_args && ev->entry_off && !(skipped && skipped == e->offset)) {
        return false;   /* (a return point, SYM%return baked, serves entry events too) */
    }
    char name[300];
    kprs_entry_name(r, e, name, sizeof name);
    return kprw_spec_matches_entry(ev->spec, len, name, e->offset, kprs_site(r, i), skipped);
}

/* "': column N: MSG: left out" */
static void note_malformed(const char *def, size_t len, const struct kprw_ev_error *err)
{
    char why[200];
    struct kprw_sbuf b = { why, 0, sizeof why };
    kprw_sb_str(&b, "': column ");
    kprw_sb_u64(&b, err->col);
    kprw_sb_str(&b, ": ");
    kprw_sb_str(&b, err->msg ? err->msg : "malformed (or no room left to parse it)");
    kprw_sb_str(&b, ": left out");
    kprw_sb_end(&b);
    note_def(def, len, why);
}

/* One definition parsed and bound; the points its spec names (each taken,
 * unless another event has it: said), or -1 when it was left out (said on
 * stderr). */
static long define(const struct kprs_rt *r, struct kprw_arena *arena, struct kprw_event *ev, uint16_t k,
                   const char *def, size_t len)
{
    struct kprw_fetch_isa isa = X86_FETCH_ISA_INIT;   /* (built here: no stored address) */
    struct kprw_ev_error err = { 0, 0 };
    const struct kprw_farg *bad = 0;
    if (!kprw_event_parse(&isa, def, len, arena, ev, &err)) {
        note_malformed(def, len, &err);
        memset(ev, 0, sizeof *ev);
        return -1;
    }
    if (ev->is_return && !r->area->hook_ok) {
        note_def(def, len, r->t->nentries && (r->e[0].flags & KPRW_F_GO)
                               ? "': a return event in a Go program (goroutine stacks move: no call is hooked): left out"
                               : "': a return event where the unwinder's entry points are not all guarded (a "
                                 "stripped program, or one of them refused at bake time): left out");
        return -1;
    }
    if (!kprw_event_bind(ev, resolve_entry, (void *)r, &bad)) {
        note_def(def, len, "': an @SYM names no probed function (the static runtime knows only those): left out");
        return -1;
    }
    if (ev->max_size > KPRS_REC_MAX) {
        note_def(def, len, "': its records may exceed 4 KiB: left out");
        return -1;
    }
    long named = 0;
    for (uint32_t i = 0; i < r->t->nentries; i++) {
        if (!fits(r, ev, i))
            continue;
        named++;
        if (r->pt[i].ev) {
            note_def(def, len, "': a point of it has an event already (one a point here): not there");
        } else {
            r->pt[i].ev = (uint16_t)(k + 1);
            r->pt[i].ret = ev->is_return;
        }
    }
    return named;
}

/* The ring's size: KPREWRITE_TRACE_BUFFER KiB, a power of 2 from 4 KiB up
 * to what kprewrite reserved (KPRS_RING). */
static uint64_t ring_size(const char *kib)
{
    uint64_t want = KPRS_RING, v = 0;
    for (; kib && *kib >= '0' && *kib <= '9' && v < KPRS_RING; kib++)
        v = v * 10 + (uint64_t)(*kib - '0');
    if (v) {
        want = 4096;
        while (want < v * 1024 && want < KPRS_RING)
            want <<= 1;
    }
    return want;
}

/* KPREWRITE_EVENTS='DEF;DEF...' (or a newline between) into the arena,
 * NUL-separated, blanks before each left out; their count. */
static uint32_t env_defs(struct kprs_area *a, struct kprw_arena *arena, const char *env)
{
    size_t len = env ? kprs_strlen(env) : 0;
    char *out = len ? kprw_arena_alloc(arena, len + 1, 1) : 0;
    uint32_t n = 0;
    size_t at = 0;
    for (size_t i = 0; out && i < len;) {
        while (i < len && (env[i] == ' ' || env[i] == '\t' || env[i] == ';' || env[i] == '\n'))
            i++;
        if (i == len)
            break;
        while (i < len && env[i] != ';' && env[i] != '\n')
            out[at++] = env[i++];
        out[at++] = 0;
        n++;
    }
    a->env_defs = (uint64_t)(uintptr_t)out;
    a->env_defs_len = (uint32_t)at;
    return n;
}

void kprs_events_init(const struct kprs_rt *r, const char *buffer_kib, const char *env, const char *test_clock)
{
    const struct kprw_table *t = r->t;
    struct kprs_area *a = r->area;
    struct kprs_layout l = kprs_area_layout(t->nentries);
    struct kprw_arena arena = { (char *)a + l.arena, KPRS_ARENA, 0 };
    const char *defs = (const char *)t + kprw_table_events_off(t), *end = (const char *)t + t->strings_off;
    uint32_t n = 0;
    for (const char *d = defs; (t->flags & KPRW_T_EVENTS) && d < end; d += kprs_strlen(d) + 1)
        n++;
    uint32_t nt = n;
    n += env_defs(a, &arena, env);
    if (!n)
        return;
    struct kprw_event *evs = kprw_arena_alloc(&arena, (size_t)n * sizeof *evs, 8);
    if (!evs || n > 0xffff) {
        kprs_note3("KPREWRITE events: ", "", 0, "too many definitions (or too long): none recorded");
        return;
    }
    uint32_t k = 0;
    for (const char *d = defs; k < nt; d += kprs_strlen(d) + 1, k++)
        define(r, &arena, &evs[k], (uint16_t)k, d, kprs_strlen(d));
    for (const char *d = (const char *)(uintptr_t)a->env_defs; k < n; d += kprs_strlen(d) + 1, k++)
        if (define(r, &arena, &evs[k], (uint16_t)k, d, kprs_strlen(d)) == 0)
            note_def(d, kprs_strlen(d), "' (KPREWRITE_EVENTS): no probed point matches its spec (kprewrite --probe it "
                     "first)");
    long page = kprs_sys6(SYS_mmap, 0, 4096, 3 /* rw */, 0x22 /* private, anonymous */, -1, 0);
    if ((unsigned long)page < -4096UL && kprs_sys(SYS_madvise, page, 4096, 18 /* MADV_WIPEONFORK */, 0) == 0)
        a->self = (uint64_t)page;   /* (else every read asks getpid) */
    a->events = (uint64_t)(uintptr_t)evs;
    a->nevents = n;
    a->ring = (uint64_t)(uintptr_t)((char *)a + l.ring);
    a->ring_size = ring_size(buffer_kib);
    a->clock_tsc = clock_tsc(test_clock);
    kprs_clock_now(a, &a->tsc0, &a->ns0);
}

/* ---- reading (the exit guard) ---- */

/* One record's line of text (or JSON event, after a ",\n" unless it is
 * the first) into b. */
static void line_of(const struct kprs_rt *r, const uint8_t *rec, const struct kprw_clock *clk, const char *comm,
                    bool first, struct kprw_sbuf *b)
{
    const struct kprw_rec *h = (const struct kprw_rec *)rec;
    if (r->area->trace_json) {
        kprw_sb_str(b, first ? "" : ",\n");
        kprs_json_record(r, event_of(r->area, &r->pt[h->id]), rec, clk, b);
        return;
    }
    const struct kprw_entry *e = &r->e[h->id];
    char name[300];
    kprs_entry_name(r, e, name, sizeof name);
    kprw_event_print_point_line(event_of(r->area, &r->pt[h->id]), rec, kprw_clock_ns(clk, h->ts), comm, name,
                                e->offset, e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0, kprs_site(r, h->id), b);
}

void kprs_trace_flush(const struct kprs_rt *r)
{
    struct kprs_area *a = r->area;
    if (a->trace_fd < 0 || !a->ring)
        return;
    struct kprw_clock clk;
    uint64_t tsc1, ns1;
    kprs_clock_now(a, &tsc1, &ns1);
    kprw_clock_map(&clk, a->tsc0, a->ns0, tsc1, ns1);
    char comm[16] = { 0 };
    kprs_sys(SYS_prctl, PR_GET_NAME, (long)comm, 0, 0);   /* (the exiting thread's: no record keeps its own) */
    const long len = 64 * 1024;
    char *buf = (char *)kprs_sys6(SYS_mmap, 0, len, 3 /* rw */, 0x22 /* private, anonymous */, -1, 0);
    if ((unsigned long)buf > -4096UL)
        return;
    uint8_t *ring = (uint8_t *)(uintptr_t)a->ring;
    uint64_t mask = a->ring_size - 1, tail = a->ring_tail, head = __atomic_load_n(&a->ring_head, __ATOMIC_ACQUIRE);
    size_t used = 0;
    bool first = true;
    if (a->trace_json)
        kprs_write_all(a->trace_fd, "[\n", 2);
    while (tail < head) {
        uint8_t *rec = ring + (tail & mask);
        uint32_t size = __atomic_load_n((uint32_t *)rec, __ATOMIC_ACQUIRE);
        if (!size)
            break;   /* a record not committed: its thread was ended mid-way */
        uint32_t id = ((const struct kprw_rec *)rec)->id;
        if (id < r->t->nentries && r->pt[id].ev && kprw_rec_valid(event_of(a, &r->pt[id]), rec, size)) {
            struct kprw_sbuf b = { buf + used, 0, (size_t)len - used };
            line_of(r, rec, &clk, comm, first, &b);
            if (b.len >= b.cap) {   /* no room: write what is there, then again */
                kprs_write_all(a->trace_fd, buf, used);
                used = 0;
                b = (struct kprw_sbuf){ buf, 0, (size_t)len };
                line_of(r, rec, &clk, comm, first, &b);
            }
            used += b.len < b.cap ? b.len : b.cap;
            first = false;
        }
        memset(rec, 0, size);
        tail += size;
        __atomic_store_n(&a->ring_tail, tail, __ATOMIC_RELEASE);
    }
    kprs_write_all(a->trace_fd, buf, used);
    if (a->trace_json)
        kprs_write_all(a->trace_fd, "\n]\n", 3);
    kprs_sys(SYS_munmap, (long)buf, len, 0, 0);
}
