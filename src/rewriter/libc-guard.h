/* The signal guard of a probed libc: the probes kprewrite adds when it
 * bakes glibc's libc.so itself (see the runtime's libc-guard.c). */
#ifndef KPREWRITE_LIBC_GUARD_H
#define KPREWRITE_LIBC_GUARD_H
#include "image.h"
#include "spec.h"
#include "symbols.h"

/* When img is glibc's libc (a user image defining __libc_sigaction,
 * __sigaction and pthread_sigmask), the entries of __sigaction and
 * pthread_sigmask are added to specs (a probe asked for twice is baked
 * once). -1 (err set) only when out of memory. */
int libc_guard_add(const struct image *img, const struct symbols *sy, struct spec_list *specs, char *err,
                   size_t errlen);
#endif
