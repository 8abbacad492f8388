/* Fixture for t/trap.t and t/control.t: int3 probes, post handlers, the
 * program's own SIGTRAP handling, probes in signal handlers, and the
 * control directory under load. Prints "<mode> ok" or what went wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kprewrite/ctl.h>
#include <kprewrite/kprobes.h>

int short3(int a, int b);
void foreign_int3(void);

__attribute__((noinline)) int work(int x) { return x * 3 + 1; }
__attribute__((noinline)) int alt_add(int a, int b) { return a * 1000 + b; }

#define FAIL(...) do { printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)

static unsigned long seen_di, seen_si, seen_ip;
static volatile unsigned long one = 1;   /* no short3 + 1 for the rewriter to see taken */
static int pre_calls, post_calls;

static int pre_regs(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp;
    seen_di = r->di, seen_si = r->si, seen_ip = r->ip;
    pre_calls++;
    r->di = 100;   /* takes effect: short3(40, 2) becomes 102 */
    return 0;
}

static int pre_redirect(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp;
    r->ip = (unsigned long)alt_add;   /* as kprobes do: return 1, ip set */
    return 1;
}

static unsigned long post_ax;
static int pre_count(struct kprobe *kp, struct pt_regs *r) { (void)kp, (void)r; pre_calls++; return 0; }
static void post(struct kprobe *kp, struct pt_regs *r, unsigned long flags)
{
    (void)kp, (void)flags;
    post_ax = r->ax;
    post_calls++;
}

static long hits(const char *sym)
{
    struct kprewrite_point_stats st;
    return kprewrite_point_stats(sym, 0, &st) == 0 ? (long)st.hits : -1;
}

static void ctl_path(char *out, size_t size, const char *file)
{
    char base[2048];
    kprewrite_ctl_base(base, sizeof base);
    snprintf(out, size, "%s/%d/%s", base, (int)getpid(), file);
}

/* one command through the control file; 0 or errno */
static int ctl(const char *file, const char *text)
{
    char path[4096];
    ctl_path(path, sizeof path, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = write(fd, text, strlen(text)) < 0 ? errno : 0;
    close(fd);
    return rc;
}

static int list_has(const char *needle)
{
    char path[4096], buf[65536];
    ctl_path(path, sizeof path, "list");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strstr(buf, needle) != NULL;
}

/* Opens the list, reads it and returns with the file still open: exit
 * closes it while the process's own control server is gone (nothing may
 * wait for that server), and the RELEASE never comes, so a leak checker
 * looks while the server still holds the file (it must stay reachable). */
static int mode_held(void)
{
    char path[4096], buf[256];
    ctl_path(path, sizeof path, "list");
    int fd = open(path, O_RDONLY);
    if (fd < 0 || read(fd, buf, sizeof buf) <= 0)
        FAIL("cannot read %s", path);
    /* more openings: no copy of the held file's handle stays in the
     * server's stack, where a leak checker would still find it */
    for (int i = 0; i < 3; i++)
        if (list_has("short3") != 1)
            FAIL("list: no short3");
    return 0;
}

static int mode_regs(void)
{
    struct kprobe kp = { .symbol_name = "short3", .pre_handler = pre_regs };
    int rc = register_kprobe(&kp);
    if (rc)
        FAIL("register short3: %d", rc);
    if (kp.flags & KPROBE_FLAG_OPTIMIZED)
        FAIL("short3 claims to be optimized");
    int v = short3(40, 2);
    /* ip: the address + 1, as after the kernel's int3 */
    if (pre_calls != 1 || seen_di != 40 || seen_si != 2 || seen_ip - one != (unsigned long)short3)
        FAIL("regs: calls %d di %lu si %lu ip %#lx (want %p + 1)", pre_calls, seen_di, seen_si, seen_ip, (void *)short3);
    if (v != 102)
        FAIL("a changed rdi had no effect: %d", v);
    unregister_kprobe(&kp);
    if (short3(40, 2) != 42 || hits("short3") != 2)
        FAIL("after unregister: %d, hits %ld", short3(40, 2), hits("short3"));
    return 0;
}

static int mode_redirect(void)
{
    struct kprobe kp = { .symbol_name = "short3", .pre_handler = pre_redirect };
    if (register_kprobe(&kp))
        FAIL("register");
    int v = short3(7, 5);
    unregister_kprobe(&kp);
    if (v != 7005)
        FAIL("redirected call returned %d, not 7005", v);
    if (short3(7, 5) != 12)
        FAIL("not restored");
    return 0;
}

static int post_mode(void)
{
    struct kprobe kp = { .symbol_name = "work", .pre_handler = pre_count, .post_handler = post };
    if (!list_has("work+0x0  [OPTIMIZED]"))
        FAIL("work is not optimized to begin with");
    int rc = register_kprobe(&kp);
    if (rc)
        FAIL("register with post_handler: %d", rc);
    if (kp.flags & KPROBE_FLAG_OPTIMIZED)
        FAIL("a post_handler probe claims to be optimized");
    if (list_has("work+0x0  [OPTIMIZED]") != 0)
        FAIL("work still optimized with a post_handler");
    int v = work(5);
    if (v != 16 || pre_calls != 1 || post_calls != 1)
        FAIL("post: work(5) = %d, pre %d post %d", v, pre_calls, post_calls);
    unregister_kprobe(&kp);
    if (list_has("work+0x0  [OPTIMIZED]") != 1)
        FAIL("work not optimized again after unregister");
    if (work(5) != 16 || post_calls != 1)
        FAIL("post handler ran after unregister");
    return 0;
}

static int chain_calls, chain_kernel;
static void own_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    chain_calls++;
    chain_kernel += si->si_code == SI_KERNEL;
}

static int mode_chain(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_trap;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGTRAP, &sa, NULL) < 0 || sigaction(SIGTRAP, NULL, &old) < 0 || old.sa_sigaction != own_trap)
        FAIL("sigaction does not give back the program's handler");
    raise(SIGTRAP);
    foreign_int3();
    if (chain_calls != 2 || chain_kernel != 1)
        FAIL("program's handler: %d calls, %d from int3", chain_calls, chain_kernel);
    if (short3(1, 2) != 3 || chain_calls != 2 || hits("short3") != 1)
        FAIL("probe went to the program's handler: calls %d hits %ld", chain_calls, hits("short3"));
    return 0;
}

static volatile int in_sig_result;
static void on_usr1(int sig) { (void)sig; in_sig_result = short3(20, 3); }

static int mode_sighandler(void)
{
    static char altstack[1 << 16];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
    if (sigaltstack(&ss, NULL) < 0)
        FAIL("sigaltstack");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigfillset(&sa.sa_mask);   /* blocks everything it can while the handler runs */
    sigaction(SIGUSR1, &sa, NULL);
    struct kprobe kp = { .symbol_name = "short3", .pre_handler = pre_count };
    if (register_kprobe(&kp))
        FAIL("register");
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &all, NULL);   /* a thread blocking every signal it can */
    raise(SIGUSR1);
    unregister_kprobe(&kp);
    if (in_sig_result != 23 || pre_calls != 1 || hits("short3") != 1)
        FAIL("probe in a signal handler: result %d, pre %d, hits %ld", in_sig_result, pre_calls, hits("short3"));
    return 0;
}

/* ---- stress: 4 threads on 8 probes, the control files toggled every ms ---- */

__attribute__((noinline)) int p0(int x) { return x + 1; }
__attribute__((noinline)) int p1(int x) { return x ^ 0x55; }
__attribute__((noinline)) int p2(int x) { return x * 7; }
__attribute__((noinline)) int p3(int x) { return x - 3; }
__attribute__((noinline)) int p4(int x) { return x * 2; }
__attribute__((noinline)) int p5(int x) { return x | 9; }
__attribute__((noinline)) int p6(int x) { return x % 1000; }
__attribute__((noinline)) int p7(int x) { return ~x; }
static int (*const fns[8])(int) = { p0, p1, p2, p3, p4, p5, p6, p7 };
static const char *const names[8] = { "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7" };

#define NTHREADS 4
static _Atomic int stop, go_quiet, quiet_done;
static long quiet_iters = 20000;

struct worker { unsigned long sum, calls; };

static void *worker(void *arg)
{
    struct worker *w = arg;
    unsigned x = 1;
    while (!stop)
        for (int i = 0; i < 8; i++)
            x = (unsigned)fns[i]((int)x), w->calls++;
    while (!go_quiet)
        ;
    /* the quiet, deterministic phase: its checksum is the program's output */
    unsigned y = 7;
    for (long k = 0; k < quiet_iters; k++)
        for (int i = 0; i < 8; i++)
            y = (unsigned)fns[i]((int)y);
    w->sum = y;
    quiet_done++;
    return NULL;
}

static void snooze(long ns)
{
    struct timespec ts = { ns / 1000000000, ns % 1000000000 };
    nanosleep(&ts, NULL);
}

/* stress SECONDS [UNTIL MIN-TOGGLES]: toggle for SECONDS; with UNTIL, toggle
 * until the file UNTIL exists and MIN-TOGGLES toggles were made, SECONDS
 * only bounding the run (a test that samples the process meanwhile asks
 * for as many samples as it needs, however loaded the machine). */
static int mode_stress(double seconds, const char *until, long min_toggles)
{
    pthread_t th[NTHREADS];
    struct worker w[NTHREADS];
    memset(w, 0, sizeof w);
    char probe[4096];
    ctl_path(probe, sizeof probe, "control");
    int probed = access(probe, F_OK) == 0;
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, &w[i]);
    long toggles = 0, busy = 0, int3_only = 0, windows = 0, leaks = 0, errors = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned r = 12345;
    static const char *const verbs[4] = { "enable", "disable", "optimize", "unoptimize" };
    for (int step = 0; probed; step++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
            break;
        if (until && toggles >= min_toggles && access(until, F_OK) == 0)
            break;
        char cmd[64];
        r = r * 1103515245 + 12345;
        snprintf(cmd, sizeof cmd, "%s %s\n", verbs[(r >> 8) % 4], names[(r >> 16) % 8]);
        int rc = ctl("control", cmd);
        if (rc == EBUSY)
            busy++;
        else if (rc == EOPNOTSUPP && !strncmp(cmd, "optimize", 8))
            int3_only++;   /* p0, p3, p4 are too short for a jump */
        else if (rc)
            errors++, fprintf(stderr, "stress: '%.*s': %s\n", (int)strlen(cmd) - 1, cmd, strerror(rc));
        if ((r >> 4) % 3 == 0) {   /* the global knobs too */
            rc = ctl((r >> 6) & 1 ? "optimization" : "enabled", (r >> 7) & 1 ? "1" : "0");
            if (rc)
                errors++, fprintf(stderr, "stress: knob: %s\n", strerror(rc));
        }
        toggles++;
        if (step % 50 == 49) {
            /* a disabled window: no hit may be counted in it */
            if ((rc = ctl("enabled", "0")) != 0)
                errors++;
            snooze(2000000);
            long before[8], after[8];
            for (int i = 0; i < 8; i++)
                before[i] = hits(names[i]);
            snooze(5000000);
            for (int i = 0; i < 8; i++)
                after[i] = hits(names[i]), leaks += after[i] != before[i];
            windows++;
            ctl("enabled", "1");
        }
        snooze(1000000);
    }
    stop = 1;
    if (probed) {   /* everything on and optimized, then quiet: exact counts */
        errors += ctl("enabled", "1") != 0;
        errors += ctl("optimization", "1") != 0;
        errors += ctl("control", "enable p*\n") != 0;
        int orc = ctl("control", "optimize p*\n");
        errors += orc != 0 && orc != EBUSY;
    }
    snooze(20000000);   /* the workers leave the loop */
    long base[8];
    for (int i = 0; i < 8; i++)
        base[i] = hits(names[i]);
    go_quiet = 1;
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    long inexact = 0;
    for (int i = 0; i < 8 && probed; i++)
        inexact += hits(names[i]) - base[i] != NTHREADS * quiet_iters;
    unsigned long sum = 0;
    for (int i = 0; i < NTHREADS; i++)
        sum = sum * 31 + w[i].sum;
    printf("stress checksum %lu\n", sum);
    fprintf(stderr, "stress: toggles %ld (EBUSY %ld, int3-only %ld), disabled windows %ld, hits in them %ld, errors %ld, "
            "inexact quiet counts %ld\n", toggles, busy, int3_only, windows, leaks, errors, inexact);
    return 0;
}

/* Call work() every millisecond until the file argv[2] exists (at most
 * 30 s): a process for t/control.t to steer from outside. */
static int mode_serve(const char *until)
{
    static volatile long sink;
    long n = 0;
    for (; n < 30000 && access(until, F_OK) < 0; n++) {
        sink += work((int)n);
        snooze(1000000);
    }
    printf("served %s\n", n < 30000 ? "until told" : "until the timeout");
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "plain";
    if (!strcmp(m, "plain")) {
        printf("%d %d %d\n", short3(1, 2), work(3), alt_add(1, 2));
        return 0;
    }
    if (!strcmp(m, "foreign")) {   /* an int3 that is no probe, no handler: the default action */
        foreign_int3();
        printf("survived\n");
        return 0;
    }
    if (!strcmp(m, "serve"))
        return mode_serve(argc > 2 ? argv[2] : "/nonexistent");
    int rc = !strcmp(m, "regs") ? mode_regs()
           : !strcmp(m, "redirect") ? mode_redirect()
           : !strcmp(m, "post") ? post_mode()
           : !strcmp(m, "held") ? mode_held()
           : !strcmp(m, "chain") ? mode_chain()
           : !strcmp(m, "sighandler") ? mode_sighandler()
           : !strcmp(m, "stress") ? mode_stress(argc > 2 ? atof(argv[2]) : 3.0, argc > 3 ? argv[3] : NULL,
                                                argc > 4 ? atol(argv[4]) : 0)
           : 2;
    if (rc == 2)
        FAIL("unknown mode %s", m);
    if (strcmp(m, "stress"))
        printf("%s ok\n", m);
    return rc;
}
