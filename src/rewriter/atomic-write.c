/* Atomic output: temp file beside the destination, fsync, rename. */
#include "atomic-write.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory of path is made durable too, or a crash after rename could
 * still show the old name's old contents; best effort (some file systems
 * refuse fsync on directories). */
static void sync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

int write_atomic(const char *path, const uint8_t *buf, size_t size, unsigned mode, char *err, size_t errlen)
{
    char real[PATH_MAX], tmp[PATH_MAX + 32], dir[PATH_MAX];
    struct stat old;
    bool existed;

    /* Follow a symlink so the link is kept and its target replaced. */
    if (lstat(path, &old) == 0 && S_ISLNK(old.st_mode)) {
        if (!realpath(path, real)) {
            snprintf(err, errlen, "%s: cannot follow the symlink: %s (input left untouched)", path, strerror(errno));
            return -1;
        }
    } else if (snprintf(real, sizeof real, "%s", path) >= (int)sizeof real) {
        snprintf(err, errlen, "%.200s...: path too long", path);
        return -1;
    }
    existed = stat(real, &old) == 0;
    if (existed && !S_ISREG(old.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file; not replacing it", path);
        return -1;
    }
    snprintf(dir, sizeof dir, "%s", real);
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    const char *d = dirname(dir);   /* "." when real has no slash */
    snprintf(tmp, sizeof tmp, "%s/.%s.kprewrite-XXXXXX", d, base);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file in %s: %s (input left untouched)", path, d,
                 strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, buf + done, size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            goto fail;
        }
        done += (size_t)w;
    }
    if (existed && (old.st_uid != geteuid() || old.st_gid != getegid()))
        (void)fchown(fd, old.st_uid, old.st_gid);   /* root rewriting someone's file: keep the owner */
    if (fchmod(fd, mode & 07777) < 0 || fsync(fd) < 0)
        goto fail;
    if (close(fd) < 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, real) < 0)
        goto fail;
    sync_dir(d);
    return 0;
fail:
    snprintf(err, errlen, "%s: cannot write: %s (input left untouched)", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}
