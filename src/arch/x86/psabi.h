/* The x86-64 psABI's ELF facts, as far as the rewriter needs them: the
 * machine, the relocation types, the IBT feature property, the stack at a
 * function's entry as unwind data tells it. */
#ifndef KPREWRITE_X86_PSABI_H
#define KPREWRITE_X86_PSABI_H
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>

#define X86_ELF_MACHINE EM_X86_64

/* DWARF's number of %rsp, and the CFA at a function's entry (entered by a
 * call: the return address just pushed) as an offset from it. */
#define X86_DWARF_RSP 7
#define X86_CALL_CFA_OFF 8

/* .note.gnu.property: the x86 feature bits (a 4-byte word), and the bit
 * of code built for IBT (indirect branches land on endbr64). */
#define X86_PROPERTY_FEATURE_1_AND 0xc0000002u
#define X86_FEATURE_1_IBT 1u

/* The type that does nothing: what a neutralized relocation becomes. */
#define X86_RELOC_NONE R_X86_64_NONE

/* The word a PIE's or library's loader sets to its load base + addend. */
#define X86_RELOC_RELATIVE R_X86_64_RELATIVE

/* How many bytes a relocation of this type writes when it is applied at
 * load (TEXTREL, KASLR): 8 or 4 for the absolute ones, 4 for a PC32
 * (*pc_relative set: it survives moving the whole text), 0 for the others
 * (PLT32, GOTPCREL...: they name code or data without changing code). */
static inline unsigned x86_reloc_size(uint32_t type, bool *pc_relative)
{
    *pc_relative = false;
    switch (type) {
    case R_X86_64_64: case R_X86_64_RELATIVE: case R_X86_64_IRELATIVE:
        return 8;
    case R_X86_64_32: case R_X86_64_32S:
        return 4;
    case R_X86_64_PC32:
        *pc_relative = true;
        return 4;
    default:
        return 0;
    }
}
#endif
