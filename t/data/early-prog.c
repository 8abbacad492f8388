/* A probed function hit before any constructor has run (.preinit_array):
 * the runtime must find the linked pool from the state alone. */
#include <stdio.h>

__attribute__((noipa)) int early_fn(int x) { return x * 3 + 1; }
static volatile int sink;
static void pre(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    for (int i = 0; i < 7; i++)
        sink += early_fn(i);
}
__attribute__((section(".preinit_array"), used)) static void (*const pre_ptr)(int, char **, char **) = pre;

int main(void)
{
    for (int i = 0; i < 5; i++)
        sink += early_fn(i);
    printf("%d\n", sink);
    return 0;
}
