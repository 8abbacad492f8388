/* A vmlinux's KASLR relocations that move with their instruction: the
 * ones in a jump-optimized probe's DCR (NOTE_RELOC_MOVED) are re-pointed
 * in the .rela sections to the same field of the instruction's copy in the
 * detour, so that arch/x86/tools/relocs lists the copy and the bzImage's
 * KASLR pass relocates it as it did the original. */
#ifndef KPREWRITE_KASLR_H
#define KPREWRITE_KASLR_H
#include "image.h"
#include "probe.h"
#include "../arch/x86/detour.h"

#include <stddef.h>
#include <stdint.h>

/* The relocations of the image's code: where each is in the file. */
struct kaslr_relocs {
    struct kaslr_reloc { uint64_t at; size_t file_off; } *v;
    size_t n;
};
int kaslr_relocs_load(const struct image *img, struct kaslr_relocs *r, char *err, size_t errlen);
void kaslr_relocs_free(struct kaslr_relocs *r);

/* Re-points p's DCR relocations (kaslr_plus, kaslr_minus), in out (a copy
 * of the image's file), to the copy of their instruction in code (the
 * entry's code at code_at, whose DCR copy map is map). Checks that each
 * field is the same field of an instruction copied as it was (an
 * immediate or absolute displacement byte for byte, a RIP-relative one
 * re-encoded at the same place). 0, or -1 with err. */
int kaslr_move(const struct kaslr_relocs *r, const struct image *img, const struct probe *p,
               const uint8_t *code, size_t code_len, uint64_t code_at, const struct x86_copy_map *map,
               uint8_t *out, char *err, size_t errlen);
#endif
