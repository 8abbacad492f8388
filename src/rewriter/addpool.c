/*
 * Adding a pool to an image that was not linked with the runtime. Code and
 * data keep their addresses: two PT_LOADs are appended after the highest
 * one (in reach of the text for rel32 jumps; a third with ROOM_MOVE below).
 * The dynamic linking data must grow: .dynamic by one more DT_NEEDED and
 * the tag naming the table (KPRW_DT_TABLE), .dynstr by the runtime's path.
 * Each grows in place where it can - .dynamic into the spare DT_NULLs GNU
 * ld leaves, .dynstr over what follows it once that (the symbol version
 * tables, in practice) moves into the pool - and is otherwise copied into
 * the pool and re-pointed, the old copy staying where it was, unused. The
 * file grows by little more than the probes' table and detours: the new
 * PT_LOADs start in the file where the loaded part ends (each maps at the
 * same offset in a page of its own, so no page of padding is written), and
 * the non-allocated tail (section names, symbols, debug link, section
 * headers) moves after them rather than staying as a dead copy.
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
#include "addpool-plan.h"
#include "../arch/isa.h"
#include "kprewrite/abi.h"
#include "../runtime/static/blob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPARE_DYN 3   /* DT_NULLs left for later tools */
#define MOVE_PAD_MAX (64u << 20)   /* ROOM_MOVE: the most padding written before the new table */

uint64_t pool_add_text_addr(const struct image *img, char *err, size_t errlen)
{
    struct plan p;
    if (plan_read(img, &p, err, errlen) < 0)
        return 0;
    return up(p.vend, PAGE) + up(img->map_size, 64) % PAGE;
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

static const char *const section_names[NEW_SECTIONS] = { KPRW_SEC_TEXT, KPRW_SEC_TABLE, KPRW_SEC_DATA,
                                                         KPRW_SEC_SLOT, KPRS_SEC_RT };

/* A section's alignment in the file (1 for 0, and at most a page). */
static uint64_t sec_align(const struct image *img, const struct section *s)
{
    Elf64_Shdr sh;   /* (pool_add checked the section header table lies in the file) */
    memcpy(&sh, img->map + img->ehdr.e_shoff + s->index * sizeof sh, sizeof sh);
    uint64_t a = sh.sh_addralign;
    return a <= 1 ? 1 : a > PAGE || (a & (a - 1)) ? PAGE : a;
}

/* Where everything goes (pool_add plans it all before writing a byte). */
struct layout {
    enum room room;
    bool two;                  /* an rw- PT_LOAD of its own; else state and slots end the last rw- one */
    bool add_needed;           /* no DT_NEEDED names the runtime yet */
    bool str_in_place;         /* the runtime's path goes at the end of .dynstr, where it lies */
    bool dyn_in_place;         /* .dynamic is rewritten where it lies */
    size_t notes[2];           /* PT_NOTE entries that become PT_LOADs (SIZE_MAX: none) */
    size_t nnew;               /* program headers after */
    struct grow g;
    struct block blk[2];       /* moved: [0] what the table grew over, [1] what .dynstr grew over */
    uint64_t rtlen, dynsz, da;
    size_t dyn_cap;            /* entries .dynamic has room for where it lies */
    uint64_t vb_da, vb_sl, vb_end;   /* one-note libraries: state and slots after the last rw- memory */
    uint64_t keep;             /* the original file bytes kept where they are */
    uint64_t fx, vx, tb, off_ds, dsz, off_dyn, off_tx, tx, off_rt, rt, xsz;   /* r-x */
    bool static_rt;            /* a static executable: the blob, no dynamic linking data */
    uint64_t fw, vw, off_sl, off_da, wfile, wsz;                  /* rw- */
    uint64_t dyn_v, dyn_f;     /* .dynamic, as it will be */
    uint64_t phsz, vp, fp;     /* ROOM_MOVE: the new program header table */
    uint64_t ftail;            /* where the non-allocated tail goes */
    uint64_t fsh, shstrsz, fsht, nsh, total;
};

/* The file bytes from which on only non-allocated sections and the section
 * header table lie (or zeros between them): those move after the pool.
 * img->map_size when anything else is there (data appended to the file):
 * then nothing moves. */
static uint64_t plan_tail(const struct image *img, const struct plan *p)
{
    const Elf64_Ehdr *eh = p->eh;
    uint64_t tail = end_of(eh->e_phoff, (uint64_t)p->phnum * sizeof(Elf64_Phdr));
    if (tail < sizeof *eh)
        tail = sizeof *eh;
    for (size_t i = 0; i < p->phnum; i++)
        if (p->ph[i].p_filesz && end_of(p->ph[i].p_offset, p->ph[i].p_filesz) > tail)
            tail = end_of(p->ph[i].p_offset, p->ph[i].p_filesz);
    if (tail >= img->map_size)
        return img->map_size;
    uint64_t sh_end = end_of(eh->e_shoff, (uint64_t)img->nsecs * sizeof(Elf64_Shdr));
    if (eh->e_shoff < tail && sh_end > tail)
        return img->map_size;
    /* every byte past tail: in a non-allocated section, the section headers, or zero */
    for (uint64_t at = tail; at < img->map_size;) {
        uint64_t next = img->map_size;
        bool covered = at >= eh->e_shoff && at < sh_end;
        if (covered)
            next = sh_end;
        for (size_t i = 1; i < img->nsecs && !covered; i++) {
            const struct section *s = &img->secs[i];
            if (!s->data || s->size == 0)   /* no bytes in the file (NOBITS, NULL) */
                continue;
            uint64_t se = end_of(s->offset, s->size);
            if (s->offset < tail && se > tail)
                return img->map_size;   /* straddles the end of what is loaded */
            if (at >= s->offset && at < se) {
                if (s->flags & SHF_ALLOC)
                    return img->map_size;
                covered = true;
                next = se;
            } else if (s->offset > at && s->offset < next)
                next = s->offset;
        }
        if (!covered && eh->e_shoff > at && eh->e_shoff < next)
            next = eh->e_shoff;
        if (!covered)
            for (uint64_t k = at; k < next && k < img->map_size; k++)
                if (img->map[k])
                    return img->map_size;
        at = next > img->map_size ? img->map_size : next;
    }
    return tail;
}

/* Which way the program header table makes room (ROOM_*). */
static int plan_room(const struct image *img, const struct plan *p, struct layout *L, char *err, size_t errlen)
{
    size_t nnotes = 0;
    L->notes[0] = L->notes[1] = SIZE_MAX;
    for (size_t i = p->phnum; i-- > 0 && nnotes < 2;)
        if (p->ph[i].p_type == PT_NOTE)
            L->notes[nnotes++] = i;
    /* Two PT_NOTEs: an r-x and an rw- PT_LOAD in their place. One, in a
     * library: one r-x PT_LOAD, and the probe state and slots as
     * zero-filled memory added at the end of the last rw- PT_LOAD (a copy
     * of .dynamic, if one is needed, goes in the r-x one: ld.so only reads
     * a library's, glibc >= 2.35). Otherwise the table gets two more
     * entries, growing in place (or, when that cannot be done, three in a
     * new table at the end). */
    const Elf64_Phdr *last = &p->ph[p->last_load];
    bool lib = !p->interp && !p->static_exe;
    L->room = ROOM_NOTES;
    L->two = nnotes >= 2;
    if (!L->two && !(lib && nnotes == 1 && (last->p_flags & PF_W) && last->p_vaddr + last->p_memsz == p->vend)) {
        L->two = true;
        L->notes[0] = L->notes[1] = SIZE_MAX;
        L->room = plan_grow(img, p, p->phnum + 2, &L->g) ? ROOM_GROW : ROOM_MOVE;
    }
    if (L->room == ROOM_NOTES && !L->two)
        L->notes[1] = SIZE_MAX;
    L->nnew = p->phnum + (L->room == ROOM_GROW ? 2 : L->room == ROOM_MOVE ? 3 : 0);
    if (L->nnew >= PN_XNUM)
        return addpool_fail(err, errlen, img->path, "too many program headers: cannot add a pool");
    const Elf64_Phdr *first = &p->ph[p->first_load];
    if (L->room == ROOM_MOVE && (first->p_vaddr - first->p_offset) % PAGE)
        return addpool_fail(err, errlen, img->path, "the first PT_LOAD is not page-aligned and the program header "
                            "table cannot grow in place: cannot add a pool");
    return 0;
}

static int plan_layout(const struct image *img, const struct plan *p, const struct pool_sizes *sz,
                       const char *runtime, struct layout *L, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    if (plan_room(img, p, L, err, errlen) < 0)
        return -1;
    L->static_rt = p->static_exe;
    L->add_needed = !p->has_runtime && !L->static_rt;
    L->rtlen = L->add_needed ? strlen(runtime) + 1 : 0;
    /* .dynamic: the runtime's DT_NEEDED and KPRW_DT_TABLE (replacing an old one) */
    uint64_t ndyn = p->ndyn - (p->has_table_tag ? 1 : 0) + (L->add_needed ? 1 : 0) + 1;
    uint64_t cap = p->dyn_cap;
    if (p->dynamic_sec != SIZE_MAX && img->secs[p->dynamic_sec].size / sizeof(Elf64_Dyn) < cap)
        cap = img->secs[p->dynamic_sec].size / sizeof(Elf64_Dyn);
    L->dyn_cap = cap;
    L->dyn_in_place = L->static_rt || ndyn + 1 <= cap;   /* and a DT_NULL */
    L->dynsz = L->dyn_in_place ? 0 : (ndyn + 1 + SPARE_DYN) * sizeof(Elf64_Dyn);
    L->blk[0] = L->g.blk;
    L->str_in_place = L->add_needed &&
                      plan_strtab_room(img, p, L->rtlen, L->room == ROOM_GROW ? &L->g : NULL, &L->blk[1]);
    if (!L->str_in_place)
        memset(&L->blk[1], 0, sizeof L->blk[1]);
    L->da = up(sz->data ? sz->data : 64, 64);
    L->keep = plan_tail(img, p);

    L->vb_da = up(p->vend, 64);
    L->vb_sl = L->vb_da + L->da;
    L->vb_end = L->vb_sl + KPRW_SLOTS_SIZE;
    /* r-x: the table first (the runtime finds it there), [a copy of
     * .dynstr], the sections that moved, [.dynamic], the detours */
    L->fx = up(L->keep, 64);
    L->vx = up(L->two ? p->vend : L->vb_end, PAGE) + L->fx % PAGE;
    L->tb = up(sz->table > sizeof(struct kprw_table) ? sz->table : sizeof(struct kprw_table), 64);
    L->off_ds = L->tb;
    L->dsz = L->add_needed && !L->str_in_place ? p->strsz + L->rtlen : 0;
    uint64_t ro_end = L->off_ds + L->dsz;
    for (int i = 0; i < 2; i++)
        if (L->blk[i].bs < L->blk[i].be) {
            L->blk[i].off = ro_end + ((L->blk[i].bs - (L->vx + ro_end)) & (BLOCK_ALIGN - 1));
            ro_end = L->blk[i].off + (L->blk[i].be - L->blk[i].bs);
        }
    L->off_dyn = up(ro_end, 8);
    uint64_t after = L->two ? ro_end : L->off_dyn + L->dynsz;
    L->off_tx = up(after, 64);
    L->tx = up(sz->text ? sz->text : 16, 16);
    L->off_rt = up(L->off_tx + L->tx, 64);
    L->rt = L->static_rt ? sz->rt_size : 0;
    L->xsz = L->static_rt ? L->off_rt + L->rt : L->off_tx + L->tx;
    /* rw- (two): [.dynamic], slots, then the state as zero-filled memory
     * (no bytes in the file: the runtime fills a state in when its point is
     * first hit). The slots have file bytes (zeros), so that the segment
     * holds a writable section with contents, as tools expect. */
    L->fw = up(L->fx + L->xsz, 8);
    L->vw = up(L->vx + L->xsz, PAGE) + L->fw % PAGE;
    L->off_sl = up(L->dynsz, 8);
    L->off_da = up(L->off_sl + KPRW_SLOTS_SIZE, 64);
    L->wfile = L->two ? L->off_sl + KPRW_SLOTS_SIZE : 0;
    L->wsz = L->two ? L->off_da + L->da : 0;
    if (!L->static_rt) {
        const Elf64_Phdr *dp = &p->ph[p->dyn_ph];
        L->dyn_v = L->dyn_in_place ? dp->p_vaddr : L->two ? L->vw : L->vx + L->off_dyn;
        L->dyn_f = L->dyn_in_place ? dp->p_offset : L->two ? L->fw : L->fx + L->off_dyn;
    }
    /* ROOM_MOVE: the new table in a read-only PT_LOAD after the pool, at
     * the vaddr every kernel computes for AT_PHDR (first PT_LOAD's p_vaddr
     * - p_offset + e_phoff) and ld.so then finds PT_PHDR at */
    const Elf64_Phdr *first = &p->ph[p->first_load];
    uint64_t d0 = first->p_vaddr - first->p_offset;
    L->phsz = L->nnew * sizeof(Elf64_Phdr);
    if (L->room == ROOM_MOVE) {
        L->vp = up(L->vw + L->wsz, PAGE);
        if (up(L->fw + L->wfile, PAGE) + d0 > L->vp)
            L->vp = up(L->fw + L->wfile, PAGE) + d0;
        L->fp = L->vp - d0;
        /* the file up to fp: padding as large as the memory (a .bss) the
         * table's address lies past; a few MiB are fine, a GiB is not */
        if (L->fp - (L->fw + L->wfile) > MOVE_PAD_MAX) {
            char what[200];
            snprintf(what, sizeof what, "the program header table must move to file offset 0x%llx, past %llu MiB "
                     "of padding, to match its address: cannot add a pool", (unsigned long long)L->fp,
                     (unsigned long long)((L->fp - (L->fw + L->wfile)) >> 20));
            return addpool_fail(err, errlen, img->path, what);
        }
    }
    /* non-allocated: the tail's sections (when they move), .shstrtab, section headers */
    L->ftail = L->room == ROOM_MOVE ? L->fp + L->phsz : L->two ? L->fw + L->wfile : L->fx + L->xsz;
    uint64_t f = L->ftail;
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (s->offset >= L->keep && s->data && s->size && i != p->eh->e_shstrndx)
            f = end_of(up(f, sec_align(img, s)), s->size);
    }
    uint64_t namesz = 0;
    for (int i = 0; i < NEW_SECTIONS - !L->static_rt; i++)
        namesz += strlen(section_names[i]) + 1;
    L->fsh = f;
    L->shstrsz = img->secs[p->eh->e_shstrndx].size + namesz;
    L->fsht = up(L->fsh + L->shstrsz, 8);
    L->nsh = img->nsecs + NEW_SECTIONS - (L->static_rt ? 0 : 1);
    L->total = L->fsht + L->nsh * sizeof(Elf64_Shdr);
    if (L->vw + L->wsz < L->vx || (L->room == ROOM_MOVE && (L->vp < L->vw || L->fp < L->fw || L->vp + L->phsz < L->vp)) ||
        L->total < L->keep || f == UINT64_MAX)
        return addpool_fail(err, errlen, img->path, "the pool would not fit the address space");
    return 0;
}

/* Program headers: PT_PHDR and PT_INTERP, the PT_LOADs (ascending, as the
 * loaders want) and ours after them, then the rest. ROOM_NOTES: in place,
 * with the same count, PT_NOTEs making room (their notes stay, as
 * sections); ROOM_GROW: in place, two more; ROOM_MOVE: at fp, three more. */
static size_t write_phdrs(const struct plan *p, const struct layout *L, uint8_t *b)
{
    Elf64_Phdr *nph = (Elf64_Phdr *)(b + (L->room == ROOM_MOVE ? L->fp : p->eh->e_phoff));
    size_t k = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < p->phnum; i++) {
            Elf64_Phdr ph = p->ph[i];
            int group = ph.p_type == PT_PHDR || ph.p_type == PT_INTERP ? 0 : ph.p_type == PT_LOAD ? 1 : 2;
            if (group != pass || i == L->notes[0] || i == L->notes[1])
                continue;
            if (i == p->dyn_ph && !L->dyn_in_place) {
                ph.p_offset = L->dyn_f;
                ph.p_vaddr = ph.p_paddr = L->dyn_v;
                ph.p_filesz = ph.p_memsz = L->dynsz;
                if (!L->two)
                    ph.p_flags = PF_R;   /* ld.so then reads it without relocating it in place */
            }
            if (!L->two && i == p->last_load)
                ph.p_memsz = L->vb_end - ph.p_vaddr;
            if (ph.p_type == PT_PHDR && L->room != ROOM_NOTES) {
                if (L->room == ROOM_MOVE) {
                    ph.p_offset = L->fp;
                    ph.p_vaddr = ph.p_paddr = L->vp;
                }
                ph.p_filesz = ph.p_memsz = L->phsz;
            }
            if (L->room == ROOM_GROW && i == L->g.l0)
                ph.p_filesz = ph.p_memsz = L->g.l0_filesz;
            int x = block_of(L->blk, 2, ph.p_vaddr);
            if (ph.p_type != PT_LOAD && ph.p_type != PT_PHDR && ph.p_memsz && x >= 0) {
                ph.p_offset += L->fx + L->blk[x].off - L->blk[x].fs;
                ph.p_vaddr += L->vx + L->blk[x].off - L->blk[x].bs;
                ph.p_paddr = ph.p_vaddr;
            }
            nph[k++] = ph;
            if (pass == 1 && i == p->last_load) {
                nph[k++] = load(L->fx, L->vx, L->xsz, PF_R | PF_X);
                if (L->two) {
                    nph[k] = load(L->fw, L->vw, L->wsz, PF_R | PF_W);
                    nph[k++].p_filesz = L->wfile;
                }
                if (L->room == ROOM_MOVE)
                    nph[k++] = load(L->fp, L->vp, L->phsz, PF_R);
            }
        }
    return k;
}

/* .dynamic: the runtime's DT_NEEDED first, so its definitions come before
 * libgcc_s's and libc's in symbol lookup (it interposes the unwinder's
 * entry points and pthread_exit for return probes), and KPRW_DT_TABLE. */
static void write_dynamic(const struct plan *p, const struct layout *L, uint8_t *b)
{
    Elf64_Dyn *nd = (Elf64_Dyn *)(b + L->dyn_f);
    const Elf64_Dyn *old = p->dyn;   /* (the input's bytes: in place, nd is their copy in b) */
    size_t cap = L->dyn_in_place ? L->dyn_cap : L->dynsz / sizeof(Elf64_Dyn), j = 0;
    if (L->add_needed)
        nd[j++] = (Elf64_Dyn){ .d_tag = DT_NEEDED, .d_un.d_val = p->strsz };
    nd[j++] = (Elf64_Dyn){ .d_tag = KPRW_DT_TABLE, .d_un.d_ptr = L->vx };   /* the table starts the r-x PT_LOAD */
    for (size_t i = 0; i < p->ndyn; i++) {
        Elf64_Dyn d = old[i];
        if (d.d_tag == KPRW_DT_TABLE)
            continue;   /* a pool added before and since cut out: this one replaces it */
        int x = addr_tag(d.d_tag) ? block_of(L->blk, 2, d.d_un.d_ptr) : -1;
        if (x >= 0)
            d.d_un.d_ptr += L->vx + L->blk[x].off - L->blk[x].bs;
        if (d.d_tag == DT_STRTAB && L->dsz)
            d.d_un.d_ptr = L->vx + L->off_ds;
        if (d.d_tag == DT_STRSZ)
            d.d_un.d_val = p->strsz + L->rtlen;
        nd[j++] = d;
    }
    while (j < cap)
        nd[j++] = (Elf64_Dyn){ .d_tag = DT_NULL };
}

/* Section names and headers: the moved sections, .dynamic and .dynstr
 * where they are now, the tail's sections at their new offsets, ours. */
static void write_sections(const struct image *img, const struct plan *p, const struct layout *L, uint8_t *b)
{
    const Elf64_Ehdr *oe = p->eh;
    const struct section *shs = &img->secs[oe->e_shstrndx];
    memcpy(b + L->fsh, shs->data, shs->size);
    uint32_t name_at[NEW_SECTIONS];
    uint64_t o = shs->size;
    for (int i = 0; i < NEW_SECTIONS - !L->static_rt; i++) {
        name_at[i] = (uint32_t)o;
        memcpy(b + L->fsh + o, section_names[i], strlen(section_names[i]) + 1);
        o += strlen(section_names[i]) + 1;
    }
    Elf64_Shdr *sh = (Elf64_Shdr *)(b + L->fsht);
    memcpy(sh, img->map + oe->e_shoff, img->nsecs * sizeof(Elf64_Shdr));
    uint64_t f = L->ftail;
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (sh[i].sh_flags & SHF_ALLOC) {
            int x = block_of(L->blk, 2, sh[i].sh_addr);
            if (x >= 0) {
                sh[i].sh_addr += L->vx + L->blk[x].off - L->blk[x].bs;
                sh[i].sh_offset += L->fx + L->blk[x].off - L->blk[x].fs;
            }
        } else if (s->offset >= L->keep && s->data && s->size && i != oe->e_shstrndx) {
            f = up(f, sec_align(img, s));
            memcpy(b + f, img->map + s->offset, s->size);
            sh[i].sh_offset = f;
            f += s->size;
        } else if (s->offset >= L->keep)
            sh[i].sh_offset = L->ftail;   /* empty, or no bytes: anywhere in the file */
    }
    sh[oe->e_shstrndx].sh_offset = L->fsh;
    sh[oe->e_shstrndx].sh_size = L->shstrsz;
    if (p->dynamic_sec != SIZE_MAX && !L->dyn_in_place) {
        sh[p->dynamic_sec].sh_addr = L->dyn_v;
        sh[p->dynamic_sec].sh_offset = L->dyn_f;
        sh[p->dynamic_sec].sh_size = L->dynsz;
        if (!L->two)
            sh[p->dynamic_sec].sh_flags = SHF_ALLOC;
    }
    if (p->dynstr_sec != SIZE_MAX && L->dsz) {
        sh[p->dynstr_sec].sh_addr = L->vx + L->off_ds;
        sh[p->dynstr_sec].sh_offset = L->fx + L->off_ds;
    }
    if (p->dynstr_sec != SIZE_MAX)
        sh[p->dynstr_sec].sh_size = p->strsz + L->rtlen;
    /* .symtab's symbols in the sections that now live elsewhere (section
     * symbols, _DYNAMIC, __abi_tag) follow them */
    for (size_t i = 1; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (s->type != SHT_SYMTAB || !s->data)
            continue;
        for (uint64_t at = sh[i].sh_offset; at + sizeof(Elf64_Sym) <= sh[i].sh_offset + s->size; at += sizeof(Elf64_Sym)) {
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
    size_t n = img->nsecs;
    sh[n++] = section(name_at[0], SHF_ALLOC | SHF_EXECINSTR, L->vx + L->off_tx, L->fx + L->off_tx, L->tx, 16);
    sh[n++] = section(name_at[1], SHF_ALLOC, L->vx, L->fx, L->tb, 64);
    if (L->two) {
        sh[n++] = nobits(name_at[2], L->vw + L->off_da, L->fw + L->off_da, L->da, 64);
        sh[n++] = section(name_at[3], SHF_ALLOC | SHF_WRITE, L->vw + L->off_sl, L->fw + L->off_sl, KPRW_SLOTS_SIZE, 8);
    } else {
        const Elf64_Phdr *last = &p->ph[p->last_load];
        uint64_t foff = last->p_offset + (L->vb_da - last->p_vaddr);   /* where it would be (NOBITS) */
        sh[n++] = nobits(name_at[2], L->vb_da, foff, L->da, 64);
        sh[n++] = nobits(name_at[3], L->vb_sl, foff + L->da, KPRW_SLOTS_SIZE, 8);
    }
    if (L->static_rt)
        sh[n++] = section(name_at[4], SHF_ALLOC | SHF_EXECINSTR, L->vx + L->off_rt, L->fx + L->off_rt, L->rt, 64);
}

/* The static runtime's blob after the detours, its head filled in (the
 * table, its area, the program's entry), and e_entry at its start
 * routine. */
static int write_static_rt(const struct image *img, const struct layout *L, const struct pool_sizes *sz,
                           uint8_t *b, char *err, size_t errlen)
{
    uint8_t *blob = b + L->fx + L->off_rt;
    uint64_t at = L->vx + L->off_rt, data = L->two ? L->vw + L->off_da : L->vb_da;
    struct kprs_head h;
    if (sz->rt_size < sizeof h)
        return addpool_fail(err, errlen, img->path, "the static runtime built into kprewrite is malformed");
    memcpy(blob, sz->rt, sz->rt_size);
    memcpy(&h, blob, sizeof h);
    if (h.magic != KPRS_HEAD_MAGIC || h.version != KPRS_VERSION || h.start_off >= sz->rt_size)
        return addpool_fail(err, errlen, img->path, "the static runtime built into kprewrite is malformed");
    h.table_rel = (int64_t)(L->vx - at);
    h.area_rel = (int64_t)(data + sz->rt_area_off - at);
    h.entry_rel = (int64_t)(img->ehdr.e_entry - at);
    h.sigaction_rel = sz->rt_sigaction ? (int64_t)(sz->rt_sigaction - at) : 0;
    h.hook_ok = sz->rt_hook_ok;
    for (unsigned k = 0; k < KPRS_EXITS; k++)
        h.exit_rel[k] = sz->rt_exits[k] ? (int64_t)(sz->rt_exits[k] - at) : 0;
    memcpy(blob, &h, sizeof h);
    ((Elf64_Ehdr *)b)->e_entry = at + h.start_off;
    return 0;
}

int pool_add(const struct image *img, const struct pool_sizes *sz, const char *runtime, uint8_t **out,
             size_t *out_size, char *err, size_t errlen)
{
    struct plan p;
    if (plan_read(img, &p, err, errlen) < 0)
        return -1;
    if (p.static_exe && runtime)
        return addpool_fail(err, errlen, img->path, "a static executable: the runtime library cannot be loaded "
                            "into it (no dynamic loader runs)");
    if (!p.static_exe && (!runtime || sz->rt))
        return addpool_fail(err, errlen, img->path, "not a static executable: the static runtime is not for it");
    const Elf64_Ehdr *oe = p.eh;
    const struct section *shs = &img->secs[oe->e_shstrndx];
    if (!shs->data || oe->e_shoff > img->map_size ||
        (uint64_t)(img->nsecs > oe->e_shnum ? img->nsecs : oe->e_shnum) * sizeof(Elf64_Shdr) > img->map_size - oe->e_shoff)
        return addpool_fail(err, errlen, img->path, "malformed section headers: cannot add a pool");
    if (sz->text >= PLAN_LIMIT || sz->table >= PLAN_LIMIT || sz->data >= PLAN_LIMIT || sz->rt_size >= PAGE * 64 ||
        (runtime && strlen(runtime) >= PAGE) || (!runtime && sz->rt_area_off >= sz->data))
        return addpool_fail(err, errlen, img->path, "the pool would not fit the address space");
    struct layout L;
    if (plan_layout(img, &p, sz, runtime, &L, err, errlen) < 0)
        return -1;
    uint8_t *b = calloc(1, L.total);
    if (!b)
        return addpool_fail(err, errlen, img->path, "out of memory adding a pool");
    memcpy(b, img->map, L.keep);
    img->isa->fill(b + L.fx + L.off_tx, L.tx);
    for (int i = 0; i < 2; i++)
        if (L.blk[i].bs < L.blk[i].be)
            memcpy(b + L.fx + L.blk[i].off, img->map + L.blk[i].fs, L.blk[i].be - L.blk[i].bs);
    if (write_phdrs(&p, &L, b) != L.nnew) {
        free(b);
        return addpool_fail(err, errlen, img->path, "program headers out of order: cannot add a pool");
    }
    /* .dynstr with the runtime's path: at its end (over what moved), or a copy */
    if (L.str_in_place)
        memcpy(b + img->secs[p.dynstr_sec].offset + p.strsz, runtime, L.rtlen);
    else if (L.add_needed) {
        memcpy(b + L.fx + L.off_ds, p.dynstr, p.strsz);
        memcpy(b + L.fx + L.off_ds + p.strsz, runtime, L.rtlen);
    }
    if (!L.static_rt)
        write_dynamic(&p, &L, b);
    write_sections(img, &p, &L, b);
    if (L.static_rt && write_static_rt(img, &L, sz, b, err, errlen) < 0) {
        free(b);
        return -1;
    }
    Elf64_Ehdr *e = (Elf64_Ehdr *)b;
    e->e_shoff = L.fsht;
    e->e_shnum = (uint16_t)L.nsh;
    e->e_phoff = L.room == ROOM_MOVE ? L.fp : oe->e_phoff;
    e->e_phnum = (uint16_t)L.nnew;
    *out = b;
    *out_size = L.total;
    return 0;
}
