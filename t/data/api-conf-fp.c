/* t/api-conformance.t: a jprobe on a function with double arguments, whose
 * handler uses the FPU (compiled without -mgeneral-regs-only). */
#include <kprewrite/kprobes.h>

__attribute__((noinline, noipa)) double jp_dbl(double x, double y) { return x * y + 1; }

static volatile double seen_x, seen_y;
static double jp_dbl_handler(double x, double y)
{
    seen_x = x, seen_y = y;
    /* clobber the argument registers */
    volatile double a = 7.25, b = -3.5;
    x = a * b, y = a + b;
    seen_x += x * 0, seen_y += y * 0;
    jprobe_return();
}

int jp_dbl_check(void)
{
    struct jprobe j = { .kp.symbol_name = "jp_dbl", .entry = (void *)jp_dbl_handler };
    int rc = register_jprobe(&j);
    double v = jp_dbl(1.5, 2.0);
    unregister_jprobe(&j);
    return rc == 0 && v == 4.0 && seen_x == 1.5 && seen_y == 2.0;
}
