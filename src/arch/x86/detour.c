/*
 * Detour template (user space). Entered by jmp from the probe site:
 *
 *   lea -(128+48)(%rsp),%rsp       skip the red zone; pt_regs ss..orig_ax
 *   push %rdi ... push %r11        the caller-saved registers, as pt_regs
 *   lea -48(%rsp),%rsp             pt_regs bx..r15: %rsp = the pt_regs
 *   [lahf; seto %al; ... ]         arithmetic flags -> pt_regs.flags, when live
 *   lea state(%rip),%rdi; mov %rsp,%rsi
 *   [and $-16,%rsp; push %rsi x2]  unless %rsp is known aligned (function entry)
 *   call *slot(%rip)               the runtime's dispatcher(state, regs)
 *   [pop %rsp]
 *   [flags from pt_regs.flags: add $0x7f,%al sets OF; sahf the rest]
 *   lea 48(%rsp),%rsp; pop %r11 ... pop %rdi   handler writes take effect
 *   lea (128+48)(%rsp),%rsp
 *   relocated DCR                  rip-relative re-pointed, branches as rel32
 *   jmp site+dcr_len
 *
 * The callee-saved registers (bx, bp, r12-r15) are not saved here: the C ABI
 * keeps them intact, and the dispatcher writes them into pt_regs (with ip,
 * sp and orig_ax) only when a handler is about to run, and reloads them from
 * it afterwards, so a handler's writes take effect. A hit that only counts
 * costs the caller-saved registers alone, as a hand-written call to C does.
 * pushfq/popfq is avoided (12-14 ns here); flags are not touched at all when
 * the analysis proves them dead. pt_regs.cs/ss are not filled; a changed
 * pt_regs.sp or .ip is ignored, as in the kernel's optimized path.
 *
 * Kernel (p->kernel): the stack has no red zone and the dispatcher is C, so
 * the template pushes all fifteen general registers (bx, bp, r12-r15 after
 * the caller-saved ones, in pt_regs order) and pops them all after the call;
 * the flags register is recorded whole (pushfq; popq flags(%rsp): IF tells a
 * handler whether interrupts were on) and, when live, restored with sahf as
 * above, never popfq (a handler must not switch interrupts on).
 *
 * Return probes (a function entry, flags dead by the ABI) add a branch on
 * the dispatcher's answer (%rax: did a kretprobe take this call?):
 *
 *   mov %rax,orig_ax(%rsp) ... pops ... cmpq $0,(%rsp) ... jne hooked
 *   relocated DCR; jmp site+dcr_len          not taken: as above
 *   hooked: lea 8(%rsp),%rsp                 the runtime holds the caller's
 *           call <relocated DCR>             return address; this call puts
 *                                            ours in the same slot
 *   hook:   return frame (pt_regs, call the return handler, which gives
 *           back the real return address at the slot); ret
 *
 * Both the function's ret and ours are predicted by the return stack
 * buffer (each pairs with a call), unlike a replaced return address (the
 * image's trampoline, still used by the int3 path), which costs a
 * mispredicted return at every hit and leaves the buffer off by one. The
 * function sees the same stack: its arguments and frame do not move.
 *
 * In a pool with the return-probe entry slot (p->kret_slot), the entry
 * saves only %r11: the runtime's __kprewrite_kret_enter keeps every other
 * register (the flags are dead at a function entry), saves only what its
 * common case uses, and builds the full frame above only when it must
 * (measured: a third of a hit's instructions were the saves and reloads
 * of this entry). It answers in ZF; the state's address + 1 tells it that
 * %r11 was saved (the return slot is above it):
 *
 *   push %r11; lea state+1(%rip),%r11; call *kret_slot(%rip); pop %r11
 *   jne hooked
 *   relocated DCR; jmp site+dcr_len
 *   hooked: as above
 *
 * No register may change that the original instructions leave alone:
 * GCC's -fipa-ra lets a caller keep values in caller-saved registers
 * across a call to a function it knows does not touch them. Flags are
 * another matter: GCC treats them as clobbered by every call (they are a
 * fixed register, which -fipa-ra never counts as preserved), so at an
 * entry and after a return they are dead.
 *
 * And in a pool with the return slot (p->kret_return_slot), the return
 * frame is the runtime's __kprewrite_kret_return, jumped to rather than
 * called (a call and a return less a hit, 0.4 ns of 8.4 measured):
 *
 *   hooked: lea 8(%rsp),%rsp; call <relocated DCR>
 *   hook:   jmp *kret_return_slot(%rip)
 */
#include "buf.h"
#include "decode.h"
#include "kprewrite/ptrace.h"

#include <stdio.h>
#include <string.h>

/* pt_regs above the pushed registers (orig_ax, ip, cs, flags, sp, ss) and
 * below them (r15 ... bx) */
#define UPPER (PTREGS_SIZE - PTREGS_ORIG_AX)
#define LOWER PTREGS_R11
_Static_assert(PTREGS_DI + 8 == PTREGS_ORIG_AX && PTREGS_R11 == 48, "pt_regs layout");

/* mov %reg,off(%rsp) (store) or mov off(%rsp),%reg (load), 64-bit. */
static void mov_rsp(struct buf *b, int reg, int off, bool load)
{
    b1(b, 0x48 | (reg >= 8 ? 0x04 : 0));
    b1(b, load ? 0x8b : 0x89);
    if (off < 128) {
        b1(b, 0x44 | ((reg & 7) << 3));
        b1(b, 0x24);
        b1(b, (uint8_t)off);
    } else {
        b1(b, 0x84 | ((reg & 7) << 3));
        b1(b, 0x24);
        b32(b, (uint32_t)off);
    }
}

/* lea disp(%rsp),%reg */
static void lea_rsp(struct buf *b, int reg, int32_t disp)
{
    b1(b, 0x48 | (reg >= 8 ? 0x04 : 0));
    b1(b, 0x8d);
    if (disp == (int8_t)disp) {
        b1(b, 0x44 | ((reg & 7) << 3));
        b1(b, 0x24);
        b1(b, (uint8_t)disp);
        return;
    }
    b1(b, 0x84 | ((reg & 7) << 3));
    b1(b, 0x24);
    b32(b, (uint32_t)disp);
}

/* Call the runtime through the pointer at addr (call *addr(%rip)), or, in
 * an image the runtime was not linked into, call the thunk at addr (nop;
 * call rel32: the same length, so every offset after it is the same). */
static bool call_slot(struct buf *b, uint64_t addr, bool via_thunk)
{
    if (via_thunk) {
        b1(b, 0x90);
        b1(b, 0xe8);
    } else {
        b1(b, 0xff);
        b1(b, 0x15);
    }
    return rel32(b, addr);
}

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* The caller-saved registers, pushed in pt_regs order (di is highest). */
static const int pushed[] = { RDI, RSI, RDX, RCX, RAX, R8, R9, R10, R11 };
/* All of them (the return trampoline; kernel detours): the callee-saved after. */
static const int tramp_pushed[] = { RDI, RSI, RDX, RCX, RAX, R8, R9, R10, R11, RBX, RBP, R12, R13, R14, R15 };

/* push %reg / pop %reg */
static void push_pop(struct buf *b, int reg, bool pop)
{
    if (reg >= 8)
        b1(b, 0x41);
    b1(b, (uint8_t)((pop ? 0x58 : 0x50) | (reg & 7)));
}

static bool return_frame(struct buf *b, uint64_t slot, bool via_thunk, bool aligned);

/* The arithmetic flags into %ecx as an eflags image (ah | OF << 11 | IF |
 * 2), without pushfq; clobbers %rax, %rdx. Then stored to pt_regs.flags. */
static const uint8_t flags_save[] = {
    0x9f,                               /* lahf */
    0x0f, 0x90, 0xc0,                   /* seto %al */
    0x0f, 0xb6, 0xcc,                   /* movzbl %ah,%ecx */
    0x0f, 0xb6, 0xd0,                   /* movzbl %al,%edx */
    0xc1, 0xe2, 0x0b,                   /* shl $11,%edx */
    0x09, 0xd1,                         /* or %edx,%ecx */
    0x81, 0xc9, 0x02, 0x02, 0x00, 0x00, /* or $0x202,%ecx */
};
/* The flags back from an eflags image in %rax (pt_regs.flags, which a
 * handler may have changed); clobbers %rax, %rcx. */
static const uint8_t flags_restore[] = {
    0x48, 0x89, 0xc1,       /* mov %rax,%rcx */
    0x48, 0xc1, 0xe9, 0x0b, /* shr $11,%rcx */
    0x83, 0xe1, 0x01,       /* and $1,%ecx */
    0x88, 0xc4,             /* mov %al,%ah */
    0x88, 0xc8,             /* mov %cl,%al */
    0x04, 0x7f,             /* add $0x7f,%al: OF = saved OF */
    0x9e,                   /* sahf: SF ZF AF PF CF */
};

/* A return probe's detour in user space with the runtime's return-probe
 * entry: it asks the entry, which saves nothing it does not clobber,
 * whether it took the call (ZF clear), and jumps to the hooked path then
 * (*jne_at: the rel32 to fill). false when out of reach. */
static bool kret_entry(struct buf *b, const struct detour_params *p, size_t *jne_at)
{
    push_pop(b, R11, false);                                    /* push %r11 */
    b1(b, 0x4c); b1(b, 0x8d); b1(b, 0x1d);                      /* lea state+1(%rip),%r11 */
    if (!rel32(b, p->state + 1) || !call_slot(b, p->kret_slot, p->via_thunks))
        return false;
    push_pop(b, R11, true);                                     /* pop %r11: ZF stays */
    b1(b, 0x0f); b1(b, 0x85); *jne_at = b->n; b32(b, 0);        /* jne hooked */
    return true;
}

/* The registers saved as pt_regs below the red zone (all of them, and the
 * whole flags register, for the kernel), the dispatcher called with the
 * probe's state and them, the registers restored; for a return probe
 * its answer tested: jump to the hooked path (*jne_at) when it took the
 * call. false when out of reach. */
static bool save_call_restore(struct buf *b, const struct detour_params *p, size_t *jne_at)
{
    const int red_zone = p->kernel ? 0 : 128;
    lea_rsp(b, RSP, -(red_zone + UPPER));
    for (size_t i = 0; i < sizeof pushed / sizeof pushed[0]; i++)
        push_pop(b, pushed[i], false);
    if (p->kernel) {
        for (size_t i = sizeof pushed / sizeof pushed[0]; i < sizeof tramp_pushed / sizeof tramp_pushed[0]; i++)
            push_pop(b, tramp_pushed[i], false);
        static const uint8_t record[] = { 0x9c,                             /* pushfq */
                                          0x8f, 0x84, 0x24, PTREGS_FLAGS, 0, 0, 0 }; /* popq flags(%rsp) */
        bn(b, record, sizeof record);
    } else {
        lea_rsp(b, RSP, -LOWER);
    }
    if (p->save_flags && !p->ret_slot && !p->kernel) {
        /* eflags image = ah | OF << 11 | IF | 2, without pushfq */
        bn(b, flags_save, sizeof flags_save);
        mov_rsp(b, RCX, PTREGS_FLAGS, false);
    }
    b1(b, 0x48); b1(b, 0x8d); b1(b, 0x3d);                      /* lea state(%rip),%rdi */
    if (!rel32(b, p->state))
        return false;
    static const uint8_t regs_arg[] = { 0x48, 0x89, 0xe6 };     /* mov %rsp,%rsi */
    bn(b, regs_arg, sizeof regs_arg);
    if (!p->entry_aligned) {
        /* the flags are saved by now (and restored from pt_regs) */
        static const uint8_t align[] = { 0x48, 0x83, 0xe4, 0xf0, /* and $-16,%rsp */
                                         0x56, 0x56 };           /* push %rsi; push %rsi */
        bn(b, align, sizeof align);
    }
    if (!call_slot(b, p->slot, p->via_thunks))                  /* call *slot(%rip) */
        return false;
    if (!p->entry_aligned)
        b1(b, 0x5c);                                            /* pop %rsp */
    if (p->ret_slot)
        mov_rsp(b, RAX, PTREGS_ORIG_AX, false);                 /* the dispatcher's answer */
    if (p->save_flags && !p->ret_slot) {
        mov_rsp(b, RAX, PTREGS_FLAGS, true);
        bn(b, flags_restore, sizeof flags_restore);
    }
    if (p->kernel) {
        for (size_t i = sizeof tramp_pushed / sizeof tramp_pushed[0]; i-- > sizeof pushed / sizeof pushed[0];)
            push_pop(b, tramp_pushed[i], true);
    } else {
        lea_rsp(b, RSP, LOWER);
    }
    for (size_t i = sizeof pushed / sizeof pushed[0]; i-- > 0;)
        push_pop(b, pushed[i], true);
    if (p->ret_slot) {
        static const uint8_t test[] = { 0x48, 0x83, 0x3c, 0x24, 0x00 }; /* cmpq $0,(%rsp): orig_ax */
        bn(b, test, sizeof test);
    }
    lea_rsp(b, RSP, red_zone + UPPER);
    if (p->ret_slot) {
        b1(b, 0x0f); b1(b, 0x85); *jne_at = b->n; b32(b, 0);    /* jne hooked */
    }
    return true;
}

/* The hooked path of a return probe, after the DCR's copy (at dcr_off):
 * the caller's return address is in the runtime's instance; call the DCR
 * copy from the same slot, so the function returns here through a
 * predicted ret (*hook_off), and so does the ret below. false when out of
 * reach. */
static bool hooked_return(struct buf *b, const struct detour_params *p, size_t jne_at, size_t dcr_off,
                          size_t *hook_off)
{
    int32_t d = (int32_t)(b->n - (jne_at + 4));
    bput(b, jne_at, &d, 4);
    lea_rsp(b, RSP, 8);
    b1(b, 0xe8);                                                /* call dcr copy */
    if (!rel32(b, p->at + dcr_off))
        return false;
    *hook_off = b->n;
    if (p->kret_return_slot) {
        b1(b, 0xff); b1(b, 0x25);                               /* jmp *kret_return_slot(%rip) */
        return rel32(b, p->kret_return_slot);
    }
    if (!return_frame(b, p->ret_slot, p->via_thunks, p->entry_aligned))
        return false;
    b1(b, 0xc3);                                                /* ret: to the caller */
    return true;
}

size_t x86_emit_detour(const struct detour_params *p, uint8_t *out, size_t *dcr_off, size_t *hook_off,
                       struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, p->at };
    if (p->kernel && p->ret_slot) {
        snprintf(err, errlen, "return probes are not baked into a kernel");
        return 0;
    }
    size_t jne_at = 0;
    if (!(p->ret_slot && p->kret_slot && !p->kernel ? kret_entry(&b, p, &jne_at) : save_call_restore(&b, p, &jne_at)))
        goto far;
    *dcr_off = b.n;
    if (!x86_copy_back(&b, p->dcr, p->dcr_len, p->site, map, err, errlen))
        return 0;
    if (p->ret_slot && !hooked_return(&b, p, jne_at, *dcr_off, hook_off))
        goto far;
    return b.n;
far:
    snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)p->site);
    return 0;
}

/*
 * Shared detours (user space, kind 'k'): each probe's detour is only a head
 * that calls one of the pool's two common bodies (flags live or dead), then
 * its relocated DCR and the jump back; the state's offset is a 4-byte word
 * just before the head, where no control ever flows:
 *
 *   D-4: .long state - R
 *   D:   lea -128(%rsp),%rsp       skip the red zone
 *        call common               pushes R (= D+10) at S-136, S the site's %rsp
 *   R:   relocated DCR
 *        jmp site+dcr_len
 *
 *   common:
 *        lea -160(%rsp),%rsp       %rsp = pt_regs (S-296); R is in its ss slot
 *        mov %rdi,di(%rsp) ... mov %r11,r11(%rsp)
 *        [flags -> pt_regs.flags, as in the inline detour]
 *        pushq ss(%rsp)            R below pt_regs: a handler's regs->ss
 *                                  write cannot change where we return
 *        mov (%rsp),%rax; movslq -14(%rax),%rdi; lea (%rax,%rdi),%rdi
 *        lea 8(%rsp),%rsi; mov %rsp,%rdx; and $-16,%rsp; push %rdx x2
 *        call dispatcher(state, regs); pop %rsp
 *        [flags back from pt_regs.flags]
 *        popq ss(%rsp)             R back in its slot (pop computes the
 *                                  address after it moves %rsp)
 *        mov r11(%rsp),%r11 ... mov di(%rsp),%rdi
 *        lea 160(%rsp),%rsp
 *        ret $128                  to R, and the red zone skipped back
 *
 * pt_regs is laid out exactly as by the inline detour (sp = regs + 168 +
 * 128), so the dispatcher is the same. A hit costs one more predicted
 * call/ret pair than inline; a probe costs 14 bytes + its DCR + 5 instead
 * of about 80.
 */
#define SHARED_HEAD 10   /* lea -128(%rsp),%rsp; call rel32 */

size_t x86_emit_shared_common(uint64_t at, uint64_t slot, bool via_thunk, bool save_flags, uint8_t *out)
{
    struct buf b = { out, 0, at };
    const int below_ss = PTREGS_SS;   /* 160: pt_regs up to its ss slot, where R already is */
    lea_rsp(&b, RSP, -below_ss);
    static const int order[] = { RDI, RSI, RDX, RCX, RAX, R8, R9, R10, R11 };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        mov_rsp(&b, order[i], PTREGS_DI - 8 * (int)i, false);
    if (save_flags) {
        bn(&b, flags_save, sizeof flags_save);
        mov_rsp(&b, RCX, PTREGS_FLAGS, false);
    }
    static const uint8_t call_prep[] = {
        0xff, 0xb4, 0x24, PTREGS_SS, 0, 0, 0,   /* pushq ss(%rsp) */
        0x48, 0x8b, 0x04, 0x24,                 /* mov (%rsp),%rax */
        0x48, 0x63, 0x78, (uint8_t)-(SHARED_HEAD + 4), /* movslq -14(%rax),%rdi */
        0x48, 0x8d, 0x3c, 0x38,                 /* lea (%rax,%rdi),%rdi */
        0x48, 0x8d, 0x74, 0x24, 0x08,           /* lea 8(%rsp),%rsi */
        0x48, 0x89, 0xe2,                       /* mov %rsp,%rdx */
        0x48, 0x83, 0xe4, 0xf0,                 /* and $-16,%rsp */
        0x52, 0x52,                             /* push %rdx; push %rdx */
    };
    bn(&b, call_prep, sizeof call_prep);
    if (!call_slot(&b, slot, via_thunk))
        return 0;
    b1(&b, 0x5c);                               /* pop %rsp */
    if (save_flags) {
        mov_rsp(&b, RAX, 8 + PTREGS_FLAGS, true);                 /* R is below pt_regs */
        bn(&b, flags_restore, sizeof flags_restore);
    }
    static const uint8_t pop_ss[] = { 0x8f, 0x84, 0x24, PTREGS_SS, 0, 0, 0 };   /* popq ss(%rsp) */
    bn(&b, pop_ss, sizeof pop_ss);
    for (size_t i = sizeof order / sizeof order[0]; i-- > 0;)
        mov_rsp(&b, order[i], PTREGS_DI - 8 * (int)i, true);
    lea_rsp(&b, RSP, below_ss);
    static const uint8_t ret128[] = { 0xc2, 0x80, 0x00 };          /* ret $128 */
    bn(&b, ret128, sizeof ret128);
    return b.n;
}

/* The data word before a head of head_len bytes that calls the runtime:
 * state - R, R the call's return address (where the runtime finds it). */
static bool state_word(struct buf *b, uint64_t state, unsigned head_len)
{
    int64_t rel = (int64_t)(state - (b->at + b->n + 4 + head_len));
    if (rel != (int32_t)rel)
        return false;
    b32(b, (uint32_t)(int32_t)rel);
    return true;
}

/* The rest of a shared or compact detour after its head (written, or out
 * of reach: !head_ok): the copy of the DCR and the jump back. Its length,
 * or 0 with err. */
static size_t with_copy(struct buf *b, bool head_ok, const uint8_t *dcr, unsigned dcr_len, uint64_t site,
                        size_t *dcr_off, struct x86_copy_map *map, char *err, size_t errlen)
{
    if (!head_ok) {
        snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)site);
        return 0;
    }
    *dcr_off = b->n;
    return x86_copy_back(b, dcr, dcr_len, site, map, err, errlen) ? b->n : 0;
}

size_t x86_emit_shared_detour(uint64_t at, uint64_t site, const uint8_t *dcr, unsigned dcr_len, uint64_t state,
                              uint64_t common, uint8_t *out, size_t *entry_off, size_t *dcr_off,
                              struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, at };
    bool ok = state_word(&b, state, SHARED_HEAD);
    *entry_off = b.n;
    if (ok) {
        lea_rsp(&b, RSP, -128);
        b1(&b, 0xe8);
        ok = rel32(&b, common);
    }
    return with_copy(&b, ok, dcr, dcr_len, site, dcr_off, map, err, errlen);
}

/*
 * Compact detours (user space, a kprobe at a call entry, where the flags
 * are dead and the red zone is free): the head only calls the runtime's
 * __kprewrite_enter, which finds the state through the return address
 * and keeps every register itself (enter-fast.S):
 *
 *   D-4: .long state - R
 *   D:   call *enter(%rip)       (nop; call thunk in an added pool)
 *   R:   relocated DCR
 *        jmp site+dcr_len
 *
 * 10 bytes + the DCR + 5 a probe; a count-only hit saves three registers
 * in the runtime and calls nothing.
 */
#define COMPACT_HEAD 6   /* call *enter(%rip) */

size_t x86_emit_compact_detour(uint64_t at, uint64_t site, const uint8_t *dcr, unsigned dcr_len, uint64_t state,
                               uint64_t enter, bool via_thunk, uint8_t *out, size_t *entry_off, size_t *dcr_off,
                               struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, at };
    bool ok = state_word(&b, state, COMPACT_HEAD);
    *entry_off = b.n;
    ok = ok && call_slot(&b, enter, via_thunk);
    return with_copy(&b, ok, dcr, dcr_len, site, dcr_off, map, err, errlen);
}

/* Jump through the pointer at slot unless it is still empty (then on past
 * this): cmpq $0,slot(%rip); je 1f; jmp *slot(%rip); 1: */
static bool jmp_through_slot(struct buf *b, uint64_t slot)
{
    b1(b, 0x48); b1(b, 0x83); b1(b, 0x3d);                      /* cmpq $0,slot(%rip) */
    if (!rel32_tail(b, slot, 1))
        return false;
    b1(b, 0x00);
    b1(b, 0x74); b1(b, 0x06);                                   /* je 1f */
    b1(b, 0xff); b1(b, 0x25);                                   /* jmp *slot(%rip) */
    return rel32(b, slot);
}

size_t x86_emit_enter_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out)
{
    struct buf b = { out, 0, at };
    if (!jmp_through_slot(&b, slot))
        return 0;
    b1(&b, 0xc3);                                               /* 1: ret: not counted yet */
    return b.n;
}

bool x86_emit_jmp32(uint64_t at, uint64_t target, uint8_t out[X86_JMP32_LEN])
{
    int64_t d = (int64_t)(target - (at + X86_JMP32_LEN));
    if (d != (int32_t)d)
        return false;
    int32_t d32 = (int32_t)d;
    out[0] = 0xe9;
    memcpy(out + 1, &d32, 4);
    return true;
}

void x86_fill_int3(uint8_t *p, size_t n)
{
    memset(p, 0xcc, n);
}

bool x86_emit_evicted_window(uint64_t at, uint64_t stub, unsigned len, uint8_t *out)
{
    if (len < X86_JMP32_LEN || !x86_emit_jmp32(at, stub, out))
        return false;
    x86_fill_int3(out + X86_JMP32_LEN, len - X86_JMP32_LEN);
    return true;
}

bool x86_emit_site_jump8(uint64_t site, uint64_t tramp, unsigned dcr_len, uint8_t *out)
{
    return x86_site_jump8(out, site, tramp, dcr_len);
}

bool x86_emit_site_jump(uint64_t site, uint64_t detour, unsigned dcr_len, uint8_t *out)
{
    return x86_site_jump(out, site, detour, dcr_len);   /* (a short site jumps rel8: x86_emit_site_jump8) */
}

/*
 * The return trampoline of an image's return probes. A probed function's
 * return address was replaced by this; its `ret` lands here with %rsp = S,
 * the caller's stack pointer after the return:
 *
 *   lea -(8+48)(%rsp),%rsp         S-8: the real return address, later;
 *                                  pt_regs orig_ax..ss
 *   push %rdi ... push %r15        all 15 general registers, as pt_regs
 *   mov %rsp,%rdi; mov %rsp,%rbx; and $-16,%rsp
 *   call *slot(%rip)               __kprewrite_return(regs): the real return
 *                                  address (and the return handlers ran)
 *   mov %rbx,%rsp; mov %rax,PTREGS_SIZE(%rsp)
 *   pop %r15 ... pop %rdi          a handler's writes take effect
 *   lea (48+8)(%rsp),%rsp          %rsp = S again
 *   jmp *-8(%rsp)                  to the caller
 *
 * jmp, not ret: the `ret` into the trampoline consumed the caller's entry of
 * the return stack buffer, so a second ret would mispredict and leave the
 * buffer off by one for every return after it. S-8 is safe below %rsp: the
 * caller's `call` already overwrote it, and signal frames skip the red zone.
 * Flags are dead at a return (ABI).
 */

/* A return lands here with %rsp = S + 8, S the return address's slot:
 * build pt_regs below S, call the return handler through *slot (it returns
 * the real return address), store that at S, restore the registers (a
 * handler's writes take effect), leave %rsp = S + 8 - 8 = S ready for
 * `ret`. Returns false when slot is out of reach. */
static bool return_frame(struct buf *b, uint64_t slot, bool via_thunk, bool aligned)
{
    lea_rsp(b, RSP, -(8 + UPPER));
    for (size_t i = 0; i < sizeof tramp_pushed / sizeof tramp_pushed[0]; i++)
        push_pop(b, tramp_pushed[i], false);
    static const uint8_t call_prep[] = { 0x48, 0x89, 0xe7,        /* mov %rsp,%rdi */
                                         0x48, 0x89, 0xe3,        /* mov %rsp,%rbx */
                                         0x48, 0x83, 0xe4, 0xf0 }; /* and $-16,%rsp */
    /* A function entered with %rsp = 8 mod 16 (the ABI; the analysis
     * proved it) returns here with pt_regs 16-aligned: no realignment */
    bn(b, call_prep, aligned ? 3 : sizeof call_prep);
    if (!call_slot(b, slot, via_thunk))                         /* call *slot(%rip) */
        return false;
    static const uint8_t after[] = { 0x48, 0x89, 0xdc };        /* mov %rbx,%rsp */
    if (!aligned)
        bn(b, after, sizeof after);
    mov_rsp(b, RAX, PTREGS_SIZE, false);                        /* mov %rax,PTREGS_SIZE(%rsp) */
    for (size_t i = sizeof tramp_pushed / sizeof tramp_pushed[0]; i-- > 0;)
        push_pop(b, tramp_pushed[i], true);
    lea_rsp(b, RSP, UPPER);                                     /* %rsp = S */
    return true;
}

size_t x86_emit_ret_trampoline(uint64_t at, uint64_t slot, bool via_thunk, uint8_t *out)
{
    struct buf b = { out, 0, at };
    if (!return_frame(&b, slot, via_thunk, false))
        return 0;
    static const uint8_t jmp_back[] = { 0x48, 0x8d, 0x64, 0x24, 0x08, /* lea 8(%rsp),%rsp */
                                        0xff, 0x64, 0x24, 0xf8 };     /* jmp *-8(%rsp) */
    bn(&b, jmp_back, sizeof jmp_back);
    return b.n;
}

size_t x86_emit_kret_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out)
{
    struct buf b = { out, 0, at };
    if (!jmp_through_slot(&b, slot))
        return 0;
    static const uint8_t rest[] = { 0x45, 0x31, 0xdb,           /* 1: xor %r11d,%r11d */
                                    0xc3 };                     /* ret */
    bn(&b, rest, sizeof rest);
    return b.n;
}

size_t x86_emit_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out)
{
    struct buf b = { out, 0, at };
    b1(&b, 0x48); b1(&b, 0x8b); b1(&b, 0x05);                   /* mov slot(%rip),%rax */
    if (!rel32(&b, slot))
        return 0;
    static const uint8_t rest[] = { 0x48, 0x85, 0xc0,           /* test %rax,%rax */
                                    0x74, 0x02,                 /* je 1f */
                                    0xff, 0xe0,                 /* jmp *%rax */
                                    0x31, 0xc0,                 /* 1: xor %eax,%eax */
                                    0xc3 };                     /* ret */
    bn(&b, rest, sizeof rest);
    return b.n;
}
