/* Baking probes into an image's pool and writing the image atomically. */
#ifndef KPREWRITE_BAKE_H
#define KPREWRITE_BAKE_H
#include "image.h"
#include "kprewrite/abi.h"
#include "probe.h"
#include "symbols.h"

struct pool_sections {
    const struct section *text, *table, *data, *slot;
    bool added;   /* added by kprewrite to a prebuilt image (KPRW_T_ADDED_POOL) */
    /* kprobes get shared detours (a head calling common code: small, one
     * call/ret more a hit) rather than inline ones; see detour.c */
    bool shared_detours;
    /* kprobes at call entries get compact detours (a 6-byte call of the
     * runtime's __kprewrite_enter: no save, no frame for a count-only
     * hit), when the pool has the fifth slot; see detour.c */
    bool compact_entries;
    /* the names kprobes are registered by may be the image's own: a name
     * in [dynstr, dynstr + dynstr_size) (the bytes of the input's
     * .dynstr) is stored as its offset there (KPRW_NAME_DYN), and the
     * table points at the output's DT_STRTAB, dynstr_vaddr (0: none) */
    const char *dynstr;
    size_t dynstr_size;
    uint64_t dynstr_vaddr;
    /* vmlinux: the kernel runtime's dispatcher (kprewrite_dispatch), called
     * directly by the detours; the image has no slot section */
    uint64_t kernel_dispatch;
    /* vmlinux: the pool's areas, found by their symbols (kprewrite_pool_text
     * ... _end) inside the kernel's own sections; text, table and data
     * point here */
    struct section kernel_area[3];
};

/* The kernel runtime's entry point every kernel detour calls. */
#define KPRW_KERNEL_DISPATCH KPRW_STR(KPRW_KDISPATCH)

/* The pool reserved at link time (or added by an earlier run); -2 when the
 * image has none, -1 with a message when it is malformed. */
int pool_find(const struct image *img, struct pool_sections *ps, char *err, size_t errlen);

/* Probes an earlier run baked: puts their original bytes back in the
 * image's private copy (so analysis sees the original code) and appends
 * one 0xADDR spec each to specs. Returns how many, or -1. */
int pool_existing(struct image *img, const struct pool_sections *ps, struct spec_list *specs,
                  char *err, size_t errlen);

struct bake_result {
    size_t baked;
    size_t text_used, table_used, data_used;
};

/* With out_path NULL, writes nothing and only measures: res gets the bytes
 * each pool section needs (text_used, table_used, data_used).
 * Otherwise writes every optimized probe (detour, site jump, table entry, state) into
 * a copy of the image and renames it over out_path. Probes that cannot be
 * baked are left out (the report says why). Returns 0, or -1 with err. */
int bake(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
         const char *out_path, struct bake_result *res, char *err, size_t errlen);

#endif
