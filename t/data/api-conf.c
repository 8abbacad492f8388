/*
 * The kprobes API against the kernel's (t/api-conformance.t): each check
 * is one line, "ok - WHAT: kernel ANSWER" or "not ok - ...", written from
 * Documentation/trace/kprobes.rst, the legacy documents (jprobes,
 * fault_handler) and kernel/kprobes.c. Bake with the --probe list of
 * t/api-conformance.t. Built with -mgeneral-regs-only (handlers on
 * detours must leave the vector registers alone); api-conf-fp.c has what
 * needs floating point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kprewrite/ctl.h>
#include <kprewrite/kprobes.h>

#define NOINLINE __attribute__((noinline, noipa))
static int checks, failed;
#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        checks++;                                                                                           \
        int ok_ = !!(cond);                                                                                 \
        failed += !ok_;                                                                                     \
        printf("%sok - ", ok_ ? "" : "not ");                                                               \
        printf(__VA_ARGS__);                                                                                \
        printf("\n");                                                                                       \
        fflush(stdout);                                                                                     \
    } while (0)

volatile long sink;
static volatile unsigned long one = 1;   /* no SYM + 1 constant for the rewriter to see taken */

/* ---- probed functions (and f_unbaked, never baked) ---- */
NOINLINE long f_opt(long x) { sink = x; return x * 2 + 1; }
NOINLINE long f_opt2(long x) { sink = x; return x * 3 + 1; }
NOINLINE long f_alt(long x) { sink = x; return x + 1000; }
NOINLINE long f_unbaked(long x) { sink = x; return x - 1; }
NOINLINE long f_hang(long x) { sink = x; return x + 7; }
NOINLINE long f_race(long x) { sink = x; return x ^ 5; }
NOINLINE long f_ret(long x) { sink = x; return x * 5; }
NOINLINE long f_plain(long x) { sink = x; return x + 2; }
NOINLINE long f_deep(long n) { if (n <= 0) return 0; long r = f_deep(n - 1); sink = r; return r + 1; }
NOINLINE long kr_mid(long x, void (*cb)(void)) { sink = x; cb(); return x + 11; }
NOINLINE long f_fault(long x) { sink = x; return x + 3; }
NOINLINE long jp_fn(long a, long b, long c, long d, long e, long f, long g, long h)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
NOINLINE long my_do_fork(unsigned long clone_flags, unsigned long stack_start, void *regs, unsigned long stack_size,
                         int *parent_tidptr, int *child_tidptr)
{
    sink = (long)(clone_flags + stack_start + stack_size) + (regs != 0) + (parent_tidptr != 0) + (child_tidptr != 0);
    return 4321;
}
long f_int3(long a, long b);
long step_fn(long x);
long jcc_fn(long x);
int load_fn(int *p);
long past_a(void), past_b(void);
double jp_dbl(double x, double y);                 /* api-conf-fp.c */
int jp_dbl_check(void);

/* The line of sym+0x0 in this process's control directory's list ("" if
 * none; NULL without a control directory). */
static const char *list_line(const char *sym)
{
    static char buf[65536];
    char base[2048], path[4096], want[256];
    kprewrite_ctl_base(base, sizeof base);
    snprintf(path, sizeof path, "%s/%d/list", base, (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    snprintf(want, sizeof want, "  %s+0x0  ", sym);
    char *l = strstr(buf, want);
    if (!l)
        return "";
    while (l > buf && l[-1] != '\n')
        l--;
    *strchrnul(l, '\n') = 0;
    return l;
}

static long hits_of(const char *sym)
{
    struct kprewrite_point_stats st;
    return kprewrite_point_stats(sym, 0, &st) == 0 ? (long)st.hits : -1;
}

/* ---- handlers ---- */
static unsigned long seen_ip, seen_flags_arg = 99;
static int order[8], norder, pre_calls, post_calls;
static struct kprobe *seen_p;

static int pre_ip(struct kprobe *p, struct pt_regs *r) { seen_p = p; seen_ip = r->ip; pre_calls++; return 0; }
static int pre_a(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; order[norder++] = 'a'; return 0; }
static int pre_b(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; order[norder++] = 'b'; return 0; }
static int pre_c(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; order[norder++] = 'c'; return 0; }
static int pre_count(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; pre_calls++; return 0; }
/* as kprobes.rst's "Changing Execution Path": ip set, return !0 */
static int pre_redirect(struct kprobe *p, struct pt_regs *r)
{
    (void)p;
    order[norder++] = 'r';
    r->ip = (unsigned long)f_alt;
    return 1;
}
static int pre_ip_only(struct kprobe *p, struct pt_regs *r) { (void)p; r->ip = (unsigned long)f_alt; return 0; }
static void post_ip(struct kprobe *p, struct pt_regs *r, unsigned long flags)
{
    (void)p;
    seen_ip = r->ip;
    seen_flags_arg = flags;
    post_calls++;
}
static void post_empty(struct kprobe *p, struct pt_regs *r, unsigned long flags) { (void)p, (void)r, (void)flags; }
static void post_redirect(struct kprobe *p, struct pt_regs *r, unsigned long flags)
{
    (void)p, (void)flags;
    r->ip = (unsigned long)f_alt;
    r->di = 5;
    post_calls++;
}

/* ================= registration ================= */
static char data_obj[64];

static void registration(void)
{
    CHECK(register_kprobe(NULL) == -EINVAL, "register_kprobe(NULL): kernel -EINVAL");
    struct kprobe both = { .symbol_name = "f_opt", .addr = (void *)f_opt, .pre_handler = pre_count };
    CHECK(register_kprobe(&both) == -EINVAL, "symbol_name and addr both set: kernel -EINVAL");
    struct kprobe neither = { .pre_handler = pre_count };
    CHECK(register_kprobe(&neither) == -EINVAL, "neither symbol_name nor addr: kernel -EINVAL");
    struct kprobe unknown = { .symbol_name = "no_such_symbol_anywhere", .pre_handler = pre_count, .flags = 1u << 30 };
    CHECK(register_kprobe(&unknown) == -ENOENT, "an unknown symbol: kernel -ENOENT");
    CHECK(unknown.addr == NULL && unknown.flags == 1u << 30 && unknown.__point == NULL,
          "a failed registration leaves the kprobe as it was (addr, flags)");
    struct kprobe data = { .addr = data_obj, .pre_handler = pre_count };
    CHECK(register_kprobe(&data) == -EINVAL, "an address outside code: kernel -EINVAL (not kernel text)");
    struct kprobe unbaked = { .addr = (void *)f_unbaked, .pre_handler = pre_count };
    CHECK(register_kprobe(&unbaked) == -ENOENT, "code where no probe was baked: -ENOENT (the kernel probes any instruction)");
    struct kprobe mid = { .symbol_name = "step_fn", .offset = 1, .pre_handler = pre_count };
    CHECK(register_kprobe(&mid) == -EILSEQ, "an offset inside an instruction: kernel -EILSEQ");
    /* past the end of past_a lies past_b: the kernel takes what is there */
    struct kprobe past = { .symbol_name = "past_a", .offset = (unsigned)((char *)past_b - (char *)past_a),
                           .pre_handler = pre_count };
    int rc = register_kprobe(&past);
    pre_calls = 0;
    long v = past_b();
    CHECK(rc == 0 && past.addr == (void *)past_b && pre_calls == 1 && v == 2,
          "symbol + an offset past its end names the next function's entry: kernel 0, addr there (rc %d)", rc);
    unregister_kprobe(&past);
    struct kprobe far = { .symbol_name = "past_b", .offset = 1u << 20, .pre_handler = pre_count };
    CHECK(register_kprobe(&far) == -ENOENT, "an offset far past any function: kernel -ENOENT");
    struct kprobe addroff = { .addr = (void *)past_a, .offset = (unsigned)((char *)past_b - (char *)past_a),
                              .pre_handler = pre_count };
    CHECK(register_kprobe(&addroff) == 0 && addroff.addr == (void *)past_b, "addr + offset: kernel adds offset to addr too");
    unregister_kprobe(&addroff);

    /* flags, nmissed, addr */
    struct kprobe kp = { .symbol_name = "f_ret", .pre_handler = pre_count, .nmissed = 77,
                         .flags = 1u << 30 | 1u << 31 | KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_GONE };
    rc = register_kprobe(&kp);
    CHECK(rc == 0 && kp.flags == 0, "caller's flags other than DISABLED are dropped, OPTIMIZED is not set: kernel flags 0 (got %#x)",
          kp.flags);
    CHECK(kp.nmissed == 0, "nmissed is 0 after register: kernel 0");
    CHECK(kp.addr != NULL, "addr is the probe address after register: kernel sets it");
    pre_calls = 0;
    v = f_ret(3);
    CHECK(v == 15 && pre_calls == 1, "bits set by the caller, on a function with a return probe: the handler runs");
    /* bit 30 was the runtime's "this is a kretprobe": what follows the
     * struct then stood for one's fields (a holder) */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(120);   /* a hang becomes a failure */
        static struct { struct kprobe kp; long after[7]; } k30 = {
            .kp = { .symbol_name = "f_ret", .pre_handler = pre_count, .flags = 1u << 30 },
            .after = { 0, 0, 0, 0, 0xdead0, 0xdead0, 0 } };
        unregister_kprobe(&kp);
        int r30 = register_kprobe(&k30.kp);
        pre_calls = 0;
        long v30 = f_ret(3);
        _exit(r30 == 0 && v30 == 15 && pre_calls == 1 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "a caller's bit 30 on a function with a return probe: registered as a kprobe, its hits run it (no crash): kernel drops it");
    CHECK(register_kprobe(&kp) == -EINVAL, "registered again while registered: kernel -EINVAL");
    unregister_kprobe(&kp);
    CHECK(kp.addr != NULL && register_kprobe(&kp) == -EINVAL,
          "a symbol_name kprobe registered again after unregister: kernel -EINVAL (addr stays set)");
    kp.addr = NULL;
    CHECK(register_kprobe(&kp) == 0, "... and 0 once addr is cleared");
    unregister_kprobe(&kp);
    struct kprobe ka = { .addr = (void *)f_opt, .pre_handler = pre_count };
    CHECK(register_kprobe(&ka) == 0, "register by addr");
    unregister_kprobe(&ka);
    CHECK(register_kprobe(&ka) == 0, "an addr kprobe registered again after unregister: kernel 0");
    unregister_kprobe(&ka);
    struct kprobe dis = { .symbol_name = "f_opt", .pre_handler = pre_count, .flags = KPROBE_FLAG_DISABLED };
    CHECK(register_kprobe(&dis) == 0 && dis.flags == KPROBE_FLAG_DISABLED, "KPROBE_FLAG_DISABLED is kept: kernel keeps it");
    unregister_kprobe(&dis);
}

/* ================= handlers ================= */
static void handlers(void)
{
    struct kprobe k = { .symbol_name = "f_opt", .pre_handler = pre_ip };
    register_kprobe(&k);
    f_opt(1);
    CHECK(seen_ip - one == (unsigned long)k.addr && seen_p == &k,
          "pre_handler on a jump-optimized point: regs->ip = addr + 1, p = the kprobe: kernel (optimized_callback)");
    unregister_kprobe(&k);
    struct kprobe k3 = { .symbol_name = "f_int3", .pre_handler = pre_ip };
    register_kprobe(&k3);
    f_int3(1, 2);
    CHECK(seen_ip - one == (unsigned long)k3.addr, "pre_handler on an int3 point: regs->ip = addr + 1: kernel (kprobe_int3_handler)");
    unregister_kprobe(&k3);

    /* order: newest first (add_new_kprobe: list_add_rcu at the head) */
    struct kprobe a = { .symbol_name = "f_opt", .pre_handler = pre_a }, b = { .addr = (void *)f_opt, .pre_handler = pre_b },
                  c = { .symbol_name = "f_opt", .pre_handler = pre_c };
    register_kprobe(&a), register_kprobe(&b), register_kprobe(&c);
    norder = 0;
    f_opt(1);
    CHECK(norder == 3 && order[0] == 'c' && order[1] == 'b' && order[2] == 'a',
          "three kprobes on one address run newest first: kernel c b a (aggr_pre_handler)");
    unregister_kprobe(&b);
    norder = 0;
    f_opt(1);
    CHECK(norder == 2 && order[0] == 'c' && order[1] == 'a', "one unregistered from the middle: kernel c a");
    unregister_kprobe(&a), unregister_kprobe(&c);

    /* the int3 path: pre_handler returns !0 with ip set */
    struct kprobe older = { .symbol_name = "f_int3", .pre_handler = pre_a };
    struct kprobe red = { .symbol_name = "f_int3", .pre_handler = pre_redirect, .post_handler = post_ip };
    register_kprobe(&older), register_kprobe(&red);
    norder = 0, post_calls = 0;
    long v = f_int3(5, 6);
    CHECK(v == 1005 && norder == 1 && order[0] == 'r' && post_calls == 0,
          "int3: a pre_handler returning !0 sends the thread to regs->ip; older handlers and post_handler skipped: kernel");
    unregister_kprobe(&red), unregister_kprobe(&older);
    struct kprobe iponly = { .symbol_name = "f_int3", .pre_handler = pre_ip_only };
    register_kprobe(&iponly);
    CHECK(f_int3(5, 6) == 11, "int3: regs->ip changed but 0 returned is ignored: kernel (setup_singlestep sets ip)");
    unregister_kprobe(&iponly);

    /* the detour: as optprobes, what they return and ip are ignored */
    struct kprobe oa = { .symbol_name = "f_opt", .pre_handler = pre_a };
    struct kprobe ored = { .symbol_name = "f_opt", .pre_handler = pre_redirect };
    register_kprobe(&oa), register_kprobe(&ored);
    norder = 0;
    v = f_opt(4);
    CHECK(v == 9 && norder == 2 && order[0] == 'r' && order[1] == 'a',
          "jump-optimized: !0 and regs->ip ignored, every pre_handler runs: kernel (opt_pre_handler)");
    /* kprobes.rst: an empty post_handler suppresses optimization */
    struct kprobe opost = { .symbol_name = "f_opt", .pre_handler = pre_redirect, .post_handler = post_empty };
    unregister_kprobe(&ored);
    register_kprobe(&opost);
    v = f_opt(4);
    CHECK(v == 1004, "an empty post_handler makes the point int3: ip and !0 take effect: kernel");
    unregister_kprobe(&opost), unregister_kprobe(&oa);

    /* post_handler: the next instruction in place */
    struct kprobe ps = { .symbol_name = "step_fn", .post_handler = post_ip };
    register_kprobe(&ps);
    seen_ip = 0, seen_flags_arg = 99;
    v = step_fn(4);
    CHECK(v == 5 && seen_ip - (unsigned long)step_fn == 5 * one,
          "post_handler: regs->ip is the next instruction in place (step_fn+5): kernel (resume_singlestep)");
    CHECK(seen_flags_arg == 0, "post_handler's flags: kernel 0");
    unregister_kprobe(&ps);
    struct kprobe pj = { .symbol_name = "jcc_fn", .offset = 2, .post_handler = post_ip };
    register_kprobe(&pj);
    seen_ip = 0;
    v = jcc_fn(1);
    unsigned long fall = seen_ip;
    seen_ip = 0;
    long v0 = jcc_fn(0);
    CHECK(v == 1 && v0 == 2 && fall - (unsigned long)jcc_fn == 4 * one && seen_ip - (unsigned long)jcc_fn == 12 * one,
          "post_handler after a short jcc: not taken jcc_fn+4, taken jcc_fn+12 (%#lx %#lx): kernel", fall - (unsigned long)jcc_fn,
          seen_ip - (unsigned long)jcc_fn);
    unregister_kprobe(&pj);
    struct kprobe pr = { .symbol_name = "step_fn", .post_handler = post_redirect };
    register_kprobe(&pr);
    v = step_fn(4);
    CHECK(v == 1005, "post_handler changing regs->ip sends the thread there: kernel");
    unregister_kprobe(&pr);

    /* nmissed: a hit inside a handler */
    static struct kprobe nm1, nm2;
    nm1 = (struct kprobe){ .symbol_name = "f_opt2", .pre_handler = pre_count };
    nm2 = (struct kprobe){ .symbol_name = "f_opt2", .pre_handler = pre_count, .flags = KPROBE_FLAG_DISABLED };
    struct kprobe outer = { .symbol_name = "f_opt", .pre_handler = NULL };
    register_kprobe(&nm1), register_kprobe(&nm2);
    extern int pre_calls_f_opt2(struct kprobe *, struct pt_regs *);
    outer.pre_handler = pre_calls_f_opt2;
    register_kprobe(&outer);
    pre_calls = 0;
    f_opt(1);
    CHECK(pre_calls == 0 && nm1.nmissed == 2 && nm2.nmissed == 2,
          "a probe hit inside a handler runs nothing and counts in nmissed of each kprobe there: kernel (%lu %lu)", nm1.nmissed,
          nm2.nmissed);
    unregister_kprobe(&outer), unregister_kprobe(&nm1), unregister_kprobe(&nm2);
}
int pre_calls_f_opt2(struct kprobe *p, struct pt_regs *r)
{
    (void)p, (void)r;
    f_opt2(1);
    f_opt2(2);
    return 0;
}

/* ================= enable, disable, unregister ================= */
static void toggling(void)
{
    struct kprobe k = { .symbol_name = "f_opt", .pre_handler = pre_count };
    register_kprobe(&k);
    long h0 = hits_of("f_opt");
    pre_calls = 0;
    CHECK(disable_kprobe(&k) == 0 && (k.flags & KPROBE_FLAG_DISABLED), "disable_kprobe: kernel 0, DISABLED set");
    f_opt(1), f_opt(2);
    CHECK(pre_calls == 0 && hits_of("f_opt") == h0,
          "the only kprobe disabled: the point is disarmed, no handler, no hit counted: kernel disarms it");
    const char *line = list_line("f_opt");
    char want[64];
    snprintf(want, sizeof want, "[DISABLED]  hits %ld  ", h0);
    if (line)
        CHECK(strstr(line, want) != NULL, "... the control directory's list marks it [DISABLED], its hits unchanged (%s)", line);
    else
        printf("skip - the control directory's list (none here)\n");
    CHECK(disable_kprobe(&k) == 0, "disable twice: kernel 0");
    CHECK(enable_kprobe(&k) == 0 && !(k.flags & KPROBE_FLAG_DISABLED), "enable_kprobe: kernel 0");
    f_opt(1);
    CHECK(pre_calls == 1 && hits_of("f_opt") == h0 + 1, "enabled again: armed, counted");
    struct kprobe k2 = { .symbol_name = "f_opt", .pre_handler = pre_count };
    register_kprobe(&k2);
    disable_kprobe(&k);
    pre_calls = 0;
    f_opt(1);
    CHECK(pre_calls == 1 && hits_of("f_opt") == h0 + 2, "one of two disabled: still armed, the other runs: kernel");
    unregister_kprobe(&k2);
    f_opt(1);
    CHECK(pre_calls == 1 && hits_of("f_opt") == h0 + 2, "the enabled one unregistered, the disabled one left: disarmed");
    unregister_kprobe(&k);
    f_opt(1);
    CHECK(hits_of("f_opt") == h0 + 3, "none left: the baked point counts again (kprewrite's count without handlers)");
    struct kprobe d = { .symbol_name = "f_opt", .pre_handler = pre_count, .flags = KPROBE_FLAG_DISABLED };
    register_kprobe(&d);
    f_opt(1);
    CHECK(hits_of("f_opt") == h0 + 3, "registered disabled on a point with no other kprobe: not armed: kernel");
    enable_kprobe(&d);
    pre_calls = 0;
    f_opt(1);
    CHECK(pre_calls == 1 && hits_of("f_opt") == h0 + 4, "then enabled: armed");
    unregister_kprobe(&d);

    struct kprobe never = { .symbol_name = "f_opt", .pre_handler = pre_count };
    CHECK(enable_kprobe(&never) == -EINVAL && disable_kprobe(&never) == -EINVAL,
          "enable/disable a kprobe never registered: kernel -EINVAL");
    CHECK(enable_kprobe(&d) == -EINVAL && disable_kprobe(&d) == -EINVAL, "enable/disable after unregister: kernel -EINVAL");
    CHECK(enable_kprobe(NULL) == -EINVAL && disable_kprobe(NULL) == -EINVAL, "enable/disable NULL: -EINVAL");
    never.addr = (void *)f_opt;
    never.symbol_name = NULL;
    unregister_kprobe(&never);
    CHECK(never.addr == NULL, "unregister of a kprobe not registered clears its addr: kernel");
    unregister_kprobe(NULL);
    CHECK(1, "unregister_kprobe(NULL) returns");

    /* batches */
    struct kprobe b1 = { .symbol_name = "f_opt", .pre_handler = pre_count };
    struct kprobe b2 = { .symbol_name = "f_opt2", .pre_handler = pre_count };
    struct kprobe b3 = { .symbol_name = "step_fn", .offset = 1, .pre_handler = pre_count };
    struct kprobe *batch[] = { &b1, &b2, &b3 };
    CHECK(register_kprobes(batch, 3) == -EILSEQ, "register_kprobes with a bad third: kernel its error");
    pre_calls = 0;
    f_opt(1), f_opt2(1);
    CHECK(pre_calls == 0 && !b1.__point && !b2.__point, "... the two before it unregistered: kernel");
    CHECK(register_kprobes(batch, 0) == -EINVAL && register_kprobes(batch, -1) == -EINVAL,
          "register_kprobes with num <= 0: kernel -EINVAL");
    b1.addr = b2.addr = NULL;
    struct kprobe u = { .addr = (void *)f_opt2, .pre_handler = pre_count };
    register_kprobe(&b1), register_kprobe(&b2);
    struct kprobe *ub[] = { &b1, &u, &b2 };
    unregister_kprobes(ub, 3);
    pre_calls = 0;
    f_opt(1), f_opt2(1);
    CHECK(pre_calls == 0 && u.addr == NULL && b1.addr && b2.addr,
          "unregister_kprobes with one never registered: the others unregistered, its addr cleared: kernel");
    unregister_kprobes(ub, 0);
    CHECK(1, "unregister_kprobes with num 0 returns");
}

/* ================= threads ================= */
static pthread_barrier_t hang_bar;
static struct kprobe hk0, hk[2];
static __thread int my_idx;
/* both threads inside this handler of f_hang, each unregisters another
 * kprobe of f_hang */
static int pre_unreg_mine(struct kprobe *p, struct pt_regs *r)
{
    (void)p, (void)r;
    pthread_barrier_wait(&hang_bar);
    unregister_kprobe(&hk[my_idx]);
    return 0;
}
static void *hang_thread(void *arg)
{
    my_idx = (int)(long)arg;
    f_hang(1);
    return NULL;
}

static struct kprobe other;
static int pre_unreg_other(struct kprobe *p, struct pt_regs *r)
{
    (void)p, (void)r;
    unregister_kprobe(&other);
    return 0;
}

static _Atomic int stop, unregistered, late, race_calls;
static int pre_race(struct kprobe *p, struct pt_regs *r)
{
    (void)p, (void)r;
    if (atomic_load(&unregistered))
        atomic_fetch_add(&late, 1);
    atomic_fetch_add(&race_calls, 1);
    return 0;
}
static long race_done[4];
static _Atomic int race_started;
static void *race_thread(void *arg)
{
    long i = (long)arg, n = 0;
    atomic_fetch_add(&race_started, 1);
    while (!atomic_load(&stop)) {
        sink = f_race(n);
        sink = f_int3(1, 2);
        n++;
    }
    race_done[i] = n;
    return NULL;
}

/* kretprobes registered and unregistered while threads run through them */
static _Atomic long kr_entries, kr_returns, kr_late;
static _Atomic int kr_unregistered;
NOINLINE long kr_deep(long n) { if (n <= 0) return 0; long r = kr_deep(n - 1); sink = r; return r + 1; }
static int kr_entry_a(struct kretprobe_instance *ri, struct pt_regs *r)
{
    (void)r;
    *(long *)ri->data = 0x5eed;
    atomic_fetch_add(&kr_entries, 1);
    return 0;
}
static int kr_ret_a(struct kretprobe_instance *ri, struct pt_regs *r)
{
    (void)r;
    if (atomic_load(&kr_unregistered) || *(long *)ri->data != 0x5eed)
        atomic_fetch_add(&kr_late, 1);
    atomic_fetch_add(&kr_returns, 1);
    return 0;
}
static long kr_done[4];
static void *kr_thread(void *arg)
{
    long i = (long)arg, n = 0, bad = 0;
    atomic_fetch_add(&race_started, 1);
    while (!atomic_load(&stop)) {
        bad += kr_deep(3) != 3;
        n++;
    }
    kr_done[i] = bad ? -1 : n;
    return NULL;
}

/* 4 threads through one kretprobe with 2 instances: most entries find
 * none free at hand and take another thread's cached one (steal) */
static void *kr_steal_thread(void *arg)
{
    long bad = 0;
    for (int k = 0; k < 20000; k++)
        bad += kr_deep(3) != 3;
    return (void *)bad;
}
static void kr_steal(void)
{
    struct kretprobe rp = { .kp.symbol_name = "kr_deep", .entry_handler = kr_entry_a, .handler = kr_ret_a,
                            .maxactive = 2, .data_size = sizeof(long) };
    atomic_store(&kr_entries, 0), atomic_store(&kr_returns, 0), atomic_store(&kr_late, 0);
    atomic_store(&kr_unregistered, 0);
    int rc = register_kretprobe(&rp);
    pthread_t t[4];
    long bad = 0;
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, kr_steal_thread, NULL);
    for (int i = 0; i < 4; i++) {
        void *b;
        pthread_join(t[i], &b);
        bad += (long)b;
    }
    long missed = rp.nmissed;
    unregister_kretprobe(&rp);
    /* no unregister while calls run: every entry gets its return, and an
     * instance is never two calls' (each call's data is its own) */
    CHECK(rc == 0 && bad == 0 && atomic_load(&kr_late) == 0 && atomic_load(&kr_entries) == atomic_load(&kr_returns) &&
          atomic_load(&kr_entries) + missed == 4 * 20000 * 4,
          "4 threads through a kretprobe of 2 instances (taken from each other's caches): every entry's return handler "
          "runs once, entries + nmissed = calls (%ld entries, %ld returns, %ld missed, %d calls)",
          atomic_load(&kr_entries), atomic_load(&kr_returns), missed, 4 * 20000 * 4);
}

static void two_unregistering(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(120);   /* a hang becomes a failure (generous: the machine may be loaded) */
        pthread_barrier_init(&hang_bar, NULL, 2);
        for (int i = 0; i < 2; i++) {
            hk[i] = (struct kprobe){ .symbol_name = "f_hang", .pre_handler = pre_count };
            register_kprobe(&hk[i]);
        }
        hk0 = (struct kprobe){ .symbol_name = "f_hang", .pre_handler = pre_unreg_mine };
        register_kprobe(&hk0);
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, hang_thread, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        _exit(hk[0].__point || hk[1].__point);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "two threads unregistering from handlers of one point both return (no hang; %s %d)",
          WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void threads(void)
{
    /* two threads each unregistering from a handler of the same point, in
     * a child forked from this threaded process: under ASan the child may
     * find the allocator's lock held by a thread the fork left behind
     * (seen with GCC 12's: both threads stuck in it at their first free),
     * so a sanitizer build leaves this one out */
    if (getenv("KP_SANITIZED"))
        printf("skip - a sanitizer build: no fork from a threaded process (its allocator's lock may be held)\n");
    else
        two_unregistering();

    /* unregister from inside a handler of another point */
    other = (struct kprobe){ .symbol_name = "f_opt2", .pre_handler = pre_count };
    struct kprobe first = { .symbol_name = "f_opt", .pre_handler = pre_unreg_other };
    register_kprobe(&other), register_kprobe(&first);
    f_opt(1);
    pre_calls = 0;
    f_opt2(1);
    CHECK(other.__point == NULL && pre_calls == 0, "unregister from a handler of another point: done, its handler no longer runs");
    unregister_kprobe(&first);

    /* register/unregister while 4 threads hit the points */
    atomic_store(&stop, 0);
    long h0 = hits_of("f_race");
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, race_thread, (void *)i);
    while (atomic_load(&race_started) < 4)
        sched_yield();
    int rounds = 0, rcs = 0;
    for (; rounds < 300; rounds++) {
        struct kprobe r1 = { .symbol_name = "f_race", .pre_handler = pre_race };
        struct kprobe r2 = { .symbol_name = "f_int3", .pre_handler = pre_race };
        atomic_store(&unregistered, 0);
        rcs |= register_kprobe(&r1) | register_kprobe(&r2);
        /* until a thread runs a handler (or for long): unregister races it */
        for (int k = 0, seen = atomic_load(&race_calls); k < 100000 && atomic_load(&race_calls) == seen; k++)
            sched_yield();
        unregister_kprobe(&r1);
        unregister_kprobe(&r2);
        atomic_store(&unregistered, 1);   /* from here, a handler running is late */
        for (volatile int k = 0; k < 2000; k++)
            ;
    }
    atomic_store(&stop, 1);
    long calls = 0;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL), calls += race_done[i];
    CHECK(rcs == 0 && atomic_load(&late) == 0,
          "300 register/unregister rounds while 4 threads hit the points: no handler runs after unregister returns (%d ran)",
          atomic_load(&race_calls));
    long counted = hits_of("f_race") - h0;
    CHECK(counted == calls, "... and every hit counted (%ld calls, %ld counted)", calls, counted);

    kr_steal();
    /* the same with kretprobes: their instances are freed while calls may
     * hold them */
    atomic_store(&kr_entries, 0), atomic_store(&kr_returns, 0), atomic_store(&kr_late, 0);
    atomic_store(&stop, 0);
    atomic_store(&race_started, 0);
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, kr_thread, (void *)i);
    while (atomic_load(&race_started) < 4)
        sched_yield();
    rcs = 0;
    for (rounds = 0; rounds < 200; rounds++) {
        struct kretprobe rp = { .kp.symbol_name = "kr_deep", .entry_handler = kr_entry_a, .handler = kr_ret_a,
                                .maxactive = 6, .data_size = sizeof(long) };
        atomic_store(&kr_unregistered, 0);
        rcs |= register_kretprobe(&rp);
        for (int k = 0, seen = atomic_load(&kr_returns); k < 100000 && atomic_load(&kr_returns) == seen; k++)
            sched_yield();
        unregister_kretprobe(&rp);
        atomic_store(&kr_unregistered, 1);
    }
    atomic_store(&stop, 1);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL), bad |= kr_done[i] < 0;
    CHECK(rcs == 0 && !bad && atomic_load(&kr_late) == 0 && atomic_load(&kr_returns) > 0,
          "200 kretprobe register/unregister rounds while 4 threads run through it: right values, no return handler after "
          "unregister, each with its entry's data (%ld entries, %ld returns)", atomic_load(&kr_entries), atomic_load(&kr_returns));
    /* an entry whose entry_handler ran gets its return handler unless its
     * call was in flight when the kretprobe was unregistered: at most
     * maxactive such calls a round */
    CHECK(atomic_load(&kr_entries) - atomic_load(&kr_returns) <= 200 * 6,
          "... an entry_handler's return handler runs unless its call was in flight at unregister (%ld missing, at most %d)",
          atomic_load(&kr_entries) - atomic_load(&kr_returns), 200 * 6);
}

/* ================= kretprobes ================= */
static long entries, returns;
static int k_entry(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri, (void)r; entries++; return 0; }
static int k_entry_skip(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri, (void)r; entries++; return 1; }
static int k_ret(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri, (void)r; returns++; return 0; }
static struct kretprobe *mid_rp;
static void disable_mid(void) { disable_kretprobe(mid_rp); }
static void unregister_mid(void) { unregister_kretprobe(mid_rp); }
static void nothing(void) {}

static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static void kretprobes(void)
{
    struct kretprobe big = { .kp.symbol_name = "f_ret", .handler = k_ret, .data_size = (size_t)-64 };
    CHECK(register_kretprobe(&big) == -E2BIG, "data_size (size_t)-64: kernel -E2BIG");
    big.data_size = KRETPROBE_MAX_DATA_SIZE + 1;
    CHECK(register_kretprobe(&big) == -E2BIG, "data_size 4097: kernel -E2BIG (KRETPROBE_MAX_DATA_SIZE 4096)");
    CHECK(big.maxactive == 0 && big.kp.pre_handler == NULL, "... and the kretprobe is left as it was");
    big.data_size = KRETPROBE_MAX_DATA_SIZE;
    CHECK(register_kretprobe(&big) == 0, "data_size 4096: kernel 0");
    long want = sysconf(_SC_NPROCESSORS_CONF) * 2;
    want = want > 10 ? want : 10;
    CHECK(big.maxactive == want, "maxactive 0 becomes max(10, 2 x CPUs): kernel (%d)", big.maxactive);
    unregister_kretprobe(&big);
    struct kretprobe neg = { .kp.symbol_name = "f_ret", .handler = k_ret, .maxactive = -5 };
    CHECK(register_kretprobe(&neg) == 0 && neg.maxactive == want, "maxactive negative: the default too: kernel");
    unregister_kretprobe(&neg);
    struct kretprobe nf = { .kp.symbol_name = "no_such_symbol_anywhere", .handler = k_ret };
    CHECK(register_kretprobe(&nf) == -ENOENT && nf.maxactive == 0, "a failed register leaves maxactive as it was: kernel -ENOENT");
    struct kretprobe mid = { .kp.symbol_name = "f_ret", .kp.offset = 1, .handler = k_ret };
    CHECK(register_kretprobe(&mid) == -EINVAL, "a kretprobe off the function's entry: kernel -EINVAL");
    struct kretprobe ko = { .kp.symbol_name = "f_plain", .handler = k_ret };
    CHECK(register_kretprobe(&ko) == -ENOENT, "a function baked as a kprobe only: -ENOENT (no SYM%%return baked)");
    CHECK(register_kretprobe(NULL) == -EINVAL, "register_kretprobe(NULL): -EINVAL");
    struct kretprobe fl = { .kp.symbol_name = "f_ret", .kp.flags = 1u << 30 | 1u << 31, .handler = k_ret,
                            .kp.fault_handler = (kprobe_fault_handler_t)k_ret };
    CHECK(register_kretprobe(&fl) == 0 && fl.kp.flags == 0 && fl.kp.fault_handler == NULL,
          "a kretprobe's private flag bits from the caller are dropped, no fault_handler: kernel");
    unregister_kretprobe(&fl);
    CHECK(register_kretprobe(&fl) == -EINVAL, "registered again after unregister: kernel -EINVAL (kp.addr stays set)");

    /* disable between the entry and the return: the return handler runs */
    struct kretprobe dm = { .kp.symbol_name = "kr_mid", .entry_handler = k_entry, .handler = k_ret };
    mid_rp = &dm;
    register_kretprobe(&dm);
    entries = returns = 0;
    long v = kr_mid(1, disable_mid);
    CHECK(v == 12 && entries == 1 && returns == 1, "disable_kretprobe between entry and return: the return handler runs: kernel (%ld %ld)",
          entries, returns);
    v = kr_mid(1, nothing);
    CHECK(v == 12 && entries == 1 && returns == 1, "disabled at the entry: neither handler: kernel");
    enable_kretprobe(&dm);
    kr_mid(1, nothing);
    CHECK(entries == 2 && returns == 2, "enabled again: both");
    entries = returns = 0;
    v = kr_mid(2, unregister_mid);
    CHECK(v == 13 && entries == 1 && returns == 0, "unregistered between entry and return: no return handler, the right value: kernel");

    struct kretprobe sk = { .kp.symbol_name = "f_ret", .entry_handler = k_entry_skip, .handler = k_ret };
    register_kretprobe(&sk);
    entries = returns = 0;
    f_ret(1), f_ret(2);
    CHECK(entries == 2 && returns == 0 && sk.nmissed == 0, "entry_handler returning !0: no return handler, not missed: kernel");
    unregister_kretprobe(&sk);
    struct kretprobe dp = { .kp.symbol_name = "f_deep", .entry_handler = k_entry, .handler = k_ret, .maxactive = 2 };
    register_kretprobe(&dp);
    entries = returns = 0;
    v = f_deep(4);   /* 5 nested calls, 2 instances */
    CHECK(v == 4 && entries == 2 && returns == 2 && dp.nmissed == 3,
          "maxactive 2, 5 nested calls: nmissed 3, entry_handler skipped on a miss: kernel (%d)", dp.nmissed);
    unregister_kretprobe(&dp);

    /* instances are freed */
    size_t before = heap_in_use();
    int rcs = 0;
    for (int i = 0; i < 100; i++) {
        struct kretprobe m = { .kp.symbol_name = "f_ret", .handler = k_ret, .maxactive = 1000, .data_size = 1024 };
        rcs |= register_kretprobe(&m);
        f_ret(i);
        unregister_kretprobe(&m);
    }
    size_t grown = heap_in_use() - before;
    CHECK(rcs == 0 && grown < 4 * 1024 * 1024,
          "100 x register/unregister (1000 instances of 1 KB): the instances are freed (heap grew %zu bytes; 1.1 MB each)", grown);
    before = heap_in_use();
    for (int i = 0; i < 100; i++) {
        struct kretprobe m = { .kp.symbol_name = "kr_mid", .handler = k_ret, .maxactive = 1000, .data_size = 1024 };
        mid_rp = &m;
        rcs |= register_kretprobe(&m);
        kr_mid(i, unregister_mid);   /* an instance out when unregistered */
    }
    grown = heap_in_use() - before;
    CHECK(rcs == 0 && grown < 4 * 1024 * 1024,
          "unregistered while a call holds an instance: freed once it returns (heap grew %zu bytes)", grown);
}

/* ================= statistics ================= */
static void statistics(void)
{
    struct kprewrite_point_stats st;
    CHECK(kprewrite_point_stats(NULL, 0, &st) == -EINVAL, "kprewrite_point_stats(NULL symbol): -EINVAL");
    CHECK(kprewrite_point_stats("f_opt", 0, NULL) == -EINVAL, "kprewrite_point_stats(st NULL): -EINVAL");
    CHECK(kprewrite_point_stats_addr((void *)f_opt, NULL) == -EINVAL, "kprewrite_point_stats_addr(st NULL): -EINVAL");
    CHECK(kprewrite_point_stats("f_unbaked", 0, &st) == -ENOENT, "kprewrite_point_stats of a point not baked: -ENOENT");
}

/* ================= jprobes ================= */
static long jargs[8];
static volatile int jcalls;
static long jp_handler(long a, long b, long c, long d, long e, long f, long g, long h)
{
    jargs[0] = a, jargs[1] = b, jargs[2] = c, jargs[3] = d, jargs[4] = e, jargs[5] = f, jargs[6] = g, jargs[7] = h;
    jcalls++;
    /* the callee owns its arguments (g and h are on the stack): the
     * function must still see its own */
    *(volatile long *)&g = -1;
    *(volatile long *)&h = -1;
    f_opt(1);   /* a probe hit inside the handler: missed */
    jprobe_return();
}
static long jp_handler_returns(long a, long b, long c, long d, long e, long f, long g, long h)
{
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h;
    jcalls++;
    return -1;   /* no jprobe_return(): comes back all the same */
}
/* kprobes-legacy-jprobes.txt's example, jprobe_example.c: jdo_fork */
static long jdo_fork(unsigned long clone_flags, unsigned long stack_start, void *regs, unsigned long stack_size,
                     int *parent_tidptr, int *child_tidptr)
{
    (void)regs, (void)parent_tidptr, (void)child_tidptr;
    printf("jprobe: clone_flags = 0x%lx, stack_size = 0x%lx, stack_start = 0x%lx\n", clone_flags, stack_size, stack_start);
    jprobe_return();
}

static void jprobes(void)
{
    struct jprobe j = { .kp.symbol_name = "jp_fn", .entry = (void *)jp_handler };
    CHECK(register_jprobe(&j) == 0, "register_jprobe at a function's entry: kernel 0");
    struct kprobe also = { .symbol_name = "jp_fn", .pre_handler = pre_a };
    register_kprobe(&also);
    struct kprobe k_in = { .symbol_name = "f_opt", .pre_handler = pre_count };
    register_kprobe(&k_in);
    norder = 0, pre_calls = 0, jcalls = 0;
    long v = jp_fn(1, 2, 3, 4, 5, 6, 7, 8);
    int args_ok = 1;
    for (int i = 0; i < 8; i++)
        args_ok &= jargs[i] == i + 1;
    CHECK(jcalls == 1 && args_ok, "the jprobe's handler gets the function's 8 arguments (6 in registers, 2 on the stack): kernel");
    CHECK(v == 1 + 4 + 9 + 16 + 25 + 36 + 49 + 64, "the function then runs with its own arguments, stack ones too: kernel (%ld)", v);
    CHECK(norder == 1 && pre_calls == 0 && k_in.nmissed == 1, "a kprobe there runs before the jprobe; a probe hit in the handler is missed: kernel");
    struct jprobe j2 = { .kp.symbol_name = "jp_fn", .entry = (void *)jp_handler };
    CHECK(register_jprobe(&j2) == -EEXIST, "a second jprobe on one function: kernel -EEXIST");
    CHECK(disable_jprobe(&j) == 0 && jp_fn(1, 1, 1, 1, 1, 1, 1, 1) == 36 && jcalls == 1, "disable_jprobe: no handler: kernel");
    CHECK(enable_jprobe(&j) == 0 && jp_fn(1, 1, 1, 1, 1, 1, 1, 1) == 36 && jcalls == 2, "enable_jprobe: the handler again");
    unregister_jprobe(&j);
    jp_fn(1, 1, 1, 1, 1, 1, 1, 1);
    CHECK(jcalls == 2, "unregister_jprobe: no handler");
    unregister_kprobe(&also), unregister_kprobe(&k_in);
    struct jprobe jm = { .kp.symbol_name = "step_fn", .kp.offset = 5, .entry = (void *)jp_handler };
    CHECK(register_jprobe(&jm) == -EINVAL, "a jprobe off a function's entry: kernel -EINVAL");
    struct jprobe jn = { .kp.symbol_name = "jp_fn" };
    CHECK(register_jprobe(&jn) == -EINVAL, "a jprobe with no entry: kernel -EINVAL");
    struct jprobe jr = { .kp.symbol_name = "jp_fn", .entry = (void *)jp_handler_returns };
    register_jprobe(&jr);
    jcalls = 0;
    v = jp_fn(1, 1, 1, 1, 1, 1, 1, 1);
    CHECK(jcalls == 1 && v == 36, "a jprobe handler that returns without jprobe_return(): the function still runs right");
    unregister_jprobe(&jr);
    CHECK(jp_dbl_check(), "a jprobe handler using the FPU: the function sees its own double arguments");
    struct jprobe b1 = { .kp.symbol_name = "jp_fn", .entry = (void *)jp_handler };
    struct jprobe b2 = { .kp.symbol_name = "jp_fn", .entry = (void *)jp_handler };
    struct jprobe *jb[] = { &b1, &b2 };
    CHECK(register_jprobes(jb, 2) == -EEXIST && !b1.kp.__point, "register_jprobes: the second fails, the first is rolled back: kernel");
    b1.kp.addr = NULL;
    struct jprobe *jb1[] = { &b1 };
    CHECK(register_jprobes(jb1, 1) == 0, "register_jprobes");
    unregister_jprobes(jb1, 1);
    CHECK(!b1.kp.__point, "unregister_jprobes");
    /* the example */
    struct jprobe my_jprobe = { .entry = (void *)jdo_fork, .kp.symbol_name = "my_do_fork" };
    int ret = register_jprobe(&my_jprobe);
    printf("Planted jprobe at %p, handler addr %p\n", my_jprobe.kp.addr, my_jprobe.entry);
    v = my_do_fork(0x1200011, 0x7000, NULL, 0x2000, NULL, NULL);
    unregister_jprobe(&my_jprobe);
    CHECK(ret == 0 && v == 4321, "jprobe_example: jdo_fork printed the arguments, do_fork ran");
}

/* ================= fault_handler ================= */
static int fault_trap = -1, fault_calls;
static struct kprobe *fault_p;
static unsigned long fault_ip;
static int fh_handled(struct kprobe *p, struct pt_regs *r, int trapnr)
{
    fault_p = p, fault_ip = r->ip, fault_trap = trapnr;
    fault_calls++;
    return 1;
}
static int fh_not(struct kprobe *p, struct pt_regs *r, int trapnr)
{
    (void)p, (void)r;
    fault_trap = trapnr;
    fault_calls++;
    return 0;
}
static volatile int *volatile bad_ptr = (int *)16;
static volatile int zero;
static volatile int after_fault;
static int pre_segv(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; (void)*bad_ptr; after_fault = 1; return 0; }
static int pre_div(struct kprobe *p, struct pt_regs *r) { (void)p; r->ax = 100 / zero; return 0; }
static int pre_ud2(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; __asm__ volatile("ud2"); return 0; }
static void post_segv(struct kprobe *p, struct pt_regs *r, unsigned long f) { (void)p, (void)r, (void)f; (void)*bad_ptr; }
static int fh_skip_load(struct kprobe *p, struct pt_regs *r, int trapnr)
{
    (void)p;
    fault_ip = r->ip, fault_trap = trapnr;
    fault_calls++;
    r->ax = 77;
    r->ip += 2;   /* past the load */
    return 1;
}
static int good_int = 55;
static int fh_fix_ptr(struct kprobe *p, struct pt_regs *r, int trapnr)
{
    (void)p, (void)trapnr;
    fault_calls++;
    r->di = (unsigned long)&good_int;   /* the load is tried again */
    return 1;
}
static long jf_handler(long a, long b, long c, long d, long e, long f, long g, long h)
{
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h;
    (void)*bad_ptr;
    jcalls++;
    jprobe_return();
}

static sigjmp_buf prog_jb;
static volatile unsigned long prog_seen_ip;
static volatile int prog_handler_ran;
static void prog_segv(int sig, siginfo_t *si, void *vuc)
{
    (void)sig, (void)si;
    prog_handler_ran++;
    prog_seen_ip = (unsigned long)((ucontext_t *)vuc)->uc_mcontext.gregs[REG_RIP];
    siglongjmp(prog_jb, 1);
}

/* in a child: what the fault's default course does to it */
static int child_status(void (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(120);   /* a hang becomes a failure */
        fn();
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return st;
}
static void die_unhandled(void)
{
    struct kprobe k = { .symbol_name = "f_fault", .pre_handler = pre_segv, .fault_handler = fh_not };
    register_kprobe(&k);
    f_fault(1);
}
static void die_in_fault_handler(void)
{
    struct kprobe k = { .symbol_name = "f_fault", .pre_handler = pre_segv,
                        .fault_handler = (kprobe_fault_handler_t)(void (*)(void))pre_segv };
    register_kprobe(&k);
    f_fault(1);
}

static void fault_handlers(void)
{
    struct kprobe k = { .symbol_name = "f_fault", .pre_handler = pre_segv, .fault_handler = fh_handled };
    register_kprobe(&k);
    after_fault = 0, fault_calls = 0;
    long v = f_fault(1);
    CHECK(v == 4 && fault_calls == 1 && fault_trap == 14 && after_fault == 0 && fault_p == &k && fault_ip - one == (unsigned long)k.addr,
          "a page fault in a pre_handler (detour): fault_handler(p, regs, 14) handles it, the function runs on: kernel (trap %d)",
          fault_trap);
    CHECK(k.nmissed == 1, "the fault counts in nmissed: kernel (kprobe_fault_handler)");
    unregister_kprobe(&k);
    struct kprobe k3 = { .symbol_name = "f_int3", .pre_handler = pre_segv, .fault_handler = fh_handled };
    register_kprobe(&k3);
    fault_calls = 0;
    v = f_int3(2, 3);
    CHECK(v == 5 && fault_calls == 1 && fault_trap == 14, "the same on an int3 point: kernel");
    unregister_kprobe(&k3);
    struct kprobe kd = { .symbol_name = "f_fault", .pre_handler = pre_div, .fault_handler = fh_handled };
    register_kprobe(&kd);
    v = f_fault(1);
    CHECK(v == 4 && fault_trap == 0, "a divide error in a pre_handler: trap 0 (SIGFPE): kernel #DE");
    unregister_kprobe(&kd);
    struct kprobe ku = { .symbol_name = "f_fault", .pre_handler = pre_ud2, .fault_handler = fh_handled };
    register_kprobe(&ku);
    v = f_fault(1);
    CHECK(v == 4 && fault_trap == 6, "ud2 in a pre_handler: trap 6 (SIGILL): kernel #UD");
    unregister_kprobe(&ku);
    struct kprobe kp = { .symbol_name = "f_fault", .post_handler = post_segv, .fault_handler = fh_handled };
    register_kprobe(&kp);
    fault_calls = 0;
    v = f_fault(1);
    CHECK(v == 4 && fault_calls == 1 && fault_trap == 14, "a fault in a post_handler: fault_handler handles it: kernel");
    unregister_kprobe(&kp);

    /* the single-stepped instruction faults */
    struct kprobe ks = { .symbol_name = "load_fn", .post_handler = post_ip, .fault_handler = fh_skip_load };
    register_kprobe(&ks);
    fault_calls = 0, post_calls = 0;
    int iv = load_fn((int *)16);
    CHECK(iv == 77 && fault_calls == 1 && fault_trap == 14 && fault_ip == (unsigned long)ks.addr && post_calls == 0,
          "the stepped instruction faults: fault_handler sees ip = the probe address; handled, ip set: the thread goes there: kernel");
    unregister_kprobe(&ks);
    struct kprobe kr = { .symbol_name = "load_fn", .post_handler = post_ip, .fault_handler = fh_fix_ptr };
    register_kprobe(&kr);
    fault_calls = 0, post_calls = 0;
    iv = load_fn((int *)16);
    CHECK(iv == 55 && fault_calls == 1 && post_calls == 1, "handled with ip kept: the instruction is tried again, then the post_handler");
    unregister_kprobe(&kr);

    /* not handled: the program's own handler */
    struct sigaction sa, old, now;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prog_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, &old);
    struct kprobe kn = { .symbol_name = "f_fault", .pre_handler = pre_segv, .fault_handler = fh_not };
    register_kprobe(&kn);
    sigaction(SIGSEGV, NULL, &now);
    CHECK(now.sa_sigaction == prog_segv, "sigaction() while fault_handlers are registered shows the program's own action");
    prog_handler_ran = 0;
    if (!sigsetjmp(prog_jb, 1))
        f_fault(1);
    CHECK(prog_handler_ran == 1 && fault_trap == 14, "fault_handler returning 0: the program's own SIGSEGV handler gets the fault: kernel");
    unregister_kprobe(&kn);
    struct kprobe ksn = { .symbol_name = "load_fn", .post_handler = post_ip, .fault_handler = fh_not };
    register_kprobe(&ksn);
    prog_handler_ran = 0;
    if (!sigsetjmp(prog_jb, 1))
        load_fn((int *)16);
    CHECK(prog_handler_ran == 1 && prog_seen_ip == (unsigned long)ksn.addr,
          "the stepped instruction's fault not handled: the program's handler sees it at the probe address: kernel");
    struct kprobe kk = { .symbol_name = "f_fault", .pre_handler = pre_count, .fault_handler = fh_not };
    register_kprobe(&kk);
    prog_handler_ran = 0, fault_calls = 0;
    if (!sigsetjmp(prog_jb, 1))
        syscall(SYS_tgkill, getpid(), gettid(), SIGSEGV);
    CHECK(prog_handler_ran == 1 && fault_calls == 0, "a SIGSEGV sent by kill: the program's, never a fault_handler's");
    unregister_kprobe(&kk);
    unregister_kprobe(&ksn);
    struct sigaction kact;
    syscall(SYS_rt_sigaction, SIGSEGV, NULL, &kact, 8);
    CHECK(kact.sa_sigaction == prog_segv, "the last fault_handler unregistered: the program's action is installed again");
    sigaction(SIGSEGV, &old, NULL);

    if (getenv("KP_SANITIZED")) {
        /* ASan installs a SIGSEGV handler of its own: the default course is its report */
        printf("skip - a sanitizer build: SIGSEGV's default course is ASan's report (fault_handler returning 0)\n");
        printf("skip - a sanitizer build: SIGSEGV's default course is ASan's report (a fault in the fault_handler)\n");
    } else {
        int st = child_status(die_unhandled);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "fault_handler returning 0, no handler of the program's: SIGSEGV kills: kernel oops");
        st = child_status(die_in_fault_handler);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a fault in the fault_handler itself: its default course");
    }

    struct jprobe jf = { .kp.symbol_name = "jp_fn", .kp.fault_handler = fh_handled, .entry = (void *)jf_handler };
    register_jprobe(&jf);
    fault_calls = 0, jcalls = 0;
    v = jp_fn(1, 1, 1, 1, 1, 1, 1, 1);
    CHECK(v == 36 && fault_calls == 1 && jcalls == 0, "a fault in a jprobe's handler, handled: the function goes on as after jprobe_return()");
    unregister_jprobe(&jf);
}

/* ================= the documents' examples ================= */
/* kprobe_example.c (kprobes.rst section 8): handler_pre, handler_post, handler_fault */
static struct kprobe ex_kp = { .symbol_name = "f_opt2" };
static int handler_pre(struct kprobe *p, struct pt_regs *regs)
{
    printf("<%s> pre_handler: p->addr = %p, ip = %lx, flags = 0x%lx\n", p->symbol_name, p->addr, regs->ip, regs->flags);
    return 0;
}
static void handler_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
    (void)regs;
    printf("<%s> post_handler: p->addr = %p, flags = 0x%lx\n", p->symbol_name, p->addr, flags);
}
static int handler_fault(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
    (void)regs;
    printf("fault_handler: p->addr = %p, trap #%d\n", p->addr, trapnr);
    return 0;
}
/* kretprobe_example.c: entry_handler keeps a time stamp, handler prints */
struct my_data { long long entry_stamp; };
static long long stamp;
static int ex_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)regs;
    ((struct my_data *)ri->data)->entry_stamp = ++stamp;
    return 0;
}
static int ex_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    long retval = (long)regs_return_value(regs);
    long long delta = ++stamp - ((struct my_data *)ri->data)->entry_stamp;
    printf("%s returned %ld and took %lld ticks to execute\n", "f_ret", retval, delta);
    return 0;
}
static void examples(void)
{
    ex_kp.pre_handler = handler_pre;
    ex_kp.post_handler = handler_post;
    ex_kp.fault_handler = handler_fault;
    ex_kp.flags = KPROBE_FLAG_FPU;
    int ret = register_kprobe(&ex_kp);
    printf("Planted kprobe at %p\n", ex_kp.addr);
    f_opt2(1);
    unregister_kprobe(&ex_kp);
    CHECK(ret == 0, "kprobe_example: register_kprobe");
    struct kretprobe my_kretprobe = { .handler = ex_ret, .entry_handler = ex_entry, .data_size = sizeof(struct my_data),
                                      .maxactive = 20, .kp.symbol_name = "f_ret", .kp.flags = KPROBE_FLAG_FPU };
    ret = register_kretprobe(&my_kretprobe);
    printf("Planted return probe at %s: %p\n", my_kretprobe.kp.symbol_name, my_kretprobe.kp.addr);
    f_ret(8);
    unregister_kretprobe(&my_kretprobe);
    printf("Missed probing %d instances of %s\n", my_kretprobe.nmissed, my_kretprobe.kp.symbol_name);
    CHECK(ret == 0, "kretprobe_example: register_kretprobe");
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
#define RUN(f) if (!*only || !strcmp(only, #f)) f()
    RUN(registration);
    RUN(handlers);
    RUN(toggling);
    RUN(threads);
    RUN(kretprobes);
    RUN(statistics);
    RUN(jprobes);
    RUN(fault_handlers);
    RUN(examples);
    printf("checks %d failed %d\n", checks, failed);
    return failed != 0;
}
