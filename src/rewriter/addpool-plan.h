/* Adding a pool to a prebuilt image, the planning half (addpool.c writes):
 * what the image holds where, and what can move out of the way of the
 * program header table and of .dynstr growing in place. */
#ifndef KPREWRITE_ADDPOOL_PLAN_H
#define KPREWRITE_ADDPOOL_PLAN_H
#include "image.h"

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGE 0x1000u
#define NEW_SECTIONS 5   /* .kprewrite.text, .table, .data, .slot; .rt in a static executable */
#define BLOCK_ALIGN 64u   /* the moved sections keep their place modulo this (none needs more) */
/* plan_read refuses an image whose file size or any segment's end reaches
 * this (the x86-64 user address space, with 5-level paging): every
 * address, offset and size the layout adds up is then below it, and a sum
 * of fewer than 256 of them cannot wrap. */
#define PLAN_LIMIT (1ull << 56)

static inline uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }
static inline uint64_t end_of(uint64_t a, uint64_t n) { return a + n < a ? UINT64_MAX : a + n; }
static inline bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

struct plan {
    const Elf64_Ehdr *eh;
    const Elf64_Phdr *ph;
    size_t phnum, first_load, last_load, dyn_ph, interp_ph;
    uint64_t vend;
    const Elf64_Dyn *dyn;
    size_t ndyn;                  /* entries before DT_NULL */
    uint64_t strtab, strsz;
    const uint8_t *dynstr;        /* its file bytes */
    bool has_runtime;             /* a DT_NEEDED names libkprewrite-rt already */
    bool interp;                  /* PT_INTERP: an executable (a library has none) */
    size_t dynamic_sec, dynstr_sec;
    size_t dyn_cap;               /* entries PT_DYNAMIC has room for (spare DT_NULLs after ndyn) */
    bool has_table_tag;           /* a KPRW_DT_TABLE from a pool added before (cut out since) */
    bool static_exe;              /* no interpreter, not a library: gets the static runtime */
};

/* Sections that move into the pool to make room where they were: by
 * vaddr [bs, be) (bs == be: the room was free), from file offset fs, to
 * off in the r-x PT_LOAD. */
struct block {
    uint64_t bs, be, fs, off;
};

/* ROOM_GROW: where the grown table lies and what it grows over. */
struct grow {
    size_t l0;            /* the PT_LOAD holding the table */
    uint64_t l0_filesz;   /* its size, larger when the table reaches past its end */
    uint64_t r0, r1;      /* the room the table grows into, by vaddr */
    struct block blk;
};

/* One line naming the file: returns -1. */
int addpool_fail(char *err, size_t errlen, const char *path, const char *what);
/* The image's program headers, dynamic section and the sections kprewrite
 * re-points; -1 (err) when a pool cannot be added. */
int plan_read(const struct image *img, struct plan *p, char *err, size_t errlen);
/* A static executable (glibc -static, -static-pie, musl -static). */
bool addpool_is_static(const struct image *img);
/* Whether a dynamic tag's value is an address. */
bool addr_tag(int64_t tag);
/* ROOM_GROW for a table of nnew entries (false: something in the way). */
bool plan_grow(const struct image *img, const struct plan *p, size_t nnew, struct grow *g);
/* Room for len more bytes at the end of .dynstr, where it lies (g: what
 * the program header table grows over, or NULL); false: copy .dynstr. */
bool plan_strtab_room(const struct image *img, const struct plan *p, uint64_t len, const struct grow *g,
                      struct block *blk);
/* The moved block a vaddr lies in, or -1. */
int block_of(const struct block *blk, size_t n, uint64_t a);
#endif
