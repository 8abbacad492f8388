/* t/entry-align.t: a C handler on a function entered as the ABI says
 * (even_entry) and on one entered with the stack one word off (odd_entry,
 * entry-align.S) finds its own stack 16-aligned both times: the runtime
 * realigns before calling C when the probed entry was not aligned. */
#include <stdint.h>
#include <stdio.h>
#include <kprewrite/kprobes.h>

int call_odd(void);
__attribute__((noinline)) int even_entry(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }

/* a 16-aligned local: where the stack is as the compiler assumes, its
 * address is a multiple of 16 */
__attribute__((noinline)) static unsigned misalignment(void)
{
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    uintptr_t a = (uintptr_t)buf;
    __asm__("" : "+r"(a));   /* the compiler would fold a % 16 to 0 */
    return (unsigned)(a % 16);
}

static unsigned hits, bad;
static int pre(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp; (void)regs;
    hits++;
    bad += misalignment() != 0;
    return 0;
}

int main(void)
{
    static struct kprobe odd = { .symbol_name = "odd_entry", .pre_handler = pre };
    static struct kprobe even = { .symbol_name = "even_entry", .pre_handler = pre };
    if (register_kprobe(&odd) < 0 || register_kprobe(&even) < 0) {
        printf("not baked\n");
        return 1;
    }
    int s = 0;
    for (int i = 0; i < 1000; i++)
        s += call_odd() + even_entry(i);
    printf("sum %d hits %u misaligned %u\n", s, hits, bad);
    return 0;
}
