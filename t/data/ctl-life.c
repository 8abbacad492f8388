/*
 * A probed program whose control directory t/ctl-life.t and t/ctl-socket.t
 * watch as it ends in every way: tick() is the probe, called every
 * millisecond. Modes:
 *   serve FILE            tick until FILE exists (at most 60 s), exit 0
 *   segv FILE, abort FILE tick until FILE exists, then crash
 *   exec FILE PROG ARG..  tick until FILE exists, then execv(PROG, ARGs)
 *   fds FILE              (what exec runs) print the fds this image was
 *                         given, then serve FILE
 *   children N [subreaper] fork N children (each sleeps 0.5 s and exits
 *                         with its number), wait() until ECHILD, and say
 *                         whom it reaped, whose SIGCHLD it got, and whether
 *                         the control directory was made meanwhile
 *   brief MS              tick for MS milliseconds, then print to stdout
 *                         and stderr and exit (its output must survive
 *                         the directory's making and removal)
 *   ids                   after 0.5 s, what the program can see of itself:
 *                         process group, session, signal masks and
 *                         dispositions, children, fds, and its directory
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;
__attribute__((noinline)) void tick(long n) { sink += n; }

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void tick_until(const char *file)
{
    for (long n = 0; n < 60000 && access(file, F_OK) < 0; n++) {
        tick(n);
        nap_ms(1);
    }
}

/* Does this process have a control directory (FUSE or socket)? Seen from
 * the base: root cannot enter another user's FUSE mount, and the owner's
 * view of the directory itself is what the runtime made. */
static const char *dir_made(void)
{
    char path[4200];
    const char *base = getenv("KPREWRITE_CTL_DIR");
    snprintf(path, sizeof path, "%s/%d", base ? base : "/nonexistent", (int)getpid());
    return access(path, F_OK) == 0 ? "yes" : "no";
}

/* The open fds, in order; a "c" after each that is close-on-exec. */
static void list_fds(char *out, size_t size)
{
    DIR *d = opendir("/proc/self/fd");
    int skip = d ? dirfd(d) : -1, fds[256], n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && n < 256)
        if (de->d_name[0] != '.' && atoi(de->d_name) != skip)
            fds[n++] = atoi(de->d_name);
    if (d)
        closedir(d);
    for (int i = 1; i < n; i++)   /* readdir's order is the kernel's: sort */
        for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
            int t = fds[j];
            fds[j] = fds[j - 1];
            fds[j - 1] = t;
        }
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(out + k, size - k, "%s%d%s", i ? " " : "", fds[i],
                              (fcntl(fds[i], F_GETFD) & FD_CLOEXEC) ? "c" : "");
}

static pid_t sigchld_from[64];
static volatile sig_atomic_t nsigchld;
static void on_sigchld(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (nsigchld < 64)
        sigchld_from[nsigchld++] = si->si_pid;
}

static int mode_children(int n, int subreaper)
{
    if (subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigchld;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    pid_t kids[16];
    for (int i = 0; i < n && i < 16; i++)
        if ((kids[i] = fork()) == 0) {
            nap_ms(500);   /* the runtime makes its directory meanwhile (20 ms) */
            _exit(i + 1);
        }
    int reaped = 0, own = 0, codes = 0, st;
    pid_t p;
    while ((p = wait(&st)) > 0 || errno == EINTR) {
        if (p <= 0)
            continue;
        reaped++;
        for (int i = 0; i < n; i++)
            if (kids[i] == p && WIFEXITED(st) && WEXITSTATUS(st) == i + 1)
                own++, codes |= 1 << i;
    }
    int others = 0;
    for (int i = 0; i < nsigchld; i++) {
        int mine = 0;
        for (int k = 0; k < n; k++)
            mine |= sigchld_from[i] == kids[k];
        others += !mine;
    }
    printf("reaped %d, its own %d with their codes (mask %x), SIGCHLD from others %d, wait ended with %s, "
           "directory made %s\n", reaped, own, codes, others, strerror(errno), dir_made());
    return 0;
}

static void status_line(const char *key, char *out, size_t size)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key)))
            snprintf(out, size, "%s", line + strlen(key));
    if (f)
        fclose(f);
    out[strcspn(out, "\n")] = 0;
}

static int mode_ids(void)
{
    nap_ms(500);
    char blk[64], ign[64], cgt[64], fds[1024], kids[256] = "", path[300];
    status_line("SigBlk:\t", blk, sizeof blk);
    status_line("SigIgn:\t", ign, sizeof ign);
    snprintf(ign, sizeof ign, "%016llx", strtoull(ign, NULL, 16) & ~(3ull << 31));
    status_line("SigCgt:\t", cgt, sizeof cgt);
    /* glibc's own signals 32 and 33 (thread cancellation, set*id in every
     * thread) get handlers once a second thread exists: not the program's
     * (nor are they, ignored, in the ignored set) */
    snprintf(cgt, sizeof cgt, "%016llx", strtoull(cgt, NULL, 16) & ~(3ull << 31));
    list_fds(fds, sizeof fds);
    /* every thread's children (the runtime's server is a thread) */
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(path, sizeof path, "/proc/self/task/%s/children", de->d_name);
            FILE *f = fopen(path, "r");
            size_t k = strlen(kids);
            if (f && fgets(kids + k, (int)(sizeof kids - k), f) == NULL)
                kids[k] = 0;
            if (f)
                fclose(f);
        }
    if (d)
        closedir(d);
    printf("same process group as the parent: %s, same session: %s, blocked %s, ignored %s, caught %s, "
           "children [%s], fds %s\n", getpgrp() == getpgid(getppid()) ? "yes" : "no",
           getsid(0) == getsid(getppid()) ? "yes" : "no", blk, ign, cgt, kids, fds);
    printf("directory made %s\n", dir_made());
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    const char *file = argc > 2 ? argv[2] : "/nonexistent";
    if (!strcmp(m, "serve") || !strcmp(m, "segv") || !strcmp(m, "abort") || !strcmp(m, "exec")) {
        tick_until(file);
        if (!strcmp(m, "segv")) {
            int *volatile nowhere = NULL;
            *nowhere = 1;
        }
        if (!strcmp(m, "abort"))
            abort();
        if (!strcmp(m, "exec") && argc > 3) {
            execv(argv[3], argv + 3);
            perror("execv");
            return 1;
        }
        printf("served\n");
        return 0;
    }
    if (!strcmp(m, "fds")) {
        char fds[1024];
        list_fds(fds, sizeof fds);
        printf("fds after exec: %s\n", fds);
        fflush(stdout);
        tick_until(file);
        return 0;
    }
    if (!strcmp(m, "children"))
        return mode_children(argc > 2 ? atoi(argv[2]) : 3, argc > 3 && !strcmp(argv[3], "subreaper"));
    if (!strcmp(m, "ids"))
        return mode_ids();
    if (!strcmp(m, "brief")) {
        for (long n = 0, ms = argc > 2 ? atol(argv[2]) : 50; n < ms; n++) {
            tick(n);
            nap_ms(1);
        }
        printf("brief: out\n");
        fprintf(stderr, "brief: err\n");
        return 0;
    }
    fprintf(stderr, "ctl-life: unknown mode '%s'\n", m);
    return 2;
}
