/*
 * Internal to libkprewrite-rt: the probe points and what the parts share,
 * by file. The parts depend one way:
 *   core.c             lock, threads and counters, the point registry, knobs
 *   table-check.c      the checks of a table (over the shared core's)
 *   trap.c, patch.c    the int3 path; live changes to the code (patch uses trap)
 *   pools.c            finding and registering tables, filling points
 *   hits.c             the hit path in C (dispatch.S's slow cases)
 *   api.c              the kprobes API
 *   kretprobe.c        return probes, on the API
 *   jprobe.c           jprobes, on the API (and the int3 path)
 *   fault.c            fault_handler: SIGSEGV/SIGBUS/SIGFPE/SIGILL in a handler
 *   ctl.c, ctldir.c    the control directory: its files, its lifetime,
 *   ctlfs.c, ctlsock.c   served as FUSE or through a socket,
 *   ctlwatch.c, spawn.c  removed by a watcher when the process is gone
 *   startup.c          the constructor, and rt_hooks: what the core tells the others
 * The core calls none of the others by name: it announces through
 * rt_hooks (startup.c fills it).
 */
#ifndef KPREWRITE_RT_H
#define KPREWRITE_RT_H
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kprewrite/abi.h"
#include "kprewrite/kprobes.h"
#include "runtime/core/kprw-core.h"   /* shared with the kernel runtime: enum code_state, ... */

#define TLS __attribute__((tls_model("initial-exec"))) __thread
#define EXPORT __attribute__((visibility("default")))

#define FDE_NAME_MAX (sizeof KPRW_FDE_PREFIX + 16)   /* the longer prefix (fde@0x, fn@0x), 16 hex digits, NUL */

/* The caller's flags that registration keeps (the kernel keeps only
 * KPROBE_FLAG_DISABLED; KPROBE_FLAG_FPU is kprewrite's). The runtime keeps
 * one bit of its own in kp->flags, never a caller's: */
#define KPROBE_CALLER_FLAGS (KPROBE_FLAG_DISABLED | KPROBE_FLAG_FPU)
/* set by events.c, after registration, on an event's kprobe whose
 * generated recorder (recorder.c) has a direct entry (its ev_inst's
 * direct, KP_DIRECT from the kprobe), which reads the callee-saved
 * registers where they are, writes no register, and fills the rest of
 * pt_regs itself before it hands a hit to C: the dispatcher calls it alone,
 * with nothing filled or reloaded (dispatch.S) */
#define KPROBE_FLAG_RT_RECORDER 0x40000000u

struct point {
    uintptr_t addr;
    const char *name;
    uint32_t offset, flags, id;
    uint8_t kind, verdict, site_len;
    uint8_t jump8;                     /* KPRW_F_JUMP8: the rel8 of the site's short jump
                                          to its trampoline, read when verified */
    const uint8_t *orig;               /* site_len original bytes (in the table) */
    uintptr_t detour, ool;             /* ool: where the int3 path resumes */
    struct kprobe *_Atomic handlers;   /* singly linked through __next, newest first
                                          (a jprobe last), as the kernel's aggr list */
    _Atomic unsigned cpath;            /* kprobes whose pre_handlers the detour runs from
                                          C: KPROBE_FLAG_FPU or a fault_handler */
    unsigned nint3;                    /* kprobes with a post_handler, and jprobes:
                                          they need the int3 path */
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
    _Atomic uint64_t ev_dropped;       /* events of this point a full buffer dropped (events.c) */
    /* the API's, under rt_lock */
    unsigned nfpu;                     /* kprobes with KPROBE_FLAG_FPU */
    bool guard;                        /* carries the signal guard of a probed libc
                                          (libc-guard.c): never disarmed */
    bool api_off;                      /* kprobes registered, all disabled: disarmed, as
                                          the kernel disarms such a probe */
};

/* ---- core.c ---- */
extern pthread_mutex_t rt_lock;
/* rt_lock, taken and released with the thread marked as inside the runtime
 * (below): the libc functions the runtime calls may be probed themselves. */
void rt_lock_take(void);
void rt_lock_drop(void);

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
    _Atomic bool unreg_waiting;        /* in unregister from inside a handler: others
                                          in the same do not wait for it (api.c) */
    struct rt_guard *guard;            /* a pre/post handler with a fault_handler runs
                                          (fault.c) */
    struct rt_jctx *jctx;              /* jprobe.c: the context saved at a jprobe's hit */
    /* Go points (KPRW_F_GO): C runs for them on this runtime stack, never
     * on a goroutine's (enter-fast.S), mapped by the thread's first hit
     * that needs it with raw system calls, the registers kept meanwhile in
     * stack_save ([0]: busy, being mapped or in use; then di, si, dx, r8,
     * r9, r10, r11) */
    uintptr_t stack_top;               /* its top, 0: none yet; unmapped by fold() */
    uintptr_t stack_save[8];
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

/* The points, by id (ids are given as points are filled: pools.c). */
uint32_t rt_point_count(void);
struct point *const *rt_point_list(void);       /* rt_point_count() of them, under rt_lock */
bool rt_points_reserve(uint32_t n);             /* room for n more; under rt_lock */
void rt_point_add(struct point *pt);            /* gives pt its id; under rt_lock */
void rt_count_hit(struct point *pt);            /* this thread's count of pt, + 1 */
void rt_stats(struct point *pt, uint64_t *hits, uint64_t *missed);   /* under rt_lock */

/* The global knobs (the control directory's `enabled`, `optimization`). */
enum rt_knob { RT_KNOB_ENABLED, RT_KNOB_OPTIMIZATION, RT_NKNOBS };
bool rt_knob(enum rt_knob k);
void rt_set_knob(enum rt_knob k, bool on);      /* under rt_lock; patch_all() then */

/* SIGTRAP handlers running a probe now (trap.c counts them, others wait). */
int rt_traps_running(void);
void rt_trap_enter(void);
void rt_trap_leave(void);
void rt_traps_reset(int n);                     /* a forked child: only its own */

/* fork, through pthread_atfork (startup.c) */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);

bool rt_membarrier_ready(void);
bool rt_membarrier(void);
/* Run fn(arg) with the extended (vector) state saved around it. */
void rt_with_xstate_saved(void (*fn)(void *), void *arg);

/* What the core and the parts below announce, and who hears it: filled
 * by startup.c. Each runs under rt_lock unless said otherwise. */
struct rt_hooks {
    void (*fork_child)(void);                   /* the child of a fork */
    void (*points_filled)(void);                /* points were filled: the trap index is stale */
    void (*pool_added)(void);                   /* a table was registered and armed */
    void (*thread_exit)(struct rt_thread *t);   /* a thread's counts were folded */
    void (*kprobe_toggled)(struct kprobe *kp);  /* enabled or disabled */
    void (*trap_done)(struct point *pt);        /* the int3 path ran pt's handlers (no lock) */
};
extern const struct rt_hooks rt_hooks;

/* ---- table-check.c ---- */
struct kprw_table;
/* NULL when every offset of the table can be followed safely; else why
 * (in why, or a constant), and *object names the image. *dynspan: the
 * bytes a KPRW_NAME_DYN name may start in (0: none). */
const char *rt_table_check(const struct kprw_table *t, const char **object, uint32_t *int3s, uint64_t *dynspan,
                           char *why, size_t len);

/* ---- pools.c ---- */
void rt_points_ready(void);            /* under rt_lock: fill every point, the trap index up to date */
void rt_each_ready_point(void (*fn)(struct point *, void *), void *arg);   /* under rt_lock */
struct point *rt_find_point(const char *sym, unsigned offset, uintptr_t addr);   /* under rt_lock */
/* The bytes a SYM+0 point was placed past (endbr64: 4), 0 for any other:
 * SYM+0 names it (kprw_spec_matches_entry). */
static inline uint32_t rt_point_skipped(const struct point *pt)
{
    return pt->flags & KPRW_F_AFTER_ENDBR ? pt->offset : 0;
}
bool rt_pool_fill_state(struct kprw_state *st);   /* st's point filled; false: no pool has st */
void rt_pool_find_linked(struct kprw_state *st);  /* a hit before its pool registered */
void rt_pools_find_added(void);        /* at start-up: the added pools of every object */
/* A registered table whose event definitions (KPRW_T_EVENTS) are not
 * defined yet, each once (NULL: none); *object names its image. */
const struct kprw_table *rt_pool_take_events(const char **object);
/* Is pt one of t's points? Under rt_lock. */
bool rt_point_in_table(const struct point *pt, const struct kprw_table *t);

/* ---- hits.c ---- */
/* The int3 path: the pre_handlers of pt, newest first; the first that
 * returns non-zero ends them and sets *changed_ip (as the kernel's
 * aggr_pre_handler). The detour runs them all and ignores what they return
 * (as optimized_callback). */
void rt_run_handlers(struct point *pt, struct pt_regs *regs, int *changed_ip);
void rt_run_post_handlers(struct point *pt, struct pt_regs *regs);
void rt_count_missed(struct point *pt);
struct point *rt_dispatch_slow(struct kprw_state *st, struct pt_regs *regs);   /* dispatch.S */
void rt_run_handlers_c(struct point *pt, struct pt_regs *regs);                 /* dispatch.S */

/* ---- api.c ---- */
/* Where kp names (symbol_name + offset, or addr + offset): 0 and *ptp, or
 * -EINVAL/-ENOENT/-EILSEQ (-ENOENT: say rt_no_point's error once the lock
 * is dropped); need_entry: -EINVAL unless at a function's entry. Under
 * rt_lock. */
int rt_resolve(const struct kprobe *kp, struct point **ptp, bool need_entry);
int rt_no_point(const struct kprobe *kp);   /* -ENOENT or -EINVAL; without rt_lock */
/* register_kprobe on a resolved point; a jprobe goes last. Under rt_lock. */
int rt_register_kprobe_at(struct kprobe *kp, struct point *pt, bool jprobe);
int rt_register_guard(struct kprobe *kp, struct point *pt);   /* libc-guard.c's, last */
void rt_point_changed(struct point *pt);   /* its handlers or their flags; under rt_lock */
void rt_wait_for_handlers(struct point *pt);
/* kp off its point (under rt_lock): the point to wait for, or NULL if kp
 * was not registered (its addr cleared) */
struct point *rt_unlink_kprobe(struct kprobe *kp);

/* ---- kretprobe.c ---- */
int rt_kretprobe_entry(struct kprobe *kp, struct pt_regs *regs);   /* a kretprobe's kp.pre_handler */
static inline bool rt_is_kretprobe(const struct kprobe *kp) { return kp->pre_handler == rt_kretprobe_entry; }
long rt_kretprobe_fast_entry(struct kretprobe *rp, unsigned long *slot);   /* kretprobe-fast.S */
struct holder;
extern int rt_kc_on;                   /* per-thread instance caches: 1 on */
void rt_kretprobe_put(struct holder *h, struct kretprobe_instance *ri);   /* kretprobe-fast.S */
unsigned long rt_kretprobe_return_slow(struct pt_regs *regs);   /* kretprobe-fast.S */
long rt_kretprobe_take_c(struct holder *h, unsigned long *slot);   /* kretprobe-fast.S */
void rt_kretprobe_changed(struct kretprobe *rp);   /* (un)registered, enabled, disabled; under rt_lock */
void rt_kretprobe_thread_exit(struct rt_thread *t);
void rt_kretprobe_unhook_all(void);    /* before an exception unwinds the stack */
void rt_kretprobe_trap_hook(struct point *pt);   /* the int3 path, after the handlers */

/* ---- jprobe.c ---- */
int rt_jprobe_entry(struct kprobe *kp, struct pt_regs *regs);   /* a jprobe's kp.pre_handler */
static inline bool rt_is_jprobe(const struct kprobe *kp) { return kp->pre_handler == rt_jprobe_entry; }
/* The int3 path, after the handlers and the return hook: a jprobe's hit
 * sends the thread to its entry (gregs and the signal frame's FPU state);
 * true if it did. jprobe_return()'s trap: true if it was one. */
bool rt_jprobe_divert(struct point *pt, void *uc);
bool rt_jprobe_trap(void *uc);
/* A fault in a jprobe's handler: ask its fault_handler; true if handled
 * (the thread then goes on as after jprobe_return()). */
bool rt_jprobe_fault(void *uc, int trapnr);
void rt_jprobe_thread_exit(struct rt_thread *t);
struct jprobe *rt_jprobe_abandon(struct jprobe *jp);   /* fault.c: NULL forgets, else takes up */

/* ---- fault.c ---- */
/* A pre/post handler called so that a fault in it reaches kp->fault_handler
 * (1: handled, and the call returns as if the handler had returned 0). */
struct rt_guard {
    unsigned long rbx, rbp, r12, r13, r14, r15, rsp, rip;   /* fault-guard.S reads them */
    struct kprobe *kp;
    struct pt_regs *regs;
    struct rt_guard *outer;
    int faulted;
};
long rt_guard_call(struct rt_guard *g, long (*fn)(void *, void *), void *a, void *b);   /* fault-guard.S */
int rt_call_pre(struct kprobe *kp, struct pt_regs *regs);
void rt_call_post(struct kprobe *kp, struct pt_regs *regs);
/* kprobes with a fault_handler (jprobes' included) registered: the fault
 * signals are the runtime's while there is one. Under rt_lock. */
void rt_fault_users(int delta);
bool rt_fault_signal(int sig);         /* sigaction() on sig is recorded, not installed */
int rt_fault_sigaction(int sig, const struct sigaction *act, struct sigaction *oact);
uint64_t rt_fault_bits(void);          /* kept out of masks while the runtime's (their bits) */
void rt_fault_count(struct point *pt); /* a fault in a handler: each kprobe's nmissed */

/* ---- unwind.c ---- */
void rt_unwind_hooks_linked(void);

/* ---- trap.c: the int3 path ---- */
void trap_install(void);
/* The program's signal calls (interposed, or routed from a probed libc's
 * own by libc-guard.c): what sigaction becomes, and the signals no mask
 * may block (bits of the kernel's 64-bit mask). */
enum { TRAP_ACT_PASS, TRAP_ACT_RECORDED, TRAP_ACT_COPY };
int trap_route_action(int sig, const struct sigaction *act, struct sigaction *oact, struct sigaction *copy);
uint64_t trap_undeliverable(void);
void trap_block_all(uint64_t *old);    /* the runtime's own threads: all but those */
void trap_set_mask(const uint64_t *mask);
void libc_guard_install(void);         /* startup.c: a probed libc's sigaction, pthread_sigmask */
void go_guard_install(void);           /* startup.c: a probed Go program's runtime.exit (go-guard.c) */
void trap_index_rebuild(void);         /* under rt_lock, after points change */
extern pid_t trap_server_tid;          /* the control thread: runs no probed code */
int trap_checkpoint(bool (*inside)(uintptr_t ip));   /* 0, or -EBUSY/-errno */
void trap_fork_child(void);            /* only this thread's count them now */
/* A fault of the instruction a post_handler's single step ran: ask the
 * point's fault_handlers; true if handled (the context is set). Not
 * handled, to_program: the context shows the fault in place. */
bool trap_step_fault(void *uc, int trapnr, bool to_program);
bool trap_hitting(void);               /* this thread runs an int3 probe's handlers */
int trap_abandon(int n);               /* fault.c: -1 forgets this thread's int3 hits in progress */
void trap_resume(struct point *pt, void *gregs);   /* on at pt's copy (a post_handler's step) */
/* pt_regs <-> a signal context's general registers */
void trap_regs_from(struct pt_regs *r, const void *gregs);
void trap_regs_to(void *gregs, const struct pt_regs *r);

/* ---- patch.c: live changes to the code, under rt_lock ---- */
int patch_apply(struct point *pt);     /* bring the code to the point's wanted state */
enum code_state patch_wanted(const struct point *pt);
int patch_list(struct point *const *v, size_t n);
int patch_all(void);
void patch_pool_added(void);           /* a new pool's points as the knobs want them */
void patch_fork_child(void);           /* the child writes its own code, not the parent's */

/* ---- own-threads.c: the runtime's threads, on stacks it knows (their first hit sets the guard) ---- */
int rt_own_thread_create(pthread_t *th, pthread_attr_t *attr, void *(*fn)(void *), void *arg);
bool rt_on_own_stack(void);

/* ---- startup.c: a process ending (_exit) or replaced (exec): its trace and its report written ---- */
void rt_before_exit(void);
void rt_before_go_exit(void);           /* the same, the counts first (go-guard.c) */
void rt_before_exec(void);

/* ---- ctldir.c: the control directory (ctlfs.c: as FUSE, ctlsock.c: as a socket) ---- */
void trace_env_pools_added(void);      /* trace-env.c: pending KPREWRITE_EVENTS bound now */
void trace_env_exec(void);             /* trace-env.c: events written before an exec (exec.c) */
void trace_env_exit(void);             /* trace-env.c: events written before an _exit */
void ctl_dir_start(void);
void ctl_dir_fork_child(void);         /* the directory and its server stay with the parent */
int ctlfs_mount(const char *dir);      /* the /dev/fuse fd, or -1 */
void ctlfs_serve(int fd);              /* until unmounted */
int ctlsock_open(const char *dir, char **path);   /* DIR/socket, listening; -1: none */
void ctlsock_serve(int fd);
/* ctlwatch.c: a process that unmounts and removes DIR (just made) once
 * this image is gone; the pipe end to keep, or -1 */
int ctl_watch_start(const char *dir);
/* DIR's parent directory (false: none fits): a process holds a lock on it
 * while it makes its directory there, and a watcher while it cleans up */
bool ctl_dir_parent(const char *dir, char *parent, size_t size);
void ctl_watch_mounted(void);          /* DIR is mounted now: that mount is ours */

/* ---- ctl.c: the control files, whichever channel serves them ---- */
enum ctl_file_id {
    CTL_LIST, CTL_ENABLED, CTL_OPTIMIZATION, CTL_CONTROL, CTL_PROFILE,
    CTL_EVENTS, CTL_TRACE, CTL_TRACE_PIPE, CTL_TRACE_JSON, CTL_TRACE_FOLDED, CTL_HIST, CTL_NFILES
};
extern const struct ctl_file {
    const char *name;
    unsigned mode;
} ctl_files[CTL_NFILES];
int ctl_file_find(const char *name, size_t len);   /* its id, or -1 */
char *ctl_read(enum ctl_file_id file, size_t *len);   /* malloc'd text (NULL: no memory) */
int ctl_write(enum ctl_file_id file, const char *data, size_t len);   /* 0 or -errno */
/* trace_pipe, read by a channel that can wait (FUSE): the stream an open
 * gets, and what a read consumes from it now (0 bytes: nothing yet). */
struct tr_stream *ctl_pipe_open(void);
size_t ctl_pipe_read(struct tr_stream *s, char *buf, size_t cap);
void ctl_pipe_close(struct tr_stream *s);

/* ---- spawn.c: child processes the program cannot wait for ---- */
long rt_clone(unsigned long flags, void *stack_top, int (*fn)(void *), void *arg);   /* pid or -errno */
/* run PATH, keep_fd as its fd 3; its exit status, or -1 */
int rt_spawn_wait(const char *path, char *const argv[], char *const envp[], int keep_fd);
bool rt_find_program(const char *name, char *out, size_t size);   /* along PATH */
int rt_nofile(void);
#endif
