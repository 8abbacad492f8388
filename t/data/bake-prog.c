/* Fixture for t/bake.t: a program linked with the kprewrite runtime.
 * Modes: plain (output only), api (handler API checks), threads (exact
 * counts), recursion (nmissed). Handlers are built with -mgeneral-regs-only. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kprewrite/kprobes.h>

int flagtest(int a, int b);
int riptest(int a);
int calltest(int a);
void regtest(void);
extern const char regtest_point[];
extern unsigned long reg_out[15], reg_sp;

__attribute__((noipa)) int add3(int a, int b, int c) { return a + b + c; }
__attribute__((noipa)) long mix(long x)
{
    long r = 0;
    for (int i = 0; i < 8; i++)
        r = r * 31 + ((x >> i) & 0xff) + (i % 3 == 0 ? 7 : 3);
    return r;
}
static volatile int depth_sink;
__attribute__((noipa)) int recurse(int n)
{
    depth_sink = n;                     /* keeps the recursion a real call chain */
    if (n <= 0)
        return 0;
    int r = recurse(n - 1);
    depth_sink = r;
    return 1 + r;
}
static volatile long work_sink;
__attribute__((noipa)) void work(void) { work_sink = work_sink + 1; }

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

static int add3_hits, seen_di, seen_si, seen_dx, flag_hits, recurse_calls;
static int pre_add3(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp;
    add3_hits++;
    seen_di = (int)r->di; seen_si = (int)r->si; seen_dx = (int)r->dx;
    r->di = 100;                        /* takes effect: add3 sees a = 100 */
    return 0;
}
static int pre_flags(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp;
    volatile int x = flag_hits++;       /* arithmetic that changes the real flags */
    r->ax = (unsigned long)(x * 3 + 1);
    return 0;
}
static int pre_count(struct kprobe *kp, struct pt_regs *r) { (void)kp; (void)r; return 0; }
static int pre_recurse(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp; (void)r;
    recurse_calls++;
    recurse(2);                         /* hits the probe again: nmissed, no handler */
    return 0;
}

/* regtest's registers, in reg_out order, as pt_regs shows them */
static unsigned long reg_seen[15], seen_sp, seen_ip, seen_flags;
static volatile unsigned long one = 1;   /* no regtest_point + 1 for the rewriter to see */
static int pre_regs(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp;
    unsigned long v[15] = { r->ax, r->cx, r->dx, r->bx, r->bp, r->si, r->di, r->r8,
                            r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15 };
    memcpy(reg_seen, v, sizeof v);
    seen_sp = r->sp, seen_ip = r->ip, seen_flags = r->flags;
    /* writes take effect, callee-saved registers included */
    r->bx = 0xb0b0; r->bp = 0xb1b1; r->r12 = 0xb2b2; r->r15 = 0xb3b3; r->r9 = 0xb4b4; r->ax = 0xb5b5;
    /* ignored, as in the kernel's optimized path: a shared detour keeps its
     * return address out of pt_regs, so this cannot send it elsewhere */
    r->cs = 0; r->ss = 0;
    return 0;
}

static void regs_check(void)
{
    struct kprobe kp = { .symbol_name = "regtest", .offset = (unsigned)(regtest_point - (const char *)regtest),
                         .pre_handler = pre_regs };
    CHECK(register_kprobe(&kp) == 0, "register regtest+%u", kp.offset);
    regtest();
    int seen_ok = 1, out_ok = 1;
    for (int i = 0; i < 15; i++) {
        unsigned long want = 0x0101010101010101ul * (unsigned long)(i + 1);
        seen_ok &= reg_seen[i] == want;
        unsigned long changed = i == 0 ? 0xb5b5 : i == 3 ? 0xb0b0 : i == 4 ? 0xb1b1 : i == 8 ? 0xb4b4
                              : i == 11 ? 0xb2b2 : i == 14 ? 0xb3b3 : want;
        out_ok &= reg_out[i] == changed;
        if (reg_seen[i] != want || reg_out[i] != changed)
            printf("reg %d: seen %lx out %lx\n", i, reg_seen[i], reg_out[i]);
    }
    CHECK(seen_ok, "the handler saw every register's value at the point");
    CHECK(out_ok, "the handler's writes (ax bx bp r9 r12 r15) took effect, the rest kept");
    CHECK(seen_sp == reg_sp, "regs->sp is the probed code's %%rsp (%lx, want %lx)", seen_sp, reg_sp);
    CHECK(seen_ip - one == (unsigned long)regtest_point, "regs->ip is the probe address + 1, as after an int3");
    CHECK((seen_flags & 0x202) == 0x202, "regs->flags has IF and bit 1 (%lx)", seen_flags);
    unregister_kprobe(&kp);
}

static void plain(void)
{
    long acc = 0;
    for (int i = 0; i < 1000; i++)
        acc += add3(i, 2 * i, 3) + mix(i) + flagtest(i % 7, 3) + riptest(i) + calltest(i);
    regtest();
    for (int i = 0; i < 15; i++)
        acc += (long)(reg_out[i] % 1000003);
    printf("acc %ld recurse %d\n", acc, recurse(10));
}

static void api(void)
{
    struct kprobe both = { .symbol_name = "add3", .addr = (void *)add3, .pre_handler = pre_count };
    CHECK(register_kprobe(&both) == -EINVAL, "symbol_name and addr -> -EINVAL");
    struct kprobe none = { .symbol_name = "not_baked_anywhere", .pre_handler = pre_count };
    CHECK(register_kprobe(&none) == -ENOENT, "a point that was not baked -> -ENOENT");

    struct kprobe a = { .symbol_name = "add3", .pre_handler = pre_add3 };
    CHECK(register_kprobe(&a) == 0, "register add3");
    /* on an endbr64 function, SYM+0 is placed after it, as the kernel does */
    CHECK(a.addr == (void *)add3 || a.addr == (void *)((char *)add3 + 4), "addr filled in");
    int r = add3(1, 2, 3);
    CHECK(add3_hits == 1 && seen_di == 1 && seen_si == 2 && seen_dx == 3, "handler saw di/si/dx = 1/2/3 (%d %d %d)",
          seen_di, seen_si, seen_dx);
    CHECK(r == 105, "a changed rdi is visible: %d", r);
    struct kprobe a2 = { .addr = (void *)add3, .pre_handler = pre_count };
    CHECK(register_kprobe(&a2) == 0, "second kprobe at the same address");
    CHECK(disable_kprobe(&a) == 0, "disable");
    r = add3(1, 2, 3);
    CHECK(r == 6 && add3_hits == 1, "disabled handler does not run");
    CHECK(enable_kprobe(&a) == 0, "enable");
    add3(1, 2, 3);
    CHECK(add3_hits == 2, "enabled again");
    unregister_kprobe(&a);
    unregister_kprobe(&a2);
    add3(1, 2, 3);
    CHECK(add3_hits == 2, "unregistered");

    struct kprobe b1 = { .symbol_name = "mix", .pre_handler = pre_count };
    struct kprobe b2 = { .symbol_name = "add3", .pre_handler = pre_add3 };
    struct kprobe b3 = { .symbol_name = "no_such_point", .pre_handler = pre_count };
    struct kprobe *batch[] = { &b1, &b2, &b3 };
    CHECK(register_kprobes(batch, 3) == -ENOENT, "batch with a bad probe fails");
    add3(1, 2, 3);
    CHECK(add3_hits == 2 && b1.__point == NULL && b2.__point == NULL, "batch rolled back");
    struct kprobe *good[] = { &b1, &b2 };
    /* as in the kernel, a symbol_name kprobe keeps its addr: registered
     * again as it is, both are set (-EINVAL) */
    CHECK(b1.addr && b2.addr && register_kprobes(good, 2) == -EINVAL, "rolled back: addr kept, -EINVAL again");
    b1.addr = b2.addr = NULL;
    CHECK(register_kprobes(good, 2) == 0, "batch registers");
    add3(1, 2, 3);
    CHECK(add3_hits == 3, "batch handler runs");
    unregister_kprobes(good, 2);

    struct kprobe f = { .symbol_name = "flagtest", .offset = 2, .pre_handler = pre_flags };
    CHECK(register_kprobe(&f) == 0, "register flagtest+2 (between cmp and jl)");
    int lt = flagtest(1, 2), ge = flagtest(3, 2), eq = flagtest(2, 2);
    CHECK(lt == 1 && ge == 2 && eq == 2 && flag_hits == 3, "flags survive the probe: %d %d %d (%d hits)", lt, ge, eq,
          flag_hits);
    unregister_kprobe(&f);

    struct kprobe rc = { .symbol_name = "recurse", .pre_handler = pre_recurse };
    CHECK(register_kprobe(&rc) == 0, "register recurse");
    int depth = recurse(1);
    /* outer calls: recurse(1), recurse(0) run the handler; each handler's recurse(2)
     * makes 3 calls that hit the probe inside a handler */
    CHECK(depth == 1 && recurse_calls == 2 && rc.nmissed == 6, "recursion guard: %d handlers, nmissed %lu",
          recurse_calls, rc.nmissed);
    unregister_kprobe(&rc);

    regs_check();
    printf("api %s\n", failures ? "FAILED" : "ok");
}

static void *thread_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++)
        work();
    return NULL;
}

static void threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    work();
    struct kprewrite_point_stats st;
    int rc = kprewrite_point_stats("work", 0, &st);
    printf("threads rc %d hits %lu\n", rc, st.hits);
}

int fpu_mode(void);

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    if (!strcmp(mode, "fpu"))
        return fpu_mode();
    if (!strcmp(mode, "api"))
        api();
    else if (!strcmp(mode, "threads"))
        threads();
    else
        plain();
    return failures != 0;
}
