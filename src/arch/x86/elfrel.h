/*
 * x86-64 ELF relocations as a module's relocatable object carries them:
 * applying one at a chosen address (the rewriter's preview of a module as
 * the kernel's loader will place it), the types it writes for the code and
 * table it adds, and the PC-relative fields of emitted code.
 */
#ifndef KPREWRITE_X86_ELFREL_H
#define KPREWRITE_X86_ELFREL_H
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../isa.h"   /* struct isa_code_ref */

/* The types the kernel's module loader applies (arch/x86/kernel/module.c). */
#define X86_RELOC_PC32 R_X86_64_PC32     /* S + A - P, 4 bytes */
#define X86_RELOC_PLT32 R_X86_64_PLT32   /* the same, for calls */
#define X86_RELOC_PC64 R_X86_64_PC64     /* S + A - P, 8 bytes */

/* How many bytes type writes (0: R_X86_64_NONE); -1 for a type the module
 * loader does not apply. *pc_relative: it depends on where it is applied. */
int x86_module_reloc_width(uint32_t type, bool *pc_relative);

/* Apply a relocation of type to field (S the symbol's value, A the addend,
 * P the field's address). false when the type is not one a module may
 * carry or the value does not fit. */
bool x86_module_reloc_apply(uint32_t type, uint64_t S, int64_t A, uint64_t P, uint8_t *field);

/* The field of a relocation of type as the kernel's module loader wants
 * it: zero (apply_relocate_add() refuses "existing value is nonzero"). */
void x86_module_reloc_prepare(uint32_t type, uint8_t *field);

/* Every PC-relative field of the len bytes of code at `at` (direct
 * branches and RIP-relative operands), in order, to fn; stops at fn's
 * false. false when an instruction does not decode (or fn stopped). */
bool x86_code_refs(const uint8_t *code, size_t len, uint64_t at,
                   bool (*fn)(void *ctx, const struct isa_code_ref *r), void *ctx);
#endif
