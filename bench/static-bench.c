/* make bench's static rows: bench_probed (bench-probed.S) called N times in
 * a static executable the static runtime probes, with a pointer to a short
 * string in %rsi at each call (an event's string argument: the static
 * runtime resolves no data symbol, so @bench_name is not an option here).
 * Prints "rep R mode LABEL n N base_ns B probe_ns P over_ns O" lines as
 * probe-bench.c does. Built with -mno-red-zone: the calls are made from
 * inline assembly. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void bench_probed(void);
void bench_base(void);
void bench_empty_loop(long n);

static const char word[] = "kprewrite";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void calls(void (*f)(void), long n)
{
    for (long i = 0; i < n; i++)
        __asm__ volatile("call *%0" : : "r"(f), "S"(word), "D"(i) : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11",
                         "memory", "cc");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: static-bench LABEL N REPS\n");
        return 2;
    }
    const char *label = argv[1];
    long n = atol(argv[2]);
    int reps = atoi(argv[3]);
    calls(bench_base, n / 10 + 1);
    for (int r = 0; r < reps; r++) {
        double a = now_ns(); bench_empty_loop(n);
        double b = now_ns(); calls(bench_base, n);
        double c = now_ns(); calls(bench_probed, n);
        double d = now_ns();
        double bn = ((c - b) - (b - a)) / n, pn = ((d - c) - (b - a)) / n;
        printf("rep %d mode %s n %ld base_ns %.3f probe_ns %.3f over_ns %.3f\n", r, label, n, bn, pn, pn - bn);
    }
    return 0;
}
