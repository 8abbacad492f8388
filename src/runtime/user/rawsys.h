/*
 * System calls without libc, for the code that must not call it: a child
 * between clone() and execve() and the control directory's watcher, both
 * sharing the program's memory (spawn.c, ctlwatch.c). libc would set errno
 * in the TLS of the thread that cloned them, and a libc function may carry
 * a baked probe, whose int3 would run the program's SIGTRAP handling in a
 * process that is not the program. Such code is compiled without stack
 * protector and sanitizers (RAW_CODE): the canary and the shadow are read
 * through TLS too. x86-64, as the runtime is.
 */
#ifndef KPREWRITE_RAWSYS_H
#define KPREWRITE_RAWSYS_H
#include <stdint.h>

#if defined(__has_attribute) && __has_attribute(no_stack_protector)
#define RAW_NO_SSP no_stack_protector,
#else
#define RAW_NO_SSP
#endif
#define RAW_CODE __attribute__((RAW_NO_SSP no_sanitize("address", "undefined"), no_instrument_function))

static inline RAW_CODE __attribute__((always_inline)) long raw_syscall6(long n, long a, long b, long c, long d, long e,
                                                                       long f)
{
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;   /* -errno on failure */
}

/* RAW(SYS_x, args...): up to six arguments, the rest zero */
#define RAW_ARGS_(a, b, c, d, e, f, ...) (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)
#define RAW(n, ...) raw_syscall6((n), RAW_ARGS_(__VA_ARGS__, 0, 0, 0, 0, 0, 0))

/* The kernel's struct sigaction on x86-64 (glibc's kernel_sigaction), as
 * SYS_rt_sigaction takes it (mask size 8). */
struct k_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

/* What a child made by rt_clone runs before execve: the file actions of
 * posix_spawn, in raw system calls (spawn.c). */
struct raw_spawn {
    const char *path;        /* absolute: nothing searches PATH */
    char *const *argv, *const *envp;
    int keep_fd;             /* becomes the child's fd 3 (or -1) */
    int nofile;              /* RLIMIT_NOFILE, to close every fd without close_range */
    unsigned long long mask; /* the signal mask it runs with */
};
/* The child's side: the program's signal handlers back to the default,
 * the mask, stdio on /dev/null, keep_fd as 3, every other fd closed, execve; returns (the child's exit status) 127 if that fails. */
int rt_spawn_child(void *raw_spawn);
/* Close fds first.. (close_range, or one by one up to nofile). */
void rt_close_from(int first, int nofile);
#endif
