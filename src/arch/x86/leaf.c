/* What a leaf function returns, from constants alone (leaf.h). */
#include "leaf.h"
#include "zydis.h"

#define LEAF_MAX_INSNS 8

static bool is_rax(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_RAX || r == ZYDIS_REGISTER_EAX;
}

/* One instruction's effect on what %rax holds (*known: set yet). false
 * when it is not one of the forms leaf.h lists. */
static bool step(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops, uint64_t end,
                 struct isa_leaf_value *v, bool *known)
{
    if (zi->mnemonic == ZYDIS_MNEMONIC_NOP || zi->mnemonic == ZYDIS_MNEMONIC_ENDBR64)
        return true;
    if (zi->operand_count_visible != 2 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || !is_rax(ops[0].reg.value))
        return false;
    const ZydisDecodedOperand *src = &ops[1];
    unsigned width = ops[0].size / 8;
    if (zi->mnemonic == ZYDIS_MNEMONIC_MOV && src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
        *v = (struct isa_leaf_value){ src->imm.value.u, 0, { 0, 0 } };
        if (width == 4)
            v->value &= 0xffffffffu;   /* a 32-bit write zero-extends */
        *known = true;
        return true;
    }
    if (src->type != ZYDIS_OPERAND_TYPE_MEMORY || src->mem.index != ZYDIS_REGISTER_NONE ||
        src->mem.segment != ZYDIS_REGISTER_DS)
        return false;
    uint64_t addr;
    if (src->mem.base == ZYDIS_REGISTER_RIP) {
        addr = end + (uint64_t)src->mem.disp.value;
        if (zi->mnemonic == ZYDIS_MNEMONIC_LEA) {
            *v = (struct isa_leaf_value){ addr, 0, { 0, 0 } };
            *known = true;
            return true;
        }
        *v = (struct isa_leaf_value){ addr, 0, { 0, 0 } };
    } else if (src->mem.base == ZYDIS_REGISTER_RAX && *known) {
        /* through what %rax holds: an offset only before the first load */
        if (src->mem.disp.value && v->nloads)
            return false;
        v->value += (uint64_t)src->mem.disp.value;
        if (zi->mnemonic == ZYDIS_MNEMONIC_LEA)
            return true;
    } else {
        return false;
    }
    if (zi->mnemonic != ZYDIS_MNEMONIC_MOV || (width != 4 && width != 8) || v->nloads == 2)
        return false;
    v->width[v->nloads++] = (uint8_t)width;
    *known = true;
    return true;
}

bool x86_leaf_value(const uint8_t *code, size_t len, uint64_t at, struct isa_leaf_value *out)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    struct isa_leaf_value v = { 0, 0, { 0, 0 } };
    bool known = false;
    size_t off = 0;
    for (unsigned n = 0; n < LEAF_MAX_INSNS && off < len; n++) {
        ZydisDecodedInstruction zi;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, code + off, len - off, &zi, ops)))
            return false;
        off += zi.length;
        if (zi.mnemonic == ZYDIS_MNEMONIC_RET) {
            *out = v;
            return known;
        }
        if (!step(&zi, ops, at + off, &v, &known))
            return false;
    }
    return false;
}
