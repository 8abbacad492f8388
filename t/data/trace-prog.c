/* t/trace.t's program: functions whose arguments the events fetch, called
 * a known number of times; a mode a word: plain N, threads T N, fork N,
 * wait N (outer(N) for each line "go" on stdin, until "exit": the test
 * steers it through the control directory meanwhile). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct item {
    long id;
    const char *name;
    unsigned char bytes[4];
    short neg;
};
long trace_global = 0x1234;
struct item trace_item = { 7, "seven", { 1, 2, 250, 4 }, -5 };
char trace_name[] = "named";   /* a string at an address (@trace_name:string) */

__attribute__((noinline)) long work(long a, const char *s, struct item *it, long d)
{
    __asm__ volatile("" ::: "memory");
    return a + (long)strlen(s) + (it ? it->id : 0) + d;
}

__attribute__((noinline)) long many(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8)
{
    __asm__ volatile("" ::: "memory");
    return a1 + a2 + a3 + a4 + a5 + a6 + a7 * 100 + a8 * 1000;
}

__attribute__((noinline)) long outer(long n)
{
    long t = 0;
    for (long i = 0; i < n; i++)
        t += work(i, i % 2 ? "odd" : "even", i == 2 ? NULL : &trace_item, i * 3);
    return t;
}

static long per_thread;
static void *thread_main(void *arg)
{
    (void)arg;
    long t = 0;
    for (long i = 0; i < per_thread; i++)
        t += work(i, "thr", &trace_item, 1);
    return (void *)t;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    long n = argc > 2 ? atol(argv[2]) : 5;
    if (!strcmp(mode, "threads")) {
        int nt = (int)n;
        per_thread = argc > 3 ? atol(argv[3]) : 1000;
        pthread_t th[64];
        for (int i = 0; i < nt && i < 64; i++)
            pthread_create(&th[i], NULL, thread_main, NULL);
        for (int i = 0; i < nt && i < 64; i++)
            pthread_join(th[i], NULL);
        printf("threads %d x %ld\n", nt, per_thread);
        return 0;
    }
    if (!strcmp(mode, "fork")) {
        pid_t p = fork();
        long t = outer(p == 0 ? n + 1 : n);   /* the child calls once more */
        if (p == 0)
            _exit(0);
        waitpid(p, NULL, 0);
        printf("%ld\n", t);
        return 0;
    }
    if (!strcmp(mode, "wait")) {   /* outer(n) for each line "go", until "exit" */
        char line[16];
        while (fgets(line, sizeof line, stdin) && strcmp(line, "exit\n")) {
            printf("%ld\n", outer(n));
            fflush(stdout);
        }
        return 0;
    }
    long t = outer(n) + many(1, 2, 3, 4, 5, 6, 7, 8);
    printf("%ld\n", t);
    return 0;
}
