/*
 * The control directory: a tiny FUSE file system served by a thread of
 * the probed process, so that like /sys/kernel/debug/kprobes a read shows
 * the state at open time and a write takes effect before the writer's
 * write() returns, or fails with the error (echo 'disable nosuch' >
 * control: ENOENT). Plain files or FIFOs can do neither.
 *
 *   $KPREWRITE_CTL_DIR/<pid>/   or  $XDG_RUNTIME_DIR/kprewrite/<pid>/
 *   (or /tmp/kprewrite-<uid>/<pid>/ without either), mode 0700.
 *
 * It speaks the kernel's FUSE protocol on /dev/fuse directly (no libfuse)
 * and mounts with mount(2), which needs CAP_SYS_ADMIN; otherwise it asks
 * fusermount3, when installed, to mount for it. Without either the
 * program runs normally, without a directory. Only the owner can enter it
 * (no allow_other; default_permissions enforces the modes). It is unmounted
 * and removed at exit; directories left by processes that died are
 * removed by the next probed process that starts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kprewrite/ctl.h"
#include "rt.h"

extern char **environ;

enum { INO_ROOT = 1, INO_LIST, INO_ENABLED, INO_OPTIMIZATION, INO_CONTROL, INO_PROFILE, INO_END };

static const struct {
    const char *name;
    unsigned mode;
} files[INO_END] = {
    [INO_LIST] = { "list", 0400 },
    [INO_ENABLED] = { "enabled", 0600 },
    [INO_OPTIMIZATION] = { "optimization", 0600 },
    [INO_CONTROL] = { "control", 0600 },
    [INO_PROFILE] = { "profile", 0400 },
};

static const char control_help[] =
    "# write one command a line; SPEC is SYM, SYM+OFF, 0xADDR, SYM may be a glob\n"
    "# enable SPEC | disable SPEC | optimize SPEC | unoptimize SPEC\n";

/* "<base>/<pid>" and its base, on the heap: in .bss they would cost every
 * probed program a page fault at start-up */
static char *dir, *base_dir;
static int fuse_fd = -1;
static bool started;
static pid_t owner;

/* ---- the directory ---- */

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

/* Directories of processes that are gone (killed before their exit ran). */
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
        umount2(path, MNT_DETACH);
        rmdir(path);
    }
    closedir(d);
}

/* fusermount3 mounts for users without CAP_SYS_ADMIN: it gets one end of
 * a socket pair in _FUSE_COMMFD and sends the /dev/fuse fd back. */
static int mount_with_helper(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    char fdenv[32];
    snprintf(fdenv, sizeof fdenv, "_FUSE_COMMFD=%d", sv[1]);
    char *argv[] = { "fusermount3", "-o", "nosuid,nodev,noexec,default_permissions,fsname=kprewrite,subtype=kprewrite",
                     "--", dir, NULL };
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **envp = malloc((n + 2) * sizeof *envp);
    if (!envp) {
        close(sv[0]), close(sv[1]);
        return -1;
    }
    memcpy(envp, environ, n * sizeof *envp);
    envp[n] = fdenv;
    envp[n + 1] = NULL;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, sv[0]);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&pid, "fusermount3", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(sv[1]);
    int fd = -1;
    if (rc == 0) {
        char byte, ctrl[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { &byte, 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl };
        if (recvmsg(sv[0], &mh, 0) > 0) {
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            if (cm && cm->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        }
        waitpid(pid, NULL, 0);
    }
    close(sv[0]);
    if (fd >= 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

static int do_mount(void)
{
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        char opts[128];
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=%u,group_id=%u,default_permissions", fd,
                 (unsigned)getuid(), (unsigned)getgid());
        if (mount("kprewrite", dir, "fuse.kprewrite", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == 0)
            return fd;
        close(fd);
    }
    return mount_with_helper();
}

/* The mount happens in the server thread, a little after start-up (see
 * ctlfs_start); mount_lock orders it with the unmount at exit. */
static pthread_mutex_t mount_lock = PTHREAD_MUTEX_INITIALIZER;
static bool mounted, stopping;

static void stop(void)
{
    pthread_mutex_lock(&mount_lock);
    stopping = true;
    bool was = mounted;
    mounted = false;
    pthread_mutex_unlock(&mount_lock);
    started = false;
    if (!was)
        return;   /* exited before the directory was made */
    if (umount2(dir, MNT_DETACH) < 0) {
        pid_t pid;
        char *argv[] = { "fusermount3", "-u", "-z", "-q", dir, NULL };
        if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ) == 0)
            waitpid(pid, NULL, 0);
    }
    rmdir(dir);
}

static void ctlfs_stop(void)
{
    if (!started || getpid() != owner)
        return;
    bool e = rt_enter();   /* the libc it calls may be probed */
    stop();
    rt_leave(e);
}

/* ---- the file system ---- */

struct open_file {
    char *text;   /* snapshot taken at open, for reads */
    size_t len;
};

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
    memset(a, 0, sizeof *a);
    a->ino = ino;
    a->mode = ino == INO_ROOT ? (S_IFDIR | 0700) : (S_IFREG | files[ino].mode);
    a->nlink = ino == INO_ROOT ? 2 : 1;
    a->uid = getuid();
    a->gid = getgid();
    a->blksize = 4096;
    a->atime = a->mtime = a->ctime = (uint64_t)time(NULL);
}

static void reply(uint64_t unique, int error, const void *data, size_t len)
{
    struct fuse_out_header h = { .len = (uint32_t)(sizeof h + (error ? 0 : len)), .error = error, .unique = unique };
    struct iovec iov[2] = { { &h, sizeof h }, { (void *)data, error ? 0 : len } };
    /* a failure (ENOENT: the request was interrupted) leaves nothing to do */
    (void)!writev(fuse_fd, iov, 2);
}

static char *snapshot(uint64_t ino, size_t *len)
{
    char *s = NULL;
    switch (ino) {
    case INO_LIST: return ctl_list(len);
    case INO_PROFILE: return ctl_profile(len);
    case INO_CONTROL: s = strdup(control_help); break;
    case INO_ENABLED:
    case INO_OPTIMIZATION:
        rt_lock_take();
        s = strdup(rt_knob(ino == INO_ENABLED ? RT_KNOB_ENABLED : RT_KNOB_OPTIMIZATION) ? "1\n" : "0\n");
        rt_lock_drop();
        break;
    }
    *len = s ? strlen(s) : 0;
    return s;
}

/* A write: each line a command; the first failure is the writer's error. */
static int do_write(uint64_t ino, const char *data, size_t len)
{
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, data, len);
    buf[len] = 0;
    int rc = 0;
    if (ino == INO_ENABLED || ino == INO_OPTIMIZATION) {
        rc = ctl_knob(ino == INO_ENABLED ? RT_KNOB_ENABLED : RT_KNOB_OPTIMIZATION, buf);
    } else if (ino == INO_CONTROL) {
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
            while (*line == ' ' || *line == '\t')
                line++;
            if (*line && *line != '#')
                rc = ctl_command(line);
        }
    } else {
        rc = -EACCES;
    }
    free(buf);
    return rc;
}

static size_t add_dirent(char *out, size_t room, uint64_t ino, uint64_t off, const char *name, unsigned type)
{
    size_t namelen = strlen(name), need = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);
    if (need > room)
        return 0;
    struct fuse_dirent *d = (void *)out;
    memset(out, 0, need);
    d->ino = ino;
    d->off = off;
    d->namelen = (uint32_t)namelen;
    d->type = type;
    memcpy(d->name, name, namelen);
    return need;
}

static void serve(const struct fuse_in_header *in, const void *arg)
{
    uint64_t ino = in->nodeid;
    switch (in->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *ii = arg;
        struct fuse_init_out o;
        memset(&o, 0, sizeof o);
        o.major = FUSE_KERNEL_VERSION;
        o.minor = FUSE_KERNEL_MINOR_VERSION;
        o.max_readahead = ii->max_readahead;
        o.max_write = 65536;
        o.max_background = 4;
        o.congestion_threshold = 3;
        o.time_gran = 1;
        reply(in->unique, 0, &o, sizeof o);
        return;
    }
    case FUSE_LOOKUP: {
        const char *name = arg;
        for (uint64_t i = INO_LIST; i < INO_END; i++)
            if (ino == INO_ROOT && strcmp(name, files[i].name) == 0) {
                struct fuse_entry_out e;
                memset(&e, 0, sizeof e);
                e.nodeid = i;
                e.generation = 1;
                fill_attr(&e.attr, i);
                reply(in->unique, 0, &e, sizeof e);
                return;
            }
        reply(in->unique, -ENOENT, NULL, 0);
        return;
    }
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
        return;   /* no reply */
    case FUSE_GETATTR:
    case FUSE_SETATTR: {   /* SETATTR: the O_TRUNC of `echo x > file`; nothing to truncate */
        struct fuse_attr_out a;
        memset(&a, 0, sizeof a);
        if (ino < INO_ROOT || ino >= INO_END) {
            reply(in->unique, -ENOENT, NULL, 0);
            return;
        }
        fill_attr(&a.attr, ino);
        reply(in->unique, 0, &a, sizeof a);
        return;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
        struct fuse_open_out o;
        memset(&o, 0, sizeof o);
        if (in->opcode == FUSE_OPEN) {
            struct open_file *f = calloc(1, sizeof *f);
            if (!f || ino <= INO_ROOT || ino >= INO_END) {
                free(f);
                reply(in->unique, f ? -ENOENT : -ENOMEM, NULL, 0);
                return;
            }
            const struct fuse_open_in *oi = arg;
            if ((oi->flags & O_ACCMODE) != O_WRONLY)
                f->text = snapshot(ino, &f->len);
            o.fh = (uint64_t)(uintptr_t)f;
            o.open_flags = FOPEN_DIRECT_IO;   /* every read and write comes to us */
        }
        reply(in->unique, 0, &o, sizeof o);
        return;
    }
    case FUSE_READ: {
        const struct fuse_read_in *ri = arg;
        struct open_file *f = (void *)(uintptr_t)ri->fh;
        size_t off = ri->offset < f->len ? (size_t)ri->offset : f->len;
        size_t n = f->len - off < ri->size ? f->len - off : ri->size;
        reply(in->unique, 0, f->text ? f->text + off : "", n);
        return;
    }
    case FUSE_WRITE: {
        const struct fuse_write_in *wi = arg;
        int rc = do_write(ino, (const char *)(wi + 1), wi->size);
        struct fuse_write_out o = { .size = wi->size };
        reply(in->unique, rc, &o, sizeof o);
        return;
    }
    case FUSE_RELEASE: {
        const struct fuse_release_in *ri = arg;
        struct open_file *f = (void *)(uintptr_t)ri->fh;
        if (f) {
            free(f->text);
            free(f);
        }
        reply(in->unique, 0, NULL, 0);
        return;
    }
    case FUSE_FLUSH:
    case FUSE_RELEASEDIR:
    case FUSE_FSYNC:
        reply(in->unique, 0, NULL, 0);
        return;
    case FUSE_READDIR: {
        const struct fuse_read_in *ri = arg;
        char out[4096];
        size_t n = 0, room = ri->size < sizeof out ? ri->size : sizeof out, k;
        for (uint64_t i = ri->offset; i < INO_END + 1; i++) {
            if (i == 0)
                k = add_dirent(out + n, room - n, INO_ROOT, 1, ".", DT_DIR);
            else if (i == 1)
                k = add_dirent(out + n, room - n, INO_ROOT, 2, "..", DT_DIR);
            else if (i >= INO_LIST && i < INO_END)
                k = add_dirent(out + n, room - n, i, i + 1, files[i].name, DT_REG);
            else
                continue;
            if (!k)
                break;
            n += k;
        }
        reply(in->unique, 0, out, n);
        return;
    }
    case FUSE_STATFS: {
        struct fuse_statfs_out s;
        memset(&s, 0, sizeof s);
        s.st.bsize = s.st.frsize = 4096;
        s.st.namelen = 255;
        reply(in->unique, 0, &s, sizeof s);
        return;
    }
    case FUSE_DESTROY:
        reply(in->unique, 0, NULL, 0);
        return;
    default:
        reply(in->unique, -ENOSYS, NULL, 0);
        return;
    }
}

/* Milliseconds before the directory is made: a process that lives less
 * has no use for one, and mounting and unmounting a file system would
 * cost it more than its whole run (KPREWRITE_CTL_DELAY_MS; 0: at once). */
static unsigned ctl_delay_ms(void)
{
    const char *e = getenv("KPREWRITE_CTL_DELAY_MS");
    return e && *e ? (unsigned)strtoul(e, NULL, 10) : 20;
}

static bool mount_dir(void)
{
    unsigned ms = ctl_delay_ms();
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (ms && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&mount_lock);
    bool ok = false;
    if (!stopping) {
        remove_stale(base_dir);
        umount2(dir, MNT_DETACH);   /* left by an earlier process with this pid */
        rmdir(dir);
        if (mkdir(dir, 0700) == 0 && (fuse_fd = do_mount()) >= 0)
            ok = mounted = true;
        else
            rmdir(dir);
    }
    pthread_mutex_unlock(&mount_lock);
    return ok;
}

/* The CPUs the server may use once the directory is made (ctlfs_start). */
static cpu_set_t server_cpus;
static bool server_pinned;

/* arg: non-NULL when ctlfs_start mounted already (no delay asked for) */
static void *server(void *arg)
{
    /* the runtime's own thread: its hits (in the libc it calls) are misses */
    rt_enter();
    trap_server_tid = (pid_t)syscall(SYS_gettid);
    if (!arg && !mount_dir())
        return NULL;
    if (server_pinned)   /* the process outlived the delay: serve from any CPU */
        sched_setaffinity(0, sizeof server_cpus, &server_cpus);
    size_t size = 65536 + 4096 + FUSE_MIN_READ_BUFFER;
    static char *buf;   /* static: reachable while the thread runs, for leak checkers */
    buf = malloc(size);
    if (!buf)
        return NULL;
    for (;;) {
        ssize_t n = read(fuse_fd, buf, size);
        if (n < 0) {
            if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
                continue;
            break;   /* ENODEV: unmounted */
        }
        if ((size_t)n < sizeof(struct fuse_in_header))
            continue;
        const struct fuse_in_header *in = (const void *)buf;
        serve(in, in + 1);
    }
    free(buf);
    return NULL;
}

/* A forked child: the server thread is not there, and the directory is
 * the parent's. Holding the connection open would keep anyone who reads
 * the directory of a parent that died waiting for an answer. (The child
 * has no directory of its own: its probes and handlers work as before.) */
void ctlfs_fork_child(void)
{
    if (fuse_fd >= 0)
        close(fuse_fd);
    fuse_fd = -1;
}

void ctlfs_start(void)
{
    if (started)
        return;
    started = true;   /* once, even when it fails */
    owner = getpid();
    char base[3800];
    kprewrite_ctl_base(base, sizeof base);
    if (mkdirs(base) < 0)
        return;
    /* The base may be shared (/tmp): another user who made it first, or
     * made it writable, could swap our directory under us. */
    struct stat bs = { 0 };
    if (lstat(base, &bs) < 0 || !S_ISDIR(bs.st_mode) || bs.st_uid != geteuid() || (bs.st_mode & 022)) {
        fprintf(stderr, "kprewrite-rt: %s is not a directory of ours that only we may write (uid %u, mode %o); "
                "no control directory\n", base, (unsigned)bs.st_uid, (unsigned)(bs.st_mode & 07777));
        return;
    }
    free(base_dir);
    free(dir);
    dir = NULL;
    if (!(base_dir = strdup(base)) || asprintf(&dir, "%s/%d", base, (int)owner) < 0) {
        dir = NULL;
        return;
    }
    /* the server (which makes and mounts the directory first) runs no
     * probed code and takes no signals */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Joinable, and never joined: a detached thread frees its TLS itself
     * as it exits, calling free with every signal blocked (glibc's
     * start_thread), and an int3 probe on free would then kill the process
     * (the kernel forces a blocked SIGTRAP to its default action). The
     * server ends when the process does (or, if it cannot mount, keeps its
     * few pages until then). */
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    /* KPREWRITE_CTL_DELAY_MS=0: the directory exists before main runs */
    bool now = ctl_delay_ms() == 0;
    if (now && !mount_dir()) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&at);
        started = false;
        return;
    }
    /* Until it makes the directory, the server sleeps on the CPU that
     * started it: a process that exits before then does not have to wake
     * it on another CPU and wait for it there (on this project's VM, that
     * costs a --version start 0.2 ms instead of 0.08 ms) */
    int cpu = sched_getcpu();
    if (!now && cpu >= 0 && sched_getaffinity(0, sizeof server_cpus, &server_cpus) == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        server_pinned = pthread_attr_setaffinity_np(&at, sizeof one, &one) == 0;
    }
    int rc = pthread_create(&th, &at, server, now ? (void *)1 : NULL);
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        if (now)
            ctlfs_stop();
        started = false;
        return;
    }
    atexit(ctlfs_stop);
}
