/*
 * The checks of a probe table that both runtimes make before following
 * anything in it (kprw-core.h); each adds those of where it runs (the
 * user runtime: the segments of the object; the kernel: its text and pool).
 */
#include "kprw-core.h"

const char kprw_entry_fault_names[5][48] = {
    "unknown kind",
    "unknown verdict",
    "site length out of range",
    "name outside the string table",
    "original bytes outside the string table",
};

enum kprw_table_fault kprw_table_fault(const struct kprw_table *t, uint32_t known_flags)
{
    if (t->magic != KPRW_MAGIC)
        return KPRW_TF_MAGIC;
    if (t->version < KPRW_VERSION_MIN || t->version > KPRW_VERSION)
        return KPRW_TF_VERSION;
    if (t->flags & ~known_flags)
        return KPRW_TF_FLAGS;
    if (t->entry_size != sizeof(struct kprw_entry))
        return KPRW_TF_ENTRY_SIZE;
    return KPRW_TF_NONE;
}
