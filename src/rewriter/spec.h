/* Probe specifications: SYM, SYM+OFF, 0xADDR, SYM%return, globs, --probe-file. */
#ifndef KPREWRITE_SPEC_H
#define KPREWRITE_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct probe_spec {
    char *text;          /* as written */
    char *sym;           /* NULL for 0xADDR */
    uint64_t off;        /* SYM+OFF */
    uint64_t addr;       /* 0xADDR */
    bool is_return;      /* SYM%return */
    bool is_glob;        /* sym holds * ? or [ */
    bool has_off;        /* an explicit +OFF was written */
    char origin[300];    /* "command line" or "FILE:LINE" */
    bool baked;          /* a probe the image's table holds already (spec_add_baked) */
};

struct spec_list {
    struct probe_spec *v;
    size_t n, cap;
};

/* Parse one spec. On error returns -1, sets *col (1-based) and err. */
int spec_parse(const char *text, struct probe_spec *out, size_t *col, char *err, size_t errlen);
/* Parse and append; on error writes "ORIGIN:COL: message" to err. */
int spec_add(struct spec_list *l, const char *text, const char *origin, char *err, size_t errlen);
/* A probe read back from the image's own table (origin "baked"). */
int spec_add_baked(struct spec_list *l, const char *text, char *err, size_t errlen);
/* One spec a line, '#' starts a comment; errors as FILE:LINE:COLUMN: message. */
int spec_read_file(struct spec_list *l, const char *path, char *err, size_t errlen);
/* Move every spec of src to the end of dst (src is left empty). */
int spec_list_move(struct spec_list *dst, struct spec_list *src);
void spec_list_free(struct spec_list *l);
#endif
