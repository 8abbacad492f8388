/*
 * @SYM in an event's definition: the address of a symbol of any object
 * loaded, its static ones included (dlsym sees only exported ones): each
 * object's file is mapped and its .symtab (else .dynsym) searched. Run
 * when a definition is made (the control thread, start-up), never on a
 * probe's path.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-syms.h"

bool elf_file_open(const char *path, struct elf_file *f)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return false;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return false;
    }
    f->size = (size_t)st.st_size;
    f->m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->m == MAP_FAILED)
        return false;
    const Elf64_Ehdr *eh = (const void *)f->m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > f->size ||
        (f->size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum) {
        munmap((void *)f->m, f->size);
        return false;
    }
    f->sh = (const void *)(f->m + eh->e_shoff);
    f->shnum = eh->e_shnum;
    return true;
}

void elf_file_close(struct elf_file *f)
{
    munmap((void *)f->m, f->size);
}

bool elf_file_symbols(const struct elf_file *f, unsigned i, const Elf64_Sym **syms, size_t *n, const char **names,
                      size_t *names_size)
{
    const Elf64_Shdr *sh = &f->sh[i];
    if (sh->sh_link >= f->shnum || sh->sh_offset > f->size || sh->sh_size > f->size - sh->sh_offset)
        return false;
    const Elf64_Shdr *str = &f->sh[sh->sh_link];
    if (str->sh_offset > f->size || str->sh_size > f->size - str->sh_offset)
        return false;
    *syms = (const void *)(f->m + sh->sh_offset);
    *n = sh->sh_size / sizeof **syms;
    *names = (const char *)f->m + str->sh_offset;
    *names_size = str->sh_size;
    return true;
}

/* name's value in the ELF file at path (0: not found) */
static uint64_t lookup_file(const char *path, const char *name, bool *found)
{
    struct elf_file f;
    uint64_t v = 0;
    if (!elf_file_open(path, &f))
        return 0;
    for (int pass = 0; pass < 2 && !*found; pass++) {
        uint32_t want = pass ? SHT_DYNSYM : SHT_SYMTAB;
        for (unsigned i = 0; i < f.shnum && !*found; i++) {
            const Elf64_Sym *s;
            const char *names;
            size_t n, nsize;
            if (f.sh[i].sh_type != want || !elf_file_symbols(&f, i, &s, &n, &names, &nsize))
                continue;
            for (size_t k = 0; k < n; k++) {
                if (s[k].st_shndx == SHN_UNDEF || s[k].st_name >= nsize ||
                    strnlen(names + s[k].st_name, nsize - s[k].st_name) == nsize - s[k].st_name)
                    continue;
                unsigned type = ELF64_ST_TYPE(s[k].st_info);
                if ((type == STT_OBJECT || type == STT_FUNC || type == STT_NOTYPE) && !strcmp(names + s[k].st_name, name)) {
                    v = s[k].st_value;
                    *found = true;
                    break;
                }
            }
        }
    }
    elf_file_close(&f);
    return v;
}

struct search {
    const char *name;
    uint64_t addr;
    bool found;
};

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct search *s = arg;
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
    if (strstr(path, "linux-vdso"))
        return 0;
    uint64_t v = lookup_file(path, s->name, &s->found);
    if (s->found)
        s->addr = info->dlpi_addr + v;
    return s->found;
}

bool rt_elf_symbol(const char *name, uint64_t *addr)
{
    struct search s = { name, 0, false };
    dl_iterate_phdr(each_object, &s);
    *addr = s.addr;
    return s.found;
}
