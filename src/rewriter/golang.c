/* Go's code a probe may not touch (golang.h; doc/analysis.md, "Go
 * programs"). */
#include "golang.h"
#include "analysis.h"
#include "spec.h"

#include <stdio.h>
#include <string.h>

/* The runtime's functions that switch stacks or run where no goroutine
 * frame is (Go 1.16-1.22 names; an ABI0 wrapper has the same name): a
 * detour at their entry would push onto a stack that is exhausted
 * (morestack: called because it is), being switched (mcall, systemstack,
 * gogo, asmcgocall, cgocallback), not Go's yet (rt0_go, mstart), a signal
 * frame (sigtramp, sigreturn, asyncPreempt's injected call) or the top of
 * every goroutine (goexit). */
static const char *const special[] = {
    "runtime.morestack", "runtime.morestack_noctxt", "runtime.morestackc", "runtime.mcall", "runtime.systemstack",
    "runtime.systemstack_switch", "runtime.gogo", "gogo", "runtime.gosave_systemstack_switch",
    "gosave_systemstack_switch", "runtime.asmcgocall", "runtime.asmcgocall_no_g", "runtime.cgocallback",
    "runtime.rt0_go", "runtime.mstart", "runtime.mstart0", "runtime.goexit", "runtime.goexit0",
    "runtime.sigtramp", "runtime.cgoSigtramp", "runtime.sigreturn", "runtime.sigreturn__sigaction",
    "runtime.asyncPreempt", "runtime.setg_gcc", "setg_gcc", "runtime.abort", "runtime.gcWriteBarrier",
    "runtime.debugCallV2", "runtime.debugCallPanicked",
};

static bool special_name(const char *name)
{
    size_t n = strlen(name), sfx = sizeof ".abi0" - 1;
    if (n > sfx && strcmp(name + n - sfx, ".abi0") == 0)
        n -= sfx;   /* (the ABI0 one of a function and its wrapper: gopclntab.c) */
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++)
        if (strlen(special[k]) == n && strncmp(name, special[k], n) == 0)
            return true;
    /* runtime.debugCall32 ... debugCall65536: the debugger injects calls to them */
    return strncmp(name, "runtime.debugCall", 17) == 0 && name[17] >= '1' && name[17] <= '9';
}

bool go_refused(const struct func *fn, bool is_return, enum kp_reason *reason, char *buf, size_t size)
{
    const char *name = fn->go_name;
    if (!name)
        return false;
    bool runtime = strncmp(name, "runtime.", 8) == 0;
    *reason = KP_R_GO_RUNTIME;
    if (special_name(name)) {
        snprintf(buf, size, "%s switches stacks or runs without a goroutine frame", name);
        return true;
    }
    if (fn->go_flag & GO_FLAG_SPWRITE) {
        snprintf(buf, size, "%s writes SP (Go's SPWRITE flag)", name);
        return true;
    }
    if (runtime && (fn->go_flag & GO_FLAG_TOPFRAME)) {
        snprintf(buf, size, "%s is the top frame of its stack (Go's TOPFRAME flag)", name);
        return true;
    }
    if (is_return) {
        *reason = KP_R_GO_RETURN;
        snprintf(buf, size, "%s is Go's: its return address moves with its stack", name);
        return true;
    }
    return false;
}

/* A compact detour pushes the return address and three registers (32
 * bytes below the probed SP) on a hit that only counts; with handlers, or
 * on the thread's first hit, it moves to the thread's runtime stack before
 * anything else (enter-fast.S). Every other detour saves pt_regs below the
 * 128-byte red zone (about 300 bytes) on the goroutine stack: int3 there. */
void go_detours(struct probe_list *pl, const struct symbols *sy, bool compact)
{
    for (size_t i = 0; i < pl->n; i++) {
        struct probe *p = &pl->v[i];
        if (p->func == SIZE_MAX || p->func >= sy->nfuncs || !sy->funcs[p->func].go_name)
            continue;
        p->notes |= NOTE_GO;
        if (p->verdict != V_OPTIMIZED || (compact && p->at_entry && !p->is_return && !(p->notes & NOTE_FLAGS_SAVED)))
            continue;
        probe_set(p, V_INT3, KP_R_GO_STACK, "%s", !p->at_entry ? "not at the entry"
                  : !compact ? "detours not compact" : "the flags are live");
    }
}

/* A static Go executable: Go's runtime installs a handler for every
 * signal with its own rt_sigaction system call, SIGTRAP's too, and no libc
 * sigaction is there to keep the static runtime's: an int3 would end the
 * program in Go's handler (SIGTRAP: trace trap). Every probe left int3 is
 * refused; the jumps stay. */
void go_no_traps(struct probe_list *pl)
{
    for (size_t i = 0; i < pl->n; i++) {
        struct probe *p = &pl->v[i];
        if (p->verdict != V_INT3)
            continue;
        char was[sizeof p->detail + 128], rb[128];
        snprintf(was, sizeof was, p->detail[0] ? "an int3 here: %s (%s)" : "an int3 here: %s",
                 probe_reason(p, rb, sizeof rb), p->detail);
        probe_set(p, V_REFUSED, KP_R_GO_SIGTRAP, "%s", was);
    }
}

/* Go ends a process by runtime.exit, its own exit_group(2), never by
 * libc's exit or _exit, which the runtime interposes to write the trace
 * rings and KPREWRITE_REPORT's counts: a probe there (the runtime's guard,
 * src/runtime/user/go-guard.c) does it instead. */
int go_guard_add(const struct symbols *sy, struct spec_list *specs, char *err, size_t errlen)
{
    const struct name_ent *ne = symbols_lookup(sy, "runtime.exit");
    if (!specs->n || !sy->ngo || !ne || ne->func == SIZE_MAX || !sy->funcs[ne->func].go_name)
        return 0;
    return spec_add(specs, "runtime.exit", "Go's exit guard", err, errlen);
}
