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

static void fork_child(void)
{
    trap_fork_child();
    ctl_dir_fork_child();
}

static void pool_added(void)
{
    ctl_dir_start();
    patch_pool_added();
}

static void kprobe_toggled(struct kprobe *kp)
{
    if (kp->flags & KPROBE_FLAG_RETPROBE)
        rt_kretprobe_changed((struct kretprobe *)kp);
}

const struct rt_hooks rt_hooks = {
    .fork_child = fork_child,
    .points_filled = trap_index_rebuild,
    .pool_added = pool_added,
    .thread_exit = rt_kretprobe_thread_exit,
    .kprobe_toggled = kprobe_toggled,
    .trap_done = rt_kretprobe_trap_hook,
};

/* KPREWRITE_REPORT=1: print every point's counts at exit (stderr). */
static int report_fd = 2;   /* a copy of stderr: programs may close theirs before exit */

static void report_point(struct point *pt, void *arg)
{
    (void)arg;
    uint64_t hits, missed;
    rt_stats(pt, &hits, &missed);
    dprintf(report_fd, "kprewrite: %016lx  %c  %s+0x%x  hits %lu  nmissed %lu\n", (unsigned long)pt->addr,
            pt->kind, pt->name, pt->offset, (unsigned long)hits, (unsigned long)missed);
}

static void report(void)
{
    rt_lock_take();
    rt_points_ready();
    rt_each_ready_point(report_point, NULL);
    rt_lock_drop();
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
    const char *r = getenv("KPREWRITE_REPORT");
    if (r && *r && strcmp(r, "0") != 0) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0)
            report_fd = fd;
        atexit(report);
    }
    rt_leave(e);
}
