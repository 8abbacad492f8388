/*
 * C++ exceptions and forced unwinding (pthread_cancel, pthread_exit) through
 * return-probed frames: the unwinder reads each frame's return address to
 * find the caller's unwind information, and the return trampoline has none
 * that could name the real caller. So the runtime defines the unwinder's
 * entry points (it comes before libgcc_s in the lookup order of a program
 * linked with it), puts every hooked return address of the thread back,
 * and calls the real one.
 *
 * glibc's pthread_exit and pthread_cancel call libgcc_s's unwinder through
 * their own dlopen handle, past these: pthread_exit is interposed too; a
 * thread cancelled inside hooked frames still exits (the unwinder stops at
 * the first trampoline it meets), but C++ destructors of the frames above
 * that one do not run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <unwind.h>

#include "rt.h"

#define NEXT(name) \
    static __typeof__(name) *next_##name; \
    if (!next_##name) \
        next_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

EXPORT _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *e)
{
    NEXT(_Unwind_RaiseException);
    rt_kretprobe_unhook_all();
    return next__Unwind_RaiseException ? next__Unwind_RaiseException(e) : _URC_FATAL_PHASE1_ERROR;
}

EXPORT _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
    NEXT(_Unwind_Resume_or_Rethrow);
    rt_kretprobe_unhook_all();
    return next__Unwind_Resume_or_Rethrow ? next__Unwind_Resume_or_Rethrow(e) : _URC_FATAL_PHASE1_ERROR;
}

EXPORT _Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop, void *arg)
{
    NEXT(_Unwind_ForcedUnwind);
    rt_kretprobe_unhook_all();
    return next__Unwind_ForcedUnwind ? next__Unwind_ForcedUnwind(e, stop, arg) : _URC_FATAL_PHASE2_ERROR;
}

EXPORT void pthread_exit(void *ret)
{
    NEXT(pthread_exit);
    rt_kretprobe_unhook_all();
    next_pthread_exit(ret);
    __builtin_unreachable();
}

/* Called by register_kretprobe: with the static runtime, this reference is
 * what brings these definitions into the program. */
void rt_unwind_hooks_linked(void) {}
