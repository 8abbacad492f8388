/* The event definitions a bake stores in the probe table (abi.h
 * KPRW_T_EVENTS), for the user runtime to define at start-up. */
#ifndef KPREWRITE_DEFS_H
#define KPREWRITE_DEFS_H
#include <stdio.h>

#include "probe.h"
#include "spec.h"
#include "symbols.h"

struct kprw_fetch_isa;

/* Into probes->defs: the definitions an earlier run baked (specs->defs)
 * and those given now (specs with a def), checked against the probes
 * about to be baked as the runtime will bind them, for the image's ISA
 * (isa). A baked one whose
 * points are gone, or that a new one replaces (the same text, or an event
 * of the same name), is left out (the second said on msg, naming image);
 * a new one whose point was refused is left out (the refusal is
 * reported). 0, or -1 with err (two new ones give an event of one name). */
int defs_collect(const struct spec_list *specs, const struct symbols *sy, struct probe_list *probes,
                 const struct kprw_fetch_isa *isa, const char *image, FILE *msg, char *err, size_t errlen);
#endif
