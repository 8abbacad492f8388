/* Go's function table, .gopclntab (gopclntab.h), as Go's runtime/symtab.go
 * and debug/gosym read it. Every count and offset read from the file is
 * checked against the table's bytes before it is used (util/checked.h): a
 * table found by its section's name that fails a check is an error; a
 * header searched for that fails one is no table. */
#include "gopclntab.h"
#include "../arch/isa.h"
#include "../util/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GO116_MAGIC 0xfffffffau
#define GO118_MAGIC 0xfffffff0u
#define GO120_MAGIC 0xfffffff1u

struct tab {
    const uint8_t *b;           /* the table's bytes, from its header on */
    uint64_t size, addr;
    unsigned version;           /* 116, 118, 120 */
    uint64_t nfunc, text;       /* functions; 1.18+: the base of their entry offsets */
    uint64_t names, pcln;       /* funcnametab, pclntable (the function list): offsets from b */
    uint64_t pctab;             /* the pc-value tables */
    const char *why;            /* the first check that failed, and where it read */
    uint64_t at;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static bool fail(struct tab *t, uint64_t at, const char *why)
{
    t->why = why;
    t->at = at;
    return false;
}

/* The value of the 8-byte slot at addr: its relative relocation's addend
 * (the ISA's reloc_relative) where it has one (a PIE's textStart is 0 in
 * the file), else what the file holds. */
static uint64_t relocated(const struct image *img, uint64_t addr, uint64_t value)
{
    size_t i = 0;
    for (const struct section *r; (r = image_next_rela(img, &i)) != NULL;)
        for (size_t k = 0; k < rela_count(r); k++) {
            Elf64_Rela e = rela_get(r, k);
            if (e.r_offset == addr && ELF64_R_TYPE(e.r_info) == img->isa->reloc_relative)
                return (uint64_t)e.r_addend;
        }
    return value;
}

/* The header: the magic, two zero bytes, the instruction quantum (1 on
 * x86) and the pointer size (8), then 8-byte words: nfunc, nfiles,
 * textStart (1.18+ only), and the offsets of funcnametab, cutab, filetab,
 * pctab and pclntable from the header. pclntable starts with the function
 * list: nfunc + 1 entries of (entry, offset of the function's record),
 * each a uint32 (1.18+; entry from textStart) or a pointer (1.16: the
 * entry's address), the last the end of the code (its entry alone). */
static bool header(struct tab *t, const struct image *img)
{
    if (t->size < 8)
        return fail(t, 0, "shorter than its header");
    uint32_t magic = le32(t->b);
    t->version = magic == GO116_MAGIC ? 116 : magic == GO118_MAGIC ? 118 : magic == GO120_MAGIC ? 120 : 0;
    if (!t->version)
        return fail(t, 0, "no Go 1.16+ magic");
    if (t->b[4] || t->b[5] || t->b[6] != 1 || t->b[7] != 8)
        return fail(t, 4, "not an x86-64 table (instruction quantum 1, 8-byte pointers)");
    unsigned k = t->version == 116 ? 2 : 3;   /* the funcnametab offset's word */
    if (!ck_in(8, (k + 5) * 8, t->size))
        return fail(t, 8, "shorter than its header");
    const uint8_t *w = t->b + 8;
    uint64_t ent = t->version == 116 ? 16 : 8;
    t->nfunc = le64(w);
    if (t->version != 116)
        t->text = relocated(img, t->addr + 24, le64(w + 16));
    t->names = le64(w + 8 * k);
    t->pctab = le64(w + 8 * (k + 3));
    t->pcln = le64(w + 8 * (k + 4));
    if (t->nfunc == 0)
        return fail(t, 8, "no functions");
    if (t->names >= t->size)
        return fail(t, 8 + 8 * k, "its name table starts past its end");
    /* the entries, and the last one's entry field */
    if (!ck_array_in(t->pcln, t->nfunc, ent, t->size) || !ck_in(t->pcln + t->nfunc * ent, ent / 2, t->size))
        return fail(t, 8 + 8 * (k + 4), "its function list runs past its end");
    return true;
}

/* Entry i's address (i <= nfunc); false where 1.18's offset wraps it. */
static bool entry(const struct tab *t, uint64_t i, uint64_t *a)
{
    const uint8_t *e = t->b + t->pcln + i * (t->version == 116 ? 16 : 8);
    if (t->version == 116) {
        *a = le64(e);
        return true;
    }
    return ck_add(t->text, le32(e), a);
}

/* Function i's name (in funcnametab, NUL-terminated within the table) and
 * its funcFlag byte, from its record (runtime2.go's _func): nameoff at 8
 * (1.16: after the entry pointer) or 4, the flag after the funcID, at 41
 * (1.16, whose byte there is padding, 0; 1.20: after startLine) or 37. */
static bool record(struct tab *t, uint64_t i, const char **name, uint8_t *flag, uint8_t *funcid, uint64_t *pcsp)
{
    const uint8_t *e = t->b + t->pcln + i * (t->version == 116 ? 16 : 8);
    uint64_t off = t->version == 116 ? le64(e + 8) : le32(e + 4);
    uint64_t size = t->version == 118 ? 40 : 44, at;
    if (!ck_add(t->pcln, off, &at) || !ck_in(at, size, t->size))
        return fail(t, (uint64_t)(e - t->b), "a function's record lies outside the table");
    const uint8_t *f = t->b + at;
    int32_t nameoff = (int32_t)le32(f + (t->version == 116 ? 8 : 4));
    if (nameoff < 0 || (uint64_t)nameoff >= t->size - t->names)
        return fail(t, at, "a function's name lies outside the table");
    const char *s = (const char *)t->b + t->names + (uint64_t)nameoff;
    if (!*s || !memchr(s, 0, t->size - t->names - (uint64_t)nameoff))
        return fail(t, at, "a function's name is empty or runs past the table's end");
    *name = s;
    *flag = f[t->version == 118 ? 37 : 41];
    *funcid = f[t->version == 118 ? 36 : 40];
    *pcsp = le32(f + (t->version == 116 ? 20 : 16));
    return true;
}

/* A varint at *at (below lim), as Go writes them; false past lim or 10 bytes. */
static bool varint(const uint8_t *b, uint64_t *at, uint64_t lim, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 70 && *at < lim; shift += 7) {
        uint8_t c = b[(*at)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

/* How many bytes of code the function's SP table (pcsp, at pctab + off)
 * covers: its instructions without the int3 padding up to the next
 * function; 0 where the table is absent or unreadable. Pairs of varints
 * (value delta, pc delta), ended by a value delta of 0 after the first. */
static uint64_t code_size(const struct tab *t, uint64_t off)
{
    uint64_t at, pc = 0, v, d;
    if (!off || !ck_add(t->pctab, off, &at) || at >= t->size)
        return 0;
    for (bool first = true;; first = false) {
        if (!varint(t->b, &at, t->size, &v))
            return 0;
        if (v == 0 && !first)
            return pc;
        if (!varint(t->b, &at, t->size, &d) || !ck_add(pc, d, &pc))
            return 0;
    }
}

/* Every function, each in one section of code, in order of entry, ending
 * where its SP table does (else at the next one's entry). */
static bool functions(struct tab *t, const struct image *img, struct gopclntab *g)
{
    uint64_t start, end;
    if (!(g->v = calloc(t->nfunc, sizeof *g->v)))   /* (nfunc entries fit in the table) */
        return fail(t, 0, "out of memory");
    if (!entry(t, 0, &start))
        return fail(t, t->pcln, "an entry runs past the end of the address space");
    for (uint64_t i = 0; i < t->nfunc; i++, start = end) {
        uint64_t at = t->pcln + (i + 1) * (t->version == 116 ? 16 : 8);
        const char *name;
        uint8_t flag, funcid;
        uint64_t pcsp, size;
        if (!entry(t, i + 1, &end))
            return fail(t, at, "an entry runs past the end of the address space");
        if (end < start)
            return fail(t, at, "its functions are not in the order of their entries");
        if (!record(t, i, &name, &flag, &funcid, &pcsp))
            return false;
        if (end == start)
            continue;   /* nothing between two entries */
        size = code_size(t, pcsp);
        uint64_t fend = size && size < end - start ? start + size : end;   /* (the padding after it is no one's) */
        const struct section *s = image_section_at(img, start);
        if (!s || !(s->flags & SHF_EXECINSTR) || !ck_within(start, end - start, s->addr, s->size))
            return fail(t, at, "a function lies outside the sections of code");
        g->v[g->n++] = (struct go_func){ start, fend, name, flag, funcid };
    }
    return true;
}

static int cmp_by_name(const void *a, const void *b)
{
    const struct go_func *x = *(const struct go_func *const *)a, *y = *(const struct go_func *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->start > y->start) - (x->start < y->start);
}

/* Does a wrapper call a Go function from assembly (it sets up Go's
 * register ABI: the ISA knows how)? */
static bool abi0_wrapper(const struct image *img, const struct go_func *w)
{
    size_t avail;
    const uint8_t *c = image_read(img, w->start, &avail);
    return c && img->isa->enters_go_abi &&
           img->isa->enters_go_abi(c, w->end - w->start < avail ? w->end - w->start : avail);
}

/* Go's table names an ABI wrapper (funcID wrapper) as the function it
 * wraps; Go's symbol table calls the ABI0 one of the two NAME.abi0: the
 * function in assembly (ASM flag, Go 1.19+), or the wrapper that calls a
 * Go function from assembly (it sets up the register ABI; where both are
 * marked wrappers, the one that does). So named here too: every function
 * has a name of its own, and --probe NAME takes the one Go's tools call
 * NAME. false: no memory. */
static bool abi0_names(const struct image *img, struct gopclntab *g)
{
    const struct go_func **v = malloc(g->n * sizeof *v + 1);
    struct go_func **abi0 = malloc(g->n * sizeof *abi0 + 1);
    size_t n = 0, bytes = 1;
    if (!v || !abi0) {
        free(v), free(abi0);
        return false;
    }
    for (size_t i = 0; i < g->n; i++)
        v[i] = &g->v[i];
    qsort(v, g->n, sizeof *v, cmp_by_name);
    for (size_t i = 0; i + 1 < g->n; i++) {
        if (strcmp(v[i]->name, v[i + 1]->name) || (i + 2 < g->n && !strcmp(v[i]->name, v[i + 2]->name)) ||
            (i && !strcmp(v[i - 1]->name, v[i]->name)))
            continue;   /* (a pair of one name, no more) */
        struct go_func *a = (struct go_func *)v[i], *b = (struct go_func *)v[i + 1];
        bool wa = a->funcid == GO_FUNCID_WRAPPER, wb = b->funcid == GO_FUNCID_WRAPPER;
        if (wa && wb) {   /* a function Go counts as a wrapper itself (reflect.callMethod) */
            bool ea = abi0_wrapper(img, a), eb = abi0_wrapper(img, b);
            if (ea == eb)
                continue;
            abi0[n] = ea ? a : b;
        } else if (wa != wb) {
            struct go_func *w = wa ? a : b, *o = wa ? b : a;
            abi0[n] = (o->flag & GO_FLAG_ASM) || !abi0_wrapper(img, w) ? o : w;
        } else {
            continue;   /* not a function and its wrapper */
        }
        bytes += strlen(abi0[n++]->name) + sizeof ".abi0";
    }
    free(v);
    char *out = g->abi0_names = malloc(bytes);
    for (size_t k = 0; out && k < n; k++) {
        size_t len = strlen(abi0[k]->name) + sizeof ".abi0";
        snprintf(out, len, "%s.abi0", abi0[k]->name);
        abi0[k]->name = out;
        out += len;
    }
    free(abi0);
    return g->abi0_names != NULL;
}

static bool parse(struct tab *t, const struct image *img, struct gopclntab *g)
{
    if (header(t, img) && functions(t, img, g)) {
        if (!abi0_names(img, g))
            return fail(t, 0, "out of memory");
        g->addr = t->addr;
        g->version = t->version;
        return true;
    }
    gopclntab_free(g);
    return false;
}

static bool named_table(const char *name)
{
    size_t n = strlen(name), k = sizeof ".gopclntab" - 1;
    return n >= k && strcmp(name + n - k, ".gopclntab") == 0;
}

/* A header searched for in allocated data that is not code (an external
 * linker may have merged the section, or named it otherwise): at an
 * 8-aligned address, the magic and the four bytes after it exactly as
 * above, then the whole table passes every check parse() makes -- the
 * header's offsets inside the section, every function's record and name
 * inside it, the entries in order and each function inside one section
 * of code. */
static void search(const struct image *img, struct gopclntab *g)
{
    for (size_t i = 0; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (!s->data || !(s->flags & SHF_ALLOC) || (s->flags & SHF_EXECINSTR) || s->type != SHT_PROGBITS)
            continue;
        for (uint64_t o = (8 - (s->addr & 7)) & 7; o + 8 <= s->size; o += 8) {
            uint32_t m = le32(s->data + o);
            if ((m != GO116_MAGIC && m != GO118_MAGIC && m != GO120_MAGIC) || s->data[o + 4] || s->data[o + 5] ||
                s->data[o + 6] != 1 || s->data[o + 7] != 8)
                continue;
            struct tab t = { .b = s->data + o, .size = s->size - o, .addr = s->addr + o };
            if (parse(&t, img, g))
                return;
        }
    }
}

bool gopclntab_go_image(const struct image *img)
{
    for (size_t i = 0; i < img->nsecs; i++)
        if (img->secs[i].name && named_table(img->secs[i].name))
            return true;
    return image_section_by_name(img, ".go.buildinfo") || image_section_by_name(img, ".note.go.buildid");
}

int gopclntab_read(struct gopclntab *g, const struct image *img, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    for (size_t i = 0; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (!named_table(s->name) || !s->data || !(s->flags & SHF_ALLOC))
            continue;
        struct tab t = { .b = s->data, .size = s->size, .addr = s->addr };
        if (parse(&t, img, g))
            return 0;
        snprintf(err, errlen, "%s: %s+0x%llx: malformed Go function table: %s", img->path, s->name,
                 (unsigned long long)t.at, t.why);
        return -1;
    }
    search(img, g);
    /* a Go image (the linker's build info or build ID) whose table was not
     * found, or failed the checks: its Go code would be probed as code
     * nobody named, without the rules Go's code needs (golang.c) */
    const char *go = image_section_by_name(img, ".go.buildinfo") ? ".go.buildinfo"
                   : image_section_by_name(img, ".note.go.buildid") ? ".note.go.buildid" : NULL;   /* (gopclntab_go_image) */
    if (!g->n && go) {
        snprintf(err, errlen, "%s: %s: a Go image whose function table (.gopclntab) was not found or is not one "
                 "kprewrite reads (Go 1.16+, a Go 1.18+ PIE): its Go code is not probed without Go's rules",
                 img->path, go);
        return -1;
    }
    return 0;
}

void gopclntab_free(struct gopclntab *g)
{
    free(g->v);
    free(g->abi0_names);
    memset(g, 0, sizeof *g);
}
