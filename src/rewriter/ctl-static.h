/* A running static program as `kprewrite ctl` reads it, through
 * /proc/PID/mem (ctl-static.c), and its events (ctl-static-trace.c). */
#ifndef KPREWRITE_CTL_STATIC_H
#define KPREWRITE_CTL_STATIC_H
#include "kprewrite/abi.h"
#include "../runtime/static/blob.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sproc {
    long pid;
    int mem;
    uint64_t head, table, area;
    struct kprs_head h;
    struct kprw_table t;
    struct kprs_area a;
    struct kprw_entry *e;
    char *strings;
    struct kprs_point *pt;
    uint32_t *sorted;
};

/* n bytes at the process's address at into buf: 0, or -1 */
int sproc_rd(const struct sproc *s, uint64_t at, void *buf, size_t n);
/* Entry i's name, as the runtime spells it, and its site's address. */
void sproc_name(const struct sproc *s, uint32_t i, char *buf, size_t size);
uint64_t sproc_site(const struct sproc *s, uint32_t i);
/* ctl PID trace: the ring's events as text (json: Chrome trace events in
 * one array, ended when it stops), followed until interrupted or the
 * process ends (ctl-static-trace.c); the exit status. */
int sproc_trace(const struct sproc *s, bool json);
/* ctl PID events: each point's event as kprobe_events lists it, its drops,
 * [UNTRACED]; ctl PID untrace SPEC: the events SPEC names (GROUP/NAME or
 * NAME globs, or their points' spec) record nothing more, their points
 * count on (ctl-static-trace.c). The exit status. */
int sproc_events(const struct sproc *s);
int sproc_untrace(const struct sproc *s, const char *spec);
#endif
