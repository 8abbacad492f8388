/*
 * t/kernel-detour.t: runs kernel-contract detours in user space. This
 * program stands in for a vmlinux: it links the kernel pool
 * (src/runtime/kernel/pool.S) and a kprewrite_dispatch() that records the
 * pt_regs each detour built and, with "modify", writes registers back.
 *
 *   kdetour-main mid        print kfn's mid-point offset
 *   kdetour-main run [modify]
 *   kdetour-main returns    patch the return sites, call kretsite()
 *   kdetour-main alternatives   apply the alternatives, call kalt() and kalt2()
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "kprewrite/abi.h"
#include "kprewrite/ptrace.h"

long kfn(long a);
long kreloc(void);
long kfentry(long a);
int kloop(void);
long kretsite(void);
long kalt(void), kalt2(void);
extern const uint8_t kdetour_alt[], kdetour_alt_end[];
void __x86_return_thunk(void);
extern const int32_t kdetour_return_sites[], kdetour_return_sites_end[];
extern const char kprewrite_pool_text[], kprewrite_pool_text_end[];
extern unsigned long kfn_sp;
extern const long kfn_mid_off;

static struct pt_regs seen[2];
static unsigned long seen_sp[2];
static int hits[2], modify;

extern struct kprw_state kprewrite_pool_state[];   /* pool.S */
void kprewrite_dispatch(struct kprw_state *st, struct pt_regs *regs);
void kprewrite_dispatch(struct kprw_state *st, struct pt_regs *regs)
{
    unsigned long i = (unsigned long)(st - kprewrite_pool_state);   /* 0: kfn+0, 1: the mid point (address order) */
    if (i > 1)
        return;
    hits[i]++;
    seen[i] = *regs;
    seen_sp[i] = (unsigned long)(regs + 1);   /* as the kernel runtime fills regs->sp */
    if (!modify)
        return;
    if (i == 0)
        regs->di = 100;
    else {
        regs->flags &= ~0x40ul;   /* ZF */
        regs->bx = 0;
    }
}

/* As the kernel's apply_returns() does at boot with no return thunk
 * needed: each listed jmp to __x86_return_thunk becomes ret, int3s.
 * Prints how many were patched and how many of them are in the pool. */
static void apply_returns(void)
{
    int patched = 0, in_pool = 0;
    for (const int32_t *e = kdetour_return_sites; e < kdetour_return_sites_end; e++) {
        uint8_t *site = (uint8_t *)e + *e;
        int32_t rel;
        memcpy(&rel, site + 1, 4);
        if (site[0] != 0xe9 || site + 5 + rel != (uint8_t *)__x86_return_thunk)
            continue;   /* the kernel warns and skips it */
        uintptr_t page = (uintptr_t)site & ~(uintptr_t)4095;
        if (mprotect((void *)page, ((uintptr_t)site + 5 - page + 4095) & ~(uintptr_t)4095,
                     PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
            continue;
        memcpy(site, "\xc3\xcc\xcc\xcc\xcc", 5);
        patched++;
        in_pool += (const char *)site >= kprewrite_pool_text && (const char *)site < kprewrite_pool_text_end;
    }
    printf("return sites: %d patched, %d in the pool\n", patched, in_pool);
}

/* As the kernel's apply_alternatives() does at boot for a feature the CPU
 * has: each entry's replacement is copied over its site. */
static void apply_alternatives(void)
{
    int patched = 0, in_pool = 0;
    for (const uint8_t *e = kdetour_alt; e + 12 <= kdetour_alt_end; e += 12) {
        int32_t instr, repl;
        memcpy(&instr, e, 4);
        memcpy(&repl, e + 4, 4);
        uint8_t *site = (uint8_t *)e + instr, len = e[10], rlen = e[11];
        const uint8_t *r = e + 4 + repl;
        uintptr_t page = (uintptr_t)site & ~(uintptr_t)4095;
        if (rlen > len || mprotect((void *)page, ((uintptr_t)site + len - page + 4095) & ~(uintptr_t)4095,
                                   PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
            continue;
        memcpy(site, r, rlen);
        memset(site + rlen, 0x90, len - rlen);
        if (rlen == 5 && (r[0] == 0xe9 || r[0] == 0xe8)) {
            /* a jmp or call rel32: aimed from the site (6.1's fix-up) */
            int32_t rel;
            memcpy(&rel, site + 1, 4);
            rel += (int32_t)(r - site);
            memcpy(site + 1, &rel, 4);
        }
        patched++;
        in_pool += (const char *)site >= kprewrite_pool_text && (const char *)site < kprewrite_pool_text_end;
    }
    printf("alternatives: %d applied, %d in the pool\n", patched, in_pool);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "mid") == 0) {
        printf("%ld\n", kfn_mid_off);
        return 0;
    }
    modify = argc > 2 && strcmp(argv[2], "modify") == 0;
    if (argc > 1 && strcmp(argv[1], "alternatives") == 0) {
        printf("kalt() = %ld, kalt2() = %ld as linked\n", kalt(), kalt2());
        apply_alternatives();
        long r = kalt(), r2 = kalt2();
        printf("kalt() = %ld, kalt2() = %ld, hits %d %d\n", r, r2, hits[0], hits[1]);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "returns") == 0) {
        apply_returns();
        long r = kretsite();
        printf("kretsite() = %ld, hits %d\n", r, hits[0]);
        return 0;
    }
    long kr = kreloc();   /* first: where it alone is probed, its hit is hits[0] */
    long r = kfn(5);
    int loops = kloop();
    printf("kfn(5) = %ld kloop() = %d\n", r, loops);
    long f = kfentry(5);
    printf("hits %d %d\n", hits[0], hits[1]);
    printf("kfentry(5) = %ld\n", f);
    if (hits[0])
        printf("entry: di %lu sp-ok %d\n", seen[0].di, seen_sp[0] == kfn_sp + 8);
    if (hits[1])
        printf("mid: di %lu bx %#lx zf %d if %d sp-ok %d\n", seen[1].di, seen[1].bx, !!(seen[1].flags & 0x40),
               !!(seen[1].flags & 0x200), seen_sp[1] == kfn_sp);
    printf("kreloc() is &kfn_sp: %d\n", kr == (long)&kfn_sp);
    return 0;
}
