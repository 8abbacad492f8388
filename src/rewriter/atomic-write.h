/* Writing an output image so that its final name never holds a partial file. */
#ifndef KPREWRITE_ATOMIC_WRITE_H
#define KPREWRITE_ATOMIC_WRITE_H
#include <stddef.h>
#include <stdint.h>

/* Writes buf to path through a temporary file beside it (".NAME.kprewrite-XXXXXX",
 * mode 0600 while it is written), fsync, rename over path, fsync of the
 * directory. A symlink at path is followed: its target is replaced and the
 * link stays. The result gets `mode`; when path existed, its owner is kept
 * (as far as we may). Killed at any point, path holds either the old file or
 * the whole new one; only the temporary file can be left behind.
 * Returns 0, or -1 with a one-line message naming path in err. */
int write_atomic(const char *path, const uint8_t *buf, size_t size, unsigned mode, char *err, size_t errlen);
#endif
