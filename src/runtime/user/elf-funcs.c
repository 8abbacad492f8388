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
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The function symbols of the table sh (its strings at sh_link), appended
 * to o->v; how many. */
static size_t read_table(struct object *o, const uint8_t *m, size_t size, const Elf64_Shdr *shs, unsigned shnum,
                         const Elf64_Shdr *sh)
{
    if (sh->sh_link >= shnum || sh->sh_offset > size || sh->sh_size > size - sh->sh_offset)
        return 0;
    const Elf64_Shdr *str = &shs[sh->sh_link];
    if (str->sh_offset > size || str->sh_size > size - str->sh_offset || !str->sh_size)
        return 0;
    const Elf64_Sym *s = (const void *)(m + sh->sh_offset);
    const char *names = (const char *)m + str->sh_offset;
    size_t n = sh->sh_size / sizeof *s, got = 0;
    struct fsym *v = realloc(o->v, (o->n + n) * sizeof *v);
    if (!v)
        return 0;
    o->v = v;
    for (size_t k = 0; k < n; k++) {
        unsigned type = ELF64_ST_TYPE(s[k].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s[k].st_shndx == SHN_UNDEF || !s[k].st_value ||
            s[k].st_name >= str->sh_size || names[str->sh_size - 1] != 0)
            continue;
        v[o->n + got++] = (struct fsym){ s[k].st_value, s[k].st_size, names + s[k].st_name };
    }
    o->n += got;
    return got;
}

/* o's function symbols from its file; o->n stays 0 when it has none. */
static void load(struct object *o)
{
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    const Elf64_Ehdr *eh = (const void *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum) {
        munmap((void *)m, size);
        return;
    }
    const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
    for (int pass = 0; pass < 2 && !o->n; pass++)   /* .symtab holds .dynsym's too */
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
                read_table(o, m, size, sh, eh->e_shnum, &sh[i]);
    if (!o->n) {
        munmap((void *)m, size);
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
