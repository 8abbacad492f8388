/*
 * The facts an image imposes on probes, whatever its kind: sites that must
 * keep their bytes (a kernel table's entries, relocations applied at load),
 * extra control-flow targets, instructions that may fault to a fixup,
 * blacklisted code; each labelled with the table it comes from (the ids of
 * ../arch/ktable.h, which reasons name: reserved:<table>); and code the
 * image's runtime copies elsewhere at run time (moving.c). An image kind's
 * reader fills them (ktables.c for a kernel; facts_read_relocs for every
 * image's code relocations; facts_read_moving for a user image's); the
 * analysis looks them up (kfacts_*).
 */
#ifndef KPREWRITE_FACTS_H
#define KPREWRITE_FACTS_H
#include "image.h"
#include "symbols.h"
#include "../arch/ktable.h"   /* the tables' ids */

struct krange {
    uint64_t start;
    uint32_t len;
    uint8_t table;         /* enum ktable_id */
    /* KT_RELOC of a vmlinux whose .rela sections kprewrite can edit: the
     * relocation may move with its instruction into a detour's copy */
    uint8_t movable;
    uint8_t inverse;       /* KT_RELOC: an inverse one (KASLR subtracts its offset) */
    /* a site of a table the kernel walks once at boot to patch it
     * (KT_ACT_FOLLOW): a jump's copy may carry it, its entry re-pointed;
     * FOLLOW_RETURN or FOLLOW_COPY: what the runtime puts back */
    uint8_t follow;
    uint64_t field;        /* follow: the entry's s32 naming the site */
    /* a site (KT_ACT_PASS) a probe at it goes right past (the fentry
     * call: NOTE_AFTER_FENTRY) */
    uint8_t pass;
};

/* Code the image's runtime copies or remaps elsewhere at run time and runs
 * there (V8's embedded builtins): a probe's jump, or any byte the rewriter
 * writes there, would run from the copy, where a rel32 lands elsewhere. */
struct kmoving {
    uint64_t start, len;
    char what[160];        /* what it is and how it is marked, for the report */
    const char *why;       /* who copies it, and when */
};

/* A control-flow target named by a table entry (jump-label target, fixup). */
struct kref {
    uint64_t target;
    uint64_t from;         /* the table entry's address */
    uint8_t table;
};

struct kfacts {
    struct krange *reserved;   /* sites that must keep their bytes, sorted by start */
    size_t nreserved;
    struct kref *targets;      /* extra control-flow targets, sorted by target */
    size_t ntargets;
    uint64_t *extable;         /* instructions with an exception-table entry, sorted */
    size_t nextable;
    uint64_t *extable_blind;   /* those of them whose fixup lands in no function, sorted */
    size_t nextable_blind;
    struct krange *blacklist;  /* blacklisted code ranges, sorted by start */
    size_t nblacklist;
    struct krange *wide;       /* the section-wide ones of them (few) */
    size_t nwide;
    struct kmoving *moving;    /* code that moves at run time, sorted by start (few) */
    size_t nmoving;
    unsigned count[KT__COUNT]; /* entries read per table */
    unsigned entsize[KT__COUNT];
};

/* Name of a table as printed in reasons (reserved:<name>). */
const char *ktable_name(enum ktable_id id);
void kfacts_free(struct kfacts *kf);

/* First reserved range overlapping [start, start + len) that is neither a
 * movable relocation nor a site that may follow its instruction and lies
 * within [lo, hi) (a DCR: it moves whole with the copy). */
const struct krange *kfacts_fixed_overlap(const struct kfacts *kf, uint64_t start, uint64_t len, uint64_t lo,
                                          uint64_t hi);
/* The movable relocations in [start, start + len): bit i of *plus (of
 * *minus) when a 4-byte field KASLR adds its offset to (subtracts it from)
 * starts at start + i. Returns how many. */
unsigned kfacts_movable_in(const struct kfacts *kf, uint64_t start, uint64_t len, uint32_t *plus, uint32_t *minus);

/* The table sites that may follow their instruction into a copy
 * (krange.follow) starting in [start, start + len): up to max of them in
 * out. Returns how many there are. */
unsigned kfacts_follow_in(const struct kfacts *kf, uint64_t start, uint64_t len, const struct krange **out,
                          unsigned max);

/* First reserved range overlapping [start, start+len), or NULL. */
const struct krange *kfacts_reserved_overlap(const struct kfacts *kf, uint64_t start, uint64_t len);
/* Blacklist range containing addr, or NULL. */
const struct krange *kfacts_blacklisted(const struct kfacts *kf, uint64_t addr);
/* The first range of code that moves at run time overlapping [lo, hi), or
 * NULL: nothing there may be probed or written. */
const struct kmoving *kfacts_moving(const struct kfacts *kf, uint64_t lo, uint64_t hi);
/* Does any exception-table instruction lie in [start, end)? Returns it or 0. */
uint64_t kfacts_extable_in(const struct kfacts *kf, uint64_t start, uint64_t end);
/* The first of them whose fixup lands in code no function covers, or 0. */
uint64_t kfacts_extable_blind_in(const struct kfacts *kf, uint64_t start, uint64_t end);

/* Facts being read, before facts_build_finish sorts them into a struct
 * kfacts. */
struct facts_build {
    const struct image *img;
    const struct symbols *sy;
    struct ranges { struct krange *v; size_t n, cap; } reserved, blacklist;
    struct { struct kref *v; size_t n, cap; } targets;
    struct { uint64_t *v; size_t n, cap; } extable, extable_blind;
    struct { struct kmoving *v; size_t n, cap; } moving;
};
/* How an image kind's code relocations are read: which are inverse ones
 * (NULL: none), and whether a 4-byte one may move with its instruction
 * into a detour's copy (a vmlinux's: the kind re-points it, kaslr.c). */
struct reloc_rules {
    bool (*inverse)(const struct facts_build *c, const struct section *symtab, uint32_t symi);
    bool movable;
};
/* The relocations of c's image that patch its code at load (TEXTREL,
 * KASLR): reserved sites, counted in kf->count[KT_RELOC]. 0, or -1 with
 * err. */
int facts_read_relocs(struct facts_build *c, struct kfacts *kf, const struct reloc_rules *rules, char *err,
                      size_t errlen);
/* The code c's image copies or remaps elsewhere at run time, as the
 * runtimes that do it mark it (moving.c: V8's embedded builtins). 0, or -1
 * with err. */
int facts_read_moving(struct facts_build *c, char *err, size_t errlen);
/* The facts c read, sorted into kf, which owns them then. 0, or -1 with err
 * (everything freed). */
int facts_build_finish(struct kfacts *kf, struct facts_build *c, char *err, size_t errlen);
/* Frees what c read (an error before facts_build_finish). */
void facts_build_free(struct facts_build *c);
#endif
