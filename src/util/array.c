/* Arrays: growing (array.h). */
#include "array.h"

#include <stdint.h>
#include <string.h>

bool array_reserve(void *pv, size_t *cap, size_t need, size_t elt)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    if (elt && c > SIZE_MAX / elt)
        return false;
    void *v;
    memcpy(&v, pv, sizeof v);   /* pv is a T **: any object pointer has this representation here */
    v = realloc(v, c * elt);
    if (!v)
        return false;
    memcpy(pv, &v, sizeof v);
    *cap = c;
    return true;
}

int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
