/*
 * Adding a pool to an image that was not linked with the runtime. Code and
 * data keep their addresses: two PT_LOADs are appended after the highest
 * one (in reach of the text for rel32 jumps; a third with ROOM_MOVE below),
 * and the pieces of the dynamic linking data that must grow (.dynamic for
 * one more DT_NEEDED and the tag naming the table, KPRW_DT_TABLE; .dynstr
 * for the runtime's path) are copied into them and re-pointed; the old
 * copies stay where they were, unused.
 *
 * The new PT_LOADs need entries in the program header table. Where that
 * table lies matters to three readers: the kernel passes its address to
 * ld.so as AT_PHDR (5.18 and later: through the PT_LOAD holding e_phoff;
 * before: the first PT_LOAD's p_vaddr - p_offset + e_phoff), ld.so takes
 * the program's load bias as AT_PHDR - PT_PHDR's p_vaddr (and reads a
 * library's table from the file at e_phoff), and GNU strip, which lays the
 * file out again, keeps a table only at the start of the first PT_LOAD (one
 * anywhere else comes out of strip 2.40 at a file offset that does not
 * match its address, and the program crashes). So, in this order:
 *
 * ROOM_NOTES: two PT_NOTE entries become the two PT_LOADs (their notes stay
 *   as sections); a library with one (whose .dynamic ld.so only reads,
 *   glibc >= 2.35) gets one r-x PT_LOAD holding .dynamic too, and the probe
 *   state and slots as zero-filled memory at the end of its last rw-
 *   PT_LOAD. Nothing else changes.
 * ROOM_GROW: the table stays at e_phoff and grows by two entries over what
 *   follows it in its PT_LOAD: in practice .interp, the notes and .gnu.hash,
 *   sections that only program headers, dynamic tags and section headers
 *   name (see movable()). Those it covers move: they are copied into the
 *   r-x PT_LOAD, keeping their alignment, and PT_INTERP, PT_NOTE,
 *   PT_GNU_PROPERTY, the address tags (DT_GNU_HASH, DT_SYMTAB, ...), their
 *   section headers and .symtab's symbols in them follow; their old bytes
 *   hold program headers now. Every tool sees the usual layout.
 * ROOM_MOVE: when something else follows the table (data a linker script
 *   put there), a new table with three more entries is written at the end
 *   of the file, in a read-only PT_LOAD of its own after the pool, mapped
 *   at p_vaddr - p_offset equal to the first PT_LOAD's (the file is padded
 *   to get there) so that both kernel rules give its address; PT_PHDR
 *   follows it. ld.so finds it for libraries too (in the file at e_phoff,
 *   and in memory in that PT_LOAD for dl_iterate_phdr). GNU strip breaks
 *   such a file (above; eu-strip keeps it): the one layout here it does
 *   not keep working.
 */
#include "addpool.h"
#include "kprewrite/abi.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 0x1000u
#define NEW_LOADS 3
#define NEW_SECTIONS 4
#define SPARE_DYN 3   /* DT_NULLs left for later tools */

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

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
};

static int fail(char *err, size_t errlen, const char *path, const char *what)
{
    snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

/* The file bytes at vaddr, len of them, through the PT_LOADs. */
static const uint8_t *at_vaddr(const struct image *img, const struct plan *p, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr <= ph->p_filesz &&
            len <= ph->p_filesz - (vaddr - ph->p_vaddr) && ph->p_offset + ph->p_filesz <= img->map_size)
            return img->map + ph->p_offset + (vaddr - ph->p_vaddr);
    }
    return NULL;
}

static int plan_read(const struct image *img, struct plan *p, char *err, size_t errlen)
{
    const char *path = img->path;
    memset(p, 0, sizeof *p);
    p->eh = (const Elf64_Ehdr *)img->map;
    if (p->eh->e_phentsize != sizeof(Elf64_Phdr) || p->eh->e_phnum == 0 || p->eh->e_phnum == PN_XNUM ||
        p->eh->e_phoff % 8 || p->eh->e_phoff > img->map_size || (uint64_t)p->eh->e_phnum * sizeof(Elf64_Phdr) > img->map_size - p->eh->e_phoff)
        return fail(err, errlen, path, "malformed program headers: cannot add a pool");
    if (p->eh->e_shnum + NEW_SECTIONS >= SHN_LORESERVE || p->eh->e_shstrndx == 0 || p->eh->e_shstrndx >= img->nsecs)
        return fail(err, errlen, path, "too many sections, or no section name table: cannot add a pool");
    p->ph = (const Elf64_Phdr *)(img->map + p->eh->e_phoff);
    p->phnum = p->eh->e_phnum;
    p->dyn_ph = p->interp_ph = SIZE_MAX;
    p->first_load = p->last_load = SIZE_MAX;
    bool interp = false;
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        if (ph->p_type == PT_LOAD) {
            if (p->first_load == SIZE_MAX)
                p->first_load = i;
            p->last_load = i;
            if (ph->p_vaddr + ph->p_memsz > p->vend)
                p->vend = ph->p_vaddr + ph->p_memsz;
        }
        if (ph->p_type == PT_DYNAMIC)
            p->dyn_ph = i;
        if (ph->p_type == PT_INTERP) {
            interp = p->interp = true;
            p->interp_ph = i;
        }
    }
    if (p->dyn_ph == SIZE_MAX || (img->ehdr.e_type == ET_EXEC && !interp))
        return fail(err, errlen, path, "a static executable: the runtime cannot be loaded into it (no dynamic "
                    "linking); relink it with `pkg-config --libs kprewrite-rt` to probe it");
    if (p->last_load == SIZE_MAX)
        return fail(err, errlen, path, "no PT_LOAD segment");
    const Elf64_Phdr *dp = &p->ph[p->dyn_ph];
    if (dp->p_offset > img->map_size || dp->p_filesz > img->map_size - dp->p_offset)
        return fail(err, errlen, path, "PT_DYNAMIC lies past the end of the file");
    if (dp->p_offset % 8)   /* the loader reads it as an array of Elf64_Dyn */
        return fail(err, errlen, path, "PT_DYNAMIC is misaligned in the file");
    p->dyn = (const Elf64_Dyn *)(img->map + dp->p_offset);
    size_t max = dp->p_filesz / sizeof(Elf64_Dyn);
    for (p->ndyn = 0; p->ndyn < max && p->dyn[p->ndyn].d_tag != DT_NULL; p->ndyn++) {
        if (p->dyn[p->ndyn].d_tag == DT_STRTAB)
            p->strtab = p->dyn[p->ndyn].d_un.d_ptr;
        if (p->dyn[p->ndyn].d_tag == DT_STRSZ)
            p->strsz = p->dyn[p->ndyn].d_un.d_val;
    }
    if (p->ndyn == max)
        return fail(err, errlen, path, "the dynamic section has no DT_NULL");
    if (!p->strtab || !p->strsz || !(p->dynstr = at_vaddr(img, p, p->strtab, p->strsz)) ||
        p->dynstr[p->strsz - 1] != 0)
        return fail(err, errlen, path, "no usable dynamic string table (DT_STRTAB, DT_STRSZ)");
    for (size_t i = 0; i < p->ndyn; i++) {
        if ((p->dyn[i].d_tag != DT_NEEDED && p->dyn[i].d_tag != DT_SONAME) || p->dyn[i].d_un.d_val >= p->strsz)
            continue;
        const char *name = (const char *)p->dynstr + p->dyn[i].d_un.d_val;
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        if (p->dyn[i].d_tag == DT_NEEDED && strncmp(base, "libkprewrite-rt.so", 18) == 0)
            p->has_runtime = true;
        /* the dynamic loader runs before any library is loaded: its own
         * DT_NEEDED is never read, and its first probe hit would trap */
        if (p->dyn[i].d_tag == DT_SONAME && (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld64.so", 7) == 0))
            return fail(err, errlen, path, "the dynamic loader: it runs before any library, so the runtime cannot "
                        "be loaded into it");
    }
    p->dynamic_sec = p->dynstr_sec = SIZE_MAX;
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (s->type == SHT_DYNAMIC && s->addr == dp->p_vaddr)
            p->dynamic_sec = i;
        if (s->type == SHT_STRTAB && (s->flags & SHF_ALLOC) && s->addr == p->strtab)
            p->dynstr_sec = i;
    }
    return 0;
}

uint64_t pool_add_text_addr(const struct image *img, char *err, size_t errlen)
{
    struct plan p;
    if (plan_read(img, &p, err, errlen) < 0)
        return 0;
    return up(p.vend, PAGE);
}

static Elf64_Shdr section(uint32_t name, uint64_t flags, uint64_t addr, uint64_t off, uint64_t size, uint64_t align)
{
    Elf64_Shdr s = { .sh_name = name, .sh_type = SHT_PROGBITS, .sh_flags = flags, .sh_addr = addr,
                     .sh_offset = off, .sh_size = size, .sh_addralign = align };
    return s;
}

static Elf64_Phdr load(uint64_t off, uint64_t vaddr, uint64_t size, uint32_t flags)
{
    Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = flags, .p_offset = off, .p_vaddr = vaddr, .p_paddr = vaddr,
                      .p_filesz = size, .p_memsz = size, .p_align = PAGE };
    return ph;
}

static Elf64_Shdr nobits(uint32_t name, uint64_t addr, uint64_t off, uint64_t size, uint64_t align)
{
    Elf64_Shdr s = section(name, SHF_ALLOC | SHF_WRITE, addr, off, size, align);
    s.sh_type = SHT_NOBITS;
    return s;
}

/* How the program header table makes room for the pool's PT_LOADs. */
enum room {
    ROOM_NOTES,   /* PT_NOTE entries become the pool's PT_LOADs; nothing else changes */
    ROOM_GROW,    /* the table grows in place over the sections after it, which move into the pool */
    ROOM_MOVE,    /* a larger table at the end of the file, in a PT_LOAD of its own */
};

/* ROOM_GROW: where the grown table lies and what it grows over. */
struct grow {
    size_t l0;            /* the PT_LOAD holding the table */
    uint64_t l0_filesz;   /* its size, larger when the table reaches past its end */
    uint64_t bs, be;      /* the sections that move, by vaddr (bs == be: the room was free) */
    uint64_t fs;          /* the file offset of bs */
};

#define BLOCK_ALIGN 64u   /* the moved sections keep their place modulo this (none needs more) */

static uint64_t end_of(uint64_t a, uint64_t n) { return a + n < a ? UINT64_MAX : a + n; }
static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

/* The dynamic tags whose value is an address (DT_CONFIG, DT_DEPAUDIT and
 * DT_AUDIT, in the address range, hold string offsets). */
static bool addr_tag(int64_t tag)
{
    switch (tag) {
    case DT_PLTGOT: case DT_HASH: case DT_STRTAB: case DT_SYMTAB: case DT_RELA: case DT_INIT: case DT_FINI:
    case DT_REL: case DT_JMPREL: case DT_INIT_ARRAY: case DT_FINI_ARRAY: case DT_PREINIT_ARRAY:
    case DT_SYMTAB_SHNDX: case DT_RELR: case DT_VERSYM: case DT_VERDEF: case DT_VERNEED:
        return true;
    case DT_CONFIG: case DT_DEPAUDIT: case DT_AUDIT:
        return false;
    }
    return tag >= DT_ADDRRNGLO && tag <= DT_ADDRRNGHI;
}

/* The tag giving the extent of an address tag's data, 0 when none does. */
static int64_t size_tag(int64_t tag)
{
    switch (tag) {
    case DT_STRTAB: return DT_STRSZ;
    case DT_RELA: return DT_RELASZ;
    case DT_REL: return DT_RELSZ;
    case DT_JMPREL: return DT_PLTRELSZ;
    case DT_RELR: return DT_RELRSZ;
    }
    return 0;
}

static uint64_t dyn_val(const struct plan *p, int64_t tag)
{
    for (size_t i = 0; i < p->ndyn; i++)
        if (p->dyn[i].d_tag == tag)
            return p->dyn[i].d_un.d_val;
    return 0;
}

/* A section only the headers and the dynamic tags name, so that it can live
 * anywhere: .interp, notes, symbol hash tables, .dynsym, .dynstr, symbol
 * versions, dynamic relocations. Never code or data. */
static bool movable(const struct plan *p, const struct section *s)
{
    if (!(s->flags & SHF_ALLOC) || (s->flags & (SHF_WRITE | SHF_EXECINSTR | SHF_TLS)) || !s->data)
        return false;
    switch (s->type) {
    case SHT_NOTE: case SHT_HASH: case SHT_GNU_HASH: case SHT_DYNSYM: case SHT_GNU_versym:
    case SHT_GNU_verdef: case SHT_GNU_verneed: case SHT_RELA: case SHT_REL: case SHT_RELR:
        return true;
    case SHT_STRTAB:
        return s->addr == p->strtab;
    case SHT_PROGBITS:   /* .interp: exactly what PT_INTERP names */
        return p->interp_ph != SIZE_MAX && s->addr == p->ph[p->interp_ph].p_vaddr &&
               s->size == p->ph[p->interp_ph].p_filesz;
    }
    return false;
}

/* ROOM_GROW for a table of nnew entries: it stays at e_phoff, in the
 * PT_LOAD that maps it, and grows over what follows it there: bytes no
 * section uses, and movable sections (with the PT_INTERP, PT_NOTE,
 * PT_GNU_PROPERTY entries and the sized dynamic tables over them, whole),
 * which are copied into the pool. False when something else is in the way. */
static bool plan_grow(const struct image *img, const struct plan *p, size_t nnew, struct grow *g)
{
    const Elf64_Ehdr *eh = p->eh;
    uint64_t t0 = eh->e_phoff, t1 = t0 + p->phnum * sizeof(Elf64_Phdr), t2 = t0 + nnew * sizeof(Elf64_Phdr);
    memset(g, 0, sizeof *g);
    g->l0 = SIZE_MAX;
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        if (ph->p_type == PT_LOAD && ph->p_offset <= t0 && t1 - ph->p_offset <= ph->p_filesz) {
            g->l0 = i;
            break;
        }
    }
    if (g->l0 == SIZE_MAX || t2 > img->map_size)
        return false;
    const Elf64_Phdr *l0 = &p->ph[g->l0];
    uint64_t dv = l0->p_vaddr - l0->p_offset;   /* vaddr - file offset in l0 */
    if (dv % PAGE || end_of(t2, dv) != t2 + dv || l0->p_memsz < l0->p_filesz)
        return false;
    /* r: what the table grows over; b: the block that moves */
    uint64_t r0 = t1 + dv, r1 = t2 + dv, bs = UINT64_MAX, be = 0;
#define HIT(a0, a1) (overlaps(a0, a1, r0, r1) || (bs < be && overlaps(a0, a1, bs, be)))
#define TAKE(a0, a1) do { \
        if ((a0) < r0) return false; \
        if ((a0) < bs) { bs = (a0); changed = true; } \
        if ((a1) > be) { be = (a1); changed = true; } \
    } while (0)
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 1; i < img->nsecs; i++) {
            const struct section *s = &img->secs[i];
            if (s->type == SHT_NULL || s->size == 0)
                continue;
            uint64_t se = end_of(s->addr, s->size);
            bool vhit = (s->flags & SHF_ALLOC) && HIT(s->addr, se);
            bool fhit = s->type != SHT_NOBITS && HIT(end_of(s->offset, dv), end_of(end_of(s->offset, s->size), dv));
            if (!vhit && !fhit)
                continue;
            if (!movable(p, s) || s->offset + dv != s->addr)
                return false;
            TAKE(s->addr, se);
        }
        for (size_t i = 0; i < p->phnum; i++) {
            const Elf64_Phdr *ph = &p->ph[i];
            if (i == g->l0 || ph->p_type == PT_PHDR || (ph->p_filesz == 0 && ph->p_memsz == 0))
                continue;
            uint64_t ve = end_of(ph->p_vaddr, ph->p_memsz);
            if (!HIT(ph->p_vaddr, ve) && !HIT(end_of(ph->p_offset, dv), end_of(end_of(ph->p_offset, ph->p_filesz), dv)))
                continue;
            if ((ph->p_type != PT_INTERP && ph->p_type != PT_NOTE && ph->p_type != PT_GNU_PROPERTY) ||
                ph->p_offset + dv != ph->p_vaddr || ph->p_filesz != ph->p_memsz || ph->p_align > BLOCK_ALIGN)
                return false;
            TAKE(ph->p_vaddr, ve);
        }
        for (size_t i = 0; i < p->ndyn; i++) {
            int64_t st = size_tag(p->dyn[i].d_tag);
            uint64_t a = p->dyn[i].d_un.d_ptr, ae = end_of(a, st ? dyn_val(p, st) : 0);
            if (st && HIT(a, ae))
                TAKE(a, ae);
        }
    }
    /* an address tag into the room must name something that moves */
    for (size_t i = 0; i < p->ndyn; i++) {
        uint64_t a = p->dyn[i].d_un.d_ptr;
        if (addr_tag(p->dyn[i].d_tag) && a >= r0 && a < r1 && !(a >= bs && a < be))
            return false;
    }
#undef HIT
#undef TAKE
    if (bs < be) {
        /* whole sections of l0, with file bytes: each keeps its place modulo BLOCK_ALIGN */
        for (size_t i = 1; i < img->nsecs; i++) {
            const struct section *s = &img->secs[i];
            Elf64_Shdr sh;   /* (the caller checked the section header table lies in the file) */
            memcpy(&sh, img->map + eh->e_shoff + s->index * sizeof sh, sizeof sh);
            if ((s->flags & SHF_ALLOC) && s->addr >= bs && s->addr < be && sh.sh_addralign > BLOCK_ALIGN)
                return false;
        }
        g->fs = bs - dv;
        if (g->fs < l0->p_offset || g->fs - l0->p_offset > l0->p_filesz ||
            be - bs > l0->p_filesz - (g->fs - l0->p_offset) || g->fs > img->map_size || be - bs > img->map_size - g->fs)
            return false;
        g->bs = bs;
        g->be = be;
    }
    /* the grown table in l0: past its end only over the rest of its last
     * page, which no other PT_LOAD maps */
    g->l0_filesz = l0->p_filesz;
    if (t2 - l0->p_offset > l0->p_filesz) {
        uint64_t old_end = l0->p_vaddr + l0->p_filesz, new_end = t2 + dv;
        if (l0->p_memsz != l0->p_filesz || l0->p_filesz == 0 || (old_end - 1) / PAGE != (new_end - 1) / PAGE)
            return false;
        for (size_t i = 0; i < p->phnum; i++) {
            const Elf64_Phdr *ph = &p->ph[i];
            if (i != g->l0 && ph->p_type == PT_LOAD &&
                overlaps(ph->p_vaddr & ~(uint64_t)(PAGE - 1), up(end_of(ph->p_vaddr, ph->p_memsz), PAGE),
                         old_end & ~(uint64_t)(PAGE - 1), up(new_end, PAGE)))
                return false;
        }
        g->l0_filesz = g->l0_filesz + (new_end - old_end);
    }
    /* PT_PHDR, if any, names the table */
    for (size_t i = 0; i < p->phnum; i++)
        if (p->ph[i].p_type == PT_PHDR && (p->ph[i].p_offset != t0 || p->ph[i].p_vaddr != t0 + dv))
            return false;
    return true;
}

int pool_add(const struct image *img, const struct pool_sizes *sz, const char *runtime, uint8_t **out,
             size_t *out_size, char *err, size_t errlen)
{
    struct plan p;
    if (plan_read(img, &p, err, errlen) < 0)
        return -1;
    const Elf64_Ehdr *oe = p.eh;
    const struct section *shs = &img->secs[oe->e_shstrndx];
    if (!shs->data || oe->e_shoff > img->map_size ||
        (uint64_t)(img->nsecs > oe->e_shnum ? img->nsecs : oe->e_shnum) * sizeof(Elf64_Shdr) > img->map_size - oe->e_shoff)
        return fail(err, errlen, img->path, "malformed section headers: cannot add a pool");
    size_t notes[2] = { SIZE_MAX, SIZE_MAX }, nnotes = 0;
    for (size_t i = p.phnum; i-- > 0 && nnotes < 2;)
        if (p.ph[i].p_type == PT_NOTE)
            notes[nnotes++] = i;
    /* Two PT_NOTEs: an r-x and an rw- PT_LOAD in their place. One, in a
     * library (whose .dynamic ld.so only reads, glibc >= 2.35): one r-x
     * PT_LOAD holding .dynamic too, and the probe state and slots as
     * zero-filled memory added at the end of the last rw- PT_LOAD.
     * Otherwise the table gets two more entries, growing in place (or, when
     * that cannot be done, three in a new table at the end). */
    bool lib = !p.interp;
    const Elf64_Phdr *last = &p.ph[p.last_load];
    enum room room = ROOM_NOTES;
    bool two = nnotes >= 2;
    struct grow g = { 0 };
    if (!two && !(lib && nnotes == 1 && (last->p_flags & PF_W) && last->p_vaddr + last->p_memsz == p.vend)) {
        two = true;
        notes[0] = notes[1] = SIZE_MAX;
        room = plan_grow(img, &p, p.phnum + 2, &g) ? ROOM_GROW : ROOM_MOVE;
    }
    if (room == ROOM_NOTES && !two)
        notes[1] = SIZE_MAX;
    size_t nnew = p.phnum + (room == ROOM_GROW ? 2 : room == ROOM_MOVE ? 3 : 0);
    if (nnew >= PN_XNUM)
        return fail(err, errlen, img->path, "too many program headers: cannot add a pool");
    const Elf64_Phdr *first = &p.ph[p.first_load];
    uint64_t d0 = first->p_vaddr - first->p_offset;   /* what every kernel adds to e_phoff for AT_PHDR */
    if (room == ROOM_MOVE && d0 % PAGE)
        return fail(err, errlen, img->path, "the first PT_LOAD is not page-aligned and the program header table "
                    "cannot grow in place: cannot add a pool");
    bool add_needed = !p.has_runtime;
    size_t rtlen = add_needed ? strlen(runtime) + 1 : 0;
    uint64_t ndyn = p.ndyn + (add_needed ? 1 : 0) + 1 + SPARE_DYN, dynsz = ndyn * sizeof(Elf64_Dyn);
    uint64_t da = up(sz->data ? sz->data : 64, 64);

    /* one-note libraries: state and slots after the last rw- PT_LOAD's memory */
    uint64_t vb_da = up(p.vend, 64), vb_sl = vb_da + da, vb_end = vb_sl + KPRW_SLOTS_SIZE;
    /* r-x: the table first (the runtime finds it there), .dynstr, the
     * sections the table grew over, [.dynamic], the detours */
    uint64_t vx = up(two ? p.vend : vb_end, PAGE), fx = up(img->map_size, PAGE);
    uint64_t tb = up(sz->table > sizeof(struct kprw_table) ? sz->table : sizeof(struct kprw_table), 64);
    uint64_t off_ds = tb, dsz = p.strsz + rtlen, ro_end = off_ds + dsz, off_blk = 0;
    if (g.bs < g.be) {
        off_blk = ro_end + ((g.bs - (vx + ro_end)) & (BLOCK_ALIGN - 1));
        ro_end = off_blk + (g.be - g.bs);
    }
    uint64_t d_v = vx + off_blk - g.bs, d_f = fx + off_blk - g.fs;   /* the moved sections' shift */
    uint64_t off_dyn = up(ro_end, 8), after = two ? ro_end : off_dyn + dynsz;
    uint64_t off_tx = up(after, 64), tx = up(sz->text ? sz->text : 16, 16), xsz = off_tx + tx;
    /* rw- (two): .dynamic, slots, then the state as zero-filled memory (no
     * bytes in the file: the runtime fills a state in when its point is
     * first hit) */
    uint64_t vw = up(vx + xsz, PAGE), fw = fx + (vw - vx);
    uint64_t off_sl = up(dynsz, 8), off_da = up(off_sl + KPRW_SLOTS_SIZE, 64);
    uint64_t wfile = two ? off_sl + KPRW_SLOTS_SIZE : 0, wsz = two ? off_da + da : 0;
    uint64_t dyn_v = two ? vw : vx + off_dyn, dyn_f = two ? fw : fx + off_dyn;
    /* ROOM_MOVE: the new table in a read-only PT_LOAD after the pool, at
     * the vaddr every kernel computes for AT_PHDR (first PT_LOAD's p_vaddr
     * - p_offset + e_phoff) and ld.so then finds PT_PHDR at */
    uint64_t phsz = nnew * sizeof(Elf64_Phdr), vp = 0, fp = 0;
    if (room == ROOM_MOVE) {
        vp = up(vw + wsz, PAGE);
        if (up(fw + wfile, PAGE) + d0 > vp)
            vp = up(fw + wfile, PAGE) + d0;
        fp = vp - d0;
    }
    /* non-allocated: .shstrtab, section headers */
    static const char *const names[NEW_SECTIONS] = { KPRW_SEC_TEXT, KPRW_SEC_TABLE, KPRW_SEC_DATA, KPRW_SEC_SLOT };
    uint64_t namesz = 0;
    for (int i = 0; i < NEW_SECTIONS; i++)
        namesz += strlen(names[i]) + 1;
    uint64_t fsh = room == ROOM_MOVE ? fp + phsz : two ? fw + wfile : fx + xsz, shstrsz = shs->size + namesz;
    uint64_t fsht = up(fsh + shstrsz, 8), nsh = img->nsecs + NEW_SECTIONS;
    uint64_t total = fsht + nsh * sizeof(Elf64_Shdr);
    if (vw + wsz < vx || (room == ROOM_MOVE && (vp < vw || fp < fw || vp + phsz < vp)) || total < img->map_size)
        return fail(err, errlen, img->path, "the pool would not fit the address space");

    uint8_t *b = calloc(1, total);
    if (!b)
        return fail(err, errlen, img->path, "out of memory adding a pool");
    memcpy(b, img->map, img->map_size);
    memset(b + fx + off_tx, 0xcc, tx);
    if (g.bs < g.be)
        memcpy(b + fx + off_blk, img->map + g.fs, g.be - g.bs);
#define IN_BLOCK(a) (g.bs < g.be && (a) >= g.bs && (a) < g.be)

    /* Program headers: PT_PHDR and PT_INTERP, the PT_LOADs (ascending, as
     * the loaders want) and ours after them, then the rest. ROOM_NOTES: in
     * place, with the same count, PT_NOTEs making room (their notes stay,
     * as sections); ROOM_GROW: in place, two more; ROOM_MOVE: at fp, three
     * more. */
    uint64_t phoff = room == ROOM_MOVE ? fp : oe->e_phoff;
    Elf64_Phdr *nph = (Elf64_Phdr *)(b + phoff);
    size_t k = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < p.phnum; i++) {
            Elf64_Phdr ph = p.ph[i];
            int group = ph.p_type == PT_PHDR || ph.p_type == PT_INTERP ? 0 : ph.p_type == PT_LOAD ? 1 : 2;
            if (group != pass || i == notes[0] || i == notes[1])
                continue;
            if (i == p.dyn_ph) {
                ph.p_offset = dyn_f;
                ph.p_vaddr = ph.p_paddr = dyn_v;
                ph.p_filesz = ph.p_memsz = dynsz;
                if (!two)
                    ph.p_flags = PF_R;   /* ld.so then reads it without relocating it in place */
            }
            if (!two && i == p.last_load)
                ph.p_memsz = vb_end - ph.p_vaddr;
            if (ph.p_type == PT_PHDR && room != ROOM_NOTES) {
                if (room == ROOM_MOVE) {
                    ph.p_offset = fp;
                    ph.p_vaddr = ph.p_paddr = vp;
                }
                ph.p_filesz = ph.p_memsz = phsz;
            }
            if (room == ROOM_GROW && i == g.l0)
                ph.p_filesz = ph.p_memsz = g.l0_filesz;
            if (room == ROOM_GROW && ph.p_type != PT_LOAD && ph.p_type != PT_PHDR && ph.p_memsz && IN_BLOCK(ph.p_vaddr)) {
                ph.p_offset += d_f;
                ph.p_vaddr += d_v;
                ph.p_paddr += d_v;
            }
            nph[k++] = ph;
            if (pass == 1 && i == p.last_load) {
                nph[k++] = load(fx, vx, xsz, PF_R | PF_X);
                if (two) {
                    nph[k] = load(fw, vw, wsz, PF_R | PF_W);
                    nph[k++].p_filesz = wfile;
                }
                if (room == ROOM_MOVE)
                    nph[k++] = load(fp, vp, phsz, PF_R);
            }
        }
    if (k != nnew) {
        free(b);
        return fail(err, errlen, img->path, "program headers out of order: cannot add a pool");
    }
    /* .dynstr with the runtime's path */
    memcpy(b + fx + off_ds, p.dynstr, p.strsz);
    if (add_needed)
        memcpy(b + fx + off_ds + p.strsz, runtime, rtlen);
    /* .dynamic: the runtime's DT_NEEDED first, so its definitions come
     * before libgcc_s's and libc's in symbol lookup (it interposes the
     * unwinder's entry points and pthread_exit for return probes) */
    Elf64_Dyn *nd = (Elf64_Dyn *)(b + dyn_f);
    size_t j = 0;
    if (add_needed)
        nd[j++] = (Elf64_Dyn){ .d_tag = DT_NEEDED, .d_un.d_val = p.strsz };
    nd[j++] = (Elf64_Dyn){ .d_tag = KPRW_DT_TABLE, .d_un.d_ptr = vx };   /* the table starts the r-x PT_LOAD */
    for (size_t i = 0; i < p.ndyn; i++) {
        Elf64_Dyn d = p.dyn[i];
        if (d.d_tag == KPRW_DT_TABLE)
            continue;   /* a pool added before and since cut out: this one replaces it */
        if (addr_tag(d.d_tag) && IN_BLOCK(d.d_un.d_ptr))
            d.d_un.d_ptr += d_v;
        if (d.d_tag == DT_STRTAB)
            d.d_un.d_ptr = vx + off_ds;
        if (d.d_tag == DT_STRSZ)
            d.d_un.d_val = dsz;
        nd[j++] = d;
    }
    /* the rest (DT_NULL, spares) is already zero */

    /* section names and headers */
    memcpy(b + fsh, shs->data, shs->size);
    uint32_t name_at[NEW_SECTIONS];
    uint64_t o = shs->size;
    for (int i = 0; i < NEW_SECTIONS; i++) {
        name_at[i] = (uint32_t)o;
        memcpy(b + fsh + o, names[i], strlen(names[i]) + 1);
        o += strlen(names[i]) + 1;
    }
    Elf64_Shdr *sh = (Elf64_Shdr *)(b + fsht);
    memcpy(sh, img->map + oe->e_shoff, img->nsecs * sizeof(Elf64_Shdr));
    for (size_t i = 1; i < img->nsecs; i++)
        if ((sh[i].sh_flags & SHF_ALLOC) && IN_BLOCK(sh[i].sh_addr)) {
            sh[i].sh_addr += d_v;
            sh[i].sh_offset += d_f;
        }
    sh[oe->e_shstrndx].sh_offset = fsh;
    sh[oe->e_shstrndx].sh_size = shstrsz;
    if (p.dynamic_sec != SIZE_MAX) {
        sh[p.dynamic_sec].sh_addr = dyn_v;
        sh[p.dynamic_sec].sh_offset = dyn_f;
        sh[p.dynamic_sec].sh_size = dynsz;
        if (!two)
            sh[p.dynamic_sec].sh_flags = SHF_ALLOC;
    }
    if (p.dynstr_sec != SIZE_MAX) {
        sh[p.dynstr_sec].sh_addr = vx + off_ds;
        sh[p.dynstr_sec].sh_offset = fx + off_ds;
        sh[p.dynstr_sec].sh_size = dsz;
    }
    /* .symtab's symbols in the sections that now live elsewhere (section
     * symbols, _DYNAMIC, __abi_tag) follow them */
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (s->type != SHT_SYMTAB || !s->data)
            continue;
        for (uint64_t at = s->offset; at + sizeof(Elf64_Sym) <= s->offset + s->size; at += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, b + at, sizeof sym);
            size_t x = sym.st_shndx;
            if (x == 0 || x >= img->nsecs || x >= SHN_LORESERVE || !(sh[x].sh_flags & SHF_ALLOC) ||
                sh[x].sh_addr == img->secs[x].addr)
                continue;
            sym.st_value += sh[x].sh_addr - img->secs[x].addr;
            memcpy(b + at, &sym, sizeof sym);
        }
    }
#undef IN_BLOCK
    size_t n = img->nsecs;
    sh[n++] = section(name_at[0], SHF_ALLOC | SHF_EXECINSTR, vx + off_tx, fx + off_tx, tx, 16);
    sh[n++] = section(name_at[1], SHF_ALLOC, vx, fx, tb, 64);
    if (two) {
        sh[n++] = nobits(name_at[2], vw + off_da, fw + off_da, da, 64);
        sh[n++] = section(name_at[3], SHF_ALLOC | SHF_WRITE, vw + off_sl, fw + off_sl, KPRW_SLOTS_SIZE, 8);
    } else {
        uint64_t foff = last->p_offset + (vb_da - last->p_vaddr);   /* where it would be (NOBITS) */
        sh[n++] = nobits(name_at[2], vb_da, foff, da, 64);
        sh[n++] = nobits(name_at[3], vb_sl, foff + da, KPRW_SLOTS_SIZE, 8);
    }

    Elf64_Ehdr *e = (Elf64_Ehdr *)b;
    e->e_shoff = fsht;
    e->e_shnum = (uint16_t)nsh;
    e->e_phoff = phoff;
    e->e_phnum = (uint16_t)nnew;
    *out = b;
    *out_size = total;
    return 0;
}
