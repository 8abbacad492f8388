/* An ELF image opened read-only: sections, classification, reads by address. */
#ifndef KPREWRITE_IMAGE_H
#define KPREWRITE_IMAGE_H
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum image_kind { IMG_EXEC, IMG_PIE, IMG_DSO, IMG_VMLINUX };

struct isa;
struct kind_hooks;

/* Every allocated section and every segment of an opened image ends at or
 * below this address (image_open refuses others): an address in the image
 * plus a length under 64 KiB (an instruction, a DCR, a table entry) cannot
 * wrap. (The highest a kernel ever linked code, the vsyscall page at
 * 0xffffffffff600000, ends 10 MiB below it.) */
#define IMAGE_ADDR_END (UINT64_MAX - 0xffffu)

struct section {
    const char *name;
    uint64_t addr, size, offset, flags, entsize;
    uint32_t type, link, info;
    size_t index;
    const uint8_t *data;     /* file bytes; NULL for SHT_NOBITS */
};

struct image {
    const char *path;
    int fd;
    uint8_t *map;            /* the whole file, read-only */
    size_t map_size;
    bool map_malloced;       /* image_open_mem: map is ours to free() */
    unsigned mode;           /* the file's permission bits (for the output) */
    Elf *elf;
    GElf_Ehdr ehdr;
    enum image_kind kind;
    const struct isa *isa;   /* its instruction set (src/arch/isa.h), by e_machine */
    /* its kind's rules and hooks (kind.h), set by whoever opened it:
     * kind_open, kind_attach (kinds.h) */
    const struct kind_hooks *hooks;
    bool ibt;                /* GNU property: indirect branches land on markers (IBT) */
    bool interp;             /* a PT_INTERP: a dynamic loader runs it (libc.so.6 has one too) */
    struct section *secs;
    size_t nsecs;
    /* Allocated sections with file bytes, sorted by address, for reads. */
    struct section **by_addr;
    size_t nby_addr;
};

/* Open and validate path. force_kernel: treat an ET_EXEC as vmlinux.
 * On error returns -1 with a one-line message in err. */
int image_open(struct image *img, const char *path, bool force_kernel, char *err, size_t errlen);
/* The same from bytes in memory (taken over: freed by image_close, also on
 * error); label names it in messages, mode is the output's mode. */
int image_open_mem(struct image *img, const char *label, uint8_t *buf, size_t size, unsigned mode,
                   char *err, size_t errlen);
void image_close(struct image *img);

/* Bytes at vaddr within one allocated PROGBITS section; *avail = bytes left in it. */
const uint8_t *image_read(const struct image *img, uint64_t vaddr, size_t *avail);
/* The lowest address >= vaddr that image_read can read (UINT64_MAX: none):
 * a walk over addresses skips what no section's bytes hold at once, not a
 * byte at a time (a crafted section may claim 2^40 bytes it has not). */
uint64_t image_next_readable(const struct image *img, uint64_t vaddr);
/* Callback form for eh_read_fn / x86_read_fn. */
const uint8_t *image_read_cb(void *img, uint64_t vaddr, size_t *avail);

const struct section *image_section_by_name(const struct image *img, const char *name);
/* The allocated section containing vaddr (including NOBITS), or NULL. */
const struct section *image_section_at(const struct image *img, uint64_t vaddr);
bool image_is_exec_addr(const struct image *img, uint64_t vaddr);
/* Callback form for x86_is_code_fn. */
bool image_is_code_cb(void *img, uint64_t vaddr);
/* The file offset of the len bytes at vaddr, when they lie in one section
 * with file bytes. */
bool image_file_offset(const struct image *img, uint64_t vaddr, size_t len, size_t *off);
/* The image's relocation sections (SHT_RELA of Elf64_Rela entries, with
 * file bytes), one a call: the first from section *i on, *i moved past it;
 * NULL after the last. Their entries: rela_count and rela_get. */
const struct section *image_next_rela(const struct image *img, size_t *i);
static inline size_t rela_count(const struct section *rela) { return rela->size / sizeof(Elf64_Rela); }
static inline Elf64_Rela rela_get(const struct section *rela, size_t k)
{
    Elf64_Rela r;
    memcpy(&r, rela->data + k * sizeof r, sizeof r);
    return r;
}
/* Does the relocation section apply to a non-allocated section (--emit-relocs
 * keeps .rela.debug_info & co.)? Its offsets are then no addresses. */
bool image_rela_unloaded(const struct image *img, const struct section *rela);
/* The value of the first entry tagged tag of the dynamic section (PT_DYNAMIC). */
bool image_dynamic(const struct image *img, int64_t tag, uint64_t *value);
/* The value of a defined symbol of .symtab named name (the first one). */
bool image_symbol(const struct image *img, const char *name, uint64_t *value);
const char *image_kind_name(enum image_kind k);
#endif
