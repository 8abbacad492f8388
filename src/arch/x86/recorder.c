/*
 * x86-64 event recorders (src/arch/recorder.h): a definition's fetch
 * program as straight-line code. The C recorder runs ~250 instructions
 * for four arguments (two registers, a number and a string behind
 * pointers), a third of them the loop over the operations, the
 * environment and the calls between the layers; this runs ~60.
 *
 *   endbr64
 *   cmpb $0,enabled(%rdi); je ret0          the C recorder's checks, in
 *   mov %fs:ring,%r11; test; jz C           the same order, nothing
 *   cmpq $0,hist(%rdi); jne C               written before the last
 *   head, size, tail: the record at data + (head & size-1) unless it
 *   would wrap or not fit (C: padding, or the drop counted)
 *   id, tid, ip; the fault bits zeroed (one 8-byte store, as C)
 *   one short sequence per argument
 *   rdtsc (last, as C: the fetch's loads complete meanwhile); cpu
 *   the size; head += size (the only writer: no atomic add)
 *   out of line: each argument's fault, and a string's slow path
 *
 * Registers: the instance %rdi, regs %rsi, the ring %r11, the record %r8,
 * the strings' running length (dyn) %r10d; the rest scratch. No frame,
 * no call in the common case: a dereference is a load in the code
 * (mov (%rdx),%rax), whose fault the runtime's handler resumes at the
 * cold code that records it (the fixups it is given), as it does the
 * loads of rt_safe_read_*; a string is copied by its first word when
 * that holds the NUL and lies in one page (a word within one page
 * faults only where its first byte would), else by rt_safe_read_str,
 * called with the five registers above saved around it.
 */
#include "arch/recorder.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "regs.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* ModRM (and SIB, displacement) for reg and [base + disp]. */
static void modrm_mem(struct buf *b, int reg, int base, int32_t disp)
{
    int mod = disp == 0 && (base & 7) != RBP ? 0 : disp == (int8_t)disp ? 1 : 2;
    b1(b, (uint8_t)(mod << 6 | (reg & 7) << 3 | (base & 7)));
    if ((base & 7) == RSP)
        b1(b, 0x24);
    if (mod == 1)
        b1(b, (uint8_t)disp);
    else if (mod == 2)
        b32(b, (uint32_t)disp);
}

static void rex(struct buf *b, bool w, int reg, int base, bool force)
{
    uint8_t r = (uint8_t)(0x40 | (w ? 8 : 0) | (reg >= 8 ? 4 : 0) | (base >= 8 ? 1 : 0));
    if (r != 0x40 || force)
        b1(b, r);
}

/* op reg, [base + disp] (or the reverse, by the opcode), size 8 or 4 */
static void op_mem(struct buf *b, uint8_t op, bool w, int reg, int base, int32_t disp)
{
    rex(b, w, reg, base, false);
    b1(b, op);
    modrm_mem(b, reg, base, disp);
}
static void ld64(struct buf *b, int dst, int base, int32_t disp) { op_mem(b, 0x8b, true, dst, base, disp); }
static void ld32(struct buf *b, int dst, int base, int32_t disp) { op_mem(b, 0x8b, false, dst, base, disp); }

/* mov %rax (size bytes of it), disp(base) */
static void st_rax(struct buf *b, unsigned size, int base, int32_t disp)
{
    if (size == 2)
        b1(b, 0x66);
    op_mem(b, size == 1 ? 0x88 : 0x89, size == 8, RAX, base, disp);
}
static void st64(struct buf *b, int src, int base, int32_t disp) { op_mem(b, 0x89, true, src, base, disp); }
static void st32(struct buf *b, int src, int base, int32_t disp) { op_mem(b, 0x89, false, src, base, disp); }

/* movq/movl $imm32, disp(base) */
static void st_imm(struct buf *b, bool w, int base, int32_t disp, int32_t imm)
{
    op_mem(b, 0xc7, w, 0, base, disp);
    b32(b, (uint32_t)imm);
}

/* a byte instruction 80 /ext ib on disp(base): orb (1), cmpb (7) */
static void byte_imm(struct buf *b, int ext, int base, int32_t disp, uint8_t imm)
{
    op_mem(b, 0x80, false, ext, base, disp);
    b1(b, imm);
}

/* mov dst, src (64 or 32 bits) */
static void mov_rr(struct buf *b, bool w, int dst, int src)
{
    rex(b, w, src, dst, false);
    b1(b, 0x89);
    b1(b, (uint8_t)(0xc0 | (src & 7) << 3 | (dst & 7)));
}

/* an ALU op (01 add, 09 or, 21 and, 29 sub, 39 cmp, 85 test) dst, src */
static void alu_rr(struct buf *b, uint8_t op, bool w, int dst, int src)
{
    rex(b, w, src, dst, false);
    b1(b, op);
    b1(b, (uint8_t)(0xc0 | (src & 7) << 3 | (dst & 7)));
}

/* an ALU op 81 /ext id: add (0), and (4), cmp (7) dst, imm32 */
static void alu_imm(struct buf *b, int ext, bool w, int dst, int32_t imm)
{
    rex(b, w, 0, dst, false);
    b1(b, 0x81);
    b1(b, (uint8_t)(0xc0 | ext << 3 | (dst & 7)));
    b32(b, (uint32_t)imm);
}

static void movabs(struct buf *b, int dst, uint64_t imm)
{
    rex(b, true, 0, dst, false);
    b1(b, (uint8_t)(0xb8 | (dst & 7)));
    bn(b, &imm, 8);
}

/* mov %fs:disp, dst (64 or 32 bits) */
static void ld_fs(struct buf *b, bool w, int dst, int32_t disp)
{
    b1(b, 0x64);
    rex(b, w, dst, 0, false);
    b1(b, 0x8b);
    b1(b, (uint8_t)(0x04 | (dst & 7) << 3));
    b1(b, 0x25);
    b32(b, (uint32_t)disp);
}

/* jcc/jmp rel32 to a label set later: where its rel32 is */
static size_t jump(struct buf *b, int cc)
{
    if (cc < 0)
        b1(b, 0xe9);
    else {
        b1(b, 0x0f);
        b1(b, (uint8_t)(0x80 | cc));
    }
    b32(b, 0);
    return b->n - 4;
}
static void land(struct buf *b, size_t at)
{
    uint32_t d = (uint32_t)(b->n - (at + 4));
    bput(b, at, &d, 4);
}
enum { CC_NE = 5, CC_E = 4, CC_A = 7 };

static void call_abs(struct buf *b, uint64_t fn)
{
    movabs(b, RAX, fn);
    b1(b, 0xff);
    b1(b, 0xd0);   /* call *%rax */
}

struct variant;
static void load_slot(struct buf *b, const struct variant *v, int dst, unsigned slot);

/* The address an argument reads (IMM, or REG + offset) into dst. */
static void address(struct buf *b, const struct kprw_fetch_op *o, bool from_reg, const struct variant *v, int dst)
{
    if (!from_reg) {
        movabs(b, dst, (uint64_t)o->a);
        return;
    }
    load_slot(b, v, dst, o->reg);
    if (o->a == (int32_t)o->a) {
        if (o->a)
            alu_imm(b, 0, true, dst, (int32_t)o->a);
    } else {
        movabs(b, RAX, (uint64_t)o->a);
        alu_rr(b, 0x01, true, dst, RAX);
    }
}

/* mov (src),dst: a load of the program's memory, its fixup noted (set
 * where the cold code that records the fault is) */
struct fixups {
    struct kprw_recorder_fixup *v;
    unsigned n;
};
static void load_program(struct buf *b, struct fixups *f, int dst, int src)
{
    uint32_t at = (uint32_t)b->n;
    ld64(b, dst, src, 0);
    if (b->p && f->n < KPRW_RECORDER_FIXUPS)
        f->v[f->n] = (struct kprw_recorder_fixup){ at, (uint32_t)b->n, 0 };
    f->n++;
}
static void fault_bit(struct buf *b, int rec, const struct kprw_event *ev, unsigned k)
{
    byte_imm(b, 1, rec, ev->fault_off + (int32_t)(k / 8), (uint8_t)(1u << (k % 8)));
}

static bool simple(const struct kprw_event *ev)
{
    if (ev->is_return || ev->filter || ev->max_size > 4096 || ev->fixed < ev->fault_off || ev->fixed - ev->fault_off > 8 ||
        ev->nargs > KPRW_EV_MAX_ARGS / 2)
        return false;
    for (unsigned k = 0; k < ev->nargs; k++)
        if (ev->ops[k].kind == KPRW_FK_ANY || ev->ops[k].kind > KPRW_FK_STRAT_REG)
            return false;
    return true;
}

enum { KP = RDI, REGS = RSI, RING = R11, REC = R8, DYN = R10 };

/* Where an argument's out-of-line code comes back to, and jumps into it
 * to patch. */
struct cold {
    size_t to_slow[2], to_fault[1], fix_first, nfix;
    size_t have, next;
};

static bool is_string(const struct kprw_fetch_op *o)
{
    return o->kind == KPRW_FK_STR_IMM || o->kind == KPRW_FK_STR_REG || o->kind == KPRW_FK_STRAT_IMM ||
           o->kind == KPRW_FK_STRAT_REG;
}

/* A string, in line: its first word copied when it holds the NUL and
 * the page holds the word; else (cold) rt_safe_read_str. STR_*: at a
 * pointer read first; STRAT_*: at the address itself. */
static void string_hot(struct buf *b, struct fixups *f, const struct kprw_fetch_op *o, struct cold *c,
                       const struct variant *v)
{
    address(b, o, o->kind == KPRW_FK_STR_REG || o->kind == KPRW_FK_STRAT_REG, v, RDX);
    c->fix_first = f->n;
    if (o->kind == KPRW_FK_STR_IMM || o->kind == KPRW_FK_STR_REG) {
        load_program(b, f, RDX, RDX);                                /* the pointer */
        if (o->d1)
            alu_imm(b, 0, true, RDX, o->d1);
    }
    mov_rr(b, false, RAX, RDX);                                      /* a word past the page's end: cold */
    alu_imm(b, 4, false, RAX, 4095);
    alu_imm(b, 7, false, RAX, 4096 - 8);
    c->to_slow[0] = jump(b, CC_A);
    load_program(b, f, RAX, RDX);                                    /* faults only as its first byte would */
    static const uint8_t st_word[] = { 0x4b, 0x89, 0x04, 0x10 };     /* mov %rax,(%r8,%r10) */
    bn(b, st_word, sizeof st_word);
    movabs(b, R9, 0x0101010101010101ull);                            /* a zero byte: (x - 0x01..) & ~x & 0x80.. */
    mov_rr(b, true, RCX, RAX);
    alu_rr(b, 0x29, true, RCX, R9);
    static const uint8_t not_and[] = { 0x48, 0xf7, 0xd0,             /* not %rax */
                                       0x48, 0x21, 0xc1,             /* and %rax,%rcx */
                                       0x49, 0xc1, 0xe1, 0x07,       /* shl $7,%r9 */
                                       0x4c, 0x21, 0xc9 };           /* and %r9,%rcx */
    bn(b, not_and, sizeof not_and);
    c->to_slow[1] = jump(b, CC_E);
    static const uint8_t len[] = { 0x48, 0x0f, 0xbc, 0xc9,           /* bsf %rcx,%rcx */
                                   0xc1, 0xe9, 0x03,                 /* shr $3,%ecx */
                                   0x8d, 0x41, 0x01 };               /* lea 1(%rcx),%eax: n, its NUL counted */
    bn(b, len, sizeof len);
    c->have = b->n;                                                  /* n in %eax, not 0 */
    mov_rr(b, false, RCX, RAX);                                      /* data_loc: n << 16 | dyn */
    static const uint8_t shl16[] = { 0xc1, 0xe1, 0x10 };
    bn(b, shl16, sizeof shl16);
    alu_rr(b, 0x09, false, RCX, DYN);
    st32(b, RCX, REC, o->off);
    alu_rr(b, 0x01, false, DYN, RAX);                                /* dyn += n */
    c->nfix = f->n - c->fix_first;
}

static void string_cold(struct buf *b, struct fixups *f, const struct kprw_event *ev, unsigned k, struct cold *c,
                        uint64_t read_str)
{
    land(b, c->to_slow[0]);
    land(b, c->to_slow[1]);
    /* the registers the hot path keeps, around the call (%rsp 16-aligned
     * after five: the recorder was called) */
    static const uint8_t save[] = { 0x57, 0x56, 0x41, 0x50, 0x41, 0x52, 0x41, 0x53,   /* push rdi rsi r8 r10 r11 */
                                    0x48, 0x89, 0xd6,                                 /* mov %rdx,%rsi */
                                    0x4b, 0x8d, 0x3c, 0x10 };                         /* lea (%r8,%r10),%rdi */
    bn(b, save, sizeof save);
    b1(b, 0xba); b32(b, KPRW_EV_STRING_MAX);                         /* mov $max,%edx */
    call_abs(b, read_str);
    static const uint8_t restore[] = { 0x41, 0x5b, 0x41, 0x5a, 0x41, 0x58, 0x5e, 0x5f };   /* pop r11 r10 r8 rsi rdi */
    bn(b, restore, sizeof restore);
    alu_rr(b, 0x85, true, RAX, RAX);
    size_t have = jump(b, CC_NE);
    uint32_t d = (uint32_t)(c->have - b->n);
    bput(b, have, &d, 4);
    for (size_t i = c->fix_first; i < c->fix_first + c->nfix; i++)   /* a fault: no string */
        if (b->p && i < KPRW_RECORDER_FIXUPS)
            f->v[i].fixup = (uint32_t)b->n;
    st_imm(b, false, REC, ev->ops[k].off, 0);
    fault_bit(b, REC, ev, k);
    size_t back = jump(b, -1);
    d = (uint32_t)(c->next - b->n);
    bput(b, back, &d, 4);
}

/* A number behind an address, in line; its fault's code cold. */
static void number_cold(struct buf *b, struct fixups *f, const struct kprw_event *ev, unsigned k, struct cold *c)
{
    if (b->p && c->fix_first < KPRW_RECORDER_FIXUPS)
        f->v[c->fix_first].fixup = (uint32_t)b->n;
    st_imm(b, true, REC, ev->ops[k].off, 0);
    fault_bit(b, REC, ev, k);
    size_t back = jump(b, -1);
    uint32_t d = (uint32_t)(c->next - b->n);
    bput(b, back, &d, 4);
}

/* Where a slot's value is: pt_regs, or (the direct entry) a register
 * still holding the probed value (bx, bp, r12-r15), or sp above pt_regs. */
static const int live_reg[X86_NSLOTS] = {
    [X86_R15] = R15, [X86_R14] = R14, [X86_R13] = R13, [X86_R12] = R12, [X86_BP] = RBP, [X86_BX] = RBX,
};
static bool callee_saved(unsigned slot)
{
    return slot == X86_R15 || slot == X86_R14 || slot == X86_R13 || slot == X86_R12 || slot == X86_BP || slot == X86_BX;
}

struct variant {
    const struct kprw_recorder_env *env;
    bool direct;
};

static void load_slot(struct buf *b, const struct variant *v, int dst, unsigned slot)
{
    if (v->direct && callee_saved(slot))
        mov_rr(b, true, dst, live_reg[slot]);
    else if (v->direct && slot == X86_SP)
        op_mem(b, 0x8d, true, dst, REGS, v->env->frame);             /* lea frame(%rsi),dst */
    else
        ld64(b, dst, REGS, (int32_t)slot * 8);
}

/* The direct entry's way to the C recorder: what the dispatcher did not
 * fill of pt_regs, as it fills it (dispatch.S FILL_REST), first. */
static void fill_rest(struct buf *b, const struct kprw_recorder_env *env)
{
    static const unsigned saved[] = { X86_BX, X86_BP, X86_R12, X86_R13, X86_R14, X86_R15 };
    for (unsigned i = 0; i < sizeof saved / sizeof saved[0]; i++)
        st64(b, live_reg[saved[i]], REGS, (int32_t)saved[i] * 8);
    op_mem(b, 0x8d, true, RAX, REGS, env->frame);
    st64(b, RAX, REGS, X86_SP * 8);
    ld64(b, RAX, KP, env->inst_addr);                                /* ip: addr + 1, as after an int3 */
    static const uint8_t inc_rax[] = { 0x48, 0xff, 0xc0 };
    bn(b, inc_rax, sizeof inc_rax);
    st64(b, RAX, REGS, X86_IP * 8);
    st_imm(b, true, REGS, X86_ORIG_AX * 8, -1);
    ld64(b, RAX, KP, env->inst_point);                               /* flags the detour did not save: 0x202 */
    op_mem(b, 0xf6, false, 0, RAX, env->point_flags);                /* testb $saved,flags(%rax) */
    b1(b, env->flags_saved);
    size_t saved_flags = jump(b, CC_NE);
    st_imm(b, true, REGS, X86_FLAGS * 8, 0x202);
    land(b, saved_flags);
}

/* One entry point's code (v->direct: the dispatcher's), its cold code after it. */
static void emit_variant(struct buf *b, struct fixups *f, const struct kprw_event *ev, const struct variant *v,
                         struct cold *cold, bool strings)
{
    const struct kprw_recorder_env *env = v->env;
    static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
    bn(b, endbr64, sizeof endbr64);
    byte_imm(b, 7, KP, env->inst_enabled, 0);                        /* cmpb $0,enabled(%rdi) */
    size_t to_ret0 = jump(b, CC_E);
    ld_fs(b, true, RING, env->ring_tls);
    alu_rr(b, 0x85, true, RING, RING);
    size_t to_c[4];
    to_c[0] = jump(b, CC_E);
    op_mem(b, 0x83, true, 7, KP, env->inst_hist);                    /* cmpq $0,hist(%rdi) */
    b1(b, 0);
    to_c[1] = jump(b, CC_NE);
    ld64(b, RCX, RING, env->ring_head);
    ld32(b, RDX, RING, env->ring_size);
    mov_rr(b, false, REC, RCX);                                      /* pos = head & (size - 1) */
    op_mem(b, 0x8d, false, RAX, RDX, -1);                            /* lea -1(%rdx),%eax */
    alu_rr(b, 0x21, false, REC, RAX);
    op_mem(b, 0x8d, false, RAX, REC, (int32_t)ev->max_size);         /* pos + max > size: it would wrap */
    alu_rr(b, 0x39, false, RAX, RDX);
    to_c[2] = jump(b, CC_A);
    op_mem(b, 0x8d, true, RAX, RCX, (int32_t)ev->max_size);          /* head + max - tail > size: full */
    op_mem(b, 0x2b, true, RAX, RING, env->ring_tail);
    alu_rr(b, 0x39, true, RAX, RDX);
    to_c[3] = jump(b, CC_A);
    op_mem(b, 0x03, true, REC, RING, env->ring_data);                /* the record: data + pos */
    if (strings) {
        b1(b, 0x41); b1(b, 0xba); b32(b, ev->fixed);                 /* mov $fixed,%r10d */
    }
    /* the header but its size, ts and cpu */
    ld32(b, RAX, KP, env->inst_id);
    st32(b, RAX, REC, (int32_t)offsetof(struct kprw_rec, id));
    ld32(b, RAX, RING, env->ring_tid);
    st32(b, RAX, REC, (int32_t)offsetof(struct kprw_rec, tid));
    ld64(b, RAX, KP, env->inst_addr);
    st64(b, RAX, REC, (int32_t)offsetof(struct kprw_rec, ip));
    if (ev->fixed > ev->fault_off)
        st_imm(b, true, REC, ev->fault_off, 0);
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_fetch_op *o = &ev->ops[k];
        struct cold *c = &cold[k];
        switch ((enum kprw_fkind)o->kind) {
        case KPRW_FK_REG8: case KPRW_FK_REG4: case KPRW_FK_REG2: case KPRW_FK_REG1:
            load_slot(b, v, RAX, o->reg);
            st_rax(b, o->kind == KPRW_FK_REG8 ? 8 : o->kind == KPRW_FK_REG4 ? 4 : o->kind == KPRW_FK_REG2 ? 2 : 1, REC, o->off);
            break;
        case KPRW_FK_MEM8_IMM: case KPRW_FK_MEM8_REG:
            address(b, o, o->kind == KPRW_FK_MEM8_REG, v, RDX);
            c->fix_first = f->n;
            load_program(b, f, RAX, RDX);
            st64(b, RAX, REC, o->off);
            break;
        default:
            string_hot(b, f, o, c, v);
            break;
        }
        c->next = b->n;
    }
    /* the time, last; the CPU */
    if (env->clock == 1) {
        b1(b, 0x0f); b1(b, 0x31);                                    /* rdtsc */
        ld_fs(b, false, RCX, env->cpu_tls);
    } else {
        b1(b, 0x0f); b1(b, 0x01); b1(b, 0xf9);                       /* rdtscp */
        alu_imm(b, 4, false, RCX, 0xfff);
    }
    static const uint8_t tsc64[] = { 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0 };   /* shl $32,%rdx; or %rdx,%rax */
    bn(b, tsc64, sizeof tsc64);
    st64(b, RAX, REC, (int32_t)offsetof(struct kprw_rec, ts));
    st32(b, RCX, REC, (int32_t)offsetof(struct kprw_rec, cpu));
    /* the size, then head moves past it: the record published */
    if (strings) {
        mov_rr(b, false, RAX, DYN);
        alu_imm(b, 0, false, RAX, 7);
        alu_imm(b, 4, false, RAX, -8);
        st32(b, RAX, REC, (int32_t)offsetof(struct kprw_rec, size));
        op_mem(b, 0x01, true, RAX, RING, env->ring_head);            /* add %rax,head(ring) */
    } else {
        int32_t size = (int32_t)((ev->fixed + 7u) & ~7u);
        st_imm(b, false, REC, (int32_t)offsetof(struct kprw_rec, size), size);
        op_mem(b, 0x81, true, 0, RING, env->ring_head);              /* addq $size,head(ring) */
        b32(b, (uint32_t)size);
    }
    land(b, to_ret0);
    static const uint8_t ret0[] = { 0x31, 0xc0, 0xc3 };              /* xor %eax,%eax; ret */
    bn(b, ret0, sizeof ret0);
    for (unsigned i = 0; i < 4; i++)
        land(b, to_c[i]);
    if (v->direct)
        fill_rest(b, env);
    movabs(b, RAX, env->fallback);                                   /* the C recorder, same arguments */
    b1(b, 0xff); b1(b, 0xe0);                                        /* jmp *%rax */
    /* out of line: faults, and strings the first word does not hold */
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_fetch_op *o = &ev->ops[k];
        if (o->kind == KPRW_FK_MEM8_IMM || o->kind == KPRW_FK_MEM8_REG)
            number_cold(b, f, ev, k, &cold[k]);
        else if (is_string(o))
            string_cold(b, f, ev, k, &cold[k], env->read_str);
    }
}

/* The direct entry takes registers past pt_regs' general ones and sp
 * from nothing the dispatcher leaves unfilled: not ip, flags, orig_ax,
 * cs or ss. */
static bool direct_ok(const struct kprw_event *ev)
{
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_fetch_op *o = &ev->ops[k];
        bool reg = o->kind <= KPRW_FK_REG1 || o->kind == KPRW_FK_MEM8_REG || o->kind == KPRW_FK_STR_REG ||
                   o->kind == KPRW_FK_STRAT_REG;
        if (reg && o->reg >= X86_ORIG_AX && o->reg != X86_SP)
            return false;
    }
    return true;
}

size_t kprw_recorder_emit(const struct kprw_event *ev, const struct kprw_recorder_env *env, uint8_t *out, size_t room,
                          uint64_t at, struct kprw_recorder_fixup *fix, unsigned *nfix, size_t *direct)
{
    *nfix = 0;
    *direct = 0;
    if (!simple(ev) || (env->clock != 1 && env->clock != 2))
        return 0;
    bool strings = false;
    for (unsigned k = 0; k < ev->nargs; k++)
        strings |= is_string(&ev->ops[k]);
    bool with_direct = env->frame && direct_ok(ev);
    struct cold cold[KPRW_EV_MAX_ARGS / 2];
    struct fixups f = { fix, 0 };
    /* counted first (out NULL writes nothing), then written */
    struct buf b = { NULL, 0, at };
    for (int pass = out ? 0 : 1; pass < 2; pass++) {
        if (pass == 1 && out) {
            if (b.n > room)
                return 0;
            b = (struct buf){ out, 0, at };
        }
        f.n = 0;
        struct variant generic = { env, false }, dir = { env, true };
        emit_variant(&b, &f, ev, &generic, cold, strings);
        if (with_direct) {
            while (b.n % 16)
                b1(&b, 0xcc);
            *direct = b.n;
            emit_variant(&b, &f, ev, &dir, cold, strings);
        }
    }
    if (f.n > KPRW_RECORDER_FIXUPS)
        return 0;
    *nfix = f.n;
    return b.n;
}
