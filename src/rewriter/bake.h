/* Baking probes into an image: plan, emit and table, then the image
 * written atomically. */
#ifndef KPREWRITE_BAKE_H
#define KPREWRITE_BAKE_H
#include <stdio.h>

#include "table.h"

struct bake_result {
    size_t baked;
    size_t text_used, table_used, data_used;
};

/* Bakes every bakeable probe (optimized or int3: detour or out-of-line
 * copy, site, table entry, state) into the pool the image has (ps), in a
 * copy of the image renamed over out_path. Probes that cannot be baked
 * are left out (the report says why). Returns 0, or -1 with err. */
int bake(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
         const char *out_path, struct bake_result *res, char *err, size_t errlen);

struct bake_job;
/* The bake of a job whose image holds its pool (job->pool, pool_find's):
 * bake(), and the "wrote" line on job->msg. 0, or -1 with err. */
int bake_into_pool(const struct bake_job *j, char *err, size_t errlen);

/* The end of a "wrote" line: the event definitions stored, if any, and
 * the newline. */
void bake_say_events(FILE *msg, const struct probe_list *probes);

/* A prebuilt image (no pool): plans the probes at the address the pool's
 * text will have, adds a pool of the sizes the plan needs (and the runtime
 * as DT_NEEDED, addpool.c), and emits into it; written to out_path.
 * *grown: the bytes the file grew by. Returns 0, or -1 with err. */
/* What an added pool's image runs the probes with: a runtime library it
 * names as DT_NEEDED, or (a static executable) the static runtime's blob,
 * copied into the pool. */
struct added_rt {
    const char *library;
    const uint8_t *blob;
    size_t blob_size;
    uint64_t sigaction;   /* the static runtime's SIGTRAP guard (libc's sigaction), or 0 */
    uint32_t hook_ok;     /* the static runtime's head's (blob.h): may calls be hooked for return events */
};
int bake_added_pool(const struct image *img, const struct probe_list *probes, const char *out_path,
                    const struct added_rt *rt, bool shared, bool compact, struct bake_result *res, size_t *grown,
                    char *err, size_t errlen);
#endif
