/* One kprewrite run: open, resolve, analyze, report, and bake unless --check. */
#include "config.h"
#include "kprewrite/abi.h"

#include <stdio.h>
#include <string.h>

#include "kprewrite/abi.h"

#ifndef KPRW_RUNTIME_DEFAULT   /* set by the build to $(libdir)/libkprewrite-rt.so.0 */
#define KPRW_RUNTIME_DEFAULT KPRW_RUNTIME_SONAME
#endif

#include "addpool.h"
#include "analyze.h"
#include "bake.h"
#include "image.h"
#include "kmodule.h"
#include "ktables.h"
#include "report.h"
#include "resolve.h"
#include "run.h"
#include "symbols.h"

/* --remove: drop the probes at the points the specs name; each must be baked. */
static int remove_probes(const struct image *img, const struct symbols *sy, const struct spec_list *removes,
                         struct probe_list *probes, char *err, size_t errlen)
{
    struct probe_list gone = { 0 };
    if (probes_resolve(removes, img, sy, &gone, err, errlen) < 0) {
        probe_list_free(&gone);   /* what was resolved before the error */
        return -1;
    }
    for (size_t g = 0; g < gone.n; g++) {
        size_t k = 0;
        bool found = false;
        for (size_t i = 0; i < probes->n; i++) {
            struct probe *p = &probes->v[i];
            if (p->addr == gone.v[g].addr && p->is_return == gone.v[g].is_return &&
                p->spec->baked) {
                found = true;
                continue;
            }
            probes->v[k++] = *p;
        }
        probes->n = k;
        if (!found) {
            snprintf(err, errlen, "%s: --remove %s: no probe is baked there", img->path, gone.v[g].spec->text);
            probe_list_free(&gone);
            return -1;
        }
    }
    probe_list_free(&gone);
    return 0;
}

int run_image(struct run_opts *o)
{
    char err[1024];
    int status = EXIT_ERROR;
    struct image img;
    struct symbols sy;
    struct kfacts kf;
    struct probe_list probes = { 0 };
    struct analysis_stats st;
    struct pool_sections pool = { 0 };   /* a module has none until kmodule_bake */
    size_t nbaked_before = 0;
    bool add_pool = false;   /* a prebuilt image: kprewrite adds the pool */
    struct kmodule *km = NULL;   /* a kernel module: img is its preview */
    if (o->kernel && kmodule_is_relocatable(o->image)
            ? kmodule_open(&km, &img, o->image, err, sizeof err) < 0
            : image_open(&img, o->image, o->kernel, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto out;
    }
    if (km && o->removes && o->removes->n) {
        fprintf(o->msg, "kprewrite: %s: --remove: a module's probes are removed by baking the module as built\n",
                o->image);
        goto close_image;
    }
    if (!o->check && !km) {
        /* The probes baked earlier come first; their original bytes are put
         * back in our private copy so the analysis sees the original code. */
        struct spec_list all = { 0 };
        int old = 0, found = pool_find(&img, &pool, err, sizeof err);
        if (found == -2 && img.kind == IMG_VMLINUX) {
            found = -1;   /* pool_find said what to do */
        } else if (found == -2) {
            add_pool = true;
            if (!pool_add_text_addr(&img, err, sizeof err))
                found = -1;   /* it cannot take one: say why now */
        }
        if (found == -1 || (found == 0 && (old = pool_existing(&img, &pool, &all, err, sizeof err)) < 0)) {
            fprintf(o->msg, "kprewrite: %s\n", err);
            spec_list_free(&all);
            goto close_image;
        }
        nbaked_before = (size_t)old;
        if (spec_list_move(&all, o->specs) < 0) {
            fprintf(o->msg, "kprewrite: out of memory\n");
            spec_list_free(&all);
            goto close_image;
        }
        spec_list_free(o->specs);
        *o->specs = all;
    }
    if (symbols_load(&sy, &img, o->system_map, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto close_image;
    }
    if (!o->check && img.kind == IMG_VMLINUX && !km)
        symbols_addr_of(&sy, KPRW_KERNEL_DISPATCH, &pool.kernel_dispatch);   /* bake() says when missing */
    if (kfacts_load(&kf, &img, &sy, o->relocs, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto free_symbols;
    }
    if (probes_resolve(o->specs, &img, &sy, &probes, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto free_all;
    }
    if (o->removes && o->removes->n && remove_probes(&img, &sy, o->removes, &probes, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto free_all;
    }
    if (analyze_probes(&img, &sy, &kf, o->strict_indirect, &probes, &st, err, sizeof err) < 0) {
        fprintf(o->msg, "kprewrite: %s\n", err);
        goto free_all;
    }
    if (o->disasm)
        report_disasm(o->out, &img, &sy, &probes);
    else if (o->json)
        report_json(o->out, &img, &sy, &probes, &st);
    else
        report_text(o->out, &probes);
    if (o->summary)
        report_summary(o->json ? o->msg : o->out, &probes, &st);
    if (!o->check) {
        struct bake_result br;
        report_refusals(o->msg, o->image, &probes);
        const char *dest = o->output ? o->output : o->image;
        size_t grown = 0;
        /* by default compact at call entries; elsewhere shared in a pool
         * kprewrite adds (now or in an earlier run), inline in a linked one */
        bool compact = o->detours == DETOURS_DEFAULT || o->detours == DETOURS_COMPACT;
        pool.shared_detours = o->detours == DETOURS_SHARED || (compact && (add_pool || pool.added));
        pool.compact_entries = compact;
        if (!add_pool && !km)
            pool_dynstr(&img, &img, &pool);
        if (km ? kmodule_bake(km, &img, &probes, dest, &br, err, sizeof err) < 0
            : add_pool ? bake_added_pool(&img, &probes, dest, o->runtime ? o->runtime : KPRW_RUNTIME_DEFAULT,
                                       pool.shared_detours, compact, &br, &grown, err, sizeof err) < 0
                     : bake(&img, &pool, &probes, dest, &br, err, sizeof err) < 0) {
            fprintf(o->msg, "kprewrite: %s\n", err);
            goto free_all;
        }
        if (km)
            fprintf(o->msg, "kprewrite: wrote %s: %zu probe%s baked into the module, pool: text %zu, table %zu, "
                    "data %zu bytes\n", dest, br.baked, br.baked == 1 ? "" : "s", br.text_used, br.table_used,
                    br.data_used);
        else if (add_pool)
            fprintf(o->msg, "kprewrite: wrote %s: %zu probe%s baked into a pool added to the image (+%zu bytes; "
                    "loads %s)\n", dest, br.baked, br.baked == 1 ? "" : "s", grown,
                    o->runtime ? o->runtime : KPRW_RUNTIME_DEFAULT);
        else
            fprintf(o->msg, "kprewrite: wrote %s: %zu probe%s baked (%zu before), pool use: text %zu, table %zu, "
                    "data %zu bytes\n", dest, br.baked, br.baked == 1 ? "" : "s", nbaked_before, br.text_used,
                    br.table_used, br.data_used);
    }
    if (fflush(o->out) != 0 || ferror(o->out)) {
        fprintf(o->msg, "kprewrite: error writing the report\n");
        goto free_all;
    }
    status = (int)report_exit_status(&probes);
free_all:
    probe_list_free(&probes);
    kfacts_free(&kf);
free_symbols:
    symbols_free(&sy);
close_image:
    image_close(&img);
    kmodule_free(km);
out:
    return status;
}
