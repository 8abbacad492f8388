/*
 * The detour emitter (src/arch/x86/detour.h), checked by decoding what it
 * writes. Each emitter is called at a chosen address with chosen original
 * bytes (DCRs with RIP-relative operands, a jcc rel8, a call at the end,
 * jmp *disp(%rip), ...); its bytes are decoded with Zydis set up here (not
 * src/arch/x86/decode.c, which the emitter itself uses) and compared,
 * instruction by instruction, with the listing the template in detour.c
 * documents: every mnemonic and operand, every branch target and every
 * RIP-relative operand named by the address it must reach (the slot, the
 * state, the jump back to site + dcr_len, the same absolute address as the
 * original instruction's). Each such address is also one check of its own,
 * as are the offsets the emitters return and their refusals (0 or false,
 * with a message) when something is out of reach.
 *
 * Listings are Zydis's AT&T text, with every absolute address a relative
 * operand reaches printed as a name when it is one (the table `syms`),
 * "name(%rip)" for a RIP-relative operand, and " # rel8" after a branch
 * with an 8-bit displacement. A line "name:" names the address of the next
 * instruction (a label); listings may refer to it.
 *
 * Emulated calls (a call ending a DCR) are also run through the relocation
 * checker's call evaluator (t/reloc/callsim.c), which follows registers and
 * the stack: the copy must push the original return address and go where
 * the call went.
 */
#include "arch/x86/detour.h"
#include "kprewrite/ptrace.h"
#include "rc.h"
#include "tap.h"

#include <Zycore/Format.h>
#include <Zydis/Zydis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the decoder and formatter of this test ---- */

static ZydisDecoder dec;
static ZydisFormatter fmt;
static ZydisFormatterFunc print_abs_default;

/* Named addresses: fixed ones (slot, state, ...) and labels of the listing. */
#define MAX_SYMS 64
static struct sym {
    char name[32];
    uint64_t addr;
} syms[MAX_SYMS];
static int nsyms;
static uint64_t buf_at;   /* the code being formatted: addresses inside it print as D+0xOFF */
static size_t buf_len;

static void sym_reset(void) { nsyms = 0; }
static void sym(const char *name, uint64_t addr)
{
    int i = 0;
    while (i < nsyms && strcmp(syms[i].name, name) != 0)
        i++;
    if (i == MAX_SYMS)
        bail("too many symbols");
    if (i == nsyms)
        nsyms++;
    snprintf(syms[i].name, sizeof syms[i].name, "%s", name);
    syms[i].addr = addr;
}
static const struct sym *sym_by_addr(uint64_t a)
{
    for (int i = 0; i < nsyms; i++)
        if (syms[i].addr == a)
            return &syms[i];
    return NULL;
}
static const struct sym *sym_by_name(const char *n, size_t len)
{
    for (int i = 0; i < nsyms; i++)
        if (strlen(syms[i].name) == len && memcmp(syms[i].name, n, len) == 0)
            return &syms[i];
    return NULL;
}

static bool is_rip(const ZydisDecodedOperand *o)
{
    return o->type == ZYDIS_OPERAND_TYPE_MEMORY && o->mem.base == ZYDIS_REGISTER_RIP;
}
static bool is_rel(const ZydisDecodedOperand *o)
{
    return o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && o->imm.is_relative;
}

/* Zydis prints an absolute address for each relative branch target and
 * (in AT&T, without "(%rip)") for each RIP-relative operand: print the
 * name instead when the address has one. */
static ZyanStatus print_abs(const ZydisFormatter *f, ZydisFormatterBuffer *buffer, ZydisFormatterContext *ctx)
{
    ZyanU64 a;
    if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(ctx->instruction, ctx->operand, ctx->runtime_address, &a)))
        return print_abs_default(f, buffer, ctx);
    const struct sym *s = sym_by_addr(a);
    char text[64];
    if (s)
        snprintf(text, sizeof text, "%s", s->name);
    else if (a >= buf_at && a < buf_at + buf_len)
        snprintf(text, sizeof text, "D+0x%llx", (unsigned long long)(a - buf_at));
    else
        snprintf(text, sizeof text, "0x%llx", (unsigned long long)a);
    if (is_rip(ctx->operand))
        strcat(text, "(%rip)");
    ZyanString *str;
    ZYAN_CHECK(ZydisFormatterBufferAppend(buffer, ZYDIS_TOKEN_SYMBOL));
    ZYAN_CHECK(ZydisFormatterBufferGetString(buffer, &str));
    return ZyanStringAppendFormat(str, "%s", text);
}

static void zydis_setup(void)
{
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_ATT)))
        bail("Zydis setup");
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
    print_abs_default = (ZydisFormatterFunc)print_abs;
    ZydisFormatterSetHook(&fmt, ZYDIS_FORMATTER_FUNC_PRINT_ADDRESS_ABS, (const void **)&print_abs_default);
}

/* ---- decoded code ---- */

#define MAX_INSNS 160
static struct dins {
    uint64_t addr;
    size_t off;   /* from the start of the emitted buffer */
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
    char text[160];
} ins[MAX_INSNS];
static int nins;

/* Decodes out[from..to) (out[0] at address at); false, with the offset in
 * *bad, at the first byte that is not an instruction or when one runs past to. */
static bool decode_all(const uint8_t *out, size_t from, size_t to, uint64_t at, size_t *bad)
{
    nins = 0;
    for (size_t off = from; off < to;) {
        struct dins *d = &ins[nins];
        if (nins == MAX_INSNS ||
            !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, out + off, to - off, &d->zi, d->op))) {
            *bad = off;
            return false;
        }
        d->addr = at + off;
        d->off = off;
        off += d->zi.length;
        nins++;
    }
    return true;
}

static void format_insn(struct dins *d)
{
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&fmt, &d->zi, d->op, d->zi.operand_count_visible, d->text,
                                                      sizeof d->text, d->addr, NULL))) {
        snprintf(d->text, sizeof d->text, "(bad)");
        return;
    }
    /* an indirect jmp/call's operand gets AT&T's '*' (Zydis prints none) */
    char *sp = strchr(d->text, ' ');
    if ((d->zi.mnemonic == ZYDIS_MNEMONIC_JMP || d->zi.mnemonic == ZYDIS_MNEMONIC_CALL) && sp &&
        d->zi.operand_count_visible >= 1 && d->op[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE &&
        strlen(d->text) + 2 < sizeof d->text) {
        memmove(sp + 2, sp + 1, strlen(sp + 1) + 1);
        sp[1] = '*';
    }
    for (unsigned i = 0; i < d->zi.operand_count_visible; i++)
        if (is_rel(&d->op[i]) && d->op[i].size == 8)
            strcat(d->text, " # rel8");
}

/* The absolute address the instruction's relative operand reaches (branch
 * target or RIP-relative memory); false when it has none. */
static bool rel_target(const struct dins *d, uint64_t *a, bool *rip)
{
    for (unsigned i = 0; i < d->zi.operand_count_visible; i++) {
        const ZydisDecodedOperand *o = &d->op[i];
        if (!is_rel(o) && !is_rip(o))
            continue;
        ZyanU64 v;
        if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d->zi, o, d->addr, &v)))
            return false;
        *a = v;
        *rip = is_rip(o);
        return true;
    }
    return false;
}

/* The address the relative operand of the k-th instruction of the original
 * bytes (at site) reaches: what its copy must reach too. */
static uint64_t orig_ref(const uint8_t *code, unsigned len, uint64_t site, int k)
{
    size_t bad;
    if (!decode_all(code, 0, len, site, &bad) || k >= nins)
        bail("original bytes at 0x%llx do not decode", (unsigned long long)site);
    uint64_t a;
    bool rip;
    if (!rel_target(&ins[k], &a, &rip))
        bail("instruction %d at 0x%llx has no relative operand", k, (unsigned long long)site);
    return a;
}

/* ---- expected listings ---- */

struct listing {
    const char *line[MAX_INSNS + 32];
    int n;
    char store[16384];
    size_t used;
};

static void L(struct listing *w, const char *f, ...) TAP_PRINTF(2, 3);
static void L(struct listing *w, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *p = w->store + w->used;
    int n = vsnprintf(p, sizeof w->store - w->used, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 1 > sizeof w->store - w->used || w->n == (int)(sizeof w->line / sizeof w->line[0]))
        bail("listing too long");
    w->used += (size_t)n + 1;
    w->line[w->n++] = p;
}
static void Lreset(struct listing *w) { w->n = 0; w->used = 0; }
static bool is_label(const char *l) { size_t n = strlen(l); return n && l[n - 1] == ':'; }

/* The first name of syms that a listing line refers to (a whole word). */
static const struct sym *named_in(const char *l)
{
    for (const char *p = l; *p;) {
        if ((*p >= 'a' && *p <= 'z') || *p == '_') {
            const char *q = p;
            while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_')
                q++;
            bool reg = p > l && p[-1] == '%';
            const struct sym *s = reg ? NULL : sym_by_name(p, (size_t)(q - p));
            if (s && p != l)   /* not the mnemonic */
                return s;
            p = q;
        } else
            p++;
    }
    return NULL;
}

static void show(const char *what, const struct listing *w)
{
    diag("%s: decoded (left) and expected (right):", what);
    int k = 0;
    for (int i = 0; i < w->n || k < nins;) {
        if (i < w->n && is_label(w->line[i])) {
            diag("%*s%s", 52, "", w->line[i++]);
            continue;
        }
        const char *got = k < nins ? ins[k].text : "";
        const char *want = i < w->n ? w->line[i] : "";
        char off[16] = "";
        if (k < nins)
            snprintf(off, sizeof off, "+0x%zx", ins[k].off);
        diag("%c %-7s %-40s  %s", strcmp(got, want) ? '!' : ' ', off, got, want);
        k++, i++;
    }
}

/*
 * Decodes out[from..n) (out[0] at address at) and compares it with the
 * listing: the labels are bound first (each to the address of the
 * instruction after it, as decoded), then every instruction's text is
 * compared (one check), then every address a listing line names is
 * checked against the decoded operand (one check each: a branch target, or
 * a RIP-relative operand when the line says "(%rip)").
 */
static bool check_code(const char *what, const uint8_t *out, size_t from, size_t n, uint64_t at,
                       const struct listing *w)
{
    size_t bad = 0;
    bool whole = decode_all(out, from, n, at, &bad);
    if (!ok(whole, "%s: bytes +0x%zx..+0x%zx decode into whole instructions", what, from, n)) {
        diag("undecodable at +0x%zx", bad);
        return false;
    }
    buf_at = at, buf_len = n;
    int k = 0, ninsn = 0;
    for (int i = 0; i < w->n; i++) {
        if (is_label(w->line[i])) {
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)strlen(w->line[i]) - 1, w->line[i]);
            sym(name, k < nins ? ins[k].addr : at + n);
        } else {
            k++;
            ninsn++;
        }
    }
    for (k = 0; k < nins; k++)
        format_insn(&ins[k]);
    bool same = ninsn == nins;
    k = 0;
    for (int i = 0; i < w->n && same; i++)
        if (!is_label(w->line[i]))
            same = strcmp(ins[k++].text, w->line[i]) == 0;
    if (!ok(same, "%s: %d instructions, each the expected one (mnemonic, operands, the addresses they name)",
            what, ninsn))
        show(what, w);
    /* every named address, one check each, from the decoded operand itself */
    k = 0;
    for (int i = 0; i < w->n; i++) {
        if (is_label(w->line[i]))
            continue;
        const struct dins *d = k < nins ? &ins[k] : NULL;
        k++;
        const struct sym *s = named_in(w->line[i]);
        if (!s)
            continue;
        bool want_rip = strstr(w->line[i], "(%rip)") != NULL;
        uint64_t a = 0;
        bool rip = false, has = d && rel_target(d, &a, &rip);
        if (!ok(has && a == s->addr && rip == want_rip, "%s: `%s` %s %s = 0x%llx", what, w->line[i],
                want_rip ? "has its RIP-relative operand at" : "branches to", s->name,
                (unsigned long long)s->addr)) {
            if (!d)
                diag("no instruction there");
            else if (!has)
                diag("`%s` has no relative operand", d->text);
            else
                diag("`%s` reaches 0x%llx%s", d->text, (unsigned long long)a, rip ? " (RIP-relative)" : "");
        }
    }
    return same;
}

static uint64_t label(const char *name)
{
    const struct sym *s = sym_by_name(name, strlen(name));
    return s ? s->addr : ~0ull;
}

/* ---- the emulated call of a call ending a DCR, through callsim ---- */

static const uint8_t *sim_mem;
static uint64_t sim_at;
static size_t sim_len;
static const uint8_t *sim_read(void *ctx, uint64_t addr, size_t *avail)
{
    (void)ctx;
    if (addr < sim_at || addr >= sim_at + sim_len)
        return NULL;
    *avail = sim_at + sim_len - addr;
    return sim_mem + (addr - sim_at);
}

/* The copy of the call (orig, len bytes at from) starts at out[off]: it
 * must push ret (the original code after the DCR) and go where the call went. */
static void check_emulated_call(const char *what, const uint8_t *out, size_t n, uint64_t at, size_t off,
                                const uint8_t *orig, unsigned len, uint64_t from, uint64_t ret)
{
    struct insn oi;
    if (!rc_decode(orig, len, from, &oi))
        bail("the original call does not decode");
    struct callsim_expect x = { .ret = ret, .pic = true };
    const ZydisDecodedOperand *o = &oi.op[0];
    if (o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
        x.kind = CS_DIRECT;
        x.target = from + len + (uint64_t)o->imm.value.s;
    } else if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        x.kind = CS_REG;
        x.reg = rc_gpr64(o->reg.value);
    } else {
        x.kind = CS_MEM;
        x.orig = &oi;
    }
    sim_mem = out, sim_at = at, sim_len = n;
    static struct callsim_result res;
    callsim(&x, sim_read, NULL, at + off, &res);
    if (!ok(res.complete && res.nproblems == 0,
            "%s: followed register by register, the emulated call pushes 0x%llx and goes where the call went",
            what, (unsigned long long)ret)) {
        for (unsigned j = 0; j < res.nproblems; j++)
            diag("[%s] %s", rule_name[res.problem[j].rule], res.problem[j].text);
        if (!res.complete)
            diag("the evaluation did not reach the jmp");
    }
}

/* ---- addresses ---- */

/* user space: the text, the pool after it, the runtime's data */
#define SITE 0x401000ull
#define AT 0x7f0000ull
#define COMMON 0x7e0000ull
#define THUNK 0x7e1000ull
#define STATE 0x900000ull
#define SLOT 0x9000f0ull
#define RET_SLOT 0x9000f8ull
#define KRET_SLOT 0x900100ull
#define KRET_RET_SLOT 0x900108ull
#define ENTER_SLOT 0x900110ull
/* the kernel: vmlinux text, its pool, its data */
#define KSITE 0xffffffff81000100ull
#define KAT 0xffffffff82000000ull
#define KSTATE 0xffffffff82800000ull
#define KDISPATCH 0xffffffff81400000ull
#define FAR 0x100000000ull   /* 4 GiB: beyond rel32 */

/* the named addresses every listing of a user detour may use */
static void user_syms(uint64_t site, unsigned dcr_len)
{
    sym_reset();
    sym("state", STATE);
    sym("state_1", STATE + 1);
    sym("slot", SLOT);
    sym("ret_slot", RET_SLOT);
    sym("kret_slot", KRET_SLOT);
    sym("kret_ret_slot", KRET_RET_SLOT);
    sym("back", site + dcr_len);   /* the jump back: the original code after the DCR */
}

/* ---- DCRs and out-of-line instructions ---- */

static const uint8_t dcr_riprel[] = { 0x48, 0x8b, 0x05, 0x45, 0x23, 0x00, 0x00 };   /* mov 0x2345(%rip),%rax */
static const uint8_t dcr_call[] = { 0x55,                                           /* push %rbp */
                                    0x48, 0x89, 0xe5,                               /* mov %rsp,%rbp */
                                    0xe8, 0x00, 0x10, 0x00, 0x00 };                 /* call .+0x1000 */
static const uint8_t dcr_jcc_out[] = { 0x83, 0xff, 0x01,                            /* cmp $1,%edi */
                                       0x75, 0x10 };                                /* jne .+0x10 */
static const uint8_t dcr_jcc_in[] = { 0x85, 0xff,                                   /* test %edi,%edi */
                                      0x74, 0x02,                                   /* je 1f (inside) */
                                      0x31, 0xc0,                                   /* xor %eax,%eax */
                                      0xff, 0xc0 };                                 /* 1: inc %eax */
static const uint8_t dcr_jmp_ind[] = { 0xff, 0x25, 0x00, 0x20, 0x00, 0x00 };       /* jmp *0x2000(%rip) */
static const uint8_t dcr_call_rip[] = { 0x53,                                       /* push %rbx */
                                        0xff, 0x15, 0xf0, 0xff, 0x0f, 0x00 };       /* call *0xffff0(%rip) */
static const uint8_t dcr_imm_after[] = { 0xc7, 0x05, 0x10, 0x00, 0x00, 0x00,        /* movl $1,0x10(%rip): */
                                         0x01, 0x00, 0x00, 0x00 };                  /* the disp is not last */

/* ---- x86_emit_detour ---- */

/* The template of detour.c for these parameters (the relocated DCR is
 * added by the caller after the label "copy"). */
static void user_head(struct listing *w, const struct detour_params *p)
{
    static const char *const regs[] = { "rdi", "rsi", "rdx", "rcx", "rax", "r8", "r9", "r10", "r11" };
    if (p->ret_slot && p->kret_slot) {
        L(w, "push %%r11");
        L(w, "lea state_1(%%rip), %%r11");
        L(w, p->via_thunks ? "nop" : "call *kret_slot(%%rip)");
        if (p->via_thunks)
            L(w, "call kret_slot");
        L(w, "pop %%r11");
        L(w, "jnz hooked");
        return;
    }
    L(w, "lea -0xb0(%%rsp), %%rsp");                        /* red zone + pt_regs orig_ax..ss */
    for (int i = 0; i < 9; i++)
        L(w, "push %%%s", regs[i]);
    L(w, "lea -0x30(%%rsp), %%rsp");                        /* pt_regs r15..bx */
    bool flags = p->save_flags && !p->ret_slot;
    if (flags) {
        L(w, "lahf");
        L(w, "seto %%al");
        L(w, "movzx %%ah, %%ecx");
        L(w, "movzx %%al, %%edx");
        L(w, "shl $0xb, %%edx");
        L(w, "or %%edx, %%ecx");
        L(w, "or $0x202, %%ecx");
        L(w, "mov %%rcx, 0x%x(%%rsp)", PTREGS_FLAGS);
    }
    L(w, "lea state(%%rip), %%rdi");
    L(w, "mov %%rsp, %%rsi");
    if (!p->entry_aligned) {
        L(w, "and $-0x10, %%rsp");
        L(w, "push %%rsi");
        L(w, "push %%rsi");
    }
    if (p->via_thunks) {
        L(w, "nop");
        L(w, "call slot");
    } else
        L(w, "call *slot(%%rip)");
    if (!p->entry_aligned)
        L(w, "pop %%rsp");
    if (p->ret_slot)
        L(w, "mov %%rax, 0x%x(%%rsp)", PTREGS_ORIG_AX);
    if (flags) {
        L(w, "mov 0x%x(%%rsp), %%rax", PTREGS_FLAGS);
        L(w, "mov %%rax, %%rcx");
        L(w, "shr $0xb, %%rcx");
        L(w, "and $0x1, %%ecx");
        L(w, "mov %%al, %%ah");
        L(w, "mov %%cl, %%al");
        L(w, "add $0x7f, %%al");
        L(w, "sahf");
    }
    L(w, "lea 0x30(%%rsp), %%rsp");
    for (int i = 8; i >= 0; i--)
        L(w, "pop %%%s", regs[i]);
    if (p->ret_slot)
        L(w, "cmpq $0x0, (%%rsp)");
    L(w, "lea 0xb0(%%rsp), %%rsp");
    if (p->ret_slot)
        L(w, "jnz hooked");
}

/* The return frame: pt_regs below the return address's slot, the return
 * handler called through ret_slot, its answer stored in that slot. */
static void return_frame(struct listing *w, bool via_thunks, bool aligned, const char *slot)
{
    static const char *const regs[] = { "rdi", "rsi", "rdx", "rcx", "rax", "r8",  "r9", "r10",
                                        "r11", "rbx", "rbp", "r12", "r13", "r14", "r15" };
    L(w, "lea -0x38(%%rsp), %%rsp");
    for (int i = 0; i < 15; i++)
        L(w, "push %%%s", regs[i]);
    L(w, "mov %%rsp, %%rdi");
    if (!aligned) {
        L(w, "mov %%rsp, %%rbx");
        L(w, "and $-0x10, %%rsp");
    }
    if (via_thunks) {
        L(w, "nop");
        L(w, "call %s", slot);
    } else
        L(w, "call *%s(%%rip)", slot);
    if (!aligned)
        L(w, "mov %%rbx, %%rsp");
    L(w, "mov %%rax, 0x%x(%%rsp)", PTREGS_SIZE);
    for (int i = 14; i >= 0; i--)
        L(w, "pop %%%s", regs[i]);
    L(w, "lea 0x30(%%rsp), %%rsp");
}

/* After the relocated DCR of a return probe: the hooked path. */
static void user_tail(struct listing *w, const struct detour_params *p)
{
    if (!p->ret_slot)
        return;
    L(w, "hooked:");
    L(w, "lea 0x8(%%rsp), %%rsp");
    L(w, "call copy");
    L(w, "hook:");
    if (p->kret_return_slot)
        L(w, "jmp *kret_ret_slot(%%rip)");
    else {
        return_frame(w, p->via_thunks, p->entry_aligned, "ret_slot");
        L(w, "ret");
    }
}

static const char *describe(const struct detour_params *p, char *buf, size_t size)
{
    snprintf(buf, size, "%s detour (%s%s%s%s)", p->kernel ? "kernel" : "inline",
             p->save_flags ? "flags live" : "flags dead", p->entry_aligned ? ", entry-aligned" : ", unaligned",
             p->ret_slot ? (p->kret_slot ? (p->kret_return_slot ? ", return probe, 4-slot pool"
                                                                 : ", return probe, 3-slot pool")
                                         : ", return probe, 2-slot pool")
                         : "",
             p->via_thunks ? ", via thunks" : "");
    return buf;
}

static uint8_t out[DETOUR_MAX + 64];

/* An inline user detour of `dcr`, whose relocated copy is `copy` (lines
 * after the label "copy", before the jmp back); returns its length. */
static struct x86_copy_map dmap;   /* the copy map of the last check_detour */
static size_t check_detour(const struct detour_params *p, const char *dcr_name, void (*copy)(struct listing *))
{
    char what[200], d[160];
    snprintf(what, sizeof what, "%s of %s", describe(p, d, sizeof d), dcr_name);
    size_t dcr_off = 0, hook_off = 0;
    char err[256] = "";
    memset(out, 0xcc, sizeof out);
    memset(&dmap, 0x55, sizeof dmap);
    size_t n = x86_emit_detour(p, out, &dcr_off, &hook_off, &dmap, err, sizeof err);
    if (!ok(n > 0 && n <= DETOUR_MAX, "%s: emitted (%zu bytes, at most DETOUR_MAX)", what, n)) {
        diag("error: %s", err);
        return 0;
    }
    static struct listing w;
    Lreset(&w);
    user_head(&w, p);
    L(&w, "copy:");
    copy(&w);
    L(&w, "jmp back");
    user_tail(&w, p);
    check_code(what, out, 0, n, p->at, &w);
    is_hex(label("copy"), p->at + dcr_off, "%s: *dcr_off is the first instruction of the relocated DCR", what);
    if (p->ret_slot)
        is_hex(label("hook"), p->at + hook_off, "%s: *hook_off is the return address of the call of the copy", what);
    is_hex(p->at + dcr_off, p->at + dmap.off[0], "%s: the copy map puts the DCR's first instruction at *dcr_off", what);
    return n;
}

static void copy_riprel(struct listing *w) { L(w, "mov data(%%rip), %%rax"); }
static void copy_call(struct listing *w)
{
    L(w, "push %%rbp");
    L(w, "mov %%rsp, %%rbp");
    /* the call, emulated: its return address is the original code after the DCR */
    L(w, "lea -0x8(%%rsp), %%rsp");
    L(w, "push %%rax");
    L(w, "lea back(%%rip), %%rax");
    L(w, "mov %%rax, 0x8(%%rsp)");
    L(w, "pop %%rax");
    L(w, "jmp target");
}
static void copy_jcc_out(struct listing *w)
{
    L(w, "cmp $0x1, %%edi");
    L(w, "jnz target");
}
static void copy_jcc_in(struct listing *w)
{
    L(w, "test %%edi, %%edi");
    L(w, "c_je:");
    L(w, "jz c_inc");   /* to the copy of inc, not to the site's bytes */
    L(w, "c_xor:");
    L(w, "xor %%eax, %%eax");
    L(w, "c_inc:");
    L(w, "inc %%eax");
}
static void copy_jmp_ind(struct listing *w) { L(w, "jmp *data(%%rip)"); }
static void copy_call_rip(struct listing *w)
{
    L(w, "push %%rbx");
    L(w, "lea -0x8(%%rsp), %%rsp");
    L(w, "push %%rax");
    L(w, "lea back(%%rip), %%rax");
    L(w, "mov %%rax, 0x8(%%rsp)");
    L(w, "pop %%rax");
    L(w, "jmp *data(%%rip)");   /* the call's pointer, read from where the call read it */
}
static void copy_imm_after(struct listing *w) { L(w, "movl $0x1, data(%%rip)"); }

/* The rel32 of every relative instruction of the copy: x86_emit_detour
 * writes branches as rel32 whatever the original's size. */
static void no_rel8(const char *what)
{
    bool any = false;
    for (int k = 0; k < nins; k++)
        for (unsigned i = 0; i < ins[k].zi.operand_count_visible; i++)
            if (is_rel(&ins[k].op[i]) && ins[k].op[i].size != 32)
                any = true;
    ok(!any, "%s: every branch of the detour has a 32-bit displacement (a rel8 one is widened)", what);
}

static void test_detours(void)
{
    char d[160], what[200];
    struct detour_params p;

    /* a RIP-relative load, flags live, %rsp not known aligned */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_riprel, .dcr_len = sizeof dcr_riprel,
                                .state = STATE, .slot = SLOT, .save_flags = true };
    user_syms(SITE, sizeof dcr_riprel);
    sym("data", orig_ref(dcr_riprel, sizeof dcr_riprel, SITE, 0));
    check_detour(&p, "mov 0x2345(%rip),%rax", copy_riprel);

    /* a call ending the DCR, at a function entry, in an added pool (thunks) */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_call, .dcr_len = sizeof dcr_call,
                                .state = STATE, .slot = SLOT, .entry_aligned = true, .via_thunks = true };
    user_syms(SITE, sizeof dcr_call);
    sym("target", orig_ref(dcr_call, sizeof dcr_call, SITE, 2));
    size_t n = check_detour(&p, "push %rbp; mov %rsp,%rbp; call rel32", copy_call);
    if (n) {
        snprintf(what, sizeof what, "%s of a call rel32", describe(&p, d, sizeof d));
        check_emulated_call(what, out, n, AT, (size_t)(label("copy") - AT) + 4, dcr_call + 4, 5, SITE + 4,
                            SITE + sizeof dcr_call);
    }

    /* a jcc rel8 out of the DCR, flags dead, %rsp not known aligned */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_jcc_out, .dcr_len = sizeof dcr_jcc_out,
                                .state = STATE, .slot = SLOT };
    user_syms(SITE, sizeof dcr_jcc_out);
    sym("target", orig_ref(dcr_jcc_out, sizeof dcr_jcc_out, SITE, 1));
    if (check_detour(&p, "cmp $1,%edi; jne rel8", copy_jcc_out))
        no_rel8("inline detour of cmp; jne rel8");

    /* a jcc rel8 to a later instruction of the DCR: it goes to that
     * instruction's copy; the copy map says where each copy starts */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_jcc_in, .dcr_len = sizeof dcr_jcc_in,
                                .state = STATE, .slot = SLOT, .save_flags = true, .entry_aligned = true };
    user_syms(SITE, sizeof dcr_jcc_in);
    n = check_detour(&p, "test; je (inside); xor; inc", copy_jcc_in);
    if (n) {
        snprintf(what, sizeof what, "%s of test; je (inside); xor; inc", describe(&p, d, sizeof d));
        no_rel8(what);
        bool holes = dmap.off[1] == 0xffff && dmap.off[3] == 0xffff && dmap.off[5] == 0xffff && dmap.off[7] == 0xffff;
        for (unsigned k = sizeof dcr_jcc_in; k < X86_COPY_MAX; k++)
            holes = holes && dmap.off[k] == 0xffff;
        ok(dmap.off[2] == label("c_je") - AT && dmap.off[4] == label("c_xor") - AT && dmap.off[6] == label("c_inc") - AT &&
               holes,
           "%s: the copy map gives each instruction's copy (bytes 2, 4, 6) and 0xffff for the other bytes", what);
    }

    /* jmp *disp(%rip): the copy reads the same pointer */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_jmp_ind, .dcr_len = sizeof dcr_jmp_ind,
                                .state = STATE, .slot = SLOT, .save_flags = true };
    user_syms(SITE, sizeof dcr_jmp_ind);
    sym("data", orig_ref(dcr_jmp_ind, sizeof dcr_jmp_ind, SITE, 0));
    check_detour(&p, "jmp *0x2000(%rip)", copy_jmp_ind);

    /* return probes: a pool with only the dispatcher and the return handler
     * slots (the detour carries the whole frame) */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_riprel, .dcr_len = sizeof dcr_riprel,
                                .state = STATE, .slot = SLOT, .entry_aligned = true, .ret_slot = RET_SLOT };
    user_syms(SITE, sizeof dcr_riprel);
    sym("data", orig_ref(dcr_riprel, sizeof dcr_riprel, SITE, 0));
    check_detour(&p, "mov 0x2345(%rip),%rax", copy_riprel);

    /* ... with the return-probe entry and the return frame of the runtime
     * (the current pool), and an indirect call ending the DCR */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_call_rip, .dcr_len = sizeof dcr_call_rip,
                                .state = STATE, .slot = SLOT, .entry_aligned = true, .ret_slot = RET_SLOT,
                                .kret_slot = KRET_SLOT, .kret_return_slot = KRET_RET_SLOT };
    user_syms(SITE, sizeof dcr_call_rip);
    sym("data", orig_ref(dcr_call_rip, sizeof dcr_call_rip, SITE, 1));
    n = check_detour(&p, "push %rbx; call *0xffff0(%rip)", copy_call_rip);
    if (n) {
        snprintf(what, sizeof what, "%s of call *disp(%%rip)", describe(&p, d, sizeof d));
        check_emulated_call(what, out, n, AT, (size_t)(label("copy") - AT) + 1, dcr_call_rip + 1, 6, SITE + 1,
                            SITE + sizeof dcr_call_rip);
    }

    /* ... the return-probe entry but the detour's own return frame, in an
     * added pool (thunks), %rsp not known aligned */
    p = (struct detour_params){ .at = AT, .site = SITE, .dcr = dcr_riprel, .dcr_len = sizeof dcr_riprel,
                                .state = STATE, .slot = SLOT, .ret_slot = RET_SLOT, .kret_slot = KRET_SLOT,
                                .via_thunks = true };
    user_syms(SITE, sizeof dcr_riprel);
    sym("data", orig_ref(dcr_riprel, sizeof dcr_riprel, SITE, 0));
    check_detour(&p, "mov 0x2345(%rip),%rax", copy_riprel);
}

/* The kernel template: every register in pt_regs, the flags register
 * recorded whole, no red zone, the dispatcher called directly. */
static void check_kernel_detour(const struct detour_params *p, const char *dcr_name, void (*copy)(struct listing *))
{
    static const char *const regs[] = { "rdi", "rsi", "rdx", "rcx", "rax", "r8",  "r9", "r10",
                                        "r11", "rbx", "rbp", "r12", "r13", "r14", "r15" };
    char what[200], d[160];
    snprintf(what, sizeof what, "%s of %s", describe(p, d, sizeof d), dcr_name);
    size_t dcr_off = 0, hook_off = 0;
    struct x86_copy_map map;
    char err[256] = "";
    memset(out, 0xcc, sizeof out);
    size_t n = x86_emit_detour(p, out, &dcr_off, &hook_off, &map, err, sizeof err);
    if (!ok(n > 0 && n <= DETOUR_MAX, "%s: emitted (%zu bytes)", what, n)) {
        diag("error: %s", err);
        return;
    }
    static struct listing w;
    Lreset(&w);
    L(&w, "lea -0x30(%%rsp), %%rsp");   /* pt_regs orig_ax..ss: no red zone */
    for (int i = 0; i < 15; i++)
        L(&w, "push %%%s", regs[i]);
    L(&w, "pushfq");
    L(&w, "pop 0x%x(%%rsp)", PTREGS_FLAGS);
    L(&w, "lea state(%%rip), %%rdi");
    L(&w, "mov %%rsp, %%rsi");
    if (!p->entry_aligned) {
        L(&w, "and $-0x10, %%rsp");
        L(&w, "push %%rsi");
        L(&w, "push %%rsi");
    }
    if (p->via_thunks) {
        L(&w, "nop");
        L(&w, "call slot");
    } else
        L(&w, "call *slot(%%rip)");
    if (!p->entry_aligned)
        L(&w, "pop %%rsp");
    if (p->save_flags) {   /* the arithmetic flags back with sahf, never popfq (IF) */
        L(&w, "mov 0x%x(%%rsp), %%rax", PTREGS_FLAGS);
        L(&w, "mov %%rax, %%rcx");
        L(&w, "shr $0xb, %%rcx");
        L(&w, "and $0x1, %%ecx");
        L(&w, "mov %%al, %%ah");
        L(&w, "mov %%cl, %%al");
        L(&w, "add $0x7f, %%al");
        L(&w, "sahf");
    }
    for (int i = 14; i >= 0; i--)
        L(&w, "pop %%%s", regs[i]);
    L(&w, "lea 0x30(%%rsp), %%rsp");
    L(&w, "copy:");
    copy(&w);
    L(&w, "jmp back");
    check_code(what, out, 0, n, p->at, &w);
    is_hex(label("copy"), p->at + dcr_off, "%s: *dcr_off is the first instruction of the relocated DCR", what);
}

static void test_kernel_detours(void)
{
    struct detour_params p = { .at = KAT, .site = KSITE, .dcr = dcr_imm_after, .dcr_len = sizeof dcr_imm_after,
                               .state = KSTATE, .slot = KDISPATCH, .save_flags = true, .via_thunks = true,
                               .kernel = true };
    sym_reset();
    sym("state", KSTATE);
    sym("slot", KDISPATCH);
    sym("back", KSITE + sizeof dcr_imm_after);
    sym("data", orig_ref(dcr_imm_after, sizeof dcr_imm_after, KSITE, 0));
    check_kernel_detour(&p, "movl $1,0x10(%rip) (an immediate after the displacement)", copy_imm_after);

    p = (struct detour_params){ .at = KAT, .site = KSITE, .dcr = dcr_jcc_out, .dcr_len = sizeof dcr_jcc_out,
                                .state = KSTATE, .slot = KDISPATCH, .entry_aligned = true, .via_thunks = true,
                                .kernel = true };
    sym_reset();
    sym("state", KSTATE);
    sym("slot", KDISPATCH);
    sym("back", KSITE + sizeof dcr_jcc_out);
    sym("target", orig_ref(dcr_jcc_out, sizeof dcr_jcc_out, KSITE, 1));
    check_kernel_detour(&p, "cmp $1,%edi; jne rel8", copy_jcc_out);
}

/* A refusal: 0 (or false), and the message says why. */
static void refused(const char *what, size_t n, const char *err, const char *want)
{
    if (!ok(n == 0 && strstr(err, want) != NULL, "%s: refused, \"%s\"", what, want))
        diag("returned %zu, message '%s'", n, err);
}

static void test_detour_refusals(void)
{
    size_t dcr_off, hook_off;
    struct x86_copy_map map;
    char err[256];
    struct detour_params base = { .at = AT, .site = SITE, .dcr = dcr_riprel, .dcr_len = sizeof dcr_riprel,
                                  .state = STATE, .slot = SLOT, .save_flags = true };
    struct detour_params p;
#define TRY(what, want)                                                                                 \
    do {                                                                                              \
        err[0] = 0;                                                                                   \
        refused(what, x86_emit_detour(&p, out, &dcr_off, &hook_off, &map, err, sizeof err), err, want); \
    } while (0)

    p = base, p.slot = AT + FAR;
    TRY("inline detour, the dispatcher's slot 4 GiB away", "out of rel32 reach");
    p = base, p.state = AT - FAR;
    TRY("inline detour, the state 4 GiB away", "out of rel32 reach");
    p = base, p.at = SITE + FAR;
    TRY("inline detour 4 GiB from its site", "out of rel32 reach");
    /* the site in reach (1 GiB), the DCR's operand not (1 GiB + 1.5 GiB) */
    static const uint8_t far_data[] = { 0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x60 };   /* mov 0x60000000(%rip),%rax */
    p = base, p.at = SITE - 0x40000000ull, p.dcr = far_data, p.dcr_len = sizeof far_data;
    TRY("inline detour 1 GiB below its site, a RIP-relative operand 1.5 GiB above it",
        "target out of rel32 reach from the pool");
    static const uint8_t far_jcc[] = { 0x85, 0xff, 0x0f, 0x84, 0x00, 0x00, 0x00, 0x60 };   /* test; je .+0x60000000 */
    p = base, p.at = SITE - 0x40000000ull, p.dcr = far_jcc, p.dcr_len = sizeof far_jcc;
    TRY("inline detour 1 GiB below its site, a jcc's target 1.5 GiB above it",
        "target out of rel32 reach from the pool");
    p = base, p.ret_slot = RET_SLOT, p.kret_slot = AT + FAR, p.save_flags = false, p.entry_aligned = true;
    TRY("return probe, the return-probe entry's slot 4 GiB away", "out of rel32 reach");
    p = base, p.ret_slot = RET_SLOT, p.kret_slot = KRET_SLOT, p.kret_return_slot = AT + FAR;
    TRY("return probe, the return frame's slot 4 GiB away", "out of rel32 reach");
    p = base, p.ret_slot = AT + FAR, p.entry_aligned = true;
    TRY("return probe (2-slot pool), the return handler's slot 4 GiB away", "out of rel32 reach");
    p = base, p.kernel = true, p.ret_slot = RET_SLOT;
    TRY("a return probe in the kernel contract", "return probes are not baked into a kernel");
    static const uint8_t call_inside[] = { 0xe8, 0x00, 0x10, 0x00, 0x00, 0x90 };   /* call; nop */
    p = base, p.dcr = call_inside, p.dcr_len = sizeof call_inside;
    TRY("a call that is not the DCR's last instruction", "is not the last instruction copied");
    static const uint8_t syscall[] = { 0x0f, 0x05, 0x90, 0x90, 0x90 };
    p = base, p.dcr = syscall, p.dcr_len = sizeof syscall;
    TRY("a syscall in the DCR", "syscall-like at 0x401000 cannot run out of line");
    static const uint8_t loop[] = { 0xe2, 0x10, 0x90, 0x90, 0x90 };
    p = base, p.dcr = loop, p.dcr_len = sizeof loop;
    TRY("a loop in the DCR", "loop/jrcxz (rel8 only) at 0x401000 cannot run out of line");
    static const uint8_t undecodable[] = { 0x90, 0x06, 0x90, 0x90, 0x90 };   /* push %es: not in 64-bit mode */
    p = base, p.dcr = undecodable, p.dcr_len = sizeof undecodable;
    TRY("an undecodable byte in the DCR", "undecodable DCR byte at 0x401001");
    static const uint8_t into_insn[] = { 0xeb, 0x01, 0xb8, 0x01, 0x00, 0x00, 0x00 };   /* jmp .+1 into mov $1,%eax */
    p = base, p.dcr = into_insn, p.dcr_len = sizeof into_insn;
    TRY("a branch into the middle of a DCR instruction", "lands inside an instruction of its DCR");
    static uint8_t too_long[X86_COPY_MAX + 1];
    memset(too_long, 0x90, sizeof too_long);
    p = base, p.dcr = too_long, p.dcr_len = sizeof too_long;
    TRY("a DCR longer than X86_COPY_MAX", "is too long");
    static const uint8_t call_rsp[] = { 0x90, 0xff, 0xd4 };   /* nop; call *%rsp */
    p = base, p.dcr = call_rsp, p.dcr_len = sizeof call_rsp;
    TRY("call *%rsp ending the DCR (the emulation moved %rsp)", "cannot be read the same way out of line");
#undef TRY
}

/* ---- shared and compact detours ---- */

/* A detour that is a 4-byte word, then a head_len-byte head whose call's
 * return address R starts the relocated DCR (check_code defined the labels
 * entry and copy): where *entry_off, *dcr_off and the copy map point, and
 * that the word, at R - 4 - head_len, gives the probe's state as R + word. */
static void check_word_head(const char *what, size_t entry_off, size_t dcr_off, const struct x86_copy_map *map,
                            int head_len)
{
    is_int(4, (long long)entry_off, "%s: *entry_off is 4: a 4-byte word, then the head", what);
    is_hex(label("entry"), AT + entry_off, "%s: *entry_off is the head's first instruction", what);
    is_hex(label("copy"), AT + dcr_off, "%s: *dcr_off is the first instruction of the relocated DCR", what);
    is_hex(AT + dcr_off, AT + map->off[0], "%s: the copy map puts the DCR at *dcr_off", what);
    int32_t word;
    memcpy(&word, out, 4);
    uint64_t r = label("copy");
    is_hex(AT, r - 4 - head_len, "%s: the word at R - %d (R the head call's return address) is the detour's first 4 bytes",
           what, 4 + head_len);
    is_hex(STATE, r + (int64_t)word, "%s: R + the word is the probe's state", what);
}

static void test_shared(void)
{
    char what[200];
    static struct listing w;
    for (int v = 0; v < 4; v++) {
        bool flags = v & 1, thunk = v & 2;
        snprintf(what, sizeof what, "shared common body (%s%s)", flags ? "flags live" : "flags dead",
                 thunk ? ", via a thunk" : "");
        sym_reset();
        sym("slot", SLOT);
        memset(out, 0xcc, sizeof out);
        size_t n = x86_emit_shared_common(COMMON, SLOT, thunk, flags, out);
        if (!ok(n > 0 && n <= DETOUR_MAX, "%s: emitted (%zu bytes)", what, n))
            continue;
        static const char *const regs[] = { "rdi", "rsi", "rdx", "rcx", "rax", "r8", "r9", "r10", "r11" };
        Lreset(&w);
        L(&w, "lea -0x%x(%%rsp), %%rsp", PTREGS_SS);   /* the return address R in pt_regs.ss */
        for (int i = 0; i < 9; i++)
            L(&w, "mov %%%s, 0x%x(%%rsp)", regs[i], PTREGS_DI - 8 * i);
        if (flags) {
            L(&w, "lahf");
            L(&w, "seto %%al");
            L(&w, "movzx %%ah, %%ecx");
            L(&w, "movzx %%al, %%edx");
            L(&w, "shl $0xb, %%edx");
            L(&w, "or %%edx, %%ecx");
            L(&w, "or $0x202, %%ecx");
            L(&w, "mov %%rcx, 0x%x(%%rsp)", PTREGS_FLAGS);
        }
        L(&w, "push 0x%x(%%rsp)", PTREGS_SS);
        L(&w, "mov (%%rsp), %%rax");
        L(&w, "movsxdl -0xe(%%rax), %%rdi");   /* the detour's word before its head: R - 14 */
        L(&w, "lea (%%rax,%%rdi,1), %%rdi");
        L(&w, "lea 0x8(%%rsp), %%rsi");
        L(&w, "mov %%rsp, %%rdx");
        L(&w, "and $-0x10, %%rsp");
        L(&w, "push %%rdx");
        L(&w, "push %%rdx");
        if (thunk) {
            L(&w, "nop");
            L(&w, "call slot");
        } else
            L(&w, "call *slot(%%rip)");
        L(&w, "pop %%rsp");
        if (flags) {
            L(&w, "mov 0x%x(%%rsp), %%rax", 8 + PTREGS_FLAGS);
            L(&w, "mov %%rax, %%rcx");
            L(&w, "shr $0xb, %%rcx");
            L(&w, "and $0x1, %%ecx");
            L(&w, "mov %%al, %%ah");
            L(&w, "mov %%cl, %%al");
            L(&w, "add $0x7f, %%al");
            L(&w, "sahf");
        }
        L(&w, "pop 0x%x(%%rsp)", PTREGS_SS);
        for (int i = 8; i >= 0; i--)
            L(&w, "mov 0x%x(%%rsp), %%%s", PTREGS_DI - 8 * i, regs[i]);
        L(&w, "lea 0x%x(%%rsp), %%rsp", PTREGS_SS);
        L(&w, "ret $0x80");   /* to R, and over the red zone the head skipped */
        check_code(what, out, 0, n, COMMON, &w);
    }
    sym_reset();
    ok(x86_emit_shared_common(COMMON, COMMON + FAR, false, true, out) == 0,
       "shared common body, the dispatcher's slot 4 GiB away: refused (0)");

    /* a probe's shared detour: word, head, copy, jmp back */
    size_t entry_off = 99, dcr_off = 99;
    struct x86_copy_map map;
    char err[256] = "";
    memset(out, 0xcc, sizeof out);
    size_t n = x86_emit_shared_detour(AT, SITE, dcr_riprel, sizeof dcr_riprel, STATE, COMMON, out, &entry_off,
                                      &dcr_off, &map, err, sizeof err);
    snprintf(what, sizeof what, "shared detour of mov 0x2345(%%rip),%%rax");
    if (ok(n > 0 && n <= DETOUR_MAX, "%s: emitted (%zu bytes)", what, n)) {
        user_syms(SITE, sizeof dcr_riprel);
        sym("common", COMMON);
        sym("data", orig_ref(dcr_riprel, sizeof dcr_riprel, SITE, 0));
        Lreset(&w);
        L(&w, "entry:");
        L(&w, "lea -0x80(%%rsp), %%rsp");   /* the red zone */
        L(&w, "call common");
        L(&w, "copy:");
        copy_riprel(&w);
        L(&w, "jmp back");
        check_code(what, out, entry_off, n, AT, &w);
        /* common finds the state from R, the return address of its call:
         * R - 14 is the word (a 5-byte lea, a 5-byte call), R + word the state */
        check_word_head(what, entry_off, dcr_off, &map, 10);
    }
    err[0] = 0;
    refused("shared detour, the state 4 GiB away",
            x86_emit_shared_detour(AT, SITE, dcr_riprel, sizeof dcr_riprel, AT + FAR, COMMON, out, &entry_off,
                                   &dcr_off, &map, err, sizeof err), err, "out of rel32 reach");
    err[0] = 0;
    refused("shared detour, the common body 4 GiB away",
            x86_emit_shared_detour(AT, SITE, dcr_riprel, sizeof dcr_riprel, STATE, AT + FAR, out, &entry_off,
                                   &dcr_off, &map, err, sizeof err), err, "out of rel32 reach");
    err[0] = 0;
    refused("shared detour of a syscall",
            x86_emit_shared_detour(AT, SITE, (const uint8_t *)"\x0f\x05\x90\x90\x90", 5, STATE, COMMON, out,
                                   &entry_off, &dcr_off, &map, err, sizeof err), err, "cannot run out of line");
}

static void test_compact(void)
{
    char what[200];
    static struct listing w;
    for (int thunk = 0; thunk < 2; thunk++) {
        snprintf(what, sizeof what, "compact detour of push %%rbp; mov %%rsp,%%rbp; call rel32%s",
                 thunk ? ", via the entry thunk" : "");
        size_t entry_off = 99, dcr_off = 99;
        struct x86_copy_map map;
        char err[256] = "";
        memset(out, 0xcc, sizeof out);
        uint64_t enter = thunk ? THUNK : ENTER_SLOT;
        size_t n = x86_emit_compact_detour(AT, SITE, dcr_call, sizeof dcr_call, STATE, enter, thunk, out, &entry_off,
                                           &dcr_off, &map, err, sizeof err);
        if (!ok(n > 0 && n <= DETOUR_MAX, "%s: emitted (%zu bytes)", what, n)) {
            diag("error: %s", err);
            continue;
        }
        user_syms(SITE, sizeof dcr_call);
        sym("enter", enter);
        sym("target", orig_ref(dcr_call, sizeof dcr_call, SITE, 2));
        Lreset(&w);
        L(&w, "entry:");
        if (thunk) {
            L(&w, "nop");
            L(&w, "call enter");
        } else
            L(&w, "call *enter(%%rip)");
        L(&w, "copy:");
        copy_call(&w);
        L(&w, "jmp back");
        check_code(what, out, entry_off, n, AT, &w);
        check_word_head(what, entry_off, dcr_off, &map, 6);   /* the 6-byte head: a call */
        check_emulated_call(what, out, n, AT, (size_t)(label("copy") - AT) + 4, dcr_call + 4, 5, SITE + 4,
                            SITE + sizeof dcr_call);
    }
    size_t entry_off, dcr_off;
    struct x86_copy_map map;
    char err[256] = "";
    refused("compact detour, the state 4 GiB away",
            x86_emit_compact_detour(AT, SITE, dcr_call, sizeof dcr_call, AT + FAR, ENTER_SLOT, false, out, &entry_off,
                                    &dcr_off, &map, err, sizeof err), err, "out of rel32 reach");
    err[0] = 0;
    refused("compact detour, the entry's slot 4 GiB away",
            x86_emit_compact_detour(AT, SITE, dcr_call, sizeof dcr_call, STATE, AT + FAR, false, out, &entry_off,
                                    &dcr_off, &map, err, sizeof err), err, "out of rel32 reach");
    err[0] = 0;
    refused("compact detour 4 GiB from its site",
            x86_emit_compact_detour(SITE + FAR, SITE, dcr_call, sizeof dcr_call, SITE + FAR + 0x1000, SITE + FAR + 8,
                                    false, out, &entry_off, &dcr_off, &map, err, sizeof err), err,
            "out of rel32 reach");
}

/* ---- thunks and the return trampoline ---- */

static void test_thunks(void)
{
    static struct listing w;
    size_t n;

    sym_reset();
    sym("slot", ENTER_SLOT);
    memset(out, 0xcc, sizeof out);
    n = x86_emit_enter_slot_thunk(THUNK, ENTER_SLOT, out);
    if (ok(n > 0, "entry slot thunk: emitted (%zu bytes)", n)) {
        Lreset(&w);
        L(&w, "cmpq $0x0, slot(%%rip)");
        L(&w, "jz empty # rel8");
        L(&w, "jmp *slot(%%rip)");
        L(&w, "empty:");
        L(&w, "ret");   /* the slot is empty: the hit is not counted */
        check_code("entry slot thunk", out, 0, n, THUNK, &w);
    }
    ok(x86_emit_enter_slot_thunk(THUNK, THUNK + FAR, out) == 0, "entry slot thunk, its slot 4 GiB away: refused (0)");

    memset(out, 0xcc, sizeof out);
    n = x86_emit_kret_slot_thunk(THUNK, KRET_SLOT, out);
    sym_reset();
    sym("slot", KRET_SLOT);
    if (ok(n > 0, "return-probe entry slot thunk: emitted (%zu bytes)", n)) {
        Lreset(&w);
        L(&w, "cmpq $0x0, slot(%%rip)");
        L(&w, "jz empty # rel8");
        L(&w, "jmp *slot(%%rip)");
        L(&w, "empty:");
        L(&w, "xor %%r11d, %%r11d");   /* ZF set: the call is not taken */
        L(&w, "ret");
        check_code("return-probe entry slot thunk", out, 0, n, THUNK, &w);
    }
    ok(x86_emit_kret_slot_thunk(THUNK, THUNK - FAR, out) == 0,
       "return-probe entry slot thunk, its slot 4 GiB away: refused (0)");

    memset(out, 0xcc, sizeof out);
    n = x86_emit_slot_thunk(THUNK, SLOT, out);
    sym_reset();
    sym("slot", SLOT);
    if (ok(n > 0 && n <= SLOT_THUNK_MAX, "dispatcher slot thunk: emitted (%zu bytes, at most SLOT_THUNK_MAX)", n)) {
        Lreset(&w);
        L(&w, "mov slot(%%rip), %%rax");
        L(&w, "test %%rax, %%rax");
        L(&w, "jz empty # rel8");
        L(&w, "jmp *%%rax");
        L(&w, "empty:");
        L(&w, "xor %%eax, %%eax");   /* the dispatcher's answer while the slot is empty: 0 */
        L(&w, "ret");
        check_code("dispatcher slot thunk", out, 0, n, THUNK, &w);
    }
    ok(x86_emit_slot_thunk(THUNK, THUNK + FAR, out) == 0, "dispatcher slot thunk, its slot 4 GiB away: refused (0)");

    for (int thunk = 0; thunk < 2; thunk++) {
        char what[100];
        snprintf(what, sizeof what, "return trampoline%s", thunk ? " via a thunk" : "");
        memset(out, 0xcc, sizeof out);
        n = x86_emit_ret_trampoline(THUNK, RET_SLOT, thunk, out);
        sym_reset();
        sym("ret_slot", RET_SLOT);
        if (ok(n > 0 && n <= RET_TRAMPOLINE_MAX, "%s: emitted (%zu bytes, at most RET_TRAMPOLINE_MAX)", what, n)) {
            Lreset(&w);
            return_frame(&w, thunk, false, "ret_slot");
            L(&w, "lea 0x8(%%rsp), %%rsp");
            L(&w, "jmp *-0x8(%%rsp)");   /* to the real return address, stored by the frame */
            check_code(what, out, 0, n, THUNK, &w);
        }
    }
    ok(x86_emit_ret_trampoline(THUNK, THUNK + FAR, false, out) == 0,
       "return trampoline, its slot 4 GiB away: refused (0)");
}

/* ---- out-of-line copies of int3 probes ---- */

static void test_ool(void)
{
    static struct listing w;
    static const struct {
        const char *name;
        uint8_t code[16];
        unsigned len;
        const char *copy[8];   /* the copy, before the jmp back; "target"/"data": the original's operand */
        int ref;               /* the instruction whose relative operand is named, or -1 */
        int call_at;           /* offset of the emulated call in the copy, or -1 */
    } cases[] = {
        { "jmp rel8", { 0xeb, 0x10 }, 2, { "jmp target" }, 0, -1 },
        { "jmp rel32", { 0xe9, 0x00, 0x00, 0x01, 0x00 }, 5, { "jmp target" }, 0, -1 },
        { "jcc rel8", { 0x7c, 0xf0 }, 2, { "jl target" }, 0, -1 },
        { "jcc rel32", { 0x0f, 0x84, 0x00, 0x10, 0x00, 0x00 }, 6, { "jz target" }, 0, -1 },
        { "call rel32", { 0xe8, 0xfb, 0xef, 0xff, 0xff }, 5,
          { "lea -0x8(%rsp), %rsp", "push %rax", "lea back(%rip), %rax", "mov %rax, 0x8(%rsp)", "pop %rax",
            "jmp target" }, 0, 0 },
        { "call *disp(%rip)", { 0xff, 0x15, 0x00, 0x30, 0x00, 0x00 }, 6,
          { "lea -0x8(%rsp), %rsp", "push %rax", "lea back(%rip), %rax", "mov %rax, 0x8(%rsp)", "pop %rax",
            "jmp *data(%rip)" }, 0, 0 },
        { "call *8(%rsp)", { 0xff, 0x54, 0x24, 0x08 }, 4,
          { "lea -0x8(%rsp), %rsp", "push %rax", "lea back(%rip), %rax", "mov %rax, 0x8(%rsp)", "pop %rax",
            "jmp *0x10(%rsp)" }, -1, 0 },   /* read 8 bytes higher: the emulation pushed its slot */
        { "call *%rax", { 0xff, 0xd0 }, 2,
          { "lea -0x8(%rsp), %rsp", "push %rax", "lea back(%rip), %rax", "mov %rax, 0x8(%rsp)", "pop %rax",
            "jmp *%rax" }, -1, 0 },
        { "jmp *disp(%rip)", { 0xff, 0x25, 0x00, 0x00, 0x10, 0x00 }, 6, { "jmp *data(%rip)" }, 0, -1 },
        { "vmovdqa disp(%rip),%xmm0", { 0xc5, 0xf9, 0x6f, 0x05, 0x00, 0x01, 0x00, 0x00 }, 8,
          { "vmovdqa data(%rip), %xmm0" }, 0, -1 },
        { "cmpb $0x5,disp(%rip)", { 0x80, 0x3d, 0x00, 0x02, 0x00, 0x00, 0x05 }, 7,
          { "cmpb $0x5, data(%rip)" }, 0, -1 },
        { "push %rbp", { 0x55 }, 1, { "push %rbp" }, -1, -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[120], err[256] = "";
        snprintf(what, sizeof what, "out-of-line copy of %s", cases[i].name);
        memset(out, 0xcc, sizeof out);
        size_t n = x86_emit_ool(AT, SITE, cases[i].code, cases[i].len, out, err, sizeof err);
        if (!ok(n > 0 && n <= OOL_MAX, "%s: emitted (%zu bytes, at most OOL_MAX)", what, n)) {
            diag("error: %s", err);
            continue;
        }
        user_syms(SITE, cases[i].len);
        if (cases[i].ref >= 0) {
            uint64_t a = orig_ref(cases[i].code, cases[i].len, SITE, cases[i].ref);
            bool is_data = false;
            for (int k = 0; k < 8 && cases[i].copy[k]; k++)
                is_data = is_data || strstr(cases[i].copy[k], "data(") != NULL;
            sym(is_data ? "data" : "target", a);
        }
        Lreset(&w);
        for (int k = 0; k < 8 && cases[i].copy[k]; k++)
            L(&w, "%s", cases[i].copy[k]);
        L(&w, "jmp back");
        check_code(what, out, 0, n, AT, &w);
        if (cases[i].call_at >= 0)
            check_emulated_call(what, out, n, AT, (size_t)cases[i].call_at, cases[i].code, cases[i].len, SITE,
                                SITE + cases[i].len);
    }
    char err[256] = "";
    refused("out-of-line copy 4 GiB from its site",
            x86_emit_ool(SITE + FAR, SITE, (const uint8_t *)"\x55", 1, out, err, sizeof err), err,
            "out of rel32 reach");
    err[0] = 0;
    refused("out-of-line copy of int3", x86_emit_ool(AT, SITE, (const uint8_t *)"\xcc", 1, out, err, sizeof err), err,
            "int3 at 0x401000 cannot run out of line");
    err[0] = 0;
    refused("out-of-line copy of jrcxz", x86_emit_ool(AT, SITE, (const uint8_t *)"\xe3\x10", 2, out, err, sizeof err),
            err, "cannot run out of line");
}

/* ---- the bytes at the site, trampolines, re-pointed branches ---- */

/* One instruction, decoded at addr: its text (with names) and, if it is
 * a direct branch, its target. */
static bool decode_one(const uint8_t *code, size_t len, uint64_t addr, uint64_t *target, const char **text)
{
    size_t bad;
    if (!decode_all(code, 0, len, addr, &bad) || nins < 1)
        return false;
    buf_at = addr, buf_len = len;
    format_insn(&ins[0]);
    *text = ins[0].text;
    bool rip;
    return rel_target(&ins[0], target, &rip);
}

static void test_site(void)
{
    uint8_t b[32];
    uint64_t t;
    const char *text;

    sym_reset();
    /* jmp rel32 to the detour, int3 over the rest of the DCR */
    memset(b, 0x90, sizeof b);
    bool r = x86_emit_site_jump(SITE, AT, 9, b);
    ok(r && decode_one(b, 5, SITE, &t, &text) && ins[0].zi.mnemonic == ZYDIS_MNEMONIC_JMP && ins[0].zi.length == 5 &&
           t == AT,
       "site jump: jmp rel32 from 0x%llx to the detour at 0x%llx", (unsigned long long)SITE, (unsigned long long)AT);
    ok(memcmp(b + 5, "\xcc\xcc\xcc\xcc", 4) == 0 && b[9] == 0x90,
       "site jump: int3 over the other 4 bytes of a 9-byte DCR, nothing past it");
    memset(b, 0x90, sizeof b);
    r = x86_emit_site_jump(KSITE, KAT, 5, b);
    ok(r && decode_one(b, 5, KSITE, &t, &text) && t == KAT && b[5] == 0x90,
       "site jump in the kernel's address space: jmp rel32 to the pool, a 5-byte DCR takes no int3");
    ok(!x86_emit_site_jump(SITE, SITE + 5 + 0x80000000ull, 5, b), "site jump: a detour 2 GiB + 5 past the site's end: false");
    ok(x86_emit_site_jump(SITE, SITE + 5 + 0x7fffffffull, 5, b) && decode_one(b, 5, SITE, &t, &text) &&
           t == SITE + 5 + 0x7fffffffull,
       "site jump: a detour at the last byte of rel32 reach (site + 5 + 0x7fffffff): reached");
    ok(!x86_emit_site_jump(SITE, AT, 4, b), "site jump: a site of 4 bytes has no room for a jmp rel32: false");
    ok(!x86_emit_site_jump(0x80000000ull, 0x80000000ull + 5 - 0x80000001ull, 5, b),
       "site jump: a detour 2 GiB + 1 below the site's end: false");

    /* jmp rel8 to a trampoline */
    memset(b, 0x90, sizeof b);
    r = x86_emit_site_jump8(SITE, SITE + 2 + 127, 4, b);
    ok(r && decode_one(b, 2, SITE, &t, &text) && ins[0].zi.length == 2 && t == SITE + 2 + 127,
       "short site jump: jmp rel8 to a trampoline 127 bytes past its end");
    ok(b[2] == 0xcc && b[3] == 0xcc && b[4] == 0x90, "short site jump: int3 over the other 2 bytes of a 4-byte DCR");
    r = x86_emit_site_jump8(SITE, SITE + 2 - 128, 2, b);
    ok(r && decode_one(b, 2, SITE, &t, &text) && t == SITE + 2 - 128,
       "short site jump: a trampoline 128 bytes before its end: reached");
    ok(!x86_emit_site_jump8(SITE, SITE + 2 + 128, 4, b), "short site jump: a trampoline 128 bytes past its end: false");
    ok(!x86_emit_site_jump8(SITE, SITE + 2 - 129, 4, b), "short site jump: a trampoline 129 bytes before its end: false");
    ok(!x86_emit_site_jump8(SITE, SITE + 16, 1, b), "short site jump: a 1-byte DCR (shorter than jmp rel8): false");

    /* trampolines */
    memset(b, 0x90, sizeof b);
    r = x86_emit_jmp32(SITE + 0x40, AT, b);
    ok(r && decode_one(b, 5, SITE + 0x40, &t, &text) && ins[0].zi.mnemonic == ZYDIS_MNEMONIC_JMP && t == AT &&
           b[5] == 0x90,
       "trampoline: jmp rel32 (5 bytes) to 0x%llx", (unsigned long long)AT);
    r = x86_emit_jmp32(KSITE, KSITE - 0x7ffffffbull, b);
    ok(r && decode_one(b, 5, KSITE, &t, &text) && t == KSITE - 0x7ffffffbull,
       "trampoline: exactly 2 GiB back from its end (rel32 -0x80000000): reached");
    ok(!x86_emit_jmp32(SITE, SITE + FAR, b), "trampoline: 4 GiB away: false");

    /* re-pointed branches: the same branch, another target */
    static const struct {
        const char *name;
        uint8_t code[8];
        unsigned len;
        int64_t to;   /* from the branch's end */
        const char *refusal;   /* NULL: it can be done */
        ZydisMnemonic m;
    } br[] = {
        { "jmp rel8", { 0xeb, 0x05 }, 2, -128, NULL, ZYDIS_MNEMONIC_JMP },
        { "jle rel8", { 0x7e, 0x05 }, 2, 127, NULL, ZYDIS_MNEMONIC_JLE },
        { "jle rel8", { 0x7e, 0x05 }, 2, 128, "out of rel8 reach", ZYDIS_MNEMONIC_JLE },
        { "jle rel8", { 0x7e, 0x05 }, 2, -129, "out of rel8 reach", ZYDIS_MNEMONIC_JLE },
        { "jmp rel32", { 0xe9, 0x10, 0x00, 0x00, 0x00 }, 5, 0x12345678, NULL, ZYDIS_MNEMONIC_JMP },
        { "jnz rel32", { 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 }, 6, -0x80000000ll, NULL, ZYDIS_MNEMONIC_JNZ },
        { "jnz rel32", { 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 }, 6, 0x80000000ll, "out of rel32 reach",
          ZYDIS_MNEMONIC_JNZ },
        { "loop", { 0xe2, 0x05 }, 2, -20, NULL, ZYDIS_MNEMONIC_LOOP },
        { "call rel32", { 0xe8, 0x10, 0x00, 0x00, 0x00 }, 5, 0x100, "not a jmp, jcc or loop", ZYDIS_MNEMONIC_CALL },
        { "bnd jmp rel32 (a prefix)", { 0xf2, 0xe9, 0x10, 0x00, 0x00, 0x00 }, 6, 0x2000, NULL, ZYDIS_MNEMONIC_JMP },
    };
    for (size_t i = 0; i < sizeof br / sizeof br[0]; i++) {
        uint64_t from = SITE + 0x100, to = from + br[i].len + (uint64_t)br[i].to;
        memset(b, 0x90, sizeof b);
        r = x86_retarget(br[i].code, br[i].len, from, to, b);
        char to_s[32];
        snprintf(to_s, sizeof to_s, "%s0x%llx", br[i].to < 0 ? "-" : "+",
                 (unsigned long long)(br[i].to < 0 ? -br[i].to : br[i].to));
        if (br[i].refusal) {
            ok(!r, "re-pointing %s to %s from its end: false (%s)", br[i].name, to_s, br[i].refusal);
            continue;
        }
        bool got = r && decode_one(b, br[i].len, from, &t, &text);
        if (!ok(got && ins[0].zi.mnemonic == br[i].m && ins[0].zi.length == br[i].len && t == to &&
                    memcmp(b, br[i].code, br[i].len - (ins[0].op[0].size / 8)) == 0 && b[br[i].len] == 0x90,
                "re-pointing %s to %s from its end: the same instruction (prefixes, opcode, length) aimed there",
                br[i].name, to_s))
            diag("returned %d, decoded '%s', target 0x%llx", r, got ? text : "(nothing)", (unsigned long long)t);
    }
}

int main(void)
{
    zydis_setup();
    test_detours();
    test_kernel_detours();
    test_detour_refusals();
    test_shared();
    test_compact();
    test_thunks();
    test_ool();
    test_site();
    plan_lazy();
    return tap_done();
}
