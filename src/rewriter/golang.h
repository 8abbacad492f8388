/* Go's code (functions named by .gopclntab: gopclntab.h): which of it a
 * probe may not touch, and why. */
#ifndef KPREWRITE_GOLANG_H
#define KPREWRITE_GOLANG_H
#include "symbols.h"
#include "kprewrite/reasons.h"
#include <stddef.h>

/* Is a probe in fn (a return probe when is_return) refused because fn is
 * Go's? Then its reason, and a detail in buf. */
bool go_refused(const struct func *fn, bool is_return, enum kp_reason *reason, char *buf, size_t size);

struct spec_list;
/* A Go program baked with probes gets one more on runtime.exit, Go's own
 * exit_group(2), where the runtime writes what it writes at exit (go-guard.c).
 * -1: an error in err. */
int go_guard_add(const struct symbols *sy, struct spec_list *specs, char *err, size_t errlen);

struct probe_list;
/* The analyzed probes in Go functions: marked (NOTE_GO), and int3
 * (go-stack) where their detour would not be a compact one at the entry
 * (compact: the detours are, at call entries). */
void go_detours(struct probe_list *pl, const struct symbols *sy, bool compact);
/* A static Go executable's probes: each left int3 refused (go-sigtrap). */
void go_no_traps(struct probe_list *pl);
#endif
