/* x86-64 decoding over Zydis: classify each instruction for the analysis. */
#include "decode.h"
#include "zydis.h"

#include <stdio.h>
#include <string.h>

const ZydisDecoder *x86_zydis_decoder(void)
{
    static ZydisDecoder decoder;
    static bool ready;
    if (!ready) {
        ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
        ready = true;
    }
    return &decoder;
}

/* objdump-like AT&T text: lower-case hex, no zero padding */
static const ZydisFormatter *formatter(void)
{
    static ZydisFormatter f;
    static bool ready;
    if (!ready) {
        ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_ATT);
        ZydisFormatterSetProperty(&f, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
        ZydisFormatterSetProperty(&f, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
        ZydisFormatterSetProperty(&f, ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE, ZYDIS_PADDING_DISABLED);
        ZydisFormatterSetProperty(&f, ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED);
        ZydisFormatterSetProperty(&f, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
        ready = true;
    }
    return &f;
}

static enum x86_kind classify(const ZydisDecodedInstruction *zi)
{
    /* A direct branch carries its displacement as a relative immediate.
     * (ZYDIS_ATTRIB_IS_RELATIVE is also set for RIP-relative memory
     * operands: jmp *disp(%rip) is indirect.) */
    bool rel = zi->raw.imm[0].is_relative;
    bool far = zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

    switch (zi->mnemonic) {
    case ZYDIS_MNEMONIC_JMP:
        return far ? XK_FAR : rel ? XK_JMP : XK_JMP_IND;
    case ZYDIS_MNEMONIC_CALL:
        return far ? XK_FAR : rel ? XK_CALL : XK_CALL_IND;
    case ZYDIS_MNEMONIC_RET:
        return far ? XK_FAR : XK_RET;
    case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
        return XK_FAR;
    case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
    case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ:
        return XK_LOOP;
    case ZYDIS_MNEMONIC_XBEGIN:
        return XK_XBEGIN;
    case ZYDIS_MNEMONIC_INT3:
        return XK_INT3;
    case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INTO: case ZYDIS_MNEMONIC_INT1:
        return XK_INTN;
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
        return XK_UD;
    case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSENTER:
    case ZYDIS_MNEMONIC_SYSRET: case ZYDIS_MNEMONIC_SYSEXIT:
        return XK_SYSCALL;
    case ZYDIS_MNEMONIC_ENDBR64:
        return XK_ENDBR;
    case ZYDIS_MNEMONIC_HLT:
        return XK_PRIV;
    default:
        break;
    }
    if (zi->meta.category == ZYDIS_CATEGORY_COND_BR)
        return XK_JCC;
    if (zi->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED)
        return XK_PRIV;
    /* mov to %ss masks interrupts for one instruction: never move it. */
    if (zi->mnemonic == ZYDIS_MNEMONIC_MOV && zi->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
        zi->opcode == 0x8e && zi->raw.modrm.reg == 2)
        return XK_PRIV;
    return XK_OTHER;
}

unsigned x86_insn_len(const uint8_t *p, size_t avail)
{
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction zi;
    if (avail == 0 || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(x86_zydis_decoder(), &ctx, p, avail, &zi)))
        return 0;
    return zi.length;
}

unsigned x86_decode(const uint8_t *p, size_t avail, uint64_t addr, struct x86_insn *out)
{
    const ZydisDecoder *decoder = x86_zydis_decoder();
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction zi;

    if (avail == 0 || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder, &ctx, p, avail, &zi)))
        return 0;
    memset(out, 0, sizeof *out);
    out->addr = addr;
    out->len = zi.length;
    out->kind = classify(&zi);
    if (zi.attributes & ZYDIS_ATTRIB_HAS_NOTRACK)
        out->flags |= XF_NOTRACK;
    if (zi.attributes & ZYDIS_ATTRIB_HAS_LOCK)
        out->flags |= XF_LOCK;
    if (zi.mnemonic == ZYDIS_MNEMONIC_NOP)
        out->flags |= XF_NOP;
    if (zi.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
        /* Relative branches carry the displacement as an immediate. */
        for (int i = 0; i < 2; i++) {
            if (zi.raw.imm[i].is_relative) {
                out->target = addr + zi.length + (uint64_t)zi.raw.imm[i].value.s;
                out->rel_size = zi.raw.imm[i].size;
                break;
            }
        }
    }
    /* mod=00 rm=101 without SIB is RIP-relative in 64-bit mode; Zydis reports
     * register-only forms (mov %cr etc.) with mod forced, so confirm with the
     * decoded operands before trusting it. */
    if ((zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) && zi.raw.modrm.mod == 0 && zi.raw.modrm.rm == 5 &&
        zi.raw.disp.size == 32) {
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder, &ctx, &zi, ops, zi.operand_count))) {
            for (unsigned i = 0; i < zi.operand_count; i++) {
                if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_RIP) {
                    out->flags |= XF_RIPREL | (zi.mnemonic == ZYDIS_MNEMONIC_LEA ? XF_ADDR : 0);
                    out->disp_off = zi.raw.disp.offset;
                    break;
                }
            }
        } else {
            /* Not known to be RIP-relative, nor known not to be: a copy
             * would keep a displacement that may need re-pointing. Never
             * copied (x86_relocatable); its would-be target still counts
             * as a materialized address (taken.c). */
            out->flags |= XF_OPS_UNKNOWN;
            out->disp_off = zi.raw.disp.offset;
        }
    }
    return zi.length;
}

unsigned x86_insn_constants(const uint8_t *p, size_t avail, uint64_t vals[3])
{
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction zi;
    unsigned n = 0;

    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(x86_zydis_decoder(), &ctx, p, avail, &zi)))
        return 0;
    for (int i = 0; i < 2 && n < 3; i++)
        if (zi.raw.imm[i].size >= 32 && !zi.raw.imm[i].is_relative)
            vals[n++] = zi.raw.imm[i].is_signed ? (uint64_t)zi.raw.imm[i].value.s : zi.raw.imm[i].value.u;
    bool riprel = (zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) && zi.raw.modrm.mod == 0 && zi.raw.modrm.rm == 5 &&
                  !(zi.attributes & ZYDIS_ATTRIB_HAS_SIB);
    if (zi.raw.disp.size == 32 && !riprel && n < 3)
        vals[n++] = (uint64_t)zi.raw.disp.value;
    else if (zi.raw.disp.size == 64 && n < 3)
        vals[n++] = (uint64_t)zi.raw.disp.value;    /* moffs */
    return n;
}

const char *x86_format(const uint8_t *p, size_t avail, uint64_t addr, char *buf, size_t size)
{
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const ZydisDecoder *decoder = x86_zydis_decoder();

    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder, &ctx, p, avail, &zi)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder, &ctx, &zi, ops, zi.operand_count)) ||
        !ZYAN_SUCCESS(ZydisFormatterFormatInstruction(formatter(), &zi, ops, zi.operand_count_visible,
                                                      buf, size, addr, NULL)))
        snprintf(buf, size, "(bad)");
    return buf;
}

bool x86_is_endbr_like(const uint8_t *p, size_t avail, unsigned *len)
{
    static const uint8_t pats[][4] = {
        { 0xf3, 0x0f, 0x1e, 0xfa },   /* endbr64 */
        { 0x66, 0x0f, 0x1f, 0x00 },   /* osp nopl (%rax): sealed endbr (<= 6.15) */
        { 0x0f, 0x1f, 0x40, 0xd6 },   /* nopl -42(%rax): sealed endbr (2025) */
        { 0x0f, 0xb9, 0x48, 0x00 },   /* ud1 0x0(%rax),%ecx: IBT_PLUS poison */
    };
    if (avail < 4)
        return false;
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
        if (memcmp(p, pats[i], 4) == 0) {
            *len = 4;
            return true;
        }
    return false;
}

bool x86_relocatable(const struct x86_insn *in, const char **why)
{
    if (in->flags & XF_OPS_UNKNOWN) {
        *why = "operands not decoded (a RIP-relative displacement could not be re-pointed)";
        return false;
    }
    switch (in->kind) {
    case XK_INT3:    *why = "int3"; return false;
    case XK_INTN:    *why = "software interrupt"; return false;
    case XK_UD:      *why = "ud (bug/trap site)"; return false;
    case XK_SYSCALL: *why = "syscall-like"; return false;
    case XK_PRIV:    *why = "privileged"; return false;
    case XK_FAR:     *why = "far transfer"; return false;
    case XK_LOOP:    *why = "loop/jrcxz (rel8 only)"; return false;
    case XK_XBEGIN:  *why = "xbegin (abort target)"; return false;
    default:         *why = NULL; return true;
    }
}

const uint8_t x86_nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

bool x86_is_call_or_nop5(const uint8_t *p, size_t avail)
{
    if (avail < 5)
        return false;
    return p[0] == 0xe8 || memcmp(p, x86_nop5, 5) == 0;
}

bool x86_is_padding(uint8_t c)
{
    switch (c) {
    case 0xcc: case 0x90: case 0x66: case 0x2e: case 0x0f: case 0x1f:
    case 0x00: case 0x40: case 0x44: case 0x80: case 0x84:
        return true;
    }
    return false;
}

unsigned x86_jump_label_len(const uint8_t *p, size_t avail)
{
    return p && avail >= 2 && (p[0] == 0xeb || (p[0] == 0x66 && p[1] == 0x90)) ? 2 : 5;
}

bool x86_is_ud_site(const uint8_t *p, size_t avail)
{
    return p && avail >= 2 && p[0] == 0x0f && (p[1] == 0x0b || p[1] == 0xb9 || p[1] == 0xff);
}

#define STATUS_FLAGS (ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_ZF | \
                      ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF)

bool x86_flags_dead(x86_flags_read_fn read, void *ctx, uint64_t addr, uint64_t end)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisAccessedFlagsMask written = 0;
    for (int steps = 0; steps < 32 && addr < end; steps++) {
        size_t avail = 0;
        const uint8_t *p = read(ctx, addr, &avail);
        ZydisDecoderContext dctx;
        ZydisDecodedInstruction zi;
        if (!p || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &dctx, p, avail, &zi)))
            return false;
        const ZydisAccessedFlags *f = zi.cpu_flags;
        if (f && (f->tested & STATUS_FLAGS & ~written))
            return false;                       /* read before written */
        if (f)
            written |= (f->modified | f->set_0 | f->set_1 | f->undefined) & STATUS_FLAGS;
        if ((written & STATUS_FLAGS) == STATUS_FLAGS)
            return true;
        /* The ABI carries no flags across calls and returns. */
        if (zi.mnemonic == ZYDIS_MNEMONIC_CALL || zi.mnemonic == ZYDIS_MNEMONIC_RET)
            return true;
        if (zi.meta.category == ZYDIS_CATEGORY_COND_BR || zi.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
            zi.meta.category == ZYDIS_CATEGORY_SYSTEM || zi.meta.category == ZYDIS_CATEGORY_INTERRUPT)
            return false;                       /* control leaves the straight line */
        addr += zi.length;
    }
    return false;
}

static ZydisRegister enclosing(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_NONE ? r : ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

/* The use of reg by one instruction (zi, ops): done (*use set) or not. */
static bool lea_use_one(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops, ZydisRegister reg,
                        enum x86_addr_use *use, int64_t *disp)
{
    bool read = false, written = false;
    for (unsigned i = 0; i < zi->operand_count; i++) {   /* hidden ones too (rep movs, push) */
        const ZydisDecodedOperand *o = &ops[i];
        if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && (enclosing(o->mem.base) == reg || enclosing(o->mem.index) == reg)) {
            /* lea off(%reg): an address derived from it, which may be anything */
            *use = zi->mnemonic == ZYDIS_MNEMONIC_LEA ? X86_USE_OTHER : X86_USE_MEMORY;
            *disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;
            return true;
        }
        if (o->type == ZYDIS_OPERAND_TYPE_REGISTER && enclosing(o->reg.value) == reg) {
            read |= (o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
            written |= (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
        }
    }
    if (read) {
        *use = zi->mnemonic == ZYDIS_MNEMONIC_JMP ? X86_USE_JUMP : X86_USE_OTHER;
        return true;
    }
    *use = X86_USE_OTHER;
    /* overwritten, or the straight line ends */
    return written || zi->meta.category == ZYDIS_CATEGORY_COND_BR || zi->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
           zi->meta.category == ZYDIS_CATEGORY_CALL || zi->meta.category == ZYDIS_CATEGORY_RET ||
           zi->meta.category == ZYDIS_CATEGORY_SYSTEM || zi->meta.category == ZYDIS_CATEGORY_INTERRUPT;
}

enum x86_addr_use x86_lea_use(x86_flags_read_fn read, void *ctx, uint64_t addr, uint64_t end, int64_t *disp)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    size_t avail = 0;
    const uint8_t *p = read(ctx, addr, &avail);
    if (!p || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, avail, &zi, ops)) || zi.mnemonic != ZYDIS_MNEMONIC_LEA ||
        ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].size != 64)
        return X86_USE_OTHER;
    ZydisRegister reg = enclosing(ops[0].reg.value);
    enum x86_addr_use use = X86_USE_OTHER;
    *disp = 0;
    addr += zi.length;
    for (int steps = 0; steps < 24 && addr < end; steps++) {
        p = read(ctx, addr, &avail);
        if (!p || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, avail, &zi, ops)))
            return X86_USE_OTHER;
        if (lea_use_one(&zi, ops, reg, &use, disp))
            return use;
        addr += zi.length;
    }
    return X86_USE_OTHER;
}

bool x86_switches_stack(const uint8_t *p, size_t n)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, n, &zi, ops)))
        return false;
    switch (zi.mnemonic) {
    case ZYDIS_MNEMONIC_MOV: case ZYDIS_MNEMONIC_XCHG: case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_LEA:
    case ZYDIS_MNEMONIC_CMOVB: case ZYDIS_MNEMONIC_CMOVBE: case ZYDIS_MNEMONIC_CMOVL: case ZYDIS_MNEMONIC_CMOVLE:
    case ZYDIS_MNEMONIC_CMOVNB: case ZYDIS_MNEMONIC_CMOVNBE: case ZYDIS_MNEMONIC_CMOVNL: case ZYDIS_MNEMONIC_CMOVNLE:
    case ZYDIS_MNEMONIC_CMOVNO: case ZYDIS_MNEMONIC_CMOVNP: case ZYDIS_MNEMONIC_CMOVNS: case ZYDIS_MNEMONIC_CMOVNZ:
    case ZYDIS_MNEMONIC_CMOVO: case ZYDIS_MNEMONIC_CMOVP: case ZYDIS_MNEMONIC_CMOVS: case ZYDIS_MNEMONIC_CMOVZ:
        break;
    default:
        return false;   /* push/pop/call/ret/add/sub/and/leave/enter: %rsp arithmetic */
    }
    bool writes_rsp = false, from_frame = false;
    for (unsigned i = 0; i < zi.operand_count_visible; i++) {
        const ZydisDecodedOperand *o = &ops[i];
        bool is_rsp = o->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                      (o->reg.value == ZYDIS_REGISTER_RSP || o->reg.value == ZYDIS_REGISTER_ESP);
        if (is_rsp && (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            writes_rsp = true;
        else if (o->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                 (o->reg.value == ZYDIS_REGISTER_RBP || o->reg.value == ZYDIS_REGISTER_RSP))
            from_frame = true;   /* mov %rbp,%rsp: a frame, not a new stack */
        else if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && zi.mnemonic == ZYDIS_MNEMONIC_LEA &&
                 (o->mem.base == ZYDIS_REGISTER_RBP || o->mem.base == ZYDIS_REGISTER_RSP))
            from_frame = true;   /* lea -16(%rbp),%rsp */
    }
    if (zi.mnemonic == ZYDIS_MNEMONIC_POP && writes_rsp)
        return true;             /* pop %rsp */
    return writes_rsp && !from_frame;
}
