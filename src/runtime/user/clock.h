/*
 * Event timestamps: the time stamp counter where the CPU has an invariant
 * TSC, converted to CLOCK_MONOTONIC nanoseconds when printed; else
 * CLOCK_MONOTONIC itself (the vDSO: no system call). The CPU: the
 * thread's rseq area, which the kernel keeps up to date (glibc registers
 * it), else rdtscp's TSC_AUX (Linux keeps the CPU's number there), else
 * sched_getcpu. No system call either way.
 */
#ifndef KPREWRITE_CLOCK_H
#define KPREWRITE_CLOCK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1: TSC ticks (rdtsc), the CPU from rseq; 2: TSC ticks and the CPU
 * from rdtscp (no rseq area); 0: neither */
extern int clk_mode;
extern const ptrdiff_t __rseq_offset;
extern const unsigned int __rseq_size;

uint64_t clk_now_slow(uint32_t *cpu);

/* Now, in clock units, and the CPU we run on. */
static inline uint64_t clk_now(uint32_t *cpu)
{
    uint32_t lo, hi, aux;
    if (__builtin_expect(clk_mode == 1, 1)) {
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        /* struct rseq's cpu_id, 4 bytes in, off the thread pointer */
        *cpu = *(volatile uint32_t *)((char *)__builtin_thread_pointer() + __rseq_offset + 4);
        return (uint64_t)hi << 32 | lo;
    }
    if (clk_mode == 2) {
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
        *cpu = aux & 0xfff;
        return (uint64_t)hi << 32 | lo;
    }
    return clk_now_slow(cpu);
}

void clk_init(void);                    /* at start-up: the TSC's reference point */
uint64_t clk_ns(uint64_t t);            /* clock units -> CLOCK_MONOTONIC ns */
uint64_t clk_delta_ns(uint64_t dt);     /* a difference of clock units -> ns */
#endif
