/*
 * The probe-table ABI: the only format both the rewriter and the runtimes
 * know. Versioned; all addresses are stored relative to the table header
 * (position independent: PIE, shared libraries, KASLR).
 *
 * The pool an image reserves (linked from libkprewrite-pool, see
 * kprewrite-rt(3)) is four sections, found by name:
 *   .kprewrite.text   AX  detours and out-of-line copies (filled with int3)
 *   .kprewrite.table  A   struct kprw_table + entries + strings (read-only)
 *   .kprewrite.data   WA  struct kprw_state per probe (live state, counters)
 *   .kprewrite.slot   WA  four pointers: the runtime's dispatcher, its return
 *                         handler, its return-probe entry and its return-probe
 *                         return, set by the dynamic linker (relocated
 *                         variables). Pools linked before the fourth have no
 *                         return: their detours carry the return frame; pools
 *                         linked before the third have two, and their return
 *                         probes enter through the dispatcher.
 */
#ifndef KPREWRITE_ABI_H
#define KPREWRITE_ABI_H

/* A kernel's pool (src/runtime/kernel/pool.S): three areas found by their
 * symbols (each with NAME_end), and the dispatcher its detours call
 * directly. Bare names, so that assembly can use them; KPRW_STR spells
 * them as strings. */
#define KPRW_KPOOL_TEXT kprewrite_pool_text
#define KPRW_KPOOL_TEXT_END kprewrite_pool_text_end
#define KPRW_KPOOL_TABLE kprewrite_pool_table
#define KPRW_KPOOL_TABLE_END kprewrite_pool_table_end
#define KPRW_KPOOL_STATE kprewrite_pool_state
#define KPRW_KPOOL_STATE_END kprewrite_pool_state_end
#define KPRW_KDISPATCH kprewrite_dispatch
#define KPRW_STR(name) KPRW_STR_(name)
#define KPRW_STR_(name) #name

#ifndef __ASSEMBLER__
#ifdef __KERNEL__
#include <linux/types.h>   /* the kernel runtime: src/runtime/kernel */
#else
#include <stdint.h>
#endif

#define KPRW_MAGIC 0x5752504bu       /* "KPRW" */
#define KPRW_VERSION 5             /* 2: int3 entries, out-of-line copies; 3: return probes;
                                        4: 28-byte entries, original bytes shared in the
                                        strings, unnamed functions named by address;
                                        5: fixups, short jumps (KPRW_F_JUMP8), names in
                                        the image's dynamic string table */
#define KPRW_VERSION_MIN 4         /* the oldest a reader accepts: 4 differs only in
                                      having neither */

#define KPRW_SEC_TEXT ".kprewrite.text"
#define KPRW_SEC_TABLE ".kprewrite.table"
#define KPRW_SEC_DATA ".kprewrite.data"
#define KPRW_SEC_SLOT ".kprewrite.slot"

#define KPRW_ORIG_MAX 24             /* DCR <= 4 + 15 bytes */

enum kprw_kind { KPRW_KIND_K = 'k', KPRW_KIND_R = 'r' };
enum kprw_verdict { KPRW_OPTIMIZED = 0, KPRW_INT3 = 1 };

enum kprw_entry_flags {
    KPRW_F_AFTER_ENDBR = 1u << 0,    /* SYM+0 was placed after endbr64 (offset 4), or after
                                        the nop that starts a landing-pad piece (offset 1) */
    KPRW_F_FLAGS_SAVED = 1u << 1,    /* the detour saves and restores the flags */
    KPRW_F_ENTRY       = 1u << 2,    /* the probe is at the function entry */
    KPRW_F_KPROBE      = 1u << 3,    /* a kind 'r' entry also asked for as a kprobe (SYM and SYM%return) */
    /* optimized: the site holds a 2-byte jmp rel8 to a trampoline (a jmp
     * rel32 to the detour) in the padding between functions, not a jmp
     * rel32: the function is shorter than 5 bytes (dcr_len >= 2) */
    KPRW_F_JUMP8       = 1u << 4,
    /* the site's original bytes are the first dcr_len bytes at code +
     * ool_off (a copy that needed no relocation), not in the strings:
     * orig_off is unused. (Set only in tables that carry
     * KPRW_T_ORIG_AT_COPY, which older runtimes refuse.) */
    KPRW_F_ORIG_AT_COPY = 1u << 5,
    /* a kernel's SYM+0 placed right after ftrace's call __fentry__ (which
     * ftrace keeps patching): site_rel is past the call, offset names SYM+0
     * (past endbr64: 4); the kprobes API puts the point at the call, as the
     * kernel's kprobes on ftrace do */
    KPRW_F_AFTER_FENTRY = 1u << 6,
    /* in a Go function (a compact detour at its entry, or int3): the
     * runtime runs C for it on the thread's own runtime stack, never on
     * the goroutine's (enter-fast.S); regs->sp is filled there */
    KPRW_F_GO          = 1u << 7,
};

struct kprw_table {
    uint32_t magic;                  /* KPRW_MAGIC; 0 = pool never filled */
    uint16_t version;                /* KPRW_VERSION */
    uint16_t entry_size;             /* sizeof(struct kprw_entry) */
    uint32_t nentries;
    uint32_t strings_off;            /* from the header */
    uint32_t strings_size;
    int32_t dynstr_rel;              /* version 5: the image's dynamic string table
                                        (DT_STRTAB) - header, where KPRW_NAME_DYN names
                                        are (0: none is); version 4: text bytes used */
    int64_t state_rel;               /* .kprewrite.data - header */
    int64_t tramp_rel;               /* return trampoline - header (0: no return probes) */
    uint32_t flags;                  /* enum kprw_table_flags */
    uint32_t nfixups;                /* struct kprw_fixup records after the entries */
    int64_t slot_rel;                /* KPRW_T_ADDED_POOL: .kprewrite.slot - header */
    uint64_t link_addr;              /* the header's link-time address (KPRW_NAME_FDE) */
};

enum kprw_table_flags {
    /* The pool was added to a prebuilt image (no runtime linked in, no
     * relocation for the slots): detours call thunks that read the slots,
     * and the runtime fills them when it finds the table (it starts a
     * read-only PT_LOAD of its own, named by KPRW_DT_TABLE). */
    KPRW_T_ADDED_POOL = 1u << 0,
    /* Return-probe detours enter through the slots' third pointer
     * (__kprewrite_kret_enter): the runtime fills it in an added pool. */
    KPRW_T_KRET_ENTRY = 1u << 1,
    /* Return-probe detours jump to the slots' fourth pointer
     * (__kprewrite_kret_return) when the function returns: the runtime
     * fills it in an added pool. */
    KPRW_T_KRET_RETURN = 1u << 2,
    /* Return-probe detours save %r11 around the entry's call, pass the
     * state's address + 1 in %r11 and read the answer from ZF. */
    KPRW_T_KRET_R11 = 1u << 3,
    /* Compact detours (kprobes at call entries) call the slots' fifth
     * pointer (__kprewrite_enter): the runtime fills it in an added pool. */
    KPRW_T_ENTER = 1u << 4,
    /* Entries may keep their original bytes in their copy
     * (KPRW_F_ORIG_AT_COPY): a user-space table, about an eighth smaller. */
    KPRW_T_ORIG_AT_COPY = 1u << 5,
    /* A loadable kernel module's table (src/rewriter/kmodule.c): its sites
     * hold their original bytes in the file and the runtime patches them
     * when the module loads, from the bytes the loader made; after the
     * strings (at strings_off + strings_size, rounded up to 4) each entry
     * has a 4-byte mask of its site's bytes the loader's relocations write
     * (bit i: byte i), which the original bytes in the strings do not hold
     * and the runtime does not compare. Only the kernel runtime reads it. */
    KPRW_T_MODULE = 1u << 6,
    /* A vmlinux whose KASLR relocations in some DCRs were moved to their
     * copies in the detours (the bzImage's KASLR pass relocates the copy,
     * not the site, which holds the jump): the original bytes in the
     * strings hold those fields as linked. After the strings (at
     * strings_off + strings_size, rounded up to 4) each entry has two
     * 4-byte masks, of the 4-byte fields (bit i: the one at byte i) to
     * which the runtime adds the kernel's KASLR offset, then of those from
     * which it subtracts it (per-cpu references), before it puts those
     * bytes back. Only the kernel runtime reads it. */
    KPRW_T_KASLR = 1u << 7,
    /* A vmlinux in which some sites the kernel patches once at boot (a
     * .return_sites jmp, an alternative) lie in jump-optimized DCRs:
     * the kernel's tables name the copies in the detours instead, so the
     * kernel patches those. After the strings, or the KASLR masks when
     * KPRW_T_KASLR is set too, each entry has KPRW_FOLLOW_PER_ENTRY struct
     * kprw_follow; the runtime puts what the kernel patched the site to
     * back where the original bytes go. Only the kernel runtime reads it. */
    KPRW_T_FOLLOW = 1u << 8,
    /* Some entries' name_off is KPRW_NAME_FOUND (a function without symbol
     * or FDE: "fn@0x..."); a runtime that does not know the name refuses
     * the table rather than read it as a dynamic name. */
    KPRW_T_FOUND_NAMES = 1u << 9,
    /* Event definitions baked with the probes (kprewrite --probe
     * DEFINITION, kprobe_events' syntax: doc/tracing.md) lie between the
     * end of the fixups (header + entries + fixups) and strings_off, each
     * ending with a NUL; the block is not empty and ends with one. The
     * user runtime defines them at start-up, bound to this table's points
     * only, as it defines KPREWRITE_EVENTS's. Readers that do not know the
     * flag never look there (a table without it has nothing between the
     * fixups and the strings); the kernel runtimes refuse it: events are
     * user-space only for now. */
    KPRW_T_EVENTS = 1u << 10,
};
/* The flags this version reads. A runtime refuses a table with others: a
 * newer kprewrite's detours may rely on slots it would not fill, or on a
 * calling convention it does not follow. */
#define KPRW_T_KNOWN (KPRW_T_ADDED_POOL | KPRW_T_KRET_ENTRY | KPRW_T_KRET_RETURN | KPRW_T_KRET_R11 | KPRW_T_ENTER | \
                      KPRW_T_ORIG_AT_COPY | KPRW_T_FOUND_NAMES | KPRW_T_EVENTS)

/* .kprewrite.slot: pointers to the runtime's entry points, 8 bytes each,
 * in this order. A slot section of 16, 24 or 32 bytes is an older pool's. */
enum kprw_slot {
    KPRW_SLOT_DISPATCH,              /* __kprewrite_dispatch: a kprobe hit (inline, shared detours) */
    KPRW_SLOT_RETURN,                /* __kprewrite_return: a return, in detours that carry the frame */
    KPRW_SLOT_KRET_ENTER,            /* __kprewrite_kret_enter: a return probe's entry */
    KPRW_SLOT_KRET_RETURN,           /* __kprewrite_kret_return: jumped to when a hooked call returns */
    KPRW_SLOT_ENTER,                 /* __kprewrite_enter: compact detours */
    KPRW_NSLOTS
};
#define KPRW_SLOT_OFF(slot) (8 * (slot))
#define KPRW_SLOTS_SIZE KPRW_SLOT_OFF(KPRW_NSLOTS)
#define KPRW_SLOTS_KRET_ENTRY KPRW_SLOT_OFF(KPRW_SLOT_KRET_ENTER + 1)    /* the size with the return-probe entry */
#define KPRW_SLOTS_KRET_RETURN KPRW_SLOT_OFF(KPRW_SLOT_KRET_RETURN + 1)  /* ... and its return */

/* The runtime library: an image with a pool added names it in a DT_NEEDED
 * (by path); a DT_NEEDED whose file name starts with KPRW_RUNTIME_STEM
 * names it already. */
#define KPRW_RUNTIME_SONAME "libkprewrite-rt.so.0"
#define KPRW_RUNTIME_STEM "libkprewrite-rt.so"

/* An unnamed function is named by a prefix and its link-time address in
 * lower-case hex: KPRW_FDE_PREFIX when its .eh_frame bounds are all that
 * names it, KPRW_FOUND_PREFIX when nothing does (no symbol, no FDE: kprewrite
 * found it as the target of a call, a pointer or a jump). */
#define KPRW_FDE_PREFIX "fde@0x"
#define KPRW_FOUND_PREFIX "fn@0x"

/* A dynamic tag (the OS-specific range, which the loaders skip) of an image
 * with an added pool: d_ptr is the table's link-time address. The runtime
 * finds the table through the dynamic section the loader has already read,
 * instead of reading the first page of every read-only segment of every
 * object (a page fault each, at every start-up). */
#define KPRW_DT_TABLE 0x6b707277     /* "kprw" */

/* An entry's name_off for a function without a symbol (a stripped image's
 * .eh_frame bounds): its name is "fde@0x" and the function's link-time
 * address in lower-case hex, link_addr + site_rel - offset. */
#define KPRW_NAME_FDE 0xffffffffu
/* The same for a function with neither symbol nor FDE, found by kprewrite
 * (KPRW_T_FOUND_NAMES): "fn@0x" and its address. */
#define KPRW_NAME_FOUND 0xfffffffeu
/* Is name_off one of the names spelled from the address? */
#define KPRW_NAME_BY_ADDR(name_off) ((name_off) >= KPRW_NAME_FOUND)
/* An entry's name_off with this bit (and not KPRW_NAME_BY_ADDR): the name is
 * the image's own, at (name_off & ~KPRW_NAME_DYN) in its dynamic string
 * table (dynstr_rel), which is in memory anyway: a library's exported
 * names are not copied into the table. */
#define KPRW_NAME_DYN 0x80000000u

/* One probe point. Addresses are 32-bit offsets from the header (the pool
 * lies within rel32 reach of the code it probes). The strings hold the
 * names (NUL-terminated) and the sites' original bytes (shared between
 * entries), and end with a NUL. */
struct kprw_entry {
    int32_t site_rel;                /* probe address - header */
    int32_t code_rel;                /* optimized: the detour's entry; int3: the out-of-line
                                        copy of the first instruction - header */
    uint32_t name_off;               /* symbol name, in the strings; or KPRW_NAME_FDE, KPRW_NAME_FOUND */
    uint32_t offset;                 /* from the symbol */
    uint32_t orig_off;               /* the site's dcr_len original bytes, in the strings
                                        (unless KPRW_F_ORIG_AT_COPY) */
    uint16_t hook_off;               /* kind 'r', optimized: where the probed function returns
                                        into its detour when a return probe took the call,
                                        from code (0: none) */
    uint8_t ool_off;                 /* where the int3 path resumes, from code: optimized, the
                                        relocated DCR in the detour; int3, 0 */
    uint8_t dcr_len;                 /* bytes the probe owns at the site: the DCR, or
                                        the first instruction of an int3 probe */
    uint8_t flags;                   /* enum kprw_entry_flags */
    uint8_t kind;                    /* enum kprw_kind */
    uint8_t verdict;                 /* enum kprw_verdict */
    uint8_t reason;                  /* enum kp_reason (reasons.h) */
};

/* Bytes of the image outside the sites that kprewrite changed for the
 * probes, with their original bytes: branches and jump-table entries
 * re-pointed from inside a DCR to its relocated copy, trampolines written
 * into padding. Only the rewriter reads them (to take probes out again);
 * they follow the entries, and the strings hold their bytes. */
/* KPRW_T_FOLLOW: one site of an entry's DCR that the kernel patches at
 * boot in the copy (len 0: none). */
struct kprw_follow {
    uint8_t dcr_off;                 /* where the site is in the DCR */
    uint8_t copy_off;                /* where its copy is, from the entry's out-of-line copy */
    uint8_t len;                     /* its length */
    uint8_t kind;                    /* enum kprw_follow_kind: what the site gets back */
};
#define KPRW_FOLLOW_PER_ENTRY 2

enum kprw_follow_kind {
    /* the copy's bytes as the kernel patched them: every form of the site
     * is position-independent (an alternative) */
    KPRW_FOLLOW_COPY = 0,
    /* a return site (a jmp rel32 to __x86_return_thunk): what the kernel
     * patches it to at the site's own address (ret, or a jmp to the thunk
     * the CPU needs there) */
    KPRW_FOLLOW_RETURN = 1,
    /* the copy's bytes as the kernel patched them, each RIP-relative
     * displacement and each rel32 branch (jmp, jcc) out of the site aimed
     * from the site again (an alternative whose forms have such operands) */
    KPRW_FOLLOW_REAIM = 2,
};

struct kprw_fixup {
    int32_t site_rel;                /* the changed bytes - header */
    uint32_t orig_off;               /* their original bytes, in the strings */
    uint8_t len;                     /* how many (<= KPRW_ORIG_MAX) */
    uint8_t kind;                    /* enum kprw_fixup_kind (for reports) */
    uint16_t pad;
};

enum kprw_fixup_kind {
    KPRW_FIX_BRANCH = 1,             /* a rel32 branch re-pointed */
    KPRW_FIX_BRANCH8 = 2,            /* a rel8 branch re-pointed to a trampoline */
    KPRW_FIX_TABLE = 3,              /* a jump-table entry re-pointed */
    KPRW_FIX_TRAMPOLINE = 4,         /* a jmp rel32 written into padding, or into an evicted window */
    KPRW_FIX_EVICT = 5,              /* a window of instructions evicted for trampolines: a jmp
                                        rel32 to a stub that runs them out of line and jumps
                                        back, then int3 (or trampolines, fixups of their own) */
    KPRW_FIX_KTABLE = 6,             /* a vmlinux table's entry re-pointed to a site's copy (KPRW_T_FOLLOW) */
};

/* Live state, one per entry, in .kprewrite.data: 8 bytes, so that the
 * states of the points a short run hits share few pages. The detours pass
 * it to the dispatcher; zero in the file (a pool added to a prebuilt image
 * keeps its states in zero-filled memory). */
struct kprw_state {
    void *rt;                        /* the runtime's per-probe record, set at run time */
};

#endif /* !__ASSEMBLER__ */
#endif
