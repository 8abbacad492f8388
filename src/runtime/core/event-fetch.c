/*
 * Fetching an event's arguments into its record: the hot path of a traced
 * probe. Every read of the probed program's memory goes through the
 * environment's read functions, which never fault (a fault is recorded as
 * the argument's fault bit and printed "(fault)"). No libc, no lock, no
 * allocation.
 */
#include "event.h"
#include "event-fetch.h"

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
    kprw_put_data_loc(rec + f->off, n, at);
    return (uint32_t)n;
}

void kprw_event_plan(struct kprw_event *ev)
{
    struct kprw_fetch_op *ops = (struct kprw_fetch_op *)ev->ops;
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_farg *f = &ev->args[k];
        bool reg = f->src == KPRW_FS_REG, imm = f->src == KPRW_FS_IMM, stack = f->src == KPRW_FS_STACK;
        bool number = f->type != KPRW_FT_STRING && f->count == 0;
        enum kprw_fkind kind = KPRW_FK_ANY;
        if (reg && f->nderef == 0 && number)
            kind = f->size == 8 ? KPRW_FK_REG8 : f->size == 4 ? KPRW_FK_REG4 : f->size == 2 ? KPRW_FK_REG2 : KPRW_FK_REG1;
        else if ((reg || imm) && f->nderef == 1 && number && f->size == 8)
            kind = reg ? KPRW_FK_MEM8_REG : KPRW_FK_MEM8_IMM;
        else if ((reg || imm) && f->nderef == 2 && f->type == KPRW_FT_STRING)
            kind = reg ? KPRW_FK_STR_REG : KPRW_FK_STR_IMM;
        else if ((reg || imm) && f->nderef == 1 && f->type == KPRW_FT_STRING)
            kind = reg ? KPRW_FK_STRAT_REG : KPRW_FK_STRAT_IMM;
        else if (stack && f->nderef == 0 && number && f->size == 8)
            kind = KPRW_FK_MEM8_REG;   /* $stackN, $argN past the registers: the word at sp + imm */
        struct kprw_fetch_op *o = &ops[k];
        o->kind = (uint8_t)kind;
        o->reg = f->reg;
        o->off = f->off;
        o->d1 = f->nderef >= 2 ? f->deref[1] : 0;
        o->a = (int64_t)k;
        if (kind >= KPRW_FK_MEM8_IMM)
            o->a = stack ? f->imm : (imm ? f->imm : 0) + f->deref[0];
    }
}

/* An argument the general way; true on a fault. */
bool kprw_event_fetch_any(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint8_t *rec, uint32_t *dyn)
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

void kprw_event_put_faults_wide(const struct kprw_event *ev, uint8_t *rec, const uint64_t *faults)
{
    for (unsigned b = 0; b < (unsigned)(ev->fixed - ev->fault_off); b++)
        rec[ev->fault_off + b] = (uint8_t)(faults[b / 8] >> 8 * (b % 8));
}

uint32_t kprw_event_fetch(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint8_t *rec)
{
    return kprw_event_fetch_inline(ev, env, rec);
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

bool kprw_rec_valid(const struct kprw_event *ev, const uint8_t *rec, uint32_t size)
{
    if (size < ev->fixed || size > ev->max_size)
        return false;
    for (unsigned i = 0; i < ev->nargs; i++) {
        if (ev->args[i].type != KPRW_FT_STRING)
            continue;
        uint32_t loc = (uint32_t)get(rec + ev->args[i].off, 4), len = loc >> 16, at = loc & 0xffff;
        if (len && (at < ev->fixed || at + len > size || rec[at + len - 1] != 0))
            return false;
    }
    return true;
}

const char *kprw_rec_string(const struct kprw_event *ev, const uint8_t *rec, unsigned i)
{
    uint32_t loc = (uint32_t)get(rec + ev->args[i].off, 4);
    return loc >> 16 ? (const char *)rec + (loc & 0xffff) : 0;
}
