/*
 * Fetching an event's arguments into its record: the hot path of a traced
 * probe. Every read of the probed program's memory goes through the
 * environment's read functions, which never fault (a fault is recorded as
 * the argument's fault bit and printed "(fault)"). No libc, no lock, no
 * allocation.
 */
#include "event.h"

static inline void put(uint8_t *dst, uint64_t v, unsigned size)
{
    for (unsigned i = 0; i < size; i++)
        dst[i] = (uint8_t)(v >> 8 * i);
}

static inline uint64_t get(const uint8_t *src, unsigned size)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v |= (uint64_t)src[i] << 8 * i;
    return v;
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

uint32_t kprw_event_fetch(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint8_t *rec)
{
    uint32_t dyn = ev->fixed;
    for (unsigned k = ev->fault_off; k < ev->fixed; k++)
        rec[k] = 0;
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_farg *f = &ev->args[k];
        uint64_t v = 0, addr = 0;
        bool ok = f->src == KPRW_FS_COMM || base(f, env, &v), fault;
        if (ok && f->nderef) {
            ok = deref_chain(f, env, v, &addr);
            v = addr;   /* a string is read there; a value, below */
        }
        if (f->type == KPRW_FT_STRING) {
            dyn += fetch_string(f, env, v, ok, rec, dyn, &fault);
        } else if (f->nderef) {
            unsigned n = f->size * (f->count ? f->count : 1);
            fault = !ok || env->read(rec + f->off, addr, n) != n;
        } else {
            fault = !ok;
            put(rec + f->off, v, f->size);
        }
        if (fault) {
            rec[ev->fault_off + k / 8] |= (uint8_t)(1u << k % 8);
            for (unsigned b = 0; f->type != KPRW_FT_STRING && b < f->size * (f->count ? f->count : 1u); b++)
                rec[f->off + b] = 0;
        }
    }
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
