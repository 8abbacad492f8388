/*
 * Start-up and wiring: the runtime's constructor (the SIGTRAP handler, the
 * fork handlers, the pools of every object loaded at start-up, the report
 * at exit) and rt_hooks, the table through which the core tells the other
 * parts what they must hear of (rt.h). The one place that knows them all.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "tracebuf.h"

void trace_env_start(void);
void trace_env_fork_child(void);

static void report_fork_child(void);

static void fork_child(void)
{
    trap_fork_child();
    patch_fork_child();
    trace_env_fork_child();
    ctl_dir_fork_child();
    report_fork_child();
}

static void pool_added(void)
{
    ctl_dir_start();
    patch_pool_added();
}

static void kprobe_toggled(struct kprobe *kp)
{
    if (rt_is_kretprobe(kp))
        rt_kretprobe_changed((struct kretprobe *)kp);
}

static void thread_exit(struct rt_thread *t)
{
    rt_kretprobe_thread_exit(t);
    rt_jprobe_thread_exit(t);
    if (t == &rt_self)
        tb_thread_exit();   /* its ring is freed once read */
}

const struct rt_hooks rt_hooks = {
    .fork_child = fork_child,
    .points_filled = trap_index_rebuild,
    .pool_added = pool_added,
    .thread_exit = thread_exit,
    .kprobe_toggled = kprobe_toggled,
    .trap_done = rt_kretprobe_trap_hook,
};

/* KPREWRITE_REPORT at exit (stderr): any value but 0 or all prints the
 * points that were hit, the busiest first, then how many were never hit;
 * "all" prints every point in address order, as the list file does. */
static int report_fd = 2;   /* a copy of stderr: programs may close theirs before exit */
static bool report_all;

struct report_line {
    const struct point *pt;
    uint64_t hits, missed;
};
struct report {
    struct report_line *v;
    size_t n, cap, never;
};

/* As the list file's line: the events its full buffers dropped last */
static void report_line(const struct point *pt, uint64_t hits, uint64_t missed)
{
    uint64_t dropped = atomic_load_explicit(&pt->ev_dropped, memory_order_relaxed);
    /* one write a line: processes sharing a stderr (a shell's children)
     * must not cut each other's lines */
    char tail[40] = "";
    if (dropped)
        snprintf(tail, sizeof tail, "  dropped %lu", (unsigned long)dropped);
    dprintf(report_fd, "kprewrite: %016lx  %c  %s+0x%x  hits %lu  nmissed %lu%s\n", (unsigned long)pt->addr, pt->kind,
            pt->name, pt->offset, (unsigned long)hits, (unsigned long)missed, tail);
}

static void report_point(struct point *pt, void *arg)
{
    struct report *r = arg;
    uint64_t hits, missed;
    rt_stats(pt, &hits, &missed);
    if (report_all) {
        report_line(pt, hits, missed);
        return;
    }
    if (!hits && !missed) {
        r->never++;
        return;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        struct report_line *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (struct report_line){ pt, hits, missed };
}

static int busiest_first(const void *a, const void *b)
{
    const struct report_line *x = a, *y = b;
    if (x->hits != y->hits)
        return x->hits < y->hits ? 1 : -1;
    return x->pt->addr < y->pt->addr ? -1 : x->pt->addr > y->pt->addr;
}

static void report(void)
{
    struct report r = { 0 };
    rt_lock_take();
    rt_points_ready();
    rt_each_ready_point(report_point, &r);
    if (!report_all) {
        qsort(r.v, r.n, sizeof *r.v, busiest_first);
        for (size_t i = 0; i < r.n; i++)
            report_line(r.v[i].pt, r.v[i].hits, r.v[i].missed);
        dprintf(report_fd, "kprewrite: %zu points hit, %zu never hit (KPREWRITE_REPORT=all lists them)\n", r.n,
                r.never);
    }
    rt_lock_drop();
    free(r.v);
}

/* The report is printed once a process, when it ends or is replaced:
 * exit, _exit, an exec (exec.c, and a probed libc's guards). Not by a
 * vfork child, whose counters are its parent's (another pid). */
static pid_t report_pid;

static void report_once(void)
{
    if (!report_pid || getpid() != report_pid)
        return;
    report_pid = 0;
    bool e = rt_enter();   /* its libc calls (free, dprintf) are not counted after it counted */
    report();
    rt_leave(e);
}

static void report_fork_child(void)
{
    if (report_pid)
        report_pid = getpid();
}

void rt_before_exit(void)
{
    trace_env_exit();
    report_once();
}

/* Go's exit (go-guard.c): the counts first. Go's other threads go on
 * running (and hitting probes) until exit_group(2) ends them; what they
 * record after the counts are printed is written with the rest, so the
 * events written and dropped cover the hits reported. */
void rt_before_go_exit(void)
{
    report_once();
    trace_env_exit();
}

void rt_before_exec(void)
{
    trace_env_exec();
    report_once();
}

/* glibc passes constructors the program's arguments and environment. */
__attribute__((constructor(101))) static void rt_init(int argc, char **argv, char **envp)
{
    (void)argc; (void)argv;
    /* A libc with probes baked in needs the runtime, so the runtime's
     * constructor runs before libc's, which sets environ: without this,
     * getenv would see no KPREWRITE_* variable. libc sets it the same. */
    if (!environ && envp)
        environ = envp;
    bool e = rt_enter();   /* the libc it calls may be probed */
    pthread_atfork(rt_fork_prepare, rt_fork_parent, rt_fork_child);
    trap_install();
    /* every object loaded at start-up is mapped by now (dlopen above
     * looks again for libraries opened later) */
    rt_pools_find_added();
    libc_guard_install();   /* a probed libc's own sigaction and pthread_sigmask */
    go_guard_install();     /* a probed Go program's exit */
    trace_env_start();
    const char *r = getenv("KPREWRITE_REPORT");
    if (r && *r && strcmp(r, "0") != 0) {
        report_all = strcmp(r, "all") == 0;
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0)
            report_fd = fd;
        report_pid = getpid();
        atexit(report_once);
    }
    rt_leave(e);
}
