/* Adding a kprewrite pool to a prebuilt image: new segments, and the
 * runtime library as a new DT_NEEDED. */
#ifndef KPREWRITE_ADDPOOL_H
#define KPREWRITE_ADDPOOL_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"

struct pool_sizes {
    uint64_t text, table, data;
    /* a static executable's: the static runtime's blob, copied after the
     * detours (.kprewrite.rt) with e_entry at its start routine, and where
     * in .kprewrite.data its area lies (src/runtime/static/blob.h) */
    const uint8_t *rt;
    uint64_t rt_size, rt_area_off;
    uint64_t rt_sigaction;     /* the function the runtime guards its SIGTRAP at (0: none) */
    uint64_t rt_exits[2];      /* the report points' sites (0: none; blob.h KPRS_EXITS) */
    uint32_t rt_hook_ok;       /* the head's hook_ok (blob.h) */
};

/* Where the pool text will start, before its size is known (the detours'
 * lengths do not depend on it, their rel32 reach does). 0 when the image
 * cannot take a pool (err says why). */
uint64_t pool_add_text_addr(const struct image *img, char *err, size_t errlen);

/* A copy of img (malloc'd, *out and *out_size) with, appended after every
 * existing byte (none moves):
 *   an r-x PT_LOAD:  .kprewrite.table first (the runtime finds it there), a
 *                    copy of .dynstr with the runtime's path appended, and
 *                    .kprewrite.text (sz->text bytes of int3);
 *   an rw- PT_LOAD:  a copy of .dynamic with DT_NEEDED runtime first and
 *                    DT_STRTAB/DT_STRSZ re-pointed (PT_DYNAMIC follows it),
 *                    .kprewrite.data and .kprewrite.slot (empty slots);
 * then a new .shstrtab and section header table naming the new sections
 * (.dynamic and .dynstr point at their copies). The two PT_LOADs replace
 * two PT_NOTE program headers, or the program header table grows in place
 * over the sections after it, which move into the r-x PT_LOAD, or (when
 * code or data follows the table) a new table goes in a third, read-only
 * PT_LOAD at the end (addpool.c says why in that order). A library with
 * one PT_NOTE gets one r-x PT_LOAD. A static executable (runtime NULL,
 * sz->rt its runtime) gets no dynamic linking data, the blob after the
 * detours, and e_entry at the blob's start; a static executable given a
 * runtime library, or a dynamic one given a blob, is refused.
 * Returns 0, or -1 with a one-line message. */
int pool_add(const struct image *img, const struct pool_sizes *sz, const char *runtime, uint8_t **out,
             size_t *out_size, char *err, size_t errlen);
#endif
