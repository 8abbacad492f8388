/* x86-64's answers to the questions the rewriter asks an ISA (../isa.h). */
#include "../isa.h"
#include "decode.h"
#include "detour.h"
#include "elfrel.h"
#include "exitfn.h"
#include "gowrap.h"
#include "kernel-tables.h"
#include "leaf.h"
#include "psabi.h"
#include "regs.h"
#include "site.h"

const struct isa isa_x86_64 = {
    .name = "x86-64",
    .elf_machine = X86_ELF_MACHINE,
    .jump_len = X86_JMP32_LEN,
    .short_jump_len = X86_JMP8_LEN,
    .short_back = 128,   /* rel8 */
    .short_ahead = 127,
    .fill = x86_fill_int3,
    .cfa_sp_reg = X86_DWARF_RSP,
    .call_cfa_off = X86_CALL_CFA_OFF,
    .landing_pad_property = X86_PROPERTY_FEATURE_1_AND,
    .landing_pad_bit = X86_FEATURE_1_IBT,
    .reloc_none = X86_RELOC_NONE,
    .reloc_size = x86_reloc_size,
    .reloc_relative = X86_RELOC_RELATIVE,
    .reloc_pc32 = X86_RELOC_PC32,
    .reloc_plt32 = X86_RELOC_PLT32,
    .reloc_pc64 = X86_RELOC_PC64,
    .module_reloc_width = x86_module_reloc_width,
    .module_reloc_apply = x86_module_reloc_apply,
    .module_reloc_prepare = x86_module_reloc_prepare,
    .insn_len = x86_insn_len,
    .code_refs = x86_code_refs,
    .leaf_value = x86_leaf_value,
    .exits_process = x86_exits_process,
    .sets_signal_action = x86_sets_signal_action,
    .enters_go_abi = x86_enters_go_abi,
    .kernel = &x86_kernel,
    .fetch = &x86_fetch_isa,
};
