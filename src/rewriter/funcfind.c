/*
 * Functions nobody named (funcfind.h; doc/analysis.md says why each proof
 * is enough). Code that no symbol and no FDE covers -- the gaps of the
 * executable sections -- is searched for entries that something proven
 * leads to:
 *
 *   - strong: a direct call from a proven function (named, or found), a
 *     jump out of a named function whose .eh_frame says its frame is back
 *     at its entry state there (a tail call);
 *   - weak: an address computed by code (lea; an immediate in a non-PIE
 *     executable), a pointer in data or a relocation, another jump.
 *
 * A candidate's own flow (funcflow.c) must look like a function's, or it
 * is left out with a reason. A weak one must also start a flow of its
 * own: the linear decode of the code before it, from the last proven
 * instruction boundary, lands on it and does not run on into it; it does
 * not jump into the middle of a named function, and no path runs off its
 * end into code no function holds. Nothing is taken that a jump table
 * names (a piece of its dispatcher), whose bytes code reads or writes as
 * data, or that lies inside a found function.
 *
 * A found function ends where its flow's extent does, never past the next
 * function's entry, so no DCR crosses into something else. The found
 * functions lead to more (their calls, jumps and addresses): rounds run
 * until nothing changes. What no proven function holds is decoded anyway,
 * and its branches and addresses handed to the analysis (ff_ref).
 */
#include "funcfind.h"
#include "funcflow.h"
#include "image.h"
#include "symbols.h"
#include "taken.h"
#include "../arch/isa.h"
#include "../util/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum seed_bits {
    S_CALL = 1u << 0,        /* a direct call from a proven function */
    S_TAIL = 1u << 1,        /* a named function's jump with its frame at its entry state */
    S_LEA = 1u << 2,         /* an address a named function computes */
    S_DATA = 1u << 3,        /* a pointer in data, a relocation */
    S_LEA_FOUND = 1u << 4,   /* an address a found function computes */
    S_JUMP = 1u << 5,        /* any other jump to it */
    S_TABLE = 1u << 6,       /* a jump table's target: never an entry */
};
#define S_STRONG (S_CALL | S_TAIL)
#define S_CALLED (S_CALL | S_TAIL | S_LEA)   /* what makes a call entry */
#define MAX_ROUNDS 64

struct seed { uint64_t addr; unsigned bits; };
struct gap { uint64_t lo, hi; bool falls_in; };   /* falls_in: the named function before may run into it */
struct cand {
    uint64_t addr, end;
    unsigned bits;
    bool accepted, call_entry;
    uint8_t reason;          /* enum ff_reason, when not accepted */
};
/* The linear decode of a gap from its last proven instruction boundary. */
struct sweep {
    uint64_t pos, inside_until;
    bool falls, dead;        /* dead: bytes that are no instruction since pos */
};

struct ff {
    const struct image *img;
    const struct symbols *sy;
    struct gap *gaps;
    size_t ngaps, gcap;
    struct seed *seeds;      /* sorted and merged up to nsorted */
    size_t nseeds, scap, nsorted;
    uint64_t *data;          /* addresses code reads or writes (RIP-relative) */
    size_t ndata, dcap;
    struct cand *c;
    size_t nc, ccap;
    uint64_t *prev, *bounds; /* the last round's accepted entries; this round's bounds */
    size_t nprev, pcap, nbounds, bcap;
    struct flow w;
    bool oom;
};

static bool stops(const struct x86_insn *in)
{
    return x86_ends_flow(in) || in->kind == XK_INT3;
}

static void seed(struct ff *f, uint64_t addr, unsigned bits)
{
    if (!f->oom && image_is_exec_addr(f->img, addr) && !symbols_func_at(f->sy, addr) &&
        !ARRAY_PUSH(f->seeds, f->nseeds, f->scap, (struct seed){ addr, bits }))
        f->oom = true;
}

static void seed_cb(void *f, uint64_t addr)
{
    seed(f, addr, S_DATA);
}

static void data_mark(struct ff *f, uint64_t addr)
{
    if (!f->oom && image_is_exec_addr(f->img, addr) && !ARRAY_PUSH(f->data, f->ndata, f->dcap, addr))
        f->oom = true;
}

/* What one instruction of proven code (its function ends by end) leads
 * to: calls, addresses, data. An address is data's when the code reads
 * or writes memory through it, a label when it jumps to it. */
static void insn_seeds(struct ff *f, const struct x86_insn *in, bool named, uint64_t end)
{
    size_t avail;
    const uint8_t *p = image_read(f->img, in->addr, &avail);
    if (in->kind == XK_CALL)
        seed(f, in->target, S_CALL);
    uint64_t to = flow_riprel(f->img, in);
    if (to && !(in->flags & XF_ADDR)) {
        data_mark(f, to);
    } else if (to && image_is_exec_addr(f->img, to) && !symbols_func_at(f->sy, to)) {
        int64_t disp;
        enum x86_addr_use use = x86_lea_use(image_read_cb, (void *)f->img, in->addr, end, &disp);
        if (use == X86_USE_MEMORY)
            data_mark(f, to + (uint64_t)disp);   /* (NASM code reaches tables as base + label - base) */
        else
            seed(f, to, use == X86_USE_JUMP ? S_JUMP : named ? S_LEA : S_LEA_FOUND);
    }
    if (p && f->img->kind == IMG_EXEC) {   /* non-PIE: an immediate may be an address */
        uint64_t vals[3];
        unsigned nv = x86_insn_constants(p, avail, vals);
        for (unsigned k = 0; k < nv; k++)
            seed(f, vals[k], named ? S_LEA : S_LEA_FOUND);
    }
}

/* A named function's seeds; true when its last instruction may fall
 * through (into what follows it). */
static bool named_seeds(struct ff *f, const struct func *fn)
{
    bool falls = true;
    for (uint64_t a = fn->start; a < fn->end && !f->oom;) {
        size_t avail;
        struct x86_insn in;
        const uint8_t *p = image_read(f->img, a, &avail);
        if (!p || !x86_decode(p, avail < fn->end - a ? avail : (size_t)(fn->end - a), a, &in))
            return true;
        insn_seeds(f, &in, true, fn->end);
        if ((in.kind == XK_JMP || in.kind == XK_JCC) && (in.target < fn->start || in.target >= fn->end)) {
            struct eh_cfa c = symbols_cfa_at(f->sy, in.addr);
            seed(f, in.target, c.known && isa_cfa_at_call_entry(f->img->isa, c.reg, c.off) ? S_TAIL : S_JUMP);
        }
        /* a call that ends a function of known size does not return
         * (__stack_chk_fail): the compiler put nothing after it */
        falls = !stops(&in) && !((in.kind == XK_CALL || in.kind == XK_CALL_IND) && !fn->size_guessed &&
                                  a + in.len == fn->end);
        a += in.len;
    }
    return falls;
}

/* Sections whose code is not functions, or is kprewrite's own. */
static bool searched(const struct section *s)
{
    static const char *const stubs[] = { ".plt", ".plt.got", ".plt.sec", ".init", ".fini" };
    if (!(s->flags & SHF_ALLOC) || !(s->flags & SHF_EXECINSTR) || !s->data || s->type == SHT_NOBITS ||
        !strncmp(s->name, ".kprewrite", 10))
        return false;
    for (size_t k = 0; k < sizeof stubs / sizeof stubs[0]; k++)
        if (!strcmp(s->name, stubs[k]))
            return false;
    return true;
}

static int cmp_gap(const void *a, const void *b)
{
    const struct gap *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The gaps: code of the searched sections outside every named function,
 * by address (gap_of and results() walk them in order; the sections they
 * come from need not be: a crafted file's first code section may lie past
 * the others, and results() then walked from the last found function to
 * it a byte at a time); and the named functions' seeds. */
static void find_gaps(struct ff *f, struct funcfind *out)
{
    const struct symbols *sy = f->sy;
    bool *falls = calloc(sy->nfuncs ? sy->nfuncs : 1, sizeof *falls);
    if (!falls) {
        f->oom = true;
        return;
    }
    for (size_t i = 0; i < sy->nfuncs; i++)   /* (an fde@ whose start is not proven decodes as nothing true) */
        falls[i] = !sy->funcs[i].entry_unproven && named_seeds(f, &sy->funcs[i]);
    for (size_t i = 0; i < f->img->nsecs && !f->oom; i++) {
        const struct section *s = &f->img->secs[i];
        if (!searched(s))
            continue;
        uint64_t cur = s->addr, hi = s->addr + s->size;
        bool fin = false;
        size_t k = LOWER_BOUND(sy->nfuncs, m, sy->funcs[m].end <= s->addr);
        for (; cur < hi && !f->oom; k++) {
            uint64_t next = k < sy->nfuncs && sy->funcs[k].start < hi ? sy->funcs[k].start : hi;
            if (next > cur) {
                if (!ARRAY_PUSH(f->gaps, f->ngaps, f->gcap, (struct gap){ cur, next, fin }))
                    f->oom = true;
                out->gap_bytes += next - cur;
            }
            if (k >= sy->nfuncs || next >= hi)
                break;
            if (sy->funcs[k].end > cur) {
                cur = sy->funcs[k].end;
                fin = falls[k];
            }
        }
    }
    free(falls);
    sort_array(f->gaps, f->ngaps, sizeof *f->gaps, cmp_gap);
}

static const struct gap *gap_of(const struct ff *f, uint64_t a)
{
    size_t k = LOWER_BOUND(f->ngaps, m, f->gaps[m].hi <= a);
    return k < f->ngaps && f->gaps[k].lo <= a ? &f->gaps[k] : NULL;
}

static int cmp_seed(const void *a, const void *b)
{
    const struct seed *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts the seeds, one per address with every bit; true when there are
 * new ones (an address or a bit) since the last time. */
static bool merge_seeds(struct ff *f)
{
    size_t before = f->nsorted;
    unsigned bits_before = 0, bits_after = 0;
    for (size_t k = 0; k < f->nsorted; k++)
        bits_before += __builtin_popcount(f->seeds[k].bits);
    sort_array(f->seeds, f->nseeds, sizeof *f->seeds, cmp_seed);
    size_t m = 0;
    for (size_t k = 0; k < f->nseeds; k++) {
        if (m && f->seeds[m - 1].addr == f->seeds[k].addr)
            f->seeds[m - 1].bits |= f->seeds[k].bits;
        else
            f->seeds[m++] = f->seeds[k];
    }
    f->nseeds = f->nsorted = m;
    for (size_t k = 0; k < m; k++)
        bits_after += __builtin_popcount(f->seeds[k].bits);
    sort_array(f->data, f->ndata, sizeof *f->data, cmp_u64);
    size_t d = 0;
    for (size_t k = 0; k < f->ndata; k++)
        if (!d || f->data[d - 1] != f->data[k])
            f->data[d++] = f->data[k];
    f->ndata = d;
    return m != before || bits_after != bits_before;
}

static bool sorted_has(const uint64_t *v, size_t n, uint64_t a)
{
    size_t k = LOWER_BOUND(n, m, v[m] < a);
    return k < n && v[k] == a;
}

/* The first of v (sorted) above a, or hi. */
static uint64_t next_above(const uint64_t *v, size_t n, uint64_t a, uint64_t hi)
{
    size_t k = LOWER_BOUND(n, m, v[m] <= a);
    return k < n && v[k] < hi ? v[k] : hi;
}

/* The candidates of this round (seeds in gaps), and their bounds: the
 * strong ones and those the last round took. */
static void candidates(struct ff *f)
{
    f->nc = f->nbounds = 0;
    for (size_t k = 0; k < f->nseeds && !f->oom; k++) {
        const struct seed *s = &f->seeds[k];
        if (!gap_of(f, s->addr))
            continue;
        if (!ARRAY_PUSH(f->c, f->nc, f->ccap, (struct cand){ .addr = s->addr, .bits = s->bits }))
            f->oom = true;
        if ((((s->bits & S_STRONG) && !(s->bits & S_TABLE)) || sorted_has(f->prev, f->nprev, s->addr)) &&
            !ARRAY_PUSH(f->bounds, f->nbounds, f->bcap, s->addr))
            f->oom = true;
    }
}

/* The linear decode from sw->pos onto x: *falls when the code before x
 * may run on into it. False when it does not land on x. */
static bool sweep_to(const struct ff *f, struct sweep *sw, uint64_t x, bool *falls)
{
    while (!sw->dead && sw->pos < x) {
        size_t avail;
        struct x86_insn in;
        const uint8_t *p = image_read(f->img, sw->pos, &avail);
        if (!p || !x86_decode(p, avail, sw->pos, &in)) {
            sw->dead = true;
            break;
        }
        if (sw->pos + in.len > x)
            return false;   /* x is inside it; later candidates go on from here */
        if (in.kind == XK_INT3)
            sw->falls = false;
        else if (!(in.flags & XF_NOP))
            sw->falls = !stops(&in);
        sw->pos += in.len;
    }
    *falls = sw->falls;
    return !sw->dead && sw->pos == x;
}

static bool data_inside(const struct ff *f, uint64_t lo, uint64_t hi)
{
    size_t k = LOWER_BOUND(f->ndata, m, f->data[m] < lo);
    return k < f->ndata && f->data[k] < hi;
}

/* Does the flow jump into the middle of a named function? */
static bool jumps_into(const struct ff *f)
{
    for (size_t k = 0; k < f->w.nout; k++) {
        const struct func *fn = symbols_func_at(f->sy, f->w.out[k]);
        if (fn && fn->start != f->w.out[k])
            return true;
    }
    return false;
}

/* What the accepted flow leads to. */
static void flow_seeds(struct ff *f)
{
    for (size_t k = 0; k < f->w.n; k++)
        insn_seeds(f, &f->w.in[k], false, f->w.bound);
    for (size_t k = 0; k < f->w.nout; k++)
        seed(f, f->w.out[k], S_JUMP);
    for (size_t k = 0; k < f->w.ntables; k++)
        seed(f, f->w.tables[k], S_TABLE);
}

/* Judges candidate c, whose function may reach up to bound. */
static void judge(struct ff *f, struct cand *c, uint64_t bound, struct sweep *sw)
{
    bool strong = c->bits & S_STRONG, falls = true;
    c->accepted = false;
    if (c->bits & S_TABLE) {
        c->reason = FF_R_TABLE;
        return;
    }
    if (c->addr < sw->inside_until) {
        c->reason = FF_R_INSIDE;
        return;
    }
    bool landed = sweep_to(f, sw, c->addr, &falls);
    c->reason = !landed ? FF_R_NO_BOUNDARY : FF_R_FALLEN_INTO;
    if (!strong && (!landed || falls))
        return;
    flow_run(&f->w, f->img, c->addr, bound);
    if (f->w.oom) {
        f->oom = true;
        return;
    }
    c->reason = f->w.bad != FF_R__COUNT ? f->w.bad : data_inside(f, c->addr, f->w.end) ? FF_R_DATA : FF_R__COUNT;
    if (!strong && c->reason == FF_R__COUNT) {
        if (jumps_into(f))
            c->reason = FF_R_JUMPS_INTO;
        else if (f->w.falls_off && !sorted_has(f->prev, f->nprev, bound))
            c->reason = FF_R_NO_END;
    }
    if (c->reason != FF_R__COUNT)
        return;
    c->accepted = true;
    c->end = f->w.end;
    c->call_entry = landed && !falls && (c->bits & S_CALLED) && !(c->bits & S_JUMP);
    sw->pos = sw->inside_until = f->w.end;
    sw->falls = f->w.last_falls;
    sw->dead = false;
    flow_seeds(f);
}

/* One round over every candidate, in address order; true when it took
 * what the last one did. */
static bool one_round(struct ff *f)
{
    candidates(f);
    const struct gap *g = NULL;
    struct sweep sw = { 0 };
    size_t nacc = 0;
    bool same = true;
    for (size_t k = 0; k < f->nc && !f->oom; k++) {
        struct cand *c = &f->c[k];
        const struct gap *cg = gap_of(f, c->addr);
        if (cg != g) {
            g = cg;
            sw = (struct sweep){ g->lo, g->lo, g->falls_in, false };
        }
        judge(f, c, next_above(f->bounds, f->nbounds, c->addr, g->hi), &sw);
        if (c->accepted)
            same &= nacc < f->nprev && f->prev[nacc++] == c->addr;
    }
    same &= nacc == f->nprev;
    f->nprev = 0;
    for (size_t k = 0; k < f->nc && !f->oom; k++)
        if (f->c[k].accepted && !ARRAY_PUSH(f->prev, f->nprev, f->pcap, f->c[k].addr))
            f->oom = true;
    return same;
}

/* The code of [lo, hi) that no proven function holds, decoded (again
 * after bytes that are no instruction): its branches and addresses for
 * the analysis, and how much of it is code. */
static void unexplained(struct ff *f, struct funcfind *out, uint64_t lo, uint64_t hi, struct ff_ref **refs,
                        size_t *cap)
{

    for (uint64_t a = lo; a < hi && !f->oom;) {
        size_t avail;
        struct x86_insn in;
        const uint8_t *p = image_read(f->img, a, &avail);
        if (!p) {   /* bytes no section holds: past them at once */
            uint64_t next = image_next_readable(f->img, a);
            next = next < hi ? next : hi;
            out->unexplained_bytes += next - a;
            a = next;
            continue;
        }
        if (!x86_decode(p, avail, a, &in)) {
            out->unexplained_bytes++;
            a++;
            continue;
        }
        if (!flow_padding(&in))
            out->unexplained_bytes += in.len;
        if (x86_has_target(&in) &&
            !ARRAY_PUSH(*refs, out->nrefs, *cap, (struct ff_ref){ in.target, in.addr, false }))
            f->oom = true;
        if (in.flags & XF_RIPREL) {
            int32_t d;
            memcpy(&d, p + in.disp_off, 4);
            if (!ARRAY_PUSH(*refs, out->nrefs, *cap,
                            (struct ff_ref){ in.addr + in.len + (uint64_t)(int64_t)d, in.addr, true }))
                f->oom = true;
        }
        a += in.len;
    }
}

static int cmp_ref(const void *a, const void *b)
{
    const struct ff_ref *x = a, *y = b;
    return x->target < y->target ? -1 : x->target > y->target;
}

static enum ff_by by_of(unsigned bits)
{
    return (bits & S_CALL) ? FF_BY_CALL : (bits & S_TAIL) ? FF_BY_TAIL
         : (bits & (S_LEA | S_DATA | S_LEA_FOUND)) ? FF_BY_POINTER : FF_BY_JUMP;
}

/* The last round's verdicts as the result; the gaps' other code decoded. */
static void results(struct ff *f, struct funcfind *out)
{
    size_t cap = 0, rcap = 0;
    out->candidates = f->nc;
    for (size_t k = 0; k < f->nc && !f->oom; k++) {
        const struct cand *c = &f->c[k];
        if (!c->accepted) {
            out->rejected[c->reason]++;
            continue;
        }
        out->by[by_of(c->bits)]++;
        if (!ARRAY_PUSH(out->v, out->n, cap, (struct ff_found){ c->addr, c->end, c->call_entry, (uint8_t)by_of(c->bits) }))
            f->oom = true;
    }
    size_t k = 0;
    for (size_t g = 0; g < f->ngaps && !f->oom; g++) {
        uint64_t a = f->gaps[g].lo;
        for (; k < out->n && out->v[k].start < f->gaps[g].hi; k++) {
            unexplained(f, out, a, out->v[k].start, &out->refs, &rcap);
            a = out->v[k].end;
        }
        unexplained(f, out, a, f->gaps[g].hi, &out->refs, &rcap);
    }
    sort_array(out->refs, out->nrefs, sizeof *out->refs, cmp_ref);
}

int funcfind_run(struct funcfind *out, const struct image *img, const struct symbols *sy, char *err, size_t errlen)
{
    struct ff f = { .img = img, .sy = sy };
    memset(out, 0, sizeof *out);
    find_gaps(&f, out);
    taken_data_pointers(img, seed_cb, &f);
    bool fresh = merge_seeds(&f);
    while (!f.oom && out->rounds < MAX_ROUNDS) {
        out->rounds++;
        bool same = one_round(&f);
        fresh = merge_seeds(&f);
        if (same && !fresh)
            break;
    }
    if (!f.oom)
        results(&f, out);
    flow_free(&f.w);
    free(f.gaps);
    free(f.seeds);
    free(f.data);
    free(f.c);
    free(f.prev);
    free(f.bounds);
    if (f.oom) {
        funcfind_free(out);
        snprintf(err, errlen, "%s: out of memory finding functions without symbols", img->path);
        return -1;
    }
    return 0;
}

void funcfind_free(struct funcfind *ff)
{
    free(ff->v);
    free(ff->refs);
    memset(ff, 0, sizeof *ff);
}

const char *funcfind_reason_name(enum ff_reason r)
{
    static const char *const names[FF_R__COUNT] = {
        [FF_R_DECODE] = "undecodable", [FF_R_OVERLAP] = "overlapping-instructions",
        [FF_R_ODD_INSN] = "privileged-instruction", [FF_R_WILD] = "branch-out-of-code",
        [FF_R_DATA] = "read-as-data", [FF_R_TABLE] = "jump-table-target", [FF_R_INSIDE] = "inside-a-function",
        [FF_R_NO_BOUNDARY] = "no-boundary", [FF_R_FALLEN_INTO] = "fallen-into",
        [FF_R_JUMPS_INTO] = "jumps-into-a-function", [FF_R_NO_END] = "no-end",
    };
    return r < FF_R__COUNT ? names[r] : "?";
}

const char *funcfind_by_name(enum ff_by b)
{
    static const char *const names[FF_BY__COUNT] = { "called", "tail-called", "pointed-to", "jumped-to" };
    return b < FF_BY__COUNT ? names[b] : "?";
}
