/*
 * What a probe site holds in each of its states: the rewriter writes them
 * (detour.c), the runtimes move a site between them and check what it holds
 * (the user runtime's patch.c, the kernel runtime's apply(), which
 * integrate.sh gives a copy of this header). Header-only, no libc.
 *   jump    jmp rel32 to the detour (or jmp rel8 to a trampoline, for a
 *           site shorter than that), int3 over the rest of the DCR
 *   int3    int3 on byte 0, the original bytes after it
 *   off     the original bytes
 */
#ifndef KPREWRITE_X86_SITE_H
#define KPREWRITE_X86_SITE_H
#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

#define X86_INT3 0xcc     /* int3: a trap, and the filler no code runs */
#define X86_JMP32 0xe9    /* jmp rel32 */
#define X86_JMP8 0xeb     /* jmp rel8 */
#define X86_JMP32_LEN 5   /* e9 rel32: the jump that replaces the DCR */
#define X86_JMP8_LEN 2    /* eb rel8: the jump of a site shorter than that (to a trampoline) */

static inline void x86_site_fill_int3(uint8_t *b, unsigned from, unsigned len)
{
    for (unsigned i = from; i < len; i++)
        b[i] = X86_INT3;
}

/* The site's len bytes in the int3 state. */
static inline void x86_site_int3(uint8_t *b, const uint8_t *orig, unsigned len)
{
    __builtin_memcpy(b, orig, len);
    b[0] = X86_INT3;
}

/* The jump state, to target: false when the site is shorter than the jump
 * or target out of its reach. */
static inline bool x86_site_jump(uint8_t *b, uint64_t site, uint64_t target, unsigned len)
{
    int64_t d = (int64_t)(target - (site + X86_JMP32_LEN));
    if (d != (int32_t)d || len < X86_JMP32_LEN)
        return false;
    int32_t d32 = (int32_t)d;
    b[0] = X86_JMP32;
    __builtin_memcpy(b + 1, &d32, 4);
    x86_site_fill_int3(b, X86_JMP32_LEN, len);
    return true;
}

/* The jump state of a short site, to its trampoline. */
static inline bool x86_site_jump8(uint8_t *b, uint64_t site, uint64_t target, unsigned len)
{
    int64_t d = (int64_t)(target - (site + X86_JMP8_LEN));
    if (d != (int8_t)d || len < X86_JMP8_LEN)
        return false;
    b[0] = X86_JMP8;
    b[1] = (uint8_t)(int8_t)d;
    x86_site_fill_int3(b, X86_JMP8_LEN, len);
    return true;
}

/* Do the bytes s, at site, start with a jmp rel32 to target? */
static inline bool x86_site_jumps_to(const uint8_t *s, uint64_t site, uint64_t target)
{
    int32_t d;
    __builtin_memcpy(&d, s + 1, 4);
    return s[0] == X86_JMP32 && site + X86_JMP32_LEN + (uint64_t)(int64_t)d == target;
}

/* Bytes after an out-of-line copy's start in which a single step of its
 * first instruction can end without leaving what stands for it (a
 * relocated DCR, or an emulated call, and the jump back). */
#define X86_COPY_SPAN 96

/* One instruction of an out-of-line copy at ool has been single-stepped,
 * and the thread is at ip: where that is in place, for the site whose
 * original bytes are orig (len of them). A branch taken or a call's target
 * is outside the copy already. Branches were copied without their prefixes
 * as rel32 (jcc 6 bytes, jmp 5), other instructions keep their length. 0:
 * still inside an emulated call (a push and a jump for one call): step on. */
static inline uint64_t x86_step_in_place(const uint8_t *orig, unsigned len, uint64_t site, uint64_t ool, uint64_t ip)
{
    unsigned k = 0, op, in_place = 0, copied = 0;
    uint8_t b, b1;
    if (ip < ool || ip >= ool + X86_COPY_SPAN)
        return ip;
    while (k < len && (orig[k] == 0x2e || orig[k] == 0x3e || orig[k] == 0xf2 || orig[k] == 0xf3 ||
                       orig[k] == 0x66 || orig[k] == 0x67))
        k++;
    op = k < len && (orig[k] & 0xf0) == 0x40 ? k + 1 : k;   /* past a REX */
    if (op >= len)
        return site + (ip - ool);
    b = orig[op];
    b1 = op + 1 < len ? orig[op + 1] : 0;
    if (b == 0xe8 || (b == 0xff && ((b1 >> 3) & 7) == 2))
        return 0;
    if (b >= 0x70 && b <= 0x7f)
        in_place = op + 2, copied = 6;
    else if (b == X86_JMP8)
        in_place = op + 2, copied = X86_JMP32_LEN;
    else if (b == X86_JMP32)
        in_place = op + 5, copied = X86_JMP32_LEN;
    else if (b == 0x0f && (b1 & 0xf0) == 0x80)
        in_place = op + 6, copied = 6;
    else
        return site + (ip - ool);
    /* a branch: past it, or (taken) to a later instruction of the DCR,
     * whose copy follows */
    return ip - ool >= copied ? site + in_place + (ip - ool - copied) : site + (ip - ool);
}

/* Do they start with a jmp rel8? Its target in *target. */
static inline bool x86_site_jump8_target(const uint8_t *s, uint64_t site, uint64_t *target)
{
    *target = site + X86_JMP8_LEN + (uint64_t)(int64_t)(int8_t)s[1];
    return s[0] == X86_JMP8;
}
#endif
