/*
 * Go's exit guard. A Go program ends by runtime.exit, Go's own
 * exit_group(2) system call, never through libc's exit or _exit, where the
 * runtime writes the events its rings hold and KPREWRITE_REPORT's counts
 * (trace-env.c, startup.c: interposed, or libc-guard.c's probes). So
 * kprewrite bakes a probe on runtime.exit whenever it bakes a Go program
 * (src/rewriter/golang.c), and the runtime registers a kprobe of its own
 * there, a guard (never disarmed), that does what _exit's does (the counts
 * first: Go's other threads run on until exit_group ends them). It runs on
 * the thread's runtime stack, as every handler of a Go point does
 * (enter-fast.S).
 */
#include "rt.h"

static int on_go_exit(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp, (void)regs;
    rt_before_go_exit();
    return 0;
}

static struct kprobe guard_go_exit = { .pre_handler = on_go_exit };

/* At start-up, after the pools of the objects loaded then registered: the
 * point on runtime.exit of a Go program, when it has one. */
void go_guard_install(void)
{
    rt_lock_take();
    struct point *pt = rt_find_point("runtime.exit", 0, 0);
    if (pt && (pt->flags & KPRW_F_GO))
        rt_register_guard(&guard_go_exit, pt);
    rt_lock_drop();
}
