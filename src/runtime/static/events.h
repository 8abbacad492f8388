/* The static runtime's events (events.c): definitions baked into the
 * table, recorded into the area's ring, written at exit. */
#ifndef KPRS_EVENTS_H
#define KPRS_EVENTS_H
#include "rt.h"
#include "kprewrite/ptrace.h"

#include <stdbool.h>

/* Start-up: the definitions (the table's, then KPREWRITE_EVENTS': env, or
 * NULL) parsed and bound to their points, the ring sized
 * (KPREWRITE_TRACE_BUFFER: KiB, or NULL), the clock read. */
void kprs_events_init(const struct kprs_rt *r, const char *buffer_kib, const char *env, const char *test_clock)
    KPRS_HIDDEN;
/* A hit of entry i, whose point has an event: its record into the ring. */
void kprs_event(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs) KPRS_HIDDEN;
/* A hooked call's return (hook.c): its return event's record, with the
 * $argN kept at the entry, where it returned to and when it was entered. */
void kprs_event_return(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs, const uint64_t *entry,
                       uint64_t ret_ip, uint64_t entry_ts) KPRS_HIDDEN;
/* A hooked call's entry: the slots its return event's $argN need. */
void kprs_event_entry(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs, uint64_t *entry) KPRS_HIDDEN;
/* The records' clock, now. */
uint64_t kprs_event_now(const struct kprs_area *a) KPRS_HIDDEN;
/* The 8 bytes at src, read without a fault: false when unmapped. */
bool kprs_read_word(uint64_t *dst, uintptr_t src) KPRS_HIDDEN;

/* hook.c: return events' hooked calls */
/* Start-up (after the guards are known): may calls be hooked here? */
void kprs_hooks_init(const struct kprs_rt *r, const uint64_t *sp) KPRS_HIDDEN;
/* Can entry i's calls be hooked (an optimized return point)? */
bool kprs_hook_point_ok(const struct kprs_rt *r, uint32_t i) KPRS_HIDDEN;
/* A return event's point entered (counted): hook the call (1), or not (0:
 * counted as missed). */
uint64_t kprs_hook(const struct kprs_rt *r, uint32_t i, struct pt_regs *regs) KPRS_HIDDEN;
/* The unwinder entered on the thread's stack at sp: its hooked calls
 * given back their return addresses. */
void kprs_unhook_thread(const struct kprs_rt *r, uint64_t sp) KPRS_HIDDEN;

/* trace-json.c: one record as a JSON trace event into b */
struct kprw_event;
struct kprw_clock;
struct kprw_sbuf;
void kprs_json_record(const struct kprs_rt *r, const struct kprw_event *ev, const uint8_t *rec,
                      const struct kprw_clock *clk, struct kprw_sbuf *b) KPRS_HIDDEN;

/* At exit: the ring's records, as text lines, to KPREWRITE_TRACE. */
void kprs_trace_flush(const struct kprs_rt *r) KPRS_HIDDEN;

/* The time a record takes (TSC ticks, or CLOCK_MONOTONIC ns: the area's
 * clock_tsc) and CLOCK_MONOTONIC ns, now: a reading of both, which
 * kprw_clock_map pairs with the start-up one. */
void kprs_clock_now(const struct kprs_area *a, uint64_t *tsc, uint64_t *ns) KPRS_HIDDEN;
#endif
