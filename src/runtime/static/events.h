/* The static runtime's events (events.c): definitions baked into the
 * table, recorded into the area's ring, written at exit. */
#ifndef KPRS_EVENTS_H
#define KPRS_EVENTS_H
#include "rt.h"
#include "kprewrite/ptrace.h"


struct kprw_sbuf;

/* Start-up: the definitions (the table's, then KPREWRITE_EVENTS': env, or
 * NULL) parsed and bound to their points, the ring sized
 * (KPREWRITE_TRACE_BUFFER: KiB, or NULL), the clock read. */
void kprs_events_init(const struct kprs_rt *r, const char *buffer_kib, const char *env, const char *test_clock)
    KPRS_HIDDEN;
/* A hit of entry i, whose point has an event: its record into the ring. */
void kprs_event(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs) KPRS_HIDDEN;
/* The event's name on entry i. */
void kprs_event_name(const struct kprs_rt *r, uint32_t i, struct kprw_sbuf *b) KPRS_HIDDEN;
/* At exit: the ring's records, as text lines, to KPREWRITE_TRACE. */
void kprs_trace_flush(const struct kprs_rt *r) KPRS_HIDDEN;

/* A record's time (TSC ticks, or CLOCK_MONOTONIC ns: the area's
 * clock_tsc) to CLOCK_MONOTONIC nanoseconds, by two readings of both. */
struct kprs_clock {
    uint64_t tsc0, ns0, mult;
    unsigned shift;
};
uint64_t kprs_mono_ns(void) KPRS_HIDDEN;
void kprs_clock_now(const struct kprs_area *a, uint64_t *tsc, uint64_t *ns) KPRS_HIDDEN;
void kprs_clock_map(struct kprs_clock *c, uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1) KPRS_HIDDEN;
uint64_t kprs_clock_ns(const struct kprs_clock *c, uint64_t tsc) KPRS_HIDDEN;
#endif
