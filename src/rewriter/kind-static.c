/*
 * A static executable (glibc -static, -static-pie, musl -static): no
 * dynamic loader runs, so no runtime library can be loaded into it. The
 * bake adds the pool as for any prebuilt image (addpool.c) and, after the
 * detours, the static runtime (src/runtime/static): a freestanding blob
 * entered before the program's own entry point, which counts the probes'
 * hits (return probes' too, at the entry, as the user runtime counts
 * them without handlers), runs the int3 probes and prints
 * KPREWRITE_REPORT at _exit, and puts its int3s back when the program
 * takes SIGTRAP (at __libc_sigaction); kprewrite ctl steers it from outside
 * (ctl-static.c). It records entry and return events (definitions baked
 * in the table, src/runtime/static/events.c; a return event's calls are
 * hooked, hook.c), and has no handlers. A hooked call's return address is
 * the pool's, which the unwinder cannot read frames through: the
 * unwinder's entry points the image names are guard points where the
 * runtime gives the thread's hooked calls their return addresses back; a
 * stripped image names none that could be found, so return events are
 * refused there, and in a Go program (its stacks move). --runtime, which
 * names a runtime library, does not apply (nothing would load one).
 */
#include "kinds.h"
#include "kind-user.h"
#include "addpool.h"
#include "gopclntab.h"
#include "bake.h"
#include "spec.h"
#include "symbols.h"
#include "../arch/isa.h"
#include "../runtime/static/blob.h"

#include <stdio.h>
#include <string.h>

static const uint8_t *static_blob;
static size_t static_blob_size;

void kind_static_runtime(const uint8_t *blob, size_t size)
{
    static_blob = blob;
    static_blob_size = size;
}

typedef bool (*code_test)(const uint8_t *code, size_t len, uint64_t at);

/* A stripped program's _exit or sigaction, known by its code (is: the
 * ISA's test): the one function that is; 0 when none is, or several are
 * (a wrong _exit would print the report before the program ends, a wrong
 * sigaction be read with another function's arguments). */
static uint64_t by_code(const struct image *img, const struct symbols *sy, code_test is)
{
    uint64_t found = 0;
    for (size_t i = 0; i < sy->nfuncs; i++) {
        const struct func *f = &sy->funcs[i];
        size_t avail;
        const uint8_t *code = image_read(img, f->start, &avail);
        if (!code || f->entry_unproven)
            continue;
        size_t len = f->end - f->start < avail ? f->end - f->start : avail;
        if (is && is(code, len, f->start)) {
            if (found)
                return 0;
            found = f->start;
        }
    }
    return found;
}

/* libc's sigaction, which sigaction(), signal() and the like go through
 * (glibc's and musl's __libc_sigaction: the signal in the first argument,
 * the action in the second): by name, or by its code in a stripped
 * program; 0: none found. */
static uint64_t sigaction_fn(const struct image *img, const struct symbols *sy)
{
    const struct name_ent *ne = symbols_lookup(sy, "__libc_sigaction");
    if (ne)
        return ne->addr;
    return by_code(img, sy, img->isa->sets_signal_action);
}

/* The unwinder's entry points (libgcc's, which glibc's static libc and
 * C++ programs link), guarded where a return may be hooked: the runtime
 * knows them by these names (src/runtime/static/init.c, guard.c) */
static const char *const unwinders[KPRS_UNWINDERS] = { "_Unwind_RaiseException", "_Unwind_Resume_or_Rethrow",
                                                       "_Unwind_ForcedUnwind", "_Unwind_Backtrace" };

static bool stripped(const struct image *img)
{
    return !image_section_by_name(img, ".symtab");
}

static int add_guard(struct spec_list *specs, const char *text, char *err, size_t errlen)
{
    if (spec_add(specs, text, "the static runtime's report", err, errlen) < 0)
        return -1;
    specs->v[specs->n - 1].exit_guard = true;
    return 0;
}

/* The report is printed where the program ends: _exit (glibc's exit and
 * _exit, musl's _exit) and _Exit (musl's exit, an alias in glibc); in a
 * stripped program, the function its code shows is _exit. Without one
 * the program reports nothing (the runtime says so at start-up). A
 * program that makes the exit_group system call itself, elsewhere,
 * prints no report either. */
static int static_guards(const struct image *img, const struct symbols *sy, struct spec_list *specs, bool check,
                         char *err, size_t errlen)
{
    if (check)   /* kprewrite --check lists what was asked, these not among it */
        return 0;
    if (sy->ngo) {   /* Go ends a process by runtime.exit, its own exit_group(2), and has no libc */
        const struct name_ent *ne = symbols_lookup(sy, "runtime.exit");
        return ne && ne->func != SIZE_MAX && sy->funcs[ne->func].go_name ? add_guard(specs, "runtime.exit", err, errlen)
                                                                          : 0;
    }
    static const char *const guards[] = { "_exit", "_Exit" };
    bool named = false;
    for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++)
        if (symbols_lookup(sy, guards[i])) {
            named = true;
            if (add_guard(specs, guards[i], err, errlen) < 0)
                return -1;
        }
    bool returns = false;
    for (size_t i = 0; i < specs->n; i++)
        returns |= specs->v[i].is_return;
    for (size_t i = 0; returns && !stripped(img) && i < KPRS_UNWINDERS; i++)
        if (symbols_lookup(sy, unwinders[i]) &&
            spec_add(specs, unwinders[i], "the static runtime's unwinder guard", err, errlen) < 0)
            return -1;
    char text[32];
    uint64_t sig = sigaction_fn(img, sy);   /* its SIGTRAP guard (src/runtime/static/guard.c) */
    snprintf(text, sizeof text, "0x%llx", (unsigned long long)sig);
    if (sig && spec_add(specs, text, "the static runtime's SIGTRAP guard", err, errlen) < 0)
        return -1;
    uint64_t at = named ? 0 : by_code(img, sy, img->isa->exits_process);
    snprintf(text, sizeof text, "0x%llx", (unsigned long long)at);
    return at ? add_guard(specs, text, err, errlen) : 0;
}

static int static_bake(const struct bake_job *j, char *err, size_t errlen)
{
    if (!static_blob) {
        snprintf(err, errlen, "%s: a static executable: this build of kprewrite has no static runtime", j->img->path);
        return -1;
    }
    struct bake_result br;
    size_t grown = 0;
    struct added_rt rt = { NULL, static_blob, static_blob_size, j->sy->ngo ? 0 : sigaction_fn(j->img, j->sy), 0 };
    if (!j->sy->ngo && !stripped(j->img)) {   /* 1 + the unwinder's entry points named: each must be guarded */
        rt.hook_ok = 1;
        for (size_t i = 0; i < KPRS_UNWINDERS; i++)
            rt.hook_ok += symbols_lookup(j->sy, unwinders[i]) != NULL;
    }
    if (bake_added_pool(j->img, j->probes, j->dest, &rt, j->pool->shared_detours, j->compact, &br, &grown, err,
                        errlen) < 0)
        return -1;
    fprintf(j->msg, "kprewrite: wrote %s: %zu probe%s baked into a pool added to the image (+%zu bytes; the "
            "static runtime)\n", j->dest, br.baked, br.baked == 1 ? "" : "s", grown);
    return 0;
}

#define STATIC_HOOKS \
    USER_RULES, \
    .events = true, \
    .adds_pool = true, \
    .guards = static_guards, \
    .bake = static_bake

const struct kind_hooks kind_static = { .name = "static", STATIC_HOOKS };

/* Go's runtime installs its own handler for every signal, SIGTRAP's too,
 * with its own system call: no int3 (go_no_traps); its exit guard is
 * runtime.exit, and it has no libc sigaction to guard. */
static const struct kind_hooks kind_static_go = {
    .name = "static", STATIC_HOOKS, .no_traps = true,
    .return_events_refused = "a return event in a static Go executable: goroutine stacks move, so no call is "
                             "hooked there (an entry event, p:, works; the return probe alone counts calls)",
};

/* Stripped: its unwinder, if it has one (every glibc static program does),
 * cannot be found to guard, and an unwind through a hooked call would
 * stop there. */
static const struct kind_hooks kind_static_stripped = {
    .name = "static", STATIC_HOOKS,
    .return_events_refused = "a return event in a stripped static executable: kprewrite cannot find its unwinder "
                             "(_Unwind_RaiseException, ...) to guard the calls it would hook (probe the unstripped "
                             "program; an entry event, p:, works; the return probe alone counts calls)",
};

const struct kind_hooks *kind_static_for(const struct image *img, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return gopclntab_go_image(img) ? &kind_static_go : stripped(img) ? &kind_static_stripped : &kind_static;
}
