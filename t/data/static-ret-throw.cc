// C++ exceptions through calls the static runtime hooked for return
// events (t/static.t): thrower() throws on every third call, through
// middle(), whose local's destructor runs on the way (a cleanup, then
// _Unwind_Resume); main catches. The output counts what ran. C names
// (extern "C"): probed as the C ones are.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static int destroyed;

struct Local {
    ~Local() { destroyed++; }
};

extern "C" __attribute__((noinline)) int thrower(int i)
{
    if (i % 3 == 0)
        throw std::runtime_error("third");
    return i * 2;
}

extern "C" __attribute__((noinline)) int middle(int i)
{
    Local l;
    int r = thrower(i) + 1;
    __asm__ volatile("" : : : "memory");
    return r;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 9, caught = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        try {
            sum += middle(i);
        } catch (const std::exception &e) {
            caught++;
        }
    }
    std::printf("sum %d caught %d destroyed %d\n", sum, caught, destroyed);
    return 0;
}
