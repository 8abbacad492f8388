/* Recovery of switch jump tables behind `jmp *%reg` / `jmp *T(,%reg,8)`. */
#ifndef KPREWRITE_X86_JUMPTABLE_H
#define KPREWRITE_X86_JUMPTABLE_H
#include "decode.h"

typedef const uint8_t *(*x86_read_fn)(void *ctx, uint64_t vaddr, size_t *avail);
/* Is vaddr in the image's executable code? */
typedef bool (*x86_is_code_fn)(void *ctx, uint64_t vaddr);

enum x86_ijmp {
    X86_IJMP_UNKNOWN,   /* targets cannot be proven */
    X86_IJMP_TABLE,     /* a bounded jump table: *targets filled */
    X86_IJMP_SLOT,      /* jmp *SLOT(%rip): a tail call through one pointer slot (*slot set) */
    X86_IJMP_LOAD,      /* the target was loaded from memory other than a RIP-relative slot
                           (jmp *(%r14), mov 0x18(%rdi),%rax; jmp *%rax), popped, or is a
                           RIP-relative address (lea X(%rip)): a materialized address */
};

struct x86_ijmp_result {
    enum x86_ijmp kind;
    uint64_t table;      /* table address (TABLE) */
    unsigned entries;    /* number of entries (TABLE) */
    uint64_t slot;       /* pointer slot address (SLOT) */
    uint64_t *targets;   /* malloc'ed (TABLE); caller frees */
    const char *why;     /* for UNKNOWN: what was not matched */
    bool bounded_by_entries;   /* TABLE with no bound check found (or only the index's
                                  width): read while its entries land in code, a
                                  superset that may run on into other tables */
    bool arith;          /* UNKNOWN: arithmetic made the target (not a table recognised) */
    bool outside;        /* UNKNOWN: the target comes from outside the jump's block (an
                            argument, a call's result, another path) */
    /* TABLE: where entry e is: table + e * width; relative: its value is
     * target - table (4 bytes), else the target itself (8 bytes) */
    unsigned width;
    bool relative;
};

/* Analyse the indirect jump insns[idx] of a function whose instructions are
 * insns[0..n) (in address order). targets/ntargets: the sorted direct branch
 * targets known inside the function (a merge point between the bound check
 * and the jump defeats the proof). Patterns: gcc/clang PIC
 * (lea T(%rip),%rB; movslq (%rB,%rI,4),%rA; add %rB,%rA; jmp *%rA) and
 * absolute (jmp *T(,%rI,8) or mov T(,%rI,8),%rA; jmp *%rA), bounded by
 * cmp $N,%rI with ja/jae (or jbe/jb to the dispatch block), or, when no such
 * check is found, by the first entry that lands outside code (is_code).
 * Other jumps are classified by where their target comes from
 * (SLOT, LOAD, or UNKNOWN with arith/outside). */
void x86_indirect_jump(const struct x86_insn *insns, size_t n, size_t idx,
                       const uint64_t *targets, size_t ntargets,
                       x86_read_fn read, x86_is_code_fn is_code, void *ctx, struct x86_ijmp_result *res);
#endif
