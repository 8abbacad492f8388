/*
 * Facts an image imposes on probes, read by one table-driven reader:
 * the vmlinux patch/search tables (each entry's site is reserved, some add
 * branch targets), the kprobe blacklist, and relocations into code.
 */
#ifndef KPREWRITE_KTABLES_H
#define KPREWRITE_KTABLES_H
#include "image.h"
#include "symbols.h"

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

struct krange {
    uint64_t start;
    uint32_t len;
    uint8_t table;         /* enum ktable_id */
    /* KT_RELOC of a vmlinux whose .rela sections kprewrite can edit: the
     * relocation may move with its instruction into a detour's copy */
    uint8_t movable;
    uint8_t inverse;       /* KT_RELOC: an inverse one (KASLR subtracts its offset) */
    /* a site of a table the kernel walks once at boot to patch it
     * (KT_ACT_FOLLOW): a jump's copy may carry it, its entry re-pointed;
     * FOLLOW_RETURN or FOLLOW_COPY: what the runtime puts back */
    uint8_t follow;
    uint64_t field;        /* follow: the entry's s32 naming the site */
};

/* How a followed site is put back when its probe's site is restored (the
 * kernel patched the copy): the copy's bytes as they are (an alternative
 * whose every form is position-independent), as the kernel patches a
 * return site at the site's address, or the copy's bytes with their
 * RIP-relative and rel32 branch operands aimed from the site again.
 * abi.h's KPRW_FOLLOW_*. */
enum { FOLLOW_NONE, FOLLOW_COPY, FOLLOW_RETURN, FOLLOW_REAIM };

/* A control-flow target named by a table entry (jump-label target, fixup). */
struct kref {
    uint64_t target;
    uint64_t from;         /* the table entry's address */
    uint8_t table;
};

struct kfacts {
    struct krange *reserved;   /* sites that must keep their bytes, sorted by start */
    size_t nreserved;
    struct kref *targets;      /* extra control-flow targets, sorted by target */
    size_t ntargets;
    uint64_t *extable;         /* instructions with an exception-table entry, sorted */
    size_t nextable;
    uint64_t *extable_blind;   /* those of them whose fixup lands in no function, sorted */
    size_t nextable_blind;
    struct krange *blacklist;  /* blacklisted code ranges, sorted by start */
    size_t nblacklist;
    struct krange *wide;       /* the section-wide ones of them (few) */
    size_t nwide;
    unsigned count[KT__COUNT]; /* entries read per table */
    unsigned entsize[KT__COUNT];
};

/* Code that no table names but that must keep its bytes (arch data): from
 * the symbol start to the symbol end, or (end NULL) the function start is. */
struct kcode_range { const char *start, *end; };

/* How a table is read: the generic reader (ktables.c) takes a description
 * of each table from the architecture (src/arch/x86/kernel-tables.c). */
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
};
enum ktable_check {
    KT_CHK_NONE,
    KT_CHK_UD,            /* every site is a BUG() trap (ud) */
    KT_CHK_ALT_REPL,      /* the replacement (s32 at +4, its length after len_off's byte)
                             lies in .altinstr_replacement */
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

/* Name of a table as printed in reasons (reserved:<name>). */
const char *ktable_name(enum ktable_id id);
/* Is name a symbol of a function's padding in a kernel (__pfx_, __cfi_)? */
bool ktable_padding_symbol(const char *name);

/* Read every table present in img, and its KASLR relocation sites: from
 * relocs (a vmlinux.relocs) when not NULL, else from its .rela sections (a
 * vmlinux that has some .rela sections but none for code had them stripped:
 * an error without relocs). Returns 0, or -1 with a one-line error (a table
 * that exists but cannot be understood is an error: guessing could corrupt
 * the kernel). */
int kfacts_load(struct kfacts *kf, const struct image *img, const struct symbols *sy,
                const char *relocs, char *err, size_t errlen);
void kfacts_free(struct kfacts *kf);

/* First reserved range overlapping [start, start + len) that is neither a
 * movable relocation nor a site that may follow its instruction and lies
 * within [lo, hi) (a DCR: it moves whole with the copy). */
const struct krange *kfacts_fixed_overlap(const struct kfacts *kf, uint64_t start, uint64_t len, uint64_t lo,
                                          uint64_t hi);
/* The movable relocations in [start, start + len): bit i of *plus (of
 * *minus) when a 4-byte field KASLR adds its offset to (subtracts it from)
 * starts at start + i. Returns how many. */
unsigned kfacts_movable_in(const struct kfacts *kf, uint64_t start, uint64_t len, uint32_t *plus, uint32_t *minus);

/* The table sites that may follow their instruction into a copy
 * (krange.follow) starting in [start, start + len): up to max of them in
 * out. Returns how many there are. */
unsigned kfacts_follow_in(const struct kfacts *kf, uint64_t start, uint64_t len, const struct krange **out,
                          unsigned max);

/* First reserved range overlapping [start, start+len), or NULL. */
const struct krange *kfacts_reserved_overlap(const struct kfacts *kf, uint64_t start, uint64_t len);
/* Blacklist range containing addr, or NULL. */
const struct krange *kfacts_blacklisted(const struct kfacts *kf, uint64_t addr);
/* Does any exception-table instruction lie in [start, end)? Returns it or 0. */
uint64_t kfacts_extable_in(const struct kfacts *kf, uint64_t start, uint64_t end);
/* The first of them whose fixup lands in code no function covers, or 0. */
uint64_t kfacts_extable_blind_in(const struct kfacts *kf, uint64_t start, uint64_t end);
#endif
