/* reloc-check: the checker's own decoder and formatter setup (Zydis). */
#include "rc.h"

#include <stdio.h>
#include <string.h>

const char *const rule_name[R_COUNT] = {
    [R_SAME_OP] = "same-op",
    [R_BRANCH] = "branch-target",
    [R_INDJMP] = "indirect-jmp",
    [R_RIPREL] = "riprel",
    [R_CALL_RET] = "call-ret-addr",
    [R_CALL_STATE] = "call-state",
    [R_CALL_TARGET] = "call-target",
    [R_JMP_BACK] = "jmp-back",
    [R_UNRELOC] = "unrelocatable",
    [R_IN_DCR] = "target-in-dcr",
    [R_DCR] = "dcr-decode",
    [R_SITE] = "site-bytes",
    [R_ORIG] = "orig-bytes",
    [R_TABLE] = "table",
    [R_BYTES] = "bytes-outside-sites",
    [R_FIXUP] = "fixup",
    [R_INTO_DCR] = "branch-into-dcr",
    [R_BOUNDARY] = "insn-boundary",
};

const char *const rc_gpr_name[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                      "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };

static ZydisDecoder dec;
static ZydisFormatter fmt;
static bool ready;

static void init(void)
{
    if (ready)
        return;
    ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_ATT);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_FORCE_RELATIVE_RIPREL, ZYAN_TRUE);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&fmt, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
    ready = true;
}

bool rc_decode(const uint8_t *p, size_t n, uint64_t addr, struct insn *out)
{
    init();
    memset(out, 0, sizeof *out);
    out->addr = addr;
    if (!p || n == 0)
        return false;
    return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, p, n, &out->zi, out->op));
}

void rc_format(const struct insn *in, char *buf, size_t size)
{
    init();
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&fmt, &in->zi, in->op, in->zi.operand_count_visible,
                                                      buf, size, in->addr, NULL))) {
        snprintf(buf, size, "(bad)");
        return;
    }
    /* an indirect jmp/call's operand gets objdump's '*' (Zydis prints none) */
    if ((in->zi.mnemonic == ZYDIS_MNEMONIC_JMP || in->zi.mnemonic == ZYDIS_MNEMONIC_CALL) &&
        in->zi.operand_count_visible >= 1 && in->op[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE) {
        char o[96];
        size_t l = strlen(buf), ol;
        if (ZYAN_SUCCESS(ZydisFormatterFormatOperand(&fmt, &in->zi, &in->op[0], o, sizeof o, in->addr, NULL)) &&
            (ol = strlen(o)) <= l && strcmp(buf + l - ol, o) == 0 && l + 2 < size) {
            memmove(buf + l - ol + 1, buf + l - ol, ol + 1);
            buf[l - ol] = '*';
        }
    }
    for (unsigned i = 0; i < in->zi.operand_count_visible; i++) {
        const ZydisDecodedOperand *o = &in->op[i];
        if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && o->mem.base == ZYDIS_REGISTER_RIP) {
            size_t l = strlen(buf);
            snprintf(buf + l, size - l, " # 0x%llx",
                     (unsigned long long)(in->addr + in->zi.length + (uint64_t)o->mem.disp.value));
            break;
        }
    }
}

int rc_gpr64(ZydisRegister r)
{
    if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
        return (int)(r - ZYDIS_REGISTER_RAX);
    return -1;
}

int rc_gpr_any(ZydisRegister r)
{
    if (r == ZYDIS_REGISTER_NONE)
        return -1;
    ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    return rc_gpr64(big);
}
