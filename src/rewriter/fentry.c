/*
 * A probe on a function entry of a kernel built with ftrace takes over the
 * 5-byte `call __fentry__` (NOTE_FENTRY_TAKEOVER): the site becomes our jmp,
 * so ftrace, which patches every address listed in __mcount_loc at boot and
 * whenever tracing is switched, must no longer know it. Its slot is zeroed
 * (ftrace skips zero entries) and the slot's relocation, which the bzImage's
 * KASLR pass would apply to the zero, becomes a none (the ISA's reloc_none:
 * the relocs tool ignores those). The function then simply is not traceable
 * by ftrace.
 */
#include "fentry.h"
#include "../arch/isa.h"
#include "../util/checked.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

int fentry_take_over(const struct image *img, uint8_t *out, uint64_t site, char *err, size_t errlen)
{
    uint64_t a, b, slot = 0;
    size_t off = 0;
    if (!image_symbol(img, "__start_mcount_loc", &a) || !image_symbol(img, "__stop_mcount_loc", &b) || b < a) {
        const struct section *s = image_section_by_name(img, "__mcount_loc");
        if (!s) {
            snprintf(err, errlen, "%s: 0x%llx: no __mcount_loc to take the fentry site out of", img->path,
                     (unsigned long long)site);
            return -1;
        }
        a = s->addr;
        b = ck_end(s->addr, s->size);
    }
    for (uint64_t at = a; at <= b && b - at >= 8; at += 8) {
        uint64_t v;
        size_t o;
        if (!image_file_offset(img, at, 8, &o))
            break;
        memcpy(&v, img->map + o, 8);
        if (v == site) {
            slot = at;
            off = o;
            break;
        }
    }
    if (!slot) {
        snprintf(err, errlen, "%s: 0x%llx: not listed in __mcount_loc", img->path, (unsigned long long)site);
        return -1;
    }
    memset(out + off, 0, 8);
    /* its relocation: in the RELA section of the section holding the slot */
    const struct section *holder = image_section_at(img, slot), *r;
    for (size_t i = 0; holder && (r = image_next_rela(img, &i));) {
        if (r->info != holder->index)
            continue;
        for (size_t k = 0; k < rela_count(r); k++) {
            Elf64_Rela rel = rela_get(r, k);
            if (rel.r_offset != slot || ELF64_R_TYPE(rel.r_info) == img->isa->reloc_none)
                continue;
            rel.r_info = ELF64_R_INFO(0, img->isa->reloc_none);
            rel.r_addend = 0;
            memcpy(out + r->offset + k * sizeof rel, &rel, sizeof rel);
        }
    }
    return 0;
}
