/*
 * A candidate's own flow (funcflow.h): a descent from its entry that
 * follows jumps and conditional branches inside [start, bound) -- not
 * calls: a callee is a function of its own -- and the jump tables it
 * dispatches through when their check bounds them. What a real function
 * does not do makes the flow bad: bytes that are no instruction, a branch
 * into the middle of an instruction (two decodings of the same bytes), an
 * instruction running into the next function, a privileged, far or
 * interrupt instruction, a branch out of the code.
 *
 * The extent is what the analysis will decode linearly, so it must be
 * exactly the flow: from the entry, reached instructions and the padding
 * between them, up to the first byte that is neither (code nothing here
 * reaches, data), the padding after the last one left out.
 */
#include "funcflow.h"
#include "image.h"
#include "../arch/x86/jumptable.h"
#include "../util/array.h"

#include <stdlib.h>
#include <string.h>

enum { M_NONE, M_START, M_INSIDE };

static bool stops(const struct x86_insn *in)
{
    return x86_ends_flow(in) || in->kind == XK_INT3;
}

static void set_bad(struct flow *w, enum ff_reason r, uint64_t at)
{
    if (w->bad == FF_R__COUNT) {
        w->bad = r;
        w->bad_at = at;
    }
}

/* Takes the instruction at a into the flow: false when it is there
 * already, or the flow turned bad. */
static bool take(struct flow *w, const struct image *img, uint64_t a, struct x86_insn *in)
{
    uint8_t m = w->mark[a - w->start];
    if (m == M_START)
        return false;
    if (m == M_INSIDE) {
        set_bad(w, FF_R_OVERLAP, a);
        return false;
    }
    size_t avail;
    const uint8_t *p = image_read(img, a, &avail);
    if (!p || !x86_decode(p, avail, a, in)) {
        set_bad(w, FF_R_DECODE, a);
        return false;
    }
    if (a + in->len > w->bound) {   /* into the next function */
        set_bad(w, FF_R_OVERLAP, a);
        return false;
    }
    for (unsigned k = 1; k < in->len; k++)
        if (w->mark[a - w->start + k] != M_NONE) {
            set_bad(w, FF_R_OVERLAP, a);
            return false;
        }
    if (!ARRAY_PUSH(w->in, w->n, w->cap, *in)) {
        w->oom = true;
        return false;
    }
    w->mark[a - w->start] = M_START;
    memset(w->mark + (a - w->start) + 1, M_INSIDE, in->len - 1u);
    return true;
}

/* A direct branch's target: walked later when inside, else noted. */
static void target(struct flow *w, const struct image *img, uint64_t t)
{
    if (t >= w->start && t < w->bound) {
        if (!ARRAY_PUSH(w->todo, w->ntodo, w->todocap, t))
            w->oom = true;
    } else if (!image_is_exec_addr(img, t)) {
        set_bad(w, FF_R_WILD, t);
    } else if (!ARRAY_PUSH(w->out, w->nout, w->outcap, t)) {
        w->oom = true;
    }
}

uint64_t flow_riprel(const struct image *img, const struct x86_insn *in)
{
    size_t avail;
    const uint8_t *p = (in->flags & XF_RIPREL) ? image_read(img, in->addr, &avail) : NULL;
    int32_t d;
    if (!p || avail < in->disp_off + 4u)
        return 0;
    memcpy(&d, p + in->disp_off, 4);
    return in->addr + in->len + (uint64_t)(int64_t)d;
}

/* Walks straight on from a, queueing the branch targets (and the labels
 * a lea computes for an indirect jump: lea l(%rip),%rax; jmp *%rax). */
static void walk(struct flow *w, const struct image *img, uint64_t a)
{
    struct x86_insn in;
    while (w->bad == FF_R__COUNT && !w->oom) {
        if (a >= w->bound) {
            w->falls_off = true;
            return;
        }
        if (!take(w, img, a, &in))
            return;
        switch (in.kind) {
        case XK_PRIV: case XK_FAR: case XK_INTN:
            set_bad(w, FF_R_ODD_INSN, a);
            return;
        case XK_JMP: case XK_JCC: case XK_LOOP: case XK_XBEGIN:
            target(w, img, in.target);
            if (in.kind == XK_JMP)
                return;
            break;
        default:
            if (stops(&in))   /* ret, ud2, int3, an indirect jump */
                return;
            int64_t disp;
            if ((in.flags & XF_ADDR) && x86_lea_use(image_read_cb, (void *)img, a, w->bound, &disp) == X86_USE_JUMP)
                target(w, img, flow_riprel(img, &in));
        }
        a += in.len;
    }
}

static int cmp_insn(const void *a, const void *b)
{
    const struct x86_insn *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The indirect jumps of the flow: the targets of their tables (noted:
 * never an entry), walked when the table is bounded by its check. True
 * when some are queued. */
static bool tables(struct flow *w, const struct image *img)
{
    uint64_t *local = NULL;
    size_t nlocal = 0, lcap = 0;
    bool queued = false;
    sort_array(w->in, w->n, sizeof *w->in, cmp_insn);
    for (size_t k = 0; k < w->n; k++)
        if (x86_has_target(&w->in[k]) && w->in[k].target >= w->start && w->in[k].target < w->bound &&
            !ARRAY_PUSH(local, nlocal, lcap, w->in[k].target))
            w->oom = true;
    sort_array(local, nlocal, sizeof *local, cmp_u64);
    for (size_t k = 0; k < w->n && !w->oom; k++) {
        if (w->in[k].kind != XK_JMP_IND)
            continue;
        struct x86_ijmp_result r;
        x86_indirect_jump(w->in, w->n, k, local, nlocal, image_read_cb, image_is_code_cb, (void *)img, &r);
        for (unsigned e = 0; r.kind == X86_IJMP_TABLE && e < r.entries; e++) {
            uint64_t t = r.targets[e];
            if (!ARRAY_PUSH(w->tables, w->ntables, w->tabcap, t))
                w->oom = true;
            if (!r.bounded_by_entries && t >= w->start && t < w->bound && w->mark[t - w->start] != M_START) {
                queued = true;
                if (!ARRAY_PUSH(w->todo, w->ntodo, w->todocap, t))
                    w->oom = true;
            }
        }
        free(r.targets);
    }
    free(local);
    return queued;
}

/* The extent: reached instructions and padding between them, from start. */
static void extent(struct flow *w, const struct image *img)
{
    uint64_t a = w->start;
    size_t i = 0;
    w->end = w->start;
    w->last_falls = false;
    while (a < w->bound) {
        uint8_t m = w->mark[a - w->start];
        if (m == M_START) {
            while (i < w->n && w->in[i].addr < a)
                i++;
            a += w->in[i].len;
            w->end = a;
            w->last_falls = !stops(&w->in[i]);
            continue;
        }
        if (m == M_INSIDE)
            break;
        size_t avail;
        struct x86_insn in;
        const uint8_t *p = image_read(img, a, &avail);
        if (!p || !x86_decode(p, avail, a, &in) || !flow_padding(&in) || a + in.len > w->bound)
            break;
        for (unsigned k = 1; k < in.len; k++)
            if (w->mark[a - w->start + k] != M_NONE)
                return;   /* padding that would straddle a reached instruction */
        a += in.len;
    }
}

void flow_reset(struct flow *w)
{
    for (size_t k = 0; k < w->n; k++)   /* the marks are all clear between runs */
        if (w->in[k].addr >= w->start && w->in[k].addr + w->in[k].len <= w->start + w->mcap)
            memset(w->mark + (w->in[k].addr - w->start), M_NONE, w->in[k].len);
    w->n = w->ntodo = w->ntables = w->nout = 0;
}

void flow_run(struct flow *w, const struct image *img, uint64_t start, uint64_t bound)
{
    flow_reset(w);
    w->start = start;
    w->bound = bound;
    w->bad = FF_R__COUNT;
    w->bad_at = 0;
    w->falls_off = w->oom = false;
    w->end = start;
    if (bound - start > w->mcap) {
        free(w->mark);
        w->mcap = (size_t)(bound - start) * 2;
        w->mark = calloc(w->mcap, 1);
        if (!w->mark) {
            w->mcap = 0;
            w->oom = true;
            return;
        }
    }
    if (!ARRAY_PUSH(w->todo, w->ntodo, w->todocap, start)) {
        w->oom = true;
        return;
    }
    do {
        while (w->ntodo && w->bad == FF_R__COUNT && !w->oom)
            walk(w, img, w->todo[--w->ntodo]);
    } while (w->bad == FF_R__COUNT && !w->oom && tables(w, img));
    sort_array(w->in, w->n, sizeof *w->in, cmp_insn);
    if (w->bad == FF_R__COUNT && !w->oom)
        extent(w, img);
}

void flow_free(struct flow *w)
{
    free(w->in);
    free(w->mark);
    free(w->todo);
    free(w->tables);
    free(w->out);
    memset(w, 0, sizeof *w);
}
