// C++ exceptions through return-probed frames. Bake with
//   --probe 'outer%return' --probe 'inner%return' --probe 'thrower%return'
// A throw from thrower() passes through inner() and outer() (both hooked)
// and is caught in main above them; the unwinder must see the real return
// addresses. Afterwards every instance must be free again: and in the
// hands of one thread at a time, when two threads then compete for them.
#include <pthread.h>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <kprewrite/kprobes.h>

#define NOINLINE __attribute__((noinline, noipa))
volatile long sink;

struct Guard {   // a destructor in a hooked frame must run during unwinding
    static long dtors;
    ~Guard() { dtors++; }
};
long Guard::dtors;

extern "C" NOINLINE long thrower(long x)
{
    if (x % 3 == 0)
        throw std::runtime_error("three");
    return x * 2;
}

extern "C" NOINLINE long inner(long x)
{
    Guard g;
    long r = thrower(x);
    sink = r;
    return r + 1;
}

extern "C" NOINLINE long outer(long x)
{
    long r = inner(x);
    sink = r;
    return r + 1;
}

static long returns, bad, phase2[3];
static int on_return(kretprobe_instance *ri, pt_regs *regs)
{
    if (regs->ip != (unsigned long)ri->ret_addr || !pthread_equal(ri->thread, pthread_self()))
        __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&returns, 1, __ATOMIC_RELAXED);
    return 0;
}

// After the throws: the instances they freed are shared by two threads
// calling at once (maxactive 1: most calls miss). An instance still
// cached by the thread that threw would be used by both, which the
// handler sees (its thread is the other's).
static void *compete(void *arg)
{
    long *calls = (long *)arg;
    for (long x = 1; x < (calls == &phase2[2] ? 30 : 200000); x += 3, (*calls)++)   // no multiple of 3: no throw
        sink = outer(x) + outer(x + 1);
    return nullptr;
}

int main(int argc, char **argv)
{
    bool probe = argc > 1 && !strcmp(argv[1], "probe");
    kretprobe o{}, i{}, t{};
    o.kp.symbol_name = "outer";
    i.kp.symbol_name = "inner";
    t.kp.symbol_name = "thrower";
    for (kretprobe *rp : { &o, &i, &t }) {
        rp->handler = on_return;
        rp->maxactive = 1;   // one call each at a time: a leak shows as nmissed
    }
    kretprobe *all[] = { &o, &i, &t };
    if (probe && register_kretprobes(all, 3) != 0) {
        std::printf("register failed\n");
        return 1;
    }
    long caught = 0, sum = 0;
    for (long x = 0; x < 300; x++) {
        try {
            sum += outer(x);
        } catch (const std::runtime_error &e) {
            caught++;
        }
    }
    std::printf("caught %ld sum %ld dtors %ld\n", caught, sum, Guard::dtors);
    if (probe)
        // 200 calls returned through each of 3 functions; 100 throws
        std::printf("returns %ld bad %ld nmissed %d %d %d\n", returns, bad, o.nmissed, i.nmissed, t.nmissed);
    if (probe && argc > 2 && !strcmp(argv[2], "compete")) {
        try {   // end on a throw: the instances it frees were last this thread's
            sink = outer(300);
        } catch (const std::runtime_error &e) {
            caught++;
        }
        long before = returns, missed = o.nmissed + i.nmissed + t.nmissed;
        pthread_t th;
        // first another thread alone, which takes those instances, keeps
        // them a while and gives them back when it ends; then two at once
        pthread_create(&th, nullptr, compete, &phase2[2]);
        pthread_join(th, nullptr);
        pthread_create(&th, nullptr, compete, &phase2[1]);
        compete(&phase2[0]);
        pthread_join(th, nullptr);
        // every entry of the 3 functions either hooked its call or missed
        long entries = 3 * 2 * (phase2[0] + phase2[1] + phase2[2]);
        long accounted = returns - before + (o.nmissed + i.nmissed + t.nmissed - missed);
        std::printf("compete bad %ld accounted %s\n", bad, accounted == entries ? "all" : "not all");
    }
    return 0;
}
