/*
 * Arrays, the few ways the rewriter, the x86 layer and the user runtime use
 * them: growing one, finding a place in a sorted one, sorting one. One copy
 * of each.
 */
#ifndef KPREWRITE_ARRAY_H
#define KPREWRITE_ARRAY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/* A growable array is a pointer v, a count n and a capacity cap (any
 * names; all zero when empty). array_reserve makes room for need elements
 * of elt bytes in the array whose pointer is at pv (a T **, updated),
 * doubling cap (from 16). False when out of memory: the array is then as
 * it was. */
bool array_reserve(void *pv, size_t *cap, size_t need, size_t elt);
#define ARRAY_RESERVE(v, cap, need) array_reserve(&(v), &(cap), (need), sizeof *(v))
/* Appends the element (an expression of v's type) to (v, n, cap); false
 * when out of memory. */
#define ARRAY_PUSH(v, n, cap, ...) (ARRAY_RESERVE(v, cap, (n) + 1) && ((v)[(n)++] = (__VA_ARGS__), true))

/* lower_bound: the first i in [0, n) for which the condition `before` (an
 * expression of i, true for a prefix of the indices and false from there
 * on) is false, or n. E.g. the first element >= x of a sorted v:
 * LOWER_BOUND(n, i, v[i] < x). */
#define LOWER_BOUND(n, i, ...) __extension__({                    \
    size_t lb_lo_ = 0, lb_hi_ = (n);                              \
    while (lb_lo_ < lb_hi_) {                                     \
        size_t i = lb_lo_ + (lb_hi_ - lb_lo_) / 2;                \
        if (__VA_ARGS__)                                          \
            lb_lo_ = i + 1;                                       \
        else                                                      \
            lb_hi_ = i;                                           \
    }                                                             \
    lb_lo_; })

/* qsort comparison of uint64_t. */
int cmp_u64(const void *a, const void *b);

/* qsort for arrays that may be empty: glibc declares qsort's base nonnull,
 * so qsort(NULL, 0, ...) is undefined behaviour (UBSan reports it). */
static inline void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}
#endif
