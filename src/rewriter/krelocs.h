/* The x86-64 kernel's vmlinux.relocs: the KASLR relocation sites of a
 * vmlinux whose .rela sections were stripped (6.12's post-link step). */
#ifndef KPREWRITE_KRELOCS_H
#define KPREWRITE_KRELOCS_H
#include <stddef.h>
#include <stdint.h>

struct krelocs_site { uint64_t addr; unsigned len; };

/* Reads PATH as arch/x86/tools/relocs writes it: 32-bit little-endian
 * words "0, 64-bit sites..., 0, inverse 32-bit sites..., 0, 32-bit
 * sites...", each the low half of a kernel address; an empty file has no
 * sites (a kernel that is not relocatable). On success *out (to be
 * freed) holds *n sites; on error, one line in err. */
int krelocs_read(const char *path, struct krelocs_site **out, size_t *n, char *err, size_t errlen);
#endif
