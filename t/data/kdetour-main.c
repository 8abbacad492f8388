/*
 * t/kernel-detour.t: runs kernel-contract detours in user space. This
 * program stands in for a vmlinux: it links the kernel pool
 * (src/runtime/kernel/pool.S) and a kprewrite_dispatch() that records the
 * pt_regs each detour built and, with "modify", writes registers back.
 *
 *   kdetour-main mid        print kfn's mid-point offset
 *   kdetour-main run [modify]
 */
#include <stdio.h>
#include <string.h>

#include "kprewrite/abi.h"
#include "kprewrite/ptrace.h"

long kfn(long a);
long kreloc(void);
long kfentry(long a);
int kloop(void);
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

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "mid") == 0) {
        printf("%ld\n", kfn_mid_off);
        return 0;
    }
    modify = argc > 2 && strcmp(argv[2], "modify") == 0;
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
