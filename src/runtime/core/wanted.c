/* What a point's code should be (kprw-core.h), for both runtimes. */
#include "kprw-core.h"

enum code_state kprw_wanted(bool knob_enabled, bool knob_optimization, bool disabled, bool unoptimized,
                            bool can_jump)
{
    if (!knob_enabled || disabled)
        return CODE_DISABLED;
    if (can_jump && knob_optimization && !unoptimized)
        return CODE_OPTIMIZED;
    return CODE_INT3;
}
