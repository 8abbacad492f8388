/*
 * Tracing from the environment, for programs too short-lived to be
 * followed through the control directory:
 *   KPREWRITE_EVENTS='DEF;DEF...'   definitions bound at start-up (as the
 *                                   control file's `trace DEF`)
 *   KPREWRITE_TRACE=FILE | -        the events written as the program runs
 *                                   (- : stderr), the rest at exit
 *   KPREWRITE_TRACE_FORMAT=text | json | folded
 *   KPREWRITE_TRACE_BUFFER=KIB      each thread's ring (256 KiB)
 * A writer thread drains the rings every 50 ms, down to every 1 ms while
 * events keep coming; exit drains what is left
 * and ends the format (JSON's closing bracket, the folded stacks). A
 * forked child writes its own events when it exits: text to the same file
 * (whole lines, O_APPEND), json and folded to FILE.PID (one document a
 * process).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "rt.h"
#include "trace-read.h"
#include "tracebuf.h"

static int out_fd = -1;
static pid_t owner;   /* the process whose rings and document these are */
static char *out_path;                 /* NULL: stderr */
static struct tr_stream stream;
static pthread_t writer;
static _Atomic bool writer_on, stopping;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
#define WRITER_MAX_MS 50               /* the writer's longest sleep */
#define WRITER_BUSY_BYTES 4096         /* a drain that wrote this much: sleep less */

static void write_all(const char *s, size_t n)
{
    while (n) {
        ssize_t k = write(out_fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

/* Write what the rings hold; the bytes written. */
static size_t drain(void)
{
    static char buf[1 << 16];
    size_t all = 0;
    pthread_mutex_lock(&drain_lock);
    for (size_t n; (n = tr_stream_read(&stream, buf, sizeof buf)) > 0; all += n)
        write_all(buf, n);
    pthread_mutex_unlock(&drain_lock);
    return all;
}

static void *writer_main(void *arg)
{
    (void)arg;
    /* The runtime's own thread: its hits in the libc it calls (strlen,
     * memcpy, write of a probed libc.so.6) are misses, never events -- each
     * event it wrote would make more for it to write, without end. It
     * takes no signal but those the runtime needs (trap_block_all). */
    rt_enter();
    trap_block_all(NULL);
    /* every 1 ms at first and while events keep coming, backing off to
     * every 50 ms while little comes: a busy thread fills a 256 KiB ring
     * in a few ms, and the probed threads never wake the writer (that
     * would take a system call on their hot path) */
    long ms = 1;   /* a short-lived program: from its start */
    while (!atomic_load(&stopping)) {
        size_t n = drain();
        ms = n >= WRITER_BUSY_BYTES ? (ms / 4 > 0 ? ms / 4 : 1) : (ms * 2 < WRITER_MAX_MS ? ms * 2 : WRITER_MAX_MS);
        struct timespec ts = { 0, ms * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int open_out(const char *path);

static void finish(void)
{
    if (out_fd == -2) {   /* a forked child's own document (trace_env_fork_child) */
        char *p = NULL;
        out_fd = asprintf(&p, "%s.%d", out_path, (int)getpid()) >= 0 ? open_out(p) : -1;
        free(p);
    }
    if (out_fd < 0)
        return;
    bool e = rt_enter();
    atomic_store(&stopping, true);
    if (atomic_exchange(&writer_on, false))
        pthread_join(writer, NULL);
    drain();
    size_t n = 0;
    char *end = tr_stream_end(&stream, &n);
    if (end)
        write_all(end, n);
    free(end);
    close(out_fd);
    out_fd = -1;   /* once: exit's atexit and an _exit both come here */
    rt_leave(e);
}

static int open_out(const char *path)
{
    if (!path)
        return fcntl(2, F_DUPFD_CLOEXEC, 3);
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (stream.fmt == TR_TEXT ? 0 : O_TRUNC), 0644);
}

static void start_writer(void)
{
    atomic_store(&stopping, false);
    if (rt_own_thread_create(&writer, NULL, writer_main, NULL) == 0)
        atomic_store(&writer_on, true);
}

/* The child of a fork: no writer thread; its own one, its own document. */
void trace_env_fork_child(void)
{
    tb_fork_child();
    if (out_fd < 0)
        return;
    /* No thread and no allocation here: a fork handler runs before every
     * allocator is usable again in the child (ASan's deadlocked). The
     * child's events wait in its ring and are written at its exit or
     * _exit; JSON and folded go to FILE.PID, opened then. */
    atomic_store(&writer_on, false);
    owner = getpid();
    pthread_mutex_init(&drain_lock, NULL);
    enum tr_format fmt = stream.fmt;
    memset(&stream, 0, sizeof stream);   /* (the parent's folded stacks stay the parent's) */
    stream.fmt = fmt;
    if (fmt != TR_TEXT && out_path) {
        close(out_fd);
        out_fd = -2;   /* finish() opens FILE.PID */
    }
}

/* The event definitions baked into the tables (KPRW_T_EVENTS), each
 * table's bound to its own points, once the table is registered: at
 * start-up, then as images register or are opened, before
 * KPREWRITE_EVENTS's (an event name a baked definition gives is its own).
 * An error is said once, as KPREWRITE_EVENTS's are. */
static bool started;

static void define_baked(void)
{
    const char *object = "?";
    for (const struct kprw_table *t; (t = rt_pool_take_events(&object)) != NULL;) {
        const char *d = (const char *)t + kprw_table_events_off(t), *end = (const char *)t + t->strings_off;
        for (; d < end; d += strlen(d) + 1) {
            struct kprw_ev_error err = { 0, NULL };
            int rc = *d ? ev_define_in(d, strlen(d), t, &err) : 0;
            if (rc < 0)
                fprintf(stderr, "kprewrite: %s: baked event %s: column %zu: %s\n", object, d, err.col,
                        err.msg ? err.msg : strerror(-rc));
        }
    }
}

/* KPREWRITE_EVENTS's definitions that matched no point yet: an image
 * linked with the runtime registers its pool from its own constructor,
 * after the runtime's, and a library may come with dlopen. They are tried
 * again as pools come; those still unmatched at exit are reported then. */
static char **pending;
static size_t npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

/* 1: bound; 0: pending (no point yet); -1: refused (said so) */
static int define_one(const char *d, bool last_chance)
{
    struct kprw_ev_error err = { 0, NULL };
    int rc = ev_define(d, strlen(d), &err);
    if (rc > 0)
        return 1;
    if (rc == -ENOENT && !last_chance)
        return 0;
    fprintf(stderr, "kprewrite: KPREWRITE_EVENTS: %s: column %zu: %s\n", d, err.col, err.msg ? err.msg : strerror(-rc));
    return -1;
}

static void define_all(const char *defs)
{
    char *copy = strdup(defs), *save = NULL;
    for (char *d = copy ? strtok_r(copy, ";\n", &save) : NULL; d; d = strtok_r(NULL, ";\n", &save)) {
        while (*d == ' ' || *d == '\t')
            d++;
        if (!*d || define_one(d, false) != 0)
            continue;
        char **v = realloc(pending, (npending + 1) * sizeof *v);
        if (v && (v[npending] = strdup(d)) != NULL) {
            pending = v;
            npending++;
        } else if (v)
            pending = v;
    }
    free(copy);
}

static void retry_pending(bool last_chance)
{
    pthread_mutex_lock(&pending_lock);
    for (size_t i = 0; i < npending;) {
        if (define_one(pending[i], last_chance) != 0) {
            free(pending[i]);
            pending[i] = pending[--npending];
        } else
            i++;
    }
    pthread_mutex_unlock(&pending_lock);
}

void trace_env_pools_added(void)
{
    if (!started)
        return;   /* trace_env_start defines them all */
    define_baked();
    if (npending)
        retry_pending(false);
}

static void report_unmatched(void) { retry_pending(true); }

/* exec replaces the process (exec.c calls this first): what the rings
 * hold is written. Text: the lines, and the writer goes on (an exec that
 * fails loses nothing). JSON and folded: the document is ended as at exit
 * (an exec that fails writes no more). Not in a vfork child, which shares
 * the parent's memory: those rings and that document are the parent's. */
void trace_env_exec(void)
{
    if (out_fd == -1 || getpid() != owner)
        return;
    if (out_fd == -2 || stream.fmt != TR_TEXT) {
        finish();
        return;
    }
    bool e = rt_enter();
    drain();
    rt_leave(e);
}

/* _exit skips atexit: a forked child that ends with it (most do) would
 * lose what its rings hold. The program's _exit comes here first (a probed
 * libc's own _exit through its guard: libc-guard.c). Not in a vfork child
 * (posix_spawn's, when its exec fails): the rings, the writer and the
 * document it would end are its parent's. */
void trace_env_exit(void)
{
    if (getpid() == owner)
        finish();
}

EXPORT void _exit(int status)
{
    rt_before_exit();   /* the trace, then KPREWRITE_REPORT (startup.c) */
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* At start-up, after the pools are registered. */
void trace_env_start(void)
{
    const char *kib = getenv("KPREWRITE_TRACE_BUFFER");
    if (kib && *kib)
        tb_configure((uint32_t)strtoul(kib, NULL, 10));
    clk_init();
    started = true;
    define_baked();
    const char *defs = getenv("KPREWRITE_EVENTS");
    if (defs && *defs) {
        define_all(defs);
        atexit(report_unmatched);
    }
    const char *path = getenv("KPREWRITE_TRACE");
    if (!path || !*path)
        return;
    const char *fmt = getenv("KPREWRITE_TRACE_FORMAT");
    stream.fmt = TR_TEXT;
    if (fmt && *fmt && !tr_format_parse(fmt, &stream.fmt))
        fprintf(stderr, "kprewrite: KPREWRITE_TRACE_FORMAT=%s: not text, json or folded; text it is\n", fmt);
    out_path = strcmp(path, "-") == 0 ? NULL : strdup(path);
    out_fd = open_out(out_path);
    owner = getpid();
    if (out_fd < 0) {
        fprintf(stderr, "kprewrite: KPREWRITE_TRACE=%s: %s\n", path, strerror(errno));
        return;
    }
    atexit(finish);
    start_writer();
}
