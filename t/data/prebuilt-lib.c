/* A shared library built without the runtime, and (with -DMAIN) a program
 * using it, for t/prebuilt.t. */
#include <stdio.h>
#ifndef MAIN
__attribute__((noinline)) int lib_scale(int x) { return x * 3 + 1; }
int lib_sum(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += lib_scale(i) & 0xff;
    return s;
}
#else
int lib_sum(int n);
int main(void)
{
    printf("lib_sum %d\n", lib_sum(777));
    return 0;
}
#endif
