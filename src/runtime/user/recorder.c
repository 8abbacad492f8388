/*
 * A definition's generated recorder (src/arch/recorder.h), made once when
 * its first instance is registered: a page of its own, written and then
 * made read-and-execute (never writable and executable at once; never
 * written again: another thread may be running it). Where the ISA has no
 * recorder, the definition is not one it takes, the clock has no TSC, or
 * the page cannot be made executable (a policy that forbids it: SELinux's
 * execmem, systemd's MemoryDenyWriteExecute), the C recorder records, with
 * the same records; KPREWRITE_RECORDER=c asks for it everywhere.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/recorder.h"
#include "clock.h"
#include "kprewrite/ptrace.h"
#include "rt.h"
#include "events.h"
#include "safe-read.h"
#include "tracebuf.h"

#define INST(field) ((int32_t)(offsetof(struct ev_inst, field) - offsetof(struct ev_inst, u.kp)))
#define RING(field) ((int32_t)offsetof(struct tb_ring, field))
_Static_assert(sizeof(((struct ev_inst *)0)->enabled) == 1 && sizeof(((struct ev_inst *)0)->id) == 4 &&
               sizeof(((struct tb_ring *)0)->size) == 4 && sizeof(((struct tb_ring *)0)->tid) == 4,
               "the generated recorder's loads");

/* Every recorder's loads of the program's memory and their fixups, for
 * the fault handler: appended under fix_lock, published by the count
 * before the recorder runs; never removed (nor are recorders). */
#define FIXES_MAX 4096
static struct { uintptr_t begin, end, fixup; } fixes[FIXES_MAX];
static _Atomic unsigned nfixes;
static pthread_mutex_t fix_lock = PTHREAD_MUTEX_INITIALIZER;

uintptr_t ev_recorder_fixup(uintptr_t ip)
{
    for (unsigned i = 0, n = atomic_load_explicit(&nfixes, memory_order_acquire); i < n; i++)
        if (ip >= fixes[i].begin && ip < fixes[i].end)
            return fixes[i].fixup;
    return 0;
}

static kprobe_pre_handler_t fn_at(const uint8_t *p)
{
    kprobe_pre_handler_t fn;
    uintptr_t a = (uintptr_t)p;
    memcpy(&fn, &a, sizeof fn);
    return fn;
}

kprobe_pre_handler_t ev_recorder_make(const struct kprw_event *ev, kprobe_pre_handler_t fallback,
                                      kprobe_pre_handler_t *direct)
{
    *direct = NULL;
    const char *want = getenv("KPREWRITE_RECORDER");
    if (want && strcmp(want, "c") == 0)
        return NULL;
    struct kprw_recorder_env env = {
        .inst_enabled = INST(enabled), .inst_hist = INST(hist), .inst_id = INST(id), .inst_addr = INST(addr),
        /* initial-exec TLS: the same offset from every thread's pointer */
        .ring_tls = (int32_t)((char *)&tb_self_ring - (char *)__builtin_thread_pointer()),
        .ring_head = RING(head), .ring_tail = RING(tail), .ring_size = RING(size), .ring_tid = RING(tid),
        .ring_data = RING(data),
        .clock = clk_mode,
        .cpu_tls = clk_mode == 1 ? (int32_t)(__rseq_offset + 4) : 0,   /* struct rseq's cpu_id (clock.h) */
        .read_str = (uint64_t)(uintptr_t)rt_safe_read_str,
        .fallback = (uint64_t)(uintptr_t)fallback,
        /* the dispatcher's direct call (dispatch.S .Lrecorder): pt_regs
         * below the red zone the detour skipped, as FILL_REST takes it */
        .frame = PTREGS_SIZE + 128, .inst_point = INST(pt),
        .point_flags = (int32_t)offsetof(struct point, flags), .flags_saved = KPRW_F_FLAGS_SAVED,
    };
    static struct kprw_recorder_fixup fix[KPRW_RECORDER_FIXUPS];   /* (written only under fix_lock: the count pass writes none) */
    unsigned nfix;
    size_t direct_off;
    size_t n = kprw_recorder_emit(ev, &env, NULL, 0, 0, fix, &nfix, &direct_off);
    if (!n)
        return NULL;
    size_t len = (n + 4095) & ~(size_t)4095;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    pthread_mutex_lock(&fix_lock);
    unsigned at = atomic_load_explicit(&nfixes, memory_order_relaxed);
    if (kprw_recorder_emit(ev, &env, p, len, (uint64_t)(uintptr_t)p, fix, &nfix, &direct_off) != n || nfix > FIXES_MAX - at ||
        mprotect(p, len, PROT_READ | PROT_EXEC) != 0) {
        pthread_mutex_unlock(&fix_lock);
        munmap(p, len);
        return NULL;
    }
    for (unsigned i = 0; i < nfix; i++) {
        fixes[at + i].begin = (uintptr_t)p + fix[i].load;
        fixes[at + i].end = (uintptr_t)p + fix[i].load_end;
        fixes[at + i].fixup = (uintptr_t)p + fix[i].fixup;
    }
    atomic_store_explicit(&nfixes, at + nfix, memory_order_release);
    pthread_mutex_unlock(&fix_lock);
    if (direct_off)
        *direct = fn_at(p + direct_off);
    return fn_at(p);
}
