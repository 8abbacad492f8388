/* t/trace-same-point.t's program: functions that several events share,
 * called a known number of times. leaf() is called plainly and through
 * tail() (a tail call: jmp leaf), rec() recurses; a mode a word:
 *   plain N   leaf(i), tail(i), rec(2) for i in 1..N, each result printed
 *   wait      leaf(k) for the k-th line "go" on stdin, until "exit" (the
 *             test steers it through the control directory meanwhile) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long leaf(long a)
{
    __asm__ volatile("" ::: "memory");
    return a * 2;
}

__attribute__((noinline)) long tail(long a)
{
    return leaf(a + 10);   /* -O2: a jmp */
}

__attribute__((noinline)) long rec(long n)
{
    if (n <= 0)
        return 1;
    long r = rec(n - 1);
    __asm__ volatile("" : "+r"(r));   /* no accumulator: a real call at each level */
    return r * 3 + n;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    if (!strcmp(mode, "wait")) {
        char line[16];
        for (long k = 1; fgets(line, sizeof line, stdin) && strcmp(line, "exit\n"); k++) {
            printf("%ld\n", leaf(k));
            fflush(stdout);
        }
        return 0;
    }
    long n = argc > 2 ? atol(argv[2]) : 2;
    for (long i = 1; i <= n; i++) {
        long x = leaf(i);   /* in this order (a call's arguments have none) */
        long y = tail(i);
        long z = rec(2);
        printf("%ld %ld %ld\n", x, y, z);
    }
    return 0;
}
