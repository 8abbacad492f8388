/* A handler library for prebuilt programs (LD_PRELOAD): a kretprobe with
 * a counting return handler on each symbol KRET_ON names (comma-separated),
 * and at exit one line each: "kret NAME rc RC returns N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kprewrite/kprobes.h"

#define MAX 16
static struct kretprobe rps[MAX];
static int rcs[MAX], n;
static long returns[MAX];

static int on_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)regs;
    __atomic_add_fetch(&returns[ri->rp - rps], 1, __ATOMIC_RELAXED);
    return 0;
}

static void report(void)
{
    for (int i = 0; i < n; i++)
        fprintf(stderr, "kret %s rc %d returns %ld\n", rps[i].kp.symbol_name, rcs[i], returns[i]);
}

__attribute__((constructor)) static void init(void)
{
    const char *on = getenv("KRET_ON");
    static char names[512];
    if (!on)
        return;
    snprintf(names, sizeof names, "%s", on);
    for (char *s = strtok(names, ","); s && n < MAX; s = strtok(NULL, ","), n++) {
        rps[n].kp.symbol_name = s;
        rps[n].handler = on_ret;
        rps[n].maxactive = 64;
        rcs[n] = register_kretprobe(&rps[n]);
    }
    atexit(report);
}
