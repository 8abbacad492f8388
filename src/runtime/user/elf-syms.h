/*
 * The symbols of the loaded objects' files, their static ones included
 * (dlsym and dladdr see only the exported ones): each object's .symtab,
 * else its .dynsym. Readers' and definitions' work, never a probe's.
 */
#ifndef KPREWRITE_RT_ELF_SYMS_H
#define KPREWRITE_RT_ELF_SYMS_H
#include <stdbool.h>
#include <stdint.h>

/* @SYM in a definition: the address of a data or function symbol of any
 * object loaded (elf-syms.c). */
bool rt_elf_symbol(const char *name, uint64_t *addr);

/* The function whose bytes hold addr, in the object loaded there: its
 * name (valid for the process's life) and start; false when no symbol
 * covers it (elf-funcs.c). */
bool rt_elf_function(uint64_t addr, const char **name, uint64_t *start);
#endif
