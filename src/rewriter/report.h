/* The --check report: one line a probe, or one JSON document. */
#ifndef KPREWRITE_REPORT_H
#define KPREWRITE_REPORT_H
#include <stdio.h>
#include "analyze.h"

enum exit_status {
    EXIT_ALL_OPTIMIZED = 0,
    EXIT_ERROR = 1,
    EXIT_SOME_INT3 = 2,
    EXIT_SOME_REFUSED = 3,
};

void report_text(FILE *out, const struct probe_list *probes);
void report_json(FILE *out, const struct image *img, const struct symbols *sy,
                 const struct probe_list *probes, const struct analysis_stats *st);
/* Counts by verdict and reason, for --summary (to out). */
void report_summary(FILE *out, const struct symbols *sy, const struct probe_list *probes,
                    const struct analysis_stats *st);
/* A rewrite's diagnostics on msg: one line for each refused probe a spec
 * named (file, symbol+offset, address, reason, detail), one count line for
 * those globs matched. */
void report_refusals(FILE *msg, const char *path, const struct probe_list *probes);
enum exit_status report_exit_status(const struct probe_list *probes);
/* --disasm: every instruction of each probed function: address, length, text. */
void report_disasm(FILE *out, const struct image *img, const struct symbols *sy,
                   const struct probe_list *probes);
#endif
