/*
 * reloc-check: instruction boundaries by a linear sweep, with the
 * checker's own decoder (rc-insn.c). A probe site must be one: the sweep
 * starts where an instruction is known to start (a function's symbol, or
 * its section's start) and decodes forward, stepping over a byte that
 * does not decode as objdump does (data in code: hand-written crypto's
 * tables); an address it steps over is inside an instruction, as glibc's
 * signal-frame FDE one byte before __restore_rt is.
 */
#include "rc.h"

#include <stdlib.h>

static int cmp_bq(const void *a, const void *b)
{
    const struct rc_bq *x = a, *y = b;
    if (x->origin != y->origin)
        return x->origin < y->origin ? -1 : 1;
    if (x->entry != y->entry)
        return x->entry ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The first pad above at, or none (npads). */
static size_t pad_after(const uint64_t *pads, size_t npads, uint64_t at)
{
    size_t lo = 0, hi = npads;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (pads[m] <= at) lo = m + 1; else hi = m;
    }
    return lo;
}

/* The instruction [at, *end) holds zero bytes only up to a pad it runs
 * over: it ends there. */
static void zero_pad(const uint8_t *p, uint64_t at, uint64_t *end, const uint64_t *pads, size_t npads)
{
    size_t k = pad_after(pads, npads, at);
    if (k == npads || pads[k] >= *end)
        return;
    for (uint64_t a = at; a < pads[k]; a++)
        if (p[a - at])
            return;
    *end = pads[k];
}

/* One sweep a distinct origin (and kind), up to its last query: each
 * query's address is met exactly, or stepped over (by the instruction
 * that runs through it). An entry is a pad too: zero padding after a call
 * that does not return, then a function that has no FDE (kprewrite's fn@,
 * proven by the calls to it), decodes as one `add` running into it. */
void rc_sweep(struct rc_bq *q, size_t n, rc_read_fn read, void *ctx, const uint64_t *pads, size_t npads)
{
    if (n)
        qsort(q, n, sizeof *q, cmp_bq);
    for (size_t i = 0; i < n;) {
        uint64_t origin = q[i].origin, pos = origin, last = origin, bad = 0;
        bool entry = q[i].entry;
        for (; i < n && q[i].origin == origin && q[i].entry == entry; i++) {
            struct rc_bq *b = &q[i];
            while (pos < b->addr) {
                size_t avail = 0;
                const uint8_t *p = read(ctx, pos, &avail);
                struct insn I;
                if (p && b->limit > pos && avail > b->limit - pos)
                    avail = (size_t)(b->limit - pos);
                last = pos;
                if (!p || pos >= b->limit || !rc_decode(p, avail, pos, &I)) {
                    bad = pos;
                    pos++;
                } else {
                    pos += I.zi.length;
                    if (entry)
                        zero_pad(p, last, &pos, pads, npads);
                    if (entry && pos > b->addr)   /* the entry itself: a function found by a call to it */
                        zero_pad(p, last, &pos, &b->addr, 1);
                }
            }
            b->ok = pos == b->addr;
            b->insn = last;
            b->insn_end = pos;
            b->undecodable = bad;
        }
    }
}
