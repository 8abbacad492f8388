/* Function bounds and names: .symtab, .dynsym, System.map, .eh_frame. */
#include "symbols.h"
#include "ehframe.h"
#include "kind.h"
#include "kprewrite/abi.h"
#include "../util/array.h"
#include "../util/checked.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct raw {
    uint64_t addr, size;
    const char *name;
    int rank;                 /* higher = preferred as the function's name */
    enum func_origin origin;
};

struct raws { struct raw *v; size_t n, cap; };
struct names { struct name_ent *v; size_t n, cap; };
struct funcs { struct func *v; size_t n, cap; };

static int cmp_raw(const void *a, const void *b)
{
    const struct raw *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return y->rank - x->rank;
}

static int cmp_name(const void *a, const void *b)
{
    const struct name_ent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_func(const void *a, const void *b)
{
    const struct func *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads one symbol table; function-like symbols go to raws, all to addrs. */
static int read_symtab(const struct image *img, const struct section *s, struct raws *raws,
                       struct names *addrs, char *err, size_t errlen)
{
    Elf_Scn *scn = elf_getscn(img->elf, s->index);
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    size_t n = s->entsize ? s->size / s->entsize : 0;

    if (!d || s->entsize != sizeof(Elf64_Sym) || d->d_size < n * sizeof(Elf64_Sym) ||
        s->link >= img->nsecs) {
        snprintf(err, errlen, "%s: malformed symbol table %s", img->path, s->name);
        return -1;
    }
    for (size_t i = 1; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym))
            continue;
        const char *name = elf_strptr(img->elf, s->link, sym.st_name);
        if (!name || !*name || sym.st_shndx == SHN_UNDEF)
            continue;
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        if (!ARRAY_PUSH(addrs->v, addrs->n, addrs->cap, (struct name_ent){ name, sym.st_value, SIZE_MAX }))
            goto oom;
        if (type == STT_SECTION || type == STT_FILE || sym.st_shndx == SHN_ABS)
            continue;
        bool fn = type == STT_FUNC || type == STT_GNU_IFUNC;
        /* Kernel assembly (SYM_CODE_START) leaves some entry points untyped. */
        if (!fn && type == STT_NOTYPE && img->hooks->untyped_functions && sym.st_size > 0 &&
            strncmp(name, ".L", 2) != 0)
            fn = true;
        if (!fn || !image_is_exec_addr(img, sym.st_value))
            continue;
        if (!ck_in(sym.st_value, sym.st_size, IMAGE_ADDR_END)) {
            snprintf(err, errlen, "%s: symbol %.200s: its size 0x%llx at 0x%llx runs past the end of the address "
                     "space (malformed %s)", img->path, name, (unsigned long long)sym.st_size,
                     (unsigned long long)sym.st_value, s->name);
            return -1;
        }
        /* Prefer global over weak over local names, dynsym over symtab
         * (the same name, but in .dynstr, which is loaded: the probe table
         * need not copy it, KPRW_NAME_DYN), and names without a '.' suffix. */
        int rank = (bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0) + (s->type == SHT_DYNSYM) +
                   (strchr(name, '.') ? 0 : 8);
        if (!ARRAY_PUSH(raws->v, raws->n, raws->cap, (struct raw){ sym.st_value, sym.st_size, name, rank, FO_SYMBOL }))
            goto oom;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory reading symbols", img->path);
    return -1;
}

/* System.map: "ffffffff81000000 T _stext" per line. */
static int read_system_map(const struct image *img, const char *path, struct raws *raws,
                           struct names *addrs, char **strings, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t used = 0, cap = 0, lineno = 0;
    struct { uint64_t addr; size_t off; char type; } *tmp = NULL;
    size_t ntmp = 0, captmp = 0;

    if (!f) {
        snprintf(err, errlen, "%s: cannot open System.map: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long long a;
        char type, name[512];
        lineno++;
        /* blank, comment, or an undefined symbol as `nm` prints it */
        if (line[0] == '\n' || line[0] == '#' || line[0] == ' ')
            continue;
        if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3) {
            snprintf(err, errlen, "%s:%zu:1: not a System.map line", path, lineno);
            fclose(f);
            free(tmp);
            return -1;
        }
        size_t len = strlen(name) + 1;
        if (!ARRAY_RESERVE(*strings, cap, used + len) || !ARRAY_RESERVE(tmp, captmp, ntmp + 1))
            goto oom;
        memcpy(*strings + used, name, len);
        tmp[ntmp].addr = a; tmp[ntmp].off = used; tmp[ntmp].type = type;
        ntmp++;
        used += len;
    }
    fclose(f);
    /* Pointers only now: the string buffer moved while growing. */
    for (size_t i = 0; i < ntmp; i++) {
        const char *name = *strings + tmp[i].off;
        if (!ARRAY_PUSH(addrs->v, addrs->n, addrs->cap, (struct name_ent){ name, tmp[i].addr, SIZE_MAX }))
            goto oom2;
        char t = tmp[i].type;
        if ((t == 't' || t == 'T' || t == 'w' || t == 'W') && image_is_exec_addr(img, tmp[i].addr) &&
            !ARRAY_PUSH(raws->v, raws->n, raws->cap, (struct raw){ tmp[i].addr, 0, name,
                        (t == 'T' ? 4 : 0) + (strchr(name, '.') ? 0 : 8), FO_SYSTEM_MAP }))
            goto oom2;
    }
    free(tmp);
    return 0;
oom:
    fclose(f);
oom2:
    free(tmp);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

static uint64_t section_end(const struct image *img, uint64_t addr)
{
    const struct section *s = image_section_at(img, addr);
    return s ? ck_end(s->addr, s->size) : addr;
}

/* The FDE whose range starts at addr, or NULL. */
static const struct eh_fde *fde_at(const struct eh_fde *f, size_t n, uint64_t addr)
{
    size_t a = LOWER_BOUND(n, m, f[m].start < addr);
    return a < n && f[a].start == addr ? &f[a] : NULL;
}

static void set_parents(struct symbols *sy)
{
    for (size_t i = 0; i < sy->nfuncs; i++) {
        struct func *fn = &sy->funcs[i];
        const char *dot = fn->name[0] != '.' ? strchr(fn->name, '.') : NULL;
        fn->parent = i;
        if (!dot || fn->origin == FO_FDE || fn->origin == FO_FOUND || fn->go_name)
            continue;   /* (a Go name's dots are its package's and closures': main.work.func1) */
        char base[512];
        size_t len = (size_t)(dot - fn->name);
        if (len >= sizeof base)
            continue;
        memcpy(base, fn->name, len);
        base[len] = 0;
        const struct name_ent *ne = symbols_lookup(sy, base);
        if (ne && ne->func != SIZE_MAX && ne->func != i)
            fn->parent = ne->func;
    }
}

/* One function per distinct start address of the symbols (sorted), with
 * bounds for the unsized ones: their FDE, else the next function or the
 * section's end. -1: no memory. */
static int functions_of_symbols(const struct image *img, const struct raws *raws, const struct eh_fde *fdes,
                                size_t nfdes, struct funcs *funcs)
{
    const struct raw *r = raws->v;
    for (size_t i = 0; i < raws->n;) {
        size_t j = i;
        uint64_t size = 0;
        enum func_origin origin = r[i].origin;
        while (j < raws->n && r[j].addr == r[i].addr) {
            if (r[j].size > size)
                size = r[j].size;
            j++;
        }
        if (!ARRAY_PUSH(funcs->v, funcs->n, funcs->cap, (struct func){ .start = r[i].addr, .end = r[i].addr + size,
                                                                        .name = r[i].name, .origin = origin }))
            return -1;
        i = j;
    }
    struct func *F = funcs->v;
    size_t nsym = funcs->n;
    for (size_t i = 0; i < nsym; i++) {
        const struct eh_fde *fd = fde_at(fdes, nfdes, F[i].start);
        if (fd)
            F[i].lsda = fd->lsda;
        if (F[i].end > F[i].start)
            continue;
        if (fd) {
            F[i].end = fd->end;
            continue;
        }
        uint64_t end = section_end(img, F[i].start);
        if (i + 1 < nsym && F[i + 1].start < end)
            end = F[i + 1].start;
        F[i].end = end;
        F[i].size_guessed = true;
    }
    return 0;
}

/* Go's functions (gopclntab.c) merged into funcs, the symbols' functions
 * (sorted by start): one that starts where a symbol's function does is
 * that function (marked Go; its Go name an alias in *aliases, and its
 * bounds Go's if its size was guessed); one inside a function whose size
 * was guessed ends that function there; one inside a sized one is left to
 * it; any other is added (FO_GO), ending where a symbol's function starts
 * if one does inside it. funcs is sorted again. -1: no memory. */
static int functions_of_go(const struct gopclntab *g, struct funcs *funcs, struct raws *aliases)
{
    size_t nsym = funcs->n;
    for (size_t k = 0; k < g->n; k++) {
        const struct go_func *gf = &g->v[k];
        size_t a = LOWER_BOUND(nsym, m, funcs->v[m].start <= gf->start);   /* after the last one at or before */
        struct func *F = a ? &funcs->v[a - 1] : NULL;
        uint64_t end = gf->end;
        if (F && F->start == gf->start) {
            F->go_name = gf->name;
            F->go_flag = gf->flag;
            if (F->size_guessed && F->end > gf->end)
                F->end = gf->end;
            if (strcmp(F->name, gf->name) != 0 &&
                !ARRAY_PUSH(aliases->v, aliases->n, aliases->cap, (struct raw){ gf->start, 0, gf->name, 0, FO_GO }))
                return -1;
            continue;
        }
        if (F && gf->start < F->end) {
            if (!F->size_guessed)
                continue;
            F->end = gf->start;
        }
        if (a < nsym && funcs->v[a].start < end)
            end = funcs->v[a].start;
        if (!ARRAY_PUSH(funcs->v, funcs->n, funcs->cap, (struct func){ .start = gf->start, .end = end, .name = gf->name,
                                                                        .origin = FO_GO, .go_name = gf->name,
                                                                        .go_flag = gf->flag }))
            return -1;
    }
    sort_array(funcs->v, funcs->n, sizeof(struct func), cmp_func);
    return 0;
}

/* Does a function of a symbol (F[0..nsym), sorted) start in (lo, hi)? */
static bool symbol_starts_in(const struct func *F, size_t nsym, uint64_t lo, uint64_t hi)
{
    size_t a = LOWER_BOUND(nsym, m, F[m].start <= lo);
    return a < nsym && F[a].start < hi;
}

/* The FDE k (no symbol covers its start) as a function: 1 yes (*unproven:
 * kept to be refused, sy->doubts says why), 0 no (a signal frame; code a
 * symbol's function starts in), -1 no memory. */
static int fde_function(struct symbols *sy, struct entry_sweep *w, const struct funcs *funcs, size_t nsym,
                        const struct eh_fde *f, bool *unproven, size_t *dcap)
{
    struct entry_doubt d;
    *unproven = false;
    if (f->signal_frame)   /* a trampoline the kernel returns into, its start a byte early: no entry */
        return 0;
    if (entry_proven(w, f->start, &d))
        return 1;
    if (symbol_starts_in(funcs->v, nsym, f->start, f->end))
        return 0;   /* corrected: the symbol's function is the entry */
    *unproven = true;
    return ARRAY_PUSH(sy->doubts, sy->ndoubts, *dcap, d) ? 1 : -1;
}

/* FDEs that start where no symbol covers them become fde@ADDR functions,
 * appended to funcs (the symbols' functions, sorted: one forward walk
 * finds the covering ones); their names in *names. Their starts must be
 * proven instruction starts (entries.c). -1: no memory. */
static int functions_of_fdes(struct symbols *sy, const struct image *img, const struct eh_fde *fdes, size_t nfdes,
                             struct funcs *funcs, char **names)
{
    size_t nsym = funcs->n, used = 0, cap = 0, dcap = 0, npads = 0;
    size_t *name_off = NULL, nnew = 0, capoff = 0;
    uint64_t *starts = malloc((nsym ? nsym : 1) * sizeof *starts), *pads = malloc((nfdes ? nfdes : 1) * sizeof *pads);
    struct entry_sweep w;
    int rc = -1;
    if (!starts || !pads)
        goto out;
    for (size_t i = 0; i < nsym; i++)
        starts[i] = funcs->v[i].start;
    for (size_t k = 0; k < nfdes; k++)   /* (sorted, as fdes) */
        if (!fdes[k].signal_frame)
            pads[npads++] = fdes[k].start;
    entry_sweep_init(&w, img, starts, nsym, pads, npads);
    for (size_t k = 0, i = 0; k < nfdes; k++) {
        const struct func *F = funcs->v;
        while (i < nsym && F[i].end <= fdes[k].start)
            i++;
        bool covered = false, unproven;
        for (size_t m = i; m < nsym && F[m].start <= fdes[k].start; m++)
            if (fdes[k].start < F[m].end) { covered = true; break; }
        if (covered || !image_is_exec_addr(img, fdes[k].start))
            continue;
        int r = fde_function(sy, &w, funcs, nsym, &fdes[k], &unproven, &dcap);
        if (r < 0)
            goto out;
        if (r == 0)
            continue;
        if (!ARRAY_RESERVE(*names, cap, used + 32) || !ARRAY_PUSH(name_off, nnew, capoff, used) ||
            !ARRAY_PUSH(funcs->v, funcs->n, funcs->cap, (struct func){ .start = fdes[k].start, .end = fdes[k].end,
                                                                        .lsda = fdes[k].lsda, .origin = FO_FDE,
                                                                        .entry_unproven = unproven }))
            goto out;
        used += (size_t)snprintf(*names + used, 32, KPRW_FDE_PREFIX "%llx", (unsigned long long)fdes[k].start) + 1;
    }
    /* now that the buffer is final, point at it */
    for (size_t k = 0; k < nnew; k++)
        funcs->v[nsym + k].name = *names + name_off[k];
    rc = 0;
out:
    free(name_off);
    free(starts);
    free(pads);
    return rc;
}

/* The signal-frame FDEs (indexes in fdes, sorted by start). -1: no memory. */
static int signal_frames(struct symbols *sy, const struct eh_fde *fdes, size_t nfdes)
{
    size_t cap = 0;
    for (size_t k = 0; k < nfdes; k++)
        if (fdes[k].signal_frame && !ARRAY_PUSH(sy->sigframes, sy->nsigframes, cap, k))
            return -1;
    return 0;
}

/* The functions nobody named (funcfind.c), appended to funcs as fn@ADDR
 * functions and sorted in; sy's function list is funcs again. -1: no
 * memory; -2: the finder's error in err. */
static int functions_found(struct symbols *sy, const struct image *img, struct funcs *funcs, char *err,
                           size_t errlen)
{
    const size_t len = sizeof KPRW_FOUND_PREFIX + 16;   /* the prefix, 16 hex digits, NUL */
    struct funcfind *ff = &sy->found;
    if (funcfind_run(ff, img, sy, err, errlen) < 0)
        return -2;
    if (ff->n && !(sy->found_names = malloc(ff->n * len)))
        return -1;
    for (size_t k = 0; k < ff->n; k++) {
        char *name = sy->found_names + k * len;
        snprintf(name, len, KPRW_FOUND_PREFIX "%llx", (unsigned long long)ff->v[k].start);
        if (!ARRAY_PUSH(funcs->v, funcs->n, funcs->cap, (struct func){ .start = ff->v[k].start, .end = ff->v[k].end,
                                                                        .name = name, .origin = FO_FOUND,
                                                                        .call_entry = ff->v[k].call_entry }))
            return -1;
    }
    sort_array(funcs->v, funcs->n, sizeof(struct func), cmp_func);
    sy->funcs = funcs->v;
    sy->nfuncs = funcs->n;
    return 0;
}

int symbols_load(struct symbols *sy, const struct image *img, const char *system_map,
                 char *err, size_t errlen)
{
    struct raws raws = { 0 }, goalias = { 0 };
    struct gopclntab go = { 0 };
    struct names addrs = { 0 }, names = { 0 };
    struct funcs funcs = { 0 };
    struct eh_fde *fdes = NULL;
    size_t nfdes = 0;
    char *fde_names = NULL;
    const struct section *eh;

    memset(sy, 0, sizeof *sy);
    for (size_t i = 0; i < img->nsecs; i++)
        if ((img->secs[i].type == SHT_SYMTAB || img->secs[i].type == SHT_DYNSYM) &&
            read_symtab(img, &img->secs[i], &raws, &addrs, err, errlen) < 0)
            goto fail;
    if (system_map && read_system_map(img, system_map, &raws, &addrs, &sy->strings, err, errlen) < 0)
        goto fail;
    /* (a user image's: a kernel has no Go code) */
    if (img->hooks->finds_functions && gopclntab_read(&go, img, err, errlen) < 0)
        goto fail;
    eh = image_section_by_name(img, ".eh_frame");
    if (eh && eh->data && eh->size) {
        char eherr[200];
        if (eh_frame_fdes(eh->data, eh->size, eh->addr, &fdes, &nfdes, eherr, sizeof eherr) < 0) {
            snprintf(err, errlen, "%s: %s", img->path, eherr);
            goto fail;
        }
        for (size_t k = 0; k < nfdes; k++)
            if (fdes[k].end > IMAGE_ADDR_END) {
                snprintf(err, errlen, "%s: eh_frame: the FDE for 0x%llx runs past the end of the address space",
                         img->path, (unsigned long long)fdes[k].start);
                goto fail;
            }
    }
    sy->nfdes = nfdes;
    sort_array(raws.v, raws.n, sizeof(struct raw), cmp_raw);

    /* One function per distinct start address; all its names become aliases. */
    struct raw *r = raws.v;
    if (functions_of_symbols(img, &raws, fdes, nfdes, &funcs) < 0 || functions_of_go(&go, &funcs, &goalias) < 0 ||
        signal_frames(sy, fdes, nfdes) < 0 || functions_of_fdes(sy, img, fdes, nfdes, &funcs, &fde_names) < 0)
        goto oom;
    sy->ngo = go.n;
    sy->go_version = go.version;
    sort_array(funcs.v, funcs.n, sizeof(struct func), cmp_func);
    sy->funcs = funcs.v;
    sy->nfuncs = funcs.n;
    sy->fdes = fdes;   /* the CFA rules (symbols_cfa_at), for the finder too */
    sy->eh = eh && eh->data && eh->size ? eh : NULL;
    if (img->hooks->finds_functions) {
        int rc = functions_found(sy, img, &funcs, err, errlen);
        if (rc == -2)
            goto fail;
        if (rc < 0)
            goto oom;
    }

    /* Name index: every function-symbol alias, the Go names of functions a
     * symbol names, plus the Go, fde@ and fn@ names. */
    for (size_t i = 0; i < raws.n + goalias.n; i++) {
        const struct raw *ri = i < raws.n ? &r[i] : &goalias.v[i - raws.n];
        const struct func *fn = symbols_func_at(sy, ri->addr);
        if (!ARRAY_PUSH(names.v, names.n, names.cap,
                        (struct name_ent){ ri->name, ri->addr, fn ? (size_t)(fn - sy->funcs) : SIZE_MAX }))
            goto oom;
    }
    for (size_t i = 0; i < sy->nfuncs; i++) {
        if (sy->funcs[i].origin != FO_FDE && sy->funcs[i].origin != FO_FOUND && sy->funcs[i].origin != FO_GO)
            continue;
        if (!ARRAY_PUSH(names.v, names.n, names.cap, (struct name_ent){ sy->funcs[i].name, sy->funcs[i].start, i }))
            goto oom;
    }
    sort_array(names.v, names.n, sizeof(struct name_ent), cmp_name);
    sort_array(addrs.v, addrs.n, sizeof(struct name_ent), cmp_name);
    sy->names = names.v;
    sy->nnames = names.n;
    sy->addrs = addrs.v;
    sy->naddrs = addrs.n;
    sy->fde_names = fde_names;
    sy->go_names = go.abi0_names;   /* (the functions' names point into it) */
    go.abi0_names = NULL;
    set_parents(sy);
    free(raws.v);
    free(goalias.v);
    gopclntab_free(&go);
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory building the function list", img->path);
fail:
    free(raws.v);
    free(goalias.v);
    gopclntab_free(&go);
    free(addrs.v);
    free(funcs.v);
    free(names.v);
    free(fdes);
    free(fde_names);
    free(sy->strings);
    free(sy->sigframes);
    free(sy->doubts);
    free(sy->found_names);
    funcfind_free(&sy->found);
    memset(sy, 0, sizeof *sy);
    return -1;
}

void symbols_free(struct symbols *sy)
{
    free(sy->fdes);
    free(sy->funcs);
    free(sy->names);
    free(sy->addrs);
    free(sy->strings);
    free(sy->fde_names);
    free(sy->go_names);
    free(sy->sigframes);
    free(sy->doubts);
    free(sy->found_names);
    funcfind_free(&sy->found);
    memset(sy, 0, sizeof *sy);
}

const struct eh_fde *symbols_signal_frame_at(const struct symbols *sy, uint64_t addr)
{
    size_t a = LOWER_BOUND(sy->nsigframes, m, sy->fdes[sy->sigframes[m]].start <= addr);
    for (size_t i = a; i > 0 && a - i < 4; i--) {   /* (they do not nest; a few looks back is plenty) */
        const struct eh_fde *f = &sy->fdes[sy->sigframes[i - 1]];
        if (addr >= f->start && addr < f->end)
            return f;
    }
    return NULL;
}

const struct entry_doubt *symbols_entry_doubt(const struct symbols *sy, const struct func *fn)
{
    size_t a = LOWER_BOUND(sy->ndoubts, m, sy->doubts[m].addr < fn->start);
    return a < sy->ndoubts && sy->doubts[a].addr == fn->start ? &sy->doubts[a] : NULL;
}

struct eh_cfa symbols_cfa_at(const struct symbols *sy, uint64_t pc)
{
    struct eh_cfa unknown = { false, 0, 0 };
    if (!sy->eh || !sy->fdes)
        return unknown;
    size_t a = LOWER_BOUND(sy->nfdes, m, sy->fdes[m].start <= pc);   /* after the last FDE starting at or before pc */
    if (a == 0 || pc >= sy->fdes[a - 1].end)
        return unknown;
    return eh_cfa_at(sy->eh->data, sy->eh->size, &sy->fdes[a - 1], pc);
}

const struct func *symbols_func_at(const struct symbols *sy, uint64_t addr)
{
    size_t a = LOWER_BOUND(sy->nfuncs, m, sy->funcs[m].start <= addr);
    /* A sized symbol may contain later-starting ones (nested labels): look back a little. */
    for (size_t i = a; i > 0 && a - i < 8; i--) {
        const struct func *fn = &sy->funcs[i - 1];
        if (addr >= fn->start && addr < fn->end)
            return fn;
    }
    return NULL;
}

static const struct name_ent *find_name(const struct name_ent *v, size_t n, const char *name)
{
    size_t a = LOWER_BOUND(n, m, strcmp(v[m].name, name) < 0);
    return a < n && strcmp(v[a].name, name) == 0 ? &v[a] : NULL;
}

const struct name_ent *symbols_lookup(const struct symbols *sy, const char *name)
{
    return find_name(sy->names, sy->nnames, name);
}

bool symbols_addr_of(const struct symbols *sy, const char *name, uint64_t *addr)
{
    const struct name_ent *ne = find_name(sy->addrs, sy->naddrs, name);
    if (ne)
        *addr = ne->addr;
    return ne != NULL;
}
