// C++ exceptions through return-probed frames. Bake with
//   --probe 'outer%return' --probe 'inner%return' --probe 'thrower%return'
// A throw from thrower() passes through inner() and outer() (both hooked)
// and is caught in main above them; the unwinder must see the real return
// addresses. Afterwards every instance must be free again.
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

static long returns, bad;
static int on_return(kretprobe_instance *ri, pt_regs *regs)
{
    (void)ri;
    if (regs->ip != (unsigned long)ri->ret_addr)
        bad++;
    returns++;
    return 0;
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
    return 0;
}
