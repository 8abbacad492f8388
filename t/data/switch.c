/* Dense switches whose cases do different work: compiled to jump tables. */
#include <stdio.h>
__attribute__((noinline)) static int twice(int x) { return 2 * x; }
__attribute__((noinline)) static int square(int x) { return x * x; }
__attribute__((noinline)) int classify(int c, int v)
{
    switch (c) {
    case 0: return twice(v) + 1;
    case 1: return square(v) - 3;
    case 2: return twice(v + 7);
    case 3: return square(v + 1) * 5;
    case 4: return puts("four");
    case 5: return twice(square(v));
    case 6: return v - 99;
    case 7: return square(twice(v)) + 13;
    default: return -1;
    }
}
__attribute__((noinline)) int name(unsigned char c, int v)
{
    switch (c) {
    case 'a': v = twice(v); break;
    case 'b': v = square(v); break;
    case 'c': v = puts("charlie"); break;
    case 'd': v += 1000; break;
    case 'e': v = twice(v) * 3; break;
    case 'f': v = square(v) + 7; break;
    case 'g': v = -v; break;
    default: v = 0; break;
    }
    return v + 1;
}
int main(int argc, char **argv)
{
    int sum = 0;
    for (int i = -1; i < 9 + argc; i++)
        sum += classify(i, i + argc) + name((unsigned char)('a' + i), i);
    printf("%d %c\n", sum, argv[0][0]);
    return 0;
}
