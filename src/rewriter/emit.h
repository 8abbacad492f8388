/*
 * The emit stage: the code of a plan's pieces, the bytes of its sites and
 * fixups, at the pool's addresses. The plan (plan.c) runs the same
 * functions with no output, to learn the lengths; emit_image then writes
 * them where the pool really is, checking reach again there.
 */
#ifndef KPREWRITE_EMIT_H
#define KPREWRITE_EMIT_H
#include "plan.h"
#include "../arch/x86/detour.h"

/* The addresses the pool's code calls and points at. */
struct pool_addrs {
    uint64_t text, data, slot;
    /* what the detours call: a slot (a pointer), a thunk reading one (an
     * added pool), or the kernel's dispatcher; 0 when the pool has none */
    uint64_t dispatch, ret, kret, kret_return, enter;
    uint64_t common[2];       /* the shared detours' bodies (0: none yet) */
};
/* The addresses for the pool ps, with the thunks and bodies the plan has
 * laid out so far. */
void pool_addrs(const struct bake_plan *plan, const struct pool_sections *ps, struct pool_addrs *a);

struct emit_env {
    const struct image *img;
    const struct probe_list *probes;
    const struct plan_calls *calls;
    struct pool_addrs a;
    const void *relocs;   /* the kind's relocations that move with a copy (NOTE_RELOC_MOVED) */
};

/* The code of a piece other than an entry (thunk, shared body, evicted
 * window's stub, return trampoline) at a.text + pc->off, into out (NULL:
 * only measured). Its length, or 0 with err. */
size_t emit_piece(const struct emit_env *env, const struct piece *pc, uint8_t *out, char *err, size_t errlen);

/* What emitting an entry's code tells: where it is entered, where its
 * copy of the site's instructions is (and which instruction is where), the
 * bytes the site gets and where they are in the file. */
struct entry_info {
    size_t entry_off, dcr_off, hook_off;
    struct x86_copy_map map;
    unsigned site_len;
    uint8_t site[KPRW_ORIG_MAX];
    size_t site_file_off;
};
/* The code of entry k (pe) at a.text + off into out (NULL: only measured),
 * and its site's bytes. Its length, or 0 with err. */
size_t emit_entry(const struct emit_env *env, const struct plan_entry *pe, size_t k, size_t off, uint8_t *out,
                  struct entry_info *ec, char *err, size_t errlen);

/* The bytes of fixup f (f->len of them) with the pool's text at a.text:
 * false with err when they cannot reach their target. */
bool fixup_bytes(const struct emit_env *env, const struct plan_fixup *f, uint8_t *out, char *err, size_t errlen);

/* Writes the plan's code into out (a copy of img's file bytes, whose pool
 * ps is where the plan's pieces go, at their final addresses): the text
 * (int3 where nothing goes), each site, each fixup; the image's kind
 * moves the relocations of DCRs. Returns 0, or
 * -1 with err (something out of reach there). */
int emit_image(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
               const struct bake_plan *plan, uint8_t *out, char *err, size_t errlen);
#endif
