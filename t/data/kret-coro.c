/*
 * Return probes and coroutines (ucontext): bake with --probe 'f%return'
 * --probe 'g%return'. f runs a coroutine that suspends inside g; f then
 * returns (an older hooked call of the thread returns while a newer one
 * waits on another stack), and the coroutine is resumed (g returns), or
 * abandoned and its stack freed. `coro MODE [N]`, MODE:
 *   resume    the coroutine's stack is mapped memory (below the thread's)
 *   local     it is an array in main's frame (above f's)
 *   abandon   it is never resumed, and its stack is unmapped before f returns
 * Prints what the calls computed and how many return handlers ran: the
 * same values with and without the probes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <kprewrite/kprobes.h>

#define STACK (128 * 1024)
static ucontext_t main_ctx, co_ctx;
static long sum_f, sum_g, returns;
static char *abandoned;   /* abandon: the coroutine stack f frees before it returns */

__attribute__((noinline)) long g(long x)
{
    swapcontext(&co_ctx, &main_ctx);   /* suspend inside g */
    asm volatile("");
    return x + 1;
}

__attribute__((noinline)) long f(long x)
{
    swapcontext(&main_ctx, &co_ctx);   /* run the coroutine until it suspends */
    if (abandoned)
        munmap(abandoned, STACK);      /* with g's frame, hooked, on it */
    return x + 2;
}

static void body(void) { sum_g += g(1); }

static int on_return(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri; (void)r; returns++; return 0; }

static void start(char *stack)
{
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = STACK;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, body, 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "resume";
    long n = argc > 2 ? atol(argv[2]) : 1000;
    static struct kretprobe rf = { .kp = { .symbol_name = "f" }, .handler = on_return };
    static struct kretprobe rg = { .kp = { .symbol_name = "g" }, .handler = on_return };
    register_kretprobe(&rf);   /* -ENOENT before the probes are baked */
    register_kretprobe(&rg);
    char local[STACK] __attribute__((aligned(16)));
    for (long i = 0; i < n; i++) {
        char *stack = local;
        if (strcmp(mode, "local") != 0) {
            stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            if (stack == MAP_FAILED)
                return 1;
        }
        start(stack);
        if (strcmp(mode, "abandon") == 0) {
            abandoned = stack;
            sum_f += f(1);   /* the coroutine is never resumed */
            abandoned = NULL;
            continue;
        }
        sum_f += f(1);                      /* returns while g waits */
        swapcontext(&main_ctx, &co_ctx);    /* g returns; the coroutine ends */
        if (stack != local)
            munmap(stack, STACK);
    }
    printf("%s f %ld g %ld\n", mode, sum_f, sum_g);
    fprintf(stderr, "returns %ld nmissed %d %d\n", returns, rf.nmissed, rg.nmissed);
    return 0;
}
