/* The probe table's strings: names and original bytes, each stored once. */
#ifndef KPREWRITE_STRTAB_H
#define KPREWRITE_STRTAB_H
#include <stddef.h>
#include <stdint.h>

struct strtab {
    uint8_t *bytes;
    size_t used, cap;
    uint32_t *slots;     /* open addressing: offset + 1 of a stored run, 0 empty */
    uint32_t *lens;      /* its length, per slot */
    size_t nslots, nruns;
};

/* The offset of len bytes equal to p in t (stored now if they were not
 * there yet), or -1 when out of memory or past 4 GiB. */
int64_t strtab_add(struct strtab *t, const void *p, size_t len);
void strtab_free(struct strtab *t);
#endif
