/* A program built without the runtime that works in phases, for
 * t/prebuilt.t's control of a prebuilt image: mix() 100 times each time
 * the file ARGV[1].N appears (N = 1, 2), then exits. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) long mix(long a, long b) { return a * 31 + (b ^ (a >> 3)); }

int main(int argc, char **argv)
{
    long s = 0;
    for (int phase = 1; phase <= 2 && argc > 1; phase++) {
        char go[4096];
        snprintf(go, sizeof go, "%s.%d", argv[1], phase);
        while (access(go, F_OK) != 0)
            usleep(10000);
        for (int i = 0; i < 100; i++)
            s = mix(s, i) % 1000003;
        printf("phase %d: %ld\n", phase, s);
        fflush(stdout);
    }
    return 0;
}
