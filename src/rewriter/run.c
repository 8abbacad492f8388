/*
 * One kprewrite run: open the image as its kind, take the probes an
 * earlier run baked, resolve, analyze, report, and bake unless --check.
 * What differs between kinds of images is asked of the image's kind
 * (img.hooks, kind.h).
 */
#include "golang.h"
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "../arch/isa.h"
#include "analyze.h"
#include "defs.h"
#include "image.h"
#include "kinds.h"
#include "report.h"
#include "resolve.h"
#include "run.h"
#include "symbols.h"
#include "table.h"

/* What one run holds. */
struct run {
    struct run_opts *o;
    struct image img;
    void *state;                 /* the kind's (kind_open) */
    struct symbols sy;
    struct kfacts kf;
    struct probe_list probes;
    struct analysis_stats st;
    struct pool_sections pool;   /* a module has none until its bake */
    size_t nbaked_before;
    char err[1024];
};

/* The error of a stage, as one line; -1. */
static int say(const struct run *r)
{
    fprintf(r->o->msg, "kprewrite: %s\n", r->err);
    return -1;
}

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

/* The pool of an image to bake into, and the probes an earlier run baked
 * there, which come first; their original bytes are put back in our
 * private copy so the analysis sees the original code. An image without a
 * pool becomes what its kind says (a prebuilt user ELF), or is refused. */
static int take_baked_probes(struct run *r)
{
    struct run_opts *o = r->o;
    struct image *img = &r->img;
    struct spec_list all = { 0 };
    int old = 0, found = pool_find(img, &r->pool, r->err, sizeof r->err);
    if (found == -2) {
        const struct kind_hooks *k = img->hooks->without_pool ? img->hooks->without_pool(img, r->err, sizeof r->err)
                                                              : NULL;   /* pool_find said what to do */
        if (!k)
            found = -1;
        else
            img->hooks = k;
    }
    if (found == -1 || (found == 0 && (old = pool_existing(img, &r->pool, &all, r->err, sizeof r->err)) < 0)) {
        spec_list_free(&all);
        return say(r);
    }
    r->nbaked_before = (size_t)old;
    if (spec_list_move(&all, o->specs) < 0) {
        fprintf(o->msg, "kprewrite: out of memory\n");
        spec_list_free(&all);
        return -1;
    }
    spec_list_free(o->specs);
    *o->specs = all;
    return 0;
}

/* An event definition for an image whose runtime has no events (or no
 * return events): refused (the first, in one line); -1. */
static int events_refused(const struct run *r)
{
    for (size_t i = 0; i < r->o->specs->n; i++) {
        const struct probe_spec *sp = &r->o->specs->v[i];
        /* (sp->is_return: SYM%return, or r[N][:EVENT], as the core's parser read the definition: spec.c) */
        if (!sp->def || (r->img.hooks->events && !(r->img.hooks->return_events_refused && sp->is_return)))
            continue;
        char why[1400];
        const char *refused = r->img.hooks->events ? r->img.hooks->return_events_refused : r->img.hooks->events_refused;
        spec_error(sp, 1, refused ? refused : "fetch-arg events are user-space only for now (bake the point alone: "
                   "--probe SPEC)", why, sizeof why);
        fprintf(r->o->msg, "kprewrite: %s: %s\n", r->o->image, why);
        return -1;
    }
    return 0;
}

/* What the run does before the analysis, as the image's kind takes it. */
static int prepare(struct run *r)
{
    const struct kind_hooks *k = r->img.hooks;
    if (!k->reads_back && r->o->removes && r->o->removes->n) {
        fprintf(r->o->msg, "kprewrite: %s: --remove: %s\n", r->o->image, k->remove_refused);
        return -1;
    }
    if (!r->o->check && k->reads_back && take_baked_probes(r) < 0)
        return -1;
    if (r->o->check && k->without_pool) {   /* the verdicts a bake would give: the kind it would bake as */
        struct pool_sections ps;
        char err[sizeof r->err];
        if (pool_find(&r->img, &ps, err, sizeof err) == -2) {
            const struct kind_hooks *as = k->without_pool(&r->img, err, sizeof err);
            if (as)   /* (one a bake refuses is checked as it is) */
                r->img.hooks = as;
        }
    }
    /* (the kind as the pool made it: a static executable's has no return events) */
    return events_refused(r);
}

/* The report of the verdicts, as the options ask. */
static void report(struct run *r)
{
    struct run_opts *o = r->o;
    if (o->disasm)
        report_disasm(o->out, &r->img, &r->sy, &r->probes);
    else if (o->json)
        report_json(o->out, &r->img, &r->sy, &r->probes, &r->st);
    else
        report_text(o->out, &r->probes);
    if (o->summary)
        report_summary(o->json ? o->msg : o->out, &r->sy, &r->probes, &r->st);
}

/* The analyzed probes baked by the image's kind, into -o or in place. */
static int bake_probes(struct run *r)
{
    struct run_opts *o = r->o;
    const struct kind_hooks *k = r->img.hooks;
    report_refusals(o->msg, o->image, &r->probes);
    /* by default compact at call entries; elsewhere shared in a pool
     * kprewrite adds (now or in an earlier run), inline in a linked one */
    bool compact = o->detours == DETOURS_DEFAULT || o->detours == DETOURS_COMPACT;
    r->pool.shared_detours = o->detours == DETOURS_SHARED || (compact && (k->adds_pool || r->pool.added));
    r->pool.compact_entries = compact;
    struct bake_job job = { &r->img, &r->sy, &r->probes, &r->pool, o->output ? o->output : o->image, o->runtime,
                            compact, r->nbaked_before, r->state, o->msg };
    return k->bake(&job, r->err, sizeof r->err) < 0 ? say(r) : 0;
}

/* The probes resolved, analyzed, reported and baked; the exit status. */
static int probe(struct run *r)
{
    struct run_opts *o = r->o;
    const struct kind_hooks *k = r->img.hooks;
    if ((k->guards && k->guards(&r->img, &r->sy, o->specs, o->check, r->err, sizeof r->err) < 0) ||
        probes_resolve(o->specs, &r->img, &r->sy, &r->probes, r->err, sizeof r->err) < 0 ||
        (o->removes && o->removes->n &&
         remove_probes(&r->img, &r->sy, o->removes, &r->probes, r->err, sizeof r->err) < 0) ||
        analyze_probes(&r->img, &r->sy, &r->kf, o->strict_indirect, &r->probes, &r->st, r->err, sizeof r->err) < 0) {
        say(r);
        return EXIT_ERROR;
    }
    go_detours(&r->probes, &r->sy, o->detours == DETOURS_DEFAULT || o->detours == DETOURS_COMPACT);
    if (k->no_traps)
        go_no_traps(&r->probes);
    evictions_prune(&r->probes, &r->st);
    report(r);
    if (!o->check && r->img.hooks->events &&
        defs_collect(o->specs, &r->sy, &r->probes, r->img.isa->fetch, o->image, o->msg, r->err, sizeof r->err) < 0) {
        say(r);
        return EXIT_ERROR;
    }
    if (!o->check && bake_probes(r) < 0)
        return EXIT_ERROR;
    if (fflush(o->out) != 0 || ferror(o->out)) {
        fprintf(o->msg, "kprewrite: error writing the report\n");
        return EXIT_ERROR;
    }
    return (int)report_exit_status(&r->probes);
}

/* The image's symbols and the facts its kind imposes, then the probes. */
static int analyze(struct run *r)
{
    int status = EXIT_ERROR;
    if (symbols_load(&r->sy, &r->img, r->o->system_map, r->err, sizeof r->err) < 0) {
        say(r);
        return status;
    }
    if (r->img.hooks->load_facts(&r->kf, &r->img, &r->sy, r->o->relocs, r->err, sizeof r->err) < 0) {
        say(r);
    } else {
        status = probe(r);
        probe_list_free(&r->probes);
        kfacts_free(&r->kf);
    }
    symbols_free(&r->sy);
    return status;
}

int run_image(struct run_opts *o)
{
    struct run r = { .o = o };
    int status = EXIT_ERROR;
    if (kind_open(&r.img, &r.state, o->image, o->kernel, r.err, sizeof r.err) < 0) {
        say(&r);
        return status;
    }
    if (prepare(&r) == 0)
        status = analyze(&r);
    kind_close(&r.img, r.state);
    return status;
}
