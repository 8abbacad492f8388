/* The client of a control directory served through a socket (the
 * runtime's src/runtime/user/ctlsock.c says the protocol). */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Connected to PATH, or -errno; a path too long for sun_path is reached
 * through an fd of its directory. */
static int connect_to(const char *path)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int dirfd = -1;
    if (strlen(path) < sizeof a.sun_path) {
        memcpy(a.sun_path, path, strlen(path));
    } else {
        const char *slash = strrchr(path, '/');
        char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
        dirfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        free(dir);
        if (dirfd < 0)
            return -ENAMETOOLONG;
        snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dirfd, slash + 1);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        rc = -errno;
    if (dirfd >= 0)
        close(dirfd);
    if (rc < 0 && fd >= 0)
        close(fd);
    return rc < 0 ? rc : fd;
}

static int send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The answer's status line, then (out) the rest as it comes. */
static int read_answer(int fd, FILE *out)
{
    char buf[65536], status[16];
    size_t sn = 0;
    bool in_status = true;
    int rc = -EPROTO;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return in_status ? -EPROTO : rc;
        size_t i = 0;
        while (in_status && i < (size_t)n) {
            char c = buf[i++];
            if (c == '\n') {
                status[sn] = 0;
                char *end;
                long v = strtol(status, &end, 10);
                rc = end != status && !*end && v <= 0 ? (int)v : -EPROTO;
                in_status = false;
            } else if (sn + 1 < sizeof status) {
                status[sn++] = c;
            }
        }
        if (!in_status && out && i < (size_t)n && fwrite(buf + i, 1, (size_t)n - i, out) != (size_t)n - i)
            return -EIO;
    }
}

int ctl_socket_request(const char *path, const char *verb, const char *file, const char *data, FILE *out)
{
    int fd = connect_to(path);
    if (fd < 0)
        return fd;
    char head[64];
    snprintf(head, sizeof head, "%s %s\n", verb, file);
    int rc = send_all(fd, head, strlen(head));
    if (!rc && data)
        rc = send_all(fd, data, strlen(data));
    if (!rc && shutdown(fd, SHUT_WR) < 0)
        rc = -errno;
    if (!rc)
        rc = read_answer(fd, out);
    close(fd);
    return rc;
}
