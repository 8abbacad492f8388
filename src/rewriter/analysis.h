/* The analysis's state, shared by its stages: analyze.c (decoding, proofs,
 * verdicts), indirect.c (indirect jumps) and place.c (the tactics that
 * need every verdict first). */
#ifndef KPREWRITE_ANALYSIS_H
#define KPREWRITE_ANALYSIS_H
#include "analyze.h"
#include "taken.h"
#include "../arch/x86/decode.h"

/* Compact instruction boundary kept for probed functions. */
struct cinsn {
    uint32_t off;
    uint8_t len, kind, flags;
};

struct fstate {
    struct cinsn *insns;
    size_t n;
    uint64_t decode_fail;    /* first undecodable address, 0 if none */
};

/* REF_FOREIGN: a branch of code in a gap that no function holds
 * (funcfind.h): never re-pointed */
enum ref_kind { REF_BRANCH, REF_JTABLE, REF_PAD, REF_TABLE, REF_ENDBR, REF_FOREIGN };

/* Something that may transfer control to target. */
struct ref {
    uint64_t target, from;
    uint8_t kind;            /* enum ref_kind */
    uint8_t table;           /* REF_TABLE: enum ktable_id */
    uint8_t width;           /* REF_JTABLE: the entry's size (4: relative to base) */
    bool retargetable;       /* REF_JTABLE: from a table bounded by its check */
    uint64_t entry, base;    /* REF_JTABLE: the entry's address, the table's */
};

/* A jump table entry (REF_JTABLE). */
struct ref_table {
    uint64_t entry, base;
    uint8_t width;
    bool relative, bounded;
};

struct refs { struct ref *v; size_t n, cap; };

struct state {
    const struct image *img;
    const struct symbols *sy;
    const struct kfacts *kf;
    uint8_t *probed;         /* per function: has probes to analyse */
    uint8_t *fam_probed;     /* per family head (parent): some member has probes */
    uint64_t *taint;         /* per family head: first unproven indirect jump */
    uint8_t *ends;           /* per function: its last instruction does not fall through */
    struct fstate *fs;       /* per function (filled for probed ones) */
    struct refs refs;
    struct analysis_stats *st;
    struct taken taken;      /* code addresses the image materializes, built at
                                the first unproven indirect jump (user images) */
    int taken_state;         /* 0 not built, 1 built, -1 failed */
};

/* A control-flow target into a probed function (others are not kept);
 * false when out of memory. add_ref_table: a jump table's entry. */
bool add_ref(struct state *s, uint64_t target, uint64_t from, enum ref_kind kind, uint8_t table);
bool add_ref_table(struct state *s, uint64_t target, uint64_t from, const struct ref_table *t);
/* indirect.c: the indirect jumps of function fi (insns[0..n); local: the
 * sorted direct-branch targets inside it): tables recovered, the others
 * proven or the family tainted. -1: out of memory. */
int indirect_jumps(struct state *s, size_t fi, const struct x86_insn *insns, size_t n, uint64_t *local, size_t nlocal);

/* The verdict, reason and detail of p (a verdict other than optimized
 * drops the tactics of a jump). */
void probe_set(struct probe *p, enum verdict v, enum kp_reason r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The first ref with lo < target < hi, or NULL. */
const struct ref *ref_into(const struct refs *r, uint64_t lo, uint64_t hi);
/* The int3 verdict of a point with fewer bytes than the site's jump to its
 * function's end. */
void short_verdict(const struct state *s, struct probe *p, const struct func *fn, unsigned len, const char *extra);
/* The code addresses the image materializes, or NULL (vmlinux, --strict-indirect). */
const struct taken *taken_set(struct state *s);
/* The index of the first instruction of f at or after off. */
size_t find_insn(const struct fstate *f, uint32_t off);

/* place.c: the tactics that need every verdict: re-pointed branches must
 * not lie in bytes another probe owns; rel8 branches and short sites get
 * trampolines in padding, or in a window of instructions evicted for them.
 * A probe that cannot have what it needs goes int3. */
int place_tactics(struct state *s, struct probe_list *probes);
#endif
