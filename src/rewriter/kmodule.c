/*
 * Probes baked into a loadable kernel module (kmodule.h): the module's
 * preview, and the module written back with the pool and its relocations.
 */
#include "kmodule.h"
#include "atomic-write.h"
#include "emit.h"
#include "plan.h"
#include "table.h"
#include "../arch/x86/decode.h"
#include "../arch/isa.h"
#include "../util/array.h"
#include "../util/checked.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the preview puts things: the module in the kernel's module area,
 * its undefined symbols in the kernel's text, each 64 bytes apart. Only
 * their distances matter (all within 32-bit reach, as the loader's). */
#define PREVIEW_MODULE_BASE 0xffffffffa0000000ull
#define PREVIEW_EXTERN_BASE 0xffffffff81000000ull
#define PREVIEW_EXTERN_STEP 64
#define PREVIEW_GAP 64   /* between sections: a section's end is no other's start */

/* What kmodule_bake adds: the names the runtime and the loader see. */
#define KMOD_SYM_TEXT "__kprewrite_text"
#define KMOD_SYM_TABLE "__kprewrite_table"
#define KMOD_SYM_STATE "__kprewrite_state"
#define MODULE_SIG_MAGIC "~Module signature appended~\n"

struct kmodule {
    const char *path;
    uint8_t *file;
    size_t size;
    unsigned mode;
    Elf64_Ehdr eh;
    const struct isa *isa;     /* its instruction set, by e_machine */
    Elf64_Shdr *sh;            /* the file's section headers */
    size_t n;                  /* how many */
    uint64_t *addr;            /* each allocated section's preview address (0: not allocated) */
    size_t symtab, strtab;
    Elf64_Sym *syms;
    size_t nsyms;
    uint64_t *ext;             /* undefined symbol i's preview address */
    uint64_t end;              /* the first address after the sections */
    uint64_t ext_end;
    uint64_t dispatch;         /* kprewrite_dispatch's preview address */
    size_t dispatch_sym;       /* its index if the module names it already (0: added) */
    struct image pool_img;     /* the preview with a pool (kmodule_bake) */
    bool pool_open;
};

static int fail(char *err, size_t errlen, const char *fmt, const char *path, const char *what)
{
    snprintf(err, errlen, fmt, path, what);
    return -1;
}

bool kmodule_is_relocatable(const char *path)
{
    Elf64_Ehdr eh;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool rel = read(fd, &eh, sizeof eh) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
               eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_type == ET_REL;
    close(fd);
    return rel;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

static const char *sec_name(const struct kmodule *km, size_t i)
{
    const Elf64_Shdr *ss = &km->sh[km->eh.e_shstrndx];
    if (km->sh[i].sh_name >= ss->sh_size)
        return "?";
    return (const char *)km->file + ss->sh_offset + km->sh[i].sh_name;
}

static const char *sym_name(const struct kmodule *km, const Elf64_Sym *s)
{
    const Elf64_Shdr *st = &km->sh[km->strtab];
    return s->st_name < st->sh_size ? (const char *)km->file + st->sh_offset + s->st_name : "?";
}

/* A symbol's preview value (S); false for one no relocation of loaded
 * code may use (common, or in a section that is not loaded). */
static bool sym_value(const struct kmodule *km, size_t i, uint64_t *v)
{
    const Elf64_Sym *s = &km->syms[i];
    if (s->st_shndx == SHN_UNDEF)
        *v = km->ext[i];
    else if (s->st_shndx == SHN_ABS)
        *v = s->st_value;
    else if (s->st_shndx < km->n && km->addr[s->st_shndx])
        return ck_add(km->addr[s->st_shndx], s->st_value, v);   /* a value past 2^64 names nothing */
    else
        return false;
    return true;
}

/* The file's structure, checked: every section in the file, one symbol
 * table, a machine kprewrite knows, no signature, no pool yet. */
static int check_file(struct kmodule *km, char *err, size_t errlen)
{
    const char *p = km->path;
    if (km->size < sizeof km->eh)
        return fail(err, errlen, "%s: %s", p, "truncated ELF header");
    memcpy(&km->eh, km->file, sizeof km->eh);
    km->isa = isa_for_machine(km->eh.e_machine);
    if (!km->isa || km->eh.e_ident[EI_DATA] != ELFDATA2LSB)
        return fail(err, errlen, "%s: unsupported machine: %s only", p, isa_names());
    if (km->eh.e_shentsize != sizeof(Elf64_Shdr) || km->eh.e_shnum == 0 || km->eh.e_shoff > km->size ||
        !ck_array_in(km->eh.e_shoff, km->eh.e_shnum, sizeof(Elf64_Shdr), km->size) ||
        km->eh.e_shstrndx >= km->eh.e_shnum)
        return fail(err, errlen, "%s: %s", p, "malformed section headers");
    if (km->eh.e_shnum + 8 >= SHN_LORESERVE)
        return fail(err, errlen, "%s: %s", p, "too many sections");
    if (km->size >= sizeof MODULE_SIG_MAGIC - 1 &&
        memcmp(km->file + km->size - (sizeof MODULE_SIG_MAGIC - 1), MODULE_SIG_MAGIC, sizeof MODULE_SIG_MAGIC - 1) == 0)
        return fail(err, errlen, "%s: %s", p, "the module is signed: bake probes into it before signing it "
                    "(scripts/sign-file), or strip the signature first");
    km->n = km->eh.e_shnum;
    km->sh = malloc(km->n * sizeof *km->sh);
    km->addr = calloc(km->n, sizeof *km->addr);
    if (!km->sh || !km->addr)
        return fail(err, errlen, "%s: %s", p, "out of memory");
    memcpy(km->sh, km->file + km->eh.e_shoff, km->n * sizeof *km->sh);
    const Elf64_Shdr *ss = &km->sh[km->eh.e_shstrndx];
    if (ss->sh_type == SHT_NOBITS || !ck_in(ss->sh_offset, ss->sh_size, km->size) ||
        !ss->sh_size || km->file[ss->sh_offset + ss->sh_size - 1] != 0)
        return fail(err, errlen, "%s: %s", p, "malformed section name table");
    uint64_t total = 0;
    for (size_t i = 1; i < km->n; i++) {
        const Elf64_Shdr *s = &km->sh[i];
        if (s->sh_type != SHT_NOBITS && !ck_in(s->sh_offset, s->sh_size, km->size))
            return fail(err, errlen, "%s: section %s extends past the end of the file", p, sec_name(km, i));
        /* what a module can be: its sections fit the module area together */
        if (s->sh_addralign > 0x10000 ||
            ((s->sh_flags & SHF_ALLOC) && (s->sh_size > 0x40000000 ||
                                           (total += s->sh_size + s->sh_addralign) > 0x40000000)))
            return fail(err, errlen, "%s: section %s is too large or too aligned for a module", p, sec_name(km, i));
        if (s->sh_type == SHT_SYMTAB) {
            if (km->symtab || s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link == 0 || s->sh_link >= km->n ||
                km->sh[s->sh_link].sh_type != SHT_STRTAB)
                return fail(err, errlen, "%s: %s", p, "malformed or second symbol table");
            km->symtab = i;
            km->strtab = s->sh_link;
        }
        if (s->sh_type == SHT_REL && (km->sh[s->sh_info < km->n ? s->sh_info : 0].sh_flags & SHF_ALLOC))
            return fail(err, errlen, "%s: SHT_REL relocations (%s modules carry RELA)", p, km->isa->name);
        if (strcmp(sec_name(km, i), KPRW_SEC_TABLE) == 0)
            return fail(err, errlen, "%s: %s", p, "the module holds baked probes already: bake every probe "
                        "into the module as it was built");
    }
    if (!km->symtab)
        return fail(err, errlen, "%s: %s", p, "no symbol table (a stripped module cannot be loaded either)");
    /* names are read up to their NUL: the symbols' string table ends with
     * one (the section names' was checked above) */
    const Elf64_Shdr *st = &km->sh[km->strtab];
    if (st->sh_type == SHT_NOBITS || (st->sh_size && km->file[st->sh_offset + st->sh_size - 1] != 0))
        return fail(err, errlen, "%s: %s", p, "malformed string table (no NUL at its end)");
    km->nsyms = km->sh[km->symtab].sh_size / sizeof(Elf64_Sym);
    km->syms = malloc((km->nsyms ? km->nsyms : 1) * sizeof *km->syms);
    km->ext = calloc(km->nsyms ? km->nsyms : 1, sizeof *km->ext);
    if (!km->syms || !km->ext)
        return fail(err, errlen, "%s: %s", p, "out of memory");
    memcpy(km->syms, km->file + km->sh[km->symtab].sh_offset, km->nsyms * sizeof *km->syms);
    return 0;
}

/* Preview addresses: the allocated sections in order, the undefined
 * symbols (and kprewrite_dispatch) in the kernel's text. */
static int lay_out(struct kmodule *km, char *err, size_t errlen)
{
    uint64_t at = PREVIEW_MODULE_BASE;
    for (size_t i = 1; i < km->n; i++) {
        if (!(km->sh[i].sh_flags & SHF_ALLOC))
            continue;
        at = align_up(at, km->sh[i].sh_addralign ? km->sh[i].sh_addralign : 1);
        km->addr[i] = at;
        at = align_up(at + km->sh[i].sh_size + PREVIEW_GAP, 64);
    }
    km->end = at;
    uint64_t ext = PREVIEW_EXTERN_BASE;
    for (size_t i = 1; i < km->nsyms; i++) {
        const Elf64_Sym *s = &km->syms[i];
        if (s->st_shndx == SHN_COMMON)
            return fail(err, errlen, "%s: common symbol %s (build modules with -fno-common)", km->path,
                        sym_name(km, s));
        if (s->st_shndx != SHN_UNDEF)
            continue;
        km->ext[i] = ext;
        ext += PREVIEW_EXTERN_STEP;
        if (strcmp(sym_name(km, s), KPRW_KERNEL_DISPATCH) == 0) {
            km->dispatch_sym = i;
            km->dispatch = km->ext[i];
        }
    }
    if (!km->dispatch) {
        km->dispatch = ext;
        ext += PREVIEW_EXTERN_STEP;
    }
    km->ext_end = ext;
    if (km->end - PREVIEW_EXTERN_BASE > 0x7fff0000ull)
        return fail(err, errlen, "%s: %s", km->path, "the module is too large for 32-bit reach");
    return 0;
}

/* ------------------------------------------------------------ the preview */

struct pool_req { size_t text, table, data; };   /* sizes; all 0: no pool */

struct elf_out {
    uint8_t *buf;
    size_t size, cap;
    Elf64_Shdr *sh;
    size_t nsh, capsh;
    char *err;
    size_t errlen;
};

static bool out_reserve(struct elf_out *o, size_t n)
{
    if (!ARRAY_RESERVE(o->buf, o->cap, o->size + n)) {
        snprintf(o->err, o->errlen, "out of memory");
        return false;
    }
    return true;
}

/* Appends section data (NULL: zeros) aligned to align; its offset. */
static size_t out_data(struct elf_out *o, const void *data, size_t n, uint64_t align)
{
    size_t at = align_up(o->size, align ? align : 1);
    if (!out_reserve(o, at - o->size + n))
        return SIZE_MAX;
    memset(o->buf + o->size, 0, at - o->size);
    if (data)
        memcpy(o->buf + at, data, n);
    else
        memset(o->buf + at, 0, n);
    o->size = at + n;
    return at;
}

static bool out_section(struct elf_out *o, Elf64_Shdr s)
{
    if (!ARRAY_PUSH(o->sh, o->nsh, o->capsh, s)) {
        snprintf(o->err, o->errlen, "out of memory");
        return false;
    }
    return true;
}

/* Header and section headers at the end; the ELF's bytes in *buf. */
static bool out_finish(struct elf_out *o, const Elf64_Ehdr *eh, uint16_t type)
{
    size_t shoff = out_data(o, o->sh, o->nsh * sizeof *o->sh, 8);
    if (shoff == SIZE_MAX)
        return false;
    Elf64_Ehdr h = *eh;
    h.e_type = type;
    h.e_phoff = 0;
    h.e_phnum = 0;
    h.e_shoff = shoff;
    h.e_shnum = (uint16_t)o->nsh;
    memcpy(o->buf, &h, sizeof h);
    return true;
}

static size_t str_add(char **tab, size_t *len, size_t *cap, const char *s)
{
    size_t at = *len, n = strlen(s) + 1;
    if (!ARRAY_RESERVE(*tab, *cap, at + n))
        return SIZE_MAX;
    memcpy(*tab + at, s, n);
    *len = at + n;
    return at;
}

struct names { char *v; size_t n, cap; };

static bool names_init(struct names *nm, const struct kmodule *km, size_t sec)
{
    nm->n = nm->cap = 0;
    nm->v = NULL;
    const Elf64_Shdr *s = &km->sh[sec];
    if (!ARRAY_RESERVE(nm->v, nm->cap, s->sh_size + 1))
        return false;
    memcpy(nm->v, km->file + s->sh_offset, s->sh_size);
    nm->n = s->sh_size;
    return true;
}

/* The module's sections, in order, into o: the symbol and string tables
 * from syms and str, the section name table's place kept for out_close;
 * addr (NULL: as they are) gives each section's address. */
static bool copy_sections(struct elf_out *o, const struct kmodule *km, const Elf64_Sym *syms, size_t nsyms,
                          const struct names *str, const uint64_t *addr)
{
    if (!out_section(o, km->sh[0]))
        return false;
    for (size_t i = 1; i < km->n; i++) {
        Elf64_Shdr s = km->sh[i];
        /* (check_file: a section with bytes has them in the file) */
        const void *data = s.sh_type != SHT_NOBITS ? km->file + s.sh_offset : NULL;
        if (i == km->symtab) {
            data = syms;
            s.sh_size = nsyms * sizeof *syms;
        } else if (i == km->strtab) {
            data = str->v;
            s.sh_size = str->n;
        } else if (i == km->eh.e_shstrndx) {
            s.sh_size = 0;   /* written last: names are added to it */
        }
        if (addr)
            s.sh_addr = addr[i];
        if (s.sh_size && s.sh_type != SHT_NOBITS &&
            (s.sh_offset = out_data(o, data, s.sh_size, s.sh_addralign)) == SIZE_MAX)
            return false;
        if (!out_section(o, s))
            return false;
    }
    return true;
}

/* The section name table at its place, the header and section headers;
 * the ELF's bytes handed over to *buf. */
static bool out_close(struct elf_out *o, const struct kmodule *km, const struct names *shstr, uint16_t type,
                      uint8_t **buf, size_t *size)
{
    Elf64_Shdr ss = km->sh[km->eh.e_shstrndx];
    if ((ss.sh_offset = out_data(o, shstr->v, shstr->n, 1)) == SIZE_MAX)
        return false;
    ss.sh_size = shstr->n;
    o->sh[km->eh.e_shstrndx] = ss;
    if (!out_finish(o, &km->eh, type))
        return false;
    *buf = o->buf;
    *size = o->size;
    o->buf = NULL;
    return true;
}

struct syms { Elf64_Sym *v; size_t n, cap; };

/* The preview's symbols: the module's at their preview values (undefined
 * ones in the extern area), then kprewrite_dispatch there when the module
 * does not name it, and (pool sizes given) the pool's symbols a kernel's
 * has, its three sections at pool_at; their names added to str. false:
 * out of memory. */
static bool preview_symbols(const struct kmodule *km, const struct pool_req *pool, struct syms *syms,
                            struct names *str, uint64_t pool_at[3])
{
    for (size_t i = 0; i < km->nsyms; i++) {
        Elf64_Sym s = km->syms[i];
        uint64_t v;
        if (i && sym_value(km, i, &v)) {
            s.st_value = v;
            if (s.st_shndx == SHN_UNDEF) {
                s.st_shndx = (uint16_t)km->n;   /* the extern area */
                s.st_info = ELF64_ST_INFO(ELF64_ST_BIND(s.st_info), STT_NOTYPE);
            }
        }
        if (!ARRAY_PUSH(syms->v, syms->n, syms->cap, s))
            return false;
    }
    struct added { const char *name; uint16_t sec; uint64_t value; } add[7];
    size_t nadd = 0;
    if (!km->dispatch_sym)
        add[nadd++] = (struct added){ KPRW_KERNEL_DISPATCH, (uint16_t)km->n, km->dispatch };
    if (pool) {
        static const char *const names[3] = { KPRW_STR(KPRW_KPOOL_TEXT), KPRW_STR(KPRW_KPOOL_TABLE),
                                              KPRW_STR(KPRW_KPOOL_STATE) };
        static const char *const ends[3] = { KPRW_STR(KPRW_KPOOL_TEXT_END), KPRW_STR(KPRW_KPOOL_TABLE_END),
                                             KPRW_STR(KPRW_KPOOL_STATE_END) };
        const size_t sz[3] = { pool->text, pool->table, pool->data };
        uint64_t at = km->end;
        for (int k = 0; k < 3; k++) {
            pool_at[k] = at;
            add[nadd++] = (struct added){ names[k], (uint16_t)(km->n + 1 + k), at };
            add[nadd++] = (struct added){ ends[k], (uint16_t)(km->n + 1 + k), at + sz[k] };
            at = align_up(at + sz[k] + PREVIEW_GAP, 64);
        }
    }
    for (size_t k = 0; k < nadd; k++) {
        size_t name = str_add(&str->v, &str->n, &str->cap, add[k].name);
        Elf64_Sym s = { (uint32_t)name, ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE), 0, add[k].sec, add[k].value, 0 };
        if (name == SIZE_MAX || !ARRAY_PUSH(syms->v, syms->n, syms->cap, s))
            return false;
    }
    return true;
}

/* After the module's sections in o: the extern area and (pool sizes
 * given) the pool's three sections at pool_at, their names added to
 * shstr. false with err. */
static bool preview_areas(struct elf_out *o, const struct kmodule *km, const struct pool_req *pool,
                          struct names *shstr, const uint64_t pool_at[3])
{
    const char *extra[4] = { ".kprewrite.extern", KPRW_SEC_TEXT, KPRW_SEC_TABLE, KPRW_SEC_DATA };
    const uint64_t flags[4] = { SHF_ALLOC, SHF_ALLOC | SHF_EXECINSTR, SHF_ALLOC, SHF_ALLOC | SHF_WRITE };
    const size_t sizes[4] = { km->ext_end - PREVIEW_EXTERN_BASE, pool ? pool->text : 0, pool ? pool->table : 0,
                              pool ? pool->data : 0 };
    for (int k = 0; k < (pool ? 4 : 1); k++) {
        size_t name = str_add(&shstr->v, &shstr->n, &shstr->cap, extra[k]);
        Elf64_Shdr s = { (uint32_t)name, k ? SHT_PROGBITS : SHT_NOBITS, flags[k],
                         k ? pool_at[k - 1] : PREVIEW_EXTERN_BASE, 0, sizes[k], 0, 0, 64, 0 };
        if (name == SIZE_MAX) {
            snprintf(o->err, o->errlen, "%s: out of memory", km->path);
            return false;
        }
        if (k && (s.sh_offset = out_data(o, NULL, sizes[k], 64)) == SIZE_MAX)
            return false;
        if (k == 1)
            km->isa->fill(o->buf + s.sh_offset, sizes[k]);   /* the pool's text */
        if (!out_section(o, s))
            return false;
    }
    return true;
}

/* The relocations of the module's loaded sections in o: their offsets
 * become preview addresses, and they are applied as the kernel's module
 * loader would. false with err for one it would not apply. */
static bool preview_relocate(struct elf_out *o, const struct kmodule *km)
{
    char *err = o->err;
    size_t errlen = o->errlen;
    for (size_t i = 1; i < km->n; i++) {
        Elf64_Shdr *r = &o->sh[i];
        size_t t = r->sh_info;
        if (r->sh_type != SHT_RELA || t >= km->n || !(km->sh[t].sh_flags & SHF_ALLOC))
            continue;
        if (r->sh_link != km->symtab || r->sh_entsize != sizeof(Elf64_Rela) || km->sh[t].sh_type == SHT_NOBITS) {
            snprintf(err, errlen, "%s: relocation section %s is malformed", km->path, sec_name(km, i));
            return false;
        }
        for (size_t k = 0; k < r->sh_size / sizeof(Elf64_Rela); k++) {
            Elf64_Rela rel;
            memcpy(&rel, o->buf + r->sh_offset + k * sizeof rel, sizeof rel);
            uint32_t type = (uint32_t)ELF64_R_TYPE(rel.r_info);
            size_t si = ELF64_R_SYM(rel.r_info);
            bool pcrel;
            int w = km->isa->module_reloc_width(type, &pcrel);
            uint64_t S = 0;
            if (w < 0 || si >= km->nsyms || (si && !sym_value(km, si, &S)) ||
                rel.r_offset > km->sh[t].sh_size || (uint64_t)w > km->sh[t].sh_size - rel.r_offset) {
                snprintf(err, errlen, "%s: %s+0x%llx: relocation type %u against %s: not one the kernel's module "
                         "loader applies there", km->path, sec_name(km, t), (unsigned long long)rel.r_offset, type,
                         si < km->nsyms ? sym_name(km, &km->syms[si]) : "a bad symbol");
                return false;
            }
            uint64_t P = km->addr[t] + rel.r_offset;
            /* (a field of w > 0 bytes lies in the section: then its bytes were copied to o) */
            if (w > 0 && !km->isa->module_reloc_apply(type, S, rel.r_addend, P, o->buf + o->sh[t].sh_offset + rel.r_offset)) {
                snprintf(err, errlen, "%s: %s+0x%llx: relocation type %u against %s does not fit", km->path,
                         sec_name(km, t), (unsigned long long)rel.r_offset, type, sym_name(km, &km->syms[si]));
                return false;
            }
            rel.r_offset = P;
            memcpy(o->buf + r->sh_offset + k * sizeof rel, &rel, sizeof rel);
        }
    }
    return true;
}

/* The preview: sections at their preview addresses with relocations
 * applied, symbols valued there, an extern area for the undefined ones,
 * and (pool sizes given) the pool with the symbols a kernel's has. */
static int build_preview(struct kmodule *km, const struct pool_req *pool, uint8_t **buf, size_t *size,
                         char *err, size_t errlen)
{
    struct elf_out o = { .err = err, .errlen = errlen };
    struct names shstr = { 0 }, str = { 0 };   /* (freed also when the first fails) */
    struct syms syms = { 0 };
    uint64_t pool_at[3] = { 0 };
    int rc = -1;
    if (!names_init(&shstr, km, km->eh.e_shstrndx) || !names_init(&str, km, km->strtab) ||
        !out_reserve(&o, sizeof(Elf64_Ehdr))) {
        snprintf(err, errlen, "%s: out of memory", km->path);
        goto out;
    }
    o.size = sizeof(Elf64_Ehdr);
    memset(o.buf, 0, o.size);
    if (!preview_symbols(km, pool, &syms, &str, pool_at)) {
        snprintf(err, errlen, "%s: out of memory", km->path);
        goto out;
    }
    if (copy_sections(&o, km, syms.v, syms.n, &str, km->addr) && preview_areas(&o, km, pool, &shstr, pool_at) &&
        preview_relocate(&o, km) && out_close(&o, km, &shstr, ET_EXEC, buf, size))
        rc = 0;
out:
    free(o.buf);
    free(o.sh);
    free(shstr.v);
    free(str.v);
    free(syms.v);
    return rc;
}

static int open_preview(struct kmodule *km, const struct pool_req *pool, struct image *img, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t size;
    if (build_preview(km, pool, &buf, &size, err, errlen) < 0)
        return -1;
    if (image_open_mem(img, km->path, buf, size, km->mode, err, errlen) < 0)
        return -1;
    img->kind = IMG_VMLINUX;   /* kernel code: the kernel's tables and detours (its kind: kind_module) */
    return 0;
}

void kmodule_free(struct kmodule *km)
{
    if (!km)
        return;
    if (km->pool_open)
        image_close(&km->pool_img);
    free(km->file);
    free(km->sh);
    free(km->addr);
    free(km->syms);
    free(km->ext);
    free(km);
}

int kmodule_open(struct kmodule **kmp, struct image *img, const char *path, char *err, size_t errlen)
{
    struct kmodule *km = calloc(1, sizeof *km);
    struct stat st;
    int fd = -1;
    *kmp = NULL;
    if (!km)
        return fail(err, errlen, "%s: %s", path, "out of memory");
    km->path = path;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    km->size = (size_t)st.st_size;
    km->mode = st.st_mode & 07777;
    km->file = malloc(km->size ? km->size : 1);
    if (!km->file) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    for (size_t got = 0; got < km->size;) {
        ssize_t r = read(fd, km->file + got, km->size - got);
        if (r <= 0) {
            snprintf(err, errlen, "%s: cannot read: %s", path, r < 0 ? strerror(errno) : "short file");
            goto fail;
        }
        got += (size_t)r;
    }
    close(fd);
    fd = -1;
    if (check_file(km, err, errlen) < 0 || lay_out(km, err, errlen) < 0 || open_preview(km, NULL, img, err, errlen) < 0)
        goto fail;
    *kmp = km;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    kmodule_free(km);
    return -1;
}

/* ------------------------------------------------------- the output */

struct relas { Elf64_Rela *v; size_t n, cap; };

/* What writing the module needs at hand. */
struct kwrite {
    struct kmodule *km;
    const struct image *pv;
    const struct pool_sections *ps;
    size_t text_used;
    size_t nsyms;              /* the module's symbols; ours follow */
    size_t sym_text, sym_table, sym_state, sym_dispatch;
    size_t *secsym;            /* a symbol each section can be named by (0: none) */
    struct relas text, table;
    /* the fields of the current entry's copy that moved relocations cover */
    uint64_t moved[X86_COPY_MAX];
    size_t nmoved;
    const char *what;          /* SYM+OFF, for messages */
    char *err;
    size_t errlen;
};

static bool rela_add(struct kwrite *w, struct relas *r, uint64_t off, size_t sym, uint32_t type, int64_t addend)
{
    Elf64_Rela rel = { off, ELF64_R_INFO(sym, type), addend };
    if (!ARRAY_PUSH(r->v, r->n, r->cap, rel)) {
        snprintf(w->err, w->errlen, "%s: out of memory", w->km->path);
        return false;
    }
    return true;
}

/* The module section holding preview address a (ends included); n if none. */
static size_t section_of(const struct kmodule *km, uint64_t a)
{
    for (size_t i = 1; i < km->n; i++)
        if (km->addr[i] && a >= km->addr[i] && a - km->addr[i] <= km->sh[i].sh_size)
            return i;
    return km->n;
}

/* A relocation at off (in the pool's text or table) making the field hold
 * target - (P + bias): PC32/PC64 against the section holding target. */
static bool rela_to(struct kwrite *w, struct relas *r, uint64_t off, uint64_t target, int64_t bias, uint32_t type)
{
    const struct kmodule *km = w->km;
    uint64_t text = w->ps->text->addr;
    if (target >= text && target - text <= w->text_used)
        return rela_add(w, r, off, w->sym_text, type, (int64_t)(target - text) + bias);
    uint64_t data = w->ps->data->addr;
    if (target >= data && target - data <= w->ps->data->size)
        return rela_add(w, r, off, w->sym_state, type, (int64_t)(target - data) + bias);
    if (target == km->dispatch)
        return rela_add(w, r, off, w->sym_dispatch, type == km->isa->reloc_pc32 ? km->isa->reloc_plt32 : type, bias);
    size_t s = section_of(km, target);
    if (s == km->n || !w->secsym[s]) {
        snprintf(w->err, w->errlen, "%s: %s: internal error: the pool refers to 0x%llx, in no section the module "
                 "can name", km->path, w->what, (unsigned long long)target);
        return false;
    }
    const Elf64_Sym *sym = &km->syms[w->secsym[s]];
    int64_t a = (int64_t)(target - km->addr[s]) - (int64_t)(ELF64_ST_TYPE(sym->st_info) == STT_SECTION ? 0 : sym->st_value);
    return rela_add(w, r, off, w->secsym[s], type, a + bias);
}

/* A PC-relative field of an entry's code: within the pool it is right
 * already; elsewhere it needs the loader. */
static bool code_ref(void *ctx, const struct isa_code_ref *c)
{
    struct kwrite *w = ctx;
    uint64_t text = w->ps->text->addr;
    for (size_t i = 0; i < w->nmoved; i++)
        if (w->moved[i] == c->field)
            return true;   /* the module's own relocation moved with its instruction */
    if (c->target >= text && c->target < text + w->text_used)
        return true;
    if (c->width != 4) {
        snprintf(w->err, w->errlen, "%s: %s: internal error: a short branch leaves the pool", w->km->path, w->what);
        return false;
    }
    /* S + A - P = target - insn_end */
    return rela_to(w, &w->text, c->field - text, c->target, -(int64_t)(c->insn_end - c->field),
                   w->km->isa->reloc_pc32);
}

/* The module's relocations in [at, at + len) of section t, to fn. */
static bool each_reloc(const struct kmodule *km, size_t t, uint64_t at, uint64_t len,
                       bool (*fn)(void *ctx, const Elf64_Rela *r), void *ctx)
{
    for (size_t i = 1; i < km->n; i++) {
        const Elf64_Shdr *r = &km->sh[i];
        if (r->sh_type != SHT_RELA || r->sh_info != t)
            continue;
        for (size_t k = 0; k < r->sh_size / sizeof(Elf64_Rela); k++) {
            Elf64_Rela rel;
            memcpy(&rel, km->file + r->sh_offset + k * sizeof rel, sizeof rel);
            bool pc;
            int width = km->isa->module_reloc_width((uint32_t)ELF64_R_TYPE(rel.r_info), &pc);
            if (width > 0 && ck_end(rel.r_offset, (uint64_t)width) > at && rel.r_offset < ck_end(at, len) &&
                !fn(ctx, &rel))
                return false;
        }
    }
    return true;
}

/* Moving a module relocation of the site's instructions to their copy. */
struct move_ctx {
    struct kwrite *w;
    const struct plan_entry *pe;
    const struct piece *pc;
    const struct entry_info *ec;
    const uint8_t *orig, *code;
    uint64_t site_off;         /* in the site's section */
    unsigned len;
    uint32_t mask;             /* the site's bytes the loader writes */
};

static bool move_reloc(void *ctx, const Elf64_Rela *r)
{
    struct move_ctx *m = ctx;
    struct kwrite *w = m->w;
    bool pc;
    int width = w->km->isa->module_reloc_width((uint32_t)ELF64_R_TYPE(r->r_info), &pc);
    uint64_t rel = r->r_offset - m->site_off;   /* from the site (wraps when before it) */
    for (int b = 0; b < width; b++)
        if (rel + (uint64_t)b < m->len)
            m->mask |= 1u << (rel + (uint64_t)b);
    /* the instruction it is in, and that instruction's copy */
    unsigned start = 0;
    struct x86_insn in, cin;
    for (;;) {
        unsigned n = x86_decode(m->orig + start, m->len - start, 0, &in);
        if (!n || start + n > m->len || rel >= m->len || (int64_t)rel < 0) {
            snprintf(w->err, w->errlen, "%s: %s: a relocation reaches across the probed instructions", w->km->path,
                     w->what);
            return false;
        }
        if (rel < start + n)
            break;
        start += n;
    }
    if (rel + (uint64_t)width > start + in.len) {
        snprintf(w->err, w->errlen, "%s: %s: a relocation reaches across an instruction", w->km->path, w->what);
        return false;
    }
    uint16_t at = start < X86_COPY_MAX ? m->ec->map.off[start] : 0xffff;
    if (at == 0xffff || !x86_decode(m->code + at, m->pc->len - at, 0, &cin) || cin.len != in.len) {
        snprintf(w->err, w->errlen, "%s: %s: the copy of an instruction the loader relocates is not a copy of it",
                 w->km->path, w->what);
        return false;
    }
    uint64_t field = m->pc->off + at + (rel - start);
    if (w->nmoved < X86_COPY_MAX)
        w->moved[w->nmoved++] = w->ps->text->addr + field;
    return rela_add(w, &w->text, field, ELF64_R_SYM(r->r_info), (uint32_t)ELF64_R_TYPE(r->r_info), r->r_addend);
}

/* An entry's code: the relocations its copy carries from the site and the
 * ones its own references need; the mask of its site's relocated bytes. */
static bool entry_relocs(struct kwrite *w, const struct emit_env *env, const struct bake_plan *plan,
                         const struct piece *pc, const uint8_t *code, const struct probe_list *probes, uint32_t *mask)
{
    const struct plan_entry *pe = &plan->entries[pc->index];
    const struct probe *p = &probes->v[pe->probe];
    char what[300];
    snprintf(what, sizeof what, "%s+0x%llx", p->sym, (unsigned long long)p->off);
    w->what = what;
    uint8_t det[DETOUR_MAX > OOL_MAX ? DETOUR_MAX : OOL_MAX];
    struct entry_info ec;
    size_t len = emit_entry(env, pe, pc->index, pc->off, det, &ec, w->err, w->errlen);
    if (!len)
        return false;
    if (len != pc->len || memcmp(det, code, len) != 0) {
        snprintf(w->err, w->errlen, "%s: %s: internal error: the code is not what was emitted", w->km->path, what);
        return false;
    }
    size_t t = section_of(w->km, p->addr), avail;
    const uint8_t *orig = image_read(w->pv, p->addr, &avail);
    if (t == w->km->n || !orig) {
        snprintf(w->err, w->errlen, "%s: %s: the site is in no section of the module", w->km->path, what);
        return false;
    }
    struct move_ctx m = { w, pe, pc, &ec, orig, code, p->addr - w->km->addr[t], pe->site_len, 0 };
    if (m.len > avail || m.len > 32) {
        snprintf(w->err, w->errlen, "%s: %s: the site runs past its section", w->km->path, what);
        return false;
    }
    w->nmoved = 0;
    if (!each_reloc(w->km, t, m.site_off, m.len, move_reloc, &m) ||
        !w->km->isa->code_refs(code, len, w->ps->text->addr + pc->off, code_ref, w)) {
        if (!w->err[0])
            snprintf(w->err, w->errlen, "%s: %s: internal error: the code does not decode", w->km->path, what);
        return false;
    }
    *mask = m.mask;
    return true;
}

/* The table: header and entries made relative by the loader; the module
 * flag; after the strings, each entry's mask (4 bytes). Its new size. */
static size_t table_finish(struct kwrite *w, const struct bake_plan *plan, const struct probe_list *probes,
                           uint8_t *tab, const uint32_t *masks)
{
    struct kprw_table *t = (void *)tab;
    struct kprw_entry *e = (void *)(t + 1);
    if (t->nfixups || t->tramp_rel || t->dynstr_rel) {
        snprintf(w->err, w->errlen, "%s: internal error: a module's table has fixups or a trampoline", w->km->path);
        return 0;
    }
    size_t used = align_up((uint64_t)t->strings_off + t->strings_size, 4);
    t->flags |= KPRW_T_MODULE;
    t->link_addr = 0;
    t->state_rel = 0;
    if (!rela_add(w, &w->table, offsetof(struct kprw_table, state_rel), w->sym_state, w->km->isa->reloc_pc64,
                  (int64_t)offsetof(struct kprw_table, state_rel)))
        return 0;
    for (size_t k = 0; k < plan->nentries; k++) {
        const struct plan_entry *pe = &plan->entries[k];
        const struct probe *p = &probes->v[pe->probe];
        uint64_t base = sizeof *t + k * sizeof *e;
        uint64_t code = w->ps->text->addr + pe->off + pe->code_off;
        e[k].site_rel = e[k].code_rel = 0;
        if (!rela_to(w, &w->table, base + offsetof(struct kprw_entry, site_rel), p->addr,
                     (int64_t)(base + offsetof(struct kprw_entry, site_rel)), w->km->isa->reloc_pc32) ||
            !rela_to(w, &w->table, base + offsetof(struct kprw_entry, code_rel), code,
                     (int64_t)(base + offsetof(struct kprw_entry, code_rel)), w->km->isa->reloc_pc32))
            return 0;
        memcpy(tab + used + 4 * k, &masks[k], 4);
    }
    return used + 4 * plan->nentries;
}

/* The module with its pool: its sections as they were, then the pool's
 * three, their relocation sections, and the symbols they need. */
static int write_module(struct kwrite *w, const uint8_t *text, const uint8_t *table, size_t table_size,
                        size_t data_size, uint8_t **buf, size_t *size)
{
    struct kmodule *km = w->km;
    struct elf_out o = { .err = w->err, .errlen = w->errlen };
    struct names shstr = { 0 }, str = { 0 };   /* (freed also when the first fails) */
    Elf64_Sym *syms = NULL;
    size_t nsyms = km->nsyms, cap = 0;
    int rc = -1;
    if (!names_init(&shstr, km, km->eh.e_shstrndx) || !names_init(&str, km, km->strtab) ||
        !ARRAY_RESERVE(syms, cap, nsyms + 4) || !out_reserve(&o, sizeof(Elf64_Ehdr)))
        goto oom;
    memcpy(syms, km->syms, nsyms * sizeof *syms);
    o.size = sizeof(Elf64_Ehdr);
    const size_t n = km->n;   /* the pool's sections: n, n + 1, n + 2; their relocations n + 3, n + 4 */
    const struct { const char *name; uint16_t sec; uint8_t type; size_t size; } add[4] = {
        { KMOD_SYM_TEXT, (uint16_t)n, STT_FUNC, w->text_used },
        { KMOD_SYM_TABLE, (uint16_t)(n + 1), STT_OBJECT, table_size },
        { KMOD_SYM_STATE, (uint16_t)(n + 2), STT_OBJECT, data_size },
        { KPRW_KERNEL_DISPATCH, SHN_UNDEF, STT_NOTYPE, 0 },
    };
    for (int k = 0; k < (km->dispatch_sym ? 3 : 4); k++) {
        size_t name = str_add(&str.v, &str.n, &str.cap, add[k].name);
        if (name == SIZE_MAX)
            goto oom;
        syms[nsyms++] = (Elf64_Sym){ (uint32_t)name, ELF64_ST_INFO(STB_GLOBAL, add[k].type), 0, add[k].sec, 0,
                                     add[k].size };
    }
    if (!copy_sections(&o, km, syms, nsyms, &str, NULL))
        goto out;
    const struct { const char *name; uint32_t type; uint64_t flags, align; const void *data; size_t size; uint32_t info; }
        sec[5] = {
        { KPRW_SEC_TEXT, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, text, w->text_used, 0 },
        { KPRW_SEC_TABLE, SHT_PROGBITS, SHF_ALLOC, 8, table, table_size, 0 },
        { KPRW_SEC_DATA, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 8, NULL, data_size, 0 },
        { ".rela" KPRW_SEC_TEXT, SHT_RELA, SHF_INFO_LINK, 8, w->text.v, w->text.n * sizeof(Elf64_Rela), (uint32_t)n },
        { ".rela" KPRW_SEC_TABLE, SHT_RELA, SHF_INFO_LINK, 8, w->table.v, w->table.n * sizeof(Elf64_Rela),
          (uint32_t)(n + 1) },
    };
    for (int k = 0; k < 5; k++) {
        size_t name = str_add(&shstr.v, &shstr.n, &shstr.cap, sec[k].name);
        if (name == SIZE_MAX)
            goto oom;
        Elf64_Shdr s = { (uint32_t)name, sec[k].type, sec[k].flags, 0, 0, sec[k].size,
                         sec[k].type == SHT_RELA ? (uint32_t)km->symtab : 0, sec[k].info, sec[k].align,
                         sec[k].type == SHT_RELA ? sizeof(Elf64_Rela) : 0 };
        if ((s.sh_offset = out_data(&o, sec[k].data, sec[k].size, sec[k].align)) == SIZE_MAX || !out_section(&o, s))
            goto out;
    }
    if (!out_close(&o, km, &shstr, ET_REL, buf, size))
        goto out;
    rc = 0;
    goto out;
oom:
    snprintf(w->err, w->errlen, "%s: out of memory", km->path);
out:
    free(o.buf);
    free(o.sh);
    free(shstr.v);
    free(str.v);
    free(syms);
    return rc;
}

/* A symbol each section can be named by: its section symbol, else any
 * symbol defined in it. */
static size_t *section_symbols(const struct kmodule *km)
{
    size_t *s = calloc(km->n, sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 1; i < km->nsyms; i++) {
        const Elf64_Sym *y = &km->syms[i];
        size_t sec = y->st_shndx;
        if (sec == SHN_UNDEF || sec >= km->n)
            continue;
        if (!s[sec] || (ELF64_ST_TYPE(y->st_info) == STT_SECTION &&
                        ELF64_ST_TYPE(km->syms[s[sec]].st_info) != STT_SECTION))
            s[sec] = i;
    }
    return s;
}

int kmodule_bake(struct kmodule *km, const struct image *img, const struct probe_list *probes,
                 const char *out_path, struct bake_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    err[0] = 0;
    /* the pool, sized for the most these probes can take */
    size_t names = 0;
    for (size_t i = 0; i < probes->n; i++)
        names += strlen(probes->v[i].sym) + 1;
    struct pool_req req = { 64 + probes->n * (DETOUR_MAX + 16),
                            sizeof(struct kprw_table) + probes->n * (sizeof(struct kprw_entry) + KPRW_ORIG_MAX + 8) +
                            names + 64,
                            64 + probes->n * sizeof(struct kprw_state) };
    if (km->pool_open) {
        image_close(&km->pool_img);
        km->pool_open = false;
    }
    if (open_preview(km, &req, &km->pool_img, err, errlen) < 0)
        return -1;
    km->pool_open = true;
    km->pool_img.hooks = img->hooks;   /* the module's kind, as the analysis's preview */
    const struct image *pv = &km->pool_img;
    struct pool_sections ps;
    if (pool_find(pv, &ps, err, errlen) < 0)
        return -1;
    ps.kernel_dispatch = km->dispatch;
    struct bake_plan plan;
    if (bake_plan_make(pv, &ps, probes, &plan, err, errlen) < 0)
        return -1;
    struct kwrite w = { .km = km, .pv = pv, .ps = &ps, .text_used = plan.text_size, .nsyms = km->nsyms,
                        .sym_text = km->nsyms, .sym_table = km->nsyms + 1, .sym_state = km->nsyms + 2,
                        .sym_dispatch = km->dispatch_sym ? km->dispatch_sym : km->nsyms + 3,
                        .err = err, .errlen = errlen };
    uint8_t *out = malloc(pv->map_size), *file = NULL, *tab = NULL;
    uint32_t *masks = calloc(plan.nentries + 1, sizeof *masks);
    size_t file_size = 0;
    int rc = -1;
    w.secsym = section_symbols(km);
    if (!out || !masks || !w.secsym) {
        snprintf(err, errlen, "%s: out of memory", km->path);
        goto out;
    }
    memcpy(out, pv->map, pv->map_size);
    if (emit_image(pv, &ps, probes, &plan, out, err, errlen) < 0 || table_write(pv, &ps, probes, &plan, out, err, errlen) < 0)
        goto out;
    struct emit_env env = { pv, probes, &plan.calls, { 0 }, NULL };
    pool_addrs(&plan, &ps, &env.a);
    const uint8_t *text = out + ps.text->offset;
    for (size_t i = 0; i < plan.npieces; i++) {
        const struct piece *pc = &plan.pieces[i];
        if (pc->kind != PIECE_ENTRY || pc->nfix) {
            snprintf(err, errlen, "%s: internal error: a module's pool holds only probes' code", km->path);
            goto out;
        }
        if (!entry_relocs(&w, &env, &plan, pc, text + pc->off, probes, &masks[pc->index]))
            goto out;
    }
    /* each field as the kernel's module loader wants to find it (x86-64:
     * zero, apply_relocate_add() refuses "existing value is nonzero") */
    for (size_t i = 0; i < w.text.n; i++)
        km->isa->module_reloc_prepare((uint32_t)ELF64_R_TYPE(w.text.v[i].r_info),
                                      out + ps.text->offset + w.text.v[i].r_offset);
    size_t table_size = plan.table_size + 4 * plan.nentries + 8;
    tab = calloc(1, table_size);
    if (!tab) {
        snprintf(err, errlen, "%s: out of memory", km->path);
        goto out;
    }
    memcpy(tab, out + ps.table->offset, plan.table_size);
    if (!(table_size = table_finish(&w, &plan, probes, tab, masks)) ||
        write_module(&w, text, tab, table_size, plan.data_size, &file, &file_size) < 0 ||
        write_atomic(out_path, file, file_size, km->mode, err, errlen) < 0)
        goto out;
    *res = (struct bake_result){ plan.nentries, plan.text_size, table_size, plan.data_size };
    rc = 0;
out:
    free(out);
    free(file);
    free(tab);
    free(masks);
    free(w.secsym);
    free(w.text.v);
    free(w.table.v);
    bake_plan_free(&plan);
    return rc;
}
