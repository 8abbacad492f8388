/*
 * The handler API: the kprobes API of Documentation/trace/kprobes.rst, for
 * probes kprewrite baked into this program or its libraries.
 * Link with libkprewrite-rt (pkg-config kprewrite-rt).
 *
 * Handlers run on the probed thread, inside the detour. By default vector
 * registers are NOT saved: build handler files with the flags of
 * `pkg-config --cflags kprewrite-rt` (-mgeneral-regs-only) and call nothing
 * that uses SSE/AVX (most of libc's string and stdio functions do), or set
 * KPROBE_FLAG_FPU on the kprobe: the runtime then saves and restores the
 * whole extended state (XSAVE) around that probe's handlers.
 */
#ifndef KPREWRITE_KPROBES_H
#define KPREWRITE_KPROBES_H
#include <stddef.h>
#include "kprewrite/ptrace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kprobe;
typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *, unsigned long flags);

#define KPROBE_FLAG_GONE 1       /* the point is not baked into any loaded image */
#define KPROBE_FLAG_DISABLED 2   /* registered but disabled */
#define KPROBE_FLAG_OPTIMIZED 4  /* runs through a jump-optimized detour */
#define KPROBE_FLAG_FPU 0x100    /* kprewrite: save vector state around the handlers */

struct kprobe {
    const char *symbol_name;     /* either symbol_name (+offset) ... */
    unsigned int offset;
    void *addr;                  /* ... or addr; set on successful registration */
    kprobe_pre_handler_t pre_handler;
    kprobe_post_handler_t post_handler;
    unsigned long nmissed;       /* hits while a handler of this thread was running */
    unsigned int flags;
    /* private to the runtime */
    void *__point;
    struct kprobe *__next;
};

int register_kprobe(struct kprobe *kp);
void unregister_kprobe(struct kprobe *kp);
int register_kprobes(struct kprobe **kps, int num);
void unregister_kprobes(struct kprobe **kps, int num);
int enable_kprobe(struct kprobe *kp);
int disable_kprobe(struct kprobe *kp);

/* kprewrite additions: hit and miss counts of a baked point (all threads,
 * exact once they are quiescent); -ENOENT if it was not baked. */
struct kprewrite_point_stats {
    unsigned long hits;
    unsigned long nmissed;
};
int kprewrite_point_stats(const char *symbol_name, unsigned int offset, struct kprewrite_point_stats *st);
int kprewrite_point_stats_addr(const void *addr, struct kprewrite_point_stats *st);

#ifdef __cplusplus
}
#endif
#endif
