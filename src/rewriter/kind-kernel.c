/*
 * The kernel image kinds (kind.h): a vmlinux built with the kernel runtime
 * (its pool between symbols of its own sections, the detours calling the
 * runtime's dispatcher), and a loadable kernel module (kmodule.c: analyzed
 * and emitted on a preview at module-area addresses, written back with a
 * pool and the relocations the module loader applies). Both follow the
 * kernel's rules; their facts are the kernel's tables (ktables.c).
 */
#include "kinds.h"
#include "bake.h"
#include "kaslr.h"
#include "kmodule.h"
#include "ktables.h"
#include "../util/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the pool */

/* An area of the pool between the symbols NAME and NAME_end, inside one
 * section with file bytes; false when the symbols are missing. */
static bool kernel_area(const struct image *img, const char *name, struct section *area, bool *bad)
{
    char end[64];
    uint64_t a, b;
    snprintf(end, sizeof end, "%s_end", name);
    if (!image_symbol(img, name, &a) || !image_symbol(img, end, &b))
        return false;
    const struct section *s = image_section_at(img, a);
    if (b <= a || !s || !s->data || !ck_within(a, b - a, s->addr, s->size)) {
        *bad = true;
        return true;
    }
    *area = *s;
    area->name = name;
    area->addr = a;
    area->size = b - a;
    area->offset = s->offset + (a - s->addr);
    area->data = s->data + (a - s->addr);
    return true;
}

/* The kernel pool's areas, found by their symbols (kprewrite_pool_text ...
 * _end) inside the kernel's own sections; no slot: the detours call the
 * runtime directly. */
static int kernel_pool_areas(const struct image *img, struct pool_sections *ps, char *err, size_t errlen)
{
    static const char *const names[3] = { KPRW_STR(KPRW_KPOOL_TEXT), KPRW_STR(KPRW_KPOOL_TABLE),
                                          KPRW_STR(KPRW_KPOOL_STATE) };
    bool bad = false;
    int found = 0;
    for (int i = 0; i < 3; i++)
        found += kernel_area(img, names[i], &ps->kernel_area[i], &bad);
    if (found == 0) {
        snprintf(err, errlen, "%s: no kprewrite pool: build the kernel with CONFIG_KPREWRITE=y (doc/kernel.md)",
                 img->path);
        return -2;
    }
    if (found < 3 || bad) {
        snprintf(err, errlen, "%s: the kernel's kprewrite pool is incomplete or malformed (symbols "
                 KPRW_STR(KPRW_KPOOL_TEXT) ", _table, _state and their _end)", img->path);
        return -1;
    }
    /* the kernel's .rodata is writable in the file (read-only after
     * init data): the table must lie between its rodata symbols */
    uint64_t ro_a, ro_b;
    if (image_symbol(img, "__start_rodata", &ro_a) && image_symbol(img, "__end_rodata", &ro_b) &&
        (ps->kernel_area[1].addr < ro_a || ps->kernel_area[1].addr + ps->kernel_area[1].size > ro_b)) {
        snprintf(err, errlen, "%s: the kprewrite probe table is not in the kernel's read-only data", img->path);
        return -1;
    }
    ps->text = &ps->kernel_area[0];
    ps->table = &ps->kernel_area[1];
    ps->data = &ps->kernel_area[2];
    if ((ps->table->flags & SHF_EXECINSTR) || !(ps->data->flags & SHF_WRITE))
        return pool_malformed(img, err, errlen);
    return 0;
}

static void kernel_pool_too_small(const struct image *img, const struct pool_sections *ps, size_t n, size_t text,
                                  size_t table, size_t data, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: the kernel's pool is too small for %zu probes: detours need %zu bytes (has "
             "%llu), the table %zu (has %llu), the state %zu (has %llu); raise CONFIG_KPREWRITE_TEXT_KB, "
             "_TABLE_KB or _DATA_KB", img->path, n, text, (unsigned long long)ps->text->size, table,
             (unsigned long long)ps->table->size, data, (unsigned long long)ps->data->size);
}

/* ------------------------------------------- relocations that follow */

static int kaslr_open(const struct image *img, void **relocs, char *err, size_t errlen)
{
    struct kaslr_relocs *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, errlen, "%s: out of memory reading relocations", img->path);
        return -1;
    }
    if (kaslr_relocs_load(img, r, err, errlen) < 0) {
        free(r);
        return -1;
    }
    *relocs = r;
    return 0;
}

static int kaslr_move_relocs(const void *relocs, const struct image *img, const struct probe *p, const uint8_t *code,
                             size_t code_len, uint64_t code_at, const struct x86_copy_map *map, uint8_t *out,
                             char *err, size_t errlen)
{
    return kaslr_move(relocs, img, p, code, code_len, code_at, map, out, err, errlen);
}

static void kaslr_close(void *relocs)
{
    if (relocs)
        kaslr_relocs_free(relocs);
    free(relocs);
}

/* ------------------------------------------------------------- vmlinux */

static int vmlinux_facts(struct kfacts *kf, const struct image *img, const struct symbols *sy, const char *relocs,
                         char *err, size_t errlen)
{
    return kfacts_load(kf, img, sy, relocs, false, err, errlen);
}

/* Into the kernel's pool, the detours calling its runtime's dispatcher
 * (bake() says when it is missing). */
static int vmlinux_bake(const struct bake_job *j, char *err, size_t errlen)
{
    symbols_addr_of(j->sy, KPRW_KERNEL_DISPATCH, &j->pool->kernel_dispatch);
    return bake_into_pool(j, err, errlen);
}

#define KERNEL_RULES \
    .untyped_functions = true, .finds_functions = false, .call_in_dcr = false, .retargets = false, .short_jumps = false, \
    .evictions = false, .taken_proofs = false, .kernel_contract = true, .adds_pool = false, \
    .padding_symbol = ktable_padding_symbol, .pool_areas = kernel_pool_areas

const struct kind_hooks kind_vmlinux = {
    .name = "vmlinux",
    KERNEL_RULES,
    .reads_back = true,
    .load_facts = vmlinux_facts,
    .without_pool = NULL,   /* pool_find said what to do */
    .pool_too_small = kernel_pool_too_small,
    .relocs_open = kaslr_open, .relocs_move = kaslr_move_relocs, .relocs_close = kaslr_close,
    .bake = vmlinux_bake,
};

/* -------------------------------------------------------------- module */

static int module_facts(struct kfacts *kf, const struct image *img, const struct symbols *sy, const char *relocs,
                        char *err, size_t errlen)
{
    return kfacts_load(kf, img, sy, relocs, true, err, errlen);
}

static int module_bake(const struct bake_job *j, char *err, size_t errlen)
{
    struct bake_result br;
    if (kmodule_bake(j->state, j->img, j->probes, j->dest, &br, err, errlen) < 0)
        return -1;
    fprintf(j->msg, "kprewrite: wrote %s: %zu probe%s baked into the module, pool: text %zu, table %zu, "
            "data %zu bytes\n", j->dest, br.baked, br.baked == 1 ? "" : "s", br.text_used, br.table_used,
            br.data_used);
    return 0;
}

static void module_close(void *state)
{
    kmodule_free(state);
}

/* (the loader relocates a copied instruction as the original: no
 * relocation needs moving, relocs_open is NULL) */
const struct kind_hooks kind_module = {
    .name = "module",
    KERNEL_RULES,
    .reads_back = false,
    .remove_refused = "a module's probes are removed by baking the module as built",
    .load_facts = module_facts,
    .bake = module_bake,
    .close = module_close,
};
