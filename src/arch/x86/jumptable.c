/* Jump-table recovery for the switch patterns gcc and clang emit on x86-64. */
#include "jumptable.h"
#include "../../util/array.h"

#include "zydis.h"

#include <stdlib.h>
#include <string.h>

#define SCAN_LIMIT 24        /* instructions walked back from the jump */
#define MAX_ENTRIES 65536    /* a larger "table" is not a switch */

struct full {
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

static bool decode_full(const struct x86_insn *in, x86_read_fn read, void *ctx, struct full *f)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecoderContext dctx;
    size_t avail = 0;
    const uint8_t *p = read(ctx, in->addr, &avail);

    return p && ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &dctx, p, avail, &f->zi)) &&
           ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, &dctx, &f->zi, f->ops, f->zi.operand_count));
}

static ZydisRegister big(ZydisRegister r)
{
    ZydisRegister e = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    return e == ZYDIS_REGISTER_NONE ? r : e;
}

/* Does f write (any part of) register r? */
static bool writes(const struct full *f, ZydisRegister r)
{
    for (unsigned i = 0; i < f->zi.operand_count; i++)
        if (f->ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            (f->ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && big(f->ops[i].reg.value) == r)
            return true;
    return false;
}

static bool is_reg(const ZydisDecodedOperand *op, ZydisRegister r)
{
    return op->type == ZYDIS_OPERAND_TYPE_REGISTER && big(op->reg.value) == r;
}

static bool has_target_in(const uint64_t *t, size_t n, uint64_t lo, uint64_t hi)
{
    /* any t with lo < t <= hi */
    size_t a = LOWER_BOUND(n, m, t[m] <= lo);
    return a < n && t[a] <= hi;
}

/* Absolute address of a RIP-relative memory operand of in. */
static bool rip_slot(const ZydisDecodedOperand *op, const struct x86_insn *in, uint64_t *addr)
{
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.base != ZYDIS_REGISTER_RIP ||
        op->mem.index != ZYDIS_REGISTER_NONE)
        return false;
    *addr = in->addr + in->len + (uint64_t)op->mem.disp.value;
    return true;
}

/* A memory operand the index was loaded from: base + index * scale + disp,
 * a RIP-relative one by its absolute address. */
struct memop {
    ZydisRegister base, index;
    uint8_t scale;
    int64_t disp;            /* the absolute address when base is RIP */
};

static bool memop_of(const ZydisDecodedOperand *op, const struct x86_insn *in, struct memop *m)
{
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.segment == ZYDIS_REGISTER_FS ||
        op->mem.segment == ZYDIS_REGISTER_GS)
        return false;
    m->base = op->mem.base == ZYDIS_REGISTER_NONE ? ZYDIS_REGISTER_NONE : big(op->mem.base);
    m->index = op->mem.index == ZYDIS_REGISTER_NONE ? ZYDIS_REGISTER_NONE : big(op->mem.index);
    m->scale = op->mem.index == ZYDIS_REGISTER_NONE ? 0 : op->mem.scale;
    m->disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0;
    if (m->base == ZYDIS_REGISTER_RIP) {
        if (m->index != ZYDIS_REGISTER_NONE)
            return false;
        m->disp = (int64_t)(in->addr + in->len + (uint64_t)m->disp);
    }
    return m->base != ZYDIS_REGISTER_RSP;   /* pushes and calls move it */
}

static bool same_mem(const struct x86_insn *in, const ZydisDecodedOperand *op, const struct memop *m)
{
    struct memop o;
    return memop_of(op, in, &o) && o.base == m->base && o.index == m->index && o.scale == m->scale &&
           o.disp == m->disp;
}

struct bstate {
    ZydisRegister idx;      /* register holding the index */
    unsigned width;         /* zero-extended from this many bits (0: no) */
    struct memop mem;       /* the index was loaded from this memory operand */
    bool have_mem;
    ZydisMnemonic guard;    /* the unsigned jcc seen, waiting for its cmp */
};

/* Is f a copy that the bound may be read through: mov/movzx/movsxd from a
 * register (follow it), or a load from memory (compare that)? */
static bool copies_index(const struct full *f, const struct x86_insn *in, struct bstate *st)
{
    ZydisMnemonic m = f->zi.mnemonic;
    const ZydisDecodedOperand *src = &f->ops[1];
    if (f->ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || st->have_mem)
        return false;
    if (src->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (m == ZYDIS_MNEMONIC_MOVZX) {
            st->width = src->size;
        } else if (m == ZYDIS_MNEMONIC_MOVSXD || (m == ZYDIS_MNEMONIC_MOV && f->ops[0].size >= 32 &&
                                                   src->size == f->ops[0].size)) {
            /* same value for any index the unsigned check lets through */
        } else {
            return false;
        }
        st->idx = big(src->reg.value);
        return true;
    }
    if ((m == ZYDIS_MNEMONIC_MOV && f->ops[0].size >= 32) || m == ZYDIS_MNEMONIC_MOVZX) {
        if (!memop_of(src, in, &st->mem))
            return false;
        if (m == ZYDIS_MNEMONIC_MOVZX)
            st->width = src->size;
        st->have_mem = true;
        return true;
    }
    return false;
}

/* Does f write a register the memory operand is addressed through? */
static bool moves_mem(const struct full *f, const struct memop *m)
{
    return (m->base != ZYDIS_REGISTER_NONE && m->base != ZYDIS_REGISTER_RIP && writes(f, m->base)) ||
           (m->index != ZYDIS_REGISTER_NONE && writes(f, m->index));
}

static unsigned bound_from(const struct x86_insn *insns, size_t n, size_t i, struct bstate st,
                           const uint64_t *targets, size_t ntargets, x86_read_fn read, void *ctx,
                           int depth, bool skip_first);

/* A count with this bit is an upper bound on the index, not the table's
 * size (the table may be shorter: a superset of its entries is read) */
#define LOOSE 0x80000000u

/* When no check is found: an index zero-extended from a narrow register
 * on the way to the load (movzbl %sil,%eax) is below 2^width wherever it
 * came from (CPython's opcode dispatch: 256 entries). */
static unsigned width_bound(const struct bstate *st)
{
    return st->width && st->width <= 16 ? (1u << st->width) | LOOSE : 0;
}

/* Control reaches insns[i] from several places: the bound must hold on
 * every way in. Returns the largest proven count, or 0. */
static unsigned bound_at_merge(const struct x86_insn *insns, size_t n, size_t i, struct bstate st,
                               const uint64_t *targets, size_t ntargets, x86_read_fn read, void *ctx,
                               int depth)
{
    unsigned best = 0;
    struct full g;
    for (size_t k = 0; k < n; k++) {
        if ((insns[k].kind != XK_JCC && insns[k].kind != XK_JMP) || insns[k].target != insns[i].addr)
            continue;
        if (!decode_full(&insns[k], read, ctx, &g))
            return 0;
        struct bstate in = st;
        if (insns[k].kind == XK_JCC) {
            /* jbe/jb taken = in range: the same check, inverted */
            if (g.zi.mnemonic != ZYDIS_MNEMONIC_JBE && g.zi.mnemonic != ZYDIS_MNEMONIC_JB)
                return 0;
            in.guard = g.zi.mnemonic;
        }
        unsigned r = bound_from(insns, n, k, in, targets, ntargets, read, ctx, depth + 1, false);
        if (!r)
            return 0;
        if ((r & ~LOOSE) > (best & ~LOOSE))
            best = (r & ~LOOSE) | (best & LOOSE);
        best |= r & LOOSE;
    }
    if (i > 0 && !x86_ends_flow(&insns[i - 1])) {
        unsigned r = bound_from(insns, n, i, st, targets, ntargets, read, ctx, depth + 1, true);
        if (!r)
            return 0;
        if ((r & ~LOOSE) > (best & ~LOOSE))
            best = (r & ~LOOSE) | (best & LOOSE);
        best |= r & LOOSE;
    }
    return best;
}

/* Number of table entries proven by a `cmp $N,%idx` + unsigned jcc on every
 * path reaching insns[i] with the index in st.idx; 0 when unproven.
 * skip_first: insns[i] was already treated as a merge point. */
static unsigned bound_from(const struct x86_insn *insns, size_t n, size_t i, struct bstate st,
                           const uint64_t *targets, size_t ntargets, x86_read_fn read, void *ctx,
                           int depth, bool skip_first)
{
    if (depth > 4)
        return 0;
    for (int steps = 0; steps < SCAN_LIMIT; steps++) {
        if (!(skip_first && steps == 0) && i < n &&
            has_target_in(targets, ntargets, insns[i].addr - 1, insns[i].addr)) {
            if (width_bound(&st))
                return width_bound(&st);   /* bounded whatever the way in */
            if (st.guard != ZYDIS_MNEMONIC_INVALID)
                return 0;   /* another path joins between the check and its jcc */
            return bound_at_merge(insns, n, i, st, targets, ntargets, read, ctx, depth);
        }
        if (i == 0)
            return width_bound(&st);
        i--;
        struct full f;
        if (!decode_full(&insns[i], read, ctx, &f))
            return width_bound(&st);
        ZydisMnemonic m = f.zi.mnemonic;
        if (insns[i].kind == XK_JCC) {
            if (st.guard != ZYDIS_MNEMONIC_INVALID)
                continue;   /* jcc do not change flags */
            if (m == ZYDIS_MNEMONIC_JNBE || m == ZYDIS_MNEMONIC_JNB) {
                st.guard = m;
                continue;
            }
            return width_bound(&st);
        }
        if (x86_ends_flow(&insns[i]))
            return width_bound(&st);
        if (st.have_mem && (insns[i].kind == XK_CALL || insns[i].kind == XK_CALL_IND))
            return 0;   /* a call may change the memory slot between check and load */
        bool same = st.have_mem ? same_mem(&insns[i], &f.ops[0], &st.mem) : is_reg(&f.ops[0], st.idx);
        if (m == ZYDIS_MNEMONIC_CMP && same && f.ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
            st.guard != ZYDIS_MNEMONIC_INVALID) {
            uint64_t imm = f.ops[1].imm.value.u;
            if (f.ops[0].size < 64)
                imm &= (1ull << f.ops[0].size) - 1;
            if (imm >= MAX_ENTRIES)
                return 0;
            uint64_t count;
            switch (st.guard) {
            case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_JBE: count = imm + 1; break; /* ja / jbe */
            case ZYDIS_MNEMONIC_JNB:  case ZYDIS_MNEMONIC_JB:  count = imm; break;     /* jae / jb */
            default: return 0;
            }
            /* A zero-extended narrow copy cannot exceed its width. */
            if (st.width && st.width < 32 && count > (1ull << st.width))
                count = 1ull << st.width;
            return (unsigned)count;
        }
        if (st.guard != ZYDIS_MNEMONIC_INVALID && f.zi.cpu_flags &&
            (f.zi.cpu_flags->modified | f.zi.cpu_flags->set_0 | f.zi.cpu_flags->set_1 | f.zi.cpu_flags->undefined))
            return width_bound(&st);   /* something else set the flags the jcc tested */
        if (!st.have_mem && !writes(&f, st.idx))
            continue;
        if (st.have_mem) {
            for (unsigned o = 0; o < f.zi.operand_count; o++)
                if (f.ops[o].type == ZYDIS_OPERAND_TYPE_MEMORY && (f.ops[o].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
                    return width_bound(&st);   /* a store, possibly to the slot */
            if (f.zi.mnemonic == ZYDIS_MNEMONIC_PUSH || moves_mem(&f, &st.mem))
                return width_bound(&st);   /* another slot from here back */
            continue;
        }
        if (st.guard == ZYDIS_MNEMONIC_INVALID && copies_index(&f, &insns[i], &st)) {
            if (st.have_mem && width_bound(&st))
                return width_bound(&st);   /* movzbl (mem),%eI: below 2^8 */
            continue;   /* the index is a copy of another register or a memory slot */
        }
        if (m == ZYDIS_MNEMONIC_MOV && f.ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            f.ops[0].size == 32 && f.ops[1].size == 32 && big(f.ops[1].reg.value) == st.idx)
            continue;   /* mov %eI,%eI only clears the high half */
        return width_bound(&st);   /* the index changed in a way we do not follow */
    }
    return width_bound(&st);
}

static unsigned find_bound(const struct x86_insn *insns, size_t n, size_t from, ZydisRegister idx,
                           const uint64_t *targets, size_t ntargets, x86_read_fn read, void *ctx)
{
    struct bstate st = { .idx = idx, .guard = ZYDIS_MNEMONIC_INVALID };
    return bound_from(insns, n, from, st, targets, ntargets, read, ctx, 0, false);
}

static bool callee_saved(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_RBX || r == ZYDIS_REGISTER_RBP || r == ZYDIS_REGISTER_R12 ||
           r == ZYDIS_REGISTER_R13 || r == ZYDIS_REGISTER_R14 || r == ZYDIS_REGISTER_R15;
}

/* Walk back from insns[idx] for the instruction that last wrote reg;
 * returns its index or n, and fills f. */
static size_t def_of(const struct x86_insn *insns, size_t n, size_t idx, ZydisRegister reg,
                     x86_read_fn read, void *ctx, struct full *f)
{
    for (size_t i = idx, steps = 0; i > 0 && steps < SCAN_LIMIT; steps++) {
        i--;
        if (x86_ends_flow(&insns[i]) || !decode_full(&insns[i], read, ctx, f))
            return n;
        if ((insns[i].kind == XK_CALL || insns[i].kind == XK_CALL_IND) && !callee_saved(reg))
            return n;   /* the call wrote it: a result from elsewhere */
        if (writes(f, reg))
            return i;
    }
    return n;
}

/* The same, but n also when another path joins between the definition and
 * insns[idx] (a local branch target in (def, idx]): the value may come from
 * there too. */
static size_t sole_path_def(const struct x86_insn *insns, size_t n, size_t idx, ZydisRegister reg,
                            const uint64_t *targets, size_t ntargets, x86_read_fn read, void *ctx,
                            struct full *f)
{
    size_t d = def_of(insns, n, idx, reg, read, ctx, f);
    if (d == n || has_target_in(targets, ntargets, insns[d].addr, insns[idx].addr))
        return n;
    return d;
}

/* The only instruction of the function that writes reg, or n when there
 * are none or several. A register written once (gcc hoists the table base
 * into a callee-saved register at entry) holds that value everywhere after. */
static size_t sole_def(const struct x86_insn *insns, size_t n, ZydisRegister reg, x86_read_fn read,
                       void *ctx, struct full *f)
{
    size_t found = n;
    struct full g;
    for (size_t i = 0; i < n; i++) {
        if (insns[i].kind == XK_CALL || insns[i].kind == XK_CALL_IND) {
            /* calls clobber the caller-saved registers */
            if (reg != ZYDIS_REGISTER_RBX && reg != ZYDIS_REGISTER_RBP && reg != ZYDIS_REGISTER_R12 &&
                reg != ZYDIS_REGISTER_R13 && reg != ZYDIS_REGISTER_R14 && reg != ZYDIS_REGISTER_R15)
                return n;
            continue;
        }
        if (!decode_full(&insns[i], read, ctx, &g))
            return n;
        if (g.zi.mnemonic == ZYDIS_MNEMONIC_PUSH || g.zi.mnemonic == ZYDIS_MNEMONIC_POP)
            continue;   /* saving/restoring the caller's value in prologue/epilogue */
        if (writes(&g, reg)) {
            if (found != n)
                return n;
            found = i;
            *f = g;
        }
    }
    return found;
}

static void read_table(const struct x86_insn *insns, size_t n, size_t load, ZydisRegister idx,
                       uint64_t table, unsigned width, bool relative,
                       const uint64_t *targets, size_t ntargets, x86_read_fn read, x86_is_code_fn is_code,
                       void *ctx, struct x86_ijmp_result *res)
{
    unsigned entries = find_bound(insns, n, load, idx, targets, ntargets, read, ctx);
    size_t avail = 0;
    const uint8_t *p = read(ctx, table, &avail);
    unsigned limit = MAX_ENTRIES;
    if (entries & LOOSE) {
        /* the index is below this, the table perhaps shorter: read it as
         * if no bound were known, up to that many */
        limit = entries & ~LOOSE;
        entries = 0;
    }

    if (entries == 0 && p) {
        /* No bound check found (the index was spilled, or masked): the
         * table is taken to run while its entries land in code. A real
         * table's entries all do (its function's labels, or its .cold
         * part's) and the index counts from the table's base, so the
         * entries read are all of them and perhaps more: a superset of the
         * targets, which only makes the analysis more careful. A run that
         * never ends (MAX_ENTRIES) proves nothing. */
        while (entries < limit && (size_t)(entries + 1) * width <= avail) {
            uint64_t t;
            if (relative) {
                int32_t v;
                memcpy(&v, p + (size_t)entries * 4, 4);
                t = table + (int64_t)v;
            } else {
                memcpy(&t, p + (size_t)entries * 8, 8);
            }
            if (!is_code(ctx, t))
                break;
            entries++;
        }
        if (entries == MAX_ENTRIES)
            entries = 0;
        res->bounded_by_entries = entries > 0;
    }
    if (entries == 0) {
        res->why = "no bound check on the table index";
        return;
    }
    if (!p || avail / width < entries) {
        res->why = "jump table outside the image";
        return;
    }
    res->targets = malloc(entries * sizeof *res->targets);
    if (!res->targets) {
        res->why = "out of memory";
        return;
    }
    for (unsigned e = 0; e < entries; e++) {
        if (relative) {
            int32_t v;
            memcpy(&v, p + (size_t)e * 4, 4);
            res->targets[e] = table + (int64_t)v;
        } else {
            memcpy(&res->targets[e], p + (size_t)e * 8, 8);
        }
    }
    res->kind = X86_IJMP_TABLE;
    res->table = table;
    res->entries = entries;
    res->width = width;
    res->relative = relative;
}

void x86_indirect_jump(const struct x86_insn *insns, size_t n, size_t idx,
                       const uint64_t *targets, size_t ntargets,
                       x86_read_fn read, x86_is_code_fn is_code, void *ctx, struct x86_ijmp_result *res)
{
    struct full j, a, l, b;

    memset(res, 0, sizeof *res);
    res->kind = X86_IJMP_UNKNOWN;
    res->why = "unrecognised indirect jump";
    if (!decode_full(&insns[idx], read, ctx, &j))
        return;
    const ZydisDecodedOperand *op = &j.ops[0];

    if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
        if (op->mem.base == ZYDIS_REGISTER_RIP && op->mem.index == ZYDIS_REGISTER_NONE) {
            res->kind = X86_IJMP_SLOT;
            res->slot = insns[idx].addr + insns[idx].len + (uint64_t)op->mem.disp.value;
            return;
        }
        if (op->mem.base == ZYDIS_REGISTER_NONE && op->mem.index != ZYDIS_REGISTER_NONE &&
            op->mem.scale == 8) {
            read_table(insns, n, idx, big(op->mem.index), (uint64_t)op->mem.disp.value, 8, false,
                       targets, ntargets, read, is_code, ctx, res);
            return;
        }
        /* jmp *(%r14), jmp *8(%rax,%rcx,8): a pointer read from memory */
        res->kind = X86_IJMP_LOAD;
        return;
    }
    if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
        return;
    ZydisRegister ra = big(op->reg.value);
    size_t ia = n;
    /* through register copies (mov %rX,%rA) to where the value is made */
    for (int hops = 0, at = (int)idx; hops < 4; hops++) {
        ia = sole_path_def(insns, n, (size_t)at, ra, targets, ntargets, read, ctx, &a);
        if (ia == n || a.zi.mnemonic != ZYDIS_MNEMONIC_MOV || a.ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER ||
            a.ops[0].size != 64)
            break;
        ra = big(a.ops[1].reg.value);
        at = (int)ia;
    }
    if (ia == n) {
        res->outside = true;
        res->why = "the target comes from outside the jump's block";
        return;
    }
    /* mov SLOT(%rip),%rA; ...; jmp *%rA: a tail call through a pointer slot */
    uint64_t slot;
    if (a.zi.mnemonic == ZYDIS_MNEMONIC_MOV && rip_slot(&a.ops[1], &insns[ia], &slot)) {
        res->kind = X86_IJMP_SLOT;
        res->slot = slot;
        return;
    }
    /* mov T(,%rI,8),%rA */
    if (a.zi.mnemonic == ZYDIS_MNEMONIC_MOV && a.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        a.ops[1].mem.base == ZYDIS_REGISTER_NONE && a.ops[1].mem.scale == 8) {
        read_table(insns, n, ia, big(a.ops[1].mem.index), (uint64_t)a.ops[1].mem.disp.value, 8,
                   false, targets, ntargets, read, is_code, ctx, res);
        return;
    }
    /* mov 0x18(%rdi),%rA; pop %rA; lea X(%rip),%rA: a pointer, a return
     * address, a constant -- an address that is materialized somewhere */
    if ((a.zi.mnemonic == ZYDIS_MNEMONIC_MOV && a.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
         a.ops[0].size == 64) ||
        a.zi.mnemonic == ZYDIS_MNEMONIC_POP ||
        (a.zi.mnemonic == ZYDIS_MNEMONIC_LEA && a.ops[1].mem.base == ZYDIS_REGISTER_RIP &&
         a.ops[1].mem.index == ZYDIS_REGISTER_NONE)) {
        res->kind = X86_IJMP_LOAD;
        return;
    }
    res->arith = true;
    res->why = "the target is computed";
    /* add %rB,%rA  <-  movslq (%rB,%rI,4),%rA  <-  lea T(%rip),%rB */
    if (a.zi.mnemonic != ZYDIS_MNEMONIC_ADD || !is_reg(&a.ops[0], ra) ||
        a.ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
        return;
    ZydisRegister rb = big(a.ops[1].reg.value);
    size_t il = def_of(insns, n, ia, ra, read, ctx, &l);
    if (il == n || l.zi.mnemonic != ZYDIS_MNEMONIC_MOVSXD || l.ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
        big(l.ops[1].mem.base) != rb || l.ops[1].mem.scale != 4 || l.ops[1].mem.disp.value != 0)
        return;
    size_t ib = def_of(insns, n, ia, rb, read, ctx, &b);
    if (ib == n)
        ib = sole_def(insns, n, rb, read, ctx, &b);   /* base hoisted out of a loop */
    if (ib == n || b.zi.mnemonic != ZYDIS_MNEMONIC_LEA || b.ops[1].mem.base != ZYDIS_REGISTER_RIP ||
        b.ops[1].mem.index != ZYDIS_REGISTER_NONE)
        return;
    uint64_t table = insns[ib].addr + insns[ib].len + (uint64_t)b.ops[1].mem.disp.value;
    read_table(insns, n, il, big(l.ops[1].mem.index), table, 4, true,
               targets, ntargets, read, is_code, ctx, res);
}
