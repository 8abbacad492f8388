/*
 * A kernel's facts (facts.h), read by one table-driven reader: its patch
 * and search tables as its ISA describes them (each entry's site is
 * reserved, some add branch targets), the kprobe blacklist, and its KASLR
 * relocations.
 */
#ifndef KPREWRITE_KTABLES_H
#define KPREWRITE_KTABLES_H
#include "facts.h"

/* Is name a symbol of a function's padding in a kernel of img's ISA (x86:
 * __pfx_, __cfi_)? */
bool ktable_padding_symbol(const struct image *img, const char *name);

/* Read every table present in img (a vmlinux, or with module a kernel
 * module's preview), and its KASLR relocation sites: from relocs (a
 * vmlinux.relocs) when not NULL, else from its .rela sections (a vmlinux
 * that has some .rela sections but none for code had them stripped: an
 * error without relocs; a module's move with their instruction, none is
 * read). Returns 0, or -1 with a one-line error (a table that exists but
 * cannot be understood is an error: guessing could corrupt the kernel). */
int kfacts_load(struct kfacts *kf, const struct image *img, const struct symbols *sy,
                const char *relocs, bool module, char *err, size_t errlen);

#endif
