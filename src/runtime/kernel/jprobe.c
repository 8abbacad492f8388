// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: jprobes, as the kprobes documentation of their
 * time describes them (the kernel dropped them in 4.15; here under kprw_
 * names: include/linux/kprewrite.h).
 *
 * A jprobe is a kprobe on a function's entry whose handler has the
 * function's own signature: when the point is hit, kprw_jprobe_setjmp()
 * (its pre_handler, on the int3 path) saves the registers and the top of
 * the stack and sends the code to the handler, which so runs as if called
 * instead of the function, with its arguments. It ends by calling
 * kprw_jprobe_return(), whose int3 (trampoline-ISA.S) comes to
 * kprw_jprobe_longjmp(): the registers and the stack are put back, and the
 * probed function runs (its first instruction out of line, as after any
 * int3 hit). Meanwhile the CPU counts as running the point's handlers
 * (probes hit in the handler are missed) with preemption off.
 *
 * The handler can only be sent to from the int3 path: a point with a jprobe
 * runs unoptimized (as the kernel's jprobes were never optimized). One
 * jprobe a point; it runs after the point's other kprobes.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/kprewrite.h>

#include "internal.h"

/* the stack saved at a jprobe's hit: the callee owns its arguments there,
 * and a handler compiled for the same signature may change them (the
 * kernel's x86 jprobes saved 64 bytes too) */
#define KPRW_JPROBE_STACK 64

/* the point whose jprobe's handler runs on this CPU */
DEFINE_PER_CPU(struct kprw_point *, kprw_jprobe_pt);
/* and what its return puts back */
struct kprw_jctx {
	struct pt_regs regs;
	unsigned long len;
	u8 stack[KPRW_JPROBE_STACK];
};
static DEFINE_PER_CPU(struct kprw_jctx, kprw_jctx);

/* How many bytes above sp are the stack's: up to the top of the task's
 * stack when sp is on it (else the whole save, which an interrupt stack
 * has above any function). */
static unsigned long stack_above(unsigned long sp)
{
	unsigned long base = (unsigned long)task_stack_page(current), top = base + THREAD_SIZE;

	if (sp >= base && sp < top)
		return min_t(unsigned long, KPRW_JPROBE_STACK, top - sp);
	return KPRW_JPROBE_STACK;
}

/* A jprobe's pre_handler (what tells its kp from others): from the int3
 * path only (dispatch.c does not run it on a jump). */
int kprw_jprobe_setjmp(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	struct kprw_jprobe *jp = container_of(kp, struct kprw_jprobe, kp);
	struct kprw_jctx *c = this_cpu_ptr(&kprw_jctx);
	unsigned long sp = kernel_stack_pointer(regs);

	c->regs = *regs;
	c->len = stack_above(sp);
	if (copy_from_kernel_nofault(c->stack, (void *)sp, c->len))
		c->len = 0;
	__this_cpu_write(kprw_jprobe_pt, KPRW_KP_POINT(kp));
	/* until kprw_jprobe_return()'s trap: this CPU's state is the handler's */
	preempt_disable_notrace();
	kprw_cur_set(kp, kprw_arch_trapped_ctx(kprw_ctx()));
	instruction_pointer_set(regs, (unsigned long)jp->entry);
	return 1;
}

/* The int3 of kprw_jprobe_return(): the registers and the stack as the
 * probe found them, then the probed function, from its first instruction
 * out of line (post_handlers of the point's kprobes after it). A call
 * outside a jprobe's handler returns. */
bool kprw_jprobe_longjmp(struct pt_regs *regs)
{
	struct kprw_jctx *c = this_cpu_ptr(&kprw_jctx);
	struct kprw_point *pt = __this_cpu_read(kprw_jprobe_pt);

	if (!pt)
		return true;
	memcpy((void *)kernel_stack_pointer(&c->regs), c->stack, c->len);
	*regs = c->regs;
	instruction_pointer_set(regs, pt->ool);
	__this_cpu_write(kprw_jprobe_pt, NULL);
	kprw_cur_set(NULL, 0);
	__this_cpu_write(kprw_running, NULL);
	kprw_post_arm(pt, regs);
	preempt_enable_no_resched_notrace();
	return true;
}

/* the trap paths: not to be probed */
NOKPROBE_SYMBOL(kprw_jprobe_setjmp);
NOKPROBE_SYMBOL(kprw_jprobe_longjmp);
NOKPROBE_SYMBOL(kprw_jprobe_return);
EXPORT_SYMBOL_GPL(kprw_jprobe_return);

/* As the kernel's register_jprobe() was: a kprobe on a function's entry
 * (-EINVAL elsewhere) whose pre_handler is kprw_jprobe_setjmp(); one a
 * point (-EEXIST). */
int register_kprw_jprobe(struct kprw_jprobe *jp)
{
	unsigned long addr;
	bool entry;
	int rc;

	if (!jp || !jp->entry)
		return -EINVAL;
	rc = kprw_resolve(&jp->kp, &addr, &entry);
	if (rc || !entry)
		return rc ? rc : -EINVAL;
	jp->kp.pre_handler = kprw_jprobe_setjmp;
	jp->kp.post_handler = NULL;
	return kprw_register(&jp->kp);
}
EXPORT_SYMBOL_GPL(register_kprw_jprobe);

void unregister_kprw_jprobe(struct kprw_jprobe *jp)
{
	if (jp)
		unregister_kprw_kprobe(&jp->kp);
}
EXPORT_SYMBOL_GPL(unregister_kprw_jprobe);

int register_kprw_jprobes(struct kprw_jprobe **jps, int num)
{
	int i, rc;

	if (!jps || num <= 0)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		rc = register_kprw_jprobe(jps[i]);
		if (rc < 0) {
			if (i > 0)
				unregister_kprw_jprobes(jps, i);
			return rc;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(register_kprw_jprobes);

void unregister_kprw_jprobes(struct kprw_jprobe **jps, int num)
{
	int i;

	for (i = 0; jps && i < num; i++)
		unregister_kprw_jprobe(jps[i]);
}
EXPORT_SYMBOL_GPL(unregister_kprw_jprobes);

int enable_kprw_jprobe(struct kprw_jprobe *jp)
{
	return jp ? enable_kprw_kprobe(&jp->kp) : -EINVAL;
}
EXPORT_SYMBOL_GPL(enable_kprw_jprobe);

int disable_kprw_jprobe(struct kprw_jprobe *jp)
{
	return jp ? disable_kprw_kprobe(&jp->kp) : -EINVAL;
}
EXPORT_SYMBOL_GPL(disable_kprw_jprobe);
