/* Probe specifications: SYM, SYM+OFF, 0xADDR, SYM%return, globs, event
 * definitions (kprobe_events' syntax: their point is baked, the definition
 * stored in the table), --probe-file. */
#ifndef KPREWRITE_SPEC_H
#define KPREWRITE_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct probe_spec {
    char *text;          /* as written (a definition: all of it) */
    char *def;           /* an event definition whose point this is (text); NULL: a plain spec */
    char *sym;           /* NULL for 0xADDR */
    uint64_t off;        /* SYM+OFF */
    uint64_t addr;       /* 0xADDR */
    bool is_return;      /* SYM%return */
    bool is_glob;        /* sym holds * ? or [ */
    bool has_off;        /* an explicit +OFF was written */
    char origin[300];    /* "command line" or "FILE:LINE" */
    bool baked;          /* a probe the image's table holds already (spec_add_baked) */
    bool in_file;        /* from --probe-file: origin is FILE:LINE, text starts at column indent + 1 */
    bool exit_guard;     /* the static runtime's report point (kind-static.c; its head's exit_rel) */
    size_t indent;
};

struct spec_list {
    struct probe_spec *v;
    size_t n, cap;
    char **defs;         /* event definitions an earlier run baked (pool_existing) */
    size_t ndefs, capdefs;
};

/* Parse one spec, or an event definition (its spec is the point; the
 * runtime core's parser checks the rest). On error returns -1, sets *col
 * (1-based) and err. */
int spec_parse(const char *text, struct probe_spec *out, size_t *col, char *err, size_t errlen);
/* Parse and append; on error writes "ORIGIN 'TEXT': col COL: message" to err. */
int spec_add(struct spec_list *l, const char *text, const char *origin, char *err, size_t errlen);
/* A probe read back from the image's own table (origin "baked"). */
int spec_add_baked(struct spec_list *l, const char *text, char *err, size_t errlen);
/* An error at column col (1-based) of s's text: "ORIGIN 'TEXT': col COL:
 * msg", or "FILE:LINE:COL: msg" for a line of a probe file. */
void spec_error(const struct probe_spec *s, size_t col, const char *msg, char *err, size_t errlen);
/* A definition an earlier run baked (the table's KPRW_T_EVENTS block). */
int spec_add_baked_def(struct spec_list *l, const char *def, char *err, size_t errlen);
/* One spec or definition a line, '#' (outside a "string") starts a
 * comment; errors as FILE:LINE:COLUMN: message. */
int spec_read_file(struct spec_list *l, const char *path, char *err, size_t errlen);
/* Move every spec and baked definition of src to the end of dst's (src is left empty). */
int spec_list_move(struct spec_list *dst, struct spec_list *src);
void spec_list_free(struct spec_list *l);
#endif
