/*
 * Adding a pool to a prebuilt image: reading what the image holds where
 * (plan_read), and finding what can move out of the way when the program
 * header table grows in place (plan_grow) and when .dynstr grows in place
 * (plan_strtab_room): sections that only program headers, dynamic tags and
 * section headers name, copied into the pool (cover()). addpool.c lays the
 * pool out and writes it.
 */
#include "addpool-plan.h"
#include "kprewrite/abi.h"
#include "../util/checked.h"

#include <stdio.h>
#include <string.h>

int addpool_fail(char *err, size_t errlen, const char *path, const char *what)
{
    snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

/* The file bytes at vaddr, len of them, through the PT_LOADs. */
static const uint8_t *at_vaddr(const struct image *img, const struct plan *p, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        if (ph->p_type == PT_LOAD && ck_within(vaddr, len, ph->p_vaddr, ph->p_filesz) &&
            ck_in(ph->p_offset, ph->p_filesz, img->map_size))
            return img->map + ph->p_offset + (vaddr - ph->p_vaddr);
    }
    return NULL;
}

/* A static executable: no interpreter, and not a library (an ET_EXEC,
 * or a static-pie: DF_1_PIE). The runtime then cannot be a DT_NEEDED
 * (nothing would load it): the static runtime goes into the pool. */
bool addpool_is_static(const struct image *img)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img->map;
    if (img->interp || (eh->e_type != ET_EXEC && eh->e_type != ET_DYN))
        return false;
    if (eh->e_type == ET_EXEC)
        return true;
    for (size_t i = 0; i < img->nsecs; i++) {
        const struct section *sec = &img->secs[i];
        if (sec->type != SHT_DYNAMIC || !sec->data)
            continue;
        for (uint64_t k = 0; k + sizeof(Elf64_Dyn) <= sec->size; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, (const uint8_t *)sec->data + k, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_PIE))
                return true;
        }
    }
    return false;
}

/* A static executable's plan: its dynamic section (a static-pie's) is
 * left as it is, none of it is re-pointed. */
static int plan_static(const struct image *img, struct plan *p)
{
    (void)img;
    p->dyn_ph = SIZE_MAX;
    p->dynamic_sec = p->dynstr_sec = SIZE_MAX;
    return 0;
}

int plan_read(const struct image *img, struct plan *p, char *err, size_t errlen)
{
    const char *path = img->path;
    memset(p, 0, sizeof *p);
    p->eh = (const Elf64_Ehdr *)img->map;
    if (p->eh->e_phentsize != sizeof(Elf64_Phdr) || p->eh->e_phnum == 0 || p->eh->e_phnum == PN_XNUM ||
        p->eh->e_phoff % 8 || !ck_array_in(p->eh->e_phoff, p->eh->e_phnum, sizeof(Elf64_Phdr), img->map_size))
        return addpool_fail(err, errlen, path, "malformed program headers: cannot add a pool");
    if (p->eh->e_shnum + NEW_SECTIONS >= SHN_LORESERVE || p->eh->e_shstrndx == 0 || p->eh->e_shstrndx >= img->nsecs)
        return addpool_fail(err, errlen, path, "too many sections, or no section name table: cannot add a pool");
    p->ph = (const Elf64_Phdr *)(img->map + p->eh->e_phoff);
    p->phnum = p->eh->e_phnum;
    p->dyn_ph = p->interp_ph = SIZE_MAX;
    p->first_load = p->last_load = SIZE_MAX;
    if (img->map_size >= PLAN_LIMIT)
        return addpool_fail(err, errlen, path, "the file is too large to add a pool to");
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        /* (image_open checked the same; the layout's sums rely on it) */
        if (ph->p_type != PT_NULL && ((ph->p_filesz && !ck_in(ph->p_offset, ph->p_filesz, img->map_size)) ||
                                      !ck_in(ph->p_vaddr, ph->p_memsz, PLAN_LIMIT))) {
            char what[128];
            snprintf(what, sizeof what, "program header %zu lies past the end of the file or of the user "
                     "address space: cannot add a pool", i);
            return addpool_fail(err, errlen, path, what);
        }
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
            p->interp = true;
            p->interp_ph = i;
        }
    }
    p->static_exe = addpool_is_static(img);
    if (p->static_exe)
        return p->last_load == SIZE_MAX ? addpool_fail(err, errlen, path, "no PT_LOAD segment") : plan_static(img, p);
    if (p->dyn_ph == SIZE_MAX)
        return addpool_fail(err, errlen, path, "no dynamic section and no interpreter: not an executable or "
                            "library kprewrite can add a pool to");
    if (p->last_load == SIZE_MAX)
        return addpool_fail(err, errlen, path, "no PT_LOAD segment");
    const Elf64_Phdr *dp = &p->ph[p->dyn_ph];
    if (!ck_in(dp->p_offset, dp->p_filesz, img->map_size))
        return addpool_fail(err, errlen, path, "PT_DYNAMIC lies past the end of the file");
    if (dp->p_offset % 8)   /* the loader reads it as an array of Elf64_Dyn */
        return addpool_fail(err, errlen, path, "PT_DYNAMIC is misaligned in the file");
    p->dyn = (const Elf64_Dyn *)(img->map + dp->p_offset);
    size_t max = dp->p_filesz / sizeof(Elf64_Dyn);
    for (p->ndyn = 0; p->ndyn < max && p->dyn[p->ndyn].d_tag != DT_NULL; p->ndyn++) {
        if (p->dyn[p->ndyn].d_tag == DT_STRTAB)
            p->strtab = p->dyn[p->ndyn].d_un.d_ptr;
        if (p->dyn[p->ndyn].d_tag == DT_STRSZ)
            p->strsz = p->dyn[p->ndyn].d_un.d_val;
    }
    if (p->ndyn == max)
        return addpool_fail(err, errlen, path, "the dynamic section has no DT_NULL");
    p->dyn_cap = max;
    for (size_t i = 0; i < p->ndyn; i++)
        if (p->dyn[i].d_tag == KPRW_DT_TABLE)
            p->has_table_tag = true;
    if (!p->strtab || !p->strsz || !(p->dynstr = at_vaddr(img, p, p->strtab, p->strsz)) ||
        p->dynstr[p->strsz - 1] != 0)
        return addpool_fail(err, errlen, path, "no usable dynamic string table (DT_STRTAB, DT_STRSZ)");
    for (size_t i = 0; i < p->ndyn; i++) {
        if ((p->dyn[i].d_tag != DT_NEEDED && p->dyn[i].d_tag != DT_SONAME) || p->dyn[i].d_un.d_val >= p->strsz)
            continue;
        const char *name = (const char *)p->dynstr + p->dyn[i].d_un.d_val;
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        if (p->dyn[i].d_tag == DT_NEEDED && strncmp(base, KPRW_RUNTIME_STEM, strlen(KPRW_RUNTIME_STEM)) == 0)
            p->has_runtime = true;
        /* the dynamic loader runs before any library is loaded: its own
         * DT_NEEDED is never read, and its first probe hit would trap */
        if (p->dyn[i].d_tag == DT_SONAME && (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld64.so", 7) == 0))
            return addpool_fail(err, errlen, path, "the dynamic loader: it runs before any library, so the runtime cannot "
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


/* The dynamic tags whose value is an address (DT_CONFIG, DT_DEPAUDIT and
 * DT_AUDIT, in the address range, hold string offsets). */
bool addr_tag(int64_t tag)
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

/* What must move so that the vaddr range [r0, r1) of PT_LOAD l (which
 * maps it from the file at vaddr - dv) can be overwritten: the movable
 * sections over it (with the PT_INTERP, PT_NOTE, PT_GNU_PROPERTY entries
 * and the sized dynamic tables over them, whole), as one block of l. False
 * when something else is in the way. Bytes no section, program header or
 * dynamic tag names are free. (phdr: the room is the program header table
 * growing, which PT_PHDR names.) */
static bool cover(const struct image *img, const struct plan *p, size_t l, uint64_t dv, uint64_t r0, uint64_t r1,
                  bool phdr, struct block *blk)
{
    uint64_t bs = UINT64_MAX, be = 0;
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
            if (i == l || (phdr && ph->p_type == PT_PHDR) || (ph->p_filesz == 0 && ph->p_memsz == 0))
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
#undef HIT
#undef TAKE
    /* an address tag into the room must name something that moves */
    for (size_t i = 0; i < p->ndyn; i++) {
        uint64_t a = p->dyn[i].d_un.d_ptr;
        if (addr_tag(p->dyn[i].d_tag) && a >= r0 && a < r1 && !(a >= bs && a < be))
            return false;
    }
    memset(blk, 0, sizeof *blk);
    if (bs >= be)
        return true;
    /* whole sections of l, with file bytes: each keeps its place modulo BLOCK_ALIGN */
    const Elf64_Ehdr *eh = p->eh;
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        Elf64_Shdr sh;   /* (the caller checked the section header table lies in the file) */
        memcpy(&sh, img->map + eh->e_shoff + s->index * sizeof sh, sizeof sh);
        if ((s->flags & SHF_ALLOC) && s->addr >= bs && s->addr < be && sh.sh_addralign > BLOCK_ALIGN)
            return false;
    }
    const Elf64_Phdr *lp = &p->ph[l];
    uint64_t fs = bs - dv;
    if (fs < lp->p_offset || fs - lp->p_offset > lp->p_filesz || be - bs > lp->p_filesz - (fs - lp->p_offset) ||
        fs > img->map_size || be - bs > img->map_size - fs)
        return false;
    *blk = (struct block){ .bs = bs, .be = be, .fs = fs };
    return true;
}

/* ROOM_GROW for a table of nnew entries: it stays at e_phoff, in the
 * PT_LOAD that maps it, and grows over what follows it there (cover()),
 * which is copied into the pool. False when something else is in the way. */
bool plan_grow(const struct image *img, const struct plan *p, size_t nnew, struct grow *g)
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
    g->r0 = t1 + dv;
    g->r1 = t2 + dv;
    if (!cover(img, p, g->l0, dv, g->r0, g->r1, true, &g->blk))
        return false;
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

/* The runtime's path goes at the end of .dynstr, in place, when what
 * follows .dynstr there can move into the pool (cover(): in practice the
 * symbol version tables, a few hundred bytes) and is smaller than .dynstr:
 * then .dynstr is not copied (in a C++ library it is the largest piece of
 * what a pool adds). The room must not touch what the program header table
 * grows over (g). False: .dynstr is copied into the pool instead. */
bool plan_strtab_room(const struct image *img, const struct plan *p, uint64_t len, const struct grow *g,
                             struct block *blk)
{
    if (p->dynstr_sec == SIZE_MAX || img->secs[p->dynstr_sec].size != p->strsz)
        return false;
    uint64_t r0 = end_of(p->strtab, p->strsz), r1 = end_of(r0, len);
    for (size_t l = 0; l < p->phnum; l++) {
        const Elf64_Phdr *ph = &p->ph[l];
        if (ph->p_type != PT_LOAD || !ck_within(p->strtab, r1 - p->strtab, ph->p_vaddr, ph->p_filesz) ||
            !ck_in(ph->p_offset, ph->p_filesz, img->map_size))
            continue;
        uint64_t dv = ph->p_vaddr - ph->p_offset;
        if (img->secs[p->dynstr_sec].offset + dv != p->strtab)
            return false;
        if (g && (overlaps(p->strtab, r1, g->r0, g->r1) ||
                  (g->blk.bs < g->blk.be && overlaps(p->strtab, r1, g->blk.bs, g->blk.be))))
            return false;
        if (!cover(img, p, l, dv, r0, r1, false, blk))
            return false;
        if (g && g->blk.bs < g->blk.be && overlaps(blk->bs, blk->be, g->blk.bs, g->blk.be))
            return false;
        return blk->be - blk->bs < p->strsz;
    }
    return false;
}

int block_of(const struct block *blk, size_t n, uint64_t a)
{
    for (size_t i = 0; i < n; i++)
        if (blk[i].bs < blk[i].be && a >= blk[i].bs && a < blk[i].be)
            return (int)i;
    return -1;
}
