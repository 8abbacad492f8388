/*
 * t/kernel-module.t: links a module stand-in (t/data/kmod-fn.c, as built
 * or with probes baked into it) with what the kernel would give it: the
 * function it calls (kmod_ext), kprewrite_dispatch(), and the runtime's
 * part when a module comes - each site's bytes as linked checked against
 * the probe table (but for the bytes relocations wrote), then the jumps
 * and int3s written (src/runtime/kernel/module.c does the same with
 * text_poke()); an int3 probe's hit resumes at its out-of-line copy, as
 * the kernel runtime's int3 notifier does.
 *
 *   kmod-main          run the functions, print what they return and, with
 *                      probes, what was armed and how often each was hit
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <ucontext.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kprewrite/abi.h"
#include "site.h"

long kmod_add(long a, long b), kmod_call(long a), kmod_data(long i), kmod_local(long a), kmod_cold(long a);
long *kmod_addr(void);
extern long kmod_counter;

long kmod_ext(long a)
{
    return a * 2 + 1;
}

/* the baked module's, weak: the module as built has none */
extern const struct kprw_table __kprewrite_table __attribute__((weak));
extern struct kprw_state __kprewrite_state[] __attribute__((weak));
static unsigned long hits[64];

void kprewrite_dispatch(struct kprw_state *st, void *regs);
void kprewrite_dispatch(struct kprw_state *st, void *regs)
{
    (void)regs;
    hits[st - __kprewrite_state]++;
}

static int writable(uintptr_t a, size_t n)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = a & ~(pg - 1);
    return mprotect((void *)lo, a + n - lo, PROT_READ | PROT_WRITE | PROT_EXEC);
}

/* An int3 probe's hit: counted, and on to the copy of its instruction. */
static void trap(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    const struct kprw_table *t = &__kprewrite_table;
    const struct kprw_entry *e = (const void *)(t + 1);
    uintptr_t at = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
    (void)sig; (void)si;
    for (uint32_t i = 0; i < t->nentries; i++)
        if ((uintptr_t)t + e[i].site_rel == at) {
            hits[i]++;
            uc->uc_mcontext.gregs[REG_RIP] = (greg_t)((uintptr_t)t + e[i].code_rel + e[i].ool_off);
            return;
        }
    _exit(99);   /* an int3 no probe owns */
}

/* The module comes: arm its probes. */
static void arm(void)
{
    const struct kprw_table *t = &__kprewrite_table;
    const struct kprw_entry *e = (const void *)(t + 1);
    const uint8_t *base = (const void *)t;
    const char *strings = (const char *)t + t->strings_off;
    const uint32_t *masks = (const void *)(base + ((t->strings_off + t->strings_size + 3) & ~3u));
    unsigned armed = 0, differ = 0, zero = 0;
    for (uint32_t i = 0; i < t->nentries; i++) {
        uint8_t *site = (uint8_t *)base + e[i].site_rel, b[KPRW_ORIG_MAX];
        const uint8_t *orig = (const uint8_t *)strings + e[i].orig_off;
        for (unsigned k = 0; k < e[i].dcr_len; k++)
            if (!(masks[i] & (1u << k)) && site[k] != orig[k])
                differ++;
        zero += __kprewrite_state[i].rt == NULL;
        if (e[i].verdict == KPRW_OPTIMIZED) {
            if (!x86_site_jump(b, (uintptr_t)site, (uintptr_t)base + e[i].code_rel, e[i].dcr_len))
                return;
        } else {
            memcpy(b, site, e[i].dcr_len);
            x86_site_int3(b, site, e[i].dcr_len);
        }
        if (writable((uintptr_t)site, e[i].dcr_len) < 0)
            return;
        memcpy(site, b, e[i].dcr_len);
        armed++;
    }
    printf("module table: flags %#x, %u entries, %u armed, %u bytes differ, %u states zero\n", t->flags,
           t->nentries, armed, differ, zero);
}

int main(void)
{
    struct sigaction sa = { .sa_sigaction = trap, .sa_flags = SA_SIGINFO };
    sigaction(SIGTRAP, &sa, NULL);
    if (&__kprewrite_table)
        arm();
    long sum = 0;
    for (long i = 0; i < 3; i++)
        sum += kmod_add(i, 5) + kmod_call(i) + kmod_data(i) + kmod_local(i) + kmod_cold(i);
    printf("sum %ld counter %ld addr-ok %d\n", sum, kmod_counter, kmod_addr() == &kmod_counter);
    if (&__kprewrite_table) {
        const struct kprw_table *t = &__kprewrite_table;
        const struct kprw_entry *e = (const void *)(t + 1);
        for (uint32_t i = 0; i < t->nentries; i++)
            printf("hits %s %s %lu\n", (const char *)t + t->strings_off + e[i].name_off,
                   e[i].verdict == KPRW_OPTIMIZED ? "jump" : "int3", hits[i]);
    }
    return 0;
}
