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
#include "detour.h"
#include "decode.h"
#include "kprewrite/ptrace.h"

#include "zydis.h"

#include <stdio.h>
#include <string.h>

/* pt_regs above the pushed registers (orig_ax, ip, cs, flags, sp, ss) and
 * below them (r15 ... bx) */
#define UPPER (PTREGS_SIZE - PTREGS_ORIG_AX)
#define LOWER PTREGS_R11
_Static_assert(PTREGS_DI + 8 == PTREGS_ORIG_AX && PTREGS_R11 == 48, "pt_regs layout");

/* Where an emitter writes: p NULL counts the bytes without writing them
 * (the plan's lengths come from the same code as the bytes). */
struct buf {
    uint8_t *p;
    size_t n;
    uint64_t at;   /* address of p[0] */
};

static void bn(struct buf *b, const void *x, size_t n)
{
    if (b->p)
        memcpy(b->p + b->n, x, n);
    b->n += n;
}
static void b1(struct buf *b, uint8_t x) { bn(b, &x, 1); }
/* Overwrite n bytes at off, written before. */
static void bput(struct buf *b, size_t off, const void *x, size_t n)
{
    if (b->p)
        memcpy(b->p + off, x, n);
}
static void b32(struct buf *b, uint32_t x) { bn(b, &x, 4); }

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

/* A rel32 to target from the end of the instruction, which ends tail
 * bytes (an immediate) after these 4 */
static bool rel32_tail(struct buf *b, uint64_t target, unsigned tail)
{
    int64_t d = (int64_t)(target - (b->at + b->n + 4 + tail));
    if (d != (int32_t)d)
        return false;
    b32(b, (uint32_t)(int32_t)d);
    return true;
}

/* rel32 from the end of an instruction ending at b->at+b->n+4 to target */
static bool rel32(struct buf *b, uint64_t target) { return rel32_tail(b, target, 0); }

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

/* A call whose return address is ret (the original code), not the copy:
 * unwinders, C++ exceptions and backtraces keep seeing the probed
 * function. Registers and flags are untouched:
 *   lea -8(%rsp),%rsp; push %rax; lea ret(%rip),%rax; mov %rax,8(%rsp);
 *   pop %rax; then jmp target, or jmp *OP for an indirect call */
static bool emulated_call_head(struct buf *b, uint64_t ret)
{
    static const uint8_t head[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8, 0x50, 0x48, 0x8d, 0x05 };
    static const uint8_t store[] = { 0x48, 0x89, 0x44, 0x24, 0x08, 0x58 };
    bn(b, head, sizeof head);
    if (!rel32(b, ret))
        return false;
    bn(b, store, sizeof store);
    return true;
}

static bool emulated_call(struct buf *b, uint64_t target, uint64_t ret)
{
    if (!emulated_call_head(b, ret))
        return false;
    b1(b, 0xe9);
    return rel32(b, target);
}

/* The jmp that ends an emulated indirect call: `call *OP` (ff /2) becomes
 * `jmp *OP` (ff /4) through the same operand, as the call would have read
 * it: a RIP-relative displacement re-pointed for the new address, and an
 * %rsp-based one raised by the 8 bytes the emulation pushed (the call reads
 * its operand before it pushes). False when that cannot be encoded. */
static bool indirect_call_to_jmp(struct buf *b, const uint8_t *p, unsigned len, uint64_t from)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, len, &zi, ops)) || zi.mnemonic != ZYDIS_MNEMONIC_CALL ||
        zi.opcode != 0xff || !(zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) || zi.raw.modrm.reg != 2)
        return false;
    const ZydisDecodedOperand *op = &ops[0];
    unsigned m = zi.raw.modrm.offset;
    size_t start = b->n;
    bn(b, p, m + 1);
    b->p[start + m] = (uint8_t)((p[m] & ~0x38) | (4 << 3));        /* ff /4: jmp */
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (op->reg.value == ZYDIS_REGISTER_RSP)
            return false;                                           /* the pushes moved it */
        return true;
    }
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
        return false;
    if (op->mem.base == ZYDIS_REGISTER_RIP) {
        bn(b, p + m + 1, len - (m + 1));
        int32_t disp;
        memcpy(&disp, p + zi.raw.disp.offset, 4);
        uint64_t target = from + len + (int64_t)disp;
        int64_t nd = (int64_t)(target - (b->at + b->n));
        if (nd != (int32_t)nd)
            return false;
        int32_t nd32 = (int32_t)nd;
        memcpy(b->p + start + zi.raw.disp.offset, &nd32, 4);
        return true;
    }
    if (op->mem.base != ZYDIS_REGISTER_RSP && op->mem.index != ZYDIS_REGISTER_RSP) {
        bn(b, p + m + 1, len - (m + 1));                            /* same operand */
        return true;
    }
    if (op->mem.base != ZYDIS_REGISTER_RSP || !zi.raw.sib.offset)
        return false;
    /* %rsp as the base: ModRM mod 00/01/10, a SIB byte, then disp0/8/32 */
    bn(b, p + m + 1, 1);                                            /* the SIB */
    int64_t disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0;
    disp += 8;
    uint8_t mod = disp == (int8_t)disp ? 1 : 2;
    if (disp != (int32_t)disp)
        return false;
    b->p[start + m] = (uint8_t)((b->p[start + m] & 0x3f) | (mod << 6));
    if (mod == 1)
        b1(b, (uint8_t)disp);
    else
        b32(b, (uint32_t)(int32_t)disp);
    return true;
}

/* Copy one DCR instruction to b, relocated for its new address. A call
 * must end the copy (ret_to, the original code after the DCR, != 0): it is
 * emulated so that the callee returns straight to ret_to, never into the
 * pool (which has no unwind information: a C++ throw through such a frame
 * would terminate, and backtraces would stop there). */
static bool relocate(struct buf *b, const uint8_t *p, const struct x86_insn *ip, uint64_t ret_to,
                     char *err, size_t errlen)
{
    const struct x86_insn in = *ip;
    uint64_t from = in.addr;
    unsigned len = in.len;
    switch (in.kind) {
    case XK_JMP:
        b1(b, 0xe9);
        if (!rel32(b, in.target))
            goto far;
        return true;
    case XK_CALL:
        if (!ret_to)
            goto call_inside;
        if (!emulated_call(b, in.target, ret_to))
            goto far;
        return true;
    case XK_CALL_IND:
        if (!ret_to)
            goto call_inside;
        if (!emulated_call_head(b, ret_to))
            goto far;
        if (!indirect_call_to_jmp(b, p, len, from)) {
            snprintf(err, errlen, "indirect call at 0x%llx: its operand cannot be read the same way out of line",
                     (unsigned long long)from);
            return false;
        }
        return true;
    case XK_JCC: {
        /* condition code: 7x (rel8) or 0f 8x (rel32), after any prefixes */
        size_t k = 0;
        while (k < len && (p[k] == 0x2e || p[k] == 0x3e || p[k] == 0xf2 || p[k] == 0xf3 || p[k] == 0x66))
            k++;
        uint8_t cc = p[k] == 0x0f ? (uint8_t)(p[k + 1] & 0x0f) : (uint8_t)(p[k] & 0x0f);
        b1(b, 0x0f);
        b1(b, 0x80 | cc);
        if (!rel32(b, in.target))
            goto far;
        return true;
    }
    default:
        break;
    }
    const char *why;
    if (!x86_relocatable(&in, &why)) {
        snprintf(err, errlen, "%s at 0x%llx cannot run out of line", why, (unsigned long long)from);
        return false;
    }
    size_t start = b->n;
    bn(b, p, len);
    if (in.flags & XF_RIPREL) {
        int32_t disp;
        memcpy(&disp, p + in.disp_off, 4);
        uint64_t target = from + len + (int64_t)disp;
        int64_t nd = (int64_t)(target - (b->at + start + len));
        if (nd != (int32_t)nd)
            goto far;
        int32_t nd32 = (int32_t)nd;
        memcpy(b->p + start + in.disp_off, &nd32, 4);
    }
    return true;
far:
    snprintf(err, errlen, "instruction at 0x%llx: target out of rel32 reach from the pool",
             (unsigned long long)from);
    return false;
call_inside:
    snprintf(err, errlen, "call at 0x%llx is not the last instruction copied: it would return into the pool",
             (unsigned long long)from);
    return false;
}

/* The relocated instructions of code[0..len) (from site), then jmp site+len.
 * map (may be NULL) gets where each instruction's copy starts, from b's
 * start, and whether the copy is the original bytes. A branch from the
 * DCR to one of its own later instructions goes to that instruction's copy
 * (which the analysis allows: nothing else may land there), not to the
 * site's bytes, which no longer hold it. The copy is made in a buffer of
 * its own (also when b only counts): its branches inside are patched, and
 * it is compared with the original. */
static bool copy_back(struct buf *b, const uint8_t *code, unsigned len, uint64_t site, struct x86_copy_map *map,
                      char *err, size_t errlen)
{
    uint8_t bytes[DETOUR_MAX];
    struct buf c = { bytes, 0, b->at + b->n };
    uint16_t at[X86_COPY_MAX];
    size_t inner[X86_COPY_MAX];   /* c offsets of rel32 fields aimed inside */
    uint64_t inner_to[X86_COPY_MAX];
    unsigned ninner = 0;
    if (len > X86_COPY_MAX) {
        snprintf(err, errlen, "DCR of %u bytes at 0x%llx is too long", len, (unsigned long long)site);
        return false;
    }
    memset(at, 0xff, sizeof at);
    for (unsigned off = 0; off < len;) {
        struct x86_insn in;
        unsigned n = x86_decode(code + off, len - off, site + off, &in);
        if (!n) {
            snprintf(err, errlen, "undecodable DCR byte at 0x%llx", (unsigned long long)(site + off));
            return false;
        }
        at[off] = (uint16_t)(b->n + c.n);
        if (!relocate(&c, code + off, &in, off + n == len ? site + len : 0, err, errlen))
            return false;
        if ((in.kind == XK_JMP || in.kind == XK_JCC) && in.target > site && in.target < site + len) {
            inner[ninner] = c.n - 4;
            inner_to[ninner++] = in.target;
        }
        off += n;
    }
    for (unsigned k = 0; k < ninner; k++) {
        uint16_t to = at[inner_to[k] - site];
        if (to == 0xffff) {
            snprintf(err, errlen, "a branch at 0x%llx lands inside an instruction of its DCR",
                     (unsigned long long)site);
            return false;
        }
        int32_t d = (int32_t)((int64_t)to - (int64_t)(b->n + inner[k] + 4));
        bput(&c, inner[k], &d, 4);
    }
    if (map) {
        memcpy(map->off, at, sizeof at);
        /* every instruction copied as it was (none relocated): then the
         * copy's first len bytes are the original ones */
        map->verbatim = c.n >= len && memcmp(bytes, code, len) == 0;
    }
    b1(&c, 0xe9);                                                /* jmp back */
    if (!rel32(&c, site + len)) {
        snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)site);
        return false;
    }
    bn(b, bytes, c.n);
    return true;
}

size_t x86_emit_ool_map(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out,
                        struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, at };
    return copy_back(&b, code, len, site, map, err, errlen) ? b.n : 0;
}

size_t x86_emit_ool(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out, char *err, size_t errlen)
{
    return x86_emit_ool_map(at, site, code, len, out, NULL, err, errlen);
}

size_t x86_emit_detour(const struct detour_params *p, uint8_t *out, size_t *dcr_off, size_t *hook_off,
                       struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, p->at };
    if (p->kernel && p->ret_slot) {
        snprintf(err, errlen, "return probes are not baked into a kernel");
        return 0;
    }
    const int red_zone = p->kernel ? 0 : 128;
    size_t jne_at = 0;
    if (p->ret_slot && p->kret_slot && !p->kernel) {
        push_pop(&b, R11, false);                               /* push %r11 */
        b1(&b, 0x4c); b1(&b, 0x8d); b1(&b, 0x1d);               /* lea state+1(%rip),%r11 */
        if (!rel32(&b, p->state + 1) || !call_slot(&b, p->kret_slot, p->via_thunks))
            goto far;
        push_pop(&b, R11, true);                                /* pop %r11: ZF stays */
        b1(&b, 0x0f); b1(&b, 0x85); jne_at = b.n; b32(&b, 0);  /* jne hooked */
        goto dcr;
    }

    lea_rsp(&b, RSP, -(red_zone + UPPER));
    for (size_t i = 0; i < sizeof pushed / sizeof pushed[0]; i++)
        push_pop(&b, pushed[i], false);
    if (p->kernel) {
        for (size_t i = sizeof pushed / sizeof pushed[0]; i < sizeof tramp_pushed / sizeof tramp_pushed[0]; i++)
            push_pop(&b, tramp_pushed[i], false);
        static const uint8_t record[] = { 0x9c,                             /* pushfq */
                                          0x8f, 0x84, 0x24, PTREGS_FLAGS, 0, 0, 0 }; /* popq flags(%rsp) */
        bn(&b, record, sizeof record);
    } else {
        lea_rsp(&b, RSP, -LOWER);
    }
    if (p->save_flags && !p->ret_slot && !p->kernel) {
        /* eflags image = ah | OF << 11 | IF | 2, without pushfq */
        bn(&b, flags_save, sizeof flags_save);
        mov_rsp(&b, RCX, PTREGS_FLAGS, false);
    }
    b1(&b, 0x48); b1(&b, 0x8d); b1(&b, 0x3d);                   /* lea state(%rip),%rdi */
    if (!rel32(&b, p->state))
        goto far;
    static const uint8_t regs_arg[] = { 0x48, 0x89, 0xe6 };     /* mov %rsp,%rsi */
    bn(&b, regs_arg, sizeof regs_arg);
    if (!p->entry_aligned) {
        /* the flags are saved by now (and restored from pt_regs) */
        static const uint8_t align[] = { 0x48, 0x83, 0xe4, 0xf0, /* and $-16,%rsp */
                                         0x56, 0x56 };           /* push %rsi; push %rsi */
        bn(&b, align, sizeof align);
    }
    if (!call_slot(&b, p->slot, p->via_thunks))                 /* call *slot(%rip) */
        goto far;
    if (!p->entry_aligned)
        b1(&b, 0x5c);                                           /* pop %rsp */
    if (p->ret_slot)
        mov_rsp(&b, RAX, PTREGS_ORIG_AX, false);                /* the dispatcher's answer */
    if (p->save_flags && !p->ret_slot) {
        mov_rsp(&b, RAX, PTREGS_FLAGS, true);
        bn(&b, flags_restore, sizeof flags_restore);
    }
    if (p->kernel) {
        for (size_t i = sizeof tramp_pushed / sizeof tramp_pushed[0]; i-- > sizeof pushed / sizeof pushed[0];)
            push_pop(&b, tramp_pushed[i], true);
    } else {
        lea_rsp(&b, RSP, LOWER);
    }
    for (size_t i = sizeof pushed / sizeof pushed[0]; i-- > 0;)
        push_pop(&b, pushed[i], true);
    if (p->ret_slot) {
        static const uint8_t test[] = { 0x48, 0x83, 0x3c, 0x24, 0x00 }; /* cmpq $0,(%rsp): orig_ax */
        bn(&b, test, sizeof test);
    }
    lea_rsp(&b, RSP, red_zone + UPPER);
    if (p->ret_slot) {
        b1(&b, 0x0f); b1(&b, 0x85); jne_at = b.n; b32(&b, 0);  /* jne hooked */
    }
dcr:
    *dcr_off = b.n;
    if (!copy_back(&b, p->dcr, p->dcr_len, p->site, map, err, errlen))
        return 0;
    if (p->ret_slot) {
        /* hooked: the caller's return address is in the runtime's instance;
         * call the DCR copy from the same slot, so the function returns
         * here through a predicted ret, and so does the ret below */
        int32_t d = (int32_t)(b.n - (jne_at + 4));
        bput(&b, jne_at, &d, 4);
        lea_rsp(&b, RSP, 8);
        b1(&b, 0xe8);                                           /* call dcr copy */
        if (!rel32(&b, p->at + *dcr_off))
            goto far;
        *hook_off = b.n;
        if (p->kret_return_slot) {
            b1(&b, 0xff); b1(&b, 0x25);                         /* jmp *kret_return_slot(%rip) */
            if (!rel32(&b, p->kret_return_slot))
                goto far;
        } else {
            if (!return_frame(&b, p->ret_slot, p->via_thunks, p->entry_aligned))
                goto far;
            b1(&b, 0xc3);                                       /* ret: to the caller */
        }
    }
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

size_t x86_emit_shared_detour(uint64_t at, uint64_t site, const uint8_t *dcr, unsigned dcr_len, uint64_t state,
                              uint64_t common, uint8_t *out, size_t *entry_off, size_t *dcr_off,
                              struct x86_copy_map *map, char *err, size_t errlen)
{
    struct buf b = { out, 0, at };
    uint64_t ret = at + 4 + SHARED_HEAD;
    int64_t rel = (int64_t)(state - ret);
    if (rel != (int32_t)rel)
        goto far;
    b32(&b, (uint32_t)(int32_t)rel);
    *entry_off = b.n;
    lea_rsp(&b, RSP, -128);
    b1(&b, 0xe8);
    if (!rel32(&b, common))
        goto far;
    *dcr_off = b.n;
    if (!copy_back(&b, dcr, dcr_len, site, map, err, errlen))
        return 0;
    return b.n;
far:
    snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)site);
    return 0;
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
    uint64_t ret = at + 4 + COMPACT_HEAD;
    int64_t rel = (int64_t)(state - ret);
    if (rel != (int32_t)rel)
        goto far;
    b32(&b, (uint32_t)(int32_t)rel);
    *entry_off = b.n;
    if (!call_slot(&b, enter, via_thunk))
        goto far;
    *dcr_off = b.n;
    if (!copy_back(&b, dcr, dcr_len, site, map, err, errlen))
        return 0;
    return b.n;
far:
    snprintf(err, errlen, "the pool is out of rel32 reach of 0x%llx", (unsigned long long)site);
    return 0;
}

size_t x86_emit_enter_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out)
{
    struct buf b = { out, 0, at };
    b1(&b, 0x48); b1(&b, 0x83); b1(&b, 0x3d);                   /* cmpq $0,slot(%rip) */
    if (!rel32_tail(&b, slot, 1))
        return 0;
    b1(&b, 0x00);
    b1(&b, 0x74); b1(&b, 0x06);                                 /* je 1f */
    b1(&b, 0xff); b1(&b, 0x25);                                 /* jmp *slot(%rip) */
    if (!rel32(&b, slot))
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
    int64_t d = (int64_t)(tramp - (site + X86_JMP8_LEN));
    if (d != (int8_t)d || dcr_len < X86_JMP8_LEN)
        return false;
    out[0] = 0xeb;
    out[1] = (uint8_t)(int8_t)d;
    x86_fill_int3(out + X86_JMP8_LEN, dcr_len - X86_JMP8_LEN);
    return true;
}

bool x86_retarget(const uint8_t *insn, unsigned len, uint64_t from, uint64_t target, uint8_t *out)
{
    struct x86_insn in;
    if (x86_decode(insn, len, from, &in) != len || (in.kind != XK_JMP && in.kind != XK_JCC && in.kind != XK_LOOP))
        return false;
    memcpy(out, insn, len);
    int64_t d = (int64_t)(target - (from + len));
    if (in.rel_size == 8) {   /* the displacement ends every direct branch */
        if (d != (int8_t)d)
            return false;
        out[len - 1] = (uint8_t)(int8_t)d;
        return true;
    }
    if (in.rel_size != 32 || d != (int32_t)d)
        return false;
    int32_t d32 = (int32_t)d;
    memcpy(out + len - 4, &d32, 4);
    return true;
}

bool x86_emit_site_jump(uint64_t site, uint64_t detour, unsigned dcr_len, uint8_t *out)
{
    int64_t d = (int64_t)(detour - (site + X86_JMP32_LEN));
    if (d != (int32_t)d)
        return false;
    int32_t d32 = (int32_t)d;
    out[0] = 0xe9;
    memcpy(out + 1, &d32, 4);
    x86_fill_int3(out + X86_JMP32_LEN, dcr_len - X86_JMP32_LEN);
    return true;
}

#define STATUS_FLAGS (ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_ZF | \
                      ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF)

bool x86_flags_dead(x86_flags_read_fn read, void *ctx, uint64_t addr, uint64_t end)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisAccessedFlagsMask written = 0;
    for (int steps = 0; steps < 32 && addr < end; steps++) {
        size_t avail = 0;
        const uint8_t *p = read(ctx, addr, &avail);
        ZydisDecoderContext dctx;
        ZydisDecodedInstruction zi;
        if (!p || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &dctx, p, avail, &zi)))
            return false;
        const ZydisAccessedFlags *f = zi.cpu_flags;
        if (f && (f->tested & STATUS_FLAGS & ~written))
            return false;                       /* read before written */
        if (f)
            written |= (f->modified | f->set_0 | f->set_1 | f->undefined) & STATUS_FLAGS;
        if ((written & STATUS_FLAGS) == STATUS_FLAGS)
            return true;
        /* The ABI carries no flags across calls and returns. */
        if (zi.mnemonic == ZYDIS_MNEMONIC_CALL || zi.mnemonic == ZYDIS_MNEMONIC_RET)
            return true;
        if (zi.meta.category == ZYDIS_CATEGORY_COND_BR || zi.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
            zi.meta.category == ZYDIS_CATEGORY_SYSTEM || zi.meta.category == ZYDIS_CATEGORY_INTERRUPT)
            return false;                       /* control leaves the straight line */
        addr += zi.length;
    }
    return false;
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
    b1(&b, 0x48); b1(&b, 0x83); b1(&b, 0x3d);                   /* cmpq $0,slot(%rip) */
    if (!rel32_tail(&b, slot, 1))
        return 0;
    b1(&b, 0x00);
    b1(&b, 0x74); b1(&b, 0x06);                                 /* je 1f */
    b1(&b, 0xff); b1(&b, 0x25);                                 /* jmp *slot(%rip) */
    if (!rel32(&b, slot))
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

bool x86_switches_stack(const uint8_t *p, size_t n)
{
    const ZydisDecoder *dec = x86_zydis_decoder();
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, p, n, &zi, ops)))
        return false;
    switch (zi.mnemonic) {
    case ZYDIS_MNEMONIC_MOV: case ZYDIS_MNEMONIC_XCHG: case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_LEA:
    case ZYDIS_MNEMONIC_CMOVB: case ZYDIS_MNEMONIC_CMOVBE: case ZYDIS_MNEMONIC_CMOVL: case ZYDIS_MNEMONIC_CMOVLE:
    case ZYDIS_MNEMONIC_CMOVNB: case ZYDIS_MNEMONIC_CMOVNBE: case ZYDIS_MNEMONIC_CMOVNL: case ZYDIS_MNEMONIC_CMOVNLE:
    case ZYDIS_MNEMONIC_CMOVNO: case ZYDIS_MNEMONIC_CMOVNP: case ZYDIS_MNEMONIC_CMOVNS: case ZYDIS_MNEMONIC_CMOVNZ:
    case ZYDIS_MNEMONIC_CMOVO: case ZYDIS_MNEMONIC_CMOVP: case ZYDIS_MNEMONIC_CMOVS: case ZYDIS_MNEMONIC_CMOVZ:
        break;
    default:
        return false;   /* push/pop/call/ret/add/sub/and/leave/enter: %rsp arithmetic */
    }
    bool writes_rsp = false, from_frame = false;
    for (unsigned i = 0; i < zi.operand_count_visible; i++) {
        const ZydisDecodedOperand *o = &ops[i];
        bool is_rsp = o->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                      (o->reg.value == ZYDIS_REGISTER_RSP || o->reg.value == ZYDIS_REGISTER_ESP);
        if (is_rsp && (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            writes_rsp = true;
        else if (o->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                 (o->reg.value == ZYDIS_REGISTER_RBP || o->reg.value == ZYDIS_REGISTER_RSP))
            from_frame = true;   /* mov %rbp,%rsp: a frame, not a new stack */
        else if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && zi.mnemonic == ZYDIS_MNEMONIC_LEA &&
                 (o->mem.base == ZYDIS_REGISTER_RBP || o->mem.base == ZYDIS_REGISTER_RSP))
            from_frame = true;   /* lea -16(%rbp),%rsp */
    }
    if (zi.mnemonic == ZYDIS_MNEMONIC_POP && writes_rsp)
        return true;             /* pop %rsp */
    return writes_rsp && !from_frame;
}
