/*
 * The x86 kernel's patch and search tables that name code sites: where
 * each is, its entry layouts (all the sizes kernels have used), how an
 * entry names its site; its alternatives' layout and which of their forms
 * can move; the code it keeps. Data and answers for the generic reader
 * (src/rewriter/ktables.c), as isa->kernel.
 */
#include "kernel-tables.h"
#include "decode.h"

#include <string.h>

/* Entry formats: ../shared/design/kprobes-reference.md section 2. */
static const struct ktable_desc x86_ktables[] = {
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
      { { 12, 0 }, { 16, 0 }, { 8, 0 } }, KT_SITE_REL32, 0, KT_LEN_FIXED, 2, -1, KT_ACT_RESERVE, KT_CHK_BUG },
    /* unsigned long: absolute addresses of the 5-byte fentry calls */
    { KT_MCOUNT, "__mcount_loc", "__start_mcount_loc", "__stop_mcount_loc",
      { { 8, 0 } }, KT_SITE_ABS64, 0, KT_LEN_FIXED, 5, -1, KT_ACT_PASS, KT_CHK_NONE },
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


/*
 * Code no table names that must keep its bytes: ftrace copies
 * ftrace_caller and ftrace_regs_caller (to their _end labels) into each
 * trampoline it makes (arch/x86/kernel/ftrace.c, create_trampoline()), so a
 * jump there would be copied out of its reach; verify_cpu runs while a CPU
 * is being brought up, before the per-CPU state a detour's dispatcher
 * uses exists.
 */
static const struct kcode_range x86_kcode_keep[] = {
    { "ftrace_caller", "ftrace_caller_end" },
    { "ftrace_regs_caller", "ftrace_regs_caller_end" },
    { "verify_cpu", NULL },
    /* the PVH boot entry: 32-bit code, run before paging (decoded as 64-bit
     * it is garbage); with integrate.sh, all of .head.text is refused too */
    { "pvh_start_xen", NULL },
};


/* static_cpu_has() jumps to its slow path in .altinstr_aux until the
 * alternatives are applied (early boot), and that path jumps back into the
 * function, to its two outcomes */
static const char *const x86_kcode_branching[] = { ".altinstr_aux" };

/* __pfx_SYM: the 16 bytes of nops before SYM (CONFIG_CALL_PADDING, 6.2+);
 * __cfi_SYM: its kCFI preamble (the type hash FineIBT rewrites) */
static const char *const x86_kpadding_prefixes[] = { "__pfx_", "__cfi_" };

/* struct alt_instr (the layouts above): the replacement is named by the
 * s32 at +4, its length is the byte after the instruction's */
static uint64_t x86_alt_replacement(const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr, unsigned *len)
{
    int32_t r;
    memcpy(&r, e + 4, 4);
    *len = e[l->len_off + 1];
    return eaddr + 4 + (int64_t)r;
}

/* 6.12's ALT_FLAG_DIRECT_CALL (bit 1 of ft_flags' upper half, in the
 * 14-byte layout): the kernel makes up a call to where the site's
 * indirect call goes, from the site's own address */
static bool x86_alt_by_address(const struct ktable_layout *l, const uint8_t *e)
{
    uint32_t ft_flags = 0;
    if (l->entsize == 14)
        memcpy(&ft_flags, e + 8, 4);
    return (ft_flags >> 16) & 2;
}

/* What an alternative's form (its original, or a replacement) at [at, at +
 * len) needs to be put back at another address: FOLLOW_COPY when it is
 * position-independent; FOLLOW_REAIM when its only relative operands are
 * RIP-relative displacements and rel32 branches (jmp, jcc) out of it,
 * which the kernel aims from wherever it puts the form, and which the
 * runtime can aim again from the site; FOLLOW_NONE when it does not decode,
 * is a call (a kernel's DCR holds none), or has a rel8 branch out of it (or
 * the original any rel8 branch: copied out of line it would grow). */
static uint8_t x86_alt_form(const uint8_t *p, unsigned len, uint64_t at, bool original)
{
    struct x86_insn in;
    uint8_t how = FOLLOW_COPY;
    for (unsigned off = 0, n; off < len; off += n) {
        n = x86_decode(p + off, len - off, at + off, &in);
        if (!n || in.kind == XK_CALL || in.kind == XK_CALL_IND || (in.flags & XF_OPS_UNKNOWN))
            return FOLLOW_NONE;
        if (in.flags & XF_RIPREL)
            how = FOLLOW_REAIM;
        if (!x86_has_target(&in))
            continue;
        bool inside = in.target >= at && in.target < at + len;
        bool rel32 = (in.kind == XK_JMP && n == X86_JMP32_LEN) || (in.kind == XK_JCC && n == X86_JCC32_LEN);
        if (original ? !rel32 : !inside && !rel32)
            return FOLLOW_NONE;
        if (!inside || original)
            how = FOLLOW_REAIM;
    }
    return how;
}

/* A return site is one jmp rel32 (to the return thunk): its copy is the
 * same jmp, which apply_returns() patches wherever it is. */
static bool x86_return_site_moves(const uint8_t *p, size_t avail, uint64_t site, unsigned len)
{
    struct x86_insn in;
    return len == X86_JMP32_LEN && x86_decode(p, avail, site, &in) == X86_JMP32_LEN && in.kind == XK_JMP &&
           in.rel_size == 32;
}

/* In .data..percpu, which is linked at 0 (arch/x86/tools/relocs.c's
 * is_percpu_sym), except the symbols of the section's load address. */
static bool x86_percpu_symbol(const char *section, const char *name)
{
    return strcmp(section, ".data..percpu") == 0 && strcmp(name, "__init_begin") != 0 &&
           strncmp(name, "__per_cpu_load", 14) != 0 && strncmp(name, "init_per_cpu_", 13) != 0;
}

#define N(a) (sizeof (a) / sizeof (a)[0])

const struct isa_kernel x86_kernel = {
    .tables = x86_ktables, .ntables = N(x86_ktables),
    .keep = x86_kcode_keep, .nkeep = N(x86_kcode_keep),
    .branching = x86_kcode_branching, .nbranching = N(x86_kcode_branching),
    .padding_prefixes = x86_kpadding_prefixes, .npadding_prefixes = N(x86_kpadding_prefixes),
    .jump_label_len = x86_jump_label_len,
    .is_bug_site = x86_is_ud_site,
    .alt_replacement = x86_alt_replacement,
    .alt_by_address = x86_alt_by_address,
    .alt_form = x86_alt_form,
    .return_site_moves = x86_return_site_moves,
    .percpu_symbol = x86_percpu_symbol,
    .fentry_len = 5,
};
