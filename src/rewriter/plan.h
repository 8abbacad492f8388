/*
 * The plan of a bake: where each piece of code goes in the pool's text
 * (thunks, the shared detours' bodies, the stubs of evicted windows, the
 * return trampoline, each probe's detour or out-of-line copy), each
 * probe's table entry, the bytes changed outside the sites (fixups), the
 * strings, and the size of the text, the table and the state. Made without
 * writing a byte: the lengths come from the emitters run in counting mode
 * (emit.c), at the pool's addresses or provisional ones (a pool yet to be
 * added: lengths do not depend on them, only reach does, which the emit
 * stage checks again where the pool really is).
 */
#ifndef KPREWRITE_PLAN_H
#define KPREWRITE_PLAN_H
#include "strtab.h"
#include "table.h"

enum piece_kind {
    PIECE_THUNK,          /* added pool: a thunk reading slot `index` */
    PIECE_COMMON,         /* a body of the shared detours: index 1 saves the flags */
    PIECE_EVICT,          /* the stub running window probes->ev[index] out of line */
    PIECE_RET_TRAMPOLINE, /* the image's return trampoline */
    PIECE_ENTRY,          /* the code of table entry plan->entries[index] */
};

/* A piece of the pool's text, in text order. */
struct piece {
    uint8_t kind;         /* enum piece_kind */
    uint32_t index;
    size_t off, len;      /* in the text */
    size_t fix, nfix;     /* its fixups: plan->fixups[fix, fix + nfix) */
};

enum entry_code {
    CODE_DETOUR,          /* an inline detour (optimized) */
    CODE_SHARED,          /* a shared detour's head and copy */
    CODE_COMPACT,         /* a compact detour */
    CODE_OOL,             /* an int3 probe's out-of-line copy of its first instruction */
};

/* One table entry: a probe, or a kprobe and a return probe at one address. */
struct plan_entry {
    size_t probe;         /* probes->v[probe] (the return probe of a pair) */
    uint8_t code;         /* enum entry_code */
    uint8_t site_len;     /* the site's bytes the entry owns */
    uint8_t copy_len;     /* the original bytes its copy runs */
    size_t off;           /* its code in the text */
    size_t entry_off;     /* where a compact or shared detour is entered, from off */
    size_t dcr_off;       /* its copy of the site's instructions, from off */
    size_t hook_off;      /* return probes: where the function returns to, from off (0: none) */
    size_t code_off;      /* what the table names (code_rel), from off: the entry, or the copy */
    bool at_copy;         /* its original bytes are its copy's (KPRW_F_ORIG_AT_COPY) */
    struct kprw_follow follow[KPRW_FOLLOW_PER_ENTRY];   /* KPRW_T_FOLLOW's records */
    struct kprw_entry e;  /* the table's entry; table_write adds site_rel and code_rel */
};

enum fixup_how {
    FIX_JMP32,            /* a jmp rel32 to target (a trampoline) */
    FIX_WINDOW,           /* an evicted window: jmp rel32 to target (its stub), then int3 */
    FIX_BRANCH,           /* the direct branch there aimed at target */
    FIX_TABLE4,           /* a relative jump-table entry: target - base */
    FIX_TABLE8,           /* an absolute one: target */
};

/* Bytes outside the sites changed for a probe (struct kprw_fixup). */
struct plan_fixup {
    uint64_t at;          /* the bytes changed */
    uint64_t target;      /* where they lead: an offset in the text (to_text) or an address */
    uint64_t base;        /* FIX_TABLE4: the jump table's base */
    uint64_t branch;      /* re-pointed branches and entries: which (for messages), else 0 */
    size_t probe;         /* the probe it is for (messages); SIZE_MAX: a window */
    uint32_t orig_off;    /* the original bytes, in the strings */
    uint8_t len;
    uint8_t kind;         /* enum kprw_fixup_kind */
    uint8_t how;          /* enum fixup_how */
    bool to_text;
};

/* What the pool offers the detours, as the plan found it. */
struct plan_calls {
    bool kernel;          /* the kernel contract (kind.h): the detours call the dispatcher, no slots */
    bool added;           /* an added pool: detours call thunks that read the slots */
    bool kret;            /* the slot of the return-probe entry */
    bool kret_return;     /* the slot of the return-probe return */
    bool enter;           /* compact detours (their slot, and asked for) */
    bool shared;          /* shared detours */
};

#define PLAN_NONE SIZE_MAX

struct bake_plan {
    struct plan_calls calls;
    struct piece *pieces;                 /* in text order */
    size_t npieces, cappieces;
    size_t thunk[KPRW_NSLOTS], common[2], tramp;   /* text offsets, or PLAN_NONE */
    struct plan_entry *entries;           /* in address order */
    size_t nentries;
    struct plan_fixup *fixups;            /* in the order they are listed */
    size_t nfixups, capfixups;
    struct strtab strs;                   /* names and original bytes */
    bool dyn_names;                       /* some names stay in the dynamic string table */
    bool found_names;                     /* KPRW_T_FOUND_NAMES: some are fn@ names (KPRW_NAME_FOUND) */
    bool kaslr;                           /* KPRW_T_KASLR: some DCR relocations moved (a vmlinux) */
    bool follow;                          /* KPRW_T_FOLLOW: some boot-patched sites moved (a vmlinux) */
    size_t text_size, table_size, data_size;   /* what the pool's sections must hold */
};

/* Plans the bake of every bakeable probe (optimized or int3) into the pool
 * ps (where it is, or will be). Returns 0, or -1 with err (a probe whose
 * code cannot be made, or is out of reach; the image cannot hold them). */
int bake_plan_make(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                   struct bake_plan *plan, char *err, size_t errlen);
void bake_plan_free(struct bake_plan *plan);

/* The facts about ps the plan depends on (plan->calls). */
struct plan_calls plan_calls_of(const struct image *img, const struct pool_sections *ps);
#endif
