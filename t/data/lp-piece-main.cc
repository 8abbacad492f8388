// t/landing-pads.t: throws through hot's landing pad in `piece`.
#include <cstdio>
extern "C" int hot(int);
extern "C" int pad_hits;
extern "C" int thrower(int x)
{
    if (x % 3 == 0)
        throw x;
    return x * 10;
}
int main()
{
    int sum = 0, caught = 0;
    for (int i = 0; i < 10; i++) {
        try {
            sum += hot(i);
        } catch (int e) {
            caught += e + 1;
        }
    }
    std::printf("sum %d caught %d pad %d\n", sum, caught, pad_hits);
}
