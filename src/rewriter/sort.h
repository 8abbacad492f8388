/* qsort for arrays that may be empty: glibc declares qsort's base nonnull,
 * so qsort(NULL, 0, ...) is undefined behaviour (UBSan reports it). */
#ifndef KPREWRITE_SORT_H
#define KPREWRITE_SORT_H
#include <stdlib.h>
static inline void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}
#endif
