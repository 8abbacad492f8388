// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: post_handlers (doc/kernel.md, Handlers).
 *
 * A post_handler runs after the probed instruction, so only the int3 path
 * can run it: a point with one runs unoptimized (as the kernel's kprobes
 * do). After the pre_handlers, the int3 path resumes at the out-of-line copy
 * single-stepping it (x86: the trap flag set, interrupts off); the trap
 * after that one instruction (kprw_post_stepped(), from arch-ISA.c's trap
 * hook) runs the post_handlers with regs->ip where the instruction leaves
 * the original code (the next instruction, or a branch's target), the flags
 * as the probed code had them, and resumes there.
 *
 * The kernel's kprobes put a breakpoint after the copy instead; the
 * rewriter's copies end with the jump back, so the single step is the way
 * here. An instruction that could see the step (x86: one that reads or
 * writes the trap or interrupt flag) is refused a post_handler.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/kprewrite.h>

#include "internal.h"

/* the point this CPU is single-stepping, and the flags it had */
struct kprw_step {
	struct kprw_point *pt;
	unsigned long flags;
};
static DEFINE_PER_CPU(struct kprw_step, kprw_step);

bool kprw_post_allowed(struct kprw_point *pt)
{
	if (pt->gap) {
		/* the probed instruction is ftrace's call, which is not
		 * stepped (kprw_post_arm()) */
		pt->step_len = pt->gap;
		return true;
	}
	return kprw_arch_step_allowed(pt->orig, pt->len, (const void *)pt->ool, &pt->step_len, &pt->ool_step_len);
}

/* pt's enabled post_handlers, regs->ip where the probed instruction left */
static void run_posts(struct kprw_point *pt, struct pt_regs *regs)
{
	struct kprw_kprobe *kp;

	__this_cpu_write(kprw_running, pt);
	for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		if (kp->post_handler && !(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED)) {
			kprw_cur_set(kp, kprw_ctx());
			kp->post_handler(kp, regs, 0);
		}
	kprw_cur_set(NULL, 0);
	__this_cpu_write(kprw_running, NULL);
}

/* From the int3 path, once the pre_handlers ran and regs->ip is the copy:
 * step one instruction if a post_handler waits. */
void kprw_post_arm(struct kprw_point *pt, struct pt_regs *regs)
{
	struct kprw_step *st = this_cpu_ptr(&kprw_step);
	struct kprw_kprobe *kp;
	bool any = false;

	if (!READ_ONCE(pt->ntrap))
		return;
	for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		any |= kp->post_handler && !(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED);
	if (!any)
		return;
	if (pt->gap) {
		/* past ftrace's call, the point is the call's (ftrace's callers
		 * have run): the post_handlers see regs->ip after it, as the
		 * kernel's kprobes on ftrace give it, and nothing is stepped */
		unsigned long ip = instruction_pointer(regs);

		instruction_pointer_set(regs, pt->addr);
		run_posts(pt, regs);
		instruction_pointer_set(regs, ip);
		return;
	}
	if (st->pt) {
		/* an int3 hit while this CPU steps another (from an NMI): no
		 * post_handlers for this one */
		kprw_count_miss(pt);
		return;
	}
	st->pt = pt;
	kprw_arch_step_begin(regs, &st->flags);
}

bool kprw_post_stepped(struct pt_regs *regs)
{
	struct kprw_step *st = this_cpu_ptr(&kprw_step);
	struct kprw_point *pt = st->pt;

	if (!pt || user_mode(regs))
		return false;
	st->pt = NULL;
	kprw_arch_step_end(regs, st->flags);
	/* fell through the copy's first instruction: the original's next */
	if (instruction_pointer(regs) == pt->ool + pt->ool_step_len)
		instruction_pointer_set(regs, pt->addr + pt->step_len);
	run_posts(pt, regs);
	return true;
}

/* the trap paths: not to be probed (kprewrite refuses the kernel's kprobe
 * blacklist, which integrate.sh keeps in a kernel without CONFIG_KPROBES) */
NOKPROBE_SYMBOL(run_posts);
NOKPROBE_SYMBOL(kprw_post_arm);
NOKPROBE_SYMBOL(kprw_post_stepped);
