/*
 * Adding a pool to an image that was not linked with the runtime. Nothing
 * already in the file moves: two PT_LOADs are appended after the highest
 * one (in reach of the text for rel32 jumps), and the pieces of the dynamic
 * linking data that must grow (.dynamic for one more DT_NEEDED and the tag
 * naming the table, KPRW_DT_TABLE; .dynstr for the runtime's path) are
 * copied into them and re-pointed; the old copies stay where they were,
 * unused. The program header table keeps its place and its size (moving
 * it, or growing it past the first sections, is what makes strip and the
 * loaders unhappy with patched binaries): the two new PT_LOADs take the
 * slots of two PT_NOTEs, whose notes stay as sections.
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
    size_t phnum, last_load, dyn_ph;
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
    p->dyn_ph = SIZE_MAX;
    p->last_load = SIZE_MAX;
    bool interp = false;
    for (size_t i = 0; i < p->phnum; i++) {
        const Elf64_Phdr *ph = &p->ph[i];
        if (ph->p_type == PT_LOAD) {
            p->last_load = i;
            if (ph->p_vaddr + ph->p_memsz > p->vend)
                p->vend = ph->p_vaddr + ph->p_memsz;
        }
        if (ph->p_type == PT_DYNAMIC)
            p->dyn_ph = i;
        if (ph->p_type == PT_INTERP)
            interp = p->interp = true;
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
    for (size_t i = 0; i < p->ndyn; i++)
        if (p->dyn[i].d_tag == DT_NEEDED && p->dyn[i].d_un.d_val < p->strsz) {
            const char *name = (const char *)p->dynstr + p->dyn[i].d_un.d_val;
            const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
            if (strncmp(base, "libkprewrite-rt.so", 18) == 0)
                p->has_runtime = true;
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

int pool_add(const struct image *img, const struct pool_sizes *sz, const char *runtime, uint8_t **out,
             size_t *out_size, char *err, size_t errlen)
{
    struct plan p;
    if (plan_read(img, &p, err, errlen) < 0)
        return -1;
    size_t notes[2] = { SIZE_MAX, SIZE_MAX }, nnotes = 0;
    for (size_t i = p.phnum; i-- > 0 && nnotes < 2;)
        if (p.ph[i].p_type == PT_NOTE)
            notes[nnotes++] = i;
    /* Two PT_NOTEs: an r-x and an rw- PT_LOAD. One, in a library (whose
     * .dynamic ld.so only reads, glibc >= 2.35): one r-x PT_LOAD holding
     * .dynamic too, and the probe state and slots as zero-filled memory
     * added at the end of the last rw- PT_LOAD. */
    bool lib = !p.interp, two = nnotes >= 2;
    const Elf64_Phdr *last = &p.ph[p.last_load];
    if (!two && !(lib && nnotes == 1 && (last->p_flags & PF_W) && last->p_vaddr + last->p_memsz == p.vend))
        return fail(err, errlen, img->path, lib ? "no PT_NOTE program header to turn into the pool's segment, or "
                    "the last segment is not writable (kprewrite adds no program header)"
                    : "fewer than two PT_NOTE program headers to turn into the pool's segments (kprewrite adds "
                    "no program header: the table could not grow in place)");
    if (!two)
        notes[1] = SIZE_MAX;
    bool add_needed = !p.has_runtime;
    size_t rtlen = add_needed ? strlen(runtime) + 1 : 0;
    uint64_t ndyn = p.ndyn + (add_needed ? 1 : 0) + 1 + SPARE_DYN, dynsz = ndyn * sizeof(Elf64_Dyn);
    uint64_t da = up(sz->data ? sz->data : 64, 64);

    /* one-note libraries: state and slots after the last rw- PT_LOAD's memory */
    uint64_t vb_da = up(p.vend, 64), vb_sl = vb_da + da, vb_end = vb_sl + KPRW_SLOTS_SIZE;
    /* r-x: the table first (the runtime finds it there), .dynstr, [.dynamic], the detours */
    uint64_t vx = up(two ? p.vend : vb_end, PAGE), fx = up(img->map_size, PAGE);
    uint64_t tb = up(sz->table > sizeof(struct kprw_table) ? sz->table : sizeof(struct kprw_table), 64);
    uint64_t off_ds = tb, dsz = p.strsz + rtlen;
    uint64_t off_dyn = up(off_ds + dsz, 8), after = two ? off_ds + dsz : off_dyn + dynsz;
    uint64_t off_tx = up(after, 64), tx = up(sz->text ? sz->text : 16, 16), xsz = off_tx + tx;
    /* rw- (two notes): .dynamic, slots, then the state as zero-filled
     * memory (no bytes in the file: the runtime fills a state in when its
     * point is first hit) */
    uint64_t vw = up(vx + xsz, PAGE), fw = fx + (vw - vx);
    uint64_t off_sl = up(dynsz, 8), off_da = up(off_sl + KPRW_SLOTS_SIZE, 64);
    uint64_t wfile = two ? off_sl + KPRW_SLOTS_SIZE : 0, wsz = two ? off_da + da : 0;
    uint64_t dyn_v = two ? vw : vx + off_dyn, dyn_f = two ? fw : fx + off_dyn;
    /* non-allocated: .shstrtab, section headers */
    const struct section *shs = &img->secs[p.eh->e_shstrndx];
    static const char *const names[NEW_SECTIONS] = { KPRW_SEC_TEXT, KPRW_SEC_TABLE, KPRW_SEC_DATA, KPRW_SEC_SLOT };
    uint64_t namesz = 0;
    for (int i = 0; i < NEW_SECTIONS; i++)
        namesz += strlen(names[i]) + 1;
    const Elf64_Ehdr *oe = p.eh;
    if (!shs->data || oe->e_shoff > img->map_size ||
        (uint64_t)oe->e_shnum * sizeof(Elf64_Shdr) > img->map_size - oe->e_shoff)
        return fail(err, errlen, img->path, "malformed section headers: cannot add a pool");
    uint64_t fsh = (two ? fw + wfile : fx + xsz), shstrsz = shs->size + namesz;
    uint64_t fsht = up(fsh + shstrsz, 8), nsh = img->nsecs + NEW_SECTIONS;
    uint64_t total = fsht + nsh * sizeof(Elf64_Shdr);
    if (vw + wsz < vx || total < img->map_size)
        return fail(err, errlen, img->path, "the pool would not fit the address space");

    uint8_t *b = calloc(1, total);
    if (!b)
        return fail(err, errlen, img->path, "out of memory adding a pool");
    memcpy(b, img->map, img->map_size);
    memset(b + fx + off_tx, 0xcc, tx);

    /* Program headers, rewritten in place with the same count: PT_PHDR and
     * PT_INTERP, the PT_LOADs (ascending, as the loaders want) and ours,
     * then the rest; PT_NOTEs make room (their notes stay, as sections). */
    Elf64_Phdr *nph = (Elf64_Phdr *)(b + oe->e_phoff);
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
            nph[k++] = ph;
            if (pass == 1 && i == p.last_load) {
                nph[k++] = load(fx, vx, xsz, PF_R | PF_X);
                if (two) {
                    nph[k] = load(fw, vw, wsz, PF_R | PF_W);
                    nph[k++].p_filesz = wfile;
                }
            }
        }
    if (k != p.phnum) {
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
    *out = b;
    *out_size = total;
    return 0;
}
