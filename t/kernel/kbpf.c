/*
 * kbpf: runs inside the check-kernel guest (static: libbpf, libelf, zlib).
 * Loads OBJ (kbpf.bpf.o), attaches its kprobe and kretprobe programs to
 * FUNC with libbpf, makes N read(2)s of SIZE bytes from /dev/zero and
 * prints what the programs counted for this process:
 *
 *   kbpf OBJ SPEC SIZE N    SPEC: FUNC, or FUNC+0xOFF (the kprobe program
 *                           only: a return probe is a function's)
 *     attach pmu|legacy     how libbpf attaches: perf's kprobe PMU where
 *                           /sys/bus/event_source/devices/kprobe/type is,
 *                           else a kprobe_events event and its tracepoint
 *     event LINE            each line kprobe_events had while attached
 *     point LINE            each of FUNC's points in kprewrite's list then
 *     entries E bytes B buf 0xBUF ip 0xIP
 *                           the kprobe program: calls, the sum of the third
 *                           argument, the last second one, bpf_get_func_ip()
 *     returns R bytes B     the kretprobe program: returns, their sum
 *                           (without an offset)
 *     mine buf 0xBUF        the buffer kbpf read into
 *
 *   kbpf OBJ fentry SIZE N  OBJ's fentry program (kbpf-fentry.bpf.o, a kernel
 *                           with BTF) on vfs_read through the BPF trampoline:
 *     fentry entries E bytes B
 *
 *   kbpf OBJ SPEC bench N   (make bench-kernel) the kprobe program alone on
 *                           SPEC (getpid(2)'s handler), counting kbpf's calls:
 *     bench bpf TICKS entries E
 *                           TSC ticks per getpid(2), the best of 5 runs of
 *                           N (as kdrive bench), and the calls it counted
 *
 * It exits 1, saying why, when libbpf cannot load or attach. Between
 * attaching and reading the counts, kbpf's only read(2)s are the N (the
 * programs count kbpf's from when it puts its tgid in their map).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* the slots of the programs' map (kbpf.bpf.c) */
enum { TGID, ENTRIES, ENTRY_BYTES, LAST_BUF, FUNC_IP, RETURNS, RETURN_BYTES, NSLOTS };

static char buf[1 << 16];

static void fail(const char *what, const char *func, int err)
{
    fprintf(stderr, "kbpf: %s%s%s: %s\n", what, func ? " " : "", func ? func : "", strerror(err));
    exit(1);
}

static void put(int map, __u32 k, __u64 v)
{
    if (bpf_map_update_elem(map, &k, &v, BPF_ANY))
        fail("cannot write the map", NULL, errno);
}

static __u64 get(int map, __u32 k)
{
    __u64 v;

    if (bpf_map_lookup_elem(map, &k, &v))
        fail("cannot read the map", NULL, errno);
    return v;
}

/* n read(2)s of size bytes from /dev/zero, the programs counting this
 * process's calls meanwhile (its tgid in the map) */
static void watched_reads(int map, long size, long n)
{
    int zero = open("/dev/zero", O_RDONLY);
    if (zero < 0)
        fail("cannot open /dev/zero", NULL, errno);
    put(map, TGID, getpid());
    for (long i = 0; i < n; i++)
        if (read(zero, buf, size) != size)
            fail("a short read of /dev/zero", NULL, errno);
    put(map, TGID, 0);
    close(zero);
}

/* kprobe_events' lines (libbpf's legacy events are there while attached) */
static void list_events(void)
{
    FILE *f = fopen("/sys/kernel/tracing/kprobe_events", "r");
    char line[512];

    if (!f)
        f = fopen("/sys/kernel/debug/tracing/kprobe_events", "r");
    if (!f)
        fail("cannot open kprobe_events", NULL, errno);
    while (fgets(line, sizeof line, f))
        printf("event %s", line);
    fclose(f);
}

/* func's points in kprewrite's list ("ADDR  KIND  FUNC+0xOFF  [STATE] ..."),
 * and, where the kernel has kprobes, every line of its list ("ADDR  KIND
 * SYM+0xOFF  [FLAGS]": SYM may be another name of the address) */
static void list_points(const char *func)
{
    char line[512], name[256];
    size_t n = strlen(func);
    FILE *f = fopen("/sys/kernel/debug/kprewrite/list", "r");

    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "%*s %*s %255s", name) == 1 && !strncmp(name, func, n) && !strncmp(name + n, "+0x", 3))
                printf("point %s", line);
        fclose(f);
    }
    if ((f = fopen("/sys/kernel/debug/kprobes/list", "r"))) {
        while (fgets(line, sizeof line, f))
            printf("kprobe %s", line);
        fclose(f);
    }
}

static unsigned long ticks(void)
{
    unsigned lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
    return (unsigned long)hi << 32 | lo;
}

/* bench mode: TSC ticks per getpid(2) with entry (counting this process's
 * calls) attached to func, the best of 5 runs of n, as kdrive bench */
static int bench(struct bpf_program *entry, int map, const char *func, long n)
{
    struct bpf_link *l = bpf_program__attach_kprobe(entry, false, func);
    double best = 0;

    if (!l)
        fail("cannot attach a kprobe program to", func, errno);
    sleep(1);   /* (the kernel's optimizer puts its kprobe on a jump after a delay) */
    list_points(func);
    put(map, TGID, getpid());
    for (int r = 0; r < 5; r++) {
        unsigned long t0 = ticks();
        for (long i = 0; i < n; i++)
            syscall(SYS_getpid);
        double t = (double)(ticks() - t0) / n;
        best = r == 0 || t < best ? t : best;
    }
    put(map, TGID, 0);
    bpf_link__destroy(l);
    printf("bench bpf %.1f entries %llu\n", best, (unsigned long long)get(map, ENTRIES));
    return 0;
}

/* fentry mode: OBJ's on_fentry (kbpf-fentry.bpf.c) attached through the
 * BPF trampoline, n read(2)s of size bytes; what it counted */
static int fentry(const char *path, long size, long n)
{
    struct bpf_object *obj = bpf_object__open_file(path, NULL);
    if (!obj)
        fail("cannot open", path, errno);
    if (bpf_object__load(obj))
        fail("cannot load", path, errno);
    struct bpf_program *p = bpf_object__find_program_by_name(obj, "on_fentry");
    struct bpf_map *counts = bpf_object__find_map_by_name(obj, "counts");
    if (!p || !counts) {
        fprintf(stderr, "kbpf: %s has not on_fentry and counts\n", path);
        return 1;
    }
    int map = bpf_map__fd(counts);
    struct bpf_link *l = bpf_program__attach(p);
    if (!l)
        fail("cannot attach the fentry program of", path, errno);
    watched_reads(map, size, n);
    bpf_link__destroy(l);
    printf("fentry entries %llu bytes %llu\n", (unsigned long long)get(map, ENTRIES),
           (unsigned long long)get(map, ENTRY_BYTES));
    bpf_object__close(obj);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[2], "fentry") == 0)
        return fentry(argv[1], atol(argv[3]), atol(argv[4]));
    if (argc != 5) {
        fprintf(stderr, "usage: kbpf OBJ SPEC SIZE|bench N\n");
        return 2;
    }
    char func[256];
    unsigned long off = 0;
    if (sscanf(argv[2], "%255[^+]+%li", func, &off) < 1) {
        fprintf(stderr, "kbpf: SPEC is FUNC or FUNC+0xOFF\n");
        return 2;
    }
    long size = atol(argv[3]), n = atol(argv[4]);
    int benching = strcmp(argv[3], "bench") == 0;
    if (benching)
        size = 1;
    if (size <= 0 || size > (long)sizeof buf || n < 0) {
        fprintf(stderr, "kbpf: SIZE must be 1 to %zu, N at least 0\n", sizeof buf);
        return 2;
    }
    struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
    if (!obj)
        fail("cannot open", argv[1], errno);
    if (bpf_object__load(obj))
        fail("cannot load", argv[1], errno);
    struct bpf_program *entry = bpf_object__find_program_by_name(obj, "on_entry");
    struct bpf_program *ret = bpf_object__find_program_by_name(obj, "on_return");
    struct bpf_map *counts = bpf_object__find_map_by_name(obj, "counts");
    if (!entry || !ret || !counts) {
        fprintf(stderr, "kbpf: %s has not on_entry, on_return and counts\n", argv[1]);
        return 1;
    }
    int map = bpf_map__fd(counts);
    if (benching)
        return bench(entry, map, func, n);
    printf("attach %s\n", access("/sys/bus/event_source/devices/kprobe/type", F_OK) ? "legacy" : "pmu");
    LIBBPF_OPTS(bpf_kprobe_opts, at, .offset = off);
    struct bpf_link *le = bpf_program__attach_kprobe_opts(entry, func, &at), *lr = NULL;
    if (!le)
        fail("cannot attach a kprobe program to", argv[2], errno);
    if (!off && !(lr = bpf_program__attach_kprobe(ret, true, func)))
        fail("cannot attach a kretprobe program to", func, errno);
    list_events();
    list_points(func);
    watched_reads(map, size, n);
    bpf_link__destroy(le);
    bpf_link__destroy(lr);  /* (NULL: nothing) */
    printf("entries %llu bytes %llu buf 0x%llx ip 0x%llx\n", (unsigned long long)get(map, ENTRIES),
           (unsigned long long)get(map, ENTRY_BYTES), (unsigned long long)get(map, LAST_BUF),
           (unsigned long long)get(map, FUNC_IP));
    if (lr)
        printf("returns %llu bytes %llu\n", (unsigned long long)get(map, RETURNS),
               (unsigned long long)get(map, RETURN_BYTES));
    printf("mine buf %p\n", (void *)buf);
    bpf_object__close(obj);
    return 0;
}
