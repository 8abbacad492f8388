/* Code addresses an image materializes: where an indirect jump could go. */
#ifndef KPREWRITE_TAKEN_H
#define KPREWRITE_TAKEN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "image.h"
#include "symbols.h"

struct taken {
    uint64_t *v;   /* sorted code addresses */
    size_t n;
};

/* Every code address a user image could hand to an indirect jump without
 * computing it from a return address or a landing pad: 8-byte words of its
 * data (and 4-byte ones in a non-PIE executable, which can hold 32-bit
 * absolute addresses), its dynamic relocations' values, and the RIP-relative
 * operands of its code (in a non-PIE executable, every 4-byte window of the
 * code too: immediates). A superset; -1 with err on failure. */
int taken_build(struct taken *t, const struct image *img, const struct symbols *sy, char *err, size_t errlen);
/* Is some taken address v with lo < v < hi? */
bool taken_inside(const struct taken *t, uint64_t lo, uint64_t hi);
void taken_free(struct taken *t);
#endif
