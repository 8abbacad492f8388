/*
 * Per-hit cost of a baked probe: `probe-bench LABEL N REPS`. Each rep times
 * the empty loop, a loop calling an unprobed twin and a loop calling
 * bench_probed, and prints the overhead (probe - base) in ns. With
 * BENCH_HANDLER=1 an empty pre_handler is registered on bench_probed; with
 * BENCH_KRET=1 a kretprobe with an empty handler (image baked with
 * bench_probed%return).
 * BENCH_STATE=int3 or disabled first turns the probe into an int3 probe
 * (unoptimize) or disables it, through this process's control directory;
 * untrace turns off the event "b" defined on it (KPREWRITE_EVENTS).
 * BENCH_CLEAR=1 empties the event buffers before each rep (clear_trace).
 * Output lines match shared/reference/detour-floor's bench (SUMMARY ... ).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <kprewrite/ctl.h>
#include <kprewrite/kprobes.h>

/* "unoptimize bench_probed" or "disable bench_probed" into our control file */
static int set_state(const char *state)
{
    char base[2048], path[4096], cmd[64];
    kprewrite_ctl_base(base, sizeof base);
    snprintf(path, sizeof path, "%s/%d/control", base, (int)getpid());
    if (strcmp(state, "untrace") == 0)   /* the event "b" off: the point counts only */
        snprintf(cmd, sizeof cmd, "untrace b\n");
    else
        snprintf(cmd, sizeof cmd, "%s bench_probed\n", strcmp(state, "int3") == 0 ? "unoptimize" : "disable");
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, cmd, strlen(cmd)) < 0) {
        perror(path);
        return -1;
    }
    close(fd);
    return 0;
}

/* BENCH_CLEAR=1: empty the event buffers (our control directory's trace
 * file, `echo > trace`) before each rep, outside the timing: a ring that
 * holds one rep's events is then written again where it was, in cache, as
 * one a reader keeps draining is -- not 8 MB of fresh memory a rep */
static int clear_trace(void)
{
    char base[2048], path[4096];
    kprewrite_ctl_base(base, sizeof base);
    snprintf(path, sizeof path, "%s/%d/trace", base, (int)getpid());
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, "\n", 1) < 0) {
        perror(path);
        return -1;
    }
    close(fd);
    return 0;
}

void bench_loop(long n);
void bench_base_loop(long n);
void bench_empty_loop(long n);
extern long bench_calls;

/* what the bench's event reads by @SYM: a short string behind a pointer */
const char *bench_name = "bench";

static int empty_handler(struct kprobe *kp, struct pt_regs *regs) { (void)kp; (void)regs; return 0; }
static int empty_ret(struct kretprobe_instance *ri, struct pt_regs *regs) { (void)ri; (void)regs; return 0; }

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The timestamp an event takes, alone: rdtsc (what the runtime reads
 * where the TSC is invariant) and the vDSO's clock_gettime (where it is
 * not). A floor under an event's cost on this machine, printed beside it. */
static int clock_floor(const char *label, long n, int reps)
{
    for (int r = 0; r < reps; r++) {
        volatile unsigned long sink = 0;
        double a = now_ns();
        if (strstr(label, "rdtsc"))
            for (long i = 0; i < n; i++) {
                unsigned lo, hi;
                __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
                sink += lo;
            }
        else
            for (long i = 0; i < n; i++) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                sink += (unsigned long)ts.tv_nsec;
            }
        double per = (now_ns() - a) / n;
        printf("rep %d mode %s n %ld base_ns %.3f probe_ns %.3f over_ns %.3f\n", r, label, n, 0.0, per, per);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "probe";
    long n = argc > 2 ? atol(argv[2]) : 10000000L;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    if (strstr(label, "_floor_rdtsc") || strstr(label, "_floor_clock_gettime"))
        return clock_floor(label, n, reps);
    static struct kprobe kp = { .symbol_name = "bench_probed", .pre_handler = empty_handler };
    const char *h = getenv("BENCH_HANDLER");
    if (h && *h == '1' && register_kprobe(&kp) < 0) {
        fprintf(stderr, "probe-bench: bench_probed is not baked\n");
        return 1;
    }
    static struct kretprobe rp = { .kp = { .symbol_name = "bench_probed" }, .handler = empty_ret };
    const char *k = getenv("BENCH_KRET");
    if (k && *k == '1' && register_kretprobe(&rp) < 0) {
        fprintf(stderr, "probe-bench: bench_probed%%return is not baked\n");
        return 1;
    }
    const char *state = getenv("BENCH_STATE");
    if (state && *state && set_state(state) < 0)
        return 1;
    double *over = calloc(reps, sizeof *over), *pn = calloc(reps, sizeof *pn), *bn = calloc(reps, sizeof *bn);
    bench_empty_loop(n / 10 + 1);
    bench_base_loop(n / 10 + 1);
    bench_loop(n / 10 + 1);
    const char *cl = getenv("BENCH_CLEAR");
    bool clear = cl && *cl == '1';
    /* the `_hot` rows measure records written where the ring's lines are
     * in cache, as a drained ring's are: two samples' worth untimed first,
     * so that the 1 MiB ring has been written through once (a sample is
     * ~0.6 MB of records; without this the first two samples of each
     * process wrote lines not written since the ring was made, 3-6 ns a
     * hit slower than the third) */
    for (int w = 0; clear && w < 2; w++) {
        if (clear_trace() < 0)
            return 1;
        bench_loop(n);
    }
    for (int r = 0; r < reps; r++) {
        if (clear && clear_trace() < 0)
            return 1;
        double a = now_ns(); bench_empty_loop(n);
        double b = now_ns(); bench_base_loop(n);
        double c = now_ns(); bench_loop(n);
        double d = now_ns();
        double empty = b - a;
        bn[r] = ((c - b) - empty) / n;
        pn[r] = ((d - c) - empty) / n;
        over[r] = pn[r] - bn[r];
        printf("rep %d mode %s n %ld base_ns %.3f probe_ns %.3f over_ns %.3f\n", r, label, n, bn[r], pn[r], over[r]);
    }
    qsort(over, reps, sizeof *over, cmp_d);
    qsort(pn, reps, sizeof *pn, cmp_d);
    qsort(bn, reps, sizeof *bn, cmp_d);
    printf("SUMMARY mode %s n %ld reps %d base_min %.2f base_med %.2f probe_min %.2f probe_med %.2f "
           "over_min %.2f over_med %.2f\n", label, n, reps, bn[0], bn[reps / 2], pn[0], pn[reps / 2],
           over[0], over[reps / 2]);
    return 0;
}
