/* t/tactics.t: calls each function of tactics.S, prints what it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long t_loop(long), t_far(long), pk_before(long), pk_loop(long), pk_after(long);
int pk_short(int);
int t_switch(long);
int t_short(int), t_next(int), t_short_ret(int), t_after(int);

/* serve STOP: call everything and check each result until STOP exists
 * (or 60 s), while t/tactics.t toggles the probes */
static int serve(const char *stop)
{
    long calls = 0, bad = 0;
    time_t end = time(NULL) + 60;
    while (access(stop, F_OK) != 0 && time(NULL) < end) {
        for (long n = 1; n <= 20; n++, calls += 2)
            bad += (t_loop(n) != n * (n + 1) / 2) + (t_far(n) != n * (n + 1) / 2);
        for (long k = -1; k <= 3; k++, calls++)
            bad += t_switch(k) != (k >= 0 && k <= 2 ? 10 + k : -1);
        for (int x = 0; x < 20; x++, calls += 4)
            bad += (t_short(x) != x + 7) + (t_next(x) != 3 * x) + (t_short_ret(x) != x - 1) + (t_after(x) != (x ^ 5));
        for (long x = 1; x <= 20; x++, calls += 4)
            bad += (pk_before(x) != x + 40) + (pk_short((int)x) != x + 7) + (pk_loop(x) != x * (x + 1) / 2) +
                   (pk_after(x) != x - 40);
    }
    printf("served %s, bad %ld\n", calls > 1000 ? "many calls" : "few calls", bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2]);
    long rounds = argc > 1 ? atol(argv[1]) : 3;
    long sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (long n = 1; n <= 10; n++)
            sum += t_loop(n) * 3 + t_far(n) * 5;
        for (long k = -1; k <= 3; k++)
            sum += t_switch(k) * (k + 7);
        for (int x = 0; x < 10; x++)
            sum += t_short(x) + t_next(x) * 11 + t_short_ret(x) * 13 + t_after(x) * 17;
        for (long x = 1; x <= 10; x++)
            sum += pk_before(x) * 3 + pk_short((int)x) * 5 + pk_loop(x) * 7 + pk_after(x) * 11;
    }
    printf("rounds %ld sum %ld\n", rounds, sum);
    printf("t_loop(4) %ld t_far(4) %ld t_switch(1) %d t_short(1) %d t_next(2) %d t_short_ret(9) %d t_after(3) %d\n",
           t_loop(4), t_far(4), t_switch(1), t_short(1), t_next(2), t_short_ret(9), t_after(3));
    return 0;
}
