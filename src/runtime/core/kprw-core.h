/*
 * The runtime core that the user runtime (src/runtime/user) and the kernel
 * runtime (src/runtime/kernel) share: plain C with no libc and no kernel
 * dependency (integrate.sh copies it into a kernel tree). What a point's
 * code should be, the control directory's commands and the specs they
 * name, and the checks of a probe table's header and entries.
 */
#ifndef KPREWRITE_KPRW_CORE_H
#define KPREWRITE_KPRW_CORE_H
#ifdef __KERNEL__
#include "abi.h"
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kprewrite/abi.h"
#endif

/* What a probe site's bytes are. */
enum code_state {
    CODE_OPTIMIZED,   /* the jmp to the detour */
    CODE_INT3,        /* int3 on byte 0, the original bytes after it */
    CODE_DISABLED,    /* the original bytes: no overhead, no hits */
};

/* The state a point's code should be in: the global knobs (`enabled`,
 * `optimization`), the point's own control state, and whether it can take
 * a jump at all (an optimized verdict with a detour, and nothing that needs
 * the int3 path, such as a post_handler). */
enum code_state kprw_wanted(bool knob_enabled, bool knob_optimization, bool disabled, bool unoptimized,
                            bool can_jump);

/* The control directory's commands: "VERB SPEC". */
enum kprw_op { KPRW_OP_ENABLE, KPRW_OP_DISABLE, KPRW_OP_OPTIMIZE, KPRW_OP_UNOPTIMIZE };
/* Parse line[0..len) (blanks around the words and a final newline
 * allowed): the verb and the spec (a pointer into line, and its length).
 * False: no such verb, no spec, or more than two words. */
bool kprw_ctl_parse(const char *line, size_t len, enum kprw_op *op, const char **spec, size_t *spec_len);
/* What op does to a point's control state. */
void kprw_ctl_apply(enum kprw_op op, bool *disabled, bool *unoptimized);
/* The outcome of a command that matched `matched` points, `can_jump` of
 * them optimizable. */
enum kprw_ctl_result { KPRW_CTL_OK, KPRW_CTL_NO_MATCH, KPRW_CTL_CANNOT_JUMP };
enum kprw_ctl_result kprw_ctl_result(enum kprw_op op, size_t matched, size_t can_jump);

/* SPEC names a point: 0xADDR (its address), SYM+OFF (SYM a glob; OFF in
 * C notation), or a glob on SYM (every offset). */
bool kprw_spec_matches(const char *spec, size_t spec_len, const char *name, uint32_t offset, uint64_t addr);
/* The same for a point that is its function's entry placed past a prefix
 * of `skipped` bytes (x86: endbr64; 0: none): SYM+0 and the function's
 * address name it too, as the kernel moves a probe at SYM+0 past endbr64
 * (arch_adjust_kprobe_addr). */
bool kprw_spec_matches_entry(const char *spec, size_t spec_len, const char *name, uint32_t offset, uint64_t addr,
                             uint32_t skipped);
/* A shell-style glob: * ? [set] [!set] [a-z]; no escapes. */
bool kprw_glob(const char *pat, size_t pat_len, const char *s);

/* What is wrong with a table's header (before any offset is followed). */
enum kprw_table_fault {
    KPRW_TF_NONE,
    KPRW_TF_MAGIC,        /* not KPRW_MAGIC */
    KPRW_TF_VERSION,      /* outside KPRW_VERSION_MIN..KPRW_VERSION */
    KPRW_TF_FLAGS,        /* flags outside `known` */
    KPRW_TF_ENTRY_SIZE,   /* not sizeof(struct kprw_entry) */
};
enum kprw_table_fault kprw_table_fault(const struct kprw_table *t, uint32_t known_flags);

/* KPRW_T_EVENTS: where the event definitions start, from the header (the
 * fixups' end); they run to strings_off. */
static inline uint64_t kprw_table_events_off(const struct kprw_table *t)
{
    return sizeof *t + (uint64_t)t->nentries * t->entry_size +
           (t->version >= 5 ? (uint64_t)t->nfixups * sizeof(struct kprw_fixup) : 0);
}

/* What can be wrong with an entry's own fields, one bit each, in the order
 * kprw_entry_fault_names gives them (the lowest set bit names the fault).
 * dynspan: the bytes a KPRW_NAME_DYN name may start in (0: none may). With
 * `named` 0 the result is only non-zero when something is wrong: no shifts
 * (a start-up checks every entry; see the user runtime's table-check.c). */
static inline unsigned kprw_entry_faults(const struct kprw_entry *x, uint32_t strings_size, uint64_t dynspan,
                                         bool named)
{
    unsigned kind = x->kind, verdict = x->verdict, len = x->dcr_len, opt = verdict == KPRW_OPTIMIZED, s = named;
    uint32_t name = x->name_off, by_addr = KPRW_NAME_BY_ADDR(name), dyn = (name & KPRW_NAME_DYN) && !by_addr;
    return ((kind != KPRW_KIND_K) & (kind != KPRW_KIND_R)) |
           (!opt & (verdict != KPRW_INT3)) << s |
           ((len - 1u >= KPRW_ORIG_MAX) | (opt & (len < ((x->flags & KPRW_F_JUMP8) ? 2u : 5u)))) << 2 * s |   /* 0 wraps */
           ((!dyn & (name >= strings_size) & !by_addr) |
            (dyn & ((uint64_t)(name & ~KPRW_NAME_DYN) >= dynspan))) << 3 * s |
           (((uint64_t)x->orig_off + len > strings_size) & !(x->flags & KPRW_F_ORIG_AT_COPY)) << 4 * s;
}
extern const char kprw_entry_fault_names[5][48];   /* (arrays, not pointers: no address to relocate) */
#endif
