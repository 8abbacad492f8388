/* The checker's call evaluator (callsim.c) on hand-written emulations,
 * right and wrong ones (callsim-cases.S): which rules each one breaks. */
#include "rc.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

#define CASE(name) extern const uint8_t cs_##name##_orig[], cs_##name##_ret[], cs_##name##_copy[];
CASE(direct_ok) CASE(direct_xchg) CASE(direct_ret) CASE(direct_pushf) CASE(direct_other) CASE(direct_poolret)
CASE(direct_sub) CASE(direct_rax) CASE(direct_frame) CASE(direct_call) CASE(direct_and) CASE(direct_deep)
CASE(direct_global) CASE(reg_ok) CASE(reg_r11) CASE(reg_wrong) CASE(reg_clobbered) CASE(rsp_ok) CASE(rsp_stale)
CASE(rsp0_ok) CASE(rsp0_ret) CASE(rip_ok) CASE(rip_other) CASE(rip_zero) CASE(rdi_ok) CASE(rax_mem_ok)
CASE(rax_mem_early) CASE(sib_ok) CASE(fs_ok) CASE(fs_lost)
#undef CASE

#define B(r) (1u << (r))
static const struct {
    const char *name;
    const uint8_t *orig, *ret, *copy;
    unsigned want;   /* rules */
} cases[] = {
#define C(name, want) { #name, cs_##name##_orig, cs_##name##_ret, cs_##name##_copy, want }
    C(direct_ok, 0),
    C(direct_xchg, 0),
    C(direct_ret, 0),
    C(direct_pushf, 0),
    C(direct_other, B(R_CALL_TARGET)),
    C(direct_poolret, B(R_CALL_RET)),
    C(direct_sub, B(R_CALL_STATE)),
    C(direct_rax, B(R_CALL_STATE)),
    C(direct_frame, B(R_CALL_STATE) | B(R_CALL_RET)),
    C(direct_call, B(R_CALL_RET)),
    C(direct_and, B(R_CALL_STATE)),
    C(direct_deep, B(R_CALL_STATE)),
    C(direct_global, B(R_CALL_STATE)),
    C(reg_ok, 0),
    C(reg_r11, 0),
    C(reg_wrong, B(R_CALL_TARGET)),
    C(reg_clobbered, B(R_CALL_STATE) | B(R_CALL_TARGET)),
    C(rsp_ok, 0),
    C(rsp_stale, B(R_CALL_TARGET)),
    C(rsp0_ok, 0),
    C(rsp0_ret, B(R_CALL_TARGET)),
    C(rip_ok, 0),
    C(rip_other, B(R_CALL_TARGET)),
    C(rip_zero, B(R_CALL_TARGET)),
    C(rdi_ok, 0),
    C(rax_mem_ok, 0),
    C(rax_mem_early, B(R_CALL_STATE) | B(R_CALL_TARGET)),
    C(sib_ok, 0),
    C(fs_ok, 0),
    C(fs_lost, B(R_CALL_TARGET)),
#undef C
};

static const uint8_t *read_mem(void *ctx, uint64_t addr, size_t *avail)
{
    (void)ctx;
    *avail = 16;   /* the cases are in this program's text */
    return (const uint8_t *)(uintptr_t)addr;
}

int main(void)
{
    plan((int)(sizeof cases / sizeof cases[0]));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct insn oi;
        if (!rc_decode(cases[i].orig, 16, (uint64_t)(uintptr_t)cases[i].orig, &oi)) {
            ok(false, "%s: the original decodes", cases[i].name);
            continue;
        }
        struct callsim_expect x = { .ret = (uint64_t)(uintptr_t)cases[i].ret, .pic = true };
        const ZydisDecodedOperand *o = &oi.op[0];
        if (o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
            x.kind = CS_DIRECT;
            x.target = oi.addr + oi.zi.length + (uint64_t)o->imm.value.s;
        } else if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
            x.kind = CS_REG;
            x.reg = rc_gpr64(o->reg.value);
        } else {
            x.kind = CS_MEM;
            x.orig = &oi;
        }
        static struct callsim_result res;
        callsim(&x, read_mem, NULL, (uint64_t)(uintptr_t)cases[i].copy, &res);
        unsigned got = 0;
        for (unsigned j = 0; j < res.nproblems; j++)
            got |= B(res.problem[j].rule);
        char w[200] = "", g[200] = "";
        for (int r = 0; r < R_COUNT; r++) {
            if (cases[i].want & B(r))
                snprintf(w + strlen(w), sizeof w - strlen(w), " %s", rule_name[r]);
            if (got & B(r))
                snprintf(g + strlen(g), sizeof g - strlen(g), " %s", rule_name[r]);
        }
        if (!ok(got == cases[i].want, "%s: %u instructions, rules {%s }", cases[i].name, res.ninsns, w)) {
            diag("got {%s }", g);
            for (unsigned j = 0; j < res.nproblems; j++)
                diag("[%s] %s", rule_name[res.problem[j].rule], res.problem[j].text);
        }
    }
    return tap_done();
}
