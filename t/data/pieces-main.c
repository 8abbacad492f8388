/* t/pieces.t: pieces.S's jumped-to code, and a .cold piece GCC splits
 * off work() (its unlikely path calls a cold function). Threads, so that
 * first hits of threads (the runtime's slow path) happen in the pieces. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

long parent(long x);
static long noted;
__attribute__((cold, noinline)) void note(long x) { __atomic_add_fetch(&noted, x, __ATOMIC_RELAXED); }
__attribute__((noinline)) long work(long x, long *log)
{
    long a = x * 3, b = x ^ 0x55;
    if (__builtin_expect(x % 7 == 0, 0)) {
        log[0] += a;
        note(x);
        log[1] += b;
    }
    return a + b;
}

static void *run(void *arg)
{
    long n = (long)arg, s = 0, log[2] = { 0, 0 };
    for (long i = 1; i <= n; i++)
        s += parent(i) + work(i, log);
    return (void *)(s + log[0] * 3 + log[1] * 5);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100, total = 0;
    pthread_t t[4];
    for (int k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, run, (void *)(n + k));
    for (int k = 0; k < 4; k++) {
        void *r;
        pthread_join(t[k], &r);
        total += (long)r;
    }
    printf("total %ld noted %ld\n", total, noted);
    return 0;
}
