/* t/trace-caller.t's program: callee() is probed; its callers are not:
 * main, and quiet_caller(), a static function that lies above callee()
 * (the nearest probed function below it is callee itself). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long callee(long a)
{
    __asm__ volatile("" ::: "memory");
    return a + 1;
}

static __attribute__((noinline)) long quiet_caller(long a)
{
    long r = callee(a);
    __asm__ volatile("" : "+r"(r));   /* a call, not a jmp */
    return r * 2;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1;
    long x = callee(n);
    long y = quiet_caller(n);
    printf("%ld %ld\n", x, y);
    return 0;
}
