/*
 * A program that takes signals into its own hands, run on a copy of libc
 * with every entry and every return probed (t/libc-signals.t). It is not
 * linked with the runtime: libc loads it, after libc, so nothing of the
 * runtime's interposes its calls. It installs its own SIGTRAP handler
 * (sigaction, then signal), raises SIGTRAP, blocks every signal with
 * sigprocmask and, in 4 threads, with pthread_sigmask, takes SIGUSR1 with
 * every signal in the handler's mask, forks a child and takes its SIGCHLD;
 * all the while it calls getppid, which `unoptimize getppid` (written to
 * its own control directory when the first argument is `unoptimize`) makes
 * an int3 probe: each call then traps (and so does each name in
 * $LIBC_SIG_UNOPTIMIZE). Prints what it saw, and the calls
 * of getppid it made (those of the forked child aside). With `pause FILE`
 * (after unoptimize) it writes FILE.ready after that, waits until FILE
 * exists, then makes CALLS calls more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define CALLS 1000
#define TRAPS 3
#define USR1S 5

static pid_t (*volatile ppid)(void) = getppid;   /* through a pointer: every call made */
static volatile sig_atomic_t traps, traps2, usr1s, chlds;
static long calls;   /* getppid calls of the main thread and its handlers */

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig; (void)uc;
    if (si->si_code == SI_TKILL || si->si_code == SI_USER)
        traps++;
}
static void on_trap2(int sig) { (void)sig; traps2++; }

static void on_usr1(int sig)
{
    (void)sig;
    ppid();   /* an int3 probe hit with every other signal blocked */
    calls++;
    usr1s++;
}

static void on_chld(int sig) { (void)sig; chlds++; }

static void *worker(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    long n = 0;
    for (int i = 0; i < CALLS; i++)
        n += ppid() > 0;
    *(long *)arg = n;
    return NULL;
}

/* "unoptimize getppid" to this process's control directory, and the
 * same for each name in $LIBC_SIG_UNOPTIMIZE */
static int unoptimize(void)
{
    const char *dir = getenv("KPREWRITE_CTL_DIR"), *more = getenv("LIBC_SIG_UNOPTIMIZE");
    char path[4096], cmd[4096];
    snprintf(path, sizeof path, "%s/%d/control", dir ? dir : "", (int)getpid());
    int n = snprintf(cmd, sizeof cmd, "unoptimize getppid\n");
    for (const char *p = more ? more : ""; *p && n < (int)sizeof cmd;) {
        size_t k = strcspn(p, " ");
        if (k)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, "unoptimize %.*s\n", (int)k, p);
        p += k + (p[k] == ' ');
    }
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, cmd, (size_t)n) != n) {
        fprintf(stderr, "libc-sig-prog: %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

static void install(void)
{
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_trap;
    a.sa_flags = SA_SIGINFO;
    sigfillset(&a.sa_mask);
    sigaction(SIGTRAP, &a, NULL);
    sigaction(SIGTRAP, NULL, &o);
    printf("sigaction(SIGTRAP) reads back the program's handler: %d\n", o.sa_sigaction == on_trap);
    memset(&a, 0, sizeof a);
    a.sa_handler = on_usr1;
    sigfillset(&a.sa_mask);
    sigaction(SIGUSR1, &a, NULL);
    a.sa_handler = on_chld;
    sigaction(SIGCHLD, &a, NULL);
}

static void round_of_calls(void)
{
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < CALLS; i++)
        calls += ppid() > 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "unoptimize") == 0 && unoptimize() < 0)
        return 2;
    install();
    for (int i = 0; i < TRAPS; i++)
        raise(SIGTRAP);
    sighandler_t was = signal(SIGTRAP, on_trap2);
    printf("signal(SIGTRAP) returns the program's handler: %d\n", (void *)was == (void *)on_trap);
    raise(SIGTRAP);
    for (int i = 0; i < USR1S; i++)
        raise(SIGUSR1);
    round_of_calls();
    pthread_t th[THREADS];
    long n[THREADS], sum = 0;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, &n[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL), sum += n[i];
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        long k = 0;
        for (int i = 0; i < CALLS; i++)
            k += ppid() > 0;
        _exit(k == CALLS ? 7 : 1);   /* its report (at _exit) holds its own CALLS hits */
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    printf("SIGTRAP raised %d times: the first handler ran %d, the second %d\n", TRAPS + 1, (int)traps,
           (int)traps2);
    printf("SIGUSR1 %d handled; threads' calls %ld; child exit %d, SIGCHLD %d\n", (int)usr1s, sum,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, (int)chlds);
    if (argc > 3 && strcmp(argv[2], "pause") == 0) {
        char ready[4096];
        snprintf(ready, sizeof ready, "%s.ready", argv[3]);
        fflush(stdout);
        close(open(ready, O_WRONLY | O_CREAT, 0644));
        while (access(argv[3], F_OK) != 0)
            nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
        round_of_calls();
    }
    printf("getppid calls %ld\n", calls + sum);
    return 0;
}
