/* Probe specs -> probe points (addresses in functions), before analysis. */
#ifndef KPREWRITE_RESOLVE_H
#define KPREWRITE_RESOLVE_H
#include "image.h"
#include "probe.h"
#include "symbols.h"

/* Expands globs, resolves names and addresses, applies the endbr64 rule.
 * Unknown symbols and empty globs are errors (-1, message in err); points
 * that exist but cannot be probed get a refused verdict here. */
int probes_resolve(const struct spec_list *specs, const struct image *img, const struct symbols *sy,
                   struct probe_list *out, char *err, size_t errlen);
void probe_list_free(struct probe_list *l);
#endif
