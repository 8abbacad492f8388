#include <cstdio>
#include <stdexcept>
__attribute__((noinline)) void thrower(int x) { if (x > 1) throw std::runtime_error("boom"); }
__attribute__((noinline)) int catcher(int x)
{
    try { thrower(x); } catch (const std::exception &e) { std::puts(e.what()); return 1; }
    return 0;
}
int main(int argc, char **) { return catcher(argc + 1) - 1; }
