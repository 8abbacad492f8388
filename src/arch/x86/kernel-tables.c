/*
 * The x86 kernel's patch and search tables that name code sites: where
 * each is, its entry layouts (all the sizes kernels have used), how an
 * entry names its site. Data for the generic reader (src/rewriter/ktables.c).
 */
#include "kernel-tables.h"

/* Entry formats: ../shared/design/kprobes-reference.md section 2. */
const struct ktable_desc x86_ktables[] = {
    /* struct exception_table_entry { int insn, fixup, data; } (older: no data) */
    { KT_EX_TABLE, "__ex_table", "__start___ex_table", "__stop___ex_table",
      { { 12, 0 }, { 8, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, 4, KT_ACT_EXTABLE, KT_CHK_NONE },
    /* struct alt_instr: 14 B {s32,s32,u32 ft_flags,u8 instrlen,u8 repllen} since 6.3;
     * 12 B {s32,s32,u16 cpuid,u8 instrlen,u8 repllen}; 13 B with padlen (<= 5.x) */
    { KT_ALTINSTR, ".altinstructions", "__alt_instructions", "__alt_instructions_end",
      { { 14, 12 }, { 12, 10 }, { 13, 10 } }, KT_SITE_REL32, 0, KT_LEN_FIELD, 0, -1, KT_ACT_FOLLOW, KT_CHK_ALT_REPL },
    /* s32 relative to the entry, pointing at a lock prefix */
    { KT_SMP_LOCKS, ".smp_locks", "__smp_locks", "__smp_locks_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 1, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* struct jump_entry { s32 code, target; long key; } */
    { KT_JUMP_TABLE, "__jump_table", "__start___jump_table", "__stop___jump_table",
      { { 16, 0 } }, KT_SITE_REL32, 0, KT_LEN_JUMP_LABEL, 0, 4, KT_ACT_RESERVE, KT_CHK_NONE },
    /* struct static_call_site { s32 addr, key; } */
    { KT_STATIC_CALL, ".static_call_sites", "__start_static_call_sites", "__stop_static_call_sites",
      { { 8, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    { KT_RETPOLINE, ".retpoline_sites", "__retpoline_sites", "__retpoline_sites_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* walked once at boot by apply_returns(), which patches each jmp
     * __x86_return_thunk (to ret, or to the thunk the CPU needs): such a
     * site may move into a detour's copy, its entry re-pointed there */
    { KT_RETURN, ".return_sites", "__return_sites", "__return_sites_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, -1, KT_ACT_FOLLOW, KT_CHK_NONE },
    /* (a call site could follow as well, but a kernel's DCR holds no call:
     * call-in-dcr, the kernel's own rule) */
    { KT_CALL_SITES, ".call_sites", "__call_sites", "__call_sites_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    { KT_IBT_SEAL, ".ibt_endbr_seal", "__ibt_endbr_seal", "__ibt_endbr_seal_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 4, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    { KT_CFI_SITES, ".cfi_sites", "__cfi_sites", "__cfi_sites_end",
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_INSN, 0, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* struct paravirt_patch_site { u8 *instr; u8 type; u8 len; } (kernels <= 6.7) */
    { KT_PARAINSTR, ".parainstructions", "__parainstructions", "__parainstructions_end",
      { { 16, 9 } }, KT_SITE_ABS64, 0, KT_LEN_FIELD, 0, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* struct bug_entry, relative pointers: 12 B (BUGVERBOSE), 16 B (+format), 8 B (no verbose) */
    { KT_BUG_TABLE, "__bug_table", "__start___bug_table", "__stop___bug_table",
      { { 12, 0 }, { 16, 0 }, { 8, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 2, -1, KT_ACT_RESERVE, KT_CHK_UD },
    /* unsigned long: absolute addresses of the 5-byte fentry calls */
    { KT_MCOUNT, "__mcount_loc", "__start_mcount_loc", "__stop_mcount_loc",
      { { 8, 0 } }, KT_SITE_ABS64, 0, KT_LEN_FIXED, 5, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* 6.12's runtime constants (asm/runtime-const.h), a section each:
     * s32 naming the immediate the kernel patches at boot, the imm64 of a
     * movabs (runtime_ptr_SYM) or the imm8 of a shift (runtime_shift_SYM) */
    { KT_RUNTIME_CONST, "runtime_ptr_*", NULL, NULL,
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 8, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    { KT_RUNTIME_CONST, "runtime_shift_*", NULL, NULL,
      { { 4, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 1, -1, KT_ACT_RESERVE, KT_CHK_NONE },
    /* NOKPROBE_SYMBOL(): unsigned long function addresses */
    { KT_KPROBE_BLACKLIST, "_kprobe_blacklist", "__start_kprobe_blacklist", "__stop_kprobe_blacklist",
      { { 8, 0 } }, KT_SITE_ABS64, 0, KT_LEN_FIXED, 1, -1, KT_ACT_BLACKLIST, KT_CHK_NONE },
};

const size_t x86_nktables = sizeof x86_ktables / sizeof x86_ktables[0];

/*
 * Code no table names that must keep its bytes: ftrace copies
 * ftrace_caller and ftrace_regs_caller (to their _end labels) into each
 * trampoline it makes (arch/x86/kernel/ftrace.c, create_trampoline()), so a
 * jump there would be copied out of its reach; verify_cpu runs while a CPU
 * is being brought up, before the per-CPU state a detour's dispatcher
 * uses exists.
 */
const struct kcode_range x86_kcode_keep[] = {
    { "ftrace_caller", "ftrace_caller_end" },
    { "ftrace_regs_caller", "ftrace_regs_caller_end" },
    { "verify_cpu", NULL },
    /* the PVH boot entry: 32-bit code, run before paging (decoded as 64-bit
     * it is garbage); with integrate.sh, all of .head.text is refused too */
    { "pvh_start_xen", NULL },
};

const size_t x86_nkcode_keep = sizeof x86_kcode_keep / sizeof x86_kcode_keep[0];

/* static_cpu_has() jumps to its slow path in .altinstr_aux until the
 * alternatives are applied (early boot), and that path jumps back into the
 * function, to its two outcomes */
const char *const x86_kcode_branching[] = { ".altinstr_aux" };
const size_t x86_nkcode_branching = sizeof x86_kcode_branching / sizeof x86_kcode_branching[0];

/* __pfx_SYM: the 16 bytes of nops before SYM (CONFIG_CALL_PADDING, 6.2+);
 * __cfi_SYM: its kCFI preamble (the type hash FineIBT rewrites) */
const char *const x86_kpadding_prefixes[] = { "__pfx_", "__cfi_" };
const size_t x86_nkpadding_prefixes = sizeof x86_kpadding_prefixes / sizeof x86_kpadding_prefixes[0];
