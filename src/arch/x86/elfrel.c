/* x86-64 relocations of a kernel module (elfrel.h). */
#include "elfrel.h"
#include "decode.h"

#include <string.h>

int x86_module_reloc_width(uint32_t type, bool *pc_relative)
{
    *pc_relative = false;
    switch (type) {
    case R_X86_64_NONE:
        return 0;
    case R_X86_64_64:
        return 8;
    case R_X86_64_32: case R_X86_64_32S:
        return 4;
    case R_X86_64_PC32: case R_X86_64_PLT32:
        *pc_relative = true;
        return 4;
    case R_X86_64_PC64:
        *pc_relative = true;
        return 8;
    default:
        return -1;
    }
}

bool x86_module_reloc_apply(uint32_t type, uint64_t S, int64_t A, uint64_t P, uint8_t *field)
{
    uint64_t v = S + (uint64_t)A;
    switch (type) {
    case R_X86_64_NONE:
        return true;
    case R_X86_64_64:
        memcpy(field, &v, 8);
        return true;
    case R_X86_64_32: {
        uint32_t w = (uint32_t)v;
        memcpy(field, &w, 4);
        return w == v;
    }
    case R_X86_64_32S: {
        int32_t w = (int32_t)v;
        memcpy(field, &w, 4);
        return (int64_t)w == (int64_t)v;
    }
    case R_X86_64_PC32: case R_X86_64_PLT32: {
        int64_t d = (int64_t)(v - P);
        int32_t w = (int32_t)d;
        memcpy(field, &w, 4);
        return w == d;
    }
    case R_X86_64_PC64:
        v -= P;
        memcpy(field, &v, 8);
        return true;
    default:
        return false;
    }
}

void x86_module_reloc_prepare(uint32_t type, uint8_t *field)
{
    bool pc;
    int width = x86_module_reloc_width(type, &pc);
    memset(field, 0, width > 0 ? (size_t)width : 0);
}

bool x86_code_refs(const uint8_t *code, size_t len, uint64_t at,
                   bool (*fn)(void *ctx, const struct isa_code_ref *r), void *ctx)
{
    for (size_t off = 0; off < len;) {
        struct x86_insn in;
        unsigned n = x86_decode(code + off, len - off, at + off, &in);
        if (!n)
            return false;
        struct isa_code_ref r = { 0, at + off + n, 0, 0 };
        if (x86_has_target(&in) && in.rel_size) {
            r.width = in.rel_size / 8;
            r.field = r.insn_end - r.width;
            r.target = in.target;
        } else if (in.flags & XF_RIPREL) {
            int32_t d;
            memcpy(&d, code + off + in.disp_off, 4);
            r.width = 4;
            r.field = at + off + in.disp_off;
            r.target = r.insn_end + (uint64_t)(int64_t)d;
        }
        if (r.width && !fn(ctx, &r))
            return false;
        off += n;
    }
    return true;
}
