/* t/funcfind.t: calls the assembly of funcfind.S (no symbol, no CFI once
 * stripped) a known number of times each, and prints what it computed and
 * the bytes of the decoy (data, which a probe would change). */
#include <stdio.h>

int ff_called(int), ff_outer(int), ff_ptr_a(int), ff_ptr_b(int), ff_c_tail(int), ff_switch(unsigned);
int ff_sum_decoy(void);
extern const unsigned char ff_decoy_data[], ff_outer_mid[];

static int (*const ops[])(int) = { ff_ptr_a, ff_ptr_b };     /* a table of function pointers */
static const unsigned char *volatile decoy = ff_decoy_data;   /* pointers in data to what is no function */
static const unsigned char *volatile mid = ff_outer_mid;
static volatile unsigned pick[] = { 0, 1, 1, 0, 1, 0, 1, 1, 0 };   /* ff_ptr_a 4 times, ff_ptr_b 5 */

/* a tail call: jmp ff_c_tail with the frame at its entry */
__attribute__((noinline)) static int wrap(int x)
{
    return ff_c_tail(x + 5);
}

int main(void)
{
    long sum = 0;
    int bytes = 0;
    for (int i = 0; i < 3; i++)
        sum += ff_called(i);
    for (int i = 0; i < 2; i++)
        sum += ff_outer(i);
    for (unsigned i = 0; i < sizeof pick / sizeof pick[0]; i++)
        sum += ops[pick[i]]((int)i);
    for (int i = 0; i < 6; i++)
        sum += wrap(i);
    for (unsigned i = 0; i < 7; i++)
        sum += ff_switch(i % 5);   /* the four cases, and the computed jump */
    for (int i = 0; i < 8; i++)
        bytes += decoy[i];
    printf("sum %ld decoy %d %d %d mid %s\n", sum, bytes, ff_sum_decoy(), ff_sum_decoy(), mid ? "set" : "unset");
    return 0;
}
