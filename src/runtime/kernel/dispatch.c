// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: the probe paths (see doc/kernel.md).
 *
 *   - kprewrite_dispatch(): called by every detour (a direct call, with a
 *     full struct pt_regs built by the detour) counts the hit per CPU and
 *     runs the registered pre_handlers;
 *   - kprewrite_int3_handler(): do_int3() calls it first (integrate.sh), for
 *     int3 probes and optimized ones while unoptimized or being patched;
 *     it runs the same, then resumes at the out-of-line copy.
 *
 * The functions the probed code reaches are noinstr: the rewriter refuses to
 * probe .noinstr.text, and so does the kernel's kprobes.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/rculist.h>
#include <linux/kprewrite.h>

#include "internal.h"

DEFINE_PER_CPU(struct kprw_point *, kprw_running);   /* the recursion guard */

/* What a hit's pre_handlers did */
enum hit {
	HIT_NONE,       /* ran none: the point disabled, or missed (recursion) */
	HIT_RAN,        /* counted, ran the handlers (if any) */
	HIT_REDIRECT,   /* on the int3 path, a pre_handler returned non-zero:
			   it set regs->ip to where the code is to go */
};

/* A hit while another handler ran on this CPU: counted in the nmissed of
 * every kprobe on the point (a kretprobe's kp's too), if one of them is
 * enabled (else the kernel's point would be disarmed), as the kernel's
 * kprobes_inc_nmissed_count() does. */
static __always_inline void missed(struct kprw_point *pt)
{
	struct kprw_kprobe *kp;
	bool armed = false;

	this_cpu_inc(pt->count[1]);
	for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		armed |= !(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED);
	for (kp = rcu_dereference_raw(pt->handlers); armed && kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		kp->nmissed++;
}

/* The hit's handlers, newest first (the kernel's order). On the int3 path
 * (trap), as the kernel's aggr_pre_handler(), the first pre_handler that
 * returns non-zero is the last to run, and the probed instruction is not
 * stepped; on a jump the return values are ignored, as optimized_callback()
 * ignores them.
 * Inlined into the noinstr probe paths: a function of its own would be a
 * function '*' probes, its detour calling back here without end. For the
 * same reason preemption comes back without a reschedule: that would call
 * preempt_schedule_notrace's thunk, which a probe may hold (a reschedule
 * due waits for the next preemption point). */
static __always_inline enum hit run_handlers(struct kprw_point *pt, struct pt_regs *regs, bool trap)
{
	struct kprw_kprobe *kp;
	enum hit hit = HIT_NONE;

	if (READ_ONCE(pt->code) == CODE_DISABLED)
		return HIT_NONE;        /* was in the detour when it was disabled */
	preempt_disable_notrace();
	if (unlikely(__this_cpu_read(kprw_running))) {
		missed(pt);
		goto out;
	}
	this_cpu_inc(pt->count[0]);
	hit = HIT_RAN;
	kp = rcu_dereference_raw(pt->handlers);
	if (!kp)
		goto out;
	__this_cpu_write(kprw_running, pt);
	for (; kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp))) {
		if ((READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED) || !kp->pre_handler ||
		    (!trap && kprw_is_jprobe(kp)))     /* (a jump cannot send the code to it) */
			continue;
		kprw_cur_set(kp, kprw_ctx());
		if (kp->pre_handler(kp, regs) && trap) {
			hit = HIT_REDIRECT;
			break;
		}
	}
	/* a jprobe's handler runs next, in the point's stead: this CPU is
	 * still the point's until kprw_jprobe_return() (jprobe.c) */
	if (!kprw_jprobe_running()) {
		kprw_cur_set(NULL, 0);
		__this_cpu_write(kprw_running, NULL);
	}
out:
	preempt_enable_no_resched_notrace();
	return hit;
}

/*
 * Every detour calls this directly, with regs a struct pt_regs holding all
 * general registers and the flags; the rest is filled here. The detour
 * pops every register back afterwards, so a handler's writes take effect.
 */
noinstr void KPRW_KDISPATCH(struct kprw_state *st, struct pt_regs *regs)   /* kprewrite_dispatch */
{
	struct kprw_point *pt = READ_ONCE(st->rt);

	if (!pt)
		return;                 /* before the runtime started: not counted */
	instrumentation_begin();
	kprw_arch_detour_regs(regs, kprw_point_api(pt));
	run_handlers(pt, regs, false);
	instrumentation_end();
}
/* for the detours baked into modules (not GPL-only: any module's code may
 * be probed; registering handlers is) */
EXPORT_SYMBOL(KPRW_KDISPATCH);

/* Under kprw_lock, or from a probe path (preemption or interrupts off:
 * a set is freed a grace period after it leaves the list). A search of its
 * own, noinstr: lib's bsearch() and a comparison callback are functions
 * '*' probes, and an int3 probe on one would trap here again. */
noinstr struct kprw_point *kprw_point_at(unsigned long addr)
{
	struct kprw_set *s;

	list_for_each_entry_rcu(s, &kprw_sets, list, true) {
		u32 lo = 0, hi = s->npoints;

		while (lo < hi) {
			u32 mid = lo + (hi - lo) / 2;
			unsigned long a = s->points[mid].addr;

			if (a == addr)
				return &s->points[mid];
			if (a < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return NULL;
}

/* A disabled point where the kernel's own kprobes have an int3 of theirs
 * (kprw_apply() never patches a site while one is there). */
static __always_inline bool kernel_kprobe_owns(struct kprw_point *pt)
{
#ifdef CONFIG_KPROBES
	return READ_ONCE(pt->code) == CODE_DISABLED && get_kprobe((void *)pt->addr);
#else
	return false;
#endif
}

/* The int3 path: int3 probes, and optimized ones while unoptimized or
 * being patched. Resumes at the out-of-line copy. do_int3() calls it
 * first (integrate.sh): on the die notifier chain it would come after
 * notifiers such as the hardware breakpoints', which '*' probes, and an
 * int3 in one of them would trap again before reaching it, without end. */
noinstr bool kprewrite_int3_handler(struct pt_regs *regs)
{
	struct kprw_point *pt;
	bool ours = false;

	if (user_mode(regs))
		return false;
	instrumentation_begin();
	if (instruction_pointer(regs) == (unsigned long)kprw_jprobe_return_trap) {
		ours = kprw_jprobe_longjmp(regs);
		goto out;
	}
	pt = kprw_point_at(kprw_arch_bp_addr(regs));
	/* ours while it is not a jmp (a jmp's int3 would be someone else's),
	 * and, disabled, while no kprobe of the kernel's is there: a disabled
	 * point's original bytes are back, and the kernel's kprobes may put
	 * their own int3 on them (their hits went to the copy, uncounted) */
	if (pt && READ_ONCE(pt->code) != CODE_OPTIMIZED && !kernel_kprobe_owns(pt)) {
		enum hit hit;

		instruction_pointer_set(regs, kprw_arch_pre_ip(kprw_point_api(pt)));
		hit = run_handlers(pt, regs, true);
		/* (redirected: regs->ip is where a handler sent it, as the
		 * kernel's kprobe_int3_handler() leaves it) */
		if (hit != HIT_REDIRECT) {
			instruction_pointer_set(regs, pt->ool);
			if (hit == HIT_RAN)     /* a missed hit (recursion) steps no post_handler */
				kprw_post_arm(pt, regs);
		}
		ours = true;
	}
out:
	instrumentation_end();
	return ours;
}

/* The traps besides int3 (the single step's), hooked once (the kernel's
 * points or a module's, whichever come first): nonzero when they cannot
 * be, and int3 probes then stay disarmed. */
int kprw_traps_hooked(void)
{
	static int rc = 1;

	if (rc == 1) {
		rc = kprw_arch_traps_init();
		if (rc)
			pr_err("cannot hook int3 or the debug trap: int3 probes stay disarmed\n");
	}
	return rc;
}

void kprw_count_miss(const struct kprw_point *pt)
{
	this_cpu_inc(pt->count[1]);
}
NOKPROBE_SYMBOL(kprw_count_miss);
