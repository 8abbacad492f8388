/*
 * The symbols of the loaded objects' files, their static ones included
 * (dlsym and dladdr see only the exported ones): each object's .symtab,
 * else its .dynsym. Readers' and definitions' work, never a probe's.
 */
#ifndef KPREWRITE_RT_ELF_SYMS_H
#define KPREWRITE_RT_ELF_SYMS_H
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An ELF file mapped read-only, its section headers checked to lie in it
 * (elf_file_open; false: not a 64-bit ELF file, or not readable). */
struct elf_file {
    const uint8_t *m;
    size_t size;
    const Elf64_Shdr *sh;
    unsigned shnum;
};
bool elf_file_open(const char *path, struct elf_file *f);
void elf_file_close(struct elf_file *f);
/* The symbols of section i (SHT_SYMTAB or SHT_DYNSYM) and its string
 * table, both checked to lie in the file; false when they do not. */
bool elf_file_symbols(const struct elf_file *f, unsigned i, const Elf64_Sym **syms, size_t *n, const char **names,
                      size_t *names_size);

/* @SYM in a definition: the address of a data or function symbol of any
 * object loaded (elf-syms.c). */
bool rt_elf_symbol(const char *name, uint64_t *addr);

/* The function whose bytes hold addr, in the object loaded there: its
 * name (valid for the process's life) and start; false when no symbol
 * covers it (elf-funcs.c). */
bool rt_elf_function(uint64_t addr, const char **name, uint64_t *start);
#endif
