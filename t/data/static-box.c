/* A busybox-like program for t/static.t, built static (glibc -static,
 * -static-pie, musl -static): applets chosen by argv[0]'s name or the
 * first argument, getopt, stdio, fork and exec of itself, signals, and a
 * server that reads commands from a pipe so that the test steers it
 * without sleeping. tick() and raw_getpid() are called a known number of
 * times; raw_getpid's first instructions hold a syscall, so that its
 * probe is an int3 probe; trap makes a SIGTRAP of the program's own;
 * tinystack ends the program on a stack of a few hundred bytes. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

long raw_getpid(void);
__asm__(".text\n.globl raw_getpid\n.type raw_getpid,@function\nraw_getpid:\n"
        "xor %eax,%eax\nmov $39,%al\nsyscall\nret\n.size raw_getpid,.-raw_getpid\n");

static const char *self;
static volatile sig_atomic_t got;

__attribute__((noinline)) long tick(long x) { return x * 3 + 1; }

/* word(w, n, p): w's length (p holds n and w again), or n when n < 0 (w
 * and p are not read then: the words applet passes an address nothing
 * maps, for an event's (fault)) */
struct pair { long n; const char *w; };
__attribute__((noinline)) long word(const char *w, long n, const struct pair *p)
{
    return n < 0 ? n : (long)strlen(p->w) + (p->n - n) + (long)(w - p->w);
}

static int ap_echo(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    return 0;
}

static int ap_cat(int argc, char **argv)
{
    (void)argc; (void)argv;
    char line[256];
    unsigned n = 0;
    while (fgets(line, sizeof line, stdin))
        printf("%4u %s", ++n, line);
    return 0;
}

static int ap_count(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10, s = 0;
    for (long i = 0; i < n; i++)
        s += tick(i) % 7;
    printf("count %ld sum %ld\n", n, s);
    return 0;
}

static int ap_opts(int argc, char **argv)
{
    int c, a = 0;
    const char *b = "-";
    while ((c = getopt(argc, argv, "ab:")) != -1) {
        if (c == 'a')
            a++;
        else if (c == 'b')
            b = optarg;
        else
            return 2;
    }
    printf("a=%d b=%s rest=%d\n", a, b, argc - optind);
    return 0;
}

static int ap_spawn(int argc, char **argv)
{
    (void)argc; (void)argv;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, "static-box", "echo", "from", "the", "child", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

static void on_usr1(int sig) { got = sig; }

static int ap_sig(int argc, char **argv)
{
    (void)argc; (void)argv;
    struct sigaction sa = { .sa_handler = on_usr1 };
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    printf("signal %d handled\n", (int)got);
    return 0;
}

static int ap_rawpid(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10, same = 0;
    for (long i = 0; i < n; i++)
        same += raw_getpid() == getpid();
    printf("rawpid %ld of %ld\n", same, n);
    return 0;
}

/* A SIGTRAP of the program's own (an int3 of its own, or raised): it must
 * end the program as it does without the runtime */
static int ap_trap(int argc, char **argv)
{
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "raise") == 0)
        raise(SIGTRAP);
    else
        __asm__ volatile("int3");
    printf("still here\n");
    return 0;
}

/* A SIGTRAP handler of the program's own, then raw_getpid (an int3 probe
 * until then) and a trap of its own */
static volatile sig_atomic_t own_traps;
static void on_trap(int sig) { (void)sig; own_traps++; }

static int ap_ownsig(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5, same = 0;
    struct sigaction sa = { .sa_handler = on_trap };
    sigaction(SIGTRAP, &sa, NULL);
    for (long i = 0; i < n; i++)
        same += raw_getpid() == getpid();
    raise(SIGTRAP);
    printf("rawpid %ld of %ld, own traps %d\n", same, n, (int)own_traps);
    return 0;
}

/* _exit(7) on a stack of 640 bytes above a page nothing may touch, as a
 * goroutine's stack may be when a Go program exits: the runtime's report
 * at _exit must not run on it (it needs more) */
static void exit_now(void) { _exit(7); }

static int ap_tinystack(int argc, char **argv)
{
    (void)argc; (void)argv;
    fflush(stdout);
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE) != 0)
        return 1;
    char *top = m + 4096 + 640;   /* 16-aligned */
    __asm__ volatile("mov %0, %%rsp\n\tcall *%1" : : "r"(top), "r"(exit_now) : "memory");
    __builtin_unreachable();
}

/* words W...: word() on each (its length, its index, a pair), then once
 * on an address nothing maps */
static int ap_words(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct pair p = { i, argv[i] };
        total += word(argv[i], i, &p);
    }
    total += word((const char *)16, -1, NULL);
    printf("words %d letters %ld\n", argc - 1, total + 1);
    return 0;
}

/* Reads "tick N", "ownsig" (a SIGTRAP handler of its own) and "quit"
 * from stdin; answers each line once it is done. */
static int ap_serve(int argc, char **argv)
{
    (void)argc; (void)argv;
    char line[64];
    long total = 0;
    while (fgets(line, sizeof line, stdin) && strncmp(line, "quit", 4) != 0) {
        if (strncmp(line, "ownsig", 6) == 0) {
            struct sigaction sa = { .sa_handler = on_trap };
            sigaction(SIGTRAP, &sa, NULL);
        }
        long n = strncmp(line, "tick ", 5) == 0 ? atol(line + 5) : 0;
        for (long i = 0; i < n; i++)
            total += tick(i) > 0;
        printf("done %ld\n", total);
        fflush(stdout);
    }
    return 0;
}

static const struct applet {
    const char *name;
    int (*run)(int, char **);
} applets[] = {
    { "echo", ap_echo }, { "cat", ap_cat }, { "count", ap_count }, { "opts", ap_opts },
    { "spawn", ap_spawn }, { "sig", ap_sig }, { "rawpid", ap_rawpid }, { "serve", ap_serve },
    { "trap", ap_trap }, { "ownsig", ap_ownsig }, { "tinystack", ap_tinystack },
    { "words", ap_words },
};

int main(int argc, char **argv)
{
    self = argv[0];
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    for (int shift = 0; shift < 2 && argc > 0; shift++, argc--, argv++, base = argv[0])
        for (size_t i = 0; i < sizeof applets / sizeof applets[0]; i++)
            if (strcmp(base, applets[i].name) == 0)
                return applets[i].run(argc, argv);
    fprintf(stderr, "static-box: no such applet\n");
    return 1;
}
