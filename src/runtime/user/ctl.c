/* Control commands and listings: what the control directory serves. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* SPEC: 0xADDR, SYM+OFF (SYM may be a glob), or a glob on SYM (every
 * offset). */
static bool spec_matches(const char *spec, const struct point *pt)
{
    if (spec[0] == '0' && spec[1] == 'x')
        return strtoull(spec, NULL, 16) == pt->addr;
    const char *plus = strrchr(spec, '+');
    if (plus) {
        char name[256];
        size_t n = (size_t)(plus - spec);
        if (n >= sizeof name)
            return false;
        memcpy(name, spec, n);
        name[n] = 0;
        char *end;
        unsigned long off = strtoul(plus + 1, &end, 0);
        return *end == 0 && off == pt->offset && fnmatch(name, pt->name, 0) == 0;
    }
    return fnmatch(spec, pt->name, 0) == 0;
}

int ctl_command(const char *line)
{
    char verb[32], spec[512];
    if (sscanf(line, " %31s %511s", verb, spec) != 2)
        return -EINVAL;
    int op;
    if (strcmp(verb, "enable") == 0)
        op = 0;
    else if (strcmp(verb, "disable") == 0)
        op = 1;
    else if (strcmp(verb, "optimize") == 0)
        op = 2;
    else if (strcmp(verb, "unoptimize") == 0)
        op = 3;
    else
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
        if (!spec_matches(spec, pt))
            continue;
        v[n++] = pt;
        switch (op) {
        case 0: pt->disabled = false; break;
        case 1: pt->disabled = true; break;
        case 2: pt->unoptimized = false; break;
        case 3: pt->unoptimized = true; break;
        }
        can_jump += pt->verdict == KPRW_OPTIMIZED;
    }
    int rc = n == 0 ? -ENOENT : (op == 2 && can_jump == 0) ? -EOPNOTSUPP : 0;
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

/* Like /sys/kernel/debug/kprobes/list, with the counts after it. */
static void list_line(struct text *t, const struct point *pt, uint64_t hits, uint64_t missed)
{
    put(t, "%016lx  %c  %s+0x%x  %s%s  hits %lu  nmissed %lu\n", (unsigned long)pt->addr, pt->kind, pt->name,
        pt->offset, pt->disabled ? "[DISABLED]" : "", pt->code == CODE_OPTIMIZED ? "[OPTIMIZED]" : "",
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
