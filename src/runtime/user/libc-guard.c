/*
 * The signal guard of a probed libc. The runtime keeps SIGTRAP (int3
 * probes) and the fault signals it fixes up by interposing sigaction,
 * signal, sigprocmask and pthread_sigmask (trap.c). When the image baked
 * is libc itself, the runtime is libc's DT_NEEDED and comes after it in
 * the lookup scope: nothing is interposed. So kprewrite bakes probes on
 * libc's __sigaction (which sigaction, signal, bsd_signal, sysv_signal,
 * sigset and sigignore call) and pthread_sigmask (which sigprocmask,
 * sigblock, sigsetmask, sighold, sigrelse and sigpause call) whenever it
 * bakes a glibc libc.so (src/rewriter/libc-guard.c), and the runtime
 * registers a kprobe of its own on each, the last of its point's handlers:
 *
 *   __sigaction      what trap_route_action says: the program's SIGTRAP
 *                    action (a fault signal's, while fault.c holds it)
 *                    recorded, or the action installed with SIGTRAP out of
 *                    the handler's mask (the system call made here)
 *   pthread_sigmask  a mask to block without trap_undeliverable's signals
 *                    (the system call made here)
 *
 * The handler does the call itself and turns libc's into one that changes
 * nothing and succeeds (act, oact or set and old NULL), so libc returns
 * as it does (0, or -1 and errno; pthread_sigmask's error number): no
 * copy outlives the handler. A call that fails is left to libc as it was
 * (it fails the same way). The handlers see the program's calls only: the
 * runtime's own, inside the runtime or a handler, run no handler (and the
 * runtime's threads set their masks by system call, trap_block_all).
 *
 * Their points are never disarmed (disable, enabled 0: patch.c, ctl.c),
 * and the handler runs on the int3 path too (unoptimize, optimization 0).
 *
 * Two more guards stand in for the runtime's interposed _exit and exec
 * family (trace-env.c, exec.c), for the same reason: libc's _exit (which
 * _Exit is, and which posix_spawn's child and dash call) and execve (which
 * every exec function of glibc calls inside) write what the trace rings
 * hold before the process ends or is replaced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <string.h>
#include <sys/syscall.h>

#include "rawsys.h"
#include "rt.h"

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

static void *restorer;   /* libc's __restore_rt, as libc installed the runtime's SIGTRAP handler */

/* glibc's __sigaction says EINVAL to these (its own two, and out of range) */
static bool libc_refuses(long sig) { return sig < 1 || sig > 64 || sig == 32 || sig == 33; }

/* act installed as libc's __libc_sigaction would (SA_RESTORER, libc's
 * restorer), *oact filled as it does; 0 or -errno. */
static long install_as_libc(int sig, const struct sigaction *act, struct sigaction *oact)
{
    struct k_sigaction k = { (void *)act->sa_handler, (unsigned long)act->sa_flags | SA_RESTORER, restorer,
                             act->sa_mask.__val[0] },
                       o;
    long r = RAW(SYS_rt_sigaction, sig, &k, oact ? &o : NULL, sizeof k.mask);
    if (r == 0 && oact) {
        oact->sa_handler = (__sighandler_t)o.handler;
        oact->sa_mask.__val[0] = o.mask;
        oact->sa_flags = (int)o.flags;
        oact->sa_restorer = (void (*)(void))o.restorer;
    }
    return r;
}

static int on_sigaction(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    int sig = (int)regs->di;
    const struct sigaction *act = (const struct sigaction *)regs->si;
    struct sigaction *oact = (struct sigaction *)regs->dx, copy;
    if (libc_refuses(sig))
        return 0;
    switch (trap_route_action(sig, act, oact, &copy)) {
    case TRAP_ACT_RECORDED:
        break;
    case TRAP_ACT_COPY:
        if (!restorer || install_as_libc(sig, &copy, oact) < 0)
            return 0;   /* libc makes the call (and fails it the same way) */
        break;
    default:
        return 0;
    }
    regs->si = regs->dx = 0;   /* libc's call now only succeeds */
    return 0;
}

static int on_sigmask(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    int how = (int)regs->di;
    const sigset_t *set = (const sigset_t *)regs->si;
    if (!set || (how != SIG_BLOCK && how != SIG_SETMASK))
        return 0;
    uint64_t keep = trap_undeliverable(), want = set->__val[0];
    if (!(want & keep))
        return 0;   /* nothing to take out: libc's call as it was */
    want &= ~keep;
    long r = RAW(SYS_rt_sigprocmask, how, &want, regs->dx, sizeof want);
    if (r == -EFAULT)
        regs->si = 0;   /* the mask is set, old is not writable: libc says so */
    else if (r == 0)
        regs->si = regs->dx = 0;
    return 0;
}

/* What the runtime's _exit and exec family do, where they are not
 * interposed: the events the rings hold are written first (trace-env.c). */
static int on_exit_call(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp, (void)regs;
    rt_before_exit();
    return 0;
}

static int on_execve(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp, (void)regs;
    rt_before_exec();
    return 0;
}

static struct kprobe guard_action = { .pre_handler = on_sigaction };
static struct kprobe guard_mask = { .pre_handler = on_sigmask };
static struct kprobe guard_exit = { .pre_handler = on_exit_call };
static struct kprobe guard_exec = { .pre_handler = on_execve };

/* The runtime's own SIGTRAP action, installed through libc, holds libc's
 * restorer. */
static void learn_restorer(void)
{
    struct k_sigaction k;
    if (RAW(SYS_rt_sigaction, SIGTRAP, NULL, &k, sizeof k.mask) == 0 && (k.flags & SA_RESTORER))
        restorer = k.restorer;
}

static void guard(void *handle, const char *sym, struct kprobe *kp)
{
    void *fn = dlsym(handle, sym);
    if (!fn)
        return;
    rt_lock_take();
    struct point *pt = rt_find_point(NULL, 0, (uintptr_t)fn);
    if (!pt)   /* the entry after an endbr64 */
        pt = rt_find_point(NULL, 0, (uintptr_t)fn + 4);
    if (pt && (pt->offset == 0 || (pt->flags & KPRW_F_AFTER_ENDBR)))
        rt_register_guard(kp, pt);
    rt_lock_drop();
}

/* At start-up, after the pools of the objects loaded then registered:
 * libc's own __sigaction, pthread_sigmask, _exit and execve, when libc has
 * points there. */
void libc_guard_install(void)
{
    void *h = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    learn_restorer();
    guard(h, "__sigaction", &guard_action);
    guard(h, "pthread_sigmask", &guard_mask);
    guard(h, "_exit", &guard_exit);
    guard(h, "execve", &guard_exec);
    dlclose(h);
}
