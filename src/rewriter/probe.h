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
    NOTE_AFTER_FENTRY    = 1u << 1,  /* SYM+0 placed after the fentry call, which stays
                                        ftrace's; addr is past it, off still names SYM+0 */
    NOTE_CALL_KEPT       = 1u << 2,  /* a call in the DCR stays a real call in the detour */
    NOTE_RIPREL          = 1u << 3,  /* RIP-relative operands are re-pointed */
    NOTE_BRANCH_REENC    = 1u << 4,  /* relative branches are re-encoded as rel32 */
    NOTE_FLAGS_SAVED     = 1u << 5,  /* the arithmetic flags are live: the detour keeps them */
    NOTE_PADDING         = 1u << 6,  /* tactic: the jump ends in the padding after the function */
    NOTE_RETARGET        = 1u << 7,  /* tactic: branches and table entries into the DCR are
                                        re-pointed to its relocated copy (retargets) */
    NOTE_JUMP8           = 1u << 8,  /* tactic: a function shorter than 5 bytes: the site holds
                                        a jmp rel8 to a trampoline in padding (tramp) */
    NOTE_ONE_INSN        = 1u << 9,  /* proof: the function has an unproven indirect jump, but
                                        the DCR is one instruction: nothing lands inside it */
    NOTE_AFTER_PAD_NOP   = 1u << 10, /* SYM+0 placed after the nop that starts a landing-pad
                                        piece: the unwinder enters it at +1, nothing at +0 */
    NOTE_RELOC_MOVED     = 1u << 11, /* a vmlinux: KASLR relocations in the DCR move to its
                                        copy (kaslr_plus/kaslr_minus) */
    NOTE_SITE_MOVED      = 1u << 12, /* a vmlinux: boot-patched table sites in the DCR (return
                                        sites, alternatives) move to its copy, their entries
                                        re-pointed */
    NOTE_GO              = 1u << 13, /* in a Go function: its handlers run on the thread's
                                        runtime stack (KPRW_F_GO; golang.c) */
};

/* NOTE_SITE_MOVED: at most this many table entries in a DCR (a site may
 * have several: an alternative of two) */
#define PROBE_FOLLOW_MAX 4

/* Something re-pointed from the DCR to its relocated copy (NOTE_RETARGET). */
enum retarget_kind {
    RT_BRANCH,    /* a rel32 jmp/jcc: its displacement rewritten */
    RT_BRANCH8,   /* a rel8 jmp/jcc/loop: aimed at a trampoline in padding (tramp) */
    RT_TABLE4,    /* a relative jump-table entry (target - base) */
    RT_TABLE8,    /* an absolute jump-table entry (non-PIE: no relocation) */
};

struct retarget {
    uint64_t at;        /* the branch, or the table entry */
    uint64_t target;    /* the address in the DCR it aims at */
    uint64_t base;      /* RT_TABLE4: the table's base */
    uint64_t tramp;     /* RT_BRANCH8: its trampoline */
    uint8_t len;        /* the branch's length, or the entry's size */
    uint8_t kind;       /* enum retarget_kind */
};

#define DCR_TEXT_MAX 384

struct probe {
    const struct probe_spec *spec;
    const char *sym;         /* symbol the report names (NULL: none) */
    uint64_t addr;
    uint64_t off;            /* from sym */
    size_t func;             /* index in symbols.funcs, or SIZE_MAX */
    bool is_return;
    bool exit_guard;         /* a spec that asked for it is the static runtime's report point (its head's exit_rel) */
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
    struct retarget *retargets;   /* NOTE_RETARGET: malloc'ed, freed with the list */
    size_t nretargets;
    uint64_t tramp;          /* NOTE_JUMP8: the trampoline the site's jmp rel8 goes to */
    /* NOTE_RELOC_MOVED: bit i when a 4-byte field at DCR byte i is a KASLR
     * relocation that adds (plus) or subtracts (minus) the kernel's offset */
    uint32_t kaslr_plus, kaslr_minus;
    bool reloc_first;        /* such a relocation is in the first instruction: int3 cannot run it */
    /* NOTE_SITE_MOVED: each entry's field, its site's DCR byte and
     * length, table and how it is put back (FOLLOW_*) */
    struct probe_follow { uint64_t field; uint8_t off, len, table, how; } follow[PROBE_FOLLOW_MAX];
    uint8_t nfollow;
    uint8_t follow_first;    /* a table of such a site in the first instruction, + 1 (int3 cannot keep it) */
};

/* A window of instructions evicted to make room for trampolines (place.c):
 * its first 5 bytes jump to a stub that runs the window's instructions
 * out of line and jumps back; the rest hold trampolines (or int3). */
struct eviction {
    uint64_t at;
    uint8_t len;
};

struct probe_list {
    struct probe *v;
    size_t n, cap;
    struct eviction *ev;     /* set by the analysis */
    size_t nev;
    /* the event definitions the table stores (defs.c; abi.h KPRW_T_EVENTS):
     * ndefs of them, each ending with a NUL, defs_size bytes (0: none) */
    char *defs;
    size_t defs_size, ndefs;
};

const char *verdict_name(enum verdict v);
const char *reason_name(enum kp_reason r);
const char *reason_text(enum kp_reason r);
/* "jump-into-dcr", or "reserved:__jump_table" for reserved sites. */
const char *probe_reason(const struct probe *p, char *buf, size_t size);
#endif
