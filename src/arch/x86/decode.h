/*
 * x86-64 instruction facts the rewriter needs, decoded over Zydis.
 * This directory is the only code in kprewrite that knows x86 encodings.
 */
#ifndef KPREWRITE_X86_DECODE_H
#define KPREWRITE_X86_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "site.h"         /* X86_JMP32_LEN, X86_JMP8_LEN: the site's jumps */
#define X86_MAX_INSN_LEN 15
#define X86_JCC32_LEN 6   /* 0f 8x rel32 */

enum x86_kind {
    XK_OTHER,
    XK_JMP,        /* direct jmp rel8/rel32 */
    XK_JCC,        /* direct jcc rel8/rel32 */
    XK_CALL,       /* direct call rel32 */
    XK_RET,
    XK_JMP_IND,    /* jmp *r/m */
    XK_CALL_IND,   /* call *r/m */
    XK_LOOP,       /* loop/loope/loopne/jrcxz/jecxz: rel8 only */
    XK_XBEGIN,     /* RTM abort target: relative, not relocatable */
    XK_INT3,
    XK_INTN,       /* int n, into, int1 */
    XK_UD,         /* ud0/ud1/ud2 */
    XK_SYSCALL,    /* syscall, sysenter, sysret, sysexit */
    XK_PRIV,       /* privileged or interrupt-masking (hlt, cli, mov %cr, mov ss, ...) */
    XK_FAR,        /* far jmp/call/ret, iret */
    XK_ENDBR,      /* endbr64 */
};

enum x86_flags {
    XF_RIPREL  = 1u << 0,   /* has a RIP-relative memory operand */
    XF_NOTRACK = 1u << 1,   /* notrack prefix on an indirect branch */
    XF_LOCK    = 1u << 2,
    XF_NOP     = 1u << 3,
    XF_ADDR    = 1u << 4,   /* its RIP-relative operand is an address computed (lea), not memory accessed */
    /* mod=00 rm=101 with a disp32, but the decoder could not decode the
     * operands: the instruction may be RIP-relative (disp_off is where its
     * disp32 would be) and cannot be copied out of line, whose copy would
     * not re-point it (x86_relocatable refuses it) */
    XF_OPS_UNKNOWN = 1u << 5,
};

/* One decoded instruction. */
struct x86_insn {
    uint64_t addr;
    uint64_t target;      /* direct branch/call/loop/xbegin target */
    uint8_t len;
    uint8_t kind;         /* enum x86_kind */
    uint8_t flags;        /* enum x86_flags */
    uint8_t disp_off;     /* offset of the RIP-relative disp32 when XF_RIPREL */
    uint8_t rel_size;     /* direct branches: 8 or 32, the size of the displacement
                             that ends the instruction */
};

/* Decode one instruction at p (avail bytes readable) loaded at addr.
 * Returns its length, or 0 when the bytes are not a valid instruction. */
unsigned x86_decode(const uint8_t *p, size_t avail, uint64_t addr, struct x86_insn *out);
/* The length of the instruction at p alone (0: not one): for sweeps. */
unsigned x86_insn_len(const uint8_t *p, size_t avail);

/* The constants an instruction holds that could be absolute addresses:
 * its immediates and the displacements of its memory operands that are
 * not RIP-relative (as a non-PIE executable addresses code and data), each
 * as written (sign-extended to 64 bits). Returns how many (at most 3). */
unsigned x86_insn_constants(const uint8_t *p, size_t avail, uint64_t vals[3]);

/* AT&T text of the instruction at p, e.g. "push %rbp". Returns buf. */
const char *x86_format(const uint8_t *p, size_t avail, uint64_t addr, char *buf, size_t size);

/* True for endbr64 and the kernel's endbr-like seal/poison patterns
 * (osp nopl (%rax), nopl -42(%rax), ud1 0x0(%rax),%ecx): what
 * arch_adjust_kprobe_addr treats as endbr. Sets *len to the pattern length. */
bool x86_is_endbr_like(const uint8_t *p, size_t avail, unsigned *len);

/* Can this instruction run out of line (in a detour, relocated)? If not,
 * returns false and points *why at a short explanation (XF_OPS_UNKNOWN:
 * the probe's reason is undecodable-operands, not not-relocatable). */
bool x86_relocatable(const struct x86_insn *in, const char **why);

/* Is this a direct branch whose target is a control-flow target (jmp, jcc,
 * call, loop, xbegin)? */
static inline bool x86_has_target(const struct x86_insn *in)
{
    return in->kind == XK_JMP || in->kind == XK_JCC || in->kind == XK_CALL ||
           in->kind == XK_LOOP || in->kind == XK_XBEGIN;
}

/* Does control never fall through to the next instruction? */
static inline bool x86_ends_flow(const struct x86_insn *in)
{
    return in->kind == XK_JMP || in->kind == XK_JMP_IND || in->kind == XK_RET ||
           in->kind == XK_FAR || in->kind == XK_UD;
}

/* Does the instruction (n bytes at p) switch stacks: load %rsp from
 * anything but %rsp or %rbp arithmetic (mov/xchg/pop/cmov/lea from another
 * register or memory)? Return probes refuse such functions. */
bool x86_switches_stack(const uint8_t *p, size_t n);

/* Are the arithmetic flags dead at addr (written before being read, or a
 * call/ret reached first, on the straight-line path)? */
typedef const uint8_t *(*x86_flags_read_fn)(void *ctx, uint64_t vaddr, size_t *avail);
bool x86_flags_dead(x86_flags_read_fn read, void *ctx, uint64_t addr, uint64_t end);

/* How the straight-line code after a lea (at addr; instructions before
 * end) first uses the address it computed: as a memory operand's base or
 * index (data is there: at the address + *disp, the operand's
 * displacement), as an indirect jump's target (a label of the code), or
 * otherwise (copied, stored, compared, passed on, overwritten, or control
 * left the straight line first). */
enum x86_addr_use { X86_USE_OTHER, X86_USE_MEMORY, X86_USE_JUMP };
enum x86_addr_use x86_lea_use(x86_flags_read_fn read, void *ctx, uint64_t addr, uint64_t end, int64_t *disp);

/* Is this `call __fentry__`-shaped (e8 rel32) or a 5-byte nop (the fentry
 * site after boot)? */
bool x86_is_call_or_nop5(const uint8_t *p, size_t avail);
/* The 5-byte nop (nopl 0(%rax,%rax)) ftrace writes over `call __fentry__`
 * at boot. */
extern const uint8_t x86_nop5[5];

/* A byte of what assemblers pad with between functions: int3, or the nop
 * encodings (90, 66 90, 0f 1f /0 with their 2e, 40/44/80/84 and 00 bytes). */
bool x86_is_padding(uint8_t byte);

/* The length of a kernel jump-label site (__jump_table): 2 for a jmp rel8
 * or a 2-byte nop, else 5 (jmp rel32 or a 5-byte nop). p may be NULL. */
unsigned x86_jump_label_len(const uint8_t *p, size_t avail);
/* Does a BUG() site start here: ud2, ud1 or ud0 (0f 0b, 0f b9, 0f ff)? */
bool x86_is_ud_site(const uint8_t *p, size_t avail);
#endif
