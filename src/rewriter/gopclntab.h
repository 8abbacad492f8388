/* Go functions: names and bounds from the Go linker's function table,
 * .gopclntab (present in stripped Go binaries: the runtime's own
 * tracebacks need it). Go 1.16 (magic 0xfffffffa, also 1.17's), 1.18
 * (0xfffffff0, also 1.19's) and 1.20+ (0xfffffff1) layouts, little-endian,
 * 8-byte pointers. */
#ifndef KPREWRITE_GOPCLNTAB_H
#define KPREWRITE_GOPCLNTAB_H
#include "image.h"

/* Go's funcFlag bits (runtime/symtab.go; ASM from Go 1.19 on, 0 before) */
#define GO_FLAG_TOPFRAME 0x1   /* the top of a stack: goexit, mstart, rt0_go... */
#define GO_FLAG_SPWRITE  0x2   /* writes SP other than by adding a constant */
#define GO_FLAG_ASM      0x4   /* written in Go's assembly */
/* funcID_wrapper (Go 1.18-1.22's runtime/symtab.go, internal/abi): an ABI
 * wrapper or another generated one */
#define GO_FUNCID_WRAPPER 21

struct go_func {
    uint64_t start, end;       /* [start, end): end is the next function's entry */
    const char *name;          /* Go's full name, in the table's bytes (NUL-terminated there) */
    uint8_t flag;              /* GO_FLAG_* (0 in Go 1.16's layout) */
    uint8_t funcid;            /* Go's funcID (GO_FUNCID_WRAPPER: a generated wrapper) */
};

struct gopclntab {
    struct go_func *v;         /* sorted by start, non-overlapping */
    size_t n;
    uint64_t addr;             /* where the table's header is (0: none found) */
    unsigned version;          /* 116, 118 or 120: the layout */
    char *abi0_names;          /* the NAME.abi0 names given (gopclntab.c abi0_names) */
};

/* Reads the image's table: the section .gopclntab (or one whose name ends
 * so), else a valid header searched for in the allocated read-only data
 * (gopclntab.c says what is checked). 0: read, or no table (g->n == 0);
 * -1: a named table is malformed, or a Go image (.go.buildinfo,
 * .note.go.buildid) has none that reads: one line in err. */
int gopclntab_read(struct gopclntab *g, const struct image *img, char *err, size_t errlen);
void gopclntab_free(struct gopclntab *g);
/* Is the image Go's: a Go function table by its section's name, or the
 * Go linker's build info or build ID? */
bool gopclntab_go_image(const struct image *img);
#endif
