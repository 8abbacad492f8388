/*
 * Events in the user runtime: a definition (runtime/core/event.h) bound to
 * a point is an instance, which records into the thread's buffer
 * (tracebuf.h) from the point's handlers, and may keep a histogram. The
 * readers (trace-read.c) turn records back into text, JSON or folded
 * stacks.
 */
#ifndef KPREWRITE_EVENTS_H
#define KPREWRITE_EVENTS_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kprewrite/kprobes.h"
#include "runtime/core/event.h"

struct point;

/* A histogram: log2 buckets of a value (a return event's latency in ns,
 * or an argument's value), for each key (an argument's value, or one key
 * when not keyed). Keys live in a fixed open-addressing table: a key that
 * finds no room counts in `other`. */
#define EV_HIST_KEYS 256
struct ev_hist {
    int16_t of;                        /* the argument whose value is counted; -1: latency */
    int16_t by;                        /* the argument that keys it; -1: none */
    _Atomic uint64_t other;            /* hits whose key found no room */
    struct ev_hist_key {
        _Atomic uint64_t key;          /* the key's value (a string's hash) */
        _Atomic uint32_t used;         /* 0 free, 1 being set, 2 set */
        char str[32];                  /* a string key's first bytes */
        _Atomic uint64_t buckets[KPRW_HIST_BUCKETS];
    } keys[EV_HIST_KEYS];
};

struct ev_inst {
    union {                            /* registered on the point: the handler that records */
        struct kprobe kp;
        struct kretprobe rp;
    } u;
    /* the generated recorder's entry for the dispatcher (dispatch.S
     * .Lrecorder, KP_DIRECT from the kprobe): the callee-saved registers
     * still the probed ones, pt_regs filled but for them, sp, ip, orig_ax
     * and the flags */
    kprobe_pre_handler_t direct;
    /* what a hit reads, in one cache line */
    const struct kprw_event *def;
    struct point *pt;
    uint64_t addr;                     /* the point's address */
    struct ev_hist *_Atomic hist;
    uint32_t id;                       /* records' id */
    bool is_return;
    _Atomic bool enabled;
    bool gone;                         /* untraced: kept, for records still unread */
    bool reads_memory;                 /* dereferences or strings: the fault signals are ours */
    _Atomic uint64_t dropped, filtered;   /* (recorded: the records; not counted on the hot path) */
    /* the rest */
    char name[KPRW_EV_NAME_MAX];       /* the event's name */
    const char *group;
    char where[320];                   /* the point: SYM+0xOFF */
    const char *sym;                   /* the point's function */
    uint32_t offset;                   /* ... and offset in sym */
};

const struct kprw_fetch_isa *ev_isa(void);

/* ev's generated recorder (recorder.c, src/arch/recorder.h), which hands
 * what it does not record to fallback; NULL: none here, fallback records.
 * *direct: its entry for the dispatcher's direct call (ev_inst.direct), or
 * NULL. */
kprobe_pre_handler_t ev_recorder_make(const struct kprw_event *ev, kprobe_pre_handler_t fallback,
                                      kprobe_pre_handler_t *direct);
/* Where a fault at ip in a generated recorder resumes, or 0 (fault.c). */
uintptr_t ev_recorder_fixup(uintptr_t ip);

/* A definition (kprobe_events' syntax) bound to every point its spec
 * names: the instances made, or -errno (-EINVAL: err says where). */
int ev_define(const char *text, size_t len, struct kprw_ev_error *err);
/* The same, bound to the points of table `only` (a definition baked into
 * it); NULL: every point. -EEXIST: an event of a name an instance would
 * have exists (err->col: where the name is). */
struct kprw_table;
int ev_define_in(const char *text, size_t len, const struct kprw_table *only, struct kprw_ev_error *err);
/* Unregister the instances SPEC names (a point spec, an event name or
 * GRP/EVENT, globs): how many, or -ENOENT. */
int ev_untrace(const char *spec);
/* The instances SPEC names keep a histogram of argument OF (NULL: a
 * return event's latency, an entry event's first argument), keyed by
 * argument BY (NULL: one key). */
int ev_hist(const char *spec, const char *of, const char *by);
void ev_hist_default(struct ev_inst *in);
/* The `events` file's text (malloc'd). */
char *ev_listing(size_t *len);

/* The instance a record names (NULL: none); reader side, lock-free:
 * instances are never freed. */
struct ev_inst *ev_by_id(uint32_t id);
uint32_t ev_count(void);

/* Does SPEC name the instance's point (runtime/core's spec match) or the
 * event (its name, a glob)? */
bool ev_inst_matches(const struct ev_inst *in, const char *spec);

/* Symbolize an address for a reader: "sym+0xoff/0xsize" or "sym". */
bool ev_symbolize(void *ctx, uint64_t addr, bool with_off, struct kprw_sbuf *b);
#endif
