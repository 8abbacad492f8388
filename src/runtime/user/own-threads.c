/*
 * The runtime's own threads (the control directory's server, the trace
 * writer) run with the recursion guard set (rt_enter): their hits in a
 * probed libc are misses, never events or counts. But glibc's start_thread
 * calls into libc (__ctype_init, _setjmp, ...) before the thread's function
 * runs and can set the guard, and those first hits would count and make
 * events. So the runtime gives its threads stacks of its own, and a
 * thread's first hit (hits.c, rt_dispatch_slow) on one of them sets the
 * guard there and then.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "rt.h"

#define OWN_STACK (1u << 20)   /* lazily committed: the threads use a few pages */
#define OWN_GUARD 4096
#define OWN_MAX 4

static _Atomic uintptr_t own_lo[OWN_MAX];   /* each stack's lowest usable byte, 0: free slot */

int rt_own_thread_create(pthread_t *th, pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    unsigned slot = OWN_MAX;
    for (unsigned i = 0; i < OWN_MAX && slot == OWN_MAX; i++) {
        uintptr_t none = 0;
        if (atomic_compare_exchange_strong(&own_lo[i], &none, (uintptr_t)1))   /* reserved */
            slot = i;
    }
    void *m = slot < OWN_MAX ? mmap(NULL, OWN_STACK + OWN_GUARD, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)
                             : MAP_FAILED;
    if (m == MAP_FAILED || mprotect(m, OWN_GUARD, PROT_NONE) != 0) {
        /* no stack of its own: the thread's first few libc calls count */
        if (m != MAP_FAILED)
            munmap(m, OWN_STACK + OWN_GUARD);
        if (slot < OWN_MAX)
            atomic_store(&own_lo[slot], 0);
        return pthread_create(th, attr, fn, arg);
    }
    pthread_attr_t local;
    if (!attr) {
        pthread_attr_init(&local);
        attr = &local;
    }
    uintptr_t lo = (uintptr_t)m + OWN_GUARD;
    pthread_attr_setstack(attr, (void *)lo, OWN_STACK);
    atomic_store(&own_lo[slot], lo);
    int rc = pthread_create(th, attr, fn, arg);
    if (attr == &local)
        pthread_attr_destroy(&local);
    if (rc != 0) {
        atomic_store(&own_lo[slot], 0);
        munmap(m, OWN_STACK + OWN_GUARD);
    }
    return rc;   /* (the stack stays mapped for the process's life: one writer, one server) */
}

bool rt_on_own_stack(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    for (unsigned i = 0; i < OWN_MAX; i++) {
        uintptr_t lo = atomic_load_explicit(&own_lo[i], memory_order_relaxed);
        if (lo > 1 && sp - lo < OWN_STACK)
            return true;
    }
    return false;
}
