/* What the compiler may call even in freestanding code (structure copies
 * and clears), and two string helpers. */
#include "sys.h"

KPRS_HIDDEN void *memset(void *s, int c, size_t n)
{
    unsigned char *p = s;
    while (n--)
        *p++ = (unsigned char)c;
    return s;
}

KPRS_HIDDEN void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--)
        *p++ = *q++;
    return d;
}

size_t kprs_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int kprs_strcmp(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return (unsigned char)*a - (unsigned char)*b;
}

void kprs_write_all(int fd, const char *s, size_t n)
{
    while (n) {
        long k = kprs_sys(SYS_write, fd, (long)s, (long)n, 0);
        if (k == -4)   /* EINTR */
            continue;
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}
