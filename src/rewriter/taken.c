/*
 * An unproven indirect jump (a tail call through a function pointer, most
 * often) taints its function: it could land anywhere. It can only land
 * where some address points, though, and in a user image every address a
 * program can jump to is materialized somewhere kprewrite can see: in data
 * (function pointer tables, labels-as-values), in dynamic relocations, or in
 * code (a RIP-relative lea; an immediate in non-PIE code) -- apart from
 * return addresses and landing pads, which the analysis treats on their own
 * (a call inside a DCR, LSDA pads). If no such address lies strictly inside
 * a function, no indirect jump lands there, and its own indirect jumps do
 * not stop it from being jump-optimized.
 *
 * This assumes what compilers do: a code address is materialized, never
 * made by arithmetic on another one, except by a function on its own
 * labels (GCC's `goto *(&&base + offset[i])`), so a function taking its own
 * start counts as taking an address inside itself. Hand-written code that
 * computes jump targets otherwise wants --strict-indirect.
 */
#include "taken.h"
#include "../util/array.h"
#include "../arch/x86/decode.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct grow { uint64_t *v; size_t n, cap; bool oom; };

static void put(struct grow *g, const struct image *img, uint64_t a)
{
    if (g->oom || !image_is_exec_addr(img, a))
        return;
    if (!ARRAY_PUSH(g->v, g->n, g->cap, a))
        g->oom = true;
}

/* Dynamic and static relocations: RELATIVE addends, S + A of the others. */
static void relocations(const struct image *img, void (*fn)(void *ctx, uint64_t addr), void *ctx)
{
    const struct section *r;
    for (size_t i = 0; (r = image_next_rela(img, &i));) {
        if (image_rela_unloaded(img, r))
            continue;   /* debug info */
        const struct section *sym = r->link < img->nsecs ? &img->secs[r->link] : NULL;
        for (size_t k = 0; k < rela_count(r); k++) {
            Elf64_Rela rel = rela_get(r, k);
            uint32_t si = ELF64_R_SYM(rel.r_info);
            uint64_t s = 0;
            if (si && sym && sym->data && ((uint64_t)si + 1) * sizeof(Elf64_Sym) <= sym->size) {
                Elf64_Sym es;
                memcpy(&es, sym->data + (uint64_t)si * sizeof es, sizeof es);
                if (es.st_shndx == SHN_UNDEF)
                    continue;   /* another object's address */
                s = es.st_value;
            }
            uint64_t a = s + (uint64_t)rel.r_addend;
            if (image_is_exec_addr(img, a))
                fn(ctx, a);
        }
    }
}

void taken_data_pointers(const struct image *img, void (*fn)(void *ctx, uint64_t addr), void *ctx)
{
    for (size_t i = 0; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (!(s->flags & SHF_ALLOC) || !s->data || s->type == SHT_NOBITS || (s->flags & SHF_EXECINSTR))
            continue;
        for (uint64_t o = (8 - s->addr % 8) % 8; o + 8 <= s->size; o += 8) {
            uint64_t w;
            memcpy(&w, s->data + o, 8);
            if (image_is_exec_addr(img, w))
                fn(ctx, w);
        }
    }
    relocations(img, fn, ctx);
}

static void put_cb(void *g, uint64_t a)
{
    struct grow *gr = g;
    if (!gr->oom && !ARRAY_PUSH(gr->v, gr->n, gr->cap, a))
        gr->oom = true;
}

/* Code outside every function (crt stubs, the PLT, data in code) of a
 * non-PIE executable: any 4 bytes may be an immediate holding an address. */
static void code_outside_functions(struct grow *g, const struct image *img, const struct symbols *sy,
                                   const struct section *s)
{
    for (uint64_t o = 0; o + 4 <= s->size; o++) {
        const struct func *fn = symbols_func_at(sy, s->addr + o);
        if (fn) {
            o = fn->end - s->addr - 1;   /* skip it; the loop adds one */
            continue;
        }
        uint32_t w;
        memcpy(&w, s->data + o, 4);
        put(g, img, w);
        put(g, img, (uint64_t)(int64_t)(int32_t)w);
    }
}

int taken_build(struct taken *t, const struct image *img, const struct symbols *sy, char *err, size_t errlen)
{
    struct grow g = { 0 }, self = { 0 };
    bool exec32 = img->kind == IMG_EXEC;   /* non-PIE: 32-bit absolute addresses exist */
    memset(t, 0, sizeof *t);
    /* Not 32-bit words of data: compilers store code pointers as 8 bytes
     * on x86-64, even in non-PIE code (switch tables are .quad); the 32-bit
     * values there are numbers (LLVM's tables: 0.02 % of the function
     * entries of c-index-test looked taken) */
    taken_data_pointers(img, put_cb, &g);
    for (size_t i = 0; exec32 && i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if ((s->flags & SHF_ALLOC) && s->data && s->type != SHT_NOBITS && (s->flags & SHF_EXECINSTR))
            code_outside_functions(&g, img, sy, s);
    }
    /* RIP-relative operands of the code (lea label(%rip), a pointer in .text) */
    for (size_t f = 0; f < sy->nfuncs; f++) {   /* sorted, not overlapping */
        for (uint64_t a = sy->funcs[f].start; a < sy->funcs[f].end;) {
            size_t avail;
            const uint8_t *p = image_read(img, a, &avail);
            if (!p)
                break;   /* the rest of a guessed size lies outside the file */
            struct x86_insn in;
            unsigned len = x86_decode(p, avail, a, &in);
            if (!len) {
                a++;   /* data in code: resynchronize, a superset either way */
                continue;
            }
            if (exec32) {
                /* non-PIE: an immediate or a displacement may be an address */
                uint64_t vals[3];
                unsigned nv = x86_insn_constants(p, avail, vals);
                for (unsigned k = 0; k < nv; k++) {
                    put(&g, img, vals[k]);
                    put(&g, img, vals[k] & 0xffffffffu);
                }
            }
            if (in.flags & (XF_RIPREL | XF_OPS_UNKNOWN)) {   /* unknown: perhaps an address, a superset */
                int32_t d;
                memcpy(&d, p + in.disp_off, 4);
                uint64_t to = a + len + (int64_t)d;
                /* a function taking its own start may add offsets to it
                 * (goto *(&&first_label + offset[i])): noted apart */
                put(&g, img, to);
                if (to == sy->funcs[f].start && (!self.n || self.v[self.n - 1] != to))
                    put(&self, img, to);
            }
            a += len;
        }
    }
    /* and those of the code in gaps that no function holds (funcfind.c) */
    for (size_t k = 0; k < sy->found.nrefs; k++)
        if (sy->found.refs[k].address)
            put(&g, img, sy->found.refs[k].target);
    if (g.oom || self.oom) {
        free(g.v);
        free(self.v);
        snprintf(err, errlen, "%s: out of memory indexing code addresses", img->path);
        return -1;
    }
    sort_array(g.v, g.n, sizeof *g.v, cmp_u64);
    t->v = g.v;
    t->n = g.n;
    t->self = self.v;   /* in function order: sorted */
    t->nself = self.n;
    return 0;
}

uint64_t taken_first_inside(const struct taken *t, uint64_t lo, uint64_t hi)
{
    size_t a = LOWER_BOUND(t->n, m, t->v[m] <= lo);   /* the first v > lo */
    return a < t->n && t->v[a] < hi ? t->v[a] : 0;
}

bool taken_self(const struct taken *t, uint64_t start)
{
    size_t a = LOWER_BOUND(t->nself, m, t->self[m] < start);
    return a < t->nself && t->self[a] == start;
}

bool taken_inside(const struct taken *t, uint64_t lo, uint64_t hi)
{
    return taken_first_inside(t, lo, hi) != 0;
}

void taken_free(struct taken *t)
{
    free(t->v);
    free(t->self);
    memset(t, 0, sizeof *t);
}
