/*
 * The control directory as a tiny FUSE file system served by a thread of
 * the probed process, so that like /sys/kernel/debug/kprobes a read shows
 * the state at open time and a write takes effect before the writer's
 * write() returns, or fails with the error (echo 'disable nosuch' >
 * control: ENOENT). Plain files or FIFOs can do neither.
 *
 * It speaks the kernel's FUSE protocol on /dev/fuse directly (no libfuse)
 * and mounts with mount(2), which needs CAP_SYS_ADMIN; otherwise it asks
 * fusermount3, when installed, to mount for it. Only the owner can enter
 * it (no allow_other; default_permissions enforces the modes). Where
 * neither can mount, ctldir.c falls back to a socket (ctlsock.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include <poll.h>

/* inode numbers: the root, then the files of ctl.c by id */
enum { INO_ROOT = 1, INO_FIRST, INO_END = INO_FIRST + CTL_NFILES };
#define FILE_OF(ino) ((enum ctl_file_id)((ino) - INO_FIRST))

static int fuse_fd = -1;

/* ---- mounting ---- */

/* fusermount3 mounts for users without CAP_SYS_ADMIN: it gets one end of
 * a socket pair as its fd 3 (_FUSE_COMMFD) and sends the /dev/fuse fd back. */
static int mount_with_helper(const char *dir)
{
    char path[4096];
    int sv[2];
    if (!rt_find_program("fusermount3", path, sizeof path) ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    char *argv[] = { "fusermount3", "-o", "nosuid,nodev,noexec,default_permissions,fsname=kprewrite,subtype=kprewrite",
                     "--", (char *)dir, NULL };
    char *envp[] = { "_FUSE_COMMFD=3", NULL };
    /* the child is waited for before the fd is read: fusermount3 sends it
     * and exits, and a socket pair holds the message meanwhile */
    int status = rt_spawn_wait(path, argv, envp, sv[1]);
    close(sv[1]);
    int fd = -1;
    if (status == 0) {
        char byte, ctrl[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { &byte, 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl };
        if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) > 0) {
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            if (cm && cm->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        }
    }
    close(sv[0]);
    return fd;
}

int ctlfs_mount(const char *dir)
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
    return mount_with_helper(dir);
}

/* ---- the file system ---- */

struct open_file {
    char *text;   /* snapshot taken at open, for reads */
    size_t len;
    struct tr_stream *pipe;            /* trace_pipe: its consuming reader */
    struct open_file *prev, *next;     /* on open_files until released */
};

/* Every file opened and not yet released.  The kernel holds only the
 * handle's number; a process that exits before the RELEASE of its own
 * last read arrives would otherwise leave the file unreachable, which a
 * leak checker reports.  One server thread: no lock. */
static struct open_file *open_files;

static void open_files_add(struct open_file *f)
{
    f->next = open_files;
    if (open_files)
        open_files->prev = f;
    open_files = f;
}

static void open_files_del(struct open_file *f)
{
    if (f->prev)
        f->prev->next = f->next;
    else
        open_files = f->next;
    if (f->next)
        f->next->prev = f->prev;
}

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
    memset(a, 0, sizeof *a);
    a->ino = ino;
    a->mode = ino == INO_ROOT ? (S_IFDIR | 0700) : (S_IFREG | ctl_files[FILE_OF(ino)].mode);
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

static void op_init(const struct fuse_in_header *in, const struct fuse_init_in *ii)
{
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
}

static void op_lookup(const struct fuse_in_header *in, const char *name)
{
    int file = in->nodeid == INO_ROOT ? ctl_file_find(name, strlen(name)) : -1;
    if (file < 0) {
        reply(in->unique, -ENOENT, NULL, 0);
        return;
    }
    struct fuse_entry_out e;
    memset(&e, 0, sizeof e);
    e.nodeid = INO_FIRST + (unsigned)file;
    e.generation = 1;
    fill_attr(&e.attr, e.nodeid);
    reply(in->unique, 0, &e, sizeof e);
}

/* GETATTR, and SETATTR: the O_TRUNC of `echo x > file`; nothing to truncate */
static void op_attr(const struct fuse_in_header *in)
{
    if (in->nodeid < INO_ROOT || in->nodeid >= INO_END) {
        reply(in->unique, -ENOENT, NULL, 0);
        return;
    }
    struct fuse_attr_out a;
    memset(&a, 0, sizeof a);
    fill_attr(&a.attr, in->nodeid);
    reply(in->unique, 0, &a, sizeof a);
}

static void op_open(const struct fuse_in_header *in, const struct fuse_open_in *oi)
{
    struct fuse_open_out o;
    memset(&o, 0, sizeof o);
    if (in->opcode == FUSE_OPEN) {
        struct open_file *f = calloc(1, sizeof *f);
        if (!f || in->nodeid <= INO_ROOT || in->nodeid >= INO_END) {
            free(f);
            reply(in->unique, f ? -ENOENT : -ENOMEM, NULL, 0);
            return;
        }
        if (FILE_OF(in->nodeid) == CTL_TRACE_PIPE)
            f->pipe = ctl_pipe_open();
        else if ((oi->flags & O_ACCMODE) != O_WRONLY)
            f->text = ctl_read(FILE_OF(in->nodeid), &f->len);
        open_files_add(f);
        o.fh = (uint64_t)(uintptr_t)f;
        /* DIRECT_IO: every read and write comes to us.  NOFLUSH: close()
         * does not wait for us -- a process that exits with one of its own
         * control files open would otherwise wait for ever, in exit, on a
         * FLUSH its already-dead server thread cannot answer. */
        o.open_flags = FOPEN_DIRECT_IO | FOPEN_NOFLUSH;
    }
    reply(in->unique, 0, &o, sizeof o);
}

/* trace_pipe: a read with nothing to read waits, as the kernel's does:
 * its answer is deferred until events come (the serve loop polls), the
 * reader is interrupted (FUSE_INTERRUPT: EINTR) or releases the file. */
#define PIPE_WAITERS 16
static struct pipe_wait {
    uint64_t unique;
    struct open_file *f;
    uint32_t size;
} waiting[PIPE_WAITERS];
static unsigned nwaiting;

static bool pipe_answer(uint64_t unique, struct open_file *f, uint32_t size)
{
    static char buf[1 << 17];
    size_t n = ctl_pipe_read(f->pipe, buf, size < sizeof buf ? size : sizeof buf);
    if (!n)
        return false;
    reply(unique, 0, buf, n);
    return true;
}

static void pipe_read(const struct fuse_in_header *in, struct open_file *f, uint32_t size)
{
    if (pipe_answer(in->unique, f, size))
        return;
    if (nwaiting == PIPE_WAITERS) {
        reply(in->unique, -EAGAIN, NULL, 0);
        return;
    }
    waiting[nwaiting++] = (struct pipe_wait){ in->unique, f, size };
}

/* Answer the waiting reads that have events now; with f or unique set,
 * drop that file's (released) or that request's (interrupted: EINTR). */
static void pipe_poll(const struct open_file *gone, uint64_t interrupted)
{
    for (unsigned i = 0; i < nwaiting;) {
        struct pipe_wait *w = &waiting[i];
        bool done = w->f == gone;
        if (!done && w->unique == interrupted) {
            reply(w->unique, -EINTR, NULL, 0);
            done = true;
        }
        if (!done)
            done = pipe_answer(w->unique, w->f, w->size);
        if (done)
            waiting[i] = waiting[--nwaiting];
        else
            i++;
    }
}

static void op_read(const struct fuse_in_header *in, const struct fuse_read_in *ri)
{
    struct open_file *f = (void *)(uintptr_t)ri->fh;
    if (f->pipe) {
        pipe_read(in, f, ri->size);
        return;
    }
    size_t off = ri->offset < f->len ? (size_t)ri->offset : f->len;
    size_t n = f->len - off < ri->size ? f->len - off : ri->size;
    reply(in->unique, 0, f->text ? f->text + off : "", n);
}

static void op_write(const struct fuse_in_header *in, const struct fuse_write_in *wi)
{
    bool file = in->nodeid > INO_ROOT && in->nodeid < INO_END;
    int rc = file ? ctl_write(FILE_OF(in->nodeid), (const char *)(wi + 1), wi->size) : -EACCES;
    struct fuse_write_out o = { .size = wi->size };
    reply(in->unique, rc, &o, sizeof o);
}

static void op_release(const struct fuse_in_header *in, const struct fuse_release_in *ri)
{
    struct open_file *f = (void *)(uintptr_t)ri->fh;
    if (f) {
        if (f->pipe) {
            pipe_poll(f, 0);
            ctl_pipe_close(f->pipe);
        }
        open_files_del(f);
        free(f->text);
        free(f);
    }
    reply(in->unique, 0, NULL, 0);
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

/* entry i: ".", "..", then the files; off is the next entry's index */
static void op_readdir(const struct fuse_in_header *in, const struct fuse_read_in *ri)
{
    char out[4096];
    size_t n = 0, room = ri->size < sizeof out ? ri->size : sizeof out, k;
    for (uint64_t i = ri->offset; i < 2 + CTL_NFILES; i++) {
        if (i < 2)
            k = add_dirent(out + n, room - n, INO_ROOT, i + 1, i ? ".." : ".", DT_DIR);
        else
            k = add_dirent(out + n, room - n, INO_FIRST + i - 2, i + 1, ctl_files[i - 2].name, DT_REG);
        if (!k)
            break;
        n += k;
    }
    reply(in->unique, 0, out, n);
}

static void op_statfs(const struct fuse_in_header *in)
{
    struct fuse_statfs_out s;
    memset(&s, 0, sizeof s);
    s.st.bsize = s.st.frsize = 4096;
    s.st.namelen = 255;
    reply(in->unique, 0, &s, sizeof s);
}

static void serve(const struct fuse_in_header *in, const void *arg)
{
    switch (in->opcode) {
    case FUSE_INIT: op_init(in, arg); return;
    case FUSE_LOOKUP: op_lookup(in, arg); return;
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET: return;   /* no reply */
    case FUSE_INTERRUPT:   /* no reply of its own */
        pipe_poll(NULL, ((const struct fuse_interrupt_in *)arg)->unique);
        return;
    case FUSE_GETATTR:
    case FUSE_SETATTR: op_attr(in); return;
    case FUSE_OPEN:
    case FUSE_OPENDIR: op_open(in, arg); return;
    case FUSE_READ: op_read(in, arg); return;
    case FUSE_WRITE: op_write(in, arg); return;
    case FUSE_RELEASE: op_release(in, arg); return;
    case FUSE_FLUSH:   /* (before 5.17, no FOPEN_NOFLUSH): ENOSYS ends FLUSHes */
        reply(in->unique, -ENOSYS, NULL, 0);
        return;
    case FUSE_RELEASEDIR:
    case FUSE_FSYNC:
    case FUSE_DESTROY: reply(in->unique, 0, NULL, 0); return;
    case FUSE_READDIR: op_readdir(in, arg); return;
    case FUSE_STATFS: op_statfs(in); return;
    default: reply(in->unique, -ENOSYS, NULL, 0); return;
    }
}

void ctlfs_serve(int fd)
{
    fuse_fd = fd;
    size_t size = 65536 + 4096 + FUSE_MIN_READ_BUFFER;
    static char *buf;   /* static: reachable while the thread runs, for leak checkers */
    buf = malloc(size);
    if (!buf)
        return;
    for (;;) {
        if (nwaiting) {   /* readers of trace_pipe wait: look for events every 20 ms */
            struct pollfd p = { fd, POLLIN, 0 };
            if (poll(&p, 1, 20) == 0) {
                pipe_poll(NULL, 0);
                continue;
            }
        }
        ssize_t n = read(fd, buf, size);
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
    buf = NULL;
}
