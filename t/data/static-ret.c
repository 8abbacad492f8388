/* Return events in a static program (t/static.t): functions whose calls
 * the static runtime hooks, each applet calling them a known number of
 * times, and printing what they returned (a hooked call must return what
 * it would have: every register, xmm0 included).
 *
 *   types N      ret_int (negative on odd calls), ret_long, ret_str,
 *                ret_double and ret_pair (rax:rdx), N calls each
 *   slow N MS    slow(), which sleeps MS ms, N times
 *   rec D        rec(), recursive, D calls deep (D returns)
 *   jump N       N times: 6 nested hooked calls, the last longjmps out of
 *                them all; then ret_int 3 times
 *   threads T N  T threads, each calling ret_long N times
 *   texit        a thread ends by pthread_exit inside a hooked call
 *   fork N       ret_int N times, then in_fork() forks inside a hooked
 *                call: parent and child each return from it
 *   bt           backtrace() inside two nested hooked calls (glibc):
 *                the frames it finds
 *   serve        reads lines from stdin: "call N" calls ret_int N times
 *                and answers "done TOTAL"; "quit" ends it */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <execinfo.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct pair { long a, b; };

__attribute__((noinline)) int ret_int(int i) { return i % 2 ? -i : i * 10; }
__attribute__((noinline)) long ret_long(long i) { return i * 1000003L; }
__attribute__((noinline)) const char *ret_str(int i) { return i % 2 ? "odd" : "even"; }
__attribute__((noinline)) double ret_double(int i) { return i * 1.5 + 0.25; }
__attribute__((noinline)) struct pair ret_pair(long i) { return (struct pair){ i + 7, i * 11 }; }

__attribute__((noinline)) int slow(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    return ms;
}

__attribute__((noinline)) long rec(long d)
{
    if (d <= 1)
        return 1;
    long r = rec(d - 1) + 1;
    __asm__ volatile("" : : : "memory");   /* not a tail call */
    return r;
}

static jmp_buf env;

__attribute__((noinline)) int deep(int d)
{
    if (d == 0)
        longjmp(env, 1);
    int r = deep(d - 1) + 1;
    __asm__ volatile("" : : : "memory");
    return r;
}

static void *thread_main(void *arg)
{
    long n = (long)arg, sum = 0;
    for (long i = 0; i < n; i++)
        sum += ret_long(i) % 5;
    return (void *)sum;
}

__attribute__((noinline)) int ends_thread(int code)
{
    if (code > 0)
        pthread_exit((void *)(long)code);
    return code;
}

static void *exit_main(void *arg)
{
    (void)arg;
    ends_thread(42);
    return NULL;
}

__attribute__((noinline)) int in_fork(void)
{
    pid_t pid = fork();
    if (pid == 0)
        return 0;
    int st = 0;
    waitpid(pid, &st, 0);
    return WEXITSTATUS(st);
}

__attribute__((noinline)) int frames(void)
{
#ifdef __GLIBC__
    void *pcs[64];
    int n = backtrace(pcs, 64);
#else
    int n = -1;
#endif
    __asm__ volatile("" : : : "memory");
    return n;
}

__attribute__((noinline)) int outer(void)
{
    int n = frames() + 100;
    __asm__ volatile("" : : : "memory");
    return n;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    long n = argc > 2 ? atol(argv[2]) : 1, m = argc > 3 ? atol(argv[3]) : 1;
    if (!strcmp(cmd, "types")) {
        long si = 0, sl = 0, ss = 0, pa = 0, pb = 0;
        double sd = 0;
        for (int i = 0; i < n; i++) {
            si += ret_int(i);
            sl += ret_long(i);
            ss += (long)strlen(ret_str(i));
            sd += ret_double(i);
            struct pair p = ret_pair(i);
            pa += p.a;
            pb += p.b;
        }
        printf("types %ld %ld %ld %.2f %ld %ld\n", si, sl, ss, sd, pa, pb);
    } else if (!strcmp(cmd, "slow")) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s += slow((int)m);
        printf("slow %ld\n", s);
    } else if (!strcmp(cmd, "rec")) {
        printf("rec %ld\n", rec(n));
    } else if (!strcmp(cmd, "jump")) {
        volatile int jumped = 0;
        for (int i = 0; i < n; i++)
            if (setjmp(env) == 0)
                deep(5);
            else
                jumped++;
        int s = 0;
        for (int i = 1; i <= 3; i++)
            s += ret_int(i);
        printf("jump %d %d\n", jumped, s);
    } else if (!strcmp(cmd, "threads")) {
        pthread_t t[16];
        long sum = 0;
        for (long i = 0; i < n && i < 16; i++)
            pthread_create(&t[i], NULL, thread_main, (void *)m);
        for (long i = 0; i < n && i < 16; i++) {
            void *r;
            pthread_join(t[i], &r);
            sum += (long)r;
        }
        printf("threads %ld\n", sum);
    } else if (!strcmp(cmd, "texit")) {
        pthread_t t;
        void *r;
        pthread_create(&t, NULL, exit_main, NULL);
        pthread_join(t, &r);
        printf("texit %ld %d\n", (long)r, ret_int(4));
    } else if (!strcmp(cmd, "fork")) {
        int s = 0;
        for (int i = 0; i < n; i++)
            s += ret_int(i);
        fflush(stdout);
        int r = in_fork();   /* the child's 0, or the parent's: the child's exit status, 3 */
        printf("%s %d %d\n", r ? "parent" : "child", s, r);
        fflush(stdout);
        _exit(r ? 0 : 3);
    } else if (!strcmp(cmd, "bt")) {
        printf("bt %d\n", outer());
    } else if (!strcmp(cmd, "serve")) {
        char line[64];
        long total = 0;
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof line, stdin)) {
            if (!strncmp(line, "quit", 4))
                break;
            long k = atol(line + 5);
            for (long i = 0; i < k; i++)
                total += ret_int((int)i);
            printf("done %ld\n", total);
        }
    } else {
        fprintf(stderr, "static-ret: no such applet '%s'\n", cmd);
        return 2;
    }
    return 0;
}
