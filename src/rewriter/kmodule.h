/*
 * Probes baked into a loadable kernel module (a relocatable object, .ko).
 *
 * The module's code is analyzed and the probes planned and emitted as for
 * a vmlinux, on a preview of the module: its sections at the addresses
 * the kernel's loader could give them, its relocations applied, its
 * undefined symbols at made-up addresses in the kernel's text. The output
 * is the module as it was (its code and relocations untouched: the
 * runtime patches the sites when the module loads, from the bytes the
 * loader made) plus three sections and their relocations:
 *   .kprewrite.text   AX  detours and out-of-line copies
 *   .kprewrite.table  A   the probe table (KPRW_T_MODULE)
 *   .kprewrite.data   WA  the states
 * and symbols __kprewrite_text, __kprewrite_table, __kprewrite_state and
 * the undefined kprewrite_dispatch the detours call.
 */
#ifndef KPREWRITE_KMODULE_H
#define KPREWRITE_KMODULE_H
#include "bake.h"
#include "image.h"

struct kmodule;

/* Is the file at path a relocatable object (e_type ET_REL)? */
bool kmodule_is_relocatable(const char *path);

/* Opens the module at path: *km its facts, *img its preview (no pool yet;
 * analyze and resolve probes on it, its hooks kind_module's: kind_open). -1 with err for what cannot be
 * baked (a machine kprewrite does not know, malformed, signed, already holding probes, a
 * relocation the module loader would not apply). */
int kmodule_open(struct kmodule **km, struct image *img, const char *path, char *err, size_t errlen);
void kmodule_free(struct kmodule *km);

/* Bakes the probes (analyzed on img, kmodule_open's preview, whose kind
 * the preview with the pool takes) into the module, written to out_path.
 * 0, or -1 with err. */
int kmodule_bake(struct kmodule *km, const struct image *img, const struct probe_list *probes,
                 const char *out_path, struct bake_result *res, char *err, size_t errlen);
#endif
