/* Function entries without a symbol, proven instruction starts: see entries.h.
 *
 * An FDE's range starts where its producer says, and nothing checks that
 * it is an instruction: glibc's hand-written signal-frame FDE for
 * __restore_rt starts a byte early, inside the padding nopl before it
 * (unwinders look up a return address minus one). A jump written there
 * would overwrite the trampoline's mov and syscall. So an entry with no
 * symbol is taken only where a linear sweep from a start the image names
 * meets it exactly; it is the same sweep `make check-reloc` does with its
 * own decoder (t/reloc/rc-bounds.c), so the two agree. */
#include "entries.h"
#include "../arch/isa.h"
#include "../util/array.h"

#include <stdio.h>
#include <string.h>

void entry_sweep_init(struct entry_sweep *w, const struct image *img, const uint64_t *starts, size_t nstarts,
                      const uint64_t *pads, size_t npads)
{
    memset(w, 0, sizeof *w);
    w->img = img;
    w->starts = starts;
    w->nstarts = nstarts;
    w->pads = pads;
    w->npads = npads;
}

/* Is the instruction [w->last, w->pos) zero padding before a pad it runs
 * over? Then the sweep goes on from the pad. */
static void zero_padding(struct entry_sweep *w, const struct section *s)
{
    while (w->ipad < w->npads && w->pads[w->ipad] <= w->last)
        w->ipad++;
    if (w->ipad == w->npads || w->pads[w->ipad] >= w->pos)
        return;
    uint64_t pad = w->pads[w->ipad];
    for (uint64_t a = w->last; a < pad; a++)
        if (s->data[a - s->addr] != 0)
            return;
    w->pos = pad;
}

bool entry_proven(struct entry_sweep *w, uint64_t addr, struct entry_doubt *d)
{
    size_t k = LOWER_BOUND(w->nstarts, m, w->starts[m] <= addr);   /* the first start past addr */
    if (k && w->starts[k - 1] == addr)
        return true;
    const struct section *s = image_section_at(w->img, addr);
    memset(d, 0, sizeof *d);
    d->addr = addr;
    if (!image_is_exec_addr(w->img, addr)) {
        d->not_code = true;
        return false;
    }
    bool sym = k && w->starts[k - 1] >= s->addr;
    uint64_t origin = sym ? w->starts[k - 1] : s->addr;
    if (w->sec != s || w->origin != origin || addr <= w->last) {   /* (asked out of order: again) */
        w->sec = s;
        w->origin = w->pos = w->last = origin;
        w->bad = 0;
        w->from_symbol = sym;
        w->ipad = LOWER_BOUND(w->npads, m, w->pads[m] <= origin);
    }
    uint64_t end = s->addr + s->size;
    while (w->pos < addr) {
        unsigned n = w->img->isa->insn_len(s->data + (w->pos - s->addr), (size_t)(end - w->pos));
        w->last = w->pos;
        if (!n) {
            w->bad = w->pos;
            n = 1;
        }
        w->pos += n;
        zero_padding(w, s);
    }
    if (w->pos == addr)
        return true;
    *d = (struct entry_doubt){ addr, w->origin, w->from_symbol, false, w->last, w->pos, w->bad };
    return false;
}

void entry_doubt_text(const struct entry_doubt *d, char *buf, size_t size)
{
    if (d->not_code) {
        snprintf(buf, size, "0x%llx is in no section of code", (unsigned long long)d->addr);
        return;
    }
    int n = snprintf(buf, size, "inside the instruction at 0x%llx-0x%llx of a linear decode from 0x%llx (%s)",
                     (unsigned long long)d->insn, (unsigned long long)d->insn_end, (unsigned long long)d->origin,
                     d->from_symbol ? "a function symbol" : "the section's start");
    if (d->undecodable && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ", past data at 0x%llx", (unsigned long long)d->undecodable);
}
