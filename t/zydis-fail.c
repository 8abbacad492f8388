/*
 * Operand decoding that fails on demand: linked with
 * -Wl,--wrap=ZydisDecoderDecodeOperands into t/decode-test and
 * t/kprewrite-zyfail (a kprewrite for tests only), so that the calls of
 * src/arch/x86 reach this instead of Zydis. With KP_ZYDIS_FAIL_OPS set to
 * a mnemonic ("lea"), the operands of every instruction with that mnemonic
 * "do not decode", while the instruction itself still does: the case of
 * decode.c that Zydis 4.0 never produces on a valid instruction (its
 * operand decoder fails only on bad arguments), made reachable to test
 * that such an instruction is never copied out of line.
 */
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

ZyanStatus __real_ZydisDecoderDecodeOperands(const ZydisDecoder *decoder, const ZydisDecoderContext *context,
                                             const ZydisDecodedInstruction *instruction,
                                             ZydisDecodedOperand *operands, ZyanU8 operand_count);
ZyanStatus __wrap_ZydisDecoderDecodeOperands(const ZydisDecoder *decoder, const ZydisDecoderContext *context,
                                             const ZydisDecodedInstruction *instruction,
                                             ZydisDecodedOperand *operands, ZyanU8 operand_count);

ZyanStatus __wrap_ZydisDecoderDecodeOperands(const ZydisDecoder *decoder, const ZydisDecoderContext *context,
                                             const ZydisDecodedInstruction *instruction,
                                             ZydisDecodedOperand *operands, ZyanU8 operand_count)
{
    const char *fail = getenv("KP_ZYDIS_FAIL_OPS");
    const char *name = instruction ? ZydisMnemonicGetString(instruction->mnemonic) : NULL;
    if (fail && name && strcmp(fail, name) == 0)
        return ZYDIS_STATUS_DECODING_ERROR;
    return __real_ZydisDecoderDecodeOperands(decoder, context, instruction, operands, operand_count);
}
