/* A probe point after resolution and its verdict. */
#ifndef KPREWRITE_PROBE_H
#define KPREWRITE_PROBE_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "kprewrite/reasons.h"
#include "spec.h"

enum verdict { V_OPTIMIZED, V_INT3, V_REFUSED };

enum probe_note {
    NOTE_AFTER_ENDBR     = 1u << 0,  /* SYM+0 placed after endbr64 */
    NOTE_FENTRY_TAKEOVER = 1u << 1,  /* the DCR is the fentry site; its __mcount_loc slot goes */
    NOTE_CALL_KEPT       = 1u << 2,  /* a call in the DCR stays a real call in the detour */
    NOTE_RIPREL          = 1u << 3,  /* RIP-relative operands are re-pointed */
    NOTE_BRANCH_REENC    = 1u << 4,  /* relative branches are re-encoded as rel32 */
    NOTE_FLAGS_SAVED     = 1u << 5,  /* the arithmetic flags are live: the detour keeps them */
    NOTE_PADDING         = 1u << 6,  /* tactic: the jump ends in the padding after the function */
};

#define DCR_TEXT_MAX 384

struct probe {
    const struct probe_spec *spec;
    const char *sym;         /* symbol the report names (NULL: none) */
    uint64_t addr;
    uint64_t off;            /* from sym */
    size_t func;             /* index in symbols.funcs, or SIZE_MAX */
    bool is_return;
    enum verdict verdict;
    enum kp_reason reason;
    const char *reason_arg;  /* RESERVED: the table, printed reserved:<table> */
    char detail[200];        /* e.g. "branch at 0x1234", "reserved:__jump_table" */
    uint8_t dcr_len;         /* bytes the probe owns at the site (the jump's) */
    uint8_t code_len;        /* of them, whole instructions (less with NOTE_PADDING) */
    uint8_t dcr_ninsn;
    char dcr_text[DCR_TEXT_MAX];
    unsigned notes;          /* enum probe_note */
    bool at_entry;           /* at the function entry (after endbr64): flags dead, %rsp = 8 mod 16 */
    bool entry_aligned;      /* at_entry, and not the ELF entry point (entered unaligned) */
};

struct probe_list {
    struct probe *v;
    size_t n, cap;
};

const char *verdict_name(enum verdict v);
const char *reason_name(enum kp_reason r);
const char *reason_text(enum kp_reason r);
/* "jump-into-dcr", or "reserved:__jump_table" for reserved sites. */
const char *probe_reason(const struct probe *p, char *buf, size_t size);
#endif
