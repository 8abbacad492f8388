/* .eh_frame FDE ranges and .gcc_except_table (LSDA) landing pads. */
#ifndef KPREWRITE_EHFRAME_H
#define KPREWRITE_EHFRAME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Gives the bytes mapped at virtual address vaddr: returns a pointer and sets
 * *avail to the number of bytes readable from there, or returns NULL. */
typedef const uint8_t *(*eh_read_fn)(void *ctx, uint64_t vaddr, size_t *avail);

struct eh_fde {
    uint64_t start;   /* pc_begin */
    uint64_t end;     /* pc_begin + pc_range */
    uint64_t lsda;    /* LSDA address, 0 when the FDE has none */
    /* the call frame instructions, as offsets in the section: the CIE's
     * initial ones, then the FDE's (eh_cfa_at) */
    uint32_t cie_insns, cie_insns_end, insns, insns_end;
    int32_t data_align;
    uint32_t code_align;
    /* its CIE's augmentation has 'S': a signal frame (a signal trampoline,
     * glibc's __restore_rt), whose range starts a byte early because
     * unwinders look up a return address minus one */
    bool signal_frame;
};

/* The rule for the canonical frame address at one pc: register (DWARF
 * numbering, the ISA's) + offset; known false when the FDE computes it by
 * an expression, or its instructions are malformed or unsupported. */
struct eh_cfa {
    bool known;
    unsigned reg;
    int64_t off;
};

/* Parse a whole .eh_frame section (data/size, loaded at vaddr). On success
 * returns 0 and a malloc'ed array sorted by start; on malformed input returns
 * -1 and writes a one-line message to err. Never reads outside data. */
int eh_frame_fdes(const uint8_t *data, size_t size, uint64_t vaddr,
                  struct eh_fde **fdes, size_t *n, char *err, size_t errlen);

/* The CFA rule at pc (fde->start <= pc < fde->end) of an FDE that
 * eh_frame_fdes returned for data/size: runs the CIE's initial
 * instructions, then the FDE's, up to pc. Never reads outside data. */
struct eh_cfa eh_cfa_at(const uint8_t *data, size_t size, const struct eh_fde *fde, uint64_t pc);

/* Landing pads named by the LSDA at lsda for the function starting at
 * func_start: returns 0 and a malloc'ed array of addresses (may be empty), or
 * -1 with a message when the LSDA is malformed. */
int lsda_landing_pads(eh_read_fn read, void *ctx, uint64_t lsda, uint64_t func_start,
                      uint64_t **pads, size_t *n, char *err, size_t errlen);
#endif
