/*
 * reloc-check: does a sequence of copied instructions emulate a call?
 *
 * A tiny symbolic evaluation: every general register starts as its own
 * value at the copy's start (%rax0 ... %r15), flags as "untouched", memory
 * as unknown. Values are linear sums (constant + registers + "load base"
 * for addresses computed from %rip) or "the word at ADDRESS" as it was
 * before the sequence. The sequence must end in a jmp (or ret) whose
 * target is the call's, with %rsp = %rsp0 - 8, the word there the
 * original return address, every other register as it was, the flags
 * untouched and nothing written at or above %rsp0 (the caller's frame) or
 * anywhere but the stack. Only the instructions such a sequence needs are
 * understood (lea, mov, push, pop, xchg, add/sub, pushf/popf, nop, jmp,
 * ret); anything else is reported as not followed rather than guessed.
 */
#include "rc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NR 16

struct lin {                 /* c + pc * load_base + sum k[r] * r0 */
    int64_t c;
    int8_t pc;
    int8_t k[NR];
};
enum vkind { V_UNK, V_LIN, V_LOAD, V_FLAGS };
struct val {
    enum vkind kind;
    struct lin l;            /* V_LIN: the value; V_LOAD: the address read */
    int seg;                 /* V_LOAD: 0 flat, 1 %fs, 2 %gs */
    int size;                /* V_LOAD: bytes */
};
struct store {
    struct lin ea;
    int seg, size;
    struct val v;
};
struct st {
    struct val reg[NR];
    bool flags_clobbered;
    struct store s[64];
    int ns;
    const struct callsim_expect *x;
    struct callsim_result *res;
};

static void problem(struct callsim_result *res, enum rule rule, const char *f, ...)
{
    char text[sizeof res->problem[0].text];
    va_list ap;
    va_start(ap, f);
    vsnprintf(text, sizeof text, f, ap);
    va_end(ap);
    for (unsigned i = 0; i < res->nproblems; i++)
        if (res->problem[i].rule == rule && strcmp(res->problem[i].text, text) == 0)
            return;
    if (res->nproblems == CS_MAX_PROBLEMS)
        return;
    res->problem[res->nproblems].rule = rule;
    memcpy(res->problem[res->nproblems].text, text, sizeof text);
    res->nproblems++;
}

static struct lin lconst(int64_t c, int pc)
{
    struct lin l;
    memset(&l, 0, sizeof l);
    l.c = c;
    l.pc = (int8_t)pc;
    return l;
}
static struct lin lreg(int r, int64_t c)
{
    struct lin l = lconst(c, 0);
    l.k[r] = 1;
    return l;
}
static struct val vlin(struct lin l)
{
    struct val v;
    memset(&v, 0, sizeof v);
    v.kind = V_LIN;
    v.l = l;
    return v;
}
static struct val vunk(void)
{
    struct val v;
    memset(&v, 0, sizeof v);
    return v;
}
static struct lin ladd(struct lin a, struct lin b, int sb)
{
    a.c += sb * b.c;
    a.pc = (int8_t)(a.pc + sb * b.pc);
    for (int r = 0; r < NR; r++)
        a.k[r] = (int8_t)(a.k[r] + sb * b.k[r]);
    return a;
}
static struct lin lscale(struct lin a, int s)
{
    a.c *= s;
    a.pc = (int8_t)(a.pc * s);
    for (int r = 0; r < NR; r++)
        a.k[r] = (int8_t)(a.k[r] * s);
    return a;
}
static bool lsame_base(const struct lin *a, const struct lin *b)
{
    return a->pc == b->pc && memcmp(a->k, b->k, sizeof a->k) == 0;
}
/* Equal values. In a fixed-address image (!pic) the load base is 0: an
 * immediate equals an address computed from %rip. */
static bool leq(const struct lin *a, const struct lin *b, bool pic)
{
    return a->c == b->c && memcmp(a->k, b->k, sizeof a->k) == 0 && (!pic || a->pc == b->pc);
}
static bool veq(const struct val *a, const struct val *b, bool pic)
{
    if (a->kind != b->kind || a->kind == V_UNK)
        return false;
    if (a->kind == V_FLAGS)
        return true;
    if (a->kind == V_LOAD && (a->seg != b->seg || a->size != b->size))
        return false;
    return leq(&a->l, &b->l, pic);
}
static bool is_stack(const struct lin *l)
{
    for (int r = 0; r < NR; r++)
        if (l->k[r] != (r == RC_RSP))
            return false;
    return l->pc == 0;
}

static void ldesc(const struct lin *l, char *b, size_t n)
{
    size_t u = 0;
    bool any = false;
    b[0] = 0;
    for (int r = 0; r < NR && u < n; r++) {
        if (!l->k[r])
            continue;
        if (l->k[r] == 1)
            u += snprintf(b + u, n - u, "%s%%%s0", any ? "+" : "", rc_gpr_name[r]);
        else
            u += snprintf(b + u, n - u, "%s%d*%%%s0", any ? "+" : "", l->k[r], rc_gpr_name[r]);
        any = true;
    }
    if (u >= n)
        return;
    if (!any && l->pc == 1)
        snprintf(b + u, n - u, "0x%llx", (unsigned long long)l->c);
    else if (!any && l->pc == 0)
        snprintf(b + u, n - u, "$0x%llx", (unsigned long long)l->c);
    else {
        if (l->pc)
            u += snprintf(b + u, n - u, "%+d*base", l->pc);
        if (l->c && u < n)
            snprintf(b + u, n - u, "%+lld", (long long)l->c);
    }
}
static void vdesc(const struct val *v, char *b, size_t n)
{
    char t[96];
    switch (v->kind) {
    case V_UNK: snprintf(b, n, "unknown"); break;
    case V_FLAGS: snprintf(b, n, "the flags"); break;
    case V_LIN: ldesc(&v->l, b, n); break;
    case V_LOAD:
        ldesc(&v->l, t, sizeof t);
        snprintf(b, n, "%s[%s]%s", v->seg == 1 ? "%fs:" : v->seg == 2 ? "%gs:" : "", t,
                 v->size == 8 ? "" : v->size == 4 ? "(4 bytes)" : "(part)");
        break;
    }
}

static int seg_of(ZydisRegister s)
{
    return s == ZYDIS_REGISTER_FS ? 1 : s == ZYDIS_REGISTER_GS ? 2 : 0;
}

/* The effective address of a memory operand in state S (the instruction ends at next). */
static bool ea_of(const struct st *S, const ZydisDecodedOperand *o, uint64_t next, struct lin *ea, int *seg)
{
    if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.type == ZYDIS_MEMOP_TYPE_VSIB)
        return false;
    *seg = seg_of(o->mem.segment);
    int64_t disp = o->mem.disp.value;
    if (o->mem.base == ZYDIS_REGISTER_RIP) {
        *ea = lconst((int64_t)(next + (uint64_t)disp), 1);
    } else if (o->mem.base == ZYDIS_REGISTER_NONE) {
        *ea = lconst(disp, 0);
    } else {
        int b = rc_gpr64(o->mem.base);
        if (b < 0 || S->reg[b].kind != V_LIN)
            return false;
        *ea = S->reg[b].l;
        ea->c += disp;
    }
    if (o->mem.index != ZYDIS_REGISTER_NONE) {
        int i = rc_gpr64(o->mem.index);
        if (i < 0 || S->reg[i].kind != V_LIN)
            return false;
        *ea = ladd(*ea, lscale(S->reg[i].l, o->mem.scale ? o->mem.scale : 1), 1);
    }
    return true;
}

static struct val load(struct st *S, struct lin ea, int seg, int size)
{
    for (int i = S->ns; i-- > 0;) {
        const struct store *s = &S->s[i];
        if (s->seg != seg || !lsame_base(&s->ea, &ea))
            continue;   /* other bases: assumed apart (stores off the stack are reported anyway) */
        if (s->ea.c == ea.c && s->size == size)
            return s->v;
        if (s->ea.c < ea.c + size && ea.c < s->ea.c + s->size)
            return vunk();   /* part of a stored value */
    }
    /* a word of read-only memory of a fixed-address image: its value */
    const struct callsim_expect *x = S->x;
    bool cst = ea.pc <= 1 && seg == 0;
    for (int r = 0; r < NR; r++)
        cst &= ea.k[r] == 0;
    if (cst && !x->pic && x->read_const && size == 8) {
        size_t avail = 0;
        const uint8_t *p = x->read_const(x->ctx, (uint64_t)ea.c, &avail);
        if (p && avail >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            return vlin(lconst((int64_t)w, 0));
        }
    }
    struct val v = vunk();
    v.kind = V_LOAD;
    v.l = ea;
    v.seg = seg;
    v.size = size;
    return v;
}

static void store(struct st *S, struct lin ea, int seg, int size, struct val v, const char *text)
{
    char d[96];
    ldesc(&ea, d, sizeof d);
    if (seg || !is_stack(&ea))
        problem(S->res, R_CALL_STATE, "'%s' writes %s, outside the stack", text, d);
    else if (ea.c + size > 0)
        problem(S->res, R_CALL_STATE, "'%s' writes %s, the caller's frame (a call writes only %%rsp0-8)", text, d);
    else if (S->reg[RC_RSP].kind == V_LIN && is_stack(&S->reg[RC_RSP].l) && ea.c < S->reg[RC_RSP].l.c - 128)
        problem(S->res, R_CALL_STATE, "'%s' writes %s, below the red zone (a signal may overwrite it)", text, d);
    if (S->ns == (int)(sizeof S->s / sizeof S->s[0])) {
        problem(S->res, R_CALL_STATE, "too many stores to follow");
        return;
    }
    S->s[S->ns++] = (struct store){ ea, seg, size, v };
}

/* The value of a source operand of size bits (immediates sign-extended to it). */
static bool operand_val(struct st *S, const struct insn *in, const ZydisDecodedOperand *o, int size, struct val *v)
{
    uint64_t next = in->addr + in->zi.length;
    switch (o->type) {
    case ZYDIS_OPERAND_TYPE_REGISTER: {
        int g = rc_gpr64(o->reg.value);
        if (g < 0 || size != 64)
            return false;
        *v = S->reg[g];
        return true;
    }
    case ZYDIS_OPERAND_TYPE_IMMEDIATE: {
        int64_t c = o->imm.is_signed ? o->imm.value.s : (int64_t)o->imm.value.u;
        if (size == 32)
            c = (int64_t)(uint32_t)c;
        *v = vlin(lconst(c, 0));
        return size == 64 || size == 32;
    }
    case ZYDIS_OPERAND_TYPE_MEMORY: {
        struct lin ea;
        int seg;
        if (!ea_of(S, o, next, &ea, &seg))
            *v = vunk();
        else
            *v = load(S, ea, seg, size / 8);
        return true;
    }
    default:
        return false;
    }
}

static bool rsp_add(struct st *S, int64_t d)
{
    if (S->reg[RC_RSP].kind != V_LIN)
        return false;
    S->reg[RC_RSP].l.c += d;
    return true;
}

static bool writes_flags(const ZydisDecodedInstruction *zi)
{
    const ZydisAccessedFlags *f = zi->cpu_flags;
    return f && (f->modified | f->set_0 | f->set_1 | f->undefined);
}

/* One instruction. Returns false when it cannot be followed; sets *done
 * and *target at the jmp or ret that ends the sequence. */
static bool step(struct st *S, const struct insn *in, const char *text, bool *done, struct val *target)
{
    const ZydisDecodedInstruction *zi = &in->zi;
    const ZydisDecodedOperand *o = in->op;
    uint64_t next = in->addr + zi->length;
    struct lin ea;
    int seg;
    struct val v;
    switch (zi->mnemonic) {
    case ZYDIS_MNEMONIC_NOP:
    case ZYDIS_MNEMONIC_ENDBR64:
        return true;
    case ZYDIS_MNEMONIC_LEA: {
        int g = rc_gpr_any(o[0].reg.value);
        if (g < 0)
            return false;
        if (o[0].size == 64 && zi->address_width == 64 && ea_of(S, &o[1], next, &ea, &seg) && seg == 0)
            S->reg[g] = vlin(ea);
        else
            S->reg[g] = vunk();
        return true;
    }
    case ZYDIS_MNEMONIC_MOV:
        if (o[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
            int g = rc_gpr_any(o[0].reg.value);
            if (g < 0)
                return false;
            if ((o[0].size == 64 || o[0].size == 32) && operand_val(S, in, &o[1], o[0].size, &v)) {
                if (o[0].size == 32 && !(v.kind == V_LIN && !v.l.pc && lsame_base(&v.l, &(struct lin){ 0 })))
                    v = vunk();   /* a 32-bit write zero-extends: only constants are followed */
                S->reg[g] = v;
            } else {
                S->reg[g] = vunk();
            }
            return true;
        }
        if (o[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
            if (!operand_val(S, in, &o[1], o[0].size, &v))
                v = vunk();
            if (!ea_of(S, &o[0], next, &ea, &seg)) {
                problem(S->res, R_CALL_STATE, "'%s' writes memory at an address not followed", text);
                return false;
            }
            store(S, ea, seg, o[0].size / 8, v, text);
            return true;
        }
        return false;
    case ZYDIS_MNEMONIC_PUSH:
        if (zi->operand_width != 64 || !operand_val(S, in, &o[0], 64, &v))
            return false;
        if (!rsp_add(S, -8))
            return false;
        store(S, S->reg[RC_RSP].l, 0, 8, v, text);
        return true;
    case ZYDIS_MNEMONIC_PUSHFQ:
        if (!rsp_add(S, -8))
            return false;
        v = vunk();
        if (!S->flags_clobbered)
            v.kind = V_FLAGS;
        store(S, S->reg[RC_RSP].l, 0, 8, v, text);
        return true;
    case ZYDIS_MNEMONIC_POP:
    case ZYDIS_MNEMONIC_POPFQ:
        if (zi->operand_width != 64 || S->reg[RC_RSP].kind != V_LIN)
            return false;
        v = load(S, S->reg[RC_RSP].l, 0, 8);
        rsp_add(S, 8);
        if (zi->mnemonic == ZYDIS_MNEMONIC_POPFQ) {
            S->flags_clobbered = v.kind != V_FLAGS;
            return true;
        }
        if (o[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
            int g = rc_gpr64(o[0].reg.value);
            if (g < 0)
                return false;
            S->reg[g] = v;
            return true;
        }
        if (o[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {   /* the address after the pop */
            if (!ea_of(S, &o[0], next, &ea, &seg)) {
                problem(S->res, R_CALL_STATE, "'%s' writes memory at an address not followed", text);
                return false;
            }
            store(S, ea, seg, 8, v, text);
            return true;
        }
        return false;
    case ZYDIS_MNEMONIC_XCHG: {
        if (o[0].size != 64)
            return false;
        int a = o[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? rc_gpr64(o[0].reg.value) : -1;
        int b = o[1].type == ZYDIS_OPERAND_TYPE_REGISTER ? rc_gpr64(o[1].reg.value) : -1;
        const ZydisDecodedOperand *m = a < 0 ? &o[0] : b < 0 ? &o[1] : NULL;
        int r = a < 0 ? b : a;
        if (r < 0)
            return false;
        if (!m) {
            v = S->reg[a];
            S->reg[a] = S->reg[b];
            S->reg[b] = v;
            return true;
        }
        if (!ea_of(S, m, next, &ea, &seg)) {
            problem(S->res, R_CALL_STATE, "'%s' writes memory at an address not followed", text);
            return false;
        }
        v = load(S, ea, seg, 8);
        store(S, ea, seg, 8, S->reg[r], text);
        S->reg[r] = v;
        return true;
    }
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB: {
        int g = o[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? rc_gpr64(o[0].reg.value) : -1;
        if (g < 0 || !operand_val(S, in, &o[1], 64, &v))
            return false;
        if (S->reg[g].kind == V_LIN && v.kind == V_LIN)
            S->reg[g].l = ladd(S->reg[g].l, v.l, zi->mnemonic == ZYDIS_MNEMONIC_ADD ? 1 : -1);
        else
            S->reg[g] = vunk();
        return true;
    }
    case ZYDIS_MNEMONIC_JMP:
        if (zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
            return false;
        *done = true;
        if (o[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && o[0].imm.is_relative) {
            *target = vlin(lconst((int64_t)(next + (uint64_t)o[0].imm.value.s), 1));
            return true;
        }
        return operand_val(S, in, &o[0], 64, target);
    case ZYDIS_MNEMONIC_RET:
        if (zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR || S->reg[RC_RSP].kind != V_LIN)
            return false;
        *target = load(S, S->reg[RC_RSP].l, 0, 8);
        rsp_add(S, 8 + (zi->operand_count_visible ? (int64_t)o[0].imm.value.u : 0));
        *done = true;
        return true;
    default:
        return false;
    }
}

void callsim(const struct callsim_expect *x, rc_read_fn read, void *ctx, uint64_t at, struct callsim_result *res)
{
    struct st S;
    memset(&S, 0, sizeof S);
    memset(res, 0, sizeof *res);
    S.x = x;
    S.res = res;
    for (int r = 0; r < NR; r++)
        S.reg[r] = vlin(lreg(r, 0));

    /* what the call jumps to, read in the state before it */
    struct val want;
    char d1[128], d2[128];
    if (x->kind == CS_DIRECT) {
        want = vlin(lconst((int64_t)x->target, 1));
    } else if (x->kind == CS_REG) {
        want = S.reg[x->reg];
    } else {
        struct lin ea;
        int seg;
        const struct insn *oi = x->orig;
        const ZydisDecodedOperand *m = &oi->op[0];
        if (!ea_of(&S, m, oi->addr + oi->zi.length, &ea, &seg)) {
            problem(res, R_CALL_TARGET, "the original call's operand is not followed");
            return;
        }
        want = load(&S, ea, seg, 8);
    }

    uint64_t pc = at;
    bool done = false;
    struct val target = vunk();
    char text[160], clobber[160] = "";
    while (!done) {
        if (res->ninsns == CS_MAX_INSNS) {
            problem(res, R_CALL_STATE, "no jmp within %d instructions", CS_MAX_INSNS);
            return;
        }
        size_t avail = 0;
        const uint8_t *p = read(ctx, pc, &avail);
        struct insn *in = &res->insns[res->ninsns];
        if (!rc_decode(p, avail, pc, in)) {
            problem(res, R_DCR, "undecodable copy byte at 0x%llx", (unsigned long long)pc);
            return;
        }
        res->ninsns++;
        pc += in->zi.length;
        res->end = pc;
        rc_format(in, text, sizeof text);
        if (in->zi.mnemonic == ZYDIS_MNEMONIC_CALL) {
            problem(res, R_CALL_RET, "'%s' in the copy: its callee returns to 0x%llx, in the pool", text,
                    (unsigned long long)pc);
            return;
        }
        if (!step(&S, in, text, &done, &target)) {
            problem(res, R_CALL_STATE, "'%s': not an instruction a call emulation is followed through", text);
            return;
        }
        if (in->zi.mnemonic != ZYDIS_MNEMONIC_POPFQ && writes_flags(&in->zi)) {
            if (!S.flags_clobbered)
                snprintf(clobber, sizeof clobber, "%s", text);
            S.flags_clobbered = true;
        }
    }
    res->complete = true;
    if (S.flags_clobbered)
        problem(res, R_CALL_STATE, "'%s' changes the flags (a call leaves them)", clobber[0] ? clobber : "popf");

    /* the stack: %rsp0 - 8, holding the original return address */
    struct lin want_sp = lreg(RC_RSP, -8);
    if (S.reg[RC_RSP].kind != V_LIN || !leq(&S.reg[RC_RSP].l, &want_sp, true)) {
        vdesc(&S.reg[RC_RSP], d1, sizeof d1);
        problem(res, R_CALL_STATE, "%%rsp is %s at the jump, not %%rsp0-8", d1);
    }
    struct val ret = load(&S, want_sp, 0, 8), want_ret = vlin(lconst((int64_t)x->ret, 1));
    if (!veq(&ret, &want_ret, x->pic)) {
        vdesc(&ret, d1, sizeof d1);
        if (ret.kind == V_LIN && !ret.l.pc && ret.l.c == (int64_t)x->ret)
            problem(res, R_CALL_RET, "pushes the return address 0x%llx as an absolute value: wrong once the "
                    "position-independent image is loaded elsewhere", (unsigned long long)x->ret);
        else
            problem(res, R_CALL_RET, "the return address at %%rsp0-8 is %s, not 0x%llx", d1,
                    (unsigned long long)x->ret);
    }
    for (int r = 0; r < NR; r++) {
        if (r == RC_RSP)
            continue;
        struct val id = vlin(lreg(r, 0));
        if (!veq(&S.reg[r], &id, true)) {
            vdesc(&S.reg[r], d1, sizeof d1);
            problem(res, R_CALL_STATE, "%%%s is %s at the jump, not restored", rc_gpr_name[r], d1);
        }
    }
    if (!veq(&target, &want, x->pic)) {
        vdesc(&target, d1, sizeof d1);
        vdesc(&want, d2, sizeof d2);
        problem(res, R_CALL_TARGET, "goes to %s, the call went to %s", d1, d2);
    }
}
