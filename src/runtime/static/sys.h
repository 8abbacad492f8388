/* Raw system calls (x86-64) and the few libc pieces the static runtime
 * needs, freestanding: it runs before, and beside, whatever libc the
 * program has. */
#ifndef KPRS_SYS_H
#define KPRS_SYS_H
#include <stddef.h>
#include <stdint.h>

#define KPRS_HIDDEN __attribute__((visibility("hidden")))

static inline long kprs_sys(long nr, long a, long b, long c, long d)
{
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

static inline long kprs_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

#define SYS_write 1
#define SYS_mmap 9
#define SYS_munmap 11
#define SYS_madvise 28
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_getpid 39
#define SYS_fcntl 72
#define SYS_clock_gettime 228
#define SYS_openat 257
#define SYS_getcpu 309
#define SYS_gettid 186
#define SYS_tgkill 234

#define KPRS_SIGTRAP 5
#define KPRS_F_DUPFD_CLOEXEC 1030

/* the kernel's struct sigaction (x86-64) */
struct kprs_sigaction {
    void *handler;
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
#define KPRS_SA_SIGINFO 4
#define KPRS_SA_RESTORER 0x04000000
#define KPRS_SA_ONSTACK 0x08000000
#define KPRS_SA_NODEFER 0x40000000

void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
size_t kprs_strlen(const char *s) KPRS_HIDDEN;
void kprs_write_all(int fd, const char *s, size_t n) KPRS_HIDDEN;
int kprs_strcmp(const char *a, const char *b) KPRS_HIDDEN;
#endif
