/* Printed names of verdicts and reasons (include/kprewrite/reasons.h). */
#include "probe.h"

#include <stdio.h>

static const char *const names[] = {
#define KP_REASON_NAME(id, name, text) name,
    KP_REASONS(KP_REASON_NAME)
#undef KP_REASON_NAME
};

static const char *const texts[] = {
#define KP_REASON_TEXT(id, name, text) text,
    KP_REASONS(KP_REASON_TEXT)
#undef KP_REASON_TEXT
};

const char *reason_name(enum kp_reason r)
{
    return (unsigned)r < KP_R__COUNT ? names[r] : "?";
}

const char *reason_text(enum kp_reason r)
{
    return (unsigned)r < KP_R__COUNT ? texts[r] : "?";
}

const char *verdict_name(enum verdict v)
{
    switch (v) {
    case V_OPTIMIZED: return "optimized";
    case V_INT3: return "int3";
    case V_REFUSED: return "refused";
    }
    return "?";
}

const char *probe_reason(const struct probe *p, char *buf, size_t size)
{
    if (p->reason == KP_R_RESERVED && p->reason_arg)
        snprintf(buf, size, "%s:%s", reason_name(p->reason), p->reason_arg);
    else
        snprintf(buf, size, "%s", reason_name(p->reason));
    return buf;
}
