/* Reads a vmlinux.relocs file (see krelocs.h). */
#include "krelocs.h"
#include "../util/array.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int krelocs_read(const char *path, struct krelocs_site **out, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct krelocs_site *v = NULL;
    size_t nv = 0, cap = 0, words = 0;
    unsigned stops = 0;
    unsigned char w[4];

    *out = NULL; *n = 0;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t got;
    while ((got = fread(w, 1, 4, f)) == 4) {
        uint32_t x = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
        words++;
        if (x == 0 && stops < 3) {
            stops++;
            continue;
        }
        /* the kernel lives in the top 2 GiB: a site's low half has bit 31 */
        if (stops == 0 || (x == 0 && stops == 3) || !(x & 0x80000000u)) {
            snprintf(err, errlen, "%s: word %zu (0x%08x) %s: not an x86-64 vmlinux.relocs "
                     "(0, 64-bit sites, 0, inverse 32-bit sites, 0, 32-bit sites)", path, words - 1, x,
                     stops == 0 ? "before the first stop" : x == 0 ? "after the third stop"
                     : "is not a kernel address");
            goto fail;
        }
        struct krelocs_site s = { 0xffffffff00000000ull | x, stops == 1 ? 8u : 4u };
        if (!ARRAY_PUSH(v, nv, cap, s)) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto fail;
        }
    }
    /* an empty file: no relocations (a kernel that is not relocatable) */
    if (ferror(f) || got != 0 || (words && stops != 3)) {
        if (ferror(f) || got != 0)
            snprintf(err, errlen, "%s: %s", path, ferror(f) ? strerror(errno)
                     : "its size is not a multiple of 4: not a vmlinux.relocs");
        else
            snprintf(err, errlen, "%s: %u stops (0 words) in %zu words, not 3: not an x86-64 vmlinux.relocs",
                     path, stops, words);
        goto fail;
    }
    fclose(f);
    *out = v; *n = nv;
    return 0;
fail:
    fclose(f);
    free(v);
    return -1;
}
