/*
 * Processes the probed program cannot see: fusermount3, run to mount and
 * unmount the control directory, and the directory's watcher (ctlwatch.c).
 * A child made by fork() or posix_spawn() is one the program's own wait()
 * or waitpid(-1) could reap, and its end a SIGCHLD the program would get.
 * These are made by clone() with no exit signal: a "clone child", which
 * wait(), waitpid() and waitid() pass over unless asked for __WCLONE or
 * __WALL, and whose end signals nothing. The runtime reaps them by pid.
 * A clone child that runs execve becomes a plain one, so a program is run
 * by a grandchild, and the clone child in between waits for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rawsys.h"
#include "rt.h"

/* clone(flags) with the child on stack_top (16-byte aligned) running
 * fn(arg), then exiting with what it returns: glibc's clone() without
 * glibc, whose child path could meet a baked probe. The child shares the
 * caller's registers but rax and rsp, so fn and arg ride in r12 and r13. */
RAW_CODE long rt_clone(unsigned long flags, void *stack_top, int (*fn)(void *), void *arg)
{
    register long r10 __asm__("r10") = 0, r8 __asm__("r8") = 0;
    register void *r12 __asm__("r12") = (void *)fn, *r13 __asm__("r13") = arg;
    long ret;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"   /* the child: the end of its frame chain */
                     "mov %%r13, %%rdi\n\t"
                     "call *%%r12\n\t"
                     "mov %%eax, %%edi\n\t"
                     "mov %[exit], %%eax\n\t"
                     "syscall\n\t"
                     "hlt\n"
                     "1:"
                     : "=a"(ret)
                     : "a"((long)SYS_clone), "D"(flags), "S"(stack_top), "d"(0L), "r"(r10), "r"(r8), "r"(r12),
                       "r"(r13), [exit] "i"(SYS_exit)
                     : "rcx", "r11", "memory");
    return ret;
}

RAW_CODE void rt_close_from(int first, int nofile)
{
    if (RAW(SYS_close_range, first, ~0u, 0) != -ENOSYS)
        return;
    for (int fd = first; fd < nofile; fd++)   /* before Linux 5.9 */
        RAW(SYS_close, fd);
}

/* The program's signal handlers must not run in a child sharing its
 * memory: back to the default action before the mask lets any in. */
RAW_CODE static void default_handlers(void)
{
    struct k_sigaction sa, dfl = { 0 };
    for (long sig = 1; sig <= 64; sig++)
        if (RAW(SYS_rt_sigaction, sig, 0, &sa, sizeof sa.mask) == 0 && sa.handler != (void *)SIG_DFL &&
            sa.handler != (void *)SIG_IGN)
            RAW(SYS_rt_sigaction, sig, &dfl, 0, sizeof dfl.mask);
}

RAW_CODE int rt_spawn_child(void *arg)
{
    const struct raw_spawn *s = arg;
    default_handlers();
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, &s->mask, 0, 8);
    /* keep_fd out of the way of 0-2 first: the program may have closed them */
    long keep = s->keep_fd >= 0 ? RAW(SYS_fcntl, s->keep_fd, F_DUPFD, 10) : -1;
    long null = RAW(SYS_open, "/dev/null", O_RDWR);
    for (long fd = 0; fd < 3 && null >= 0; fd++)
        if (fd != null)
            RAW(SYS_dup3, null, fd, 0);
    if (keep >= 0)
        RAW(SYS_dup3, keep, 3, 0);   /* without O_CLOEXEC: it must reach the program */
    rt_close_from(keep >= 0 ? 4 : 3, s->nofile);
    RAW(SYS_execve, s->path, s->argv, s->envp);
    return 127;
}

int rt_nofile(void)
{
    long n = sysconf(_SC_OPEN_MAX);
    return n > 0 && n < (1 << 20) ? (int)n : 1 << 20;
}

/* The intermediate of rt_spawn_wait: a child that execs becomes a plain
 * child (the kernel gives it SIGCHLD as it execs), so the program runs as
 * a grandchild; this one waits for it and exits with its status. */
struct spawn_middle {
    struct raw_spawn s;
    char *stack_top;
};

static RAW_CODE int spawn_middle(void *arg)
{
    struct spawn_middle *m = arg;
    long pid = rt_clone(CLONE_VM | CLONE_VFORK | SIGCHLD, m->stack_top, rt_spawn_child, &m->s);
    int status = 0;
    if (pid < 0)
        return 127;
    while (RAW(SYS_wait4, pid, &status, 0, 0) == -EINTR)
        ;
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128;
}

int rt_spawn_wait(const char *path, char *const argv[], char *const envp[], int keep_fd)
{
    enum { STACK = 16384 };
    char *stack = malloc(2 * STACK);
    if (!stack)
        return -1;
    struct spawn_middle m = { { path, argv, envp, keep_fd, rt_nofile(), 0 }, stack + 2 * STACK };
    /* every signal blocked until the child has set its handlers to the
     * defaults; it runs the program with this thread's mask */
    uint64_t all = ~0ull;
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, &all, &m.s.mask, 8);
    /* CLONE_VFORK: this thread waits until the intermediate is done, so
     * the stacks and m outlive their use; no exit signal */
    long pid = rt_clone(CLONE_VM | CLONE_VFORK, stack + STACK, spawn_middle, &m);
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, &m.s.mask, 0, 8);
    int status = -1;
    if (pid > 0)
        while (waitpid((pid_t)pid, &status, __WCLONE) < 0 && errno == EINTR)
            ;
    free(stack);
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool rt_find_program(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && (size_t)snprintf(out, size, "%.*s/%s", (int)n, p, name) < size && access(out, X_OK) == 0)
            return true;
        if (!end)
            return false;
        p = end;
    }
}
