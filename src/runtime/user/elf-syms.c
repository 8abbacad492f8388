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

/* name's value in the ELF file at path (0: not found) */
static uint64_t lookup_file(const char *path, const char *name, bool *found)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint64_t v = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    const Elf64_Ehdr *eh = (const void *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        goto out;
    const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
    for (int pass = 0; pass < 2 && !*found; pass++) {
        uint32_t want = pass ? SHT_DYNSYM : SHT_SYMTAB;
        for (unsigned i = 0; i < eh->e_shnum && !*found; i++) {
            if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size ||
                sh[i].sh_size > size - sh[i].sh_offset)
                continue;
            const Elf64_Shdr *str = &sh[sh[i].sh_link];
            if (str->sh_offset > size || str->sh_size > size - str->sh_offset)
                continue;
            const Elf64_Sym *s = (const void *)(m + sh[i].sh_offset);
            const char *names = (const char *)m + str->sh_offset;
            for (size_t k = 0, n = sh[i].sh_size / sizeof *s; k < n; k++) {
                if (s[k].st_shndx == SHN_UNDEF || s[k].st_name >= str->sh_size ||
                    strnlen(names + s[k].st_name, str->sh_size - s[k].st_name) == str->sh_size - s[k].st_name)
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
out:
    munmap((void *)m, size);
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
