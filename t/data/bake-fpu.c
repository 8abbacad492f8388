/* A handler that uses floating point: needs KPROBE_FLAG_FPU (t/bake.t). */
#include <stdio.h>
#include <kprewrite/kprobes.h>

__attribute__((noipa)) double scale(double x, double y) { return x * y; }

static volatile double sink;
static int pre_fp(struct kprobe *kp, struct pt_regs *r)
{
    (void)kp; (void)r;
    double a = sink + 1.25, b = a * 7.5;    /* clobbers %xmm0/%xmm1 */
    sink = b / 3.0;
    return 0;
}

int fpu_mode(void)
{
    struct kprobe kp = { .symbol_name = "scale", .pre_handler = pre_fp, .flags = KPROBE_FLAG_FPU };
    int rc = register_kprobe(&kp);
    double v = scale(2.0, 3.0);
    printf("fpu rc %d value %.1f\n", rc, v);
    unregister_kprobe(&kp);
    return rc == 0 && v == 6.0 ? 0 : 1;
}
