/* t/undecodable-operands.t: calls the functions of undecoded-ops.S. */
#include <stdio.h>

int lea_first(void), lea_second(void), lea_after(void);

int main(void)
{
    for (int i = 0; i < 3; i++)
        printf("%d %d %d\n", lea_first(), lea_second(), lea_after());
    return 0;
}
