/* Function entries that come without a symbol (an FDE's start), proven
 * instruction starts by a linear sweep of the code from the starts the
 * image names: its function symbols and its sections' starts. */
#ifndef KPREWRITE_ENTRIES_H
#define KPREWRITE_ENTRIES_H
#include "image.h"

/* Why an address is not proven an instruction start. */
struct entry_doubt {
    uint64_t addr;              /* the entry */
    uint64_t origin;            /* where the sweep started */
    bool from_symbol;           /* at a function symbol (else its section's start) */
    bool not_code;              /* addr is in no section of code */
    uint64_t insn, insn_end;    /* the instruction running through addr */
    uint64_t undecodable;       /* the last byte the sweep stepped over before it, 0 if none */
};

/* A linear sweep: asked addresses in ascending order, it decodes each
 * byte of a section once (a symbol or a section start restarts it). */
struct entry_sweep {
    const struct image *img;
    const uint64_t *starts;     /* function symbols' addresses, sorted */
    size_t nstarts;
    const uint64_t *pads;       /* where code may follow zero padding: FDE starts, sorted */
    size_t npads, ipad;
    const struct section *sec;  /* the sweep's section, NULL before the first */
    uint64_t origin, pos, last, bad;
    bool from_symbol;
};

void entry_sweep_init(struct entry_sweep *w, const struct image *img, const uint64_t *starts, size_t nstarts,
                      const uint64_t *pads, size_t npads);
/* Does an instruction start at addr: a function symbol's address, or
 * met exactly by the linear sweep from the last function symbol before it
 * in its section, or from the section's start? The sweep steps over a
 * byte that decodes as no instruction, as objdump does (data in code),
 * and restarts at a pad (an FDE's start) that an instruction would run
 * over when only zero bytes lie between that instruction's start and the
 * pad (the zero padding a linker leaves between functions, which decodes
 * as `add %al,(%rax)` pairs). When not, *d says why. */
bool entry_proven(struct entry_sweep *w, uint64_t addr, struct entry_doubt *d);
/* d as one line of text ("inside the instruction at ..."). */
void entry_doubt_text(const struct entry_doubt *d, char *buf, size_t size);
#endif
