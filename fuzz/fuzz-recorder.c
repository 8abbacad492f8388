/* Fuzzes the generated event recorders (src/arch/x86/recorder.c) against
 * the C fetch, differentially: the input's first line is an event
 * definition (@SYM resolves into the test memory), the rest the registers'
 * values (each an offset into memory with an unreadable page after it, or
 * a raw value). Every definition the emitter takes is recorded by its code
 * and fetched by kprw_event_fetch; a byte of difference, a write outside
 * the record's room or a fault outside the known loads aborts. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/recorder.h"
#include "arch/x86/regs.h"
#include "runtime/core/event.h"
#include "runtime/user/safe-read.h"
#include "../t/recorder-harness.h"

static int fallback(void *kp, void *regs) { (void)kp; (void)regs; abort(); }   /* never: the ring has room */

static uint8_t *mem, *edge;
static long page;

static bool resolve(void *ctx, const char *sym, uint64_t *addr)
{
    (void)ctx;
    uint32_t h = 2166136261u;
    for (const char *p = sym; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    *addr = (uint64_t)(uintptr_t)mem + h % (uint32_t)(2 * page);
    return true;
}

static void setup(void)
{
    page = sysconf(_SC_PAGESIZE);
    code = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mem = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED || mem == MAP_FAILED || mprotect(mem + 2 * page, page, PROT_NONE) != 0)
        abort();
    edge = mem + 2 * page;
    /* strings of every length, pointers into the memory and out of it */
    for (long i = 0; i < 2 * page; i++)
        mem[i] = (uint8_t)(i % 13 == 0 ? 0 : 'a' + i % 26);
    for (long i = 0; i < 64; i++) {
        uint64_t p = i % 7 == 0 ? 0 : i % 5 == 0 ? (uint64_t)(uintptr_t)edge - (uint64_t)(i % 9)
                                                 : (uint64_t)(uintptr_t)mem + (uint64_t)(i * 97 % (2 * page));
        memcpy(mem + 8 * i, &p, 8);
    }
    memset(edge - 8, 'z', 7);   /* a string ending at the page's last byte */
    edge[-1] = 0;
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

static char arena_mem[1 << 20];
static uint8_t ring_mem[1 << 16], ref[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!code)
        setup();
    const uint8_t *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - data) : size;
    if (len > 4000)
        return 0;
    char text[4001];
    memcpy(text, data, len);
    text[len] = 0;
    struct kprw_arena arena = { arena_mem, sizeof arena_mem, 0 };
    struct kprw_event ev;
    struct kprw_ev_error err;
    const struct kprw_farg *bad;
    if (!kprw_event_parse(&x86_fetch_isa, text, len, &arena, &ev, &err) || !kprw_event_bind(&ev, resolve, NULL, &bad))
        return 0;
    /* the registers: two bytes each from the rest of the input; sp FRAME
     * bytes above them (the direct entry's view), over the memory's words */
    static unsigned long frame[1024];
    unsigned long *regs = frame;
    const uint8_t *r = nl ? nl + 1 : data + size;
    size_t rn = (size_t)(data + size - r);
    for (unsigned i = 0; i < X86_NSLOTS; i++) {
        unsigned v = 2 * i + 1 < rn ? (unsigned)r[2 * i] | (unsigned)r[2 * i + 1] << 8 : i * 8u;
        regs[i] = v & 0x8000 ? (unsigned long)v * 0x10001ul : (unsigned long)(uintptr_t)mem + (v % (3 * page));
    }
    regs[X86_SP] = (unsigned long)(uintptr_t)((char *)frame + FRAME);
    memcpy((char *)frame + FRAME, mem, 1024);
    struct kprw_recorder_env env = harness_env(1, fallback);
    nfix = 0;
    size_t direct;
    size_t n = kprw_recorder_emit(&ev, &env, code, 1 << 20, (uint64_t)(uintptr_t)code, fix, &nfix, &direct);
    if (!n)
        return 0;
    __builtin___clear_cache((char *)code, (char *)code + n);
    int (*fn)(void *, void *);
    uintptr_t a = (uintptr_t)code;
    memcpy(&fn, &a, sizeof fn);
    static const struct t_point point;
    struct t_inst inst = { .id = 5, .enabled = 1, .addr = 0x1234, .pt = &point };
    struct t_ring ring = { .size = sizeof ring_mem, .tid = 9, .data = ring_mem };
    ring_tls = &ring;
    memset(ref, 0xa5, sizeof ref);
    struct kprw_rec *h = (struct kprw_rec *)ref;
    h->id = inst.id;
    h->tid = ring.tid;
    h->ip = inst.addr;
    const struct kprw_fetch_env cenv = { regs, NULL, "fuzz", rt_safe_read, rt_safe_read_str, rt_safe_read_word, X86_SP };
    h->size = kprw_event_fetch(&ev, &cenv, ref);
    /* the pre_handler, then the direct entry with the callee-saved
     * registers live and their pt_regs slots poisoned */
    for (int d = 0; d < (direct ? 2 : 1); d++) {
        memset(ring_mem, 0xa5, sizeof ring_mem);
        ring.head = ring.tail = 0;
        static const unsigned cs[6] = { X86_BX, X86_BP, X86_R12, X86_R13, X86_R14, X86_R15 };
        unsigned long callee[6], saved[6];
        for (unsigned i = 0; i < 6; i++) {
            callee[i] = saved[i] = regs[cs[i]];
            if (d)
                regs[cs[i]] = 0xdeadbeefdeadbeeful;
        }
        int rc = d ? call_direct(code + direct, &inst, regs, callee) : fn(&inst, regs);
        for (unsigned i = 0; i < 6; i++)
            regs[cs[i]] = saved[i];
        if (rc != 0)
            abort();
        const struct kprw_rec *got = (const struct kprw_rec *)ring_mem;
        if (got->size != h->size || memcmp(got, ref, 12) != 0 || memcmp(ring_mem + 24, ref + 24, ev.max_size - 24) != 0 ||
            ring.head != h->size || got->cpu != cpu_tls)
            abort();
        for (size_t b = ev.max_size; b < sizeof ring_mem; b++)
            if (ring_mem[b] != 0xa5)
                abort();
    }
    return 0;
}
