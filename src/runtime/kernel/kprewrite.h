/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprewrite's kernel API: handlers on the probe points kprewrite baked
 * into this kernel (installed as include/linux/kprewrite.h by
 * src/runtime/kernel/integrate.sh; see doc/kernel.md).
 *
 * It mirrors register_kprobe() with its own names, so that it never clashes
 * with the kernel's kprobes (CONFIG_KPROBES may be on too). Only points that
 * were baked can be registered: the probe is already in the code, a
 * registration only attaches a handler to it.
 *
 * Without CONFIG_KPROBES (CONFIG_KPREWRITE_KPROBES_API), the names are the
 * kernel's: the runtime provides <linux/kprobes.h>'s register_kprobe() and
 * its kin on struct kprobe, struct kretprobe and struct kretprobe_instance
 * (their fields the kprobes core would use hold the runtime's private
 * ones), and every kprw_ name below is the kernel's (integrate.sh makes
 * kprobes.h declare them instead of its stubs).
 */
#ifndef _LINUX_KPREWRITE_H
#define _LINUX_KPREWRITE_H

#include <linux/types.h>

struct pt_regs;

#ifdef CONFIG_KPREWRITE_KPROBES_API
#include <linux/kprobes.h>
#define kprw_kprobe kprobe
#define kprw_kretprobe kretprobe
#define kprw_kretprobe_instance kretprobe_instance
#define kprw_pre_handler_t kprobe_pre_handler_t
#define kprw_post_handler_t kprobe_post_handler_t
#define kprw_kretprobe_handler_t kretprobe_handler_t
#define register_kprw_kprobe register_kprobe
#define unregister_kprw_kprobe unregister_kprobe
#define register_kprw_kprobes register_kprobes
#define unregister_kprw_kprobes unregister_kprobes
#define enable_kprw_kprobe enable_kprobe
#define disable_kprw_kprobe disable_kprobe
#define register_kprw_kretprobe register_kretprobe
#define unregister_kprw_kretprobe unregister_kretprobe
#define register_kprw_kretprobes register_kretprobes
#define unregister_kprw_kretprobes unregister_kretprobes
#define enable_kprw_kretprobe enable_kretprobe      /* kprobes.h's inline */
#define disable_kprw_kretprobe disable_kretprobe
#define get_kprw_kretprobe get_kretprobe
/* the runtime's private fields: in those the kprobes core (absent) uses */
#define KPRW_KP_NEXT(kp)	(*(struct kprobe __rcu **)&(kp)->hlist.next)
#define KPRW_KP_POINT(kp)	(*(void **)&(kp)->hlist.pprev)
#define KPRW_RP_HOLDER(rp)	(*(struct kprw_kretprobe_holder **)&(rp)->rh)
#define KPRW_RI_NEXT(ri)	(*(struct kretprobe_instance **)&(ri)->node.llist.next)
#define KPRW_RI_HOLDER(ri)	(*(struct kprw_kretprobe_holder **)&(ri)->node.rethook)
/* (rethook_node.rcu: in 6.1 a union with its freelist node, in 6.12 alone) */
#define KPRW_RI_BUSY(ri)	(*(unsigned int *)&(ri)->node.rcu)
#define KPRW_RI_RET(ri)		(*(void **)&(ri)->node.ret_addr)
#define KPRW_RI_FP(ri)		(*(void **)&(ri)->node.frame)
#else
#define KPRW_KP_NEXT(kp)	((kp)->next)
#define KPRW_KP_POINT(kp)	((kp)->point)
#define KPRW_RP_HOLDER(rp)	((rp)->rph)
#define KPRW_RI_NEXT(ri)	((ri)->next)
#define KPRW_RI_HOLDER(ri)	((ri)->rph)
#define KPRW_RI_BUSY(ri)	((ri)->busy)
#define KPRW_RI_RET(ri)		((ri)->ret_addr)
#define KPRW_RI_FP(ri)		((ri)->fp)

struct kprw_kprobe;

/* Runs at each hit, before the probed instruction, with preemption off
 * (and in the int3 path with interrupts off); regs->ip is the probe address
 * + 1 (x86: past the int3, as the kernel's kprobes give it). Writes to the
 * general registers take effect. As with the kernel's kprobes, on the int3
 * path a non-zero return means the handler set regs->ip (and what goes with
 * it) to where the code is to resume: the probed instruction is not run, no
 * post_handler runs, nor the handlers of older kprobes on the point; on a
 * jump-optimized point the return value and a changed ip are ignored. */
typedef int (*kprw_pre_handler_t)(struct kprw_kprobe *kp, struct pt_regs *regs);
/* Runs after the probed instruction (single-stepped out of line, with
 * interrupts off), regs->ip where it leaves the original code; flags is 0.
 * A point with one runs unoptimized, as with the kernel's kprobes. */
typedef void (*kprw_post_handler_t)(struct kprw_kprobe *kp, struct pt_regs *regs, unsigned long flags);

#endif /* !CONFIG_KPREWRITE_KPROBES_API */

/* Called when one of the kprobe's handlers (pre, post, a jprobe's) faults,
 * with the trap's number (x86: 14 a page fault, 13 a general protection
 * fault); kp->nmissed counts it. 1: handled, the code goes on at regs->ip
 * as the fault_handler left it (it must have moved it past the fault);
 * 0: the fault takes its course (an exception-table fixup, or an oops).
 * As the kernel's kprobes had it until 5.14: kp->fault_handler, a field of
 * struct kprw_kprobe (and of struct kprobe without CONFIG_KPROBES). */
typedef int (*kprw_fault_handler_t)(struct kprw_kprobe *kp, struct pt_regs *regs, int trapnr);

/* kp->flags: a caller may set KPRW_FLAG_DISABLED only (register drops the
 * rest, as the kernel's); the runtime sets the others */
#define KPRW_FLAG_GONE 1        /* its module went away (as KPROBE_FLAG_GONE) */
#define KPRW_FLAG_DISABLED 2    /* registered but not run (as KPROBE_FLAG_DISABLED) */
#define KPRW_FLAG_ON_FUNC_ENTRY 16  /* at a function's entry (as KPROBE_FLAG_ON_FUNC_ENTRY) */

#ifndef CONFIG_KPREWRITE_KPROBES_API
struct kprw_kprobe {
	/* where: symbol_name (+ offset), or addr; not both */
	const char *symbol_name;
	unsigned int offset;
	void *addr;
	kprw_pre_handler_t pre_handler;
	kprw_post_handler_t post_handler;
	kprw_fault_handler_t fault_handler;
	u32 flags;
	/* hits of this point that ran no handler: another handler was running
	 * on this CPU (the recursion guard) */
	unsigned long nmissed;
	/* private to the runtime */
	struct kprw_kprobe __rcu *next;
	void *point;
};
#endif

/*
 * Where: symbol_name + offset, or addr + offset, resolved as the kernel's
 * register_kprobe() does (kallsyms; SYM+0 of a function whose entry probe
 * is past an endbr64 means that point); kp->addr holds the address after
 * (even when a later check fails, as in the kernel), kp->flags
 * KPRW_FLAG_DISABLED as the caller set it and KPRW_FLAG_ON_FUNC_ENTRY,
 * kp->nmissed 0. Kprobes on one point run newest first.
 * 0; -EINVAL (NULL, symbol_name and addr both set or neither, kp registered
 * already or registered before by symbol_name (its addr is set now), not
 * code); -ENOENT (no such symbol; or no point was baked there: the only
 * answer the kernel's kprobes would not give); -EILSEQ (inside an
 * instruction); with a post_handler, -EOPNOTSUPP (the instruction reads or
 * writes the trap or interrupt flag: pushf, popf, cli, sti, iret) or the
 * error of unoptimizing the point.
 */
int register_kprw_kprobe(struct kprw_kprobe *kp);
/* Returns once no CPU runs kp's handler any more. A kp that is not
 * registered gets its addr cleared, as the kernel does. */
void unregister_kprw_kprobe(struct kprw_kprobe *kp);
/* All or nothing: on an error the ones registered are unregistered again. */
int register_kprw_kprobes(struct kprw_kprobe **kps, int num);
void unregister_kprw_kprobes(struct kprw_kprobe **kps, int num);
/* A disabled kprobe's handlers do not run, and what it asked of its point
 * (a post_handler: the int3 path) is given up while it is disabled. 0;
 * -EINVAL (not registered; enable: its module went). */
int enable_kprw_kprobe(struct kprw_kprobe *kp);
int disable_kprw_kprobe(struct kprw_kprobe *kp);

/*
 * Jprobes, as the kernel had them until 4.15: a kprobe on a function's
 * entry whose handler, entry, has the function's own signature (asmlinkage
 * and all) and is run instead of it, with its arguments, as if called
 * from its caller; it must end by calling kprw_jprobe_return(), which
 * never returns: the registers and the stack are put back, and the
 * function runs. The handler runs with preemption off, with the interrupt
 * flag as the function had it; a probe it hits is missed. A point with a
 * jprobe runs on the int3 path (unoptimized) while it is registered; one
 * jprobe a point, after its other kprobes. kp.fault_handler and
 * KPRW_FLAG_DISABLED work as for a kprobe.
 */
struct kprw_jprobe {
	struct kprw_kprobe kp;      /* kp.symbol_name or kp.addr: the function */
	void *entry;                /* the handler */
};
/* 0; -EINVAL (NULL, no entry, not a function's entry); -EEXIST (a jprobe
 * on the point already); else as register_kprw_kprobe(). */
int register_kprw_jprobe(struct kprw_jprobe *jp);
void unregister_kprw_jprobe(struct kprw_jprobe *jp);
int register_kprw_jprobes(struct kprw_jprobe **jps, int num);
void unregister_kprw_jprobes(struct kprw_jprobe **jps, int num);
int enable_kprw_jprobe(struct kprw_jprobe *jp);
int disable_kprw_jprobe(struct kprw_jprobe *jp);
/* The end of a jprobe's handler. */
void kprw_jprobe_return(void);

/*
 * Return probes, as the kernel's kretprobes: on a point baked as
 * SYM%return (the function's entry), the runtime takes the return address
 * over at each call it follows and puts its return trampoline there; when
 * the function returns, handler runs with the registers the function
 * returned with (regs_return_value(regs) is its return value, regs->ip the
 * real return address, regs->sp the stack it returns to), then the caller
 * goes on. A call is followed when an instance is free (maxactive of them,
 * taken at the entry, given back at the return or when the task is freed)
 * and no other handler runs on this CPU; otherwise nmissed counts it.
 */
struct kprw_kretprobe_holder;
#ifndef CONFIG_KPREWRITE_KPROBES_API
struct kprw_kretprobe_instance;
typedef int (*kprw_kretprobe_handler_t)(struct kprw_kretprobe_instance *ri, struct pt_regs *regs);

struct kprw_kretprobe {
	/* where: kp.symbol_name (kp.offset 0) or kp.addr, a point baked as
	 * SYM%return; kp.flags KPRW_FLAG_DISABLED as for a kprobe */
	struct kprw_kprobe kp;
	/* at the return; the return value is ignored */
	kprw_kretprobe_handler_t handler;
	/* at the entry (regs as a kprobe's); non-zero: this call is not
	 * followed (its handler does not run) */
	kprw_kretprobe_handler_t entry_handler;
	/* calls followed at once, on all CPUs; 0 or less: max(10, 2 * CPUs),
	 * written back at registration */
	int maxactive;
	/* calls not followed for want of a free instance (a hit while another
	 * handler runs counts in kp.nmissed, as in the kernel) */
	int nmissed;
	/* bytes of ri->data each instance carries from entry_handler to handler */
	size_t data_size;
	/* private to the runtime */
	struct kprw_kretprobe_holder *rph;
};

struct kprw_kretprobe_instance {
	/* private to the runtime: the task's instances, most recent first */
	struct kprw_kretprobe_instance *next;
	struct kprw_kretprobe_holder *rph;
	unsigned int busy;
	/* the real return address, and where it was on the stack */
	void *ret_addr;
	void *fp;
	char data[];
};
#endif

/* The kretprobe ri belongs to; NULL once it was unregistered (a call it
 * followed may return later). */
struct kprw_kretprobe *get_kprw_kretprobe(struct kprw_kretprobe_instance *ri);

/* In the kernel's order: -EINVAL (NULL, symbol_name and addr both set or
 * neither, not a function's entry, registered already); -ENOENT (no such
 * symbol); -E2BIG (data_size over KPRW_KRET_MAX_DATA, as
 * KRETPROBE_MAX_DATA_SIZE); then maxactive is set (0 or less: the
 * default); -ENOMEM; then as register_kprw_kprobe(), and -ENOENT where no
 * point was baked as SYM%return. handler and entry_handler may be NULL. */
#define KPRW_KRET_MAX_DATA 4096
int register_kprw_kretprobe(struct kprw_kretprobe *rp);
/* Returns once no CPU runs rp's handlers any more; calls still followed
 * return to their callers without running them, and the instances are
 * freed when the last one is back. (Disabled, a kretprobe still runs its
 * handler at the return of a call it followed, as the kernel's.) */
void unregister_kprw_kretprobe(struct kprw_kretprobe *rp);
int register_kprw_kretprobes(struct kprw_kretprobe **rps, int num);
void unregister_kprw_kretprobes(struct kprw_kretprobe **rps, int num);
#ifndef CONFIG_KPREWRITE_KPROBES_API   /* (else kprobes.h's inlines) */
int enable_kprw_kretprobe(struct kprw_kretprobe *rp);
int disable_kprw_kretprobe(struct kprw_kretprobe *rp);
#endif

struct task_struct;
/* Where a followed call returns to (kernel/kprewrite/trampoline.S) */
extern const u8 kprewrite_kret_trampoline[];
/* For the unwinders (asm/unwind.h, edited by integrate.sh): the real
 * return address where the trampoline's is at addr_p on tk's stack. */
unsigned long kprewrite_unwind_ret_addr(struct task_struct *tk, unsigned long *addr_p);
/* Called by the kernel when a task is freed (kernel/exit.c, added by
 * integrate.sh): the instances of the calls it never returned from are
 * given back. */
void kprewrite_flush_task(struct task_struct *tk);
struct pt_regs;
/* Called by the kernel's int3 trap (do_int3 in arch/x86/kernel/traps.c,
 * added by integrate.sh) before kprobes' handler and the die notifiers,
 * whose functions may be probed themselves: true when the int3 was one of
 * kprewrite's points (regs then resume at its out-of-line copy). */
bool kprewrite_int3_handler(struct pt_regs *regs);
/* Called by the kernel's page fault handler (arch/x86/mm/fault.c, added by
 * integrate.sh, where it asks kprobes) and the runtime's die notifier for
 * the other traps: true when the fault was in a kprobe's handler and its
 * fault_handler handled it. */
bool kprewrite_fault_handler(struct pt_regs *regs, int trapnr);

#endif
