/*
 * An event's recorder generated for its definition (the runtime calls it
 * where it would call its C recorder): the fetch program of
 * kprw_event_plan turned into straight-line code, with no loop over
 * operations, no environment and no record of what each operation is --
 * as the kernel's BPF programs are compiled where its fetch programs are
 * interpreted. Each ISA that has one answers in src/arch/<isa>/recorder.c;
 * an ISA without one, or a definition it does not take, gets the C
 * recorder, which writes the same records.
 *
 * The generated code is a kprobe pre_handler: (the instance's struct
 * kprobe, pt_regs). It records only the common case -- the instance
 * enabled, no histogram, the thread's ring made, room for the record
 * without wrapping -- and writes nothing before it knows it is that case;
 * anything else it hands, with its arguments untouched, to the C recorder
 * (`fallback`), which then does all of it (drops counted, padding written).
 */
#ifndef KPREWRITE_ARCH_RECORDER_H
#define KPREWRITE_ARCH_RECORDER_H
#include <stddef.h>
#include <stdint.h>

#include "runtime/core/event.h"

/* Where the code finds what it reads: offsets from the handler's first
 * argument (the instance), from the thread pointer and in the ring's
 * header; the functions it calls. */
struct kprw_recorder_env {
    int32_t inst_enabled;   /* a byte: 0, the event is off */
    int32_t inst_hist;      /* a pointer: non-NULL, the C recorder */
    int32_t inst_id;        /* uint32_t: the record's id */
    int32_t inst_addr;      /* uint64_t: the record's ip */
    int32_t ring_tls;       /* the thread's ring pointer, from the thread pointer */
    int32_t ring_head, ring_tail, ring_size, ring_tid, ring_data;
    int clock;              /* 1: rdtsc, the CPU at cpu_tls; 2: rdtscp (TSC_AUX & 0xfff) */
    int32_t cpu_tls;        /* clock 1: a uint32_t CPU number, from the thread pointer */
    uint64_t read_str;      /* size_t (char *dst, uintptr_t src, size_t max): 0 on a fault */
    uint64_t fallback;      /* the C recorder, a pre_handler */
    /* the direct entry (0: none): the dispatcher's call with only the
     * caller-saved registers in pt_regs -- the callee-saved ones still
     * hold the probed values, the probed sp is regs + frame -- which fills
     * the rest as the dispatcher would (ip the instance's addr + 1, orig_ax
     * -1, the flags 0x202 unless the point's flags byte has flags_saved)
     * before it hands a hit to the C recorder */
    int32_t frame;
    int32_t inst_point;     /* a pointer: the instance's point */
    int32_t point_flags;    /* a byte in the point */
    uint8_t flags_saved;
};

/* A load of the program's memory in the code, which may fault: the
 * runtime's fault handler resumes a fault in [load, load_end) at fixup
 * (offsets from the code's start), where the code records the fault. */
struct kprw_recorder_fixup {
    uint32_t load, load_end, fixup;
};
#define KPRW_RECORDER_FIXUPS (4 * KPRW_EV_MAX_ARGS)   /* two an argument at most, in each of two entries */

/* The recorder's bytes for ev into out (room bytes; out NULL: count them),
 * placed at address at, and its loads' fixups into fix (*nfix of them;
 * KPRW_RECORDER_FIXUPS room); its length, or 0 when this ISA has no
 * recorder or does not take ev (a filter, a return event, an argument of
 * the general kind, a record too large). The pre_handler is at the code's
 * start; the direct entry at *direct (0: none, when env->frame is 0 or an
 * argument reads a register the dispatcher leaves unfilled). */
size_t kprw_recorder_emit(const struct kprw_event *ev, const struct kprw_recorder_env *env, uint8_t *out, size_t room,
                          uint64_t at, struct kprw_recorder_fixup *fix, unsigned *nfix, size_t *direct);
#endif
