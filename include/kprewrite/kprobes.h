/*
 * The handler API: the kprobes API of Documentation/trace/kprobes.rst, for
 * probes kprewrite baked into this program or its libraries.
 * Link with libkprewrite-rt (pkg-config kprewrite-rt).
 *
 * Handlers run on the probed thread, inside the detour. By default vector
 * registers are NOT saved: build handler files with
 * `pkg-config --variable=handler_cflags kprewrite-rt` (-mgeneral-regs-only)
 * and call nothing that uses SSE/AVX (most of libc's string and stdio
 * functions do), or set KPROBE_FLAG_FPU on the kprobe: the runtime then
 * saves and restores the whole extended state (XSAVE) around the
 * pre_handlers of its point (every kprobe there). See kprewrite-rt(3).
 */
#ifndef KPREWRITE_KPROBES_H
#define KPREWRITE_KPROBES_H
#include <pthread.h>
#include <stddef.h>
#include "kprewrite/ptrace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kprobe;
typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *, unsigned long flags);
/* trapnr: the x86 trap number of the fault (14 page fault, 13 general
 * protection, 0 divide error, 6 invalid opcode, ...); 1: handled */
typedef int (*kprobe_fault_handler_t)(struct kprobe *, struct pt_regs *, int trapnr);

/* Registration keeps only KPROBE_FLAG_DISABLED and KPROBE_FLAG_FPU of the
 * caller's flags (the kernel keeps only KPROBE_FLAG_DISABLED). */
#define KPROBE_FLAG_GONE 1       /* as in the kernel; never set */
#define KPROBE_FLAG_DISABLED 2   /* registered but disabled */
#define KPROBE_FLAG_OPTIMIZED 4  /* as in the kernel; never set in a caller's kprobe */
#define KPROBE_FLAG_FPU 0x100    /* kprewrite: save vector state around the handlers */

/*
 * Handlers run newest first (the kernel's order). pre_handler's regs->ip
 * is the probe address + 1 (as after the kernel's int3); on the int3 path
 * a pre_handler returning non-zero ends the point's pre_handlers and sends
 * the thread to regs->ip (the probed instruction is skipped); a detour
 * (jump-optimized) ignores both, as the kernel's optprobes do (an empty
 * post_handler makes a point int3). A post_handler's regs->ip is the next
 * instruction in place. disable_kprobe() of the last enabled kprobe of a
 * point disarms it (no handler, no hit counted), as in the kernel.
 * fault_handler: a fault in this kprobe's pre/post handler, or in the
 * instruction its post_handler's single step runs; see kprewrite-rt(3).
 */
struct kprobe {
    const char *symbol_name;     /* either symbol_name ... */
    unsigned int offset;         /* (+ offset, for either) */
    void *addr;                  /* ... or addr; set on successful registration, and kept */
    kprobe_pre_handler_t pre_handler;
    kprobe_post_handler_t post_handler;
    kprobe_fault_handler_t fault_handler;
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

/*
 * jprobes (the kernel's before 4.15): entry, a function with the probed
 * function's own signature, runs at the function's entry with its
 * registers and stack, and must end by calling jprobe_return(); the
 * function then runs as if nothing happened. One a point, at a function's
 * entry, on the int3 path.
 */
struct jprobe {
    struct kprobe kp;            /* symbol_name or addr: the function (+0) */
    void *entry;                 /* the handler */
};

int register_jprobe(struct jprobe *jp);
void unregister_jprobe(struct jprobe *jp);
int register_jprobes(struct jprobe **jps, int num);
void unregister_jprobes(struct jprobe **jps, int num);
int enable_jprobe(struct jprobe *jp);
int disable_jprobe(struct jprobe *jp);
void jprobe_return(void) __attribute__((noreturn));

/*
 * Return probes (SYM%return baked), as the kernel's kretprobes: the entry
 * of the function runs entry_handler and takes an instance; its return runs
 * handler with regs->ax the return value (regs_return_value) and regs->ip
 * the real return address (also when the kretprobe was disabled since the
 * entry; not once unregistered). maxactive instances are preallocated when
 * the kretprobe is registered (<= 0: 2 x configured CPUs, at least 10); an
 * entry that finds none free counts in nmissed and runs no handler. An
 * entry_handler returning non-zero means no return handler for that call.
 * data[] (data_size bytes, at most KRETPROBE_MAX_DATA_SIZE) is shared by
 * the entry and return handlers of one call. The instances are freed once
 * unregistered and no call still holds one.
 */
#define KRETPROBE_MAX_DATA_SIZE 4096
struct kretprobe_instance;
struct kretprobe;
typedef int (*kretprobe_handler_t)(struct kretprobe_instance *, struct pt_regs *);

struct kretprobe_instance {
    struct kretprobe *rp;
    void *ret_addr;              /* where the probed function returns to */
    pthread_t thread;            /* the calling thread (the kernel's task) */
    /* private to the runtime */
    unsigned long *__slot;       /* the return address's place on the stack */
    void *__holder;
    struct kretprobe_instance *__next;
    unsigned int __free_next;
    unsigned int __sibling;      /* the next (older) one is another kretprobe's, of the same call */
    char data[] __attribute__((aligned(16)));
};

struct kretprobe {
    struct kprobe kp;            /* symbol_name or addr: the function (+0) */
    kretprobe_handler_t handler;
    kretprobe_handler_t entry_handler;
    int maxactive;
    int nmissed;                 /* entries that found no free instance */
    size_t data_size;
    void *__holder;              /* private to the runtime */
};

int register_kretprobe(struct kretprobe *rp);
void unregister_kretprobe(struct kretprobe *rp);
int register_kretprobes(struct kretprobe **rps, int num);
void unregister_kretprobes(struct kretprobe **rps, int num);
int enable_kretprobe(struct kretprobe *rp);
int disable_kretprobe(struct kretprobe *rp);

/* kprewrite additions: hit and miss counts of a baked point (all threads,
 * exact once they are quiescent); -ENOENT if it was not baked, -EINVAL for
 * a NULL symbol_name or st. */
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
