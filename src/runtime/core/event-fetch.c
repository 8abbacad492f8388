/*
 * Fetching an event's arguments into its record: the hot path of a traced
 * probe. Every read of the probed program's memory goes through the
 * environment's read functions, which never fault (a fault is recorded as
 * the argument's fault bit and printed "(fault)"). No libc, no lock, no
 * allocation.
 */
#include "event.h"

/* A record's fields are little-endian, as the runtimes' ISAs are (x86-64,
 * arm64): one store or load each, never a loop over bytes. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "event records assume a little-endian machine"
#endif
static inline void put(uint8_t *dst, uint64_t v, unsigned size)
{
    switch (size) {
    case 1: *dst = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; __builtin_memcpy(dst, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; __builtin_memcpy(dst, &x, 4); break; }
    default: __builtin_memcpy(dst, &v, 8); break;
    }
}

static inline uint64_t get(const uint8_t *src, unsigned size)
{
    switch (size) {
    case 1: return *src;
    case 2: { uint16_t x; __builtin_memcpy(&x, src, 2); return x; }
    case 4: { uint32_t x; __builtin_memcpy(&x, src, 4); return x; }
    default: { uint64_t x; __builtin_memcpy(&x, src, 8); return x; }
    }
}

/* The value a fetch starts from; false on a fault. */
static bool base(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint64_t *v)
{
    switch (f->src) {
    case KPRW_FS_REG:
        *v = env->regs[f->reg];
        return true;
    case KPRW_FS_STACKP:
        *v = env->regs[env->sp_slot];
        return true;
    case KPRW_FS_STACK:
        return env->read(v, env->regs[env->sp_slot] + (uint64_t)f->imm, 8) == 8;
    case KPRW_FS_ENTRY_ARG:
        *v = env->entry[f->imm];
        return true;
    default:   /* KPRW_FS_IMM; an unbound KPRW_FS_SYM never reaches a fetch */
        *v = (uint64_t)f->imm;
        return true;
    }
}

/* Where the last dereference reads (the others load pointers); false on a
 * fault. */
static bool deref_chain(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint64_t v, uint64_t *addr)
{
    for (unsigned d = 0; d + 1 < f->nderef; d++)
        if (env->read(&v, v + (uint64_t)(int64_t)f->deref[d], 8) != 8)
            return false;
    *addr = v + (uint64_t)(int64_t)f->deref[f->nderef - 1];
    return true;
}

/* A string argument: its bytes after the fixed part, its data_loc in the
 * field. Returns the bytes used. */
static uint32_t fetch_string(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint64_t v, bool ok,
                             uint8_t *rec, uint32_t at, bool *fault)
{
    size_t n = 0;
    if (f->src == KPRW_FS_COMM) {
        while (n + 1 < KPRW_EV_STRING_MAX && env->comm[n]) {
            rec[at + n] = (uint8_t)env->comm[n];
            n++;
        }
        rec[at + n++] = 0;
    } else if (ok) {
        n = env->read_str((char *)rec + at, v, KPRW_EV_STRING_MAX);
    }
    *fault = n == 0;
    put(rec + f->off, n ? (uint32_t)n << 16 | at : 0, 4);
    return (uint32_t)n;
}

void kprw_event_plan(struct kprw_event *ev)
{
    /* fewer than 8 bytes of fault bits and padding (fixed is a multiple
     * of 8, past the header): the fetch writes the word that ends at
     * fixed once, the fields' bytes in it kept */
    unsigned bytes = ev->fixed - ev->fault_off;
    ev->fault_shift = bytes && bytes <= 8 ? (uint8_t)(8 * (8 - bytes)) : 0;
    ev->fault_keep = bytes == 0 ? ~0ull : bytes < 8 ? ~0ull >> (64 - ev->fault_shift) : 0;
    for (unsigned k = 0; k < ev->nargs; k++) {
        struct kprw_farg *f = &ev->args[k];
        bool reg = f->src == KPRW_FS_REG, imm = f->src == KPRW_FS_IMM;
        bool number = f->type != KPRW_FT_STRING && f->count == 0;
        f->kind = KPRW_FK_ANY;
        if (reg && f->nderef == 0 && number)
            f->kind = f->size == 8 ? KPRW_FK_REG8 : f->size == 4 ? KPRW_FK_REG4 : f->size == 2 ? KPRW_FK_REG2 : KPRW_FK_REG1;
        else if ((reg || imm) && f->nderef == 1 && number && f->size == 8)
            f->kind = reg ? KPRW_FK_MEM8_REG : KPRW_FK_MEM8_IMM;
        else if ((reg || imm) && f->nderef == 2 && f->type == KPRW_FT_STRING)
            f->kind = reg ? KPRW_FK_STR_REG : KPRW_FK_STR_IMM;
    }
}

/* An argument the general way; true on a fault. */
__attribute__((noinline, cold)) static bool fetch_any(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint8_t *rec, uint32_t *dyn)
{
    uint64_t v = 0, addr = 0;
    bool ok = f->src == KPRW_FS_COMM || base(f, env, &v), fault;
    if (ok && f->nderef) {
        ok = deref_chain(f, env, v, &addr);
        v = addr;   /* a string is read there; a value, below */
    }
    unsigned bytes = f->size * (f->count ? f->count : 1u);
    if (f->type == KPRW_FT_STRING) {
        *dyn += fetch_string(f, env, v, ok, rec, *dyn, &fault);
    } else if (f->nderef) {
        fault = !ok || env->read(rec + f->off, addr, bytes) != bytes;
    } else {
        fault = !ok;
        put(rec + f->off, v, f->size);
    }
    if (fault && f->type != KPRW_FT_STRING)
        for (unsigned b = 0; b < bytes; b++)
            rec[f->off + b] = 0;
    return fault;
}

/* The fault bits and the padding up to the strings. */
static void put_faults(const struct kprw_event *ev, uint8_t *rec, const uint64_t *faults)
{
    const unsigned fixed = ev->fixed;
    if (__builtin_expect(fixed - ev->fault_off <= 8u, 1)) {
        /* at most 8 bytes (kprw_event_plan): one store of the word that
         * ends at fixed, the fields' bytes in it kept */
        uint64_t w;
        __builtin_memcpy(&w, rec + fixed - 8, 8);
        w = (w & ev->fault_keep) | faults[0] << ev->fault_shift;
        __builtin_memcpy(rec + fixed - 8, &w, 8);
        return;
    }
    for (unsigned b = 0; b < fixed - ev->fault_off; b++)   /* over 57 arguments */
        rec[ev->fault_off + b] = (uint8_t)(faults[b / 8] >> 8 * (b % 8));
}

/* The hot path of a traced probe: one short path per kind of argument
 * (the kernel's fetch_insn programs do the same), chosen through a table
 * of labels (threaded code: one indirect jump an argument, no bounds
 * check). A fault sets argument k's bit in faults. rec is bytes, which may
 * alias anything: what is read of ev is read into locals first, so that
 * the stores into rec do not make the compiler read it again. */
uint32_t kprw_event_fetch(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint8_t *rec)
{
    static const void *const kind[] = {
        [KPRW_FK_ANY] = &&any, [KPRW_FK_REG8] = &&reg8, [KPRW_FK_REG4] = &&reg4, [KPRW_FK_REG2] = &&reg2,
        [KPRW_FK_REG1] = &&reg1, [KPRW_FK_MEM8_IMM] = &&mem8_imm, [KPRW_FK_MEM8_REG] = &&mem8_reg,
        [KPRW_FK_STR_IMM] = &&str_imm, [KPRW_FK_STR_REG] = &&str_reg,
    };
    const struct kprw_farg *f = ev->args, *end = f + ev->nargs;
    const unsigned long *regs = env->regs;
    uint32_t dyn = ev->fixed;
    uint64_t faults[3] = { 0, 0, 0 };   /* KPRW_EV_MAX_ARGS bits, and the padding after them */
    uint64_t bit = 1, v, p;
    unsigned k = 0;
    size_t n;
    if (f == end)
        goto done;
    goto *kind[f->kind];
next:
    if (++f == end)
        goto done;
    k++;
    bit = bit << 1 | bit >> 63;
    goto *kind[f->kind];
fault:
    faults[k / 64] |= bit;
    goto next;
reg8:
    v = regs[f->reg];
    __builtin_memcpy(rec + f->off, &v, 8);
    goto next;
reg4:
    put(rec + f->off, regs[f->reg], 4);
    goto next;
reg2:
    put(rec + f->off, regs[f->reg], 2);
    goto next;
reg1:
    rec[f->off] = (uint8_t)regs[f->reg];
    goto next;
mem8_reg:
    p = regs[f->reg];
    goto mem8;
mem8_imm:
    p = (uint64_t)f->imm;
mem8:
    if (__builtin_expect(!env->read_word(&v, p + (uint64_t)(int64_t)f->deref[0]), 0)) {
        __builtin_memset(rec + f->off, 0, 8);
        goto fault;
    }
    __builtin_memcpy(rec + f->off, &v, 8);
    goto next;
str_reg:
    p = regs[f->reg];
    goto str;
str_imm:
    p = (uint64_t)f->imm;
str:
    /* a string behind the pointer at p + deref[0], at + deref[1] */
    n = env->read_word(&v, p + (uint64_t)(int64_t)f->deref[0])
        ? env->read_str((char *)rec + dyn, v + (uint64_t)(int64_t)f->deref[1], KPRW_EV_STRING_MAX) : 0;
    put(rec + f->off, n ? (uint32_t)n << 16 | dyn : 0, 4);
    dyn += (uint32_t)n;
    if (__builtin_expect(n == 0, 0))
        goto fault;
    goto next;
any:
    if (fetch_any(f, env, rec, &dyn))
        goto fault;
    goto next;
done:
    put_faults(ev, rec, faults);
    return (dyn + 7) & ~7u;
}

void kprw_event_fetch_entry(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint64_t *entry)
{
    for (unsigned k = 0; k < ev->nentry; k++) {
        entry[k] = 0;
        if (ev->entry_slot[k] != 0xff)
            entry[k] = env->regs[ev->entry_slot[k]];
        else if (env->read(&entry[k], env->regs[env->sp_slot] + ev->entry_stack[k], 8) != 8)
            entry[k] = 0;   /* printed as 0: an entry value has no fault bit */
    }
}

int64_t kprw_rec_value(const struct kprw_event *ev, const uint8_t *rec, unsigned i)
{
    const struct kprw_farg *f = &ev->args[i];
    if (f->type == KPRW_FT_STRING)
        return 0;
    uint64_t v = get(rec + f->off, f->size);
    if (f->type == KPRW_FT_S && f->size < 8 && (v >> (8 * f->size - 1) & 1))
        v |= ~0ull << 8 * f->size;
    return (int64_t)v;
}

const char *kprw_rec_string(const struct kprw_event *ev, const uint8_t *rec, unsigned i)
{
    uint32_t loc = (uint32_t)get(rec + ev->args[i].off, 4);
    return loc >> 16 ? (const char *)rec + (loc & 0xffff) : 0;
}
