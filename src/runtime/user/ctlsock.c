/*
 * The control directory without FUSE (no /dev/fuse, no CAP_SYS_ADMIN, no
 * fusermount3: an unprivileged container, most CI runners): a plain
 * directory, mode 0700, holding a Unix stream socket `socket`, mode 0600,
 * served by the same thread of the process as the FUSE mount would be.
 * Only a peer of the process's own uid is answered (SO_PEERCRED).
 *
 * One request a connection, in the control files' own text: the client
 * sends "read FILE\n", or "write FILE\n" and the bytes it would write to
 * FILE, then shuts its side down. The answer is a status line, "0" or the
 * -errno a write(2) to the file would have failed with (e.g. "-2"), and
 * for a read the file's text. `kprewrite ctl` speaks it (src/rewriter/).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

enum { REQUEST_MAX = 1 << 20 };   /* a write of more is refused (E2BIG) */

/* The socket's address; a path too long for sun_path is reached through
 * an fd of its directory. */
static int socket_address(const char *path, struct sockaddr_un *a, int *dirfd)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    *dirfd = -1;
    if (strlen(path) < sizeof a->sun_path) {
        memcpy(a->sun_path, path, strlen(path));
        return 0;
    }
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
    *dirfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    free(dir);
    if (*dirfd < 0)
        return -1;
    snprintf(a->sun_path, sizeof a->sun_path, "/proc/self/fd/%d/%s", *dirfd, slash + 1);
    return 0;
}

int ctlsock_open(const char *dir, char **path)
{
    int fd = -1, dirfd = -1;
    struct sockaddr_un a;
    if (asprintf(path, "%s/socket", dir) < 0) {
        *path = NULL;
        return -1;
    }
    if (socket_address(*path, &a, &dirfd) == 0 && (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
        (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || chmod(*path, 0600) < 0 || listen(fd, 16) < 0)) {
        close(fd);
        unlink(*path);
        fd = -1;
    }
    if (dirfd >= 0)
        close(dirfd);
    if (fd < 0) {
        free(*path);
        *path = NULL;
    }
    return fd;
}

/* The request, up to EOF: NULL when it is not one (or too long). */
static char *read_request(int c, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            char *b = cap < REQUEST_MAX ? realloc(buf, cap * 2 + 1) : NULL;
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
        ssize_t k = read(c, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k < 0)
                break;
            buf[n] = 0;
            *len = n;
            return buf;
        }
        n += (size_t)k;
    }
    free(buf);
    return NULL;
}

static void send_all(int c, const char *s, size_t n)
{
    while (n) {
        ssize_t k = send(c, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;   /* the client went away, or timed out */
        s += k;
        n -= (size_t)k;
    }
}

/* "read FILE\n" or "write FILE\nDATA": the status, and for a read the text */
static void answer(int c, char *req, size_t len)
{
    char *nl = memchr(req, '\n', len), *name = NULL, status[16];
    size_t head = nl ? (size_t)(nl - req) : len;
    bool rd = head > 5 && memcmp(req, "read ", 5) == 0, wr = head > 6 && memcmp(req, "write ", 6) == 0;
    if (rd || wr)
        name = req + (rd ? 5 : 6);
    int file = name ? ctl_file_find(name, (size_t)(req + head - name)) : -1;
    char *text = NULL;
    size_t tlen = 0;
    int rc = !name ? -EINVAL : file < 0 ? -ENOENT : 0;
    if (!rc && rd)
        rc = (text = ctl_read((enum ctl_file_id)file, &tlen)) ? 0 : -ENOMEM;
    else if (!rc)
        rc = ctl_write((enum ctl_file_id)file, nl ? nl + 1 : req + len, nl ? len - head - 1 : 0);
    int n = snprintf(status, sizeof status, "%d\n", rc);
    send_all(c, status, (size_t)n);
    if (text)
        send_all(c, text, tlen);
    free(text);
}

static void serve_one(int c)
{
    /* a client that stops talking must not hold the others up */
    struct timeval tv = { 2, 0 };
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct ucred cred;
    socklen_t clen = sizeof cred;
    bool owner = getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.uid == geteuid();
    size_t len;
    char *req = read_request(c, &len);   /* read whole, so that the answer is not lost in a reset */
    if (!owner)
        send_all(c, "-13\n", 4);   /* EACCES: the owner only, as the directory's mode says */
    else if (req)
        answer(c, req, len);
    else
        send_all(c, "-7\n", 3);   /* E2BIG, or the request never ended */
    free(req);
}

void ctlsock_serve(int fd)
{
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK)
                return;   /* closed */
            if (errno != EINTR && errno != ECONNABORTED) {
                struct timespec ts = { 0, 10000000 };   /* EMFILE and the like: not a busy loop */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        serve_one(c);
        close(c);
    }
}
