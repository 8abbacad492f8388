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
#define KPRS_VERSION 3
#define KPRS_EXITS 2                     /* report points the head names */
#define KPRS_GUARD_STACK 16384           /* the guards' stack, after the area's arrays */

/* Offsets start-x86.S uses (init.c asserts them). */
#define KPRS_HEAD_AREA_REL 24
#define KPRS_AREA_STACK_BUSY 20
#define KPRS_AREA_STACK_TOP 24

#ifndef __ASSEMBLER__
#include <stdint.h>

/* At the blob's first byte (start-x86.S lays it out). */
struct kprs_head {
    uint32_t magic;                      /* KPRS_HEAD_MAGIC */
    uint32_t version;                    /* KPRS_VERSION */
    uint32_t start_off;                  /* the start routine (e_entry), from the head */
    uint32_t pad;
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
    uint8_t pad[4];
};

/* Points where the runtime acts, besides counting. */
enum kprs_guard {
    KPRS_GUARD_NONE,
    KPRS_GUARD_EXIT,                     /* _exit (the head's exit_rel): KPREWRITE_REPORT is printed */
    KPRS_GUARD_SIGACTION,                /* libc's sigaction (the head's): a handler for SIGTRAP
                                            takes the int3 probes' signal, so they are put back */
};

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
    uint8_t stack_busy;                  /* a guard runs on the guards' stack (start-x86.S) */
    uint8_t pad[3];
    uint64_t stack_top;                  /* the guards' stack: a guard's C runs there, never on the
                                            program's stack, which may be a goroutine's few KiB */
    /* then nentries struct kprs_point, and nentries uint32_t: the entries'
     * indices sorted by site (the SIGTRAP handler's search) */
};

/* The area's arrays, then (16-aligned) the guards' stack. */
static inline uint64_t kprs_area_arrays(uint32_t n)
{
    return sizeof(struct kprs_area) + (uint64_t)n * (sizeof(struct kprs_point) + sizeof(uint32_t));
}

static inline uint64_t kprs_area_size(uint32_t n)
{
    return ((kprs_area_arrays(n) + 15) & ~(uint64_t)15) + KPRS_GUARD_STACK;
}
#endif /* __ASSEMBLER__ */
#endif
