/* Internal to libkprewrite-rt: the probe points and what the parts share. */
#ifndef KPREWRITE_RT_H
#define KPREWRITE_RT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kprewrite/abi.h"
#include "kprewrite/kprobes.h"

#define TLS __attribute__((tls_model("initial-exec"))) __thread
#define EXPORT __attribute__((visibility("default")))

/* What the site's bytes are now. */
enum code_state {
    CODE_OPTIMIZED,   /* jmp to the detour */
    CODE_INT3,        /* int3 on byte 0, the original bytes after it */
    CODE_DISABLED,    /* the original bytes: no overhead, no hits */
};

#define FDE_NAME_MAX (sizeof KPRW_FDE_PREFIX + 16)   /* the prefix, 16 hex digits, NUL */

struct point {
    uintptr_t addr;
    const char *name;
    uint32_t offset, flags, id;
    uint8_t kind, verdict, site_len;
    uint8_t jump8;                     /* KPRW_F_JUMP8: the rel8 of the site's short jump
                                          to its trampoline, read when verified */
    const uint8_t *orig;               /* site_len original bytes (in the table) */
    uintptr_t detour, ool;             /* ool: where the int3 path resumes */
    struct kprobe *_Atomic handlers;   /* singly linked through __next */
    _Atomic unsigned fpu;              /* handlers that asked for KPROBE_FLAG_FPU */
    unsigned npost;                    /* handlers with a post_handler: forces int3 */
    _Atomic uint64_t hits;             /* exited threads and the int3 path */
    _Atomic uint64_t missed;
    /* live control, under rt_lock */
    _Atomic int code;                  /* enum code_state */
    bool disabled;                     /* `disable` from the control directory */
    bool unoptimized;                  /* `unoptimize` from the control directory */
    bool exposed;                      /* original bytes were out: a thread may be inside */
    uintptr_t tramp;                   /* kind 'r': the image's return trampoline */
    uintptr_t hook;                    /* kind 'r', optimized: where the function returns
                                          into the detour when the call was taken */
    void *_Atomic kret;                /* kind 'r': the holder of its only handler when
                                          that is an enabled kretprobe with no
                                          entry_handler (kretprobe-fast.S), else NULL */
    bool verified;                     /* the site was seen holding what code says */
    char fde_name[FDE_NAME_MAX];       /* name, for a function without a symbol */
};

extern pthread_mutex_t rt_lock;
/* rt_lock, taken and released with the thread marked as inside the runtime
 * (below): the libc functions the runtime calls may be probed themselves. */
void rt_lock_take(void);
void rt_lock_drop(void);
struct kprw_table;
/* NULL when every offset of the table can be followed safely; else why
 * (in why, or a constant), and *object names the image (table-check.c). */
/* *dynspan: the bytes a KPRW_NAME_DYN name may start in (0: none). */
const char *rt_table_check(const struct kprw_table *t, const char **object, uint32_t *int3s, uint64_t *dynspan,
                           char *why, size_t len);
extern struct point **rt_points;       /* by id; filled lazily: call rt_points_ready
                                          before reading them all */
void rt_points_ready(void);            /* under rt_lock: fill every point */
void rt_each_ready_point(void (*fn)(struct point *, void *), void *arg);   /* under rt_lock */
extern uint32_t rt_npoints;
extern bool rt_enabled, rt_optimization;   /* the global knobs, under rt_lock */

/* Per thread (dispatch.S reads it at the offsets of rt-offsets.h). */
struct rt_thread {
    uint64_t *hits;                    /* hit counters, indexed by point id */
    uint32_t cap;
    uint32_t listed;                   /* on the list of threads, with an exit hook */
    struct point *_Atomic running;     /* whose handlers this thread runs now: the
                                          recursion guard, and what unregister waits on */
    struct rt_thread *next;
    struct kretprobe_instance *ractive; /* this thread's hooked returns, newest first */
    struct kretprobe_instance *hook;   /* set by a kretprobe's entry that took this call,
                                          consumed by the dispatcher (the detour hooks
                                          the return) or by the int3 path */
    /* free kretprobe instances kept for this thread's next calls (no atomic
     * operation on the free list per hit); kretprobe.c */
    _Atomic int steal;                 /* another thread is taking them: hands off */
    struct kretprobe_instance *hot;    /* the last one given back, of any kretprobe: at a
                                          fixed place, so that a hit's return does not
                                          wait for loads to find where it goes */
    struct rt_kcache {
        void *holder;
        struct kretprobe_instance *head;
        uint32_t n;
    } kc[4];
    pthread_t self;                    /* pthread_self(), once the thread is listed */
    bool lock_entered;                 /* rt_lock_take set RT_INSIDE */
    bool gone;                         /* exiting: its counts are folded (rt.c) */
};
/* the list of threads with counters (and instance caches), under rt_lock */
struct rt_thread *rt_threads(void);
extern TLS struct rt_thread rt_self;
#define rt_in_handler (atomic_load_explicit(&rt_self.running, memory_order_relaxed) != NULL)
/* rt_self.running while the thread runs the runtime's own code, which
 * calls libc: a hit then (a probed malloc, pthread_mutex_lock, ...) runs no
 * handler, takes no lock and counts as missed, as a hit inside a handler
 * does. Never a point's address, so nothing waits on it. */
#define RT_INSIDE ((struct point *)1)
/* Mark the thread as inside the runtime unless it is marked or in a
 * handler already; pass what it returns to rt_leave. */
bool rt_enter(void);
void rt_leave(bool entered);

/* rt.c */
void rt_stats(struct point *pt, uint64_t *hits, uint64_t *missed);
void rt_run_handlers(struct point *pt, struct pt_regs *regs, int *changed_ip);
void rt_count_missed(struct point *pt);
void rt_run_post_handlers(struct point *pt, struct pt_regs *regs);
bool rt_membarrier_ready(void);
bool rt_membarrier(void);
/* Run fn(arg) with the extended (vector) state saved around it. */
void rt_with_xstate_saved(void (*fn)(void *), void *arg);
/* kretprobe.c */
int rt_kretprobe_entry(struct kprobe *kp, struct pt_regs *regs);   /* a kretprobe's kp.pre_handler */
long rt_kretprobe_fast_entry(struct kretprobe *rp, unsigned long *slot);   /* kretprobe-fast.S */
struct holder;
extern int rt_kc_on;                   /* per-thread instance caches: 1 on */
void rt_kretprobe_put(struct holder *h, struct kretprobe_instance *ri);   /* kretprobe-fast.S */
unsigned long rt_kretprobe_return_slow(struct pt_regs *regs);   /* kretprobe-fast.S */
void rt_point_changed(struct point *pt);   /* its handlers or their flags; under rt_lock */
long rt_kretprobe_take_c(struct holder *h, unsigned long *slot);   /* kretprobe-fast.S */
void rt_kretprobe_changed(struct kretprobe *rp);   /* (un)registered, enabled, disabled; under rt_lock */
void rt_kretprobe_thread_exit(struct rt_thread *t);
void rt_kretprobe_unhook_all(void);    /* before an exception unwinds the stack */
void rt_kretprobe_trap_hook(struct point *pt);   /* the int3 path, after the handlers */
/* unwind.c */
void rt_unwind_hooks_linked(void);
struct point *rt_find_point(const char *sym, unsigned offset, uintptr_t addr);
int rt_register_kprobe_at(struct kprobe *kp, struct point *pt);
void rt_wait_for_handlers(struct point *pt);
/* for dispatch.S */
struct point *rt_dispatch_slow(struct kprw_state *st, struct pt_regs *regs);
void rt_run_handlers_fpu(struct point *pt, struct pt_regs *regs);

/* trap.c: the int3 path */
void trap_install(void);
void trap_index_rebuild(void);         /* under rt_lock, after points change */
extern pid_t trap_server_tid;          /* the control thread: runs no probed code */
int trap_checkpoint(bool (*inside)(uintptr_t ip));   /* 0, or -EBUSY/-errno */
extern _Atomic int trap_active;        /* SIGTRAP handlers running a probe now */
void trap_fork_child(void);            /* only this thread's count them now */

/* patch.c: live changes to the code, under rt_lock */
int patch_apply(struct point *pt);     /* bring the code to the point's wanted state */
enum code_state patch_wanted(const struct point *pt);
int patch_list(struct point **v, size_t n);
int patch_all(void);

/* ctlfs.c: the control directory */
void ctlfs_start(void);
void ctlfs_fork_child(void);           /* the directory and its server stay with the parent */

/* ctl.c: commands and listings shared by the directory and `kprewrite ctl` */
int ctl_command(const char *line);     /* 0 or -errno */
int ctl_knob(bool *knob, const char *value);   /* "0" or "1" */
char *ctl_list(size_t *len);           /* malloc'd text */
char *ctl_profile(size_t *len);
#endif
