/*
 * Event timestamps (clock.h). TSC ticks become nanoseconds by a line
 * through two (TSC, CLOCK_MONOTONIC) pairs: one taken at start-up, one
 * taken when converting, as far apart as possible (refreshed when a
 * conversion happens at least 10 ms after the last one). Until 1 ms has
 * passed the CPU's nominal frequency (CPUID 0x15/0x16) stands in.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "clock.h"

int clk_mode;
#define clk_tsc (clk_mode != 0)
static uint64_t tsc0, ns0;
/* ns per tick in 32.32 fixed point, and the pair it was last measured at */
static _Atomic uint64_t mult;
static _Atomic uint64_t last_tsc;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

uint64_t clk_now_slow(uint32_t *cpu)
{
    int c = sched_getcpu();
    *cpu = c < 0 ? 0 : (uint32_t)c;
    return mono_ns();
}

/* The nominal TSC frequency in Hz (0: unknown). */
static uint64_t nominal_hz(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid(0x15, &a, &b, &c, &d) && a && b && c)
        return (uint64_t)c * b / a;
    if (__get_cpuid(0x16, &a, &b, &c, &d) && (a & 0xffff))
        return (uint64_t)(a & 0xffff) * 1000000u;
    return 0;
}

void clk_init(void)
{
    unsigned a, b, c, d;
    /* invariant TSC: CPUID 0x80000007 EDX bit 8; rdtscp: 0x80000001 EDX bit 27 */
    bool invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
    bool rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
    /* glibc's rseq area (size 0: not registered, e.g. glibc.pthread.rseq=0) */
    /* rdtsc and rseq's cpu_id before rdtscp: rdtscp waits for the
     * instructions before it, and cost half as much again as rdtsc on
     * this project's VM (a loop of each, 2026-11-28); the kernel's trace
     * clock ("local") is an unordered rdtsc too */
    clk_mode = !invariant ? 0 : __rseq_size >= 8 ? 1 : rdtscp ? 2 : 0;
    if (!clk_tsc)
        return;
    tsc0 = rdtsc();
    ns0 = mono_ns();
    uint64_t hz = nominal_hz();
    atomic_store(&mult, hz ? (uint64_t)(((unsigned __int128)1000000000u << 32) / hz) : (1ull << 32) / 3);
    atomic_store(&last_tsc, tsc0);
}

/* Measure the line again when 10 ms have passed since it was last
 * measured (1 ms for the first time). */
static void refresh(void)
{
    uint64_t t = rdtsc(), n = mono_ns(), last = atomic_load_explicit(&last_tsc, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&mult, memory_order_relaxed);
    uint64_t since = (uint64_t)(((unsigned __int128)(t - last) * m) >> 32);
    if (t <= tsc0 || n <= ns0 || since < (last == tsc0 ? 1000000u : 10000000u))
        return;
    atomic_store_explicit(&mult, (uint64_t)(((unsigned __int128)(n - ns0) << 32) / (t - tsc0)), memory_order_relaxed);
    atomic_store_explicit(&last_tsc, t, memory_order_relaxed);
}

uint64_t clk_delta_ns(uint64_t dt)
{
    if (!clk_tsc)
        return dt;
    return (uint64_t)(((unsigned __int128)dt * atomic_load_explicit(&mult, memory_order_relaxed)) >> 32);
}

uint64_t clk_ns(uint64_t t)
{
    if (!clk_tsc)
        return t;
    refresh();
    return t >= tsc0 ? ns0 + clk_delta_ns(t - tsc0) : ns0 - clk_delta_ns(tsc0 - t);
}
