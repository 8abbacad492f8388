/*
 * The exec family, interposed: an exec replaces the process, and with it
 * the events its rings hold that the writer has not written yet
 * (KPREWRITE_TRACE), and its counts (KPREWRITE_REPORT). Each entry writes
 * them (rt_before_exec) and then runs libc's own. glibc's execvp, execl and
 * the rest call its internal execve, never this one, so each is
 * interposed, and each writes once. (When the image rewritten is libc
 * itself the runtime comes after it and interposes nothing: a guard probe
 * on libc's execve does the same, libc-guard.c.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "rt.h"

extern char **environ;

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execvp_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f)
        errno = ENOSYS;
    return f;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    rt_before_exec();
    execve_fn *f = next("execve");
    return f ? f(path, argv, envp) : -1;
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    rt_before_exec();
    execve_fn *f = next("execvpe");
    return f ? f(file, argv, envp) : -1;
}

EXPORT int execvp(const char *file, char *const argv[])
{
    rt_before_exec();
    execvp_fn *f = next("execvp");
    return f ? f(file, argv) : -1;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    rt_before_exec();
    fexecve_fn *f = next("fexecve");
    return f ? f(fd, argv, envp) : -1;
}

/* execl, execlp, execle: the arguments up to the NULL as an argv (and,
 * for execle, the environment after it) */
#define LIST_EXEC(first, ap, withenv, call)                                     \
    do {                                                                        \
        va_list ap2;                                                            \
        va_copy(ap2, ap);                                                       \
        size_t n = 1;                                                           \
        while (va_arg(ap2, char *))                                             \
            n++;                                                                \
        va_end(ap2);                                                            \
        char *argv[n + 1];                                                      \
        argv[0] = (char *)(first);                                              \
        for (size_t i = 1; i <= n; i++)                                         \
            argv[i] = va_arg(ap, char *);                                       \
        char *const *envp = withenv ? va_arg(ap, char *const *) : environ;      \
        (void)envp;                                                             \
        va_end(ap);                                                             \
        return call;                                                            \
    } while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    LIST_EXEC(arg, ap, 0, execve(path, argv, environ));
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    LIST_EXEC(arg, ap, 0, execvp(file, argv));
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    LIST_EXEC(arg, ap, 1, execve(path, argv, envp));
}
