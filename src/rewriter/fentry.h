/* Taking over a kernel's fentry site: ftrace must never see it again. */
#ifndef KPREWRITE_FENTRY_H
#define KPREWRITE_FENTRY_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"

/* In out (a copy of img's file), zero the __mcount_loc slot naming site and
 * make its relocation a none (the ISA's reloc_none), so that neither ftrace nor KASLR's
 * relocation pass touches it. Returns 0, or -1 with err. */
int fentry_take_over(const struct image *img, uint8_t *out, uint64_t site, char *err, size_t errlen);
#endif
