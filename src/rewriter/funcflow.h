/* One candidate function's own flow, for the function finder (funcfind.c):
 * the instructions its entry reaches by falling through and branching,
 * not by calls, up to a bound; the extent they prove. */
#ifndef KPREWRITE_FUNCFLOW_H
#define KPREWRITE_FUNCFLOW_H
#include "funcfind.h"
#include "../arch/x86/decode.h"

struct image;

struct flow {
    uint64_t start, bound;      /* the entry, and the next function's start (or the gap's end) */
    struct x86_insn *in;        /* reached, in address order once flow_run returns */
    size_t n, cap;
    uint8_t *mark;              /* per byte of [start, bound): 1 an instruction starts, 2 inside one */
    size_t mcap;
    uint64_t *todo, *tables;    /* branch targets to walk; table targets met */
    size_t ntodo, todocap, ntables, tabcap;
    uint64_t *out;              /* branch targets outside [start, bound) */
    size_t nout, outcap;
    /* results */
    uint64_t end;               /* [start, end): reached instructions and padding between them */
    bool last_falls;            /* the instruction ending at end may fall through */
    bool falls_off;             /* a path falls through into bound */
    enum ff_reason bad;         /* FF_R__COUNT: none */
    uint64_t bad_at;
    bool oom;
};

/* Walks the flow of the entry start up to bound (exclusive). A jump
 * table's targets are walked when it is bounded by its check. */
void flow_run(struct flow *w, const struct image *img, uint64_t start, uint64_t bound);
/* Forgets a run's instructions (keeps the buffers). */
void flow_reset(struct flow *w);
void flow_free(struct flow *w);
/* The address a RIP-relative operand names, or 0. */
uint64_t flow_riprel(const struct image *img, const struct x86_insn *in);
/* Is the instruction a padding one (a nop, int3)? */
static inline bool flow_padding(const struct x86_insn *in)
{
    return (in->flags & XF_NOP) || in->kind == XK_INT3;
}
#endif
