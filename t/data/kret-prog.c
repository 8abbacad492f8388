/*
 * Return probes (kretprobes) fixture. Bake with
 *   --probe 'square%return' --probe 'depth%return' --probe 'walk%return'
 *   --probe 'twin%return' --probe twin --probe 'skipper%return' --probe plain
 *   --probe 'leave%return' --probe 'short_inc%return'
 * Each mode prints one line the test compares; with no argument it prints
 * what the program computes (the same with and without probes).
 * Built with -mgeneral-regs-only: the handlers must not touch vector state.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kprewrite/kprobes.h>

#define NOINLINE __attribute__((noinline, noipa))
volatile long sink;

NOINLINE long square(long x) { return x * x; }
NOINLINE long plain(long x) { return x + 1; }
NOINLINE long twin(long x) { sink = x; return x * 3; }
NOINLINE long skipper(long x) { return x - 1; }
int short_inc(int x);   /* kret-asm.S: a jrcxz in its DCR, so int3 */

/* noreturn: a return probe here is refused */
NOINLINE __attribute__((noreturn)) void fatal(const char *why)
{
    fprintf(stderr, "fatal: %s\n", why);
    exit(3);
}

/* recursion that stays recursion at -O2 (the store after the call) */
NOINLINE long depth(long n)
{
    if (n == 0)
        return 0;
    long r = depth(n - 1);
    sink = r;
    return r + 1;
}

static jmp_buf jb;
static sigjmp_buf sjb;
enum { W_RETURN, W_LONGJMP, W_SIGNAL };
static void on_usr1(int sig) { (void)sig; siglongjmp(sjb, 1); }

NOINLINE long walk(long n, int how)
{
    if (n == 0) {
        if (how == W_LONGJMP)
            longjmp(jb, 1);
        if (how == W_SIGNAL)
            raise(SIGUSR1);
        return 0;
    }
    long r = walk(n - 1, how);
    sink = r;
    return r + 1;
}

/* ---- handlers ---- */
struct call { long arg; unsigned long sp; };
static long entries, returns, bad, twin_k;

static int sq_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    struct call *c = (struct call *)ri->data;
    c->arg = (long)regs->di;
    c->sp = regs->sp;
    __atomic_fetch_add(&entries, 1, __ATOMIC_RELAXED);
    return 0;
}

static int sq_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    struct call *c = (struct call *)ri->data;
    /* the return value, the real return address, the caller's sp after the
     * return, the data of this call's entry, the calling thread */
    if (regs_return_value(regs) != (unsigned long)(c->arg * c->arg) ||
        regs->ip != (unsigned long)ri->ret_addr || regs->sp != c->sp + 8 ||
        !pthread_equal(ri->thread, pthread_self()))
        __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
    if (c->arg == 7)
        regs->ax = 42;   /* a handler may change the return value */
    __atomic_fetch_add(&returns, 1, __ATOMIC_RELAXED);
    return 0;
}

static int count_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri; (void)regs;
    entries++;
    return 0;
}

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri; (void)regs;
    returns++;
    return 0;
}

static int twin_pre(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    if (regs->di == 5)
        twin_k++;
    return 0;
}

static int twin_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri;
    if (regs->ax == 15)
        returns++;
    return 0;
}

/* even arguments only: non-zero means no return hook for this call */
static int skip_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri;
    return regs->di & 1;
}

/* KRET_NO_ENTRY=1: the counting kretprobes have no entry_handler, so their
 * entries take the runtime's fast path (no pt_regs); entries stays 0 */
static int no_entry;
#define ENT(h) (no_entry ? NULL : (h))

/* threads without an entry_handler: what a return handler can check alone */
static int fast_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    unsigned long v = regs_return_value(regs), r = 0;
    while (r * r < v)
        r++;
    if (r * r != v || r >= 1024 || regs->ip != (unsigned long)ri->ret_addr ||
        !pthread_equal(ri->thread, pthread_self()) || ri->rp->handler != fast_ret)
        __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&returns, 1, __ATOMIC_RELAXED);
    return 0;
}

#define RP(name, sym, ent, ret, max, size) \
    struct kretprobe name = { .kp = { .symbol_name = sym }, .handler = ret, .entry_handler = ent, \
                              .maxactive = max, .data_size = size }

static int api(void)
{
    int rc, fails = 0;
#define CHECK(cond) do { if (!(cond)) { printf("failed: %s (line %d)\n", #cond, __LINE__); fails++; } } while (0)
    RP(sq, "square", sq_entry, sq_ret, 0, sizeof(struct call));
    CHECK((rc = register_kretprobe(&sq)) == 0);
    CHECK(sq.maxactive >= 10);              /* the documented default */
    for (long i = 0; i < 100; i++)
        sink = square(i);
    CHECK(entries == 100 && returns == 100 && bad == 0);
    CHECK(square(7) == 42);                 /* the handler's ax */
    CHECK(square(6) == 36);
    CHECK(disable_kretprobe(&sq) == 0);
    sink = square(3);
    CHECK(returns == 102);
    CHECK(enable_kretprobe(&sq) == 0);
    sink = square(3);
    CHECK(returns == 103 && bad == 0 && sq.nmissed == 0);
    unregister_kretprobe(&sq);
    sink = square(3);
    CHECK(returns == 103);

    /* a kprobe and a kretprobe on one function both run */
    struct kprobe tk = { .symbol_name = "twin", .pre_handler = twin_pre };
    RP(tr, "twin", NULL, twin_ret, 0, 0);
    returns = 0;
    CHECK(register_kprobe(&tk) == 0);
    CHECK(register_kretprobe(&tr) == 0);
    CHECK(twin(5) == 15);
    CHECK(twin_k == 1 && returns == 1);
    unregister_kprobe(&tk);
    CHECK(twin(5) == 15 && twin_k == 1 && returns == 2);
    unregister_kretprobe(&tr);

    /* entry_handler != 0: no return handler for that call */
    RP(sk, "skipper", skip_entry, count_ret, 0, 0);
    returns = 0;
    CHECK(register_kretprobe(&sk) == 0);
    for (long i = 0; i < 10; i++)
        sink = skipper(i);
    CHECK(returns == 5 && sk.nmissed == 0);
    unregister_kretprobe(&sk);

    /* errors */
    RP(np, "plain", NULL, count_ret, 0, 0);
    CHECK(register_kretprobe(&np) == -ENOENT);    /* baked as a kprobe only */
    RP(off, "square", NULL, count_ret, 0, 0);
    off.kp.offset = 1;                            /* not the entry (+4 is, after an endbr64) */
    CHECK(register_kretprobe(&off) == -EINVAL);
    RP(both, "square", NULL, count_ret, 0, 0);
    both.kp.addr = (void *)square;
    CHECK(register_kretprobe(&both) == -EINVAL);
    RP(nosuch, "no_such_function", NULL, count_ret, 0, 0);
    CHECK(register_kretprobe(&nosuch) == -ENOENT);
    /* batch: the second fails, the first is rolled back */
    RP(b1, "square", NULL, count_ret, 0, 0);
    struct kretprobe *batch[] = { &b1, &np };
    CHECK(register_kretprobes(batch, 2) == -ENOENT);
    returns = 0;
    sink = square(2);
    CHECK(returns == 0);
    /* rolled back; as in the kernel, kp.addr stays set, so the same struct
     * registers again only with addr cleared */
    CHECK(b1.kp.addr != NULL);
    CHECK(register_kretprobe(&b1) == -EINVAL);
    b1.kp.addr = NULL;
    CHECK(register_kretprobe(&b1) == 0);
    sink = square(2);
    CHECK(returns == 1);
    /* no entry_handler (the runtime's fast entry): disable and enable */
    CHECK(disable_kretprobe(&b1) == 0);
    CHECK(square(9) == 81 && returns == 1);
    CHECK(enable_kretprobe(&b1) == 0);
    CHECK(square(9) == 81 && returns == 2 && b1.nmissed == 0);
    unregister_kretprobe(&b1);
    return fails;
}

/* recursion deeper than maxactive: every call is live at once */
static void recurse(void)
{
    RP(rp, "depth", ENT(count_entry), count_ret, 5, 0);
    int rc = register_kretprobe(&rp);
    long v = depth(20);
    v += depth(20);
    printf("recurse rc %d value %ld returns %ld entries %ld nmissed %d\n", rc, v, returns, entries, rp.nmissed);
    unregister_kretprobe(&rp);
}

static void *thread_main(void *arg)
{
    (void)arg;
    for (long i = 0; i < 100000; i++)
        sink = square(i & 1023);
    return NULL;
}

static void threads(void)
{
    RP(sq, "square", ENT(sq_entry), no_entry ? fast_ret : sq_ret, 0, sizeof(struct call));
    int rc = register_kretprobe(&sq);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("threads rc %d returns %ld bad %ld nmissed %d\n", rc, returns, bad, sq.nmissed);
    unregister_kretprobe(&sq);
}

/* An instance cached by an idle thread is taken by another that needs it:
 * maxactive 2, one cached in the idle thread, two nested calls here. */
static pthread_barrier_t bar;
static void *idle_thread(void *arg)
{
    (void)arg;
    sink = depth(0);
    pthread_barrier_wait(&bar);   /* called once; now idle */
    pthread_barrier_wait(&bar);
    return NULL;
}

static void steal(void)
{
    RP(rp, "depth", NULL, count_ret, 2, 0);
    int rc = register_kretprobe(&rp);
    pthread_t t;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&t, NULL, idle_thread, NULL);
    pthread_barrier_wait(&bar);
    long v = depth(1);
    pthread_barrier_wait(&bar);
    pthread_join(t, NULL);
    printf("steal rc %d value %ld returns %ld nmissed %d\n", rc, v, returns, rp.nmissed);
    unregister_kretprobe(&rp);
}

/* longjmp / siglongjmp out of 4 return-probed frames, 1000 times, with
 * instances for 5 calls: the abandoned ones must come back */
static void jumps(int how)
{
    RP(rp, "walk", ENT(count_entry), count_ret, 5, 0);
    int rc = register_kretprobe(&rp);
    signal(SIGUSR1, on_usr1);
    volatile int left = 1000;
    if (how == W_LONGJMP)
        setjmp(jb);
    else
        sigsetjmp(sjb, 1);
    if (left-- > 0)
        walk(3, how);
    long v = walk(3, W_RETURN);
    printf("%s rc %d value %ld returns %ld entries %ld nmissed %d\n", how == W_LONGJMP ? "longjmp" : "siglongjmp",
           rc, v, returns, entries, rp.nmissed);
    unregister_kretprobe(&rp);
}

/* pthread_exit inside return-probed frames: the instances come back */
NOINLINE long leave(long n, int quit)
{
    if (n == 0) {
        if (quit)
            pthread_exit(NULL);
        return 0;
    }
    long r = leave(n - 1, quit);
    sink = r;
    return r + 1;
}

static void *leaver(void *arg)
{
    (void)arg;
    leave(2, 1);
    return NULL;
}

static void exits(void)
{
    RP(rp, "leave", ENT(count_entry), count_ret, 3, 0);
    int rc = register_kretprobe(&rp);
    for (int i = 0; i < 10; i++) {
        pthread_t t;
        pthread_create(&t, NULL, leaver, NULL);
        pthread_join(t, NULL);
    }
    long v = leave(2, 0);
    printf("pthread_exit rc %d value %ld returns %ld entries %ld nmissed %d\n", rc, v, returns, entries, rp.nmissed);
    unregister_kretprobe(&rp);
}

/* A tail call between two return-probed functions (from an optimized
 * probe and from an int3 one): the inner call returns into the outer's
 * hook, both handlers run, and the inner's sees the real return address
 * (the outer's), not the hook. data[0] says whose instance it is. */
long tail_outer(long), tail_outer3(long), tail_inner(long);
static unsigned long tail_ip[2], inner_ip[3];
static long tail_ret[3], tail_bad;
static int tail_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    int who = ri->data[0];
    tail_ret[who]++;
    if (who < 2) {   /* an outer call's return address never changes */
        tail_bad += tail_ip[who] && tail_ip[who] != regs->ip;
        tail_ip[who] = regs->ip;
        return 0;
    }
    int k = 0;
    while (k < 3 && inner_ip[k] && inner_ip[k] != regs->ip)
        k++;
    if (k == 3)
        tail_bad++;
    else
        inner_ip[k] = regs->ip;
    return 0;
}
static int tail_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)regs;
    ri->data[0] = (char)(ri->rp->data_size - 1);   /* 1, 2, 3 bytes: 0, 1, 2 */
    return 0;
}
__attribute__((noinline)) static long call_outer(long i) { return tail_outer(i) + 1; }
__attribute__((noinline)) static long call_outer3(long i) { return tail_outer3(i) + 1; }
static void tailcall(void)
{
    struct kretprobe o = { .kp.symbol_name = "tail_outer", .entry_handler = tail_entry, .handler = tail_handler,
                           .data_size = 1 };
    struct kretprobe o3 = { .kp.symbol_name = "tail_outer3", .entry_handler = tail_entry, .handler = tail_handler,
                            .data_size = 2 };
    struct kretprobe in = { .kp.symbol_name = "tail_inner", .entry_handler = tail_entry, .handler = tail_handler,
                            .data_size = 3 };
    int rc = register_kretprobe(&o) | register_kretprobe(&o3) | register_kretprobe(&in);
    long v = 0;
    for (long i = 0; i < 1000; i++)
        v += call_outer(i) + call_outer3(i);
    /* the inner calls' return addresses: exactly the two outer ones */
    int same = !inner_ip[2] && ((inner_ip[0] == tail_ip[0] && inner_ip[1] == tail_ip[1]) ||
                                (inner_ip[0] == tail_ip[1] && inner_ip[1] == tail_ip[0]));
    printf("tailcall rc %d value %ld returns %ld %ld %ld bad %ld inner ips are the outer ones %d nmissed %d\n", rc, v,
           tail_ret[0], tail_ret[1], tail_ret[2], tail_bad, same, o.nmissed + o3.nmissed + in.nmissed);
    unregister_kretprobe(&o);
    unregister_kretprobe(&o3);
    unregister_kretprobe(&in);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *ne = getenv("KRET_NO_ENTRY");
    no_entry = ne && *ne == '1';
    if (!strcmp(mode, "api")) {
        int fails = api();
        printf(fails ? "api failed\n" : "api ok\n");
    } else if (!strcmp(mode, "recurse")) {
        recurse();
    } else if (!strcmp(mode, "threads")) {
        threads();
    } else if (!strcmp(mode, "longjmp")) {
        jumps(W_LONGJMP);
    } else if (!strcmp(mode, "siglongjmp")) {
        jumps(W_SIGNAL);
    } else if (!strcmp(mode, "steal")) {
        steal();
    } else if (!strcmp(mode, "pthread_exit")) {
        exits();
    } else if (!strcmp(mode, "tailcall")) {
        tailcall();
    } else if (!strcmp(mode, "int3")) {
        RP(rp, "short_inc", NULL, count_ret, 0, 0);
        int rc = register_kretprobe(&rp);
        long v = 0;
        for (int i = 0; i < 1000; i++)
            v += short_inc(i);
        printf("int3 rc %d value %ld returns %ld nmissed %d\n", rc, v, returns, rp.nmissed);
    } else if (!strcmp(mode, "serve") && argc > 2) {
        /* for the control directory: 6 entries, 4 without an instance */
        RP(rp, "depth", NULL, count_ret, 2, 0);
        int rc = register_kretprobe(&rp);
        sink = depth(5);
        while (access(argv[2], F_OK) != 0)
            usleep(10000);
        printf("serve rc %d returns %ld nmissed %d\n", rc, returns, rp.nmissed);
    } else if (!strcmp(mode, "fatal")) {
        fatal("asked to");
    } else if (!strcmp(mode, "shstk")) {
        RP(rp, "square", NULL, count_ret, 0, 0);
        printf("shstk rc %d\n", register_kretprobe(&rp));
    } else {
        long s = 0;
        for (long i = 0; i < 50; i++)
            s += square(i) + plain(i) + twin(i) + skipper(i) + depth(i % 7) + walk(i % 5, W_RETURN) + leave(i % 3, 0) + short_inc((int)i);
        printf("sum %ld\n", s);
    }
    return 0;
}
