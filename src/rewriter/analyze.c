/* Whole-function safety analysis, after the Linux optprobe rules. */
#include "analyze.h"
#include "taken.h"
#include "golang.h"
#include "ehframe.h"
#include "../arch/isa.h"
#include "kind.h"
#include "../arch/x86/decode.h"
#include "../arch/x86/detour.h"
#include "../util/array.h"
#include "kprewrite/abi.h"   /* KPRW_FOLLOW_PER_ENTRY: the sites an entry records */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "golang.h"

bool add_ref(struct state *s, uint64_t target, uint64_t from, enum ref_kind kind, uint8_t table)
{
    const struct func *fn = symbols_func_at(s->sy, target);
    if (fn && !s->probed[fn - s->sy->funcs])
        return true;   /* only targets inside probed functions matter, and those
                          outside any function (padding the padding tactic uses) */
    return ARRAY_PUSH(s->refs.v, s->refs.n, s->refs.cap, (struct ref){ target, from, (uint8_t)kind, table, 0, false, 0, 0 });
}

bool add_ref_table(struct state *s, uint64_t target, uint64_t from, const struct ref_table *t)
{
    size_t before = s->refs.n;
    if (!add_ref(s, target, from, REF_JTABLE, 0))
        return false;
    if (s->refs.n > before) {
        struct ref *r = &s->refs.v[s->refs.n - 1];
        r->width = t->width;
        r->retargetable = t->bounded && (t->relative ? t->width == 4 : t->width == 8);
        r->entry = t->entry;
        r->base = t->relative ? t->base : 0;
    }
    return true;
}

static int cmp_ref(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    return x->target < y->target ? -1 : x->target > y->target;
}

static int decode_function(struct state *s, size_t fi, struct x86_insn **buf, size_t *cap,
                           uint64_t **local, size_t *lcap)
{
    const struct func *fn = &s->sy->funcs[fi];
    size_t n = 0, nlocal = 0;
    bool has_ijmp = false;
    uint64_t fail = 0;

    for (uint64_t a = fn->start; a < fn->end;) {
        size_t avail = 0;
        const uint8_t *p = image_read(s->img, a, &avail);
        if (avail > fn->end - a)
            avail = (size_t)(fn->end - a);
        if (!ARRAY_RESERVE(*buf, *cap, n + 1))
            return -1;
        struct x86_insn *in = &(*buf)[n];
        if (!p || !x86_decode(p, avail, a, in)) {
            fail = a;
            break;
        }
        n++;
        a += in->len;
        if (x86_has_target(in)) {
            if (!add_ref(s, in->target, in->addr, REF_BRANCH, 0))
                return -1;
            if (in->target >= fn->start && in->target < fn->end && !ARRAY_PUSH(*local, nlocal, *lcap, in->target))
                return -1;
        }
        if (in->kind == XK_JMP_IND)
            has_ijmp = true;
        if (in->kind == XK_ENDBR && s->img->ibt && !add_ref(s, in->addr, in->addr, REF_ENDBR, 0))
            return -1;
    }
    s->st->funcs_decoded++;
    s->st->insns_decoded += n;
    s->ends[fi] = !fail && n && x86_ends_flow(&(*buf)[n - 1]);
    if (has_ijmp && (s->probed[fi] || s->fam_probed[fn->parent]) &&
        indirect_jumps(s, fi, *buf, n, *local, nlocal) < 0)
        return -1;
    if (s->probed[fi]) {
        struct fstate *f = &s->fs[fi];
        f->decode_fail = fail;
        f->n = n;
        f->insns = malloc((n ? n : 1) * sizeof *f->insns);
        if (!f->insns)
            return -1;
        for (size_t k = 0; k < n; k++)
            f->insns[k] = (struct cinsn){ (uint32_t)((*buf)[k].addr - fn->start), (*buf)[k].len,
                                          (*buf)[k].kind, (*buf)[k].flags };
    }
    return 0;
}

static int landing_pads(struct state *s)
{
    for (size_t i = 0; i < s->sy->nfuncs; i++) {
        const struct func *fn = &s->sy->funcs[i];
        uint64_t *pads = NULL;
        size_t n = 0;
        char e[160];
        if (!fn->lsda)   /* its pads may lie in another function (a .cold piece) */
            continue;
        if (lsda_landing_pads(image_read_cb, (void *)s->img, fn->lsda, fn->start, &pads, &n, e, sizeof e) < 0) {
            /* Unreadable LSDA: its pads are unknown, so nothing in the family can move. */
            if (!s->taint[fn->parent])
                s->taint[fn->parent] = fn->lsda;
            continue;
        }
        for (size_t k = 0; k < n; k++)
            if (!add_ref(s, pads[k], fn->lsda, REF_PAD, 0)) {
                free(pads);
                return -1;
            }
        s->st->landing_pads += n;
        free(pads);
    }
    return 0;
}

void probe_set(struct probe *p, enum verdict v, enum kp_reason r, const char *fmt, ...)
{
    va_list ap;
    if (v != V_OPTIMIZED) {   /* the tactics of a jump are moot */
        free(p->retargets);
        p->retargets = NULL;
        p->nretargets = 0;
        p->notes &= ~(unsigned)(NOTE_RETARGET | NOTE_JUMP8 | NOTE_ONE_INSN);
    }
    p->verdict = v;
    p->reason = r;
    p->detail[0] = 0;
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(p->detail, sizeof p->detail, fmt, ap);
        va_end(ap);
    }
}

size_t find_insn(const struct fstate *f, uint32_t off)
{
    return LOWER_BOUND(f->n, m, f->insns[m].off < off);
}

/* First ref with from < target... in (lo, hi): lo < target < hi. */
const struct ref *ref_into(const struct refs *r, uint64_t lo, uint64_t hi)
{
    size_t a = LOWER_BOUND(r->n, m, r->v[m].target <= lo);
    return a < r->n && r->v[a].target < hi ? &r->v[a] : NULL;
}

static void describe_ref(const struct ref *r, char *buf, size_t size)
{
    switch (r->kind) {
    case REF_BRANCH: snprintf(buf, size, "branch at 0x%llx to 0x%llx", (unsigned long long)r->from, (unsigned long long)r->target); break;
    case REF_JTABLE: snprintf(buf, size, "jump table of the jmp at 0x%llx to 0x%llx", (unsigned long long)r->from, (unsigned long long)r->target); break;
    case REF_PAD: snprintf(buf, size, "landing pad 0x%llx (LSDA at 0x%llx)", (unsigned long long)r->target, (unsigned long long)r->from); break;
    case REF_TABLE: snprintf(buf, size, "%s %s at 0x%llx to 0x%llx", ktable_name(r->table),
                             r->table == KT_CODE_BRANCHING ? "branch" : "entry", (unsigned long long)r->from,
                             (unsigned long long)r->target); break;
    case REF_ENDBR: snprintf(buf, size, "endbr64 at 0x%llx (indirect branch target)", (unsigned long long)r->target); break;
    case REF_FOREIGN: snprintf(buf, size, "branch at 0x%llx to 0x%llx in code no function holds", (unsigned long long)r->from,
                               (unsigned long long)r->target); break;
    }
}

/* Code the image's runtime copies elsewhere and runs there (a fact of the
 * image, facts.h: kfacts_moving): the probe's site, or its function. */
static bool moves(const struct state *s, struct probe *p, const struct func *fn)
{
    const struct kmoving *m = kfacts_moving(s->kf, p->addr, p->addr + 1);
    if (!m)
        m = kfacts_moving(s->kf, fn->start, fn->end);
    if (!m)
        return false;
    probe_set(p, V_REFUSED, KP_R_MOVES_AT_RUN_TIME, "%s 0x%llx-0x%llx: %s", m->what, (unsigned long long)m->start,
              (unsigned long long)(m->start + m->len), m->why);
    return true;
}

static bool blacklisted(const struct state *s, struct probe *p, const struct func *fn)
{
    const struct krange *r = kfacts_blacklisted(s->kf, p->addr);
    const struct func *parent = &s->sy->funcs[fn->parent];
    if (!r)
        r = kfacts_blacklisted(s->kf, fn->start);
    if (r) {
        probe_set(p, V_REFUSED, KP_R_BLACKLISTED, "%s", ktable_name(r->table));
        return true;
    }
    if (parent != fn && (r = kfacts_blacklisted(s->kf, parent->start))) {
        probe_set(p, V_REFUSED, KP_R_BLACKLISTED, "piece of %s (%s)", parent->name, ktable_name(r->table));
        return true;
    }
    return false;
}

/* Go's code a probe may not touch (golang.c): the runtime's
 * stack-switching functions, and every return of a Go function; and a Go
 * function that loads %rsp from another register or memory, which Go's
 * SPWRITE flag says too where the table has it (not Go 1.16's). */
static bool go_unsafe(const struct state *s, struct probe *p, const struct func *fn, const struct fstate *f)
{
    enum kp_reason r;
    char d[160];
    if (go_refused(fn, p->is_return, &r, d, sizeof d)) {
        probe_set(p, V_REFUSED, r, "%s", d);
        return true;
    }
    for (size_t i = 0; fn->go_name && i < f->n; i++) {
        uint64_t a = fn->start + f->insns[i].off;
        size_t avail;
        const uint8_t *b = image_read(s->img, a, &avail);
        if (b && x86_switches_stack(b, avail < f->insns[i].len ? avail : f->insns[i].len)) {
            probe_set(p, V_REFUSED, KP_R_GO_RUNTIME, "%s loads %%rsp at 0x%llx", fn->go_name, (unsigned long long)a);
            return true;
        }
    }
    return false;
}

/* Is fn's start entered by a call, as far as its unwind data says: the
 * canonical frame address where a call leaves it (x86-64: 8 bytes above
 * %rsp; true without unwind data: the symbol says it is a function)? */
static bool call_entry(const struct state *s, const struct func *fn)
{
    if (fn->origin == FO_FOUND)
        return fn->call_entry;   /* as the finder proved it (funcfind.c) */
    struct eh_cfa c = symbols_cfa_at(s->sy, fn->start);
    return !c.known || isa_cfa_at_call_entry(s->img->isa, c.reg, c.off);
}

/* A return probe needs a function that returns once, on the stack it was
 * entered on. Refuses p (true) when fn does not. */
static bool return_unsound(struct state *s, struct probe *p, const struct func *fn, const struct fstate *f)
{
    static const char *const twice[] = { "setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp",
                                         "savectx", "vfork", "__vfork", "getcontext", "__getcontext" };
    size_t nlen = strcspn(fn->name, "@");
    for (size_t k = 0; k < sizeof twice / sizeof twice[0]; k++)
        if (strlen(twice[k]) == nlen && strncmp(fn->name, twice[k], nlen) == 0) {
            probe_set(p, V_REFUSED, KP_R_RETURNS_TWICE, "%s", twice[k]);
            return true;
        }
    /* A call leaves the return address on top: CFA = %rsp + 8. A piece of
     * a function (its .cold part, a landing pad) starts with its parent's
     * frame, and its top of stack is the parent's data */
    if (!call_entry(s, fn)) {
        if (fn->origin == FO_FOUND)
            probe_set(p, V_REFUSED, KP_R_NOT_CALLED, "no call leads to it as far as proven: found without symbols or CFI");
        else
            probe_set(p, V_REFUSED, KP_R_NOT_CALLED, "CFA at 0x%llx is not %%rsp+8", (unsigned long long)fn->start);
        return true;
    }
    bool leaves = f->decode_fail != 0;   /* undecoded bytes may hold its ret */
    for (size_t i = 0; i < f->n; i++) {
        uint64_t a = fn->start + f->insns[i].off;
        size_t avail;
        const uint8_t *b = image_read(s->img, a, &avail);
        if (!b)
            continue;
        if (x86_switches_stack(b, avail < f->insns[i].len ? avail : f->insns[i].len)) {
            probe_set(p, V_REFUSED, KP_R_STACK_SWITCH, "loads %%rsp at 0x%llx", (unsigned long long)a);
            return true;
        }
        if (f->insns[i].kind == XK_RET || f->insns[i].kind == XK_JMP_IND) {
            leaves = true;   /* an indirect jmp may be a tail call */
        } else if (f->insns[i].kind == XK_JMP) {
            struct x86_insn in;
            if (x86_decode(b, avail, a, &in) && (in.target < fn->start || in.target >= fn->end))
                leaves = true;   /* a tail call, or the function's .cold part */
        }
    }
    if (!leaves) {
        probe_set(p, V_REFUSED, KP_R_NORETURN, "no ret and no jump out of %s", fn->name);
        return true;
    }
    return false;
}

/* A Go function whose frame check finds its stack too small calls
 * runtime.morestack, which copies the stack to a bigger one and returns,
 * and jumps back to the function's entry: the jump (one from inside the
 * function to its entry) goes to the entry's copy instead, so that an
 * entry probe counts calls, not stack growths. Added to v[0..*n). -1: no
 * memory (p's verdict says so). */
static int go_reentries(struct state *s, struct probe *p, const struct func *fn, struct retarget **v, size_t *n,
                        size_t *cap)
{
    if (!fn->go_name || p->addr != fn->start || !s->img->hooks->retargets)
        return 0;
    const struct ref *end = s->refs.v + s->refs.n;
    for (const struct ref *r = ref_into(&s->refs, p->addr - 1, p->addr + 1); r && r < end && r->target == p->addr; r++) {
        size_t avail;
        const uint8_t *b;
        struct x86_insn in;
        if (r->kind != REF_BRANCH || r->from < fn->start || r->from >= fn->end ||
            !(b = image_read(s->img, r->from, &avail)) || !x86_decode(b, avail, r->from, &in) || in.kind != XK_JMP)
            continue;
        struct retarget t = { .at = r->from, .target = r->target, .len = in.len,
                              .kind = in.rel_size == 8 ? RT_BRANCH8 : RT_BRANCH };
        if (!ARRAY_PUSH(*v, *n, *cap, t)) {
            probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "out of memory");
            free(*v);
            return -1;
        }
    }
    return 0;
}

/* Tactic for a point too near the end of its function: when the function
 * ends in an instruction that does not fall through (ret, jmp) and what
 * follows, up to the jump's last byte, is inter-function padding that no
 * function, branch, table or landing pad reaches, the jump may end there:
 * nothing ever runs those bytes, and every original instruction still
 * starts where it did. */
static bool padding_after(const struct state *s, const struct probe *p, const struct func *fn,
                          const struct fstate *f)
{
    uint8_t last = f->insns[f->n - 1].kind;
    uint64_t pad_end = p->addr + s->img->isa->jump_len;
    size_t avail;
    if (last != XK_RET && last != XK_JMP && last != XK_JMP_IND)
        return false;
    if (p->func + 1 < s->sy->nfuncs && s->sy->funcs[p->func + 1].start < pad_end)
        return false;
    const uint8_t *b = image_read(s->img, fn->end, &avail);
    if (!b || avail < pad_end - fn->end || !image_is_exec_addr(s->img, fn->end))
        return false;
    for (uint64_t a = 0; a < pad_end - fn->end; a++)
        if (!x86_is_padding(b[a]))
            return false;
    /* ref_into takes targets above its first bound: fn->end itself counts here */
    return !ref_into(&s->refs, fn->end - 1, pad_end) && !kfacts_reserved_overlap(s->kf, fn->end, pad_end - fn->end) &&
           !kfacts_moving(s->kf, fn->end, pad_end);
}

/* Is a landing pad at a? */
static bool pad_at(const struct state *s, uint64_t a)
{
    for (const struct ref *r = ref_into(&s->refs, a - 1, a + 1); r && r < s->refs.v + s->refs.n && r->target == a; r++)
        if (r->kind == REF_PAD)
            return true;
    return false;
}

/* The DCR's length and text: instructions i..j of f, len bytes. */
static void dcr_text(const struct state *s, struct probe *p, const struct func *fn, const struct fstate *f,
                     size_t i, size_t j, unsigned len)
{
    char text[96];
    size_t pos = 0, avail;
    p->dcr_len = (uint8_t)(len < 255 ? len : 255);
    p->dcr_ninsn = (uint8_t)(j - i);
    p->dcr_text[0] = 0;
    for (size_t k = i; k < j; k++) {
        uint64_t a = fn->start + f->insns[k].off;
        const uint8_t *b = image_read(s->img, a, &avail);
        x86_format(b, avail, a, text, sizeof text);
        pos += (size_t)snprintf(p->dcr_text + pos, pos < DCR_TEXT_MAX ? DCR_TEXT_MAX - pos : 0, "%s%s",
                                k == i ? "" : "; ", text);
        if (pos >= DCR_TEXT_MAX)
            pos = DCR_TEXT_MAX - 1;
    }
}

/* The int3 verdict of a point with fewer bytes than the site's jump to its
 * function's end. */
void short_verdict(const struct state *s, struct probe *p, const struct func *fn, unsigned len, const char *extra)
{
    if (fn->end - fn->start < s->img->isa->jump_len)
        probe_set(p, V_INT3, KP_R_TOO_SHORT, "the function is %llu bytes long%s", (unsigned long long)(fn->end - fn->start),
            extra ? extra : "");
    else
        probe_set(p, V_INT3, KP_R_CROSSES_FUNCTION, "%u bytes to the end of %s%s", len, fn->name, extra ? extra : "");
}

/* Is the probe's DCR instruction boundary at a (strictly inside)? */
static bool dcr_boundary(const struct probe *p, const struct func *fn, const struct fstate *f, size_t i, size_t j,
                         uint64_t a)
{
    for (size_t k = i + 1; k < j; k++)
        if (fn->start + f->insns[k].off == a)
            return true;
    (void)p;
    return false;
}

/* What lands inside the DCR (after its first byte): a branch or a jump
 * table entry may be re-pointed to the instruction's copy in the detour
 * (the copy does what the original would have: it runs the rest of the
 * DCR and jumps back); anything else (a landing pad, a kernel table, a
 * call, a table read past its bound) keeps the probe int3. Branches from
 * the DCR itself go to the copy anyway (detour.c). True when every one
 * can be re-pointed: p->retargets lists them. */
static bool retargets(struct state *s, struct probe *p, const struct func *fn, const struct fstate *f,
                      size_t i, size_t j, unsigned len)
{
    uint64_t lo = p->addr, hi = p->addr + len;
    const struct ref *r = ref_into(&s->refs, lo, hi);
    size_t n = 0, cap = 0;
    struct retarget *v = NULL;
    const char *why = NULL;
    const struct ref *end = s->refs.v ? s->refs.v + s->refs.n : NULL;   /* (no reference at all: none) */
    if (go_reentries(s, p, fn, &v, &n, &cap) < 0)
        return false;
    if (!r && !n)
        return true;
    for (; r && r < end && r->target < hi; r++) {
        struct retarget t = { .at = r->from, .target = r->target };
        if (!s->img->hooks->retargets) {
            why = "";
            break;
        }
        if (kfacts_moving(s->kf, r->from, r->from + 1)) {
            why = " (in code that moves at run time: it stays as it is)";
            break;
        }
        if (!dcr_boundary(p, fn, f, i, j, r->target)) {
            why = " (inside an instruction)";
            break;
        }
        if (r->kind == REF_BRANCH) {
            if (r->from >= lo && r->from < hi)
                continue;   /* from the DCR itself: its copy goes to the copy */
            size_t avail;
            const uint8_t *b = image_read(s->img, r->from, &avail);
            struct x86_insn in;
            if (!b || !x86_decode(b, avail, r->from, &in) ||
                (in.kind != XK_JMP && in.kind != XK_JCC && in.kind != XK_LOOP)) {
                why = "";   /* a call, an xbegin */
                break;
            }
            t.len = in.len;
            t.kind = in.rel_size == 8 ? RT_BRANCH8 : RT_BRANCH;
        } else if (r->kind == REF_JTABLE && r->retargetable && (r->width == 4 || s->img->kind == IMG_EXEC)) {
            /* an absolute entry of a PIE or library has a relocation */
            t.at = r->entry;
            t.len = r->width;
            t.kind = r->width == 4 ? RT_TABLE4 : RT_TABLE8;
            t.base = r->base;
        } else {
            why = "";
            break;
        }
        bool dup = false;
        for (size_t k = 0; k < n; k++)
            dup |= v[k].at == t.at;
        if (dup)
            continue;
        if (!ARRAY_PUSH(v, n, cap, t)) {
            why = " (out of memory)";
            break;
        }
    }
    if (why) {
        char d[160];
        describe_ref(r, d, sizeof d);
        probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "%s%s", d, why);
        free(v);
        return false;
    }
    if (n) {
        p->retargets = v;
        p->nretargets = n;
        p->notes |= NOTE_RETARGET;
    } else {
        free(v);
    }
    return true;
}

/* The probe address itself: refused (false) when the function is
 * blacklisted or cannot take a return probe, or the address is no
 * instruction boundary, or its instruction cannot run out of line, lies
 * in a reserved site or may fault to a fixup. *i: its instruction. */
static bool judge_site(struct state *s, struct probe *p, const struct func *fn, const struct fstate *f, size_t *i)
{
    uint32_t off = (uint32_t)(p->addr - fn->start);
    const char *why;

    *i = find_insn(f, off);
    if (moves(s, p, fn) || blacklisted(s, p, fn) || go_unsafe(s, p, fn, f))
        return false;
    if (p->is_return && return_unsound(s, p, fn, f))
        return false;
    /* ftrace's call __fentry__ stays ftrace's (it goes on patching it): a
     * probe there goes right after it, where the state is the entry's (the
     * call is a nop, or ftrace's callers returned), still named SYM+0 */
    const struct krange *fe = kfacts_fixed_overlap(s->kf, p->addr, 1, p->addr, UINT64_MAX);
    if (fe && fe->pass && fe->start == p->addr) {
        p->addr += fe->len;
        p->notes |= NOTE_AFTER_FENTRY;
        off += (uint32_t)fe->len;
        *i = find_insn(f, off);
    }
    /* A piece that is a landing pad starts with a nop (an LSDA cannot name
     * offset 0) and is entered at +1 by the unwinder: nothing runs the nop,
     * and a jump there would cover the pad. Its entry is the pad. */
    if (!p->is_return && off == 0 && f->n > 1 && f->insns[0].len == 1 && (f->insns[0].flags & XF_NOP) &&
        pad_at(s, fn->start + 1)) {
        p->addr++;
        p->off++;
        p->notes |= NOTE_AFTER_PAD_NOP;
        off = 1;
        *i = find_insn(f, off);
    }
    if (*i == f->n || f->insns[*i].off != off) {
        if (f->decode_fail && p->addr >= f->decode_fail) {
            probe_set(p, V_REFUSED, KP_R_DECODE_FAILED, "undecodable bytes at 0x%llx", (unsigned long long)f->decode_fail);
            return false;
        }
        uint64_t before = fn->start + f->insns[*i - 1].off;
        uint64_t after = *i < f->n ? fn->start + f->insns[*i].off : before + f->insns[*i - 1].len;
        probe_set(p, V_REFUSED, KP_R_NOT_INSN_BOUNDARY, "inside the instruction at 0x%llx; boundaries 0x%llx and 0x%llx",
            (unsigned long long)before, (unsigned long long)before, (unsigned long long)after);
        return false;
    }
    struct x86_insn pi = { .addr = p->addr, .len = f->insns[*i].len, .kind = f->insns[*i].kind, .flags = f->insns[*i].flags };
    /* Every probe runs its first instruction out of line (the int3 path
     * resumes at a copy of it), so that one must be relocatable. */
    if (!x86_relocatable(&pi, &why)) {
        probe_set(p, V_REFUSED, (pi.flags & XF_OPS_UNKNOWN) ? KP_R_UNDECODABLE_OPERANDS : KP_R_NOT_RELOCATABLE,
                  "%s at the probe address", why);
        return false;
    }
    /* (a KASLR relocation a vmlinux's copy can carry: fine for a jump;
     * an int3 probe, whose site KASLR must keep relocating, is refused
     * once the verdict is known: refuse_unmovable()) */
    uint32_t plus, minus;
    p->reloc_first = kfacts_movable_in(s->kf, p->addr, pi.len, &plus, &minus) > 0;
    const struct krange *fs;
    p->follow_first = kfacts_follow_in(s->kf, p->addr, pi.len, &fs, 1) ? fs->table + 1 : 0;
    const struct krange *rs = kfacts_fixed_overlap(s->kf, p->addr, pi.len, p->addr, UINT64_MAX);
    if (rs) {
        probe_set(p, V_REFUSED, KP_R_RESERVED, "site 0x%llx overlaps the probed instruction", (unsigned long long)rs->start);
        p->reason_arg = ktable_name(rs->table);
        return false;
    }
    if (kfacts_extable_in(s->kf, p->addr, p->addr + 1)) {
        probe_set(p, V_REFUSED, KP_R_EXCEPTION_TABLE, "the probed instruction may fault to a fixup");
        return false;
    }
    return true;
}

/* The DCR from instruction i: the fewest whole instructions covering the
 * site's jump (x86-64: 5 bytes); at a function's end the jump may reach
 * into the padding after it, or the DCR be the short jump (2 bytes) to a
 * trampoline. Instructions i..*j, *len bytes; false when the probe is
 * int3. */
static bool judge_dcr(struct state *s, struct probe *p, const struct func *fn, const struct fstate *f, size_t i,
                      size_t *j, unsigned *len)
{
    const unsigned jump = s->img->isa->jump_len, short_jump = s->img->isa->short_jump_len;
    *len = 0;
    for (*j = i; *j < f->n && *len < jump; (*j)++)
        *len += f->insns[*j].len;
    dcr_text(s, p, fn, f, i, *j, *len);
    if (f->decode_fail) {
        probe_set(p, V_INT3, KP_R_DECODE_FAILED, "undecodable bytes at 0x%llx", (unsigned long long)f->decode_fail);
        return false;
    }
    p->code_len = p->dcr_len;
    if (*len < jump && *j == f->n && padding_after(s, p, fn, f)) {
        p->notes |= NOTE_PADDING;
        p->dcr_len = (uint8_t)jump;
    } else if (*len < jump) {
        /* Shorter than a jmp rel32 to the function's end: a jmp rel8 to a
         * trampoline in padding nearby (placed once every verdict is in,
         * place_tactics), when at least 2 bytes of whole instructions are
         * there: the DCR is those */
        unsigned l8 = 0;
        for (*j = i; *j < f->n && l8 < short_jump; (*j)++)
            l8 += f->insns[*j].len;
        if (s->img->hooks->short_jumps && short_jump && l8 >= short_jump) {
            *len = l8;
            dcr_text(s, p, fn, f, i, *j, *len);
            p->code_len = p->dcr_len;
            p->notes |= NOTE_JUMP8;
        } else {
            short_verdict(s, p, fn, *len, NULL);
            return false;
        }
    }
    return true;
}

/* A site that may follow its instruction into the copy, in the DCR
 * (instructions i..j, len bytes), but that does not begin and end on its
 * instructions (the copy could not stand for it), or NULL. */
static const struct krange *follow_split(const struct state *s, const struct probe *p, const struct func *fn,
                                         const struct fstate *f, size_t i, size_t j, unsigned len)
{
    const struct krange *fs[8];
    unsigned nf = kfacts_follow_in(s->kf, p->addr, len, fs, 8);
    for (unsigned k = 0; k < nf && k < 8; k++) {
        bool starts = false, ends = false;
        for (size_t m = i; m < j; m++) {
            uint64_t a = fn->start + f->insns[m].off;
            starts |= a == fs[k]->start;
            ends |= a + f->insns[m].len == fs[k]->start + fs[k]->len;
        }
        if (!starts || !ends)
            return fs[k];
    }
    return NULL;
}

/* What the DCR (instructions i..j, len bytes) holds, and what lands in
 * it: false when the probe is int3 for it. */
static bool judge_contents(struct state *s, struct probe *p, const struct func *fn, const struct fstate *f, size_t i,
                           size_t j, unsigned len)
{
    const char *why;
    bool has_call = false, call_inside = false;
    for (size_t k = i; k < j; k++) {
        struct x86_insn in = { .addr = fn->start + f->insns[k].off, .len = f->insns[k].len,
                               .kind = f->insns[k].kind, .flags = f->insns[k].flags };
        if (!x86_relocatable(&in, &why)) {
            probe_set(p, V_INT3, (in.flags & XF_OPS_UNKNOWN) ? KP_R_UNDECODABLE_OPERANDS : KP_R_NOT_RELOCATABLE,
                      "%s at 0x%llx", why, (unsigned long long)in.addr);
            return false;
        }
        if (in.kind == XK_CALL || in.kind == XK_CALL_IND) {
            has_call = true;
            /* A call before the end of the DCR returns into it: with the
             * original bytes back (a disabled probe), a thread could sit
             * in the callee with its return address inside the DCR for
             * any time, and re-arming the jump would break it. */
            if (k + 1 < j)
                call_inside = true;
        }
        if (in.flags & XF_RIPREL)
            p->notes |= NOTE_RIPREL;
        if (in.kind == XK_JMP || in.kind == XK_JCC)
            p->notes |= NOTE_BRANCH_REENC;
    }
    unsigned first = f->insns[i].len;
    const struct krange *rs = kfacts_fixed_overlap(s->kf, p->addr + first, len - first, p->addr, p->addr + len);
    if (!rs)
        rs = follow_split(s, p, fn, f, i, j, len);
    if (rs) {
        probe_set(p, V_INT3, KP_R_RESERVED, "site 0x%llx in the DCR", (unsigned long long)rs->start);
        p->reason_arg = ktable_name(rs->table);
        return false;
    }
    /* An instruction that may fault must fault at its own address (the
     * kernel looks the fixup up by it): none in the DCR. Fixups are branch
     * targets like any (jump-into-dcr, below), and so is the way back of
     * fixup code in a function (decoded); a function with an entry whose
     * fixup lands in code no function covers stays int3 throughout, as the
     * kernel's optprobes keep any function with an entry. */
    uint64_t ex = kfacts_extable_in(s->kf, p->addr, p->addr + len);
    if (!ex)
        ex = kfacts_extable_blind_in(s->kf, fn->start, fn->end);
    if (ex) {
        probe_set(p, V_INT3, KP_R_EXCEPTION_TABLE, "__ex_table entry for 0x%llx", (unsigned long long)ex);
        return false;
    }
    /* An indirect jump lands on an instruction: inside a DCR of one, it
     * could only land in the middle of it */
    if (s->taint[fn->parent] && j - i > 1) {
        probe_set(p, V_INT3, KP_R_INDIRECT_JUMP, "at 0x%llx", (unsigned long long)s->taint[fn->parent]);
        return false;
    }
    if (s->taint[fn->parent])
        p->notes |= NOTE_ONE_INSN;
    /* An indirect jump elsewhere may land on any address the image
     * materializes: one on an instruction of the DCR after its first */
    const struct taken *tk = taken_set(s);
    for (size_t k = i + 1; tk && k < j; k++) {
        uint64_t a = fn->start + f->insns[k].off;
        if (taken_inside(tk, a - 1, a + 1)) {
            probe_set(p, V_INT3, KP_R_JUMP_INTO_DCR, "address 0x%llx is taken (an indirect jump may land there)",
                (unsigned long long)a);
            return false;
        }
    }
    if (!retargets(s, p, fn, f, i, j, len))
        return false;
    if (has_call) {
        if (!s->img->hooks->call_in_dcr || call_inside) {
            probe_set(p, V_INT3, KP_R_CALL_IN_DCR, NULL);
            return false;
        }
        p->notes |= NOTE_CALL_KEPT;
    }
    return true;
}

static void judge(struct state *s, struct probe *p)
{
    const struct func *fn = &s->sy->funcs[p->func];
    const struct fstate *f = &s->fs[p->func];
    size_t i, j, avail;
    unsigned len;

    if (!judge_site(s, p, fn, f, &i) || !judge_dcr(s, p, fn, f, i, &j, &len) || !judge_contents(s, p, fn, f, i, j, len))
        return;
    /* Flags: dead at a function entry (ABI), else only where proven. */
    unsigned elen = 0;
    const uint8_t *fb = image_read(s->img, fn->start, &avail);
    /* not a piece entered with its parent's frame (live flags, any
     * alignment: call_entry) */
    p->at_entry = (p->addr == fn->start || (fb && x86_is_endbr_like(fb, avail, &elen) && p->addr == fn->start + elen) ||
                   (p->notes & NOTE_AFTER_FENTRY)) &&
                  call_entry(s, fn);
    /* (assembly calls its own functions with any alignment) */
    p->entry_aligned = p->at_entry && fn->start != s->img->ehdr.e_entry && fn->origin != FO_FOUND;
    if (!p->at_entry && !x86_flags_dead(image_read_cb, (void *)s->img, p->addr, fn->end))
        p->notes |= NOTE_FLAGS_SAVED;
    probe_set(p, V_OPTIMIZED, KP_R_NONE, NULL);
}

/* How many distinct sites (start, length) the table entries fs name. */
static unsigned follow_ranges(const struct krange *const *fs, unsigned n)
{
    unsigned d = 0;
    for (unsigned k = 0; k < n; k++) {
        bool seen = false;
        for (unsigned m = 0; m < k; m++)
            seen |= fs[m]->start == fs[k]->start && fs[m]->len == fs[k]->len;
        d += !seen;
    }
    return d;
}

/* Once verdicts are final: an int3 probe keeps its site's bytes in the
 * file, which KASLR relocates, so its first instruction's out-of-line copy
 * could not carry the relocation too (refused, as before relocations could
 * move); an int3 probe runs no other copy. */
static void refuse_unmovable(const struct state *s, struct probe_list *probes)
{
    for (size_t i = 0; i < probes->n; i++) {
        struct probe *p = &probes->v[i];
        p->notes &= ~(NOTE_RELOC_MOVED | NOTE_SITE_MOVED);
        p->kaslr_plus = p->kaslr_minus = 0;
        p->nfollow = 0;
        if (p->verdict == V_OPTIMIZED) {
            if (kfacts_movable_in(s->kf, p->addr, p->dcr_len, &p->kaslr_plus, &p->kaslr_minus))
                p->notes |= NOTE_RELOC_MOVED;
            const struct krange *fs[PROBE_FOLLOW_MAX];
            unsigned nf = kfacts_follow_in(s->kf, p->addr, p->dcr_len, fs, PROBE_FOLLOW_MAX);
            if (nf <= PROBE_FOLLOW_MAX && follow_ranges(fs, nf) <= KPRW_FOLLOW_PER_ENTRY) {
                for (unsigned k = 0; k < nf; k++)
                    p->follow[k] = (struct probe_follow){ fs[k]->field, (uint8_t)(fs[k]->start - p->addr),
                                                          (uint8_t)fs[k]->len, fs[k]->table, fs[k]->follow };
                p->nfollow = (uint8_t)nf;
                if (nf)
                    p->notes |= NOTE_SITE_MOVED;
                continue;
            }
            /* (more than the table records for an entry: not met yet) */
            probe_set(p, V_INT3, KP_R_RESERVED, "%u boot-patched sites in the DCR", nf);
            p->reason_arg = ktable_name(fs[0]->table);
            p->notes &= ~NOTE_RELOC_MOVED;
            p->kaslr_plus = p->kaslr_minus = 0;
        }
        if (p->verdict == V_INT3 && p->follow_first) {
            probe_set(p, V_REFUSED, KP_R_RESERVED, "site 0x%llx is the probed instruction, which the kernel patches "
                      "at boot: only a jump's copy can take its place", (unsigned long long)p->addr);
            p->reason_arg = ktable_name((enum ktable_id)(p->follow_first - 1));
            continue;
        }
        if (p->verdict == V_INT3 && p->reloc_first) {
            probe_set(p, V_REFUSED, KP_R_RESERVED, "a relocation KASLR applies overlaps the probed instruction, "
                      "and only a jump's copy can carry it");
            p->reason_arg = ktable_name(KT_RELOC);
        }
    }
}

static int cmp_probe_addr(const void *a, const void *b)
{
    const struct probe *x = *(struct probe *const *)a, *y = *(struct probe *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A DCR that covers another probe's address cannot become a jump: as the
 * kernel does, the outer probe stays unoptimized and the inner one keeps
 * its place. */
static int resolve_overlaps(struct probe_list *probes)
{
    struct probe **v = malloc((probes->n ? probes->n : 1) * sizeof *v);
    size_t n = 0;
    if (!v)
        return -1;
    for (size_t i = 0; i < probes->n; i++)
        if (probes->v[i].verdict != V_REFUSED)
            v[n++] = &probes->v[i];
    sort_array(v, n, sizeof *v, cmp_probe_addr);
    /* SYM+0 baked past ftrace's call is where SYM+5 is: that site is SYM+0's
     * point (the kprobes API names it at the call), not SYM+5's */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n && v[j]->addr == v[i]->addr; j++) {
            struct probe *x = v[i], *y = v[j];
            if (x->is_return != y->is_return || !((x->notes ^ y->notes) & NOTE_AFTER_FENTRY))
                continue;
            struct probe *q = (x->notes & NOTE_AFTER_FENTRY) ? y : x;
            probe_set(q, V_REFUSED, KP_R_RESERVED, "the site of %s+0x%llx, baked past ftrace's call",
                      q == x ? y->sym : x->sym, (unsigned long long)(q == x ? y->off : x->off));
            q->reason_arg = ktable_name(KT_MCOUNT);
        }
    for (size_t i = 0; i < n; i++) {
        struct probe *a = v[i];
        if (a->verdict != V_OPTIMIZED)
            continue;
        for (size_t j = i + 1; j < n && v[j]->addr < a->addr + a->dcr_len; j++)
            if (v[j]->addr > a->addr) {
                probe_set(a, V_INT3, KP_R_OVERLAPS_PROBE, "probe at 0x%llx", (unsigned long long)v[j]->addr);
                break;
            }
    }
    free(v);
    return 0;
}

int analyze_probes(const struct image *img, const struct symbols *sy, const struct kfacts *kf, bool strict_indirect,
                   struct probe_list *probes, struct analysis_stats *st, char *err, size_t errlen)
{
    struct state s = { .img = img, .sy = sy, .kf = kf, .st = st, .taken_state = strict_indirect ? -1 : 0 };
    struct x86_insn *buf = NULL;
    uint64_t *local = NULL;
    size_t cap = 0, lcap = 0, nf = sy->nfuncs ? sy->nfuncs : 1;
    int rc = -1;

    memset(st, 0, sizeof *st);
    s.probed = calloc(nf, 1);
    s.fam_probed = calloc(nf, 1);
    s.taint = calloc(nf, sizeof *s.taint);
    s.ends = calloc(nf, 1);
    s.fs = calloc(nf, sizeof *s.fs);
    if (!s.probed || !s.fam_probed || !s.taint || !s.ends || !s.fs)
        goto oom;
    size_t todo = 0;
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        if (p->verdict == V_REFUSED || p->func == SIZE_MAX)
            continue;
        s.probed[p->func] = 1;
        s.fam_probed[sy->funcs[p->func].parent] = 1;
        todo++;
    }
    if (todo) {
        for (size_t i = 0; i < sy->nfuncs; i++)
            if (decode_function(&s, i, &buf, &cap, &local, &lcap) < 0)
                goto oom;
        if (landing_pads(&s) < 0)
            goto oom;
        for (size_t i = 0; i < sy->found.nrefs; i++)
            if (!sy->found.refs[i].address &&
                !add_ref(&s, sy->found.refs[i].target, sy->found.refs[i].from, REF_FOREIGN, 0))
                goto oom;
        for (size_t i = 0; i < kf->ntargets; i++)
            if (!add_ref(&s, kf->targets[i].target, kf->targets[i].from, REF_TABLE, kf->targets[i].table))
                goto oom;
        sort_array(s.refs.v, s.refs.n, sizeof *s.refs.v, cmp_ref);
        for (size_t i = 0; i < probes->n; i++) {
            struct probe *p = &probes->v[i];
            if (p->verdict != V_REFUSED && p->func != SIZE_MAX)
                judge(&s, p);
        }
        if (resolve_overlaps(probes) < 0 || place_tactics(&s, probes) < 0)
            goto oom;
        refuse_unmovable(&s, probes);
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory during analysis", img->path);
out:
    if (s.fs)
        for (size_t i = 0; i < sy->nfuncs; i++)
            free(s.fs[i].insns);
    free(s.fs); free(s.probed); free(s.fam_probed); free(s.taint); free(s.ends); free(s.refs.v);
    taken_free(&s.taken);
    free(buf); free(local);
    return rc;
}
