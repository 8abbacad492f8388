/*
 * The control directory's watcher: a process that outlives the program to
 * unmount and remove its directory, whatever ends it. The program's own
 * exit handler cannot run after SIGKILL, SIGTERM's default action or a
 * crash, and a thread dies with the process; so does anything the program
 * would have to install (a signal handler is not ours to change).
 *
 * The watcher waits for the end of a pipe whose only write end the program
 * holds (close-on-exec: an exec ends this image's directory too, as it
 * closes the FUSE connection) and for the program's pidfd (a child forked
 * without the fork handlers holds the write end on). Then it unmounts the
 * directory, unlinks its socket and removes it, each only if it is still
 * the one it was started for: after an exec, the new image may have made a
 * directory of the same name. The checks and the acts hold the lock on
 * the parent directory that a process holds while it makes its directory
 * (ctl_dir_lock): else the new image could mount between them, and the
 * unmount by path would take the new mount. It is started as soon as the directory is
 * made, before it is mounted or holds a socket, so that a process killed
 * once either shows has a watcher.
 *
 * The program must not see it: it is made through an intermediate clone
 * child that exits at once, so the watcher is orphaned and the
 * init process (or a subreaper above the program) reaps it; it takes its
 * own session, blocks every signal (only SIGKILL and SIGSTOP reach it)
 * and keeps no fd of the program's. It shares the program's memory (CLONE_VM: a copy would pin
 * every page the program later writes) and so runs only raw system calls
 * (rawsys.h). When the program is itself the reaper of its orphans (a
 * subreaper, or pid 1 of a namespace), the watcher stays its direct clone
 * child instead, invisible to wait() but not to __WALL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/stat.h>

#include "rawsys.h"
#include "rt.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x1000u
#endif

enum { PATH_LEN = 4096 };

/* All the watcher reads, in one mapping it never gives back: the watcher
 * may run on after the program is gone, in its memory. */
struct watch {
    char dir[PATH_LEN], sock[PATH_LEN];    /* the directory, and DIR/socket */
    char parent[PATH_LEN];                 /* its parent, for the lock ("": none) */
    unsigned pause_ms;                     /* KPREWRITE_TEST_WATCH_PAUSE_MS (tests): MS */
    unsigned pause_lock_ms;                /* or lock:MS, before the lock */
    char fusermount[PATH_LEN];             /* "" when none was found */
    char *argv[6], *envp[1];
    struct raw_spawn spawn;                /* fusermount3 -u -z -q DIR */
    _Atomic uint64_t mnt_id;               /* the FUSE mount's, once made (0: unknown) */
    unsigned dir_major, dir_minor;         /* the file system the directory is on */
    int pipe_rd, pidfd, dir_fd, nofile;    /* dir_fd: O_PATH, the directory as made */
    alignas(16) char stack_watcher[16384];
    alignas(16) char stack_spawn[8192];
    alignas(16) char stack_middle[4096];
};

/* Is PATH still the directory it was started for? It holds that one open:
 * a directory made anew under that name cannot reuse its inode number. */
static RAW_CODE bool same_dir(const char *path, int fd)
{
    struct stat st, was;
    return RAW(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           RAW(SYS_newfstatat, fd, "", &was, AT_EMPTY_PATH) == 0 && st.st_dev == was.st_dev && st.st_ino == was.st_ino;
}

/* Is a mount at w->dir, the one it was started for or a dead one? No
 * FUSE request: a live mount of a new image must not wait for us. */
static RAW_CODE bool our_mount(const struct watch *w)
{
    struct statx sx;
    sx.stx_mask = 0;
    long r = RAW(SYS_statx, AT_FDCWD, w->dir, AT_STATX_DONT_SYNC | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx);
    if (r == -ENOTCONN)
        return true;
    if (r != 0 || (sx.stx_dev_major == w->dir_major && sx.stx_dev_minor == w->dir_minor))
        return false;   /* the directory itself: nothing mounted on it */
    uint64_t ours = atomic_load_explicit(&w->mnt_id, memory_order_relaxed);
    return !ours || !(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id == ours;
}

static RAW_CODE void pause_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    RAW(SYS_nanosleep, &ts, 0);
}

/* clean_up's part under the lock */
static RAW_CODE void clean_up_locked(const struct watch *w, int dir_fd)
{
    /* Removed already (a new image of the program, after an exec, took the
     * dead mount off it and made its own directory): whatever is at the
     * path now is not ours, though its mount may have the same id (the
     * kernel reuses a freed mount's id at once). */
    struct stat st;
    if (RAW(SYS_newfstatat, dir_fd, "", &st, AT_EMPTY_PATH) == 0 && st.st_nlink == 0)
        return;
    bool ours = our_mount(w);
    if (ours && w->pause_ms)   /* a test's window between the check and the unmount */
        pause_ms(w->pause_ms);
    if (ours && RAW(SYS_umount2, w->dir, MNT_DETACH) < 0 && w->fusermount[0]) {
        /* a user's mount: fusermount3 may unmount it */
        long pid = rt_clone(CLONE_VM | CLONE_VFORK | SIGCHLD, (char *)w->stack_spawn + sizeof w->stack_spawn,
                            rt_spawn_child, (void *)&w->spawn);
        if (pid > 0)
            RAW(SYS_wait4, pid, 0, 0, 0);
    }
    /* the directory it was started for, unmounted: its socket, and itself */
    if (same_dir(w->dir, dir_fd)) {
        RAW(SYS_unlink, w->sock);
        RAW(SYS_rmdir, w->dir);
    }
}

/* dir_fd: its O_PATH fd of the directory, as made */
static RAW_CODE void clean_up(const struct watch *w, int dir_fd)
{
    /* an open file of its own for the lock: one shared with the program
     * could be held by a child the program forks, and keep the lock past
     * the watcher's end (every signal is blocked: no EINTR) */
    if (w->pause_lock_ms)   /* a test's: a new image makes its directory first */
        pause_ms(w->pause_lock_ms);
    long lock = w->parent[0] ? RAW(SYS_open, w->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (lock >= 0)
        RAW(SYS_flock, lock, LOCK_EX);
    clean_up_locked(w, dir_fd);
    if (lock >= 0) {
        RAW(SYS_flock, lock, LOCK_UN);
        RAW(SYS_close, lock);
    }
}

/* The three fds it keeps (-1: none) as 0, 1 and 2, every other closed;
 * fd[] becomes their new numbers. */
static RAW_CODE void keep_only(int fd[3], int nofile)
{
    int hi = 3;
    for (int i = 0; i < 3; i++)
        hi = fd[i] >= hi ? fd[i] + 1 : hi;
    for (int i = 0; i < 3; i++)   /* above them all first: 0-2 may be among them */
        fd[i] = fd[i] >= 0 ? (int)RAW(SYS_fcntl, fd[i], F_DUPFD, hi) : -1;
    for (int i = 0; i < 3; i++) {
        RAW(SYS_close, i);
        if (fd[i] >= 0)
            fd[i] = RAW(SYS_dup3, fd[i], i, 0) == i ? i : -1;
    }
    rt_close_from(3, nofile);
}

/* The watcher shares the program's memory: it writes nothing of w (the
 * program closes its own copies of these fds by the numbers in w). */
static RAW_CODE int watcher(void *arg)
{
    const struct watch *w = arg;
    uint64_t all = ~0ull;
    RAW(SYS_rt_sigprocmask, SIG_SETMASK, &all, 0, 8);
    RAW(SYS_setsid, 0);   /* out of the program's process group and session */
    RAW(SYS_prctl, PR_SET_NAME, "kprewrite-ctl");
    RAW(SYS_chdir, "/");
    int fd[3];
    fd[0] = w->pipe_rd, fd[1] = w->pidfd, fd[2] = w->dir_fd;
    keep_only(fd, w->nofile);
    struct pollfd pf[2];
    pf[0].fd = fd[0];
    pf[0].events = POLLIN;
    pf[1].fd = fd[1];
    pf[1].events = POLLIN;
    while (RAW(SYS_poll, pf, fd[1] >= 0 ? 2 : 1, -1) == -EINTR)
        ;
    clean_up(w, fd[2]);
    return 0;
}

static unsigned long watcher_flags;

/* The intermediate: starts the watcher and exits, orphaning it. */
static RAW_CODE int middle(void *arg)
{
    struct watch *w = arg;
    return rt_clone(watcher_flags, w->stack_watcher + sizeof w->stack_watcher, watcher, w) > 0 ? 0 : 1;
}

/* Valgrind runs a clone that shares memory only as a thread: there the
 * watcher is a copy (its pages are the program's as they were). */
static bool under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "/vgpreload_");
}

static bool reaps_own_orphans(void)
{
    int sub = 0;
    return getpid() == 1 || (prctl(PR_GET_CHILD_SUBREAPER, &sub) == 0 && sub);
}

bool ctl_dir_parent(const char *dir, char *parent, size_t size)
{
    const char *slash = strrchr(dir, '/');
    size_t n = !slash ? 0 : slash == dir ? 1 : (size_t)(slash - dir);
    if (n == 0 || n >= size)
        return false;
    memcpy(parent, dir, n);
    parent[n] = 0;
    return true;
}

static uint64_t mount_id(const char *path)
{
    struct statx sx;
    return statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) == 0 &&
                   (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
}

static bool fill(struct watch *w, const char *dir)
{
    struct stat st;
    if (snprintf(w->dir, sizeof w->dir, "%s", dir) >= (int)sizeof w->dir ||
        snprintf(w->sock, sizeof w->sock, "%s/socket", dir) >= (int)sizeof w->sock ||
        (w->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return false;
    if (fstat(w->dir_fd, &st) < 0) {
        close(w->dir_fd);
        return false;
    }
    w->dir_major = major(st.st_dev);
    w->dir_minor = minor(st.st_dev);
    if (!ctl_dir_parent(dir, w->parent, sizeof w->parent))
        w->parent[0] = 0;
    const char *pause = getenv("KPREWRITE_TEST_WATCH_PAUSE_MS");
    bool before = pause && !strncmp(pause, "lock:", 5);
    unsigned ms = pause && *pause ? (unsigned)strtoul(pause + (before ? 5 : 0), NULL, 10) % 10000 : 0;
    w->pause_ms = before ? 0 : ms;
    w->pause_lock_ms = before ? ms : 0;
    w->nofile = rt_nofile();
    if (rt_find_program("fusermount3", w->fusermount, sizeof w->fusermount)) {
        char **a = w->argv;
        a[0] = "fusermount3", a[1] = "-u", a[2] = "-z", a[3] = "-q", a[4] = w->dir, a[5] = NULL;
        w->envp[0] = NULL;
        w->spawn = (struct raw_spawn){ w->fusermount, w->argv, w->envp, -1, w->nofile, ~0ull };
    }
    return true;
}

static struct watch *watch;

void ctl_watch_mounted(void)
{
    /* without a FUSE request: this thread serves them */
    if (watch)
        atomic_store_explicit(&watch->mnt_id, mount_id(watch->dir), memory_order_relaxed);
}

int ctl_watch_start(const char *dir)
{
    struct watch *w = mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED)
        return -1;
    int p[2] = { -1, -1 };
    if (!fill(w, dir)) {
        munmap(w, sizeof *w);
        return -1;
    }
    if (pipe2(p, O_CLOEXEC) < 0) {
        close(w->dir_fd);
        munmap(w, sizeof *w);
        return -1;
    }
    w->pipe_rd = p[0];
    bool vg = under_valgrind(), direct = reaps_own_orphans();
    /* close-on-exec; -1 before Linux 5.3 (and under valgrind 3.19, which
     * would warn of it on the program's stderr) */
    w->pidfd = vg ? -1 : (int)syscall(SYS_pidfd_open, getpid(), 0);
    watcher_flags = (vg ? 0 : CLONE_VM) | (direct ? 0 : SIGCHLD);
    bool ok;
    if (direct) {
        ok = rt_clone(watcher_flags, w->stack_watcher + sizeof w->stack_watcher, watcher, w) > 0;
    } else {
        long pid = rt_clone(CLONE_VM | CLONE_VFORK, w->stack_middle + sizeof w->stack_middle, middle, w);
        int status = -1;
        if (pid > 0)
            while (waitpid((pid_t)pid, &status, __WCLONE) < 0 && errno == EINTR)
                ;
        ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    /* The watcher has its own copies now. (A child another thread forks
     * meanwhile keeps copies until it execs or exits, of the write end too,
     * which the fork handler cannot close before the caller has it; the
     * pidfd still tells the watcher when this process ends.) */
    close(w->pipe_rd);
    close(w->dir_fd);
    if (w->pidfd >= 0)
        close(w->pidfd);
    if (!ok) {
        close(p[1]);
        munmap(w, sizeof *w);   /* no watcher has it */
        return -1;
    }
    watch = w;
    return p[1];
}
