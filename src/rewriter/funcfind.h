/* Functions nobody named: entries found and proven in code that no symbol
 * and no FDE covers (hand-written assembly of stripped images), named
 * fn@0xADDR. doc/analysis.md, "Functions nobody named". */
#ifndef KPREWRITE_FUNCFIND_H
#define KPREWRITE_FUNCFIND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct image;
struct symbols;

/* Why a candidate entry was left out (funcfind_reason_name spells them). */
enum ff_reason {
    FF_R_DECODE,        /* its flow reaches bytes that are no instruction */
    FF_R_OVERLAP,       /* its flow reaches into the middle of an instruction (its own, or the next function's) */
    FF_R_ODD_INSN,      /* its flow reaches a privileged, far or interrupt instruction */
    FF_R_WILD,          /* it branches outside the code */
    FF_R_DATA,          /* its bytes are read or written as data */
    FF_R_TABLE,         /* a jump table's target: a piece of the function that jumps there */
    FF_R_INSIDE,        /* inside another found function */
    /* only for a candidate no call proves (a pointer, a jump): */
    FF_R_NO_BOUNDARY,   /* the code before it does not decode onto it */
    FF_R_FALLEN_INTO,   /* the code before it runs on into it */
    FF_R_JUMPS_INTO,    /* it jumps into the middle of a named function */
    FF_R_NO_END,        /* a path runs on past it into what no function holds */
    FF_R__COUNT
};

/* How a found function was first proven, strongest first. */
enum ff_by { FF_BY_CALL, FF_BY_TAIL, FF_BY_POINTER, FF_BY_JUMP, FF_BY__COUNT };

struct ff_found {
    uint64_t start, end;        /* [start, end): its instructions, as its own flow reaches them */
    bool call_entry;            /* entered only by calls as far as proven: nothing runs into it,
                                   no jump from found code, a call or a compiled function's
                                   pointer or tail call leads to it */
    uint8_t by;                 /* enum ff_by */
};

/* A control transfer or code address in code of a gap that no proven
 * function holds: the analysis keeps DCRs off its targets (never
 * re-pointing it) and counts its addresses as taken. */
struct ff_ref {
    uint64_t target, from;
    bool address;               /* a RIP-relative operand, not a branch */
};

struct funcfind {
    struct ff_found *v;         /* sorted by start, not overlapping */
    size_t n;
    struct ff_ref *refs;        /* sorted by target */
    size_t nrefs;
    size_t candidates;          /* distinct candidate entries judged */
    size_t rejected[FF_R__COUNT];
    size_t by[FF_BY__COUNT];
    size_t gap_bytes;           /* code no named function covers */
    size_t unexplained_bytes;   /* of it, neither in a found function nor padding */
    unsigned rounds;
};

/* Finds the functions of img's code outside sy's functions (sorted, with
 * their FDEs for the CFA rules). 0, or -1 with err (out of memory). */
int funcfind_run(struct funcfind *ff, const struct image *img, const struct symbols *sy, char *err, size_t errlen);
void funcfind_free(struct funcfind *ff);
const char *funcfind_reason_name(enum ff_reason r);
const char *funcfind_by_name(enum ff_by b);
#endif
