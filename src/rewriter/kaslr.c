/* Re-pointing a vmlinux's KASLR relocations to a detour's copy (kaslr.h). */
#include "kaslr.h"
#include "../arch/isa.h"
#include "../arch/x86/decode.h"
#include "../util/array.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_reloc(const void *a, const void *b)
{
    const struct kaslr_reloc *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

int kaslr_relocs_load(const struct image *img, struct kaslr_relocs *r, char *err, size_t errlen)
{
    const struct section *s;
    size_t cap = 0;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; (s = image_next_rela(img, &i));) {
        /* --emit-relocs' sections (not allocated) of code */
        if ((s->flags & SHF_ALLOC) || !s->info || s->info >= img->nsecs ||
            !(img->secs[s->info].flags & SHF_EXECINSTR))
            continue;
        for (size_t k = 0; k < rela_count(s); k++) {
            Elf64_Rela rel = rela_get(s, k);
            struct kaslr_reloc e = { rel.r_offset, s->offset + k * sizeof rel };
            if (!ARRAY_PUSH(r->v, r->n, cap, e)) {
                snprintf(err, errlen, "%s: out of memory reading relocations", img->path);
                kaslr_relocs_free(r);
                return -1;
            }
        }
    }
    sort_array(r->v, r->n, sizeof *r->v, cmp_reloc);
    return 0;
}

void kaslr_relocs_free(struct kaslr_relocs *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* Re-points the relocation at `at` (one of the image's code relocations
 * that is not a none) to `to`. */
static bool repoint(const struct kaslr_relocs *r, const struct image *img, uint64_t at, uint64_t to, uint8_t *out)
{
    size_t a = LOWER_BOUND(r->n, m, r->v[m].at < at);
    bool done = false;
    for (size_t i = a; i < r->n && r->v[i].at == at; i++) {
        Elf64_Rela rel;
        if (r->v[i].file_off + sizeof rel > img->map_size)
            return false;
        memcpy(&rel, out + r->v[i].file_off, sizeof rel);
        if (ELF64_R_TYPE(rel.r_info) == img->isa->reloc_none || rel.r_offset != at)
            continue;
        rel.r_offset = to;
        memcpy(out + r->v[i].file_off, &rel, sizeof rel);
        done = true;
    }
    return done;
}

int kaslr_move(const struct kaslr_relocs *r, const struct image *img, const struct probe *p,
               const uint8_t *code, size_t code_len, uint64_t code_at, const struct x86_copy_map *map,
               uint8_t *out, char *err, size_t errlen)
{
    size_t avail;
    const uint8_t *orig = image_read(img, p->addr, &avail);
    uint32_t fields = p->kaslr_plus | p->kaslr_minus;
    const char *why = NULL;
    unsigned bit = 0;
    if (!orig || avail < p->dcr_len) {
        why = "the site has no bytes in the file";
        goto fail;
    }
    for (bit = 0; bit < 32; bit++) {
        if (!(fields & (1u << bit)))
            continue;
        /* the instruction holding the field, and its copy */
        unsigned start = 0, n;
        struct x86_insn in, cin;
        for (;; start += n) {
            n = start < p->dcr_len ? x86_decode(orig + start, p->dcr_len - start, p->addr + start, &in) : 0;
            if (!n) {
                why = "no instruction of the DCR holds it";
                goto fail;
            }
            if (bit < start + n)
                break;
        }
        uint16_t at = start < X86_COPY_MAX ? map->off[start] : 0xffff;
        if (bit + 4 > start + n || at == 0xffff || at >= code_len ||
            x86_decode(code + at, code_len - at, code_at + at, &cin) != n) {
            why = "its instruction is not copied as it was";
            goto fail;
        }
        unsigned f = bit - start;
        /* a RIP-relative displacement is re-encoded for the copy's place;
         * anything else must be the same bytes */
        bool riprel = (in.flags & XF_RIPREL) && in.disp_off == f;
        if (riprel ? !(cin.flags & XF_RIPREL) || cin.disp_off != f
                   : memcmp(code + at + f, orig + bit, 4) != 0) {
            why = "the copy's field is not the original's";
            goto fail;
        }
        if (!repoint(r, img, p->addr + bit, code_at + at + f, out)) {
            why = "no relocation in the .rela sections there";
            goto fail;
        }
    }
    return 0;
fail:
    snprintf(err, errlen, "%s: %s+0x%llx: the KASLR relocation at DCR byte %u: %s", img->path, p->sym,
             (unsigned long long)p->off, bit, why);
    return -1;
}
