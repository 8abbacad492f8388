/* Shared by the fuzz harnesses: the input as a file (the rewriter opens
 * paths), in tmpfs, one per process and harness. */
#ifndef KPREWRITE_FUZZ_IO_H
#define KPREWRITE_FUZZ_IO_H
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline const char *fuzz_path(const char *name)
{
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("KP_FUZZ_TMP");
        snprintf(path, sizeof path, "%s/kpfuzz-%s-%d", dir ? dir : "/dev/shm", name, (int)getpid());
    }
    return path;
}

/* Writes data to path; returns 0 or -1. */
static inline int fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

/* The report stream of a run nobody reads. */
static inline FILE *fuzz_null(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}
#endif
