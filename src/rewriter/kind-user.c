/*
 * The user ELF kinds (kind.h): a program or library linked with the
 * runtime, whose pool was reserved at link time (or added by an earlier
 * run), and a prebuilt one, to which the bake adds a pool of the sizes the
 * plan needs and the runtime as DT_NEEDED (addpool.c). Both follow the
 * same rules; their facts are their code relocations (TEXTREL) and the
 * code their runtime copies elsewhere at run time (moving.c).
 */
#include "config.h"
#include "kinds.h"
#include "addpool.h"
#include "addpool-plan.h"
#include "bake.h"
#include "facts.h"
#include "golang.h"
#include "kind-user.h"
#include "libc-guard.h"
#include "../runtime/static/blob.h"

#include <stdio.h>
#include <string.h>

#ifndef KPRW_RUNTIME_DEFAULT   /* set by the build to $(libdir)/libkprewrite-rt.so.0 */
#define KPRW_RUNTIME_DEFAULT KPRW_RUNTIME_SONAME
#endif

/* Code relocations and code that moves at run time: no table of a user
 * image is read (a program that happened to name a section __ex_table must
 * not be read as a kernel). */
int user_facts(struct kfacts *kf, const struct image *img, const struct symbols *sy, const char *relocs,
                      char *err, size_t errlen)
{
    static const struct reloc_rules rules = { NULL, false };
    struct facts_build c = { .img = img, .sy = sy };
    memset(kf, 0, sizeof *kf);
    if (relocs) {
        snprintf(err, errlen, "%s: --relocs is for a vmlinux (give --kernel)", img->path);
        return -1;
    }
    if (facts_read_relocs(&c, kf, &rules, err, errlen) < 0 || facts_read_moving(&c, err, errlen) < 0) {
        facts_build_free(&c);
        return -1;
    }
    return facts_build_finish(kf, &c, err, errlen);
}

/* Without a pool a user image is a prebuilt one: kprewrite adds the pool,
 * when the image can take one (else say why now). */
static const struct kind_hooks *user_without_pool(const struct image *img, char *err, size_t errlen)
{
    if (!pool_add_text_addr(img, err, errlen))
        return NULL;
    return addpool_is_static(img) ? kind_static_for(img, err, errlen) : &kind_prebuilt;
}

static int linked_bake(const struct bake_job *j, char *err, size_t errlen)
{
    /* a static executable's pool holds the static runtime, whose records
     * were sized to the probes baked then (kind-static.c) */
    if (image_section_by_name(j->img, KPRS_SEC_RT)) {
        snprintf(err, errlen, "%s: a static executable kprewrite probed before: probe the original again (its static "
                 "runtime's records are sized to the probes baked the first time)", j->img->path);
        return -1;
    }
    pool_dynstr(j->img, j->img, j->pool);
    return bake_into_pool(j, err, errlen);
}

static int prebuilt_bake(const struct bake_job *j, char *err, size_t errlen)
{
    struct bake_result br;
    size_t grown = 0;
    const char *runtime = j->runtime ? j->runtime : KPRW_RUNTIME_DEFAULT;
    struct added_rt rt = { runtime, NULL, 0, 0, 0 };
    if (bake_added_pool(j->img, j->probes, j->dest, &rt, j->pool->shared_detours, j->compact, &br, &grown,
                        err, errlen) < 0)
        return -1;
    fprintf(j->msg, "kprewrite: wrote %s: %zu probe%s baked into a pool added to the image (+%zu bytes; "
            "loads %s)", j->dest, br.baked, br.baked == 1 ? "" : "s", grown, runtime);
    bake_say_events(j->msg, j->probes);
    return 0;
}

/* The runtime library's guard points: a probed glibc's own signal, exit
 * and exec calls (libc-guard.c), a Go program's runtime.exit (golang.c). */
static int user_guards(const struct image *img, const struct symbols *sy, struct spec_list *specs, bool check,
                       char *err, size_t errlen)
{
    (void)check;   /* listed by --check too */
    return libc_guard_add(img, sy, specs, err, errlen) < 0 || go_guard_add(sy, specs, err, errlen) < 0 ? -1 : 0;
}

const struct kind_hooks kind_linked = {
    .name = "linked",
    USER_RULES,
    .events = true,
    .without_pool = user_without_pool,
    .guards = user_guards,
    .bake = linked_bake,
};

const struct kind_hooks kind_prebuilt = {
    .name = "prebuilt",
    USER_RULES,
    .events = true,
    .adds_pool = true,
    .guards = user_guards,
    .bake = prebuilt_bake,
};
