/*
 * x86_decode when Zydis decodes an instruction but not its operands
 * (decode.c): linked with t/zydis-fail.c, which makes operand decoding of
 * the mnemonic in KP_ZYDIS_FAIL_OPS fail. Such an instruction must not be
 * taken as not RIP-relative: it gets XF_OPS_UNKNOWN, x86_relocatable
 * refuses it, and every emitter that would copy it out of line (the int3
 * probe's copy, a detour's DCR) fails instead of copying its displacement
 * unchanged. The same bytes with operand decoding working are the control.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "arch/x86/decode.h"
#include "arch/x86/detour.h"

/* lea 0x10(%rip),%rax; mov 0x20(%rip),%eax (no lea); nop */
static const uint8_t lea_rip[] = { 0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00 };
static const uint8_t mov_rip[] = { 0x8b, 0x05, 0x20, 0x00, 0x00, 0x00 };
static const uint8_t nop_lea[] = { 0x90, 0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00 };
#define SITE 0x401000ull
#define POOL 0x402000ull

static void decode_cases(bool failing)
{
    const char *how = failing ? "operands failing" : "operands decoding";
    struct x86_insn in;
    const char *why = NULL;
    is_int(7, x86_decode(lea_rip, sizeof lea_rip, SITE, &in), "%s: lea disp(%%rip) decodes, 7 bytes", how);
    is_int(failing ? XF_OPS_UNKNOWN : XF_RIPREL, in.flags & (XF_RIPREL | XF_OPS_UNKNOWN),
           "%s: lea is %s", how, failing ? "XF_OPS_UNKNOWN, not XF_RIPREL" : "XF_RIPREL");
    is_int(3, in.disp_off, "%s: its displacement is at byte 3", how);
    bool relocatable = x86_relocatable(&in, &why);
    ok(relocatable == !failing, "%s: x86_relocatable says %s (%s)", how, failing ? "no" : "yes", why ? why : "-");
    is_int(6, x86_decode(mov_rip, sizeof mov_rip, SITE, &in), "%s: mov disp(%%rip) decodes", how);
    is_int(XF_RIPREL, in.flags & (XF_RIPREL | XF_OPS_UNKNOWN), "%s: mov (another mnemonic) stays XF_RIPREL", how);

    /* the int3 probe's out-of-line copy of the lea alone */
    uint8_t out[DETOUR_MAX];
    char err[200] = "";
    size_t n = x86_emit_ool(POOL, SITE, lea_rip, sizeof lea_rip, out, err, sizeof err);
    if (failing) {
        is_int(0, n, "%s: no out-of-line copy of the lea (%s)", how, err);
    } else {
        ok(n > 0, "%s: the lea's out-of-line copy is made", how);
        int32_t d;
        memcpy(&d, out + 3, 4);
        is_hex(SITE + 7 + 0x10, POOL + 7 + (uint64_t)(int64_t)d, "%s: the copy reaches the same address", how);
    }
    /* a detour whose DCR (nop; lea) holds it after its first instruction */
    struct detour_params dp = { .at = POOL, .site = SITE, .dcr = nop_lea, .dcr_len = sizeof nop_lea,
                                .state = POOL + 0x800, .slot = POOL + 0x900 };
    size_t dcr_off = 0, hook_off = 0;
    struct x86_copy_map map;
    err[0] = 0;
    n = x86_emit_detour(&dp, out, &dcr_off, &hook_off, &map, err, sizeof err);
    ok(failing ? n == 0 : n > 0, "%s: a detour copying nop; lea is %s (%s)", how, failing ? "refused" : "made",
       err[0] ? err : "-");
}

int main(void)
{
    plan_lazy();
    unsetenv("KP_ZYDIS_FAIL_OPS");
    decode_cases(false);
    setenv("KP_ZYDIS_FAIL_OPS", "lea", 1);
    decode_cases(true);
    return tap_done();
}
