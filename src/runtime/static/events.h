/* The static runtime's events (events.c): definitions baked into the
 * table, recorded into the area's ring, written at exit. */
#ifndef KPRS_EVENTS_H
#define KPRS_EVENTS_H
#include "rt.h"
#include "kprewrite/ptrace.h"

/* Start-up: the definitions (the table's, then KPREWRITE_EVENTS': env, or
 * NULL) parsed and bound to their points, the ring sized
 * (KPREWRITE_TRACE_BUFFER: KiB, or NULL), the clock read. */
void kprs_events_init(const struct kprs_rt *r, const char *buffer_kib, const char *env, const char *test_clock)
    KPRS_HIDDEN;
/* A hit of entry i, whose point has an event: its record into the ring. */
void kprs_event(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs) KPRS_HIDDEN;
/* At exit: the ring's records, as text lines, to KPREWRITE_TRACE. */
void kprs_trace_flush(const struct kprs_rt *r) KPRS_HIDDEN;

/* The time a record takes (TSC ticks, or CLOCK_MONOTONIC ns: the area's
 * clock_tsc) and CLOCK_MONOTONIC ns, now: a reading of both, which
 * kprw_clock_map pairs with the start-up one. */
void kprs_clock_now(const struct kprs_area *a, uint64_t *tsc, uint64_t *ns) KPRS_HIDDEN;
#endif
