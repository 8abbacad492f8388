/* Functions of an image: names and bounds from .symtab, .dynsym, System.map,
 * Go's .gopclntab and .eh_frame FDEs, and those found without any (funcfind.h); lookups by
 * name, glob and address. */
#ifndef KPREWRITE_SYMBOLS_H
#define KPREWRITE_SYMBOLS_H
#include "ehframe.h"
#include "entries.h"
#include "funcfind.h"
#include "gopclntab.h"
#include "image.h"

/* FO_FOUND: no symbol, no FDE: found and proven by funcfind.c, "fn@0x...";
 * FO_GO: no symbol, named by Go's function table (gopclntab.h) */
enum func_origin { FO_SYMBOL, FO_SYSTEM_MAP, FO_FDE, FO_FOUND, FO_GO };

struct func {
    uint64_t start, end;       /* [start, end) */
    const char *name;          /* preferred name; "fde@0x..." for unnamed FDEs */
    uint64_t lsda;             /* from the covering FDE, 0 if none */
    enum func_origin origin;
    bool size_guessed;         /* no size: bounded by the next function or section end */
    size_t parent;             /* for foo.cold / foo.part.N / foo.isra.N: index of foo, else self */
    bool entry_unproven;       /* an fde@ whose start no sweep proves an instruction's: no probe
                                  (symbols_entry_doubt says why) */
    bool call_entry;           /* FO_FOUND: proven entered by calls only (funcfind.h) */
    const char *go_name;       /* a Go function (in Go's function table): its Go name, else NULL */
    uint8_t go_flag;           /* its funcFlag bits (GO_FLAG_*) */
};

struct name_ent {
    const char *name;
    uint64_t addr;             /* the symbol's own address */
    size_t func;               /* covering function (index), or SIZE_MAX */
};

struct symbols {
    struct func *funcs;        /* sorted by start, non-overlapping */
    size_t nfuncs;
    struct name_ent *names;    /* every name (aliases too), sorted by name */
    size_t nnames;
    /* Every symbol of any type, sorted by name (e.g. __start___ex_table). */
    struct name_ent *addrs;
    size_t naddrs;
    char *strings;             /* storage for System.map names */
    char *fde_names;           /* storage for fde@ names */
    char *go_names;            /* storage for Go's NAME.abi0 names (gopclntab.c) */
    size_t nfdes;              /* FDEs seen in .eh_frame */
    struct eh_fde *fdes;       /* them, sorted by start */
    const struct section *eh;  /* .eh_frame, when it has any */
    /* FDEs whose start no symbol covers and that are no function's entry */
    size_t *sigframes;         /* signal frames: indexes in fdes, by start */
    size_t nsigframes;
    struct entry_doubt *doubts;/* unproven starts (the fde@ functions kept to refuse), by address */
    size_t ndoubts;
    struct funcfind found;     /* the FO_FOUND functions' proofs, and what was left out */
    char *found_names;         /* storage for fn@ names */
    size_t ngo;                /* functions in Go's function table (gopclntab.h), 0: no Go code */
    unsigned go_version;       /* its layout: 116, 118, 120 */
};

int symbols_load(struct symbols *sy, const struct image *img, const char *system_map,
                 char *err, size_t errlen);
void symbols_free(struct symbols *sy);

/* The CFA rule at pc, by the FDE covering it (unknown without one). */
struct eh_cfa symbols_cfa_at(const struct symbols *sy, uint64_t pc);
/* The signal-frame FDE (CIE augmentation 'S') whose range holds addr, or NULL. */
const struct eh_fde *symbols_signal_frame_at(const struct symbols *sy, uint64_t addr);
/* Why fn's entry (an fde@ with entry_unproven) is not proven, or NULL. */
const struct entry_doubt *symbols_entry_doubt(const struct symbols *sy, const struct func *fn);
/* Function covering addr, or NULL. */
const struct func *symbols_func_at(const struct symbols *sy, uint64_t addr);
/* Function name entry (any alias) named name, or NULL. */
const struct name_ent *symbols_lookup(const struct symbols *sy, const char *name);
/* Address of any symbol (function or not) named name; false if none. */
bool symbols_addr_of(const struct symbols *sy, const char *name, uint64_t *addr);
#endif
