/*
 * Events: probes that record their arguments without a handler, in the
 * syntax of the kernel's kprobe_events (Documentation/trace/
 * kprobetrace.rst), shared by the rewriter (which checks a definition when
 * it bakes it) and the runtimes (which parse it again, fetch, filter and
 * print). Plain C, no libc: every allocation comes from a caller's arena.
 *
 *   [p[:[GRP/]EVENT] | r[MAXACTIVE][:[GRP/]EVENT]] SPEC [FETCHARG ...] [if FILTER]
 *
 * SPEC is a probe spec (SYM, SYM+OFF, 0xADDR, a glob, SYM%return); r or
 * %return makes a return event. FETCHARG is [NAME=]FETCH[:TYPE]:
 *   %REG  @ADDR  @SYM[+|-OFF]  $stackN  $stack  $argN  $retval  $comm
 *   +|-[u]OFF(FETCH)  \IMM
 * TYPE: u8..u64 s8..s64 x8..x64 char string ustring symbol, and TYPE[N]
 * (N <= 64) after a dereference. FILTER: ftrace's filter syntax over the
 * argument names and common_pid: == != < <= > >= & on numbers, == != ~
 * (a glob) on strings, && || ! and parentheses.
 *
 * A record is a struct kprw_rec, the return part for return events, the
 * fields at their offsets, one fault bit an argument, then the strings
 * (ftrace's data_loc: length << 16 | offset from the record's start).
 */
#ifndef KPREWRITE_EVENT_H
#define KPREWRITE_EVENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/fetch-isa.h"

#define KPRW_EV_MAX_ARGS 128        /* as the kernel's MAX_TRACE_ARGS */
#define KPRW_EV_MAX_DEREF 8         /* nested +OFF(...) */
#define KPRW_EV_MAX_ARRAY 64        /* TYPE[N] */
#define KPRW_EV_STRING_MAX 256      /* a string field's bytes, its NUL included */
#define KPRW_EV_NAME_MAX 64         /* an event's, a group's or an argument's name */
#define KPRW_EV_FILTER_DEPTH 16     /* nested ( and ! in a filter */
#define KPRW_EV_ENTRY_ARGS 16       /* $argN a return event fetches at the entry */
#define KPRW_EV_DEFAULT_GROUP "kprobes"

/* An arena: what a parse allocates, freed all at once by its owner. */
struct kprw_arena {
    char *base;
    size_t size, used;
};
void *kprw_arena_alloc(struct kprw_arena *a, size_t n, size_t align);

/* Where a fetch starts. */
enum kprw_fsrc {
    KPRW_FS_REG,        /* a pt_regs slot (%REG, $argN in a register, $retval) */
    KPRW_FS_STACK,      /* the word at sp + imm ($stackN, $argN on the stack) */
    KPRW_FS_STACKP,     /* sp itself ($stack) */
    KPRW_FS_IMM,        /* imm (\IMM; @ADDR, and @SYM once bound, with a dereference) */
    KPRW_FS_SYM,        /* @SYM+imm before it is bound (kprw_event_bind) */
    KPRW_FS_COMM,       /* the thread's name ($comm) */
    KPRW_FS_ENTRY_ARG,  /* return events: $argN as it was at the entry (entry slot imm) */
};

enum kprw_ftype {
    KPRW_FT_U, KPRW_FT_S, KPRW_FT_X, KPRW_FT_CHAR, KPRW_FT_STRING, KPRW_FT_SYMBOL,
};

struct kprw_farg {
    const char *name;
    const char *sym;               /* KPRW_FS_SYM: the symbol */
    int64_t imm;
    int32_t deref[KPRW_EV_MAX_DEREF];   /* offsets, innermost first */
    uint8_t src;                   /* enum kprw_fsrc */
    uint8_t reg;                   /* KPRW_FS_REG: the slot; KPRW_FS_STACK: the stack pointer's */
    uint8_t nderef;
    uint8_t type;                  /* enum kprw_ftype */
    uint8_t size;                  /* bytes of one element (a string: its data_loc, 4) */
    uint8_t count;                 /* TYPE[N]: N; else 0 */
    uint16_t off;                  /* the field's offset in the record */
    uint16_t col;                  /* where it starts in the definition (1-based) */
};

/* The common shapes of an argument, each fetched by a short path of its
 * own (kprw_event_plan sets them when the sources are known: after parse,
 * again after bind); anything else takes the general one. */
enum kprw_fkind {
    KPRW_FK_ANY,        /* the general path */
    KPRW_FK_REG8,       /* a number from a pt_regs slot (%REG, $argN in a */
    KPRW_FK_REG4,       /* register, $retval): 8, 4, 2 or 1 bytes of it */
    KPRW_FK_REG2,
    KPRW_FK_REG1,
    KPRW_FK_MEM8_IMM,   /* 8 bytes at IMM + an offset (@SYM:u64, @ADDR) */
    KPRW_FK_MEM8_REG,   /* 8 bytes at REG + an offset (+8(%di):u64) */
    KPRW_FK_STR_IMM,    /* a string behind a pointer at IMM + an offset, at + a
                           second offset (+0(@name):string) */
    KPRW_FK_STR_REG,    /* the same from REG (+0(+8(%di)):string) */
    KPRW_FK_STRAT_IMM,  /* a string at IMM + an offset (@SYM:string) */
    KPRW_FK_STRAT_REG,  /* a string at REG + an offset (+0(%si):string) */
};

/* What the hot path reads of an argument, 16 bytes (four arguments: one
 * cache line, where struct kprw_farg takes 72 bytes each): kprw_event_plan
 * fills one for each argument. */
struct kprw_fetch_op {
    uint8_t kind;                  /* enum kprw_fkind */
    uint8_t reg;                   /* the pt_regs slot (REGn, MEM8_REG, STR_REG) */
    uint16_t off;                  /* the field's offset in the record */
    int32_t d1;                    /* STR_*: the string's offset from the pointer */
    int64_t a;                     /* MEM8_IMM, STR_IMM, STRAT_IMM: the address read; MEM8_REG,
                                      STR_REG, STRAT_REG: the offset added to the register; ANY:
                                      the argument's index */
};

/* A filter: a tree of nodes. */
enum kprw_fop {
    KPRW_FO_AND, KPRW_FO_OR, KPRW_FO_NOT,
    KPRW_FO_EQ, KPRW_FO_NE, KPRW_FO_LT, KPRW_FO_LE, KPRW_FO_GT, KPRW_FO_GE, KPRW_FO_BAND, KPRW_FO_GLOB,
};
#define KPRW_FIELD_PID 0xffff      /* common_pid */

struct kprw_fnode {
    uint8_t op;                    /* enum kprw_fop */
    uint16_t field;                /* predicates: the argument's index, or KPRW_FIELD_PID */
    const struct kprw_fnode *l, *r;   /* AND OR: both; NOT: l */
    int64_t num;                   /* a number to compare with */
    const char *str;               /* or a string (== != ~) */
};

struct kprw_event {
    /* what a hit reads first, together */
    uint16_t nargs;
    uint16_t fixed;                /* bytes of the record before the strings */
    uint16_t fault_off;            /* where the fault bits are */
    uint32_t max_size;             /* the largest record it can make */
    const struct kprw_fetch_op *ops;    /* nargs: how each argument is fetched (kprw_event_plan) */
    const struct kprw_fnode *filter;   /* NULL: every hit */
    struct kprw_farg *args;
    /* the rest */
    const char *text;              /* the definition as written (arena copy) */
    const char *group;
    const char *name;              /* NULL: named after each point it is bound to */
    uint16_t name_col;             /* where the name is written (1-based; 0: no name) */
    const char *spec;              /* the probe spec */
    uint32_t spec_len;
    uint16_t spec_col;
    bool is_return;
    bool uses_args;                /* a $argN: entry probes only */
    uint16_t args_col;             /* where the first $argN is (1-based) */
    bool entry_off;                /* SYM+OFF, 0 < OFF <= the ISA's entry_prefix: with a
                                      $argN, only a SYM+0 point placed past a prefix
                                      (endbr64) is its entry: the binder checks */
    bool uses_comm;
    int maxactive;                 /* r<N>: return events; 0 default */
    uint8_t nentry;                /* return events: entry slots kept */
    uint8_t entry_slot[KPRW_EV_ENTRY_ARGS];   /* which pt_regs slot each keeps; 0xff: the stack */
    uint16_t entry_stack[KPRW_EV_ENTRY_ARGS]; /* ... and then where from the stack pointer */
};

struct kprw_ev_error {
    size_t col;                    /* 1-based column in the definition */
    const char *msg;               /* a constant string */
};

/* Parse a definition (text[0..len)) into ev, allocating from a. The
 * spec's own syntax is the caller's (the rewriter's spec parser, the
 * runtime's matcher): here it is one word. On error returns false with
 * err set. */
bool kprw_event_parse(const struct kprw_fetch_isa *isa, const char *text, size_t len, struct kprw_arena *a,
                      struct kprw_event *ev, struct kprw_ev_error *err);

/* Does the spec carry a definition (a prefix, or arguments after it)? A
 * plain spec does not: its probe counts hits only. */
bool kprw_event_is_definition(const char *text, size_t len);

/* @SYM: resolve each symbol (resolve returns false when it cannot); on
 * failure *bad names the argument. */
bool kprw_event_bind(struct kprw_event *ev, bool (*resolve)(void *ctx, const char *sym, uint64_t *addr), void *ctx,
                     const struct kprw_farg **bad);

/* ---- records ---- */
struct kprw_rec {
    uint32_t size;                 /* the whole record, a multiple of 8 */
    uint32_t id;                   /* the runtime's instance of the event (event x point) */
    uint32_t tid;
    uint32_t cpu;
    uint64_t ts;                   /* nanoseconds */
    uint64_t ip;                   /* the probe address; return events: the function's */
};
struct kprw_rec_ret {              /* after the header, in return events */
    uint64_t ret_ip;               /* where the function returned to */
    uint64_t entry_ts;             /* when it was entered (nanoseconds) */
};
#define KPRW_REC_HDR ((uint16_t)sizeof(struct kprw_rec))

/* What a fetch reads from. */
struct kprw_fetch_env {
    const unsigned long *regs;     /* pt_regs, by slot */
    const uint64_t *entry;         /* return events: the entry slots (nentry) */
    const char *comm;              /* NUL-terminated */
    /* Copy n bytes from src; the bytes copied before a fault (n: none). */
    size_t (*read)(void *dst, uintptr_t src, size_t n);
    /* Copy a NUL-terminated string of at most max bytes (the NUL
     * included, truncated to max - 1 and terminated); its length with the
     * NUL, or 0 on a fault. */
    size_t (*read_str)(char *dst, uintptr_t src, size_t max);
    /* Load the 8 bytes at src into *dst: true, or false on a fault. */
    bool (*read_word)(uint64_t *dst, uintptr_t src);
    uint8_t sp_slot;               /* the ISA's stack pointer slot */
};

/* Fill ev->ops, each argument's kind and operands (parse and bind call it). */
void kprw_event_plan(struct kprw_event *ev);
/* Fill the fields of rec (whose header the caller writes, room >=
 * ev->max_size bytes) and return the record's size. */
uint32_t kprw_event_fetch(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint8_t *rec);
/* At a return event's entry: the slots its $argN need (ev->nentry). */
void kprw_event_fetch_entry(const struct kprw_event *ev, const struct kprw_fetch_env *env, uint64_t *entry);
/* Does the filled record pass the event's filter? */
bool kprw_event_match(const struct kprw_event *ev, const uint8_t *rec);
/* Was argument i's fetch a fault? */
static inline bool kprw_rec_fault(const struct kprw_event *ev, const uint8_t *rec, unsigned i)
{
    return rec[ev->fault_off + i / 8] >> (i % 8) & 1;
}
/* An argument's value as a number (element 0 of an array; 0 for a string). */
int64_t kprw_rec_value(const struct kprw_event *ev, const uint8_t *rec, unsigned i);
/* Is a record of size bytes one ev can have made (its fixed part there,
 * each string inside it and NUL-terminated)? For a reader that does not
 * trust the writer: kprewrite ctl reading another process's ring. */
bool kprw_rec_valid(const struct kprw_event *ev, const uint8_t *rec, uint32_t size);
/* A string argument: its bytes (NUL-terminated) or NULL (a fault). */
const char *kprw_rec_string(const struct kprw_event *ev, const uint8_t *rec, unsigned i);

/* ---- text ---- */
/* A bounded text buffer: writes past cap are dropped, len still counts. */
struct kprw_sbuf {
    char *p;
    size_t len, cap;
};
void kprw_sb_str(struct kprw_sbuf *b, const char *s);
void kprw_sb_mem(struct kprw_sbuf *b, const char *s, size_t n);
void kprw_sb_char(struct kprw_sbuf *b, char c);
void kprw_sb_u64(struct kprw_sbuf *b, uint64_t v);
void kprw_sb_s64(struct kprw_sbuf *b, int64_t v);
void kprw_sb_hex(struct kprw_sbuf *b, uint64_t v);             /* 0x... */
void kprw_sb_field(struct kprw_sbuf *b, const char *s, size_t n, size_t width, bool right);   /* padded to width */
bool kprw_sb_end(struct kprw_sbuf *b);                          /* NUL-terminate; false if truncated */

/* How the printer names addresses ("symbol" fields). */
struct kprw_fmt_env {
    /* sym+0xOFF/0xSIZE (or sym alone, with_off false) into b; false: unknown */
    bool (*symbolize)(void *ctx, uint64_t addr, bool with_off, struct kprw_sbuf *b);
    void *ctx;
};

/* " NAME=VALUE ..." of a record, as ftrace prints a kprobe event's fields. */
void kprw_event_print_args(const struct kprw_event *ev, const uint8_t *rec, const struct kprw_fmt_env *env,
                           struct kprw_sbuf *b);
/* One line of trace_pipe, newline included:
 *   COMM-TID [CPU] SECS.USECS: EVENT: (WHERE) NAME=VALUE ...
 * where = "SYM+0xOFF" for a probe, "CALLER+0xOFF <- SYM" for a return;
 * ts_ns the record's time in nanoseconds. */
void kprw_event_print_line(const struct kprw_event *ev, const uint8_t *rec, uint64_t ts_ns, const char *comm,
                           const char *event, const char *where, const struct kprw_fmt_env *env, struct kprw_sbuf *b);
/* One line of an event on a point named SYM+OFFSET (as
 * kprw_event_point_name names the event), without a symbol table: symbol
 * fields print as addresses, and so does a return event's caller
 * ("0xRET_IP <- SYM") (the static runtime's exit writer and kprewrite ctl
 * reading a static program). */
void kprw_event_print_point_line(const struct kprw_event *ev, const uint8_t *rec, uint64_t ts_ns, const char *comm,
                                 const char *sym, uint32_t offset, uint32_t skipped, uint64_t addr,
                                 struct kprw_sbuf *b);
/* A record's time in clock units (TSC ticks, or nanoseconds already) to
 * nanoseconds, by two readings of both taken apart: ns0 + (t - t0) *
 * (ns1 - ns0) / (t1 - t0), the ratio kept with 32 fraction bits (no
 * 128-bit division at each record). */
struct kprw_clock {
    uint64_t t0, ns0, mult;
};
void kprw_clock_map(struct kprw_clock *c, uint64_t t0, uint64_t ns0, uint64_t t1, uint64_t ns1);
uint64_t kprw_clock_ns(const struct kprw_clock *c, uint64_t t);
/* A string as a JSON string's contents (quotes and controls escaped). */
void kprw_sb_json(struct kprw_sbuf *b, const char *s);
/* The arguments as a JSON object's members: "NAME":VALUE,... (numbers for
 * u and s, strings for the rest; null for a fault). */
void kprw_event_json_args(const struct kprw_event *ev, const uint8_t *rec, const struct kprw_fmt_env *env,
                          struct kprw_sbuf *b);
/* A record as a Chrome trace event: a return record a complete event
 * ("X": from the call's entry, entry_ns, to its return, ts_ns), an entry
 * record an instant one ("i"); named by the function (a return event) or
 * the event (name), its category the event. */
void kprw_event_json_record(const struct kprw_event *ev, const uint8_t *rec, const char *name, const char *sym,
                            uint64_t ts_ns, uint64_t entry_ns, uint64_t pid, const struct kprw_fmt_env *env,
                            struct kprw_sbuf *b);
/* ns as microseconds with three decimals (JSON's "ts" and "dur"). */
void kprw_sb_us(struct kprw_sbuf *b, uint64_t ns);
/* The event name the kernel would give a definition without one:
 * p_SYM_OFF / r_SYM_OFF, or p_0xADDR (non-alphanumerics become '_'). */
void kprw_event_default_name(bool is_return, const char *sym, uint32_t offset, uint64_t addr, struct kprw_sbuf *b);
/* An event's name on a point named SYM+offset (skipped: the bytes of an
 * endbr64 a SYM+0 point was placed past, else 0): the definition's, or the
 * kernel's default, where such a point is SYM+0 unless the spec says
 * SYM+OFF. */
void kprw_event_point_name(const struct kprw_event *ev, const char *sym, uint32_t offset, uint32_t skipped,
                           uint64_t addr, struct kprw_sbuf *b);

/* ---- histograms: log2 buckets, as bpftrace's hist() ---- */
#define KPRW_HIST_BUCKETS 65        /* [0], [1], [2,4) ... [2^63, 2^64) */
static inline unsigned kprw_hist_bucket(uint64_t v)
{
    return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}
/* The buckets as bpftrace prints them: "[lo, hi)  count |@@@@  |" lines,
 * from the first non-empty bucket to the last. */
void kprw_hist_print(const uint64_t *buckets, struct kprw_sbuf *b);
#endif
