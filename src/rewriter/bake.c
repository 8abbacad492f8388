/*
 * Baking probes: the plan (plan.c: where everything goes, what it takes),
 * then, into a copy of the image, the code (emit.c) and the probe table
 * (table.c), and the copy written over the output atomically. A prebuilt
 * image is planned before its pool exists, and the pool is added with the
 * sizes the plan needs.
 */
#include "bake.h"
#include "../runtime/static/blob.h"
#include "addpool.h"
#include "atomic-write.h"
#include "emit.h"
#include "kind.h"
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does the pool hold what the plan needs? */
static int check_sizes(const struct image *img, const struct pool_sections *ps, const struct bake_plan *plan,
                       char *err, size_t errlen)
{
    size_t text = plan->text_size, table = plan->table_size, data = plan->data_size, n = plan->nentries;
    if (text <= ps->text->size && table <= ps->table->size && data <= ps->data->size)
        return 0;
    if (ps->added)
        snprintf(err, errlen, "%s: the pool kprewrite added to this image is sized for the probes it was given "
                 "(%s has %llu bytes, %zu needed): rewrite the original image with every probe you want",
                 img->path, KPRW_SEC_TEXT, (unsigned long long)ps->text->size, text);
    else if (img->hooks->pool_too_small)   /* the kind says what to enlarge */
        img->hooks->pool_too_small(img, ps, n, text, table, data, err, errlen);
    else
        snprintf(err, errlen, "%s: the pool is too small for %zu probes: %s needs %zu bytes (has %llu), "
                 "%s needs %zu (has %llu), %s needs %zu (has %llu); enlarge it with KPREWRITE_POOL() "
                 "(see kprewrite/pool.h)", img->path, n, KPRW_SEC_TEXT, text,
                 (unsigned long long)ps->text->size, KPRW_SEC_TABLE, table,
                 (unsigned long long)ps->table->size, KPRW_SEC_DATA, data, (unsigned long long)ps->data->size);
    return -1;
}

/* The planned probes into a copy of img (its pool ps where they go),
 * written over out_path. */
static int write_planned(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                         const struct bake_plan *plan, const char *out_path, struct bake_result *res,
                         char *err, size_t errlen)
{
    if (check_sizes(img, ps, plan, err, errlen) < 0)
        return -1;
    uint8_t *out = malloc(img->map_size);
    if (!out) {
        snprintf(err, errlen, "%s: out of memory", img->path);
        return -1;
    }
    memcpy(out, img->map, img->map_size);   /* original bytes already restored at old sites */
    int rc = emit_image(img, ps, probes, plan, out, err, errlen) < 0 ||
             table_write(img, ps, probes, plan, out, err, errlen) < 0 ||
             write_atomic(out_path, out, img->map_size, img->mode, err, errlen) < 0 ? -1 : 0;
    free(out);
    if (rc == 0)
        *res = (struct bake_result){ plan->nentries, plan->text_size, plan->table_size, plan->data_size };
    return rc;
}

int bake(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
         const char *out_path, struct bake_result *res, char *err, size_t errlen)
{
    struct bake_plan plan;
    memset(res, 0, sizeof *res);
    if (bake_plan_make(img, ps, probes, &plan, err, errlen) < 0)
        return -1;
    int rc = write_planned(img, ps, probes, &plan, out_path, res, err, errlen);
    bake_plan_free(&plan);
    return rc;
}

int bake_into_pool(const struct bake_job *j, char *err, size_t errlen)
{
    struct bake_result br;
    if (bake(j->img, j->pool, j->probes, j->dest, &br, err, errlen) < 0)
        return -1;
    fprintf(j->msg, "kprewrite: wrote %s: %zu probe%s baked (%zu before), pool use: text %zu, table %zu, "
            "data %zu bytes", j->dest, br.baked, br.baked == 1 ? "" : "s", j->nbaked_before, br.text_used,
            br.table_used, br.data_used);
    bake_say_events(j->msg, j->probes);
    return 0;
}

void bake_say_events(FILE *msg, const struct probe_list *probes)
{
    if (probes->ndefs)
        fprintf(msg, "; %zu event definition%s stored", probes->ndefs, probes->ndefs == 1 ? "" : "s");
    fputc('\n', msg);
}

int bake_added_pool(const struct image *img, const struct probe_list *probes, const char *out_path,
                    const struct added_rt *rt, bool shared, bool compact, struct bake_result *res, size_t *grown,
                    char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    uint64_t text = pool_add_text_addr(img, err, errlen);
    if (!text)
        return -1;
    /* planned at the real text address; table and slots placed roughly
     * (only their reach matters, and the emit stage checks it for real) */
    struct section t = { .name = KPRW_SEC_TEXT, .addr = text }, tb = { .name = KPRW_SEC_TABLE, .addr = text + 0x1000000 },
                   d = { .name = KPRW_SEC_DATA, .addr = text + 0x2000000 },
                   sl = { .name = KPRW_SEC_SLOT, .addr = text + 0x2000000, .size = KPRW_SLOTS_SIZE };
    struct pool_sections where = { .text = &t, .table = &tb, .data = &d, .slot = &sl, .added = true,
                                   .shared_detours = shared, .compact_entries = compact };
    /* the names left in .dynstr: the same ones now and for real */
    pool_dynstr(img, NULL, &where);
    where.dynstr_vaddr = where.dynstr ? text : 0;
    struct bake_plan plan;
    if (bake_plan_make(img, &where, probes, &plan, err, errlen) < 0)
        return -1;
    struct pool_sizes sz = { plan.text_size, plan.table_size, plan.data_size, NULL, 0, 0, rt->sigaction, { 0, 0 }, 0 };
    if (rt->blob) {   /* the static runtime's area after the states, and its report points */
        size_t nexit = 0;
        for (size_t i = 0; i < probes->n && nexit < sizeof sz.rt_exits / sizeof sz.rt_exits[0]; i++)
            if (probes->v[i].exit_guard && !probes->v[i].is_return)
                sz.rt_exits[nexit++] = probes->v[i].addr;
        sz.rt = rt->blob;
        sz.rt_hook_ok = rt->hook_ok;
        sz.rt_size = rt->blob_size;
        sz.rt_area_off = (plan.data_size + 63) & ~(size_t)63;
        sz.data = sz.rt_area_off + kprs_area_layout((uint32_t)plan.nentries).size;
    }
    uint8_t *buf;
    size_t size;
    struct image grown_img;
    struct pool_sections ps;
    int rc = -1;
    if (pool_add(img, &sz, rt->blob ? NULL : rt->library, &buf, &size, err, errlen) < 0)
        goto out;
    if (image_open_mem(&grown_img, img->path, buf, size, img->mode, err, errlen) < 0)
        goto out;
    grown_img.hooks = img->hooks;
    rc = pool_find(&grown_img, &ps, err, errlen);
    if (rc == 0) {
        ps.added = true;
        ps.shared_detours = shared;
        ps.compact_entries = compact;
        pool_dynstr(img, &grown_img, &ps);
        rc = write_planned(&grown_img, &ps, probes, &plan, out_path, res, err, errlen);
    }
    *grown = size - img->map_size;
    image_close(&grown_img);
out:
    bake_plan_free(&plan);
    return rc < 0 ? -1 : 0;
}
