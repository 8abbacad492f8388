/* What the user ELF kinds share (kind-user.c, kind-static.c). */
#ifndef KPREWRITE_KIND_USER_H
#define KPREWRITE_KIND_USER_H
#include "kind.h"
#include "facts.h"

/* A user image's facts: its code relocations and the code it moves at
 * run time. */
int user_facts(struct kfacts *kf, const struct image *img, const struct symbols *sy, const char *relocs,
               char *err, size_t errlen);

/* (events: set by each kind) */
#define USER_RULES \
    .untyped_functions = false, .finds_functions = true, .call_in_dcr = true, .retargets = true, .short_jumps = true, \
    .evictions = true, .taken_proofs = true, .kernel_contract = false, .reads_back = true, \
    .load_facts = user_facts, .pool_areas = pool_user_areas
#endif
