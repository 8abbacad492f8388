/* Entry point for the verdicts fixture: links the assembly and calls puts
 * (so the image has a PLT). */
#include <stdio.h>
extern int f_opt(void), f_switch(int), f_jcc(int), f_padded(void);
int main(void)
{
    puts("verdicts");
    return f_opt() + f_switch(1) + f_jcc(0) + f_padded() == 0;
}
