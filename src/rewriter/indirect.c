/*
 * The indirect jumps of the functions around probes: a switch's jump
 * table recovered (its targets become refs), a jump proven to land only
 * on a function or on an address the image materializes (taken.c), or an
 * unproven one, which taints its function's family. See doc/analysis.md.
 */
#include "analysis.h"
#include "../arch/isa.h"
#include "kind.h"
#include "../arch/x86/jumptable.h"
#include "../util/array.h"

#include <stdlib.h>
#include <string.h>

/* Is slot a GOT entry? Then a jmp through it is a tail call to a function entry. */
static bool got_slot(const struct image *img, uint64_t slot)
{
    const struct section *s = image_section_at(img, slot);
    return s && (!strcmp(s->name, ".got") || !strcmp(s->name, ".got.plt"));
}

/* The code addresses the image materializes (taken.c), built once. Where
 * its kind allows (user images): a kernel computes addresses in ways this
 * does not see (its tables, alternatives), so there every unproven jump
 * stays one. */
const struct taken *taken_set(struct state *s)
{
    if (!s->img->hooks->taken_proofs || s->taken_state < 0)
        return NULL;
    if (s->taken_state == 0) {
        char e[200];
        s->taken_state = taken_build(&s->taken, s->img, s->sy, e, sizeof e) < 0 ? -1 : 1;
        if (s->taken_state < 0)
            return NULL;
    }
    return &s->taken;
}

/* Does a member of the family of head materialize an address inside a
 * member (or its own start, a base it may add offsets to)? Then a jump it
 * computes may land anywhere in the family. */
static bool family_takes_inside(struct state *s, size_t head)
{
    const struct taken *t = taken_set(s);
    if (!t)
        return true;
    for (size_t j = 0; j < s->sy->nfuncs; j++) {
        const struct func *m = &s->sy->funcs[j];
        if (m->parent == head && (taken_inside(t, m->start, m->end) || taken_self(t, m->start)))
            return true;
    }
    return false;
}

/* The jump table reader's view: bytes of the image, and whether an
 * address lies in the family of the jump's function (a switch table's
 * targets all do: its own labels, or its .cold part's). */
struct jt_ctx {
    const struct image *img;
    const struct symbols *sy;
    size_t head;
};
static const uint8_t *jt_read(void *c, uint64_t vaddr, size_t *avail)
{
    return image_read(((struct jt_ctx *)c)->img, vaddr, avail);
}
static bool jt_is_code(void *c, uint64_t vaddr)
{
    return image_is_exec_addr(((struct jt_ctx *)c)->img, vaddr);
}
static bool in_family(const struct state *s, size_t head, uint64_t vaddr)
{
    const struct func *f = symbols_func_at(s->sy, vaddr);
    return f && f->parent == head;
}

/* Is the frame at insns' address as it was at the function's entry (the
 * CFA where a call leaves it, x86-64: %rsp + 8, by the function's own
 * .eh_frame)? An indirect jump there is a sibling call, as objtool
 * decides. */
static bool frame_at_entry(const struct state *s, uint64_t addr)
{
    struct eh_cfa c = symbols_cfa_at(s->sy, addr);
    return c.known && isa_cfa_at_call_entry(s->img->isa, c.reg, c.off);
}

/* The indirect jumps of one function: recover tables, prove where the
 * others go, or taint the family (every probe there with a DCR of more
 * than one instruction becomes int3). */
int indirect_jumps(struct state *s, size_t fi, const struct x86_insn *insns, size_t n,
                          uint64_t *local, size_t nlocal)
{
    const struct func *fn = &s->sy->funcs[fi];
    bool user = s->img->hooks->taken_proofs, strict = s->taken_state < 0 && user;
    struct jt_ctx jc = { s->img, s->sy, fn->parent };
    sort_array(local, nlocal, sizeof *local, cmp_u64);
    for (size_t k = 0; k < n; k++) {
        if (insns[k].kind != XK_JMP_IND)
            continue;
        struct x86_ijmp_result r;
        x86_indirect_jump(insns, n, k, local, nlocal, jt_read, jt_is_code, &jc, &r);
        bool proven = false;
        if (r.kind == X86_IJMP_TABLE) {
            proven = true;
            for (unsigned e = 0; e < r.entries; e++)
                if (!image_is_exec_addr(s->img, r.targets[e]))
                    proven = false;
            for (unsigned e = 0; proven && e < r.entries; e++) {
                /* entries of a table bounded by its check may be re-pointed.
                 * A table read while its entries land in code may run on
                 * into other tables: of those, only targets in the jump's
                 * own function (or its pieces) can be real ones, as
                 * compilers put no other targets in a switch table */
                if (r.bounded_by_entries && !in_family(s, fn->parent, r.targets[e]))
                    continue;
                struct ref_table t = { r.table + (uint64_t)e * r.width, r.table, (uint8_t)r.width,
                                       r.relative, !r.bounded_by_entries };
                if (!add_ref_table(s, r.targets[e], insns[k].addr, &t)) {
                    free(r.targets);
                    return -1;
                }
            }
            if (proven)
                s->st->jump_tables++;
        } else if (r.kind == X86_IJMP_SLOT) {
            proven = got_slot(s->img, r.slot) || (user && !strict);
        } else if (r.kind == X86_IJMP_LOAD && user && !strict) {
            /* a pointer loaded from memory: an address the image materializes
             * (checked against every DCR: judge) */
            proven = true;
            s->st->ijmp_load++;
        }
        /* IBT images: a tracked indirect jump can only land on an endbr64,
         * and every endbr64 is already a target (see decode_function). */
        if (!proven && s->img->ibt && !(insns[k].flags & XF_NOTRACK))
            proven = true;
        free(r.targets);
        if (!proven && user && !strict && r.kind == X86_IJMP_UNKNOWN && !r.arith &&
            frame_at_entry(s, insns[k].addr)) {
            proven = true;   /* a tail call: its target is a function (or any taken address) */
            s->st->ijmp_tail++;
        }
        if (!proven && user && !strict && !family_takes_inside(s, fn->parent)) {
            /* no base to compute from: it lands on a taken address */
            proven = true;
            s->st->ijmp_outside++;
        }
        if (!proven) {
            s->st->ijmp_unknown++;
            if (!s->taint[fn->parent])
                s->taint[fn->parent] = insns[k].addr;
        }
    }
    return 0;
}
