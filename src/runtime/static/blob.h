/*
 * The static runtime (src/runtime/static): a freestanding blob kprewrite
 * embeds and copies into a static executable's pool (.kprewrite.rt, in the
 * pool's r-x PT_LOAD), with e_entry pointing at its start routine. What
 * the rewriter, the blob and `kprewrite ctl` (which reads a running static
 * program through /proc/PID/mem) share: the blob's head, which the
 * rewriter fills in, and the area the blob keeps its state in, at the end
 * of .kprewrite.data (zero-filled memory, found from the head).
 * Offsets are from the head (position independent: static-pie).
 */
#ifndef KPREWRITE_STATIC_BLOB_H
#define KPREWRITE_STATIC_BLOB_H

#define KPRS_SEC_RT ".kprewrite.rt"
#define KPRS_HEAD_MAGIC 0x5350524bu      /* "KRPS" */
#define KPRS_AREA_MAGIC 0x4145524bu      /* "KREA" */
#define KPRS_VERSION 5
#define KPRS_EXITS 2                     /* report points the head names */
#define KPRS_STACKS 8                    /* the runtime's stacks, after the area's arrays */
#define KPRS_STACK_SHIFT 14              /* each 16 KiB */
#define KPRS_ARENA (256 * 1024)          /* with events: what their definitions parse into */
#define KPRS_RING (4u << 20)             /* with events: the ring of records (a power of 2) */
#define KPRS_HOOKS 1024                  /* hooked calls live at once, all threads (a power of 2) */
#define KPRS_HOOK_PROBE 16               /* the table's entries a call's slot may take (linear probing) */
#define KPRS_UNWINDERS 4                 /* the unwinder's entry points guarded (guard.c) */

/* Offsets start-x86.S uses (init.c asserts them). */
#define KPRS_HEAD_AREA_REL 24
#define KPRS_AREA_STACK_BUSY 24
#define KPRS_AREA_STACKS 32
#define KPRS_AREA_RING_SIZE 48
#define KPRS_AREA_RING_HEAD 128
#define KPRS_AREA_RING_TAIL 192
#define KPRS_REC_MAX 4096                /* an event's record's bytes at most (built on the stack) */
#define KPRS_PT_HITS 0
#define KPRS_PT_DISABLED 8
#define KPRS_PT_GUARD 10
#define KPRS_PT_EV 12
#define KPRS_PT_GO 14
#define KPRS_PT_RET 15
#define KPRS_PT_DROPPED 16
#define KPRS_PT_EV_OFF 32

#ifndef __ASSEMBLER__
#include <stdint.h>

/* At the blob's first byte (start-x86.S lays it out). */
struct kprs_head {
    uint32_t magic;                      /* KPRS_HEAD_MAGIC */
    uint32_t version;                    /* KPRS_VERSION */
    uint32_t start_off;                  /* the start routine (e_entry), from the head */
    uint32_t hook_ok;                    /* the rewriter: 0 when no call may be hooked for a return
                                            event (a Go program: its stacks move; a stripped one:
                                            its unwinder cannot be found); else 1 + how many of the
                                            unwinder's entry points (_Unwind_RaiseException ...) the
                                            image names, each of which must be a guard point in the
                                            table for calls to be hooked (guard.c) */
    int64_t table_rel;                   /* the rewriter: .kprewrite.table - head */
    int64_t area_rel;                    /* the rewriter: struct kprs_area - head */
    int64_t entry_rel;                   /* the rewriter: the program's own entry point - head */
    int64_t sigaction_rel;               /* the rewriter: libc's sigaction - head (0: none found),
                                            where the runtime guards its SIGTRAP (guard.c) */
    int64_t exit_rel[KPRS_EXITS];        /* the rewriter: the report points' sites - head (0: none):
                                            _exit and _Exit, or what a stripped program's code
                                            shows is _exit (kind-static.c) */
};

/* One point's state, beside the table's entry of the same index. Each
 * field a byte or an aligned word: kprewrite ctl writes the bytes from
 * another process while the program runs. */
struct kprs_point {
    uint64_t hits;
    uint8_t disabled;                    /* ctl disable: the hit is not counted */
    uint8_t unoptimized;                 /* ctl unoptimize: int3 on the site's first byte */
    uint8_t guard;                       /* enum kprs_guard: the runtime acts there */
    uint8_t site0;                       /* the site's first byte as baked (the jump's): ctl optimize
                                            writes it back */
    uint16_t ev;                         /* the event definition bound here + 1 (0: none; events.c) */
    uint8_t go;                          /* a Go function's (KPRW_F_GO): its C runs on the runtime's
                                            stacks only, never on the goroutine's */
    uint8_t ret;                         /* its event is a return event: each call is hooked
                                            (hook.c) */
    uint64_t dropped;                    /* its events lost: the ring full, or no stack free */
    uint64_t missed;                     /* calls not hooked for its return event (kretprobe's
                                            nmissed): the hook table full, or a tail call */
    uint8_t ev_off;                      /* ctl untrace: its event records nothing more (ev is
                                            kept: the records in the ring are still its) */
};

/* Points where the runtime acts, besides counting. */
enum kprs_guard {
    KPRS_GUARD_NONE,
    KPRS_GUARD_EXIT,                     /* _exit (the head's exit_rel): KPREWRITE_REPORT is printed,
                                            KPREWRITE_TRACE written */
    KPRS_GUARD_SIGACTION,                /* libc's sigaction (the head's): a handler for SIGTRAP
                                            takes the int3 probes' signal, so they are put back */
    KPRS_GUARD_UNWIND,                   /* the unwinder's entry points (by name): the thread's
                                            hooked calls get their return addresses back first */
};

/* A call hooked for a return event (hook.c), in the area's table: keyed
 * by the address of its return address's slot. */
struct kprs_hook {
    uint64_t slot;                       /* the key (0: free; bit 0 set: being filled or freed) */
    uint64_t ret;                        /* the real return address */
    uint64_t ts;                         /* the entry's time (the record's clock) */
    uint64_t thread;                     /* the thread's %fs base at the entry */
    uint32_t point;                      /* the entry's index */
    uint32_t pad;
    uint64_t entry[16];                  /* the $argN a return event keeps from the entry
                                            (KPRW_EV_ENTRY_ARGS: hook.c asserts it) */
};

#define KPRS_REC_PAD 0xffffffffu         /* a record's id: padding to the ring's end */

struct kprs_area {
    uint32_t magic;                      /* KPRS_AREA_MAGIC once the blob set itself up */
    uint32_t nentries;
    int32_t pid;                         /* the process that set it up (a fork's child differs) */
    int32_t report_fd;                   /* KPREWRITE_REPORT: a copy of stderr, or -1 */
    uint8_t report_all;                  /* KPREWRITE_REPORT=all */
    uint8_t reported;
    uint8_t trap_byte;                   /* what ctl unoptimize writes over a site's first byte (int3) */
    uint8_t trap_taken;                  /* the program took SIGTRAP (or is Go's, whose runtime
                                            takes it): no int3 of the runtime's is left */
    int32_t trace_fd;                    /* KPREWRITE_TRACE: where the events go at exit, or -1 */
    uint64_t stack_busy;                 /* bit k: the runtime's stack k is in use (start-x86.S) */
    uint64_t stacks;                     /* the stacks' lowest address: stack k's top is
                                            stacks + (k + 1) << KPRS_STACK_SHIFT. A guard's or an
                                            event's C runs there, never on the program's stack,
                                            which may be a goroutine's few KiB */
    /* events (events.c): 0 without */
    uint64_t ring;                       /* the ring's address */
    uint64_t ring_size;                  /* its bytes in use (a power of 2, <= KPRS_RING) */
    uint64_t events;                     /* the parsed definitions (struct kprw_event[nevents]) */
    uint32_t nevents;
    uint32_t pad;
    uint64_t tsc0, ns0;                  /* the clock at start-up: a record's TSC to nanoseconds */
    uint64_t self;                       /* a page mapped MADV_WIPEONFORK: its first word caches the
                                            process's id (a fork's child reads 0 there), 0: none */
    uint64_t env_defs;                   /* KPREWRITE_EVENTS' definitions, NUL-separated, in the
                                            arena (after the table's, in the event indices) */
    uint32_t env_defs_len;               /* their bytes */
    uint8_t clock_tsc;                   /* 1: records' times are TSC ticks (rdtscp, an invariant TSC);
                                            0: CLOCK_MONOTONIC nanoseconds (a system call each) */
    uint8_t fsgsbase;                    /* rdfsbase works (AT_HWCAP2): the thread's %fs base
                                            without a system call (hook.c) */
    uint8_t hook_ok;                     /* calls may be hooked for return events (hook.c) */
    uint8_t trace_json;                  /* KPREWRITE_TRACE_FORMAT=json (trace-json.c) */
    uint64_t ring_head __attribute__((aligned(64)));   /* bytes reserved, ever (the writers') */
    uint64_t ring_tail __attribute__((aligned(64)));   /* bytes read, ever (the reader's) */
    /* then nentries struct kprs_point, and nentries uint32_t: the entries'
     * indices sorted by site (the SIGTRAP handler's search); the stacks;
     * with events, the arena and the ring */
};

/* Where the area's parts are, from its start. The hook table, the arena
 * and the ring are there whether the table has definitions or not
 * (KPREWRITE_EVENTS may bring some): zero-filled memory, touched only as
 * used. */
struct kprs_layout {
    uint64_t points, sorted, stacks, hooks, arena, ring, size;
};

static inline struct kprs_layout kprs_area_layout(uint32_t n)
{
    struct kprs_layout l;
    l.points = sizeof(struct kprs_area);
    l.sorted = l.points + (uint64_t)n * sizeof(struct kprs_point);
    l.stacks = (l.sorted + (uint64_t)n * sizeof(uint32_t) + 63) & ~(uint64_t)63;
    l.hooks = l.stacks + ((uint64_t)KPRS_STACKS << KPRS_STACK_SHIFT);
    l.arena = l.hooks + (uint64_t)KPRS_HOOKS * sizeof(struct kprs_hook);
    l.ring = l.arena + KPRS_ARENA;
    l.size = l.ring + KPRS_RING;
    return l;
}
#endif /* __ASSEMBLER__ */
#endif
