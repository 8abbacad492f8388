/*
 * An ISA, as the rewriter sees it: the questions it asks about an
 * instruction set's encodings and ELF conventions, answered by one
 * directory of src/arch/ each (src/arch/x86/isa.c for x86-64). The
 * rewriter finds the ISA of an image by its e_machine (isa_for_machine)
 * and asks img->isa; no file outside src/arch/<isa>/ holds an encoding,
 * an instruction length or a relocation type of its own.
 *
 * (Decoding, relocating and emitting are still asked of the x86 layer by
 * name, src/arch/x86/decode.h and detour.h: the next step puts them here.)
 */
#ifndef KPREWRITE_ISA_H
#define KPREWRITE_ISA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ktable_desc;
struct ktable_layout;
struct kcode_range;

/* One PC-relative field of code: at `field` (an address), `width` bytes,
 * read by the CPU from the end of its instruction (`insn_end`), aiming at
 * `target`. */
struct isa_code_ref {
    uint64_t field, insn_end, target;
    unsigned width;
};

/* What a leaf function returns when it computes it from constants alone
 * (a getter of a linker-placed address or size): `value` (an immediate or
 * a PC-relative address), then `nloads` loads, each of width[i] bytes
 * from the address the value so far is. */
struct isa_leaf_value {
    uint64_t value;
    unsigned nloads;
    uint8_t width[2];
};

/* What a kernel of the ISA holds that the rewriter reads (the kernel image
 * kinds, src/rewriter/ktables.c), in the form src/arch/ktable.h describes. */
struct isa_kernel {
    /* the patch and search tables that name code sites: where each is and
     * its entry layouts */
    const struct ktable_desc *tables;
    size_t ntables;
    /* code no table names that must keep its bytes */
    const struct kcode_range *keep;
    size_t nkeep;
    /* sections of code outside every function that branch into functions */
    const char *const *branching;
    size_t nbranching;
    /* prefixes of the symbols a compiler puts on a function's padding: no
     * function's entry */
    const char *const *padding_prefixes;
    size_t npadding_prefixes;
    /* the length of a jump-label site at p (p may be NULL) */
    unsigned (*jump_label_len)(const uint8_t *p, size_t avail);
    /* does a BUG() site start at p? */
    bool (*is_bug_site)(const uint8_t *p, size_t avail);
    /* an alternative (entry e at eaddr, in layout l): its replacement's
     * address and *len */
    uint64_t (*alt_replacement)(const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr, unsigned *len);
    /* is it one the kernel patches by the site's address (a direct call),
     * which no copy can stand for? */
    bool (*alt_by_address)(const struct ktable_layout *l, const uint8_t *e);
    /* what an alternative's form (its original, or a replacement), the len
     * bytes at p of address at, needs to be put back at another address:
     * FOLLOW_COPY, FOLLOW_REAIM or FOLLOW_NONE (ktable.h) */
    uint8_t (*alt_form)(const uint8_t *p, unsigned len, uint64_t at, bool original);
    /* is the return site at p (len bytes) the one jump the kernel patches
     * wherever the site is (FOLLOW_RETURN)? */
    bool (*return_site_moves)(const uint8_t *p, size_t avail, uint64_t site, unsigned len);
    /* is a symbol (name, in the section named section) in the kernel's
     * zero-based per-cpu area, which KASLR does not move: a PC-relative
     * relocation against it is an inverse one (NULL: there is none) */
    bool (*percpu_symbol)(const char *section, const char *name);
    /* the length of ftrace's call at a function's entry, which a probe
     * there is baked past (KPRW_F_AFTER_FENTRY) */
    unsigned fentry_len;
};

struct kprw_fetch_isa;

struct isa {
    const char *name;                /* in messages: "x86-64" */
    uint16_t elf_machine;            /* e_machine */
    /* the site: the jump a jump-optimized probe's site holds (its DCR is
     * at least that long), and the short one that reaches a trampoline
     * near a site shorter than that (0: none) */
    unsigned jump_len, short_jump_len;
    /* what a short branch reaches: from its end back short_back bytes, and
     * ahead short_ahead bytes (a rel8: 128, 127) */
    unsigned short_back, short_ahead;
    /* n bytes no code runs, which trap if run (the fill of unused pool text) */
    void (*fill)(uint8_t *p, size_t n);
    /* the call ABI as unwind data tells it: at a function's entry, entered
     * by a call, the CFA is DWARF register cfa_sp_reg + call_cfa_off */
    unsigned cfa_sp_reg, call_cfa_off;
    /* .note.gnu.property: the feature word that says indirect branches
     * land on markers (x86's IBT), and its bit */
    uint32_t landing_pad_property, landing_pad_bit;
    /* relocations: the type that does nothing; how many bytes of code a
     * relocation applied at load (TEXTREL, KASLR) writes (0: none; its
     * *pc_relative: it survives moving the whole text) */
    uint32_t reloc_none;
    unsigned (*reloc_size)(uint32_t type, bool *pc_relative);
    /* the dynamic relocation of an 8-byte word that the loader sets to the
     * load base + its addend (a pointer in a PIE or library) */
    uint32_t reloc_relative;
    /* a kernel module's relocations: the types the rewriter writes
     * (S + A - P of 4 bytes, the same for a call, of 8 bytes), how many
     * bytes a type writes (-1: one the module loader does not apply), and
     * applying one (false: not a module's, or the value does not fit) */
    uint32_t reloc_pc32, reloc_plt32, reloc_pc64;
    int (*module_reloc_width)(uint32_t type, bool *pc_relative);
    bool (*module_reloc_apply)(uint32_t type, uint64_t S, int64_t A, uint64_t P, uint8_t *field);
    /* the field of a relocation of type as the module loader wants to
     * find it before applying one (x86-64: zero) */
    void (*module_reloc_prepare)(uint32_t type, uint8_t *field);
    /* the length of the instruction at p (avail bytes readable), 0 when
     * the bytes decode as none: a linear sweep proves where instructions
     * start (src/rewriter/entries.c) */
    unsigned (*insn_len)(const uint8_t *p, size_t avail);
    /* every PC-relative field of the len bytes of code at `at`, in order,
     * to fn (stops at fn's false); false when the code does not decode */
    bool (*code_refs)(const uint8_t *code, size_t len, uint64_t at,
                      bool (*fn)(void *ctx, const struct isa_code_ref *r), void *ctx);
    /* what the function whose len bytes of code are at `at` returns, when
     * it is a leaf computing it from constants (isa_leaf_value): false for
     * any other code */
    bool (*leaf_value)(const uint8_t *code, size_t len, uint64_t at, struct isa_leaf_value *out);
    /* whether the function whose len bytes of code are at `at` is the
     * system's _exit (its straight-line code ends the process at once):
     * a stripped static executable's report point */
    bool (*exits_process)(const uint8_t *code, size_t len, uint64_t at);
    /* whether it makes the system call that sets a signal's action (a
     * stripped static executable's sigaction: the static runtime's SIGTRAP
     * guard) */
    bool (*sets_signal_action)(const uint8_t *code, size_t len, uint64_t at);
    /* whether a Go ABI wrapper's first bytes set up Go's register ABI (it
     * calls a Go function from assembly: the ABI0 one of a pair Go's
     * table gives one name; gopclntab.c) */
    bool (*enters_go_abi)(const uint8_t *code, size_t len);
    const struct isa_kernel *kernel;  /* NULL: kprewrite bakes no kernel of the ISA */
    /* tracing's names of its registers, arguments and return value
     * (fetch-isa.h), for event definitions baked with the probes */
    const struct kprw_fetch_isa *fetch;
};

/* Is a CFA of DWARF register reg + off the one at a function's entry,
 * entered by a call? */
static inline bool isa_cfa_at_call_entry(const struct isa *isa, unsigned reg, int64_t off)
{
    return reg == isa->cfa_sp_reg && off == (int64_t)isa->call_cfa_off;
}

/* The ISA of ELF machine m, or NULL when kprewrite has none. */
const struct isa *isa_for_machine(unsigned m);
/* The names of the ISAs there are, for messages ("x86-64"). */
const char *isa_names(void);
/* The ISA a text is checked for before any image says which (an event
 * definition on the command line): the first there is. The bake checks it
 * again for the image's (img->isa). */
const struct isa *isa_default(void);
#endif
