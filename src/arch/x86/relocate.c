/*
 * Instructions copied out of line (a detour's copy of its DCR, an int3
 * probe's copy of its first instruction, an evicted window's stub):
 * relocated for their new address, branches re-encoded as rel32, a call
 * at the end emulated so that it returns to the original code, then the
 * jmp back; and direct branches elsewhere re-aimed (x86_retarget).
 */
#include "buf.h"
#include "decode.h"
#include "zydis.h"

#include <stdio.h>
#include <string.h>

/* A call whose return address is ret (the original code), not the copy:
 * unwinders, C++ exceptions and backtraces keep seeing the probed
 * function. Registers and flags are untouched:
 *   lea -8(%rsp),%rsp; push %rax; lea ret(%rip),%rax; mov %rax,8(%rsp);
 *   pop %rax; then jmp target, or jmp *OP for an indirect call */
static bool emulated_call_head(struct buf *b, uint64_t ret)
{
    static const uint8_t head[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8, 0x50, 0x48, 0x8d, 0x05 };
    static const uint8_t store[] = { 0x48, 0x89, 0x44, 0x24, 0x08, 0x58 };
    bn(b, head, sizeof head);
    if (!rel32(b, ret))
        return false;
    bn(b, store, sizeof store);
    return true;
}

static bool emulated_call(struct buf *b, uint64_t target, uint64_t ret)
{
    if (!emulated_call_head(b, ret))
        return false;
    b1(b, 0xe9);
    return rel32(b, target);
}

/* The jmp that ends an emulated indirect call: `call *OP` (ff /2) becomes
 * `jmp *OP` (ff /4) through the same operand, as the call would have read
 * it: a RIP-relative displacement re-pointed for the new address, and an
 * %rsp-based one raised by the 8 bytes the emulation pushed (the call reads
 * its operand before it pushes). False when that cannot be encoded. */
static bool indirect_call_to_jmp(struct buf *b, const uint8_t *p, unsigned len, uint64_t from)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, len, &zi, ops)) || zi.mnemonic != ZYDIS_MNEMONIC_CALL ||
        zi.opcode != 0xff || !(zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) || zi.raw.modrm.reg != 2)
        return false;
    const ZydisDecodedOperand *op = &ops[0];
    unsigned m = zi.raw.modrm.offset;
    size_t start = b->n;
    bn(b, p, m + 1);
    b->p[start + m] = (uint8_t)((p[m] & ~0x38) | (4 << 3));        /* ff /4: jmp */
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (op->reg.value == ZYDIS_REGISTER_RSP)
            return false;                                           /* the pushes moved it */
        return true;
    }
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
        return false;
    if (op->mem.base == ZYDIS_REGISTER_RIP) {
        bn(b, p + m + 1, len - (m + 1));
        int32_t disp;
        memcpy(&disp, p + zi.raw.disp.offset, 4);
        uint64_t target = from + len + (int64_t)disp;
        int64_t nd = (int64_t)(target - (b->at + b->n));
        if (nd != (int32_t)nd)
            return false;
        int32_t nd32 = (int32_t)nd;
        memcpy(b->p + start + zi.raw.disp.offset, &nd32, 4);
        return true;
    }
    if (op->mem.base != ZYDIS_REGISTER_RSP && op->mem.index != ZYDIS_REGISTER_RSP) {
        bn(b, p + m + 1, len - (m + 1));                            /* same operand */
        return true;
    }
    if (op->mem.base != ZYDIS_REGISTER_RSP || !zi.raw.sib.offset)
        return false;
    /* %rsp as the base: ModRM mod 00/01/10, a SIB byte, then disp0/8/32 */
    bn(b, p + m + 1, 1);                                            /* the SIB */
    int64_t disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0;
    disp += 8;
    uint8_t mod = disp == (int8_t)disp ? 1 : 2;
    if (disp != (int32_t)disp)
        return false;
    b->p[start + m] = (uint8_t)((b->p[start + m] & 0x3f) | (mod << 6));
    if (mod == 1)
        b1(b, (uint8_t)disp);
    else
        b32(b, (uint32_t)(int32_t)disp);
    return true;
}

/* Copy one DCR instruction to b, relocated for its new address. A call
 * must end the copy (ret_to, the original code after the DCR, != 0): it is
 * emulated so that the callee returns straight to ret_to, never into the
 * pool (which has no unwind information: a C++ throw through such a frame
 * would terminate, and backtraces would stop there). */
static bool relocate(struct buf *b, const uint8_t *p, const struct x86_insn *ip, uint64_t ret_to,
                     char *err, size_t errlen)
{
    const struct x86_insn in = *ip;
    uint64_t from = in.addr;
    unsigned len = in.len;
    switch (in.kind) {
    case XK_JMP:
        b1(b, 0xe9);
        if (!rel32(b, in.target))
            goto far;
        return true;
    case XK_CALL:
        if (!ret_to)
            goto call_inside;
        if (!emulated_call(b, in.target, ret_to))
            goto far;
        return true;
    case XK_CALL_IND:
        if (!ret_to)
            goto call_inside;
        if (!emulated_call_head(b, ret_to))
            goto far;
        if (!indirect_call_to_jmp(b, p, len, from)) {
            snprintf(err, errlen, "indirect call at 0x%llx: its operand cannot be read the same way out of line",
                     (unsigned long long)from);
            return false;
        }
        return true;
    case XK_JCC: {
        /* condition code: 7x (rel8) or 0f 8x (rel32), after any prefixes */
        size_t k = 0;
        while (k < len && (p[k] == 0x2e || p[k] == 0x3e || p[k] == 0xf2 || p[k] == 0xf3 || p[k] == 0x66))
            k++;
        uint8_t cc = p[k] == 0x0f ? (uint8_t)(p[k + 1] & 0x0f) : (uint8_t)(p[k] & 0x0f);
        b1(b, 0x0f);
        b1(b, 0x80 | cc);
        if (!rel32(b, in.target))
            goto far;
        return true;
    }
    default:
        break;
    }
    const char *why;
    if (!x86_relocatable(&in, &why)) {
        snprintf(err, errlen, "%s at 0x%llx cannot run out of line", why, (unsigned long long)from);
        return false;
    }
    size_t start = b->n;
    bn(b, p, len);
    if (in.flags & XF_RIPREL) {
        int32_t disp;
        memcpy(&disp, p + in.disp_off, 4);
        uint64_t target = from + len + (int64_t)disp;
        int64_t nd = (int64_t)(target - (b->at + start + len));
        if (nd != (int32_t)nd)
            goto far;
        int32_t nd32 = (int32_t)nd;
        memcpy(b->p + start + in.disp_off, &nd32, 4);
    }
    return true;
far:
    snprintf(err, errlen, "instruction at 0x%llx: target out of rel32 reach from the pool",
             (unsigned long long)from);
    return false;
call_inside:
    snprintf(err, errlen, "call at 0x%llx is not the last instruction copied: it would return into the pool",
             (unsigned long long)from);
    return false;
}

/* The relocated instructions of code[0..len) (from site), then jmp site+len.
 * map (may be NULL) gets where each instruction's copy starts, from b's
 * start, and whether the copy is the original bytes. A branch from the
 * DCR to one of its own later instructions goes to that instruction's copy
 * (which the analysis allows: nothing else may land there), not to the
 * site's bytes, which no longer hold it. The copy is made in a buffer of
 * its own (also when b only counts): its branches inside are patched, and
 * it is compared with the original. */
bool x86_copy_back(struct buf *b, const uint8_t *code, unsigned len, uint64_t site, struct x86_copy_map *map,
                   char *err, size_t errlen)
{
    uint8_t bytes[DETOUR_MAX];
    struct buf c = { bytes, 0, b->at + b->n };
    uint16_t at[X86_COPY_MAX];
    size_t inner[X86_COPY_MAX];   /* c offsets of rel32 fields aimed inside */
    uint64_t inner_to[X86_COPY_MAX];
    unsigned ninner = 0;
    if (len > X86_COPY_MAX) {
        snprintf(err, errlen, "DCR of %u bytes at 0x%llx is too long", len, (unsigned long long)site);
        return false;
    }
    memset(at, 0xff, sizeof at);
    for (unsigned off = 0; off < len;) {
        struct x86_insn in;
        unsigned n = x86_decode(code + off, len - off, site + off, &in);
        if (!n) {
            snprintf(err, errlen, "undecodable DCR byte at 0x%llx", (unsigned long long)(site + off));
            return false;
        }
        at[off] = (uint16_t)(b->n + c.n);
        if (!relocate(&c, code + off, &in, off + n == len ? site + len : 0, err, errlen))
            return false;
        if ((in.kind == XK_JMP || in.kind == XK_JCC) && in.target > site && in.target < site + len) {
            inner[ninner] = c.n - 4;
            inner_to[ninner++] = in.target;
        }
        off += n;
    }
    for (unsigned k = 0; k < ninner; k++) {
        uint16_t to = at[inner_to[k] - site];
        if (to == 0xffff) {
            snprintf(err, errlen, "a branch at 0x%llx lands inside an instruction of its DCR",
                     (unsigned long long)site);
            return false;
        }
        int32_t d = (int32_t)((int64_t)to - (int64_t)(b->n + inner[k] + 4));
        bput(&c, inner[k], &d, 4);
    }
    if (map) {
        memcpy(map->off, at, sizeof at);
        /* every instruction copied as it was (none relocated): then the
         * copy's first len bytes are the original ones */
        map->verbatim = c.n >= len && memcmp(bytes, code, len) == 0;
    }
    b1(&c, 0xe9);                                                /* jmp back */
    if (!rel32(&c, site + len)) {
        snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)site);
        return false;
    }
    bn(b, bytes, c.n);
    return true;
}

size_t x86_emit_ool_map(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out,
                        struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, at };
    return x86_copy_back(&b, code, len, site, map, err, errlen) ? b.n : 0;
}

size_t x86_emit_ool(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out, char *err, size_t errlen)
{
    return x86_emit_ool_map(at, site, code, len, out, NULL, err, errlen);
}

bool x86_retarget(const uint8_t *insn, unsigned len, uint64_t from, uint64_t target, uint8_t *out)
{
    struct x86_insn in;
    if (x86_decode(insn, len, from, &in) != len || (in.kind != XK_JMP && in.kind != XK_JCC && in.kind != XK_LOOP))
        return false;
    memcpy(out, insn, len);
    int64_t d = (int64_t)(target - (from + len));
    if (in.rel_size == 8) {   /* the displacement ends every direct branch */
        if (d != (int8_t)d)
            return false;
        out[len - 1] = (uint8_t)(int8_t)d;
        return true;
    }
    if (in.rel_size != 32 || d != (int32_t)d)
        return false;
    int32_t d32 = (int32_t)d;
    memcpy(out + len - 4, &d32, 4);
    return true;
}
