/* Control commands and listings: what the control directory serves, by
 * file, whichever channel carries it (FUSE: ctlfs.c, a socket: ctlsock.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "rt.h"
#include "trace-read.h"
#include "tracebuf.h"

/* trace DEFINITION | untrace SPEC | hist SPEC [of NAME] [by NAME]: 0 or
 * -errno; 1: not an event command. A definition's error goes to stderr
 * too (a write can carry only its errno). */
static int ctl_event_command(const char *line)
{
    size_t n = strcspn(line, " \t");
    const char *rest = line + n + strspn(line + n, " \t");
    if (n == 5 && memcmp(line, "trace", 5) == 0) {
        struct kprw_ev_error err = { 0, NULL };
        int rc = ev_define(rest, strlen(rest), &err);
        if (rc < 0 && err.msg)
            fprintf(stderr, "kprewrite: trace %s: column %zu: %s\n", rest, err.col, err.msg);
        return rc < 0 ? rc : 0;
    }
    if (n == 7 && memcmp(line, "untrace", 7) == 0) {
        int rc = *rest ? ev_untrace(rest) : -EINVAL;
        return rc < 0 ? rc : 0;
    }
    if (n == 4 && memcmp(line, "hist", 4) == 0) {
        char spec[512], w1[8] = "", a1[128] = "", w2[8] = "", a2[128] = "";
        int k = sscanf(rest, "%511s %7s %127s %7s %127s", spec, w1, a1, w2, a2);
        const char *of = NULL, *by = NULL;
        if (k < 1 || k == 2 || k == 4)
            return -EINVAL;
        for (int i = 0; i < (k - 1) / 2; i++) {
            const char *w = i ? w2 : w1, *a = i ? a2 : a1;
            if (strcmp(w, "of") == 0 && !of)
                of = a;
            else if (strcmp(w, "by") == 0 && !by)
                by = a;
            else
                return -EINVAL;
        }
        int rc = ev_hist(spec, of, by);
        return rc < 0 ? rc : 0;
    }
    return 1;
}

/* "VERB SPEC" (runtime/core/control.c reads it, as the kernel runtime
 * does): each point SPEC names gets the verb, then the code follows. */
static int ctl_command(const char *line)
{
    int ev = ctl_event_command(line);
    if (ev != 1)
        return ev;
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
    size_t n = 0, can_jump = 0, guards = 0;
    if (!v) {
        rt_lock_drop();
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < npoints; i++) {
        struct point *pt = points[i];
        if (!kprw_spec_matches_entry(spec, spec_len, pt->name, pt->offset, pt->addr, rt_point_skipped(pt)))
            continue;
        if (op == KPRW_OP_DISABLE && pt->guard) {   /* the signal guard of a probed libc stays */
            guards++;
            continue;
        }
        v[n++] = pt;
        kprw_ctl_apply(op, &pt->disabled, &pt->unoptimized);
        can_jump += pt->verdict == KPRW_OPTIMIZED;
    }
    enum kprw_ctl_result r = kprw_ctl_result(op, n, can_jump);
    int rc = r == KPRW_CTL_NO_MATCH ? (guards ? -EPERM : -ENOENT) : r == KPRW_CTL_CANNOT_JUMP ? -EOPNOTSUPP : 0;
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
    put(t, "%016lx  %c  %s+0x%x  %s%s  hits %lu  nmissed %lu", (unsigned long)pt->addr, pt->kind, pt->name,
        pt->offset, pt->disabled || pt->api_off ? "[DISABLED]" : "", pt->code == CODE_OPTIMIZED ? "[OPTIMIZED]" : "",
        (unsigned long)hits, (unsigned long)missed);
    uint64_t dropped = atomic_load_explicit(&pt->ev_dropped, memory_order_relaxed);
    put(t, dropped ? "  dropped %lu\n" : "\n", (unsigned long)dropped);
}

/* Like kprobe_profile: name, hits, misses. */
static void profile_line(struct text *t, const struct point *pt, uint64_t hits, uint64_t missed)
{
    char name[300];
    snprintf(name, sizeof name, "%s+0x%x", pt->name, pt->offset);
    uint64_t dropped = atomic_load_explicit(&pt->ev_dropped, memory_order_relaxed);
    put(t, dropped ? "  %-44s %15lu %15lu %15lu\n" : "  %-44s %15lu %15lu\n", name, (unsigned long)hits,
        (unsigned long)missed, (unsigned long)dropped);
}

static char *ctl_list(size_t *len) { return listing(len, list_line); }

/* trace_pipe through a channel that cannot wait (the socket): what is
 * there now, consumed */
static char *pipe_now(size_t *len)
{
    struct tr_stream s = { .fmt = TR_TEXT };
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && n < cap - 4096 && (k = tr_stream_read(&s, buf + n, cap - n)) > 0;)
        n += k;
    *len = n;
    return buf;
}

struct tr_stream *ctl_pipe_open(void)
{
    struct tr_stream *s = calloc(1, sizeof *s);
    if (s)
        s->fmt = TR_TEXT;
    return s;
}
size_t ctl_pipe_read(struct tr_stream *s, char *buf, size_t cap) { return tr_stream_read(s, buf, cap); }
void ctl_pipe_close(struct tr_stream *s) { free(s); }
static char *ctl_profile(size_t *len) { return listing(len, profile_line); }

/* The global knobs: `enabled` arms or disarms every point (each keeps its
 * own state), `optimization` 0 unoptimizes every point. */
static int ctl_knob(enum rt_knob knob, const char *value)
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

const struct ctl_file ctl_files[CTL_NFILES] = {
    [CTL_LIST] = { "list", 0400 },
    [CTL_ENABLED] = { "enabled", 0600 },
    [CTL_OPTIMIZATION] = { "optimization", 0600 },
    [CTL_CONTROL] = { "control", 0600 },
    [CTL_PROFILE] = { "profile", 0400 },
    [CTL_EVENTS] = { "events", 0400 },
    [CTL_TRACE] = { "trace", 0600 },   /* a write clears the buffers */
    [CTL_TRACE_PIPE] = { "trace_pipe", 0400 },
    [CTL_TRACE_JSON] = { "trace.json", 0400 },
    [CTL_TRACE_FOLDED] = { "trace.folded", 0400 },
    [CTL_HIST] = { "hist", 0400 },
};

int ctl_file_find(const char *name, size_t len)
{
    for (int i = 0; i < CTL_NFILES; i++)
        if (strlen(ctl_files[i].name) == len && memcmp(ctl_files[i].name, name, len) == 0)
            return i;
    return -1;
}

static const char control_help[] =
    "# write one command a line; SPEC is SYM, SYM+OFF, 0xADDR, SYM may be a glob\n"
    "# enable SPEC | disable SPEC | optimize SPEC | unoptimize SPEC\n"
    "# trace [p[:[GRP/]EVENT]|r[:[GRP/]EVENT]] SPEC [NAME=]FETCHARG[:TYPE]... [if FILTER]\n"
    "# untrace SPEC|EVENT|GRP/EVENT | hist SPEC|EVENT [of NAME] [by NAME]\n";

char *ctl_read(enum ctl_file_id file, size_t *len)
{
    char *s = NULL;
    switch (file) {
    case CTL_LIST: return ctl_list(len);
    case CTL_PROFILE: return ctl_profile(len);
    case CTL_CONTROL: s = strdup(control_help); break;
    case CTL_EVENTS: return ev_listing(len);
    case CTL_TRACE: return tr_snapshot(TR_TEXT, len);
    case CTL_TRACE_JSON: return tr_snapshot(TR_JSON, len);
    case CTL_TRACE_FOLDED: return tr_snapshot(TR_FOLDED, len);
    case CTL_HIST: return tr_hists(NULL, len);
    case CTL_TRACE_PIPE: return pipe_now(len);
    case CTL_ENABLED:
    case CTL_OPTIMIZATION:
        rt_lock_take();
        s = strdup(rt_knob(file == CTL_ENABLED ? RT_KNOB_ENABLED : RT_KNOB_OPTIMIZATION) ? "1\n" : "0\n");
        rt_lock_drop();
        break;
    default: break;
    }
    *len = s ? strlen(s) : 0;
    return s;
}

/* A write to FILE: a knob's 0 or 1, or each line a command (the first
 * failure is the writer's error). */
int ctl_write(enum ctl_file_id file, const char *data, size_t len)
{
    if ((int)file < 0 || file >= CTL_NFILES || !(ctl_files[file].mode & 0200))
        return -EACCES;
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, data, len);
    buf[len] = 0;
    int rc = 0;
    if (file == CTL_ENABLED || file == CTL_OPTIMIZATION) {
        rc = ctl_knob(file == CTL_ENABLED ? RT_KNOB_ENABLED : RT_KNOB_OPTIMIZATION, buf);
    } else if (file == CTL_TRACE) {
        tb_clear();   /* `echo > trace`: whatever is written, as the kernel's */
    } else {
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
            while (*line == ' ' || *line == '\t')
                line++;
            if (*line && *line != '#')
                rc = ctl_command(line);
        }
    }
    free(buf);
    return rc;
}
