// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: post_handlers (doc/kernel.md, Handlers).
 *
 * A post_handler runs after the probed instruction, so only the int3 path
 * can run it: a point with one runs unoptimized (as the kernel's kprobes
 * do). After the pre_handlers, the int3 path resumes at the out-of-line copy
 * with the trap flag set and interrupts off; the debug exception after that
 * one instruction (DIE_DEBUG) runs the post_handlers with regs->ip where the
 * instruction leaves the original code (the next instruction, or a branch's
 * target), the flags as the probed code had them, and resumes there.
 *
 * The kernel's kprobes put an int3 after the copy instead; the rewriter's
 * copies end with the jump back, so the trap flag is the way here. The
 * instructions that read or write the trap or interrupt flag (pushf, popf,
 * cli, sti, iret) would see ours: a post_handler is refused on them.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kdebug.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/kprewrite.h>
#include <asm/debugreg.h>
#include <asm/insn.h>
#include <asm/processor-flags.h>

#include "internal.h"

/* the point this CPU is single-stepping, and the flags it had */
struct kprw_step {
	struct kprw_point *pt;
	unsigned long flags;
};
static DEFINE_PER_CPU(struct kprw_step, kprw_step);

/* The length of the instruction in the n bytes at p, 0 if undecodable. */
static int insn_len_at(const void *p, int n)
{
	struct insn insn;

	return insn_decode(&insn, p, n, INSN_MODE_KERN) < 0 ? 0 : insn.length;
}

bool kprw_post_allowed(struct kprw_point *pt)
{
	unsigned int i = 0;
	u8 op;
	int n, m;

	/* legacy and REX prefixes, then the opcode */
	while (i < pt->len && (pt->orig[i] == 0x66 || pt->orig[i] == 0xf2 || pt->orig[i] == 0xf3 ||
			       (pt->orig[i] & 0xf0) == 0x40))
		i++;
	if (i >= pt->len)
		return false;
	op = pt->orig[i];
	if (op == 0x9c || op == 0x9d || op == 0xfa || op == 0xfb || op == 0xcf)
		return false;
	/* decoded here, not in the debug trap: the decoder is code '*' probes */
	n = insn_len_at(pt->orig, pt->len);
	m = insn_len_at((void *)pt->ool, MAX_INSN_SIZE);
	if (n <= 0 || m <= 0)
		return false;
	pt->step_len = n;
	pt->ool_step_len = m;
	return true;
}

/* From the int3 path, once the pre_handlers ran and regs->ip is the copy:
 * step one instruction if a post_handler waits. */
void kprw_post_arm(struct kprw_point *pt, struct pt_regs *regs)
{
	struct kprw_step *st = this_cpu_ptr(&kprw_step);
	struct kprw_kprobe *kp;
	bool any = false;

	if (!READ_ONCE(pt->npost))
		return;
	for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		any |= kp->post_handler && !(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED);
	if (!any)
		return;
	if (st->pt) {
		/* an int3 hit while this CPU steps another (from an NMI): no
		 * post_handlers for this one */
		kprw_count_miss(pt);
		return;
	}
	st->pt = pt;
	st->flags = regs->flags;
	regs->flags = (regs->flags | X86_EFLAGS_TF) & ~X86_EFLAGS_IF;
}

static int kprw_debug(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	struct pt_regs *regs = args->regs;
	unsigned long *dr6 = (unsigned long *)args->err;
	struct kprw_step *st = this_cpu_ptr(&kprw_step);
	struct kprw_point *pt = st->pt;
	struct kprw_kprobe *kp;

	if (val != DIE_DEBUG || !pt || user_mode(regs) || !(*dr6 & DR_STEP))
		return NOTIFY_DONE;
	*dr6 &= ~DR_STEP;
	st->pt = NULL;
	regs->flags = (regs->flags & ~(X86_EFLAGS_TF | X86_EFLAGS_IF)) |
		      (st->flags & (X86_EFLAGS_TF | X86_EFLAGS_IF));
	/* fell through the copy's first instruction: the original's next */
	if (regs->ip == pt->ool + pt->ool_step_len)
		regs->ip = pt->addr + pt->step_len;
	__this_cpu_write(kprw_running, pt);
	for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		if (kp->post_handler && !(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED))
			kp->post_handler(kp, regs, 0);
	__this_cpu_write(kprw_running, NULL);
	return NOTIFY_STOP;
}

/* the trap paths: not to be probed (kprewrite refuses the kernel's kprobe
 * blacklist, which integrate.sh keeps in a kernel without CONFIG_KPROBES) */
NOKPROBE_SYMBOL(kprw_post_arm);
NOKPROBE_SYMBOL(kprw_debug);

static struct notifier_block kprw_debug_nb = {
	.notifier_call = kprw_debug,
	.priority = 0x7fffffff,         /* before debuggers' notifiers */
};

int kprw_post_init(void)
{
	return register_die_notifier(&kprw_debug_nb);
}
