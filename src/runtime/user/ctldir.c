/*
 * The control directory's lifetime: one a process,
 *
 *   $KPREWRITE_CTL_DIR/<pid>/   or  $XDG_RUNTIME_DIR/kprewrite/<pid>/
 *   (or /tmp/kprewrite-<uid>/<pid>/ without either), mode 0700,
 *
 * made by a thread of the process a little after start-up (the server:
 * it runs no probed code and takes no signals), a FUSE mount where one is
 * possible (ctlfs.c), else a plain directory holding a socket (ctlsock.c;
 * KPREWRITE_CTL_SOCKET=1 asks for that one). Without either the program
 * runs normally, without a directory. It is removed at exit by the process
 * itself; when the process ends otherwise (SIGKILL, a signal's default
 * action, a crash, an exec), by its watcher (ctlwatch.c); directories
 * whose process is gone (a watcher killed too) by the next probed process
 * that starts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kprewrite/ctl.h"
#include "rt.h"

/* "<base>/<pid>", its base and its socket, on the heap: in .bss they
 * would cost every probed program a page fault at start-up */
static char *dir, *base_dir, *sock_path;
static bool started;
static pid_t owner;

/* What the directory is, once made; make_lock orders the making (in the
 * server thread) with the removal at exit. */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;
static enum { MADE_NONE, MADE_FUSE, MADE_SOCKET } made;
static bool stopping;
static int serve_fd = -1;   /* /dev/fuse, or the listening socket */
static int watch_fd = -1;   /* the watcher waits for its end */

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(path, 0700) < 0 && errno != EEXIST) {
                *p = '/';
                return -1;
            }
            *p = '/';
        }
    return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* Unmount a FUSE mount: mount(2)'s with umount2, a user's with fusermount3. */
static void unmount(const char *path)
{
    char prog[4096];
    if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && rt_find_program("fusermount3", prog, sizeof prog)) {
        char *argv[] = { "fusermount3", "-u", "-z", "-q", (char *)path, NULL }, *envp[] = { NULL };
        rt_spawn_wait(prog, argv, envp, -1);
    }
}

/* A directory of a process that is gone, whichever kind it was. */
static void remove_dir(const char *path)
{
    char sock[4200];
    umount2(path, MNT_DETACH);
    snprintf(sock, sizeof sock, "%s/socket", path);
    unlink(sock);
    if (rmdir(path) < 0 && errno == EBUSY) {   /* still mounted: a user's FUSE mount */
        unmount(path);
        rmdir(path);
    }
}

/* Directories of processes that are gone (their watcher killed with them). */
static void remove_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", base, de->d_name);
        remove_dir(path);
    }
    closedir(d);
}

/* Milliseconds before the directory is made: a process that lives less
 * has no use for one, and mounting and unmounting a file system would
 * cost it more than its whole run (KPREWRITE_CTL_DELAY_MS; 0: at once). */
static unsigned ctl_delay_ms(void)
{
    const char *e = getenv("KPREWRITE_CTL_DELAY_MS");
    return e && *e ? (unsigned)strtoul(e, NULL, 10) : 20;
}

static bool socket_asked(void)
{
    const char *e = getenv("KPREWRITE_CTL_SOCKET");
    return e && *e && strcmp(e, "0") != 0;
}

/* Make the directory, as FUSE or with a socket, and its watcher (make()'s
 * part under the locks). */
static void make_locked(void)
{
    remove_stale(base_dir);
    remove_dir(dir);   /* left by an earlier process with this pid, or by this one before an exec */
    if (mkdir(dir, 0700) < 0)
        return;
    /* the watcher first: a process killed once the directory is served has one */
    watch_fd = ctl_watch_start(dir);
    if (!socket_asked() && (serve_fd = ctlfs_mount(dir)) >= 0) {
        made = MADE_FUSE;
        ctl_watch_mounted();
    } else if ((serve_fd = ctlsock_open(dir, &sock_path)) >= 0) {
        made = MADE_SOCKET;
    } else {
        rmdir(dir);
        if (watch_fd >= 0)
            close(watch_fd);   /* nothing left to watch */
        watch_fd = -1;
    }
}

/* Make the directory, as FUSE or with a socket, and its watcher; under
 * make_lock, and under the lock on the parent directory that a watcher
 * holds while it cleans up (ctlwatch.c): an old image's watcher must not
 * find this image's mount half made. */
static void make(void)
{
    char parent[4096];
    int lock = ctl_dir_parent(dir, parent, sizeof parent) ? open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    /* at most 2 s: a watcher holds it while it unmounts (a fusermount3
     * it waits for), and exit waits for make_lock, which this holds */
    for (int tries = 0; lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0; tries++) {
        struct timespec ts = { 0, 10000000L };
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        if (tries == 200) {
            close(lock);   /* made unlocked, as before the lock */
            lock = -1;
            break;
        }
        nanosleep(&ts, NULL);
    }
    make_locked();
    if (lock >= 0) {
        /* unlocked first: a child forked meanwhile shares this open file */
        flock(lock, LOCK_UN);
        close(lock);
    }
}

static bool make_dir(void)
{
    unsigned ms = ctl_delay_ms();
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (ms && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&make_lock);
    if (!stopping)
        make();
    bool ok = made != MADE_NONE;
    pthread_mutex_unlock(&make_lock);
    return ok;
}

static void stop(void)
{
    pthread_mutex_lock(&make_lock);
    stopping = true;
    int was = made;
    made = MADE_NONE;
    pthread_mutex_unlock(&make_lock);
    started = false;
    if (was == MADE_FUSE)
        unmount(dir);
    else if (was == MADE_SOCKET)
        unlink(sock_path);   /* the server thread stays in accept(): the process is ending */
    if (was)
        rmdir(dir);
    if (watch_fd >= 0)
        close(watch_fd);   /* nothing left for the watcher to do */
    watch_fd = -1;
}

static void ctl_dir_stop(void)
{
    if (!started || getpid() != owner)
        return;
    bool e = rt_enter();   /* the libc it calls may be probed */
    stop();
    rt_leave(e);
}

/* The CPUs the server may use once the directory is made (ctl_dir_start). */
static cpu_set_t server_cpus;
static bool server_pinned;

/* arg: non-NULL when ctl_dir_start made the directory already (no delay asked for) */
static void *server(void *arg)
{
    /* the runtime's own thread: its hits (in the libc it calls) are misses */
    rt_enter();
    trap_server_tid = (pid_t)syscall(SYS_gettid);
    if (!arg && !make_dir())
        return NULL;
    if (server_pinned)   /* the process outlived the delay: serve from any CPU */
        sched_setaffinity(0, sizeof server_cpus, &server_cpus);
    if (made == MADE_FUSE)
        ctlfs_serve(serve_fd);
    else
        ctlsock_serve(serve_fd);
    return NULL;
}

/* A forked child: the server thread is not there, and the directory is
 * the parent's. Holding the FUSE connection open would keep anyone who
 * reads the directory of a parent that died waiting for an answer, and
 * the watcher's pipe its watcher waiting. (The child has no directory of
 * its own: its probes and handlers work as before.) */
void ctl_dir_fork_child(void)
{
    if (serve_fd >= 0)
        close(serve_fd);
    if (watch_fd >= 0)
        close(watch_fd);
    serve_fd = watch_fd = -1;
}

/* base_dir and dir, when base is ours alone */
static bool set_paths(void)
{
    char base[3800];
    kprewrite_ctl_base(base, sizeof base);
    if (mkdirs(base) < 0)
        return false;
    /* The base may be shared (/tmp): another user who made it first, or
     * made it writable, could swap our directory under us. */
    struct stat bs = { 0 };
    if (lstat(base, &bs) < 0 || !S_ISDIR(bs.st_mode) || bs.st_uid != geteuid() || (bs.st_mode & 022)) {
        fprintf(stderr, "kprewrite-rt: %s is not a directory of ours that only we may write (uid %u, mode %o); "
                "no control directory\n", base, (unsigned)bs.st_uid, (unsigned)(bs.st_mode & 07777));
        return false;
    }
    free(base_dir);
    free(dir);
    dir = NULL;
    if (!(base_dir = strdup(base)) || asprintf(&dir, "%s/%d", base, (int)owner) < 0) {
        dir = NULL;
        return false;
    }
    return true;
}

/* Until it makes the directory, the server sleeps on the CPU that
 * started it: a process that exits before then does not have to wake it
 * on another CPU and wait for it there (on this project's VM, that costs
 * a --version start 0.2 ms instead of 0.08 ms) */
static void pin_server(pthread_attr_t *at)
{
    int cpu = sched_getcpu();
    if (cpu >= 0 && sched_getaffinity(0, sizeof server_cpus, &server_cpus) == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        server_pinned = pthread_attr_setaffinity_np(at, sizeof one, &one) == 0;
    }
}

void ctl_dir_start(void)
{
    if (started)
        return;
    started = true;   /* once, even when it fails */
    owner = getpid();
    if (!set_paths())
        return;
    /* the server (which makes the directory first) runs no probed code
     * and takes no signal but those the runtime needs: SIGTRAP (libc's
     * int3 probes, counted as missed), the fault signals it fixes up
     * (trap_block_all: a system call, not libc's pthread_sigmask) */
    uint64_t old;
    trap_block_all(&old);
    /* Joinable, and never joined: a detached thread frees its TLS itself
     * as it exits, calling free with every signal blocked (glibc's
     * start_thread), and an int3 probe on free would then kill the process
     * (the kernel forces a blocked SIGTRAP to its default action). The
     * server ends when the process does (or, if it cannot make the
     * directory, keeps its few pages until then). */
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    /* KPREWRITE_CTL_DELAY_MS=0: the directory exists before main runs */
    bool now = ctl_delay_ms() == 0;
    if (now && !make_dir()) {
        trap_set_mask(&old);
        pthread_attr_destroy(&at);
        started = false;
        return;
    }
    if (!now)
        pin_server(&at);
    int rc = rt_own_thread_create(&th, &at, server, now ? (void *)1 : NULL);
    pthread_attr_destroy(&at);
    trap_set_mask(&old);
    if (rc != 0) {
        if (now)
            ctl_dir_stop();
        started = false;
        return;
    }
    atexit(ctl_dir_stop);
}
