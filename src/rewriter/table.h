/* The pool an image holds and its probe table: finding the pool, reading
 * back what an earlier run baked, writing the table a plan describes. */
#ifndef KPREWRITE_TABLE_H
#define KPREWRITE_TABLE_H
#include "image.h"
#include "kprewrite/abi.h"
#include "probe.h"

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

/* The pool reserved at link time (or added by an earlier run), where the
 * image's kind says (img->hooks->pool_areas); -2 when the image has none,
 * -1 with a message when it is malformed. */
int pool_find(const struct image *img, struct pool_sections *ps, char *err, size_t errlen);
/* A user ELF's pool areas (kind.h pool_areas): its sections .kprewrite.*. */
int pool_user_areas(const struct image *img, struct pool_sections *ps, char *err, size_t errlen);
/* The message for pool sections that are not what they must be; -1. */
int pool_malformed(const struct image *img, char *err, size_t errlen);

/* Probes an earlier run baked: puts their original bytes back in the
 * image's private copy (so analysis sees the original code) and appends
 * one 0xADDR spec each to specs. Returns how many, or -1. */
int pool_existing(struct image *img, const struct pool_sections *ps, struct spec_list *specs,
                  char *err, size_t errlen);

/* Where names may stay in a user image's dynamic string table (ps->dynstr,
 * dynstr_size, dynstr_vaddr): the input's .dynstr bytes, which the names of
 * its symbols point into, and the output's DT_STRTAB (a pool kprewrite adds
 * holds a copy, offsets kept; out NULL: not known yet, dynstr_vaddr 0). */
void pool_dynstr(const struct image *img, const struct image *out, struct pool_sections *ps);

struct bake_plan;
/* Writes the probe table the plan describes into out (a copy of img's file
 * bytes, whose pool is ps, at its final addresses): header, entries,
 * fixups and strings; the states are zeroed. Returns 0, or -1 with err
 * (something out of the table's 32-bit reach). */
int table_write(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                const struct bake_plan *plan, uint8_t *out, char *err, size_t errlen);
#endif
