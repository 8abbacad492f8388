/* The buffer the x86 emitters write into (detour.c, relocate.c): inside
 * src/arch/x86 only. */
#ifndef KPREWRITE_X86_BUF_H
#define KPREWRITE_X86_BUF_H
#include "detour.h"

#include <string.h>

/* Where an emitter writes: p NULL counts the bytes without writing them
 * (the plan's lengths come from the same code as the bytes). */
struct buf {
    uint8_t *p;
    size_t n;
    uint64_t at;   /* address of p[0] */
};

static inline void bn(struct buf *b, const void *x, size_t n)
{
    if (b->p)
        memcpy(b->p + b->n, x, n);
    b->n += n;
}
static inline void b1(struct buf *b, uint8_t x) { bn(b, &x, 1); }
/* Overwrite n bytes at off, written before. */
static inline void bput(struct buf *b, size_t off, const void *x, size_t n)
{
    if (b->p)
        memcpy(b->p + off, x, n);
}
static inline void b32(struct buf *b, uint32_t x) { bn(b, &x, 4); }

/* A rel32 to target from the end of the instruction, which ends tail
 * bytes (an immediate) after these 4 */
static inline bool rel32_tail(struct buf *b, uint64_t target, unsigned tail)
{
    int64_t d = (int64_t)(target - (b->at + b->n + 4 + tail));
    if (d != (int32_t)d)
        return false;
    b32(b, (uint32_t)(int32_t)d);
    return true;
}

/* rel32 from the end of an instruction ending at b->at+b->n+4 to target */
static inline bool rel32(struct buf *b, uint64_t target) { return rel32_tail(b, target, 0); }

/* The relocated instructions of code[0..len) (from site), then jmp
 * site+len, appended to b (relocate.c); map may be NULL. */
bool x86_copy_back(struct buf *b, const uint8_t *code, unsigned len, uint64_t site, struct x86_copy_map *map,
                   char *err, size_t errlen);
#endif
