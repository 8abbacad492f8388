/*
 * `kprewrite ctl PID trace` on a static program: its runtime has no
 * thread to serve trace_pipe, so ctl reads the events from outside, the
 * way the runtime's exit guard does (src/runtime/static/events.c):
 * committed records from the ring's tail, printed as text lines with the
 * runtime core's printer, their bytes zeroed and the tail moved on --
 * writes into the process through /proc/PID/mem. The definitions are
 * parsed again from the probe table in its memory; times are the
 * process's TSC mapped to CLOCK_MONOTONIC by its start-up reading and
 * ctl's own (one machine, one TSC). It follows until interrupted or
 * until the process ends. A program that writes its events itself at exit
 * (KPREWRITE_TRACE) has them read there: two readers would share them.
 */
#include "ctl-static.h"
#include "../arch/x86/regs.h"
#include "../runtime/core/event.h"
#include "../runtime/core/kprw-core.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define REC_MAX 4096          /* the runtime's KPRS_REC_MAX */
#define ARENA (1024 * 1024)

static volatile sig_atomic_t stop;
static void on_stop(int sig) { (void)sig; stop = 1; }

struct follow {
    const struct sproc *s;
    struct kprw_event *evs;        /* the definitions, by index */
    uint32_t nevs;
    uint64_t tsc0, ns0;
    bool json;                     /* --format=json: Chrome trace events, one a line, in an array */
    bool first;                    /* no event printed yet */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The definitions as the runtime parsed them, in its order: the table's,
 * then KPREWRITE_EVENTS' (kept in its arena), from the process's memory.
 * -1 when they cannot be read. */
static int parse_defs(struct follow *f, struct kprw_arena *arena)
{
    const struct sproc *s = f->s;
    uint64_t off = kprw_table_events_off(&s->t);
    size_t tlen = (s->t.flags & KPRW_T_EVENTS) && off < s->t.strings_off ? s->t.strings_off - off : 0,
           len = tlen + s->a.env_defs_len;
    char *defs = kprw_arena_alloc(arena, len + 1, 1);
    if (!defs || !len || (tlen && sproc_rd(s, s->table + off, defs, tlen) < 0) ||
        (s->a.env_defs_len && sproc_rd(s, s->a.env_defs, defs + tlen, s->a.env_defs_len) < 0) ||
        defs[len - 1] != 0)
        return -1;
    f->nevs = 0;
    for (size_t at = 0; at < len; at += strlen(defs + at) + 1)
        f->nevs++;
    f->evs = kprw_arena_alloc(arena, f->nevs * sizeof *f->evs, 8);
    if (!f->evs)
        return -1;
    uint32_t k = 0;
    for (size_t at = 0; at < len; at += strlen(defs + at) + 1, k++) {
        struct kprw_ev_error err = { 0, NULL };
        if (!kprw_event_parse(&x86_fetch_isa, defs + at, strlen(defs + at), arena, &f->evs[k], &err))
            memset(&f->evs[k], 0, sizeof f->evs[k]);   /* (the runtime left it out too) */
    }
    return 0;
}

/* A thread's name (its /proc comm), or the process's. */
static void comm_of(const struct sproc *s, uint32_t tid, char *buf, size_t size)
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%ld/task/%u/comm", s->pid, tid);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(path, sizeof path, "/proc/%ld/comm", s->pid);
        f = fopen(path, "re");
    }
    buf[0] = 0;
    if (f && fgets(buf, (int)size, f))
        buf[strcspn(buf, "\n")] = 0;
    if (f)
        fclose(f);
}

/* One record's line on stdout (a record that cannot be the event's --
 * the process wrote its ring as it liked -- is left out): text, or a
 * Chrome trace event (the runtime core's, as the static runtime's exit
 * writer and the runtime library write them). */
static void print(struct follow *f, const uint8_t *rec, uint32_t size, const struct kprw_clock *clk)
{
    const struct sproc *s = f->s;
    const struct kprw_rec *h = (const void *)rec;
    if (h->id >= s->t.nentries || !s->pt[h->id].ev || s->pt[h->id].ev > f->nevs)
        return;
    const struct kprw_event *ev = &f->evs[s->pt[h->id].ev - 1];
    if (!ev->spec || !kprw_rec_valid(ev, rec, size))
        return;
    const struct kprw_entry *e = &s->e[h->id];
    char name[512], comm[32], line[16384];
    struct kprw_sbuf lb = { line, 0, sizeof line };
    uint32_t skipped = e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0;
    sproc_name(s, h->id, name, sizeof name);
    if (f->json) {
        char evname[KPRW_EV_NAME_MAX * 2];
        struct kprw_sbuf nb = { evname, 0, sizeof evname };
        kprw_event_point_name(ev, name, e->offset, skipped, sproc_site(s, h->id), &nb);
        kprw_sb_end(&nb);
        uint64_t entry = ev->is_return ? kprw_clock_ns(clk, ((const struct kprw_rec_ret *)(rec + KPRW_REC_HDR))->entry_ts) : 0;
        kprw_sb_str(&lb, f->first ? "[\n" : ",\n");
        kprw_event_json_record(ev, rec, evname, name, kprw_clock_ns(clk, h->ts), entry, (uint64_t)s->pid, NULL, &lb);
        f->first = false;
    } else {
        comm_of(s, h->tid, comm, sizeof comm);
        kprw_event_print_point_line(ev, rec, kprw_clock_ns(clk, h->ts), comm, name, e->offset, skipped,
                                    sproc_site(s, h->id), &lb);
    }
    fwrite(line, 1, lb.len < lb.cap ? lb.len : lb.cap, stdout);
}

/* The committed records from the tail: printed, zeroed, the tail moved
 * on. The records read; -1 when the process cannot be read or written. */
static long drain(struct follow *f)
{
    const struct sproc *s = f->s;
    uint64_t head, tail, at = s->area + offsetof(struct kprs_area, ring_head),
                         tat = s->area + offsetof(struct kprs_area, ring_tail);
    if (sproc_rd(s, at, &head, 8) < 0 || sproc_rd(s, tat, &tail, 8) < 0)
        return -1;
    uint64_t mask = s->a.ring_size - 1, ns1 = mono_ns(), tsc1 = s->a.clock_tsc ? __rdtsc() : ns1;
    struct kprw_clock clk;
    kprw_clock_map(&clk, f->tsc0, f->ns0, tsc1, ns1);   /* (the process's reading at start-up, and ours) */
    static const uint8_t zeros[REC_MAX + 8];
    uint8_t rec[REC_MAX + 8];
    long n = 0;
    while (tail < head) {
        uint64_t where = s->a.ring + (tail & mask);
        uint32_t size;
        if (sproc_rd(s, where, &size, 4) < 0)
            return -1;
        if (!size)
            break;   /* not committed yet */
        if (size > sizeof rec || size % 8)
            return -1;
        if (sproc_rd(s, where, rec, size) < 0)
            return -1;
        print(f, rec, size, &clk);
        tail += size;
        if (pwrite(s->mem, zeros, size, (off_t)where) != (ssize_t)size ||
            pwrite(s->mem, &tail, 8, (off_t)tat) != 8)
            return -1;
        n++;
    }
    fflush(stdout);
    return n;
}

/* The definitions, parsed into f with an arena of the caller's (freed by
 * it); false, said in one line, when there are none or they cannot be
 * read. */
static bool load_defs(const struct sproc *s, const char *verb, struct follow *f, struct kprw_arena *arena)
{
    *f = (struct follow){ s, NULL, 0, s->a.tsc0, s->a.ns0, false, true };
    if (!s->a.ring) {
        fprintf(stderr, "kprewrite: ctl %ld: %s: no event is defined in this program (kprewrite --probe 'p:EVENT "
                "SPEC ARGS', or KPREWRITE_EVENTS in its environment)\n", s->pid, verb);
        return false;
    }
    if (!arena->base || parse_defs(f, arena) < 0) {
        fprintf(stderr, "kprewrite: ctl %ld: %s: cannot read its event definitions\n", s->pid, verb);
        return false;
    }
    return true;
}

int sproc_trace(const struct sproc *s, bool json)
{
    if (s->a.ring && s->a.trace_fd >= 0) {
        fprintf(stderr, "kprewrite: ctl %ld: trace: the program writes its events itself at exit (KPREWRITE_TRACE is "
                "set in its environment)\n", s->pid);
        return 1;
    }
    struct follow f;
    struct kprw_arena arena = { malloc(ARENA), ARENA, 0 };
    if (!load_defs(s, "trace", &f, &arena)) {
        free(arena.base);
        return 1;
    }
    f.json = json;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    while (!stop) {
        long n = drain(&f);
        if (n < 0)
            break;   /* the process ended (or went away meanwhile) */
        if (n == 0) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    if (json)   /* the array ended: a document whatever stopped it */
        fputs(f.first ? "[]\n" : "\n]\n", stdout);
    free(arena.base);
    return 0;
}

/* Point i's event (NULL: none): its name, its group, its function's name
 * and the bytes skipped at its entry (an endbr64). */
struct pev {
    const struct kprw_event *ev;
    char name[KPRW_EV_NAME_MAX * 2], sym[512];
    const char *group;
    uint32_t skipped;
};
static bool point_event(const struct follow *f, uint32_t i, struct pev *p)
{
    const struct sproc *s = f->s;
    if (!s->pt[i].ev || s->pt[i].ev > f->nevs || !f->evs[s->pt[i].ev - 1].spec)
        return false;
    const struct kprw_entry *e = &s->e[i];
    p->ev = &f->evs[s->pt[i].ev - 1];
    p->group = p->ev->group ? p->ev->group : KPRW_EV_DEFAULT_GROUP;
    p->skipped = e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0;
    sproc_name(s, i, p->sym, sizeof p->sym);
    struct kprw_sbuf b = { p->name, 0, sizeof p->name };
    kprw_event_point_name(p->ev, p->sym, e->offset, p->skipped, sproc_site(s, i), &b);
    kprw_sb_end(&b);
    return true;
}

int sproc_events(const struct sproc *s)
{
    struct follow f;
    struct kprw_arena arena = { malloc(ARENA), ARENA, 0 };
    struct pev p;
    bool ok = load_defs(s, "events", &f, &arena);
    for (uint32_t i = 0; ok && i < s->t.nentries; i++) {
        if (!point_event(&f, i, &p))
            continue;
        const char *args = p.ev->text + p.ev->spec_col - 1 + p.ev->spec_len;
        if (p.ev->is_return)
            printf("r:%s/%s %s%s", p.group, p.name, p.sym, args);
        else
            printf("p:%s/%s %s+0x%x%s", p.group, p.name, p.sym, s->e[i].offset - p.skipped, args);
        printf("%s  # dropped %lu\n", s->pt[i].ev_off ? "  [UNTRACED]" : "", (unsigned long)s->pt[i].dropped);
    }
    free(arena.base);
    return ok ? 0 : 1;
}

int sproc_untrace(const struct sproc *s, const char *spec)
{
    struct follow f;
    struct kprw_arena arena = { malloc(ARENA), ARENA, 0 };
    struct pev p;
    size_t n = strlen(spec), matched = 0;
    const char *slash = memchr(spec, '/', n);
    bool ok = load_defs(s, "untrace", &f, &arena);
    for (uint32_t i = 0; ok && i < s->t.nentries; i++) {
        if (!point_event(&f, i, &p))
            continue;
        if (slash ? !kprw_glob(spec, (size_t)(slash - spec), p.group) ||
                        !kprw_glob(slash + 1, n - (size_t)(slash - spec) - 1, p.name)
                  : !kprw_glob(spec, n, p.name) &&
                        !kprw_spec_matches_entry(spec, n, p.sym, s->e[i].offset, sproc_site(s, i), p.skipped))
            continue;
        uint64_t at = s->area + sizeof(struct kprs_area) + i * sizeof(struct kprs_point) + offsetof(struct kprs_point, ev_off);
        uint8_t one = 1;
        if (pwrite(s->mem, &one, 1, (off_t)at) != 1) {
            fprintf(stderr, "kprewrite: ctl %ld: untrace %s: writing %s's state: %s\n", s->pid, spec, p.name, strerror(errno));
            ok = false;
        }
        matched++;
    }
    free(arena.base);
    if (ok && !matched)
        fprintf(stderr, "kprewrite: ctl %ld: untrace %s: no event matches\n", s->pid, spec);
    return ok && matched ? 0 : 1;
}
