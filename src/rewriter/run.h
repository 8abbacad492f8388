/* One kprewrite run on one image: --check, or rewrite (bake / remove).
 * The command line and the fuzz harnesses both go through here. */
#ifndef KPREWRITE_RUN_H
#define KPREWRITE_RUN_H
#include <stdbool.h>
#include <stdio.h>
#include "spec.h"

struct run_opts {
    const char *image;         /* the input */
    const char *output;        /* NULL: in place */
    const char *system_map;    /* NULL: the image's own symbols */
    const char *relocs;        /* a vmlinux.relocs (NULL: the image's .rela sections) */
    const char *runtime;       /* a prebuilt image's DT_NEEDED runtime (NULL: the installed one) */
    struct spec_list *specs;   /* --probe and --probe-file; a rewrite prepends the baked ones */
    struct spec_list *removes; /* --remove */
    bool check, json, summary, kernel, disasm;
    bool strict_indirect;      /* --strict-indirect */
    enum { DETOURS_DEFAULT, DETOURS_INLINE, DETOURS_SHARED, DETOURS_COMPACT } detours;
                               /* --detours: the default is compact at call entries, and
                                  shared in a pool kprewrite adds, inline elsewhere */
    FILE *out;                 /* the report (stdout) */
    FILE *msg;                 /* errors and the "wrote" line (stderr) */
};

/* Returns the exit status (enum exit_status); errors go to o->msg as one
 * "kprewrite: ..." line. */
int run_image(struct run_opts *o);
#endif
