/*
 * Addresses to function names for the readers (a return event's caller,
 * a `symbol` argument), as the kernel's kallsyms names any function: each
 * loaded object's file is read once, its function symbols from .symtab
 * (static functions included), else from .dynsym, sorted by address. The
 * file stays mapped: the names point into it. Only readers (the control
 * thread, the trace writer, exit) get here, never a probe's path.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "elf-syms.h"

struct fsym {
    uint64_t start, size;              /* link-time */
    const char *name;
};

struct object {
    struct object *next;
    uintptr_t base;                    /* dlpi_addr */
    char *path;
    struct fsym *v;                    /* sorted by start */
    size_t n;
};

static struct object *objects;        /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int by_start(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->size < y->size) - (x->size > y->size);
}

/* The function symbols of f's symbol table i, appended to o->v; how many. */
static size_t read_table(struct object *o, const struct elf_file *f, unsigned i)
{
    const Elf64_Sym *s;
    const char *names;
    size_t n, nsize;
    if (!elf_file_symbols(f, i, &s, &n, &names, &nsize) || !nsize)
        return 0;
    struct fsym *v = realloc(o->v, (o->n + n) * sizeof *v);
    if (!v)
        return 0;
    o->v = v;
    size_t got = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned type = ELF64_ST_TYPE(s[k].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s[k].st_shndx == SHN_UNDEF || !s[k].st_value ||
            s[k].st_name >= nsize || names[nsize - 1] != 0)
            continue;
        v[o->n + got++] = (struct fsym){ s[k].st_value, s[k].st_size, names + s[k].st_name };
    }
    o->n += got;
    return got;
}

/* o's function symbols from its file; o->n stays 0 when it has none. The
 * file stays mapped when it has some: the names point into it. */
static void load(struct object *o)
{
    struct elf_file f;
    if (!elf_file_open(o->path, &f))
        return;
    for (int pass = 0; pass < 2 && !o->n; pass++)   /* .symtab holds .dynsym's too */
        for (unsigned i = 0; i < f.shnum; i++)
            if (f.sh[i].sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
                read_table(o, &f, i);
    if (!o->n) {
        elf_file_close(&f);
        return;
    }
    qsort(o->v, o->n, sizeof *o->v, by_start);
}

struct where {
    uintptr_t addr;
    uintptr_t base;
    char path[4096];
    bool found;
};

/* The object whose loaded segments hold addr. */
static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct where *w = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || w->addr < lo || w->addr - lo >= ph->p_memsz)
            continue;
        const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
        if (strstr(path, "linux-vdso"))
            return 1;   /* no file */
        strncpy(w->path, path, sizeof w->path - 1);
        w->base = info->dlpi_addr;
        w->found = true;
        return 1;
    }
    return 0;
}

static struct object *object_at(uintptr_t addr)
{
    struct where w = { .addr = addr };
    dl_iterate_phdr(find_object, &w);
    if (!w.found)
        return NULL;
    for (struct object *o = objects; o; o = o->next)
        if (o->base == w.base && !strcmp(o->path, w.path))
            return o;
    struct object *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(w.path))) {
        free(o);
        return NULL;
    }
    o->base = w.base;
    load(o);
    o->next = objects;
    objects = o;
    return o;
}

bool rt_elf_function(uint64_t addr, const char **name, uint64_t *start)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    struct object *o = object_at((uintptr_t)addr);
    if (o && o->n) {
        uint64_t a = addr - o->base;
        size_t lo = 0, hi = o->n;
        while (lo < hi) {   /* past the last symbol starting at or below a */
            size_t mid = (lo + hi) / 2;
            if (o->v[mid].start <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* the nearest start at or below a whose bytes hold it (one of
         * size 0 names its own address only); a few back: aliases of one
         * start, and assembly's symbols inside others */
        for (size_t i = lo, k = 0; i-- > 0 && k < 16 && !found; k++) {
            const struct fsym *f = &o->v[i];
            if (a - f->start < f->size || a == f->start) {
                *name = f->name;
                *start = f->start + o->base;
                found = true;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}
