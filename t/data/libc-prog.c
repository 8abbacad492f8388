/*
 * A program run on a copy of libc with probes baked into its allocator and
 * locks (t/libc.t). Its own kprobes count malloc and free calls from 4
 * threads; the runtime calls those same functions for itself (counters,
 * registration, the control directory, thread exit) and must neither
 * deadlock nor run handlers there. Prints what it computed; with `stats`
 * the handler counts against the calls it made; with `serve FILE` it keeps
 * its threads allocating until FILE exists (the control directory is read
 * meanwhile), then does the same.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <kprewrite/kprobes.h>

#define THREADS 4
#define CALLS 20000
static long handled_malloc, handled_free;
static __thread long mine;   /* this thread's malloc hits seen by the handler */

static int on_malloc(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    if (regs->di == 4242)   /* the size our threads ask for */
        mine++;
    __atomic_fetch_add(&handled_malloc, 1, __ATOMIC_RELAXED);
    return 0;
}

static int on_free(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp; (void)regs;
    __atomic_fetch_add(&handled_free, 1, __ATOMIC_RELAXED);
    return 0;
}

static long exact_bad;
/* through pointers, so the compiler keeps every call */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *work(void *arg)
{
    long sum = 0;
    for (int i = 0; i < CALLS; i++) {
        char *p = do_malloc(4242);
        p[0] = (char)i;
        sum += p[0];
        do_free(p);
    }
    if (arg && mine != CALLS)
        __atomic_fetch_add(&exact_bad, 1, __ATOMIC_RELAXED);
    return (void *)sum;
}

int main(int argc, char **argv)
{
    int serve = argc > 2 && strcmp(argv[1], "serve") == 0;
    int stats = serve || (argc > 1 && strcmp(argv[1], "stats") == 0);
    static struct kprobe km = { .symbol_name = "malloc", .pre_handler = on_malloc };
    static struct kprobe kf = { .symbol_name = "free", .pre_handler = on_free };
    int rc1 = 0, rc2 = 0;
    if (stats) {
        rc1 = register_kprobe(&km);
        rc2 = register_kprobe(&kf);
    }
    pthread_t t[THREADS];
    long total = 0;
    while (serve && access(argv[2], F_OK) != 0) {
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, work, (void *)1);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, stats ? (void *)1 : NULL);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("sum %ld\n", total);
    if (stats) {
        unregister_kprobe(&km);
        unregister_kprobe(&kf);
        printf("stats rc %d %d malloc>=calls %d free>=calls %d exact-per-thread-bad %ld\n", rc1, rc2,
               handled_malloc >= THREADS * CALLS, handled_free >= THREADS * CALLS, exact_bad);
    }
    return 0;
}
