/*
 * A kernel's patch and search tables, as an ISA describes them to the
 * rewriter's one table-driven reader (src/rewriter/ktables.c): which
 * tables there are (their ids, which reasons name: reserved:<table>), how
 * an entry names its site, and how a site that follows its instruction
 * into a detour's copy is put back. Each ISA gives its tables' layouts as
 * data in these terms (isa->kernel, isa.h; x86-64's in
 * src/arch/x86/kernel-tables.c).
 */
#ifndef KPREWRITE_ARCH_KTABLE_H
#define KPREWRITE_ARCH_KTABLE_H
#include <stdint.h>

enum ktable_id {
    KT_EX_TABLE, KT_ALTINSTR, KT_SMP_LOCKS, KT_JUMP_TABLE, KT_STATIC_CALL, KT_RETPOLINE,
    KT_RETURN, KT_CALL_SITES, KT_IBT_SEAL, KT_CFI_SITES, KT_PARAINSTR, KT_BUG_TABLE,
    KT_MCOUNT, KT_KPROBE_BLACKLIST, KT_RELOC, KT_RUNTIME_CONST,
    KT_CODE_BRANCHING,     /* code outside functions that branches into them (.altinstr_aux) */
    /* blacklist sources that are address ranges rather than tables */
    KT_KPROBES_TEXT, KT_NOINSTR_TEXT, KT_ENTRY_TEXT, KT_INIT_TEXT, KT_EXIT_TEXT,
    KT_STATIC_CALL_TEXT, KT_HEAD_TEXT, KT_CFI_PREAMBLE,
    KT_ARCH_CODE,          /* code the architecture says must keep its bytes */
    KT__COUNT
};

/* How a followed site is put back when its probe's site is restored (the
 * kernel patched the copy): the copy's bytes as they are (an alternative
 * whose every form is position-independent), as the kernel patches a
 * return site at the site's address, or the copy's bytes with their
 * RIP-relative and rel32 branch operands aimed from the site again.
 * abi.h's KPRW_FOLLOW_*. */
enum { FOLLOW_NONE, FOLLOW_COPY, FOLLOW_RETURN, FOLLOW_REAIM };

/* Code that no table names but that must keep its bytes (arch data): from
 * the symbol start to the symbol end, or (end NULL) the function start is. */
struct kcode_range { const char *start, *end; };

/* How a table is read: the generic reader (src/rewriter/ktables.c) takes a
 * description of each table from the ISA (isa->kernel->tables; x86-64's:
 * src/arch/x86/kernel-tables.c). */
enum ktable_site { KT_SITE_REL32, KT_SITE_ABS64 };   /* s32 relative to the field, or an address */
enum ktable_len {
    KT_LEN_FIXED,         /* fixed_len bytes */
    KT_LEN_FIELD,         /* the entry's byte at len_off */
    KT_LEN_INSN,          /* the instruction there */
    KT_LEN_JUMP_LABEL,    /* the architecture's jump-label site (its short or long form) */
};
enum ktable_action {
    KT_ACT_RESERVE,       /* the site keeps its bytes */
    KT_ACT_EXTABLE,       /* the instruction may fault to a fixup */
    KT_ACT_BLACKLIST,     /* the function there is not probed */
    KT_ACT_FOLLOW,        /* as RESERVE, but a site patched once at boot that its copy
                             can stand for may move into a detour's copy, its entry
                             re-pointed (krange.follow) */
    KT_ACT_PASS,          /* as RESERVE, but a probe at the site goes right past it,
                             which keeps its entry (krange.pass: ftrace's fentry call,
                             which ftrace goes on patching) */
};
enum ktable_check {
    KT_CHK_NONE,
    KT_CHK_BUG,           /* every site is a BUG() trap (isa->kernel->is_bug_site) */
    KT_CHK_ALT_REPL,      /* the replacement (isa->kernel->alt_replacement) lies in
                             .altinstr_replacement, no longer than the original */
};

/* One candidate layout: entry size and, for KT_LEN_FIELD, where the length byte is. */
struct ktable_layout { uint8_t entsize, len_off; };

struct ktable_desc {
    enum ktable_id id;
    const char *section;               /* section name, when the table has its own; "PREFIX*":
                                          every section whose name starts with PREFIX is one */
    const char *start_sym, *stop_sym;  /* bounds when it lives inside another section */
    struct ktable_layout layouts[4];   /* tried in order; entsize 0 ends the list */
    enum ktable_site enc;
    uint8_t site_off;
    enum ktable_len len_mode;
    uint8_t fixed_len;
    int8_t target_off;                 /* rel32 field naming a control-flow target, or -1 */
    enum ktable_action action;
    enum ktable_check check;
};

#endif
