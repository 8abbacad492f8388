/*
 * Overflow-checked arithmetic for the sizes, offsets, counts and addresses
 * read from a file: every sum or product of such values goes through one
 * of these, so that a crafted header (p_offset = 2^63, p_filesz = 2^63 +
 * 0x1000, whose sum wraps to 0x1000) is refused instead of indexing memory
 * far outside the file. Header-only: the rewriter, the x86 layer and the
 * fuzz harnesses use them alike.
 */
#ifndef KPREWRITE_CHECKED_H
#define KPREWRITE_CHECKED_H
#include <stdbool.h>
#include <stdint.h>

/* *sum = a + b; false when that wraps (then *sum is the wrapped value). */
static inline bool ck_add(uint64_t a, uint64_t b, uint64_t *sum)
{
    return !__builtin_add_overflow(a, b, sum);
}

/* *prod = a * b; false when that wraps. */
static inline bool ck_mul(uint64_t a, uint64_t b, uint64_t *prod)
{
    return !__builtin_mul_overflow(a, b, prod);
}

/* *prod = a * b, signed; false when that overflows. */
static inline bool ck_smul(int64_t a, int64_t b, int64_t *prod)
{
    return !__builtin_mul_overflow(a, b, prod);
}

/* Does [off, off + len) lie inside [0, size)? (A range of a file, or of a
 * section's bytes.) */
static inline bool ck_in(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

/* Do count entries of elt bytes at off lie inside [0, size)? */
static inline bool ck_array_in(uint64_t off, uint64_t count, uint64_t elt, uint64_t size)
{
    uint64_t bytes;
    return ck_mul(count, elt, &bytes) && ck_in(off, bytes, size);
}

/* Does [a, a + len) lie inside [base, base + size)? (An address range in
 * a section or segment; base + size itself may be anything.) */
static inline bool ck_within(uint64_t a, uint64_t len, uint64_t base, uint64_t size)
{
    return a >= base && ck_in(a - base, len, size);
}

/* a + n, or UINT64_MAX where that wraps: the end of a range, for
 * comparisons that must not see a wrapped end as a small one. */
static inline uint64_t ck_end(uint64_t a, uint64_t n)
{
    uint64_t e;
    return ck_add(a, n, &e) ? e : UINT64_MAX;
}

/* v as 32 bits, UINT32_MAX when larger (a length kept in a 32-bit field). */
static inline uint32_t ck_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}
#endif
