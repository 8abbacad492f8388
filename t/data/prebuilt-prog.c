/* A program built without the runtime, for t/prebuilt.t: a known number of
 * calls to each function, threads, and a deterministic output. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long mix(long a, long b) { return a * 31 + (b ^ (a >> 3)); }
__attribute__((noinline)) int classify(int c) { return c < 10 ? 0 : c < 100 ? 1 : 2; }
__attribute__((noinline)) long work(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s = mix(s, i) % 1000003;
    return s;
}
static void *thread_main(void *arg)
{
    long *out = arg;
    for (int i = 0; i < 25000; i++)
        *out += classify(i % 200);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    printf("work %ld\n", work(n));
    pthread_t th[4];
    long sums[4] = { 0 };
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, &sums[i]);
    long total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += sums[i];
    }
    printf("classes %ld\n", total);
    char buf[64];
    snprintf(buf, sizeof buf, "%d-%s", n, argc > 2 ? argv[2] : "x");
    printf("%s %zu\n", buf, strlen(buf));
    return 0;
}
