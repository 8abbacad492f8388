/*
 * The hot path of a traced probe, inline so that a runtime's recorder
 * compiles it with its own read functions (direct calls, no environment
 * in memory): one short path per kind of argument (kprw_event_plan; the
 * kernel's fetch_insn programs do the same), the general one out of line.
 * kprw_event_fetch (event.h) is the same, not inline.
 */
#ifndef KPREWRITE_EVENT_FETCH_H
#define KPREWRITE_EVENT_FETCH_H
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

/* A string field's data_loc (ftrace's: length << 16 | offset from the
 * record's start; 0 when there is no string, a fault) */
static inline void kprw_put_data_loc(uint8_t *field, size_t n, uint32_t at)
{
    put(field, n ? (uint32_t)n << 16 | at : 0, 4);
}

/* Argument f the general way (KPRW_FK_ANY); true on a fault. */
bool kprw_event_fetch_any(const struct kprw_farg *f, const struct kprw_fetch_env *env, uint8_t *rec, uint32_t *dyn)
    __attribute__((cold));
/* The fault bits and the padding after them, a byte at a time: on a
 * fault, or when they take more than 8 bytes (over 57 arguments). */
void kprw_event_put_faults_wide(const struct kprw_event *ev, uint8_t *rec, const uint64_t *faults)
    __attribute__((cold));

struct kprw_fetch_fns {
    size_t (*read_str)(char *dst, uintptr_t src, size_t max);
    bool (*read_word)(uint64_t *dst, uintptr_t src);
};

/* A string behind the pointer at p, at + o->d1: its bytes at rec + *dyn,
 * its data_loc in the field; true on a fault. */
static inline bool kprw_fetch_str_ptr(const struct kprw_fetch_op *o, struct kprw_fetch_fns fn, uint64_t p, uint8_t *rec,
                                      uint32_t *dyn)
{
    uint64_t v;
    size_t n = fn.read_word(&v, p) ? fn.read_str((char *)rec + *dyn, v + (uint64_t)(int64_t)o->d1, KPRW_EV_STRING_MAX) : 0;
    kprw_put_data_loc(rec + o->off, n, *dyn);
    *dyn += (uint32_t)n;
    return n == 0;
}

/* A string at p; true on a fault. */
static inline bool kprw_fetch_str_at(const struct kprw_fetch_op *o, struct kprw_fetch_fns fn, uint64_t p, uint8_t *rec,
                                     uint32_t *dyn)
{
    size_t n = fn.read_str((char *)rec + *dyn, p, KPRW_EV_STRING_MAX);
    kprw_put_data_loc(rec + o->off, n, *dyn);
    *dyn += (uint32_t)n;
    return n == 0;
}

/* A number at p; true on a fault (the field then 0). */
static inline bool kprw_fetch_mem8(const struct kprw_fetch_op *o, struct kprw_fetch_fns fn, uint64_t p, uint8_t *rec)
{
    uint64_t v;
    bool fault = !fn.read_word(&v, p);
    if (__builtin_expect(fault, 0))
        v = 0;
    __builtin_memcpy(rec + o->off, &v, 8);
    return fault;
}

/* Fill rec's fields (see kprw_event_fetch) from ev's ops, one short path
 * a kind. rec is bytes, which may alias anything: what is read of ev is
 * read into locals first, so that the stores into rec do not make the
 * compiler read it again. */
static inline __attribute__((always_inline)) uint32_t
kprw_event_fetch_inline(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint8_t *rec)
{
    const struct kprw_fetch_op *o = ev->ops, *end = o + ev->nargs;
    const unsigned long *regs = env->regs;
    /* read before anything can take env's address: a caller that has
     * just filled env in then calls its functions directly */
    const struct kprw_fetch_fns fn = { env->read_str, env->read_word };
    const unsigned fixed = ev->fixed, fault_off = ev->fault_off;
    uint32_t dyn = fixed;
    /* the fault bits and the padding up to the strings (1 to 8 bytes but
     * for over 57 arguments) zeroed first, by one 8-byte store at
     * fault_off: what it writes past fixed the strings overwrite below
     * (max_size leaves room for it). Never read back after the fields'
     * narrower stores: a load over several recent stores cannot be
     * forwarded from them and waits for them to retire, a third of a
     * 4-argument event's cost past the timestamp (perf, 2026-11-29). */
    const unsigned fault_bytes = fixed - fault_off;
    if (__builtin_expect(fault_bytes - 1u < 8u, 1))
        __builtin_memset(rec + fault_off, 0, 8);
    uint64_t faults[3] = { 0, 0, 0 };   /* KPRW_EV_MAX_ARGS bits, and the padding after them */
    uint64_t bit = 1;
    for (unsigned k = 0; o < end; o++, k++, bit = bit << 1 | bit >> 63) {
        bool fault;
        switch ((enum kprw_fkind)o->kind) {
        case KPRW_FK_REG8: { uint64_t v = regs[o->reg]; __builtin_memcpy(rec + o->off, &v, 8); continue; }
        case KPRW_FK_REG4: put(rec + o->off, regs[o->reg], 4); continue;
        case KPRW_FK_REG2: put(rec + o->off, regs[o->reg], 2); continue;
        case KPRW_FK_REG1: rec[o->off] = (uint8_t)regs[o->reg]; continue;
        case KPRW_FK_MEM8_IMM: fault = kprw_fetch_mem8(o, fn, (uint64_t)o->a, rec); break;
        case KPRW_FK_MEM8_REG: fault = kprw_fetch_mem8(o, fn, regs[o->reg] + (uint64_t)o->a, rec); break;
        case KPRW_FK_STR_IMM: fault = kprw_fetch_str_ptr(o, fn, (uint64_t)o->a, rec, &dyn); break;
        case KPRW_FK_STR_REG: fault = kprw_fetch_str_ptr(o, fn, regs[o->reg] + (uint64_t)o->a, rec, &dyn); break;
        case KPRW_FK_STRAT_IMM: fault = kprw_fetch_str_at(o, fn, (uint64_t)o->a, rec, &dyn); break;
        case KPRW_FK_STRAT_REG: fault = kprw_fetch_str_at(o, fn, regs[o->reg] + (uint64_t)o->a, rec, &dyn); break;
        default: fault = kprw_event_fetch_any(&ev->args[o->a], env, rec, &dyn); break;
        }
        if (__builtin_expect(fault, 0))
            faults[k / 64] |= bit;
    }
    /* a fault (rare): its bits into the zeroed bytes, one at a time */
    if (__builtin_expect(faults[0] | faults[1], 0) || fault_bytes > 8)
        kprw_event_put_faults_wide(ev, rec, faults);
    return (dyn + 7) & ~7u;
}
#endif
