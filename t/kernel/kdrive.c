/*
 * kdrive: runs inside the check-kernel guest (static, no libc beyond the
 * system calls). Reads a probe's hit count from /sys/kernel/debug/kprewrite/list
 * with one read(), drives it N times, reads it again:
 *
 *   kdrive SPEC ACTION N     prints "delta SPEC ACTION N D"
 *                            (and, for getpid, "getpid RETURNED": the last one's)
 *   kdrive drain PATH 0      copies what PATH has to stdout, read with
 *                            O_NONBLOCK until it has no more (trace_pipe)
 *
 * ACTION: read (read(2) of one byte from /dev/zero), read777 (of 777 bytes
 * into a buffer whose address it prints, and how many reads filled it with
 * zeros, and /dev/zero's file descriptor), getpid, open (open(2)
 * of a path that does not exist), pread:PATH (pread(2) of PATH, opened
 * once), write1:PATH (write(2) of "1" to PATH, opened once), exec:PATH
 * (vfork and execve(2) of PATH, waited for), openread:PATH (open(2) of
 * PATH, a read(2) of its first bytes, close; prints "same R" with R the
 * times they matched the first time's). Each list read is one read(2)
 * call.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[1 << 16], big[777];
static long last_getpid, same_reads = -1, zero_reads = -1, full_reads;

static long hits(const char *spec)
{
    int fd = open("/sys/kernel/debug/kprewrite/list", O_RDONLY);
    if (fd < 0) {
        perror("kdrive: list");
        exit(2);
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);   /* one read(2): the list fits */
    close(fd);
    if (n <= 0)
        exit(2);
    buf[n] = 0;
    char key[256];
    snprintf(key, sizeof key, "  %s  ", spec);
    char *line = strstr(buf, key), *h = line ? strstr(line, "hits ") : NULL;
    if (!h) {
        fprintf(stderr, "kdrive: %s not listed\n", spec);
        exit(2);
    }
    return strtol(h + 5, NULL, 10);
}

static void act(const char *what, int zero, long n)
{
    char c;
    if (strncmp(what, "pread:", 6) == 0 || strncmp(what, "write1:", 7) == 0) {
        int w = what[0] == 'w', fd = open(strchr(what, ':') + 1, w ? O_WRONLY : O_RDONLY);
        if (fd < 0) {
            perror("kdrive: pread/write1");
            exit(2);
        }
        zero_reads = 0;
        for (long i = 0; i < n; i++)
            zero_reads += (w ? write(fd, "1", 1) : pread(fd, big, sizeof big, 0)) == 0;
        close(fd);
        return;
    }
    if (strncmp(what, "openread:", 9) == 0) {
        static char first[64], got[64];
        same_reads = 0;
        for (long i = 0; i < n; i++) {
            int fd = open(what + 9, O_RDONLY);
            ssize_t k = fd < 0 ? -1 : read(fd, i ? got : first, sizeof got);
            if (fd >= 0)
                close(fd);
            same_reads += k > 0 && (i == 0 || memcmp(first, got, (size_t)k) == 0);
        }
        return;
    }
    if (strncmp(what, "exec:", 5) == 0) {
        for (long i = 0; i < n; i++) {
            char *argv[] = { (char *)what + 5, "true", NULL }, *envp[] = { NULL };
            pid_t p = vfork();
            if (p == 0) {
                execve(what + 5, argv, envp);
                _exit(127);
            }
            waitpid(p, NULL, 0);
        }
        return;
    }
    for (long i = 0; i < n; i++) {
        if (strcmp(what, "read") == 0)
            (void)!read(zero, &c, 1);
        else if (strcmp(what, "read777") == 0) {
            /* a full read of zeros: the read(2) ran as it should */
            memset(big, 0xa5, sizeof big);
            ssize_t k = read(zero, big, sizeof big);
            int zeros = 1;
            for (size_t j = 0; j < sizeof big; j++)
                zeros &= big[j] == 0;
            full_reads += k == (ssize_t)sizeof big && zeros;
        }
        else if (strcmp(what, "getpid") == 0)
            last_getpid = syscall(SYS_getpid);
        else
            close(open("/kprewrite-does-not-exist", O_RDONLY));
    }
}

static double now_ticks(void)
{
    unsigned lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
    return (double)((unsigned long)hi << 32 | lo);
}

/* PATH's contents to stdout, without blocking once it has none (trace_pipe
 * blocks a reader until an event comes: the caller stopped them first) */
static int drain(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    ssize_t n;
    if (fd < 0) {
        perror("kdrive: drain");
        return 2;
    }
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (write(1, buf, (size_t)n) != n)
            return 2;
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "drain") == 0)
        return drain(argv[2]);
    if (argc != 4) {
        fprintf(stderr, "usage: kdrive SPEC|bench read|read777|getpid|open|pread:PATH|write1:PATH|exec:PATH|openread:PATH N\n       kdrive drain PATH 0\n");
        return 2;
    }
    long n = strtol(argv[3], NULL, 10);
    int zero = open("/dev/zero", O_RDONLY);
    if (zero < 0) {
        perror("kdrive: /dev/zero");
        return 2;
    }
    if (strcmp(argv[1], "bench") == 0) {
        double best = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = now_ticks();
            act(argv[2], zero, n);
            double t = (now_ticks() - t0) / n;
            best = r == 0 || t < best ? t : best;
        }
        printf("bench %s %ld %.1f\n", argv[2], n, best);
        return 0;
    }
    long before = hits(argv[1]);
    act(argv[2], zero, n);
    long after = hits(argv[1]);
    printf("delta %s %s %ld %ld\n", argv[1], argv[2], n, after - before);
    if (strcmp(argv[2], "read777") == 0)   /* and the reads that filled it with zeros */
        printf("buffer %lx\nfull %ld\nfd %d\n", (unsigned long)big, full_reads, zero);
    if (strcmp(argv[2], "getpid") == 0)   /* what the last getpid(2) returned */
        printf("getpid %ld\n", last_getpid);
    if (same_reads >= 0)
        printf("same %ld\n", same_reads);
    if (zero_reads >= 0)   /* pread/write1: the calls that returned 0 */
        printf("zero %ld\n", zero_reads);
    return 0;
}
