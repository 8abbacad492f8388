/* Control commands and listings: what the control directory serves. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* "VERB SPEC" (runtime/core/control.c reads it, as the kernel runtime
 * does): each point SPEC names gets the verb, then the code follows. */
int ctl_command(const char *line)
{
    enum kprw_op op;
    const char *spec;
    size_t spec_len;
    if (!kprw_ctl_parse(line, strlen(line), &op, &spec, &spec_len))
        return -EINVAL;
    rt_lock_take();
    rt_points_ready();
    uint32_t npoints = rt_point_count();
    struct point *const *points = rt_point_list();
    struct point **v = malloc((npoints ? npoints : 1) * sizeof *v);
    size_t n = 0, can_jump = 0;
    if (!v) {
        rt_lock_drop();
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < npoints; i++) {
        struct point *pt = points[i];
        if (!kprw_spec_matches(spec, spec_len, pt->name, pt->offset, pt->addr))
            continue;
        v[n++] = pt;
        kprw_ctl_apply(op, &pt->disabled, &pt->unoptimized);
        can_jump += pt->verdict == KPRW_OPTIMIZED;
    }
    enum kprw_ctl_result r = kprw_ctl_result(op, n, can_jump);
    int rc = r == KPRW_CTL_NO_MATCH ? -ENOENT : r == KPRW_CTL_CANNOT_JUMP ? -EOPNOTSUPP : 0;
    if (rc == 0)
        rc = patch_list(v, n);   /* one batch: one checkpoint for all */
    rt_lock_drop();
    free(v);
    return rc;
}

struct text {
    char *s;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s)
            return;
        t->s = s;
        t->cap = cap;
    }
}

struct listing_arg {
    struct text *t;
    void (*line)(struct text *, const struct point *, uint64_t, uint64_t);
};

static void list_point(struct point *pt, void *arg)
{
    struct listing_arg *a = arg;
    uint64_t hits, missed;
    rt_stats(pt, &hits, &missed);
    a->line(a->t, pt, hits, missed);
}

/* One line a point, in address order, written by line(), under rt_lock. */
static char *listing(size_t *len, void (*line)(struct text *, const struct point *, uint64_t, uint64_t))
{
    struct text t = { 0 };
    put(&t, "%s", "");
    rt_lock_take();
    rt_points_ready();
    struct listing_arg a = { &t, line };
    rt_each_ready_point(list_point, &a);
    rt_lock_drop();
    *len = t.n;
    return t.s;
}

/* Like /sys/kernel/debug/kprobes/list, with the counts after it.
 * [DISABLED]: disabled here, or its kprobes all are (the API disarmed it). */
static void list_line(struct text *t, const struct point *pt, uint64_t hits, uint64_t missed)
{
    put(t, "%016lx  %c  %s+0x%x  %s%s  hits %lu  nmissed %lu\n", (unsigned long)pt->addr, pt->kind, pt->name,
        pt->offset, pt->disabled || pt->api_off ? "[DISABLED]" : "", pt->code == CODE_OPTIMIZED ? "[OPTIMIZED]" : "",
        (unsigned long)hits, (unsigned long)missed);
}

/* Like kprobe_profile: name, hits, misses. */
static void profile_line(struct text *t, const struct point *pt, uint64_t hits, uint64_t missed)
{
    char name[300];
    snprintf(name, sizeof name, "%s+0x%x", pt->name, pt->offset);
    put(t, "  %-44s %15lu %15lu\n", name, (unsigned long)hits, (unsigned long)missed);
}

char *ctl_list(size_t *len) { return listing(len, list_line); }
char *ctl_profile(size_t *len) { return listing(len, profile_line); }

/* The global knobs: `enabled` arms or disarms every point (each keeps its
 * own state), `optimization` 0 unoptimizes every point. */
int ctl_knob(enum rt_knob knob, const char *value)
{
    char *end;
    long v = strtol(value, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (end == value || *end || (v != 0 && v != 1))
        return -EINVAL;
    rt_lock_take();
    rt_set_knob(knob, v != 0);
    int rc = patch_all();
    rt_lock_drop();
    return rc;
}
