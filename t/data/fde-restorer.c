/* Calls the functions of t/data/fde-bounds.S (libfb.so) and returns from
 * its signal handler through that library's fb_restore, set as the
 * handler's sa_restorer with the raw rt_sigaction (glibc's sigaction would
 * put its own __restore_rt there): a probe written over fb_restore's
 * `mov $15,%rax; syscall`, or over fb_mid's first bytes, crashes it. */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *fb_funcs[4];   /* fb_first, fb_restore, fb_mid, fb_last */

struct kernel_sigaction {   /* the kernel's, x86-64 */
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};
#define KSA_RESTORER 0x04000000UL

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
    (void)sig;
    got++;
}

int main(void)
{
    long (*first)(long) = (long (*)(long))fb_funcs[0];
    long (*mid)(long) = (long (*)(long))fb_funcs[2];
    long (*last)(long, long, long) = (long (*)(long, long, long))fb_funcs[3];
    struct kernel_sigaction ka = { on_usr1, KSA_RESTORER, (void (*)(void))fb_funcs[1], 0 };
    if (syscall(SYS_rt_sigaction, SIGUSR1, &ka, NULL, sizeof ka.mask) != 0)
        return 2;
    long sum = 0;
    for (int i = 0; i < 100; i++) {
        kill(getpid(), SIGUSR1);
        sum += first(i) + mid(i) + last(i, 1, 2);
    }
    printf("%d signals, sum %ld\n", (int)got, sum);
    return 0;
}
