/* The tactics that need every verdict first (see analysis.h). */
#include "analysis.h"
#include "../arch/isa.h"
#include "kind.h"
#include "../arch/x86/decode.h"
#include "../util/array.h"
#include "kprewrite/abi.h"

#include <stdlib.h>
#include <string.h>

struct span { uint64_t lo, hi; };

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The first span of v (sorted, not overlapping) that overlaps [lo, hi). */
static const struct span *span_overlap(const struct span *v, size_t n, uint64_t lo, uint64_t hi)
{
    size_t a = LOWER_BOUND(n, m, v[m].hi <= lo);   /* the first span ending after lo */
    return a < n && v[a].lo < hi ? &v[a] : NULL;
}

/* Padding between functions, where trampolines may go: after a function
 * whose last instruction does not fall through, up to the next function
 * (or the section's end), the bytes assemblers pad with that nothing
 * branches into. Sorted, each at least a trampoline long (the site's jump). */
static int padding_runs(const struct state *s, struct span **out, size_t *nout)
{
    struct span *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < s->sy->nfuncs; i++) {
        const struct func *fn = &s->sy->funcs[i];
        if (!s->ends[i] || fn->size_guessed)
            continue;
        const struct section *sec = image_section_at(s->img, fn->end);
        if (!sec || !sec->data || !(sec->flags & SHF_EXECINSTR))
            continue;
        uint64_t hi = sec->addr + sec->size;
        if (i + 1 < s->sy->nfuncs && s->sy->funcs[i + 1].start < hi)
            hi = s->sy->funcs[i + 1].start;
        uint64_t lo = fn->end, a = lo;
        for (const uint8_t *b = sec->data + (lo - sec->addr); a < hi && x86_is_padding(*b); a++, b++)
            ;
        const struct ref *r = ref_into(&s->refs, lo - 1, a);   /* nothing may land there */
        if (r)
            a = r->target;
        /* nor in code that moves at run time: the trampoline would run from the copy */
        if (a - lo < s->img->isa->jump_len || kfacts_moving(s->kf, lo, a))
            continue;
        if (!ARRAY_PUSH(v, n, cap, (struct span){ lo, a })) {
            free(v);
            return -1;
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

/* A trampoline slot (len bytes: the site's jump) starting within [lo, hi],
 * taken from the runs (their lo moves past it); 0 when none is free there. */
static uint64_t take_slot(struct span *runs, size_t n, uint64_t lo, uint64_t hi, unsigned len)
{
    size_t a = LOWER_BOUND(n, m, runs[m].hi <= lo);   /* the first run ending after lo */
    for (; a < n && runs[a].lo <= hi; a++) {
        uint64_t at = runs[a].lo > lo ? runs[a].lo : lo;
        if (at <= hi && at + len <= runs[a].hi) {
            if (at == runs[a].lo)
                runs[a].lo += len;
            else
                runs[a].hi = at;   /* the bytes above stay unused: simpler than splitting */
            return at;
        }
    }
    return 0;
}

/* The tactics that need every verdict first: a branch re-pointed to a copy
 * must not lie in bytes another probe owns (they may be put back, or run
 * out of line), and rel8 branches and short sites need a trampoline in
 * padding within rel8 reach. A probe that cannot have what it needs goes
 * int3. */
/* Where trampolines may go, and what may not be evicted (place_tactics). */
struct room {
    struct state *s;
    struct span *runs;          /* free bytes: padding, the tails of evicted windows */
    size_t nruns, capruns;
    struct span *busy;          /* no window there: owned bytes, re-pointed branches, windows */
    size_t nbusy, capbusy;
    struct probe_list *probes;  /* evictions are listed in it */
    size_t capev;
};

static bool busy_at(const struct room *r, uint64_t lo, uint64_t hi)
{
    for (size_t k = 0; k < r->nbusy; k++)   /* few: owned bytes are checked apart */
        if (r->busy[k].lo < hi && r->busy[k].hi > lo)
            return true;
    return false;
}

/* The window of whole instructions of f from instruction k, at least
 * evict_min() bytes, that may run out of line: relocatable, a call only at
 * its end, nothing landing on an instruction after its first (no branch,
 * table, pad, materialized address, unproven jump), no byte another probe
 * owns or a re-pointed branch uses. Its length, or 0. */
static unsigned evict_min(const struct state *s)
{
    return 2 * s->img->isa->jump_len;   /* the jump to its stub, one trampoline */
}

static unsigned window_at(const struct room *r, const struct func *fn, const struct fstate *f, size_t k,
                          const struct span *owned, size_t nowned)
{
    struct state *s = r->s;
    const struct taken *tk = taken_set(s);
    const unsigned min = evict_min(s);
    uint64_t a = fn->start + f->insns[k].off;
    unsigned len = 0;
    size_t j = k;
    for (; j < f->n && len < min; j++) {
        struct x86_insn in = { .addr = fn->start + f->insns[j].off, .len = f->insns[j].len,
                               .kind = f->insns[j].kind, .flags = f->insns[j].flags };
        const char *why;
        if (!x86_relocatable(&in, &why))
            return 0;
        if ((in.kind == XK_CALL || in.kind == XK_CALL_IND) && len + in.len < min)
            return 0;   /* a call returns into the window: only as its last */
        if (j > k && tk && taken_inside(tk, in.addr - 1, in.addr + 1))
            return 0;
        len += in.len;
    }
    if (len < min || len > KPRW_ORIG_MAX || (s->taint[fn->parent] && j - k > 1) ||
        ref_into(&s->refs, a, a + len) || span_overlap(owned, nowned, a, a + len) || busy_at(r, a, a + len))
        return 0;
    return len;
}

/* A trampoline slot starting within [lo, hi] in a window evicted for it,
 * from a probed function around there; 0 when there is none. */
static uint64_t evict_for(struct room *r, uint64_t lo, uint64_t hi, const struct span *owned, size_t nowned)
{
    struct state *s = r->s;
    const struct symbols *sy = s->sy;
    if (!s->img->hooks->evictions)
        return 0;
    /* the functions overlapping [lo - jump, hi]: a window starts with the
     * jump to its stub, its first slot right after */
    const unsigned jump = s->img->isa->jump_len;
    uint64_t from = lo - jump;
    size_t a = LOWER_BOUND(sy->nfuncs, m, sy->funcs[m].end <= from);
    for (; a < sy->nfuncs && sy->funcs[a].start <= hi; a++) {
        const struct func *fn = &sy->funcs[a];
        const struct fstate *f = &s->fs[a];
        if (!s->probed[a] || !f->insns || f->decode_fail || kfacts_moving(s->kf, fn->start, fn->end))
            continue;   /* refs into unprobed functions are not kept: unknown; moving code stays as it is */
        for (size_t k = 0; k < f->n; k++) {
            uint64_t at = fn->start + f->insns[k].off, slot = at + jump;
            if (slot < lo)
                continue;
            if (slot > hi)
                break;
            unsigned len = window_at(r, fn, f, k, owned, nowned);
            if (!len || !ARRAY_RESERVE(r->probes->ev, r->capev, r->probes->nev + 1) ||
                !ARRAY_RESERVE(r->busy, r->capbusy, r->nbusy + 1))
                continue;
            r->probes->ev[r->probes->nev++] = (struct eviction){ at, (uint8_t)len };
            r->busy[r->nbusy++] = (struct span){ at, at + len };
            if (len - jump >= 2 * jump &&
                ARRAY_PUSH(r->runs, r->nruns, r->capruns, (struct span){ slot + jump, at + len }))
                /* room for more: the rest of the tail is a run of its own */
                sort_array(r->runs, r->nruns, sizeof *r->runs, cmp_span);
            s->st->evictions++;
            return slot;
        }
    }
    return 0;
}

/* A slot within [lo, hi]: in padding, else in an evicted window. */
static uint64_t slot_for(struct room *r, uint64_t lo, uint64_t hi, const struct span *owned, size_t nowned)
{
    uint64_t t = take_slot(r->runs, r->nruns, lo, hi, r->s->img->isa->jump_len);
    return t ? t : evict_for(r, lo, hi, owned, nowned);
}

int place_tactics(struct state *s, struct probe_list *probes)
{
    const struct isa *isa = s->img->isa;
    size_t n = 0;
    bool any = false;
    for (size_t i = 0; i < probes->n; i++)
        any |= probes->v[i].verdict == V_OPTIMIZED && (probes->v[i].notes & (NOTE_RETARGET | NOTE_JUMP8));
    if (!any)
        return 0;
    struct room r = { .s = s, .probes = probes };
    struct span *owned = malloc(probes->n * sizeof *owned);
    if (!owned || padding_runs(s, &r.runs, &r.nruns) < 0) {
        free(owned);
        return -1;
    }
    r.capruns = r.nruns;
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        if (p->verdict == V_REFUSED || p->func == SIZE_MAX)
            continue;
        unsigned first = p->dcr_len;
        if (p->verdict == V_INT3) {
            size_t avail;
            struct x86_insn in;
            const uint8_t *b = image_read(s->img, p->addr, &avail);
            first = b ? x86_decode(b, avail, p->addr, &in) : 1;
        }
        owned[n++] = (struct span){ p->addr, p->addr + (first ? first : 1) };
        /* a branch to be re-pointed may not be evicted */
        for (size_t k = 0; p->verdict == V_OPTIMIZED && k < p->nretargets; k++)
            if (p->retargets[k].kind <= RT_BRANCH8)
                ARRAY_PUSH(r.busy, r.nbusy, r.capbusy, (struct span){ p->retargets[k].at, p->retargets[k].at + p->retargets[k].len });
    }
    sort_array(owned, n, sizeof *owned, cmp_span);
    /* merge overlaps (twins at one address) so that the search holds */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (m && owned[k].lo < owned[m - 1].hi) {
            if (owned[k].hi > owned[m - 1].hi)
                owned[m - 1].hi = owned[k].hi;
        } else {
            owned[m++] = owned[k];
        }
    }
    n = m;
    /* the padding the padding tactic's jumps reach into is taken */
    for (size_t k = 0; k < r.nruns; k++) {
        const struct span *o = span_overlap(owned, n, r.runs[k].lo, r.runs[k].hi);
        for (; o && o < owned + n && o->lo < r.runs[k].hi; o++)
            if (o->hi > r.runs[k].lo)
                r.runs[k].lo = o->hi < r.runs[k].hi ? o->hi : r.runs[k].hi;
    }
    for (size_t i = 0; i < probes->n; i++) {
        struct probe *p = &probes->v[i];
        if (p->verdict != V_OPTIMIZED)
            continue;
        for (size_t k = 0; k < p->nretargets; k++) {
            struct retarget *t = &p->retargets[k];
            if (t->kind != RT_BRANCH && t->kind != RT_BRANCH8)
                continue;
            const struct span *o = span_overlap(owned, n, t->at, t->at + t->len);
            if (o) {
                probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "branch at 0x%llx to 0x%llx, in bytes the probe at 0x%llx owns",
                    (unsigned long long)t->at, (unsigned long long)t->target, (unsigned long long)o->lo);
                break;
            }
            if (t->kind == RT_BRANCH8) {
                uint64_t end = t->at + t->len;
                t->tramp = slot_for(&r, end - isa->short_back, end + isa->short_ahead, owned, n);
                if (!t->tramp) {
                    probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "branch at 0x%llx to 0x%llx; a rel8, and no room within its "
                        "reach for a trampoline", (unsigned long long)t->at, (unsigned long long)t->target);
                    break;
                }
            }
        }
        if (p->verdict == V_OPTIMIZED && (p->notes & NOTE_JUMP8)) {
            uint64_t end = p->addr + isa->short_jump_len;
            p->tramp = slot_for(&r, end - isa->short_back, end + isa->short_ahead, owned, n);
            if (!p->tramp)
                short_verdict(s, p, &s->sy->funcs[p->func], p->dcr_len, "; no room within rel8 reach for a trampoline");
        }
    }
    free(owned);
    free(r.runs);
    free(r.busy);
    return 0;
}

void evictions_prune(struct probe_list *probes, struct analysis_stats *st)
{
    if (!probes->nev)
        return;
    /* the trampolines jump-optimized probes use: their rel8 jumps', and
     * the rel8 branches' they re-point */
    uint64_t *t = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        if (p->verdict != V_OPTIMIZED)
            continue;
        if ((p->notes & NOTE_JUMP8) && !ARRAY_PUSH(t, n, cap, p->tramp))
            goto keep_all;
        for (size_t k = 0; k < p->nretargets; k++)
            if (p->retargets[k].tramp && !ARRAY_PUSH(t, n, cap, p->retargets[k].tramp))
                goto keep_all;
    }
    sort_array(t, n, sizeof *t, cmp_u64);
    size_t kept = 0;
    for (size_t w = 0; w < probes->nev; w++) {
        const struct eviction *ev = &probes->ev[w];
        size_t a = LOWER_BOUND(n, m, t[m] <= ev->at);
        if (a < n && t[a] < ev->at + ev->len)
            probes->ev[kept++] = *ev;
        else
            st->evictions--;
    }
    probes->nev = kept;
keep_all:   /* (out of memory: every window stays, as before) */
    free(t);
}
