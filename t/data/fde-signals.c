/* Takes signals and returns from its handlers (t/fde-bounds.t): every
 * return goes through glibc's __restore_rt (sigaction sets it as the
 * sa_restorer), which a probed libc must leave alone. A plain handler
 * (kill) and an SA_SIGINFO one (sigqueue, with a value), 1000 each. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t plain, info;
static volatile long sum;

static void on_plain(int sig)
{
    (void)sig;
    plain++;
}

static void on_info(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    info++;
    sum += si->si_value.sival_int;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_plain;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 2;
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGUSR2, &sa, NULL) != 0)
        return 2;
    for (int i = 0; i < 1000; i++) {
        kill(getpid(), SIGUSR1);
        sigqueue(getpid(), SIGUSR2, (union sigval){ .sival_int = i });
    }
    printf("plain %d, siginfo %d, values %ld\n", (int)plain, (int)info, (long)sum);
    return 0;
}
