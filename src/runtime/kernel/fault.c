// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: a kprobe's fault_handler, as the kprobes
 * documentation of its time describes it (the kernel dropped it in 5.14;
 * here a field of struct kprw_kprobe, and of struct kprobe where the
 * runtime provides the kernel's API: integrate.sh adds it).
 *
 * When a pre_handler, a post_handler or a jprobe's handler faults, the
 * kernel's fault path asks kprewrite_fault_handler() first, as it asked
 * kprobes: the page fault handler (arch/x86/mm/fault.c, where it calls
 * kprobe_page_fault(), before any exception-table fixup: integrate.sh adds
 * the call) and the die notifier chain for the other traps (x86: a general
 * protection fault after the fixups, the other traps before them;
 * arch-x86.c). The handler's kprobe has its nmissed counted (as the
 * kernel's kprobe_fault_handler() did) and its fault_handler is called with
 * the trap's number: 1, the fault is handled and the code goes on at
 * regs->ip as the fault_handler left it; 0, the fault takes its course (an
 * exception-table fixup, or an oops).
 *
 * Which kprobe's handler runs on a CPU is noted with the context it runs
 * in (kprw_cur): a fault in an interrupt that came while the handler ran is
 * not the handler's.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/kprewrite.h>

#include "internal.h"

DEFINE_PER_CPU(struct kprw_cur, kprw_cur);

bool kprewrite_fault_handler(struct pt_regs *regs, int trapnr)
{
	struct kprw_cur *c;
	struct kprw_kprobe *kp;
	bool handled;

	if (user_mode(regs) || preemptible())
		return false;
	c = this_cpu_ptr(&kprw_cur);
	kp = c->kp;
	if (!kp || c->ctx != kprw_ctx())
		return false;
	kp->nmissed++;
	if (!kp->fault_handler)
		return false;
	/* (a fault in the fault_handler is not its kprobe's again) */
	c->kp = NULL;
	handled = kp->fault_handler(kp, regs, trapnr);
	c->kp = kp;
	return handled;
}
NOKPROBE_SYMBOL(kprewrite_fault_handler);
