/*
 * An image kind: the rules and hooks the generic stages (symbols, resolve,
 * analysis, plan, emit, table, bake, run) follow for one kind of image,
 * instead of asking what the image is. Each kind is one struct kind_hooks
 * (kinds.h names them: a user ELF linked with the runtime, a prebuilt
 * one, a vmlinux, a kernel module); an image carries its own as
 * img->hooks. Kernel-only code (ktables.c, kaslr.c, kmodule.c)
 * is reached only through the kernel kinds' hooks.
 */
#ifndef KPREWRITE_KIND_H
#define KPREWRITE_KIND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct image;
struct spec_list;
struct symbols;
struct kfacts;
struct probe;
struct probe_list;
struct pool_sections;
struct x86_copy_map;

/* What the bake hook of a kind is given (run.c). */
struct bake_job {
    struct image *img;
    const struct symbols *sy;
    const struct probe_list *probes;
    struct pool_sections *pool;    /* found (or not) by pool_find; the kind completes it */
    const char *dest;              /* the output */
    const char *runtime;           /* --runtime (NULL: the installed one) */
    bool compact;                  /* compact detours at call entries */
    size_t nbaked_before;          /* probes read back from the pool */
    void *state;                   /* the kind's own (kind_open) */
    FILE *msg;                     /* the "wrote" line */
};

struct kind_hooks {
    const char *name;

    /* --- the rules the generic stages follow --- */
    /* symbols.c: an untyped symbol with a size in code is a function (a
     * kernel's assembly, SYM_CODE_START) */
    bool untyped_functions;
    /* symbols.c: code no symbol or FDE covers is searched for functions
     * (funcfind.c: fn@ADDR); a kernel's symbols name all of its code, and
     * its runtime names no function by address */
    bool finds_functions;
    /* analyze.c: a call may stay in a DCR, a real call in the detour
     * (NOTE_CALL_KEPT); else the probe is int3, call-in-dcr (the kernel's
     * own rule) */
    bool call_in_dcr;
    /* analyze.c: a branch or jump-table entry into a DCR may be re-pointed
     * to the instruction's copy (NOTE_RETARGET); else the probe is int3 */
    bool retargets;
    /* analyze.c, place.c: a site shorter than the jump may hold a short
     * jump to a trampoline in padding (NOTE_JUMP8), and windows of
     * instructions may be evicted for trampolines */
    bool short_jumps, evictions;
    /* indirect.c: an indirect jump may be proven to land where the image
     * materializes an address (taken.c): the image computes no code
     * address this does not see (a kernel does: its tables, alternatives) */
    bool taken_proofs;
    /* plan.c, emit.c, table.c: the kernel runtime's contract: detours call
     * its dispatcher directly (no slots, no return trampoline: the runtime
     * takes returns over), save every register in pt_regs, and int3 sites
     * stay disarmed until the runtime arms them */
    bool kernel_contract;
    /* run.c: the bake adds a pool (detours are shared by default there) */
    bool adds_pool;
    /* run.c: the probes an earlier run baked are read back from the pool
     * (and --remove drops some of them); else remove_refused says why not */
    bool reads_back;
    const char *remove_refused;
    /* run.c: event definitions may be stored with the probes (defs.c), for
     * the user runtime to define at start-up; a kernel's runtime has no
     * events (yet): a definition is refused */
    bool events;
    /* run.c: why a definition is refused when events is false (NULL: the
     * kernel's words, "user-space only for now") */
    const char *events_refused;
    /* run.c: why a return event (r:, SYM%return) is refused where events
     * is true (NULL: return events are taken) */
    const char *return_events_refused;
    /* run.c: no int3 can be baked: a probe the analysis leaves int3 is
     * refused (go-sigtrap: a static Go executable, whose runtime takes
     * SIGTRAP with a system call of its own; golang.c go_no_traps) */
    bool no_traps;

    /* --- the hooks --- */
    /* run.c: probes the kind adds to what was asked (its runtime's guard
     * points; check: kprewrite --check); 0, or -1 with err. NULL: none */
    int (*guards)(const struct image *img, const struct symbols *sy, struct spec_list *specs, bool check, char *err,
                  size_t errlen);
    /* resolve.c: is name the symbol of a function's padding, no entry a
     * glob names (a kernel's __pfx_, __cfi_)? NULL: there is none */
    bool (*padding_symbol)(const struct image *img, const char *name);
    /* run.c: the facts the image imposes on probes (facts.h): its tables,
     * blacklist and code relocations (relocs: --relocs, or NULL) */
    int (*load_facts)(struct kfacts *kf, const struct image *img, const struct symbols *sy, const char *relocs,
                      char *err, size_t errlen);
    /* table.c pool_find: where the pool's text, table, data and slot are
     * in img: 0; -2 when it has none, -1 when it is malformed (err) */
    int (*pool_areas)(const struct image *img, struct pool_sections *ps, char *err, size_t errlen);
    /* run.c: what an image of this kind without a pool is (a prebuilt
     * one), or NULL with err when it cannot be baked */
    const struct kind_hooks *(*without_pool)(const struct image *img, char *err, size_t errlen);
    /* bake.c: the message for a pool too small for n probes whose text,
     * table and state need these sizes (NULL: a linked user ELF's) */
    void (*pool_too_small)(const struct image *img, const struct pool_sections *ps, size_t n, size_t text,
                           size_t table, size_t data, char *err, size_t errlen);
    /* emit.c: relocations applied at load that move with the instruction
     * into its copy (NOTE_RELOC_MOVED): read once (*relocs, freed by
     * relocs_close), then each probe's re-pointed to its copy, code_len
     * bytes at code_at whose DCR copy map is map, in out */
    int (*relocs_open)(const struct image *img, void **relocs, char *err, size_t errlen);
    int (*relocs_move)(const void *relocs, const struct image *img, const struct probe *p, const uint8_t *code,
                       size_t code_len, uint64_t code_at, const struct x86_copy_map *map, uint8_t *out, char *err,
                       size_t errlen);
    void (*relocs_close)(void *relocs);
    /* run.c: bakes the analyzed probes into job->dest and says so on
     * job->msg. 0, or -1 with err */
    int (*bake)(const struct bake_job *job, char *err, size_t errlen);
    /* run.c: frees the kind's state (kind_open) */
    void (*close)(void *state);
};
#endif
