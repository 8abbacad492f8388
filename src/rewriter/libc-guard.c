/*
 * A program's own sigaction(SIGTRAP) or a mask that blocks SIGTRAP would
 * take the runtime's int3 probes from it; the runtime interposes those
 * calls, but when the image baked is libc itself it is libc's DT_NEEDED,
 * after libc in the lookup scope, and interposes nothing. So baking glibc's
 * libc adds probes on the two functions every such call goes through:
 * __sigaction (sigaction, signal, bsd_signal, sysv_signal, sigset,
 * sigignore) and pthread_sigmask (sigprocmask, sigblock, sigsetmask,
 * sighold, sigrelse, sigpause). The runtime puts its guard there
 * (src/runtime/user/libc-guard.c).
 */
#include "libc-guard.h"
#include "kind.h"

/* (and _exit and execve: the trace rings written before the process ends
 * or is replaced, which the runtime's interposed _exit and exec family do
 * when it comes before libc) */
static const char *const guarded[] = { "__sigaction", "pthread_sigmask", "_exit", "execve" };

/* glibc's: __libc_sigaction is its private entry (GLIBC_PRIVATE). libc.so.6
 * has an interpreter (it runs, printing its version); a static executable,
 * which holds the same functions, has none and is refused */
static bool is_glibc_libc(const struct image *img, const struct symbols *sy)
{
    if (img->hooks->kernel_contract || img->ehdr.e_type != ET_DYN || !img->interp ||
        !symbols_lookup(sy, "__libc_sigaction"))
        return false;
    for (size_t i = 0; i < sizeof guarded / sizeof guarded[0]; i++)
        if (!symbols_lookup(sy, guarded[i]))
            return false;
    return true;
}

int libc_guard_add(const struct image *img, const struct symbols *sy, struct spec_list *specs, char *err,
                   size_t errlen)
{
    if (!specs->n || !is_glibc_libc(img, sy))
        return 0;
    for (size_t i = 0; i < sizeof guarded / sizeof guarded[0]; i++)
        if (spec_add(specs, guarded[i], "libc's guard", err, errlen) < 0)
            return -1;
    return 0;
}
