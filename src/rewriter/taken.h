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
    uint64_t *self;   /* sorted starts of functions that take their own start
                         (which may be a base for offsets: goto *(&&l + off[i])) */
    size_t nself;
};

/* Every code address a user image could hand to an indirect jump without
 * computing it from a return address or a landing pad: 8-byte words of its
 * data (and 4-byte ones in a non-PIE executable, which can hold 32-bit
 * absolute addresses), its dynamic relocations' values, and the RIP-relative
 * operands of its code (in a non-PIE executable, every 4-byte window of the
 * code too: immediates). A superset; -1 with err on failure. */
int taken_build(struct taken *t, const struct image *img, const struct symbols *sy, char *err, size_t errlen);
/* Each code address the image's data holds (its 8-byte words, 8-aligned)
 * or its relocations compute (RELATIVE addends, S + A of the others), to fn. */
void taken_data_pointers(const struct image *img, void (*fn)(void *ctx, uint64_t addr), void *ctx);
/* Is some taken address v with lo < v < hi? */
bool taken_inside(const struct taken *t, uint64_t lo, uint64_t hi);
/* The first such address, or 0. */
uint64_t taken_first_inside(const struct taken *t, uint64_t lo, uint64_t hi);
/* Does the function starting at start take its own start? */
bool taken_self(const struct taken *t, uint64_t start);
void taken_free(struct taken *t);
#endif
