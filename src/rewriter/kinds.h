/*
 * The image kinds there are (kind.h), and opening an image as its kind.
 * Only run.c, the fuzz harnesses and the kinds themselves name them; the
 * generic stages ask img->hooks.
 */
#ifndef KPREWRITE_KINDS_H
#define KPREWRITE_KINDS_H
#include "image.h"
#include "kind.h"

/* kind-user.c: a user ELF linked with the runtime (the pool reserved at
 * link time), and a prebuilt one (the bake adds a pool and the runtime). */
extern const struct kind_hooks kind_linked, kind_prebuilt;
/* kind-static.c: a static executable without a pool; the bake adds one
 * and the static runtime (src/runtime/static), which kprewrite's main
 * hands over (kind_static_runtime: not built into the fuzz harnesses and
 * unit tests that link the core alone). */
extern const struct kind_hooks kind_static;
/* kind_static for a static executable img, or NULL and err when it cannot
 * take the static runtime (a Go program) */
const struct kind_hooks *kind_static_for(const struct image *img, char *err, size_t errlen);
void kind_static_runtime(const uint8_t *blob, size_t size);
/* kind-kernel.c: a vmlinux built with the kernel runtime, and a loadable
 * kernel module (kmodule.c). */
extern const struct kind_hooks kind_vmlinux, kind_module;

/* Opens the image at path (kernel: --kernel given) as its kind: a
 * relocatable object given with --kernel as a kernel module's preview,
 * anything else with image_open; sets img->hooks, and *state for the
 * kind's hooks. 0, or -1 with err. */
int kind_open(struct image *img, void **state, const char *path, bool kernel, char *err, size_t errlen);
void kind_close(struct image *img, void *state);
/* The kind of an image image_open opened: a vmlinux, else a user ELF
 * (linked; one without a pool becomes prebuilt: kind_linked.without_pool). */
void kind_attach(struct image *img);
#endif
