/*
 * reloc-check: an independent check of kprewrite's relocated DCR copies.
 * Shared by the checker (reloc-check.c) and its call evaluator
 * (callsim.c). This code decodes with Zydis on its own and shares nothing
 * with src/arch/x86 or src/rewriter: it is the second opinion on them.
 */
#ifndef RC_H
#define RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <Zydis/Zydis.h>

/* One decoded instruction and where it is. */
struct insn {
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
    uint64_t addr;
};

/* The rules a copy can break: one line in the report each. */
enum rule {
    R_SAME_OP,        /* not the same operation (mnemonic, operands, prefixes) */
    R_BRANCH,         /* direct jmp/jcc: other condition or other target */
    R_INDJMP,         /* indirect jmp: not a jmp through the same operand */
    R_RIPREL,         /* a RIP-relative operand reaches another address */
    R_CALL_RET,       /* a call leaves a return address other than the original one */
    R_CALL_STATE,     /* registers, flags or stack not as a real call leaves them */
    R_CALL_TARGET,    /* the emulated call goes elsewhere than the call did */
    R_JMP_BACK,       /* no jmp to site+dcr_len after the last instruction */
    R_UNRELOC,        /* an instruction that cannot run out of line */
    R_IN_DCR,         /* control goes into the DCR's overwritten bytes */
    R_DCR,            /* the original bytes are not whole instructions; a copy byte is undecodable */
    R_SITE,           /* the site does not hold the jmp to its detour (or the int3) */
    R_ORIG,           /* the table's original bytes are not the input's */
    R_TABLE,          /* the table is malformed (out of range, overlapping sites) */
    R_BYTES,          /* bytes changed outside every probe site */
    R_FIXUP,          /* a re-pointed branch, table entry or trampoline does not go to the copy */
    R_INTO_DCR,       /* a direct branch of the original image lands inside an optimized DCR
                         and was not re-pointed to the copy */
    R_BOUNDARY,       /* a probe site (or its function's start) is not an instruction boundary
                         of a linear sweep from its function's symbol or its section's start */
    R_COUNT
};
extern const char *const rule_name[R_COUNT];

bool rc_decode(const uint8_t *p, size_t n, uint64_t addr, struct insn *out);
/* AT&T text; branch targets absolute, RIP-relative operands as
 * disp(%rip) followed by "# 0xADDR" like objdump. */
void rc_format(const struct insn *in, char *buf, size_t size);
/* 0..15 for a 64-bit general register (rax..r15, hardware order), else -1. */
int rc_gpr64(ZydisRegister r);
/* The same for the 64-bit register enclosing any general register, else -1. */
int rc_gpr_any(ZydisRegister r);
extern const char *const rc_gpr_name[16];
#define RC_RSP 4

/* Reads code and data of the rewritten image by address. */
typedef const uint8_t *(*rc_read_fn)(void *ctx, uint64_t addr, size_t *avail);

/*
 * The emulation of one call: the instructions from `at` must do what the
 * original call did, except that the return address is the original one
 * (ret): push ret, go to the target, leave every other register, the
 * flags and the caller's stack alone.
 */
enum callsim_kind { CS_DIRECT, CS_REG, CS_MEM };
struct callsim_expect {
    enum callsim_kind kind;
    uint64_t target;                      /* CS_DIRECT */
    int reg;                              /* CS_REG: gpr index */
    const struct insn *orig;              /* CS_MEM: the original call (its memory operand, its end) */
    uint64_t ret;                         /* the return address it must push */
    bool pic;                             /* ET_DYN: a link-time address counts only when computed from %rip */
    /* ET_EXEC: a constant in read-only memory may hold the return address */
    const uint8_t *(*read_const)(void *ctx, uint64_t addr, size_t *avail);
    void *ctx;
};
#define CS_MAX_INSNS 24
#define CS_MAX_PROBLEMS 8
struct callsim_problem {
    enum rule rule;
    char text[200];
};
struct callsim_result {
    unsigned ninsns;                      /* copy instructions read, the last one ending it */
    uint64_t end;                         /* the address after them */
    bool complete;                        /* ended by a jmp or ret (false: gave up, see problems) */
    unsigned nproblems;
    struct callsim_problem problem[CS_MAX_PROBLEMS];
    struct insn insns[CS_MAX_INSNS];
};
/* A linear sweep's instruction boundaries (rc-bounds.c): does the sweep
 * from origin (a known instruction start) meet addr exactly? */
struct rc_bq {
    uint64_t origin, addr;
    uint64_t limit;           /* the sweep reads nothing at or past it (its section's end) */
    bool entry;               /* addr is a function's start: the sweep may restart at a pad */
    size_t tag;               /* the caller's */
    bool ok;                  /* out: addr is a boundary */
    uint64_t insn, insn_end;  /* out, !ok: the instruction (or undecodable byte) running through addr */
    uint64_t undecodable;     /* out: the last byte the sweep stepped over to get there, 0 if none */
};
/* Answers every query; sorts q by origin, then address. A byte that
 * decodes as no instruction is stepped over (data in code); on the way to
 * an entry, an instruction of zero bytes only up to a pad (sorted: the
 * FDEs' starts; and the entry itself) that it would run over ends there
 * (zero padding between functions decodes as `add %al,(%rax)` pairs). */
void rc_sweep(struct rc_bq *q, size_t n, rc_read_fn read, void *ctx, const uint64_t *pads, size_t npads);

void callsim(const struct callsim_expect *x, rc_read_fn read, void *ctx, uint64_t at, struct callsim_result *res);

#endif
