/* Handlers for t/go.t's Go program, loaded with LD_PRELOAD: a kprobe on
 * main.grow (hit 12,004 times while goroutine stacks grow and are copied)
 * checks that it runs on no goroutine's stack -- its own frame is not just
 * below the probed %rsp -- and that regs->sp is the probed one (the word
 * there is a return address into the program's code, near the point); a
 * kprobe on main.tick prints what the first saw, once. With GO_T_SPIN=N
 * each main.grow hit spins N iterations, so that the goroutines run long
 * in handlers and Go's preemption signals (SIGURG) interrupt them there.
 * With GO_T_JPROBE, a jprobe on main.leaf says what registering it gave. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "kprewrite/kprobes.h"

static long hits, on_goroutine_stack, bad_sp, spin;
static struct kprobe grow;

static int on_grow(struct kprobe *kp, struct pt_regs *regs)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    intptr_t ret = (intptr_t)(*(const uintptr_t *)regs->sp - (uintptr_t)kp->addr);   /* from the point */
    hits++;   /* (the 4 goroutines' hits race: t/go.t compares the point's own count) */
    for (volatile long k = 0; k < spin; k++)
        ;   /* GO_T_SPIN: long enough for Go's preemption signals to land in here */
    if (regs->sp > here && regs->sp - here < (1u << 20))
        on_goroutine_stack++;
    if (regs->sp & 7 || ret < -(16 << 20) || ret > (16 << 20))
        bad_sp++;
    return 0;
}

static int on_tick(struct kprobe *kp, struct pt_regs *regs)
{
    static int said;
    (void)kp;
    (void)regs;
    if (!said++)
        fprintf(stderr, "handlers: grow ran %s, on a goroutine stack %ld times, bad sp %ld times\n",
                hits ? "yes" : "no", on_goroutine_stack, bad_sp);
    return 0;
}

static void on_leaf(void) { jprobe_return(); }

static struct kprobe grow = { .symbol_name = "main.grow", .pre_handler = on_grow };
static struct kprobe tick = { .symbol_name = "main.tick", .pre_handler = on_tick };
static struct jprobe leaf = { .kp.symbol_name = "main.leaf", .entry = (void *)on_leaf };

__attribute__((constructor)) static void init(void)
{
    const char *s = getenv("GO_T_SPIN");
    spin = s ? atol(s) : 0;
    int a = register_kprobe(&grow), b = register_kprobe(&tick);
    if (a || b)
        fprintf(stderr, "handlers: register_kprobe main.grow %d main.tick %d\n", a, b);
    if (getenv("GO_T_JPROBE"))   /* refused in Go code: -EINVAL */
        fprintf(stderr, "handlers: register_jprobe main.leaf %d\n", register_jprobe(&leaf));
}
