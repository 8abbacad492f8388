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
#endif
