/* Handlers for a prebuilt program, loaded with LD_PRELOAD (the program was
 * not built with them): a kprobe counts mix() calls and checks its second
 * argument; a kretprobe records what work() returned. */
#include <stdio.h>
#include <stdlib.h>
#include "kprewrite/kprobes.h"

static long calls, bad_args, ret_seen = -1;
static int on_mix(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    if ((long)regs->si != calls)   /* work() calls mix(s, i) with i = 0, 1, 2... */
        bad_args++;
    calls++;
    return 0;
}
static int on_work_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri;
    ret_seen = (long)regs_return_value(regs);
    return 0;
}
static struct kprobe kp = { .symbol_name = "mix", .pre_handler = on_mix };
static struct kretprobe rp = { .kp.symbol_name = "work", .handler = on_work_ret };

static void report(void)
{
    fprintf(stderr, "handlers: mix %ld bad %ld work returned %ld\n", calls, bad_args, ret_seen);
}
__attribute__((constructor)) static void init(void)
{
    int a = register_kprobe(&kp), b = register_kretprobe(&rp);
    if (a || b)
        fprintf(stderr, "handlers: register_kprobe %d register_kretprobe %d\n", a, b);
    atexit(report);
}
