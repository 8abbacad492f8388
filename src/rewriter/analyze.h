/* Whole-function analysis: gives every resolved probe its verdict. */
#ifndef KPREWRITE_ANALYZE_H
#define KPREWRITE_ANALYZE_H
#include "image.h"
#include "facts.h"
#include "probe.h"
#include "symbols.h"

struct analysis_stats {
    size_t funcs_decoded;
    size_t insns_decoded;
    size_t jump_tables;       /* recovered */
    size_t ijmp_unknown;      /* indirect jumps left unproven */
    size_t ijmp_outside;      /* proven to land on a taken address: their family
                                 materializes no address inside itself (taken.c) */
    size_t ijmp_load;         /* through a pointer loaded from memory */
    size_t ijmp_tail;         /* tail calls: the frame at its entry state (CFI) */
    size_t evictions;         /* windows of instructions evicted for trampolines */
    size_t landing_pads;
};

/* Decodes each function of the image once (probed functions keep their
 * instruction boundaries; the others only contribute control-flow targets)
 * and sets verdict, reason, detail and DCR of every probe not refused yet. */
/* strict_indirect: keep every unproven indirect jump a taint, without the
 * proof that it leaves its function (taken.c). */
int analyze_probes(const struct image *img, const struct symbols *sy, const struct kfacts *kf, bool strict_indirect,
                   struct probe_list *probes, struct analysis_stats *st, char *err, size_t errlen);

/* After the verdicts changed past the analysis (go_detours, go_no_traps):
 * the windows evicted for trampolines that no jump-optimized probe uses any
 * more are dropped (they would be rewritten for nothing); their count
 * taken off st->evictions. */
void evictions_prune(struct probe_list *probes, struct analysis_stats *st);
#endif
