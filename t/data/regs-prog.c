/* Register transparency, t/regs.t: every general and vector register a
 * probed function leaves alone must come back from the call unchanged,
 * with the probe's handlers present (argument "handlers") or absent, at
 * entry kprobes, return probes, int3 probes and a mid-function probe where
 * the flags are live. Built with -O2 (-fipa-ra: GCC's callers keep values
 * in caller-saved registers across calls to functions known to leave
 * them alone, as in ipa_caller below); the asm callers (regs-asm.S) cover
 * every register, those GCC would not pick too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef WITH_RUNTIME
#include "kprewrite/kprobes.h"
#endif

struct regs {
    uint64_t gpr[15];          /* rax rbx rcx rdx rsi rdi rbp r8..r15 */
    uint64_t flags;
    uint8_t xmm[16][16];
};
static const char *const gpr_name[15] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9",
                                          "r10", "r11", "r12", "r13", "r14", "r15" };

long leaf_entry(long), leaf_ret(long), leaf_int3(long), leaf_int3_ret(long), leaf_mid(long, long);
void call_with_regs(long (*fn)(void), const struct regs *in, struct regs *out);

/* One call of fn with every register set to a pattern of its own; rdi
 * (and rsi) are its arguments, rcx is non-zero (jrcxz not taken). Prints
 * what changed besides %rax and what the leaf's result should be. */
static int check(const char *name, long (*fn)(void), int round, long di, long si, long want)
{
    struct regs in, out;
    for (int i = 0; i < 15; i++)
        in.gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1) + (uint64_t)round;
    in.gpr[5] = (uint64_t)di;
    in.gpr[4] = (uint64_t)si;
    in.flags = 0x202 | 0x8d5;          /* CF PF AF ZF SF OF, IF */
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 16; b++)
            in.xmm[r][b] = (uint8_t)(r * 16 + b + round);
    memset(&out, 0, sizeof out);
    call_with_regs(fn, &in, &out);
    char bad[400] = "";
    size_t n = 0;
    if (out.gpr[0] != (uint64_t)want)
        n += (size_t)snprintf(bad + n, sizeof bad - n, " rax=%#llx(want %#lx)", (unsigned long long)out.gpr[0], want);
    for (int i = 1; i < 15; i++)
        if (out.gpr[i] != in.gpr[i])
            n += (size_t)snprintf(bad + n, sizeof bad - n, " %s", gpr_name[i]);
    for (int r = 0; r < 16; r++)
        if (memcmp(out.xmm[r], in.xmm[r], 16))
            n += (size_t)snprintf(bad + n, sizeof bad - n, " xmm%d", r);
    printf("%s round %d: %s\n", name, round, n ? "changed:" : "ok");
    if (n)
        printf("  %s\n", bad);
    return n != 0;
}

/* -fipa-ra: these callers may keep values in caller-saved registers
 * across the calls (checked by their results) */
/* (unsigned: the products wrap, which is defined) */
__attribute__((noinline, noclone)) unsigned long ipa_leaf(unsigned long x) { return x * 3 + 1; }
__attribute__((noinline, noclone)) unsigned long ipa_leaf2(unsigned long x) { return x ^ 0x55; }
__attribute__((noinline, noclone)) unsigned long ipa_caller(unsigned long a, unsigned long b, unsigned long c,
                                                            unsigned long d, unsigned long e)
{
    unsigned long r = ipa_leaf(a);
    r += ipa_leaf(b) + a + b + c + d + e;
    r += ipa_leaf2(c) * a * b * c * d * e;
    return r + ipa_leaf2(d) + a - b + c - d + e;
}

#ifdef WITH_RUNTIME
/* Handlers that look at what they are given: the argument in di and the
 * register values the caller set, and the return value at a return. */
static long seen_bad, seen_pre, seen_ret;
/* the caller's patterns (check()): register i holds 0x11..11 * (i + 1) + round */
static int pattern(uint64_t v, int i) { return v - 0x1111111111111111ull * (uint64_t)(i + 1) < 3; }
static int pre(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    seen_pre++;
    if (!pattern(regs->bx, 1) || !pattern(regs->r10, 9) || !pattern(regs->r11, 10) || !pattern(regs->r15, 14))
        seen_bad++;
    return 0;
}
static int pre_count(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    (void)regs;
    seen_pre++;
    return 0;
}
static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)ri;
    (void)regs;
    seen_ret++;
    return 0;
}
static struct kprobe kps[] = {
    { .symbol_name = "leaf_entry", .pre_handler = pre },
    { .symbol_name = "leaf_int3", .pre_handler = pre },
    { .symbol_name = "leaf_mid", .offset = 3, .pre_handler = pre },
    { .symbol_name = "ipa_leaf", .pre_handler = pre_count },
};
static struct kretprobe krps[] = {
    { .kp.symbol_name = "leaf_ret", .handler = ret_handler },
    { .kp.symbol_name = "leaf_int3_ret", .handler = ret_handler },
    { .kp.symbol_name = "ipa_leaf2", .handler = ret_handler },
};
#endif

int main(int argc, char **argv)
{
    int bad = 0, handlers = argc > 1 && strcmp(argv[1], "handlers") == 0;
    if (handlers) {
#ifdef WITH_RUNTIME
        for (size_t i = 0; i < sizeof kps / sizeof kps[0]; i++)
            if (register_kprobe(&kps[i]) < 0) {
                printf("register_kprobe %s failed\n", kps[i].symbol_name);
                return 1;
            }
        for (size_t i = 0; i < sizeof krps / sizeof krps[0]; i++)
            if (register_kretprobe(&krps[i]) < 0) {
                printf("register_kretprobe %s failed\n", krps[i].kp.symbol_name);
                return 1;
            }
#else
        printf("built without the runtime\n");
        return 1;
#endif
    }
    for (int round = 0; round < 3; round++) {
        bad |= check("leaf_entry", (long (*)(void))leaf_entry, round, 5, 0, 5 + 0x1234567);
        bad |= check("leaf_ret", (long (*)(void))leaf_ret, round, 6, 0, 12 + 0x7654321);
        bad |= check("leaf_int3", (long (*)(void))leaf_int3, round, 7, 0, 8);
        bad |= check("leaf_int3_ret", (long (*)(void))leaf_int3_ret, round, 8, 0, 10);
        bad |= check("leaf_mid", (long (*)(void))leaf_mid, round, 3, 9, 1);
        bad |= check("leaf_mid", (long (*)(void))leaf_mid, round, 9, 3, 0);
    }
    unsigned long sum = 0;
    for (unsigned long i = 0; i < 1000; i++)
        sum += ipa_caller(i, i + 1, i + 2, i + 3, i + 4);
    printf("ipa_caller sum %lu\n", sum);
#ifdef WITH_RUNTIME
    if (handlers)
        printf("handlers: pre %ld ret %ld bad %ld\n", seen_pre, seen_ret, seen_bad);
#endif
    return bad;
}
