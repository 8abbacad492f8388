/*
 * Where a probed process keeps its control directory (kprewrite-rt(3)):
 * $KPREWRITE_CTL_DIR/<pid>, else $XDG_RUNTIME_DIR/kprewrite/<pid>, else
 * /tmp/kprewrite-<uid>/<pid>. Shared by the runtime and `kprewrite ctl`.
 */
#ifndef KPREWRITE_CTL_H
#define KPREWRITE_CTL_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void kprewrite_ctl_base(char *out, size_t size)
{
    const char *env = getenv("KPREWRITE_CTL_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
    if (env && *env)
        snprintf(out, size, "%s", env);
    else if (xdg && *xdg)
        snprintf(out, size, "%s/kprewrite", xdg);
    else
        snprintf(out, size, "/tmp/kprewrite-%u", (unsigned)getuid());
}
#endif
