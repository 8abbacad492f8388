/* The tactics that need every verdict first (see analysis.h). */
#include "analysis.h"
#include "../arch/x86/decode.h"
#include "sort.h"

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
    size_t a = 0, b = n;
    while (a < b) {   /* first span ending after lo */
        size_t m = (a + b) / 2;
        if (v[m].hi <= lo) a = m + 1; else b = m;
    }
    return a < n && v[a].lo < hi ? &v[a] : NULL;
}

/* Padding between functions, where trampolines may go: after a function
 * whose last instruction does not fall through, up to the next function
 * (or the section's end), the bytes assemblers pad with that nothing
 * branches into. Sorted, at least 5 bytes each. */
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
        for (const uint8_t *b = sec->data + (lo - sec->addr); a < hi && is_pad_byte(*b); a++, b++)
            ;
        const struct ref *r = ref_into(&s->refs, lo - 1, a);   /* nothing may land there */
        if (r)
            a = r->target;
        if (a - lo < X86_JMP32_LEN)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            struct span *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[n++] = (struct span){ lo, a };
    }
    *out = v;
    *nout = n;
    return 0;
}

/* A 5-byte trampoline slot starting within [lo, hi], taken from the runs
 * (their lo moves past it); 0 when none is free there. */
static uint64_t take_slot(struct span *runs, size_t n, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = n;
    while (a < b) {   /* first run ending after lo */
        size_t m = (a + b) / 2;
        if (runs[m].hi <= lo) a = m + 1; else b = m;
    }
    for (; a < n && runs[a].lo <= hi; a++) {
        uint64_t at = runs[a].lo > lo ? runs[a].lo : lo;
        if (at <= hi && at + X86_JMP32_LEN <= runs[a].hi) {
            if (at == runs[a].lo)
                runs[a].lo += X86_JMP32_LEN;
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
int place_tactics(struct state *s, struct probe_list *probes)
{
    size_t n = 0, nruns = 0;
    bool any = false;
    for (size_t i = 0; i < probes->n; i++)
        any |= probes->v[i].verdict == V_OPTIMIZED && (probes->v[i].notes & (NOTE_RETARGET | NOTE_JUMP8));
    if (!any)
        return 0;
    struct span *owned = malloc(probes->n * sizeof *owned), *runs = NULL;
    if (!owned || padding_runs(s, &runs, &nruns) < 0) {
        free(owned);
        return -1;
    }
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
    for (size_t k = 0; k < nruns; k++) {
        const struct span *o = span_overlap(owned, n, runs[k].lo, runs[k].hi);
        for (; o && o < owned + n && o->lo < runs[k].hi; o++)
            if (o->hi > runs[k].lo)
                runs[k].lo = o->hi < runs[k].hi ? o->hi : runs[k].hi;
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
                t->tramp = take_slot(runs, nruns, end - 128, end + 127);
                if (!t->tramp) {
                    probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "branch at 0x%llx to 0x%llx; a rel8, and no padding within its "
                        "reach for a trampoline", (unsigned long long)t->at, (unsigned long long)t->target);
                    break;
                }
            }
        }
        if (p->verdict == V_OPTIMIZED && (p->notes & NOTE_JUMP8)) {
            uint64_t end = p->addr + X86_JMP8_LEN;
            p->tramp = take_slot(runs, nruns, end - 128, end + 127);
            if (!p->tramp)
                short_verdict(p, &s->sy->funcs[p->func], p->dcr_len, "; no padding within rel8 reach for a trampoline");
        }
    }
    free(owned);
    free(runs);
    return 0;
}

