/* A deduplicating byte store: every function entry of a large program
 * starts with one of a few thousand byte sequences (push %r15; push %r14
 * ...), and several probes of one function share its name. */
#include "strtab.h"
#include "../util/array.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ len;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static bool grow_slots(struct strtab *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *s = calloc(n, sizeof *s), *l = calloc(n, sizeof *l);
    if (!s || !l) {
        free(s);
        free(l);
        return false;
    }
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i])
            continue;
        size_t j = hash(t->bytes + t->slots[i] - 1, t->lens[i]) & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = t->slots[i];
        l[j] = t->lens[i];
    }
    free(t->slots);
    free(t->lens);
    t->slots = s;
    t->lens = l;
    t->nslots = n;
    return true;
}

int64_t strtab_add(struct strtab *t, const void *p, size_t len)
{
    if ((t->nruns + 1) * 2 > t->nslots && !grow_slots(t))
        return -1;
    size_t j = hash(p, len) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
        if (t->lens[j] == len && memcmp(t->bytes + t->slots[j] - 1, p, len) == 0)
            return t->slots[j] - 1;
    if (t->used + len + 1 > UINT32_MAX)
        return -1;
    if (!ARRAY_RESERVE(t->bytes, t->cap, t->used + len))
        return -1;
    size_t off = t->used;
    if (len)
        memcpy(t->bytes + off, p, len);
    t->used += len;
    t->slots[j] = (uint32_t)off + 1;
    t->lens[j] = (uint32_t)len;
    t->nruns++;
    return (int64_t)off;
}

void strtab_free(struct strtab *t)
{
    free(t->bytes);
    free(t->slots);
    free(t->lens);
    memset(t, 0, sizeof *t);
}
