// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: return probes (include/linux/kprewrite.h,
 * doc/kernel.md "Return probes").
 *
 * A kretprobe is a kprobe on a point baked as SYM%return (the function's
 * entry: its detour is a kprobe's) whose pre_handler, kprw_kret_entry(),
 * takes an instance, records the return address (x86: at pt_regs.sp) and
 * puts the return trampoline (trampoline-ISA.S) there. The function returns into the
 * trampoline, which builds a struct pt_regs and calls kprw_kret_return():
 * that finds the call's instances on the task, runs their handlers with
 * regs->ip the real return address, gives them back and answers where to
 * return to. The trampoline puts that into the very slot the function
 * returned from, so the stack the caller sees is as deep as before.
 *
 * The task's instances are a stack (most recent first) in task_struct
 * (kprw_kret_instances, added by integrate.sh). Only the task itself and
 * what interrupts it push and pop there, and an interrupt's pushes are
 * popped before it returns (its functions return before it does), so plain
 * stores keep the list whole. Instances come from a per-kretprobe array
 * taken with cmpxchg: no allocation and no lock in a probe's path, so the
 * entry and the return may run in any context, NMI included.
 *
 * A kretprobe unregistered while calls it followed have not returned yet
 * leaves its holder (the instances) behind: rph->rp becomes NULL, so the
 * handler no longer runs, and the holder is freed once every instance is
 * back (the last return queues the work that frees it), as the kernel's
 * kretprobes free theirs.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/kprewrite.h>

#include "internal.h"

struct kprw_kretprobe_holder {
	struct kprw_kretprobe *rp;      /* NULL once unregistered */
	struct list_head retired;       /* on retired_holders once unregistered */
	int n;                          /* instances */
	size_t stride;                  /* bytes per instance, data included */
	char inst[];                    /* n instances of stride bytes */
};

/* holders of unregistered kretprobes with instances still out; under kprw_lock */
static LIST_HEAD(retired_holders);
/* holders allocated and not freed yet */
static atomic_t holders_live = ATOMIC_INIT(0);

static struct kprw_kretprobe_instance *inst(struct kprw_kretprobe_holder *h, int i)
{
	return (struct kprw_kretprobe_instance *)(h->inst + (size_t)i * h->stride);
}

struct kprw_kretprobe *get_kprw_kretprobe(struct kprw_kretprobe_instance *ri)
{
	return ri ? READ_ONCE(KPRW_RI_HOLDER(ri)->rp) : NULL;
}
EXPORT_SYMBOL_GPL(get_kprw_kretprobe);

/* A free instance of h, or NULL. The search starts at this CPU's share of
 * the array, so CPUs rarely race for the same one. */
static struct kprw_kretprobe_instance *inst_take(struct kprw_kretprobe_holder *h)
{
	int i, start = (int)(raw_smp_processor_id() % (unsigned int)h->n);

	for (i = 0; i < h->n; i++) {
		struct kprw_kretprobe_instance *ri = inst(h, (start + i) % h->n);

		if (!READ_ONCE(KPRW_RI_BUSY(ri)) && cmpxchg(&KPRW_RI_BUSY(ri), 0, 1) == 0)
			return ri;
	}
	return NULL;
}

static void inst_give(struct kprw_kretprobe_instance *ri)
{
	smp_store_release(&KPRW_RI_BUSY(ri), 0);
}

static bool holder_idle(struct kprw_kretprobe_holder *h)
{
	int i;

	for (i = 0; i < h->n; i++)
		if (READ_ONCE(KPRW_RI_BUSY(inst(h, i))))
			return false;
	return true;
}

int kprw_kret_free_instances(const struct kprw_kretprobe *rp)
{
	struct kprw_kretprobe_holder *h = KPRW_RP_HOLDER(rp);
	int i, n = 0;

	for (i = 0; h && i < h->n; i++)
		n += !READ_ONCE(KPRW_RI_BUSY(inst(h, i)));
	return n;
}

int kprw_kret_holders(void)
{
	return atomic_read(&holders_live);
}

/* Free the retired holders whose instances are all back (not under
 * kprw_lock), a grace period after they left the list: the return paths,
 * which run with preemption off, are done with them. */
static void reap_holders(void)
{
	struct kprw_kretprobe_holder *h, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&kprw_lock);
	list_for_each_entry_safe(h, tmp, &retired_holders, retired)
		if (holder_idle(h))
			list_move(&h->retired, &dead);
	mutex_unlock(&kprw_lock);
	if (list_empty(&dead))
		return;
	synchronize_rcu();
	list_for_each_entry_safe(h, tmp, &dead, retired) {
		kfree(h);
		atomic_dec(&holders_live);
	}
}

/* A retired holder's last instance may have come back: from a return in
 * any context (NMI included), an irq_work starts the work that frees it,
 * as the kernel frees a kretprobe's instances when the last returns. */
static void reap_work_fn(struct work_struct *w)
{
	reap_holders();
}
static DECLARE_WORK(reap_work, reap_work_fn);

static void reap_irq_fn(struct irq_work *w)
{
	schedule_work(&reap_work);
}
static DEFINE_IRQ_WORK(reap_irq, reap_irq_fn);

static void miss(struct kprw_kretprobe *rp)
{
	struct kprw_point *pt = KPRW_KP_POINT(&rp->kp);

	rp->nmissed++;
	if (pt && pt != &kprw_gone_point)
		kprw_count_miss(pt);
}

/* The kretprobe's kp->pre_handler, at the function's entry (x86: regs->sp
 * holds the return address). */
int kprw_kret_entry(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	struct kprw_kretprobe *rp = container_of(kp, struct kprw_kretprobe, kp);
	struct kprw_kretprobe_instance *ri = inst_take(KPRW_RP_HOLDER(rp));
	unsigned long *slot = kprw_arch_ret_slot(regs);

	if (!ri) {
		miss(rp);
		return 0;
	}
	KPRW_RI_FP(ri) = slot;
	KPRW_RI_RET(ri) = (void *)*slot;
	if (rp->entry_handler && rp->entry_handler(ri, regs)) {
		inst_give(ri);
		return 0;
	}
	/* on the task first, then the return address: an interrupt in
	 * between pushes and pops above ri */
	KPRW_RI_NEXT(ri) = current->kprw_kret_instances;
	barrier();
	WRITE_ONCE(current->kprw_kret_instances, ri);
	barrier();
	*slot = (unsigned long)kprewrite_kret_trampoline;
	return 0;
}

/*
 * Called by the trampoline with the registers the function returned with
 * (regs->sp the stack it returned to: its return address was just below).
 * Runs the handlers of the call's instances (several kretprobes on one
 * function each took the return address over in turn: the first one's
 * holds the real one) and answers the real return address.
 */
__visible notrace unsigned long kprw_kret_return(struct pt_regs *regs)
{
	unsigned long *slot = kprw_arch_ret_slot_returned(regs);
	struct kprw_kretprobe_instance *ri, *first, *end;
	unsigned long ret = 0;
	bool retired = false;

	preempt_disable_notrace();
	/* instances of calls below this one never returned (their stack was
	 * abandoned): give them back */
	while ((ri = READ_ONCE(current->kprw_kret_instances)) && (unsigned long *)KPRW_RI_FP(ri) < slot) {
		WRITE_ONCE(current->kprw_kret_instances, KPRW_RI_NEXT(ri));
		retired |= !READ_ONCE(KPRW_RI_HOLDER(ri)->rp);
		inst_give(ri);
	}
	first = ri;
	for (end = first; end && KPRW_RI_FP(end) == slot; end = KPRW_RI_NEXT(end))
		if (KPRW_RI_RET(end) != kprewrite_kret_trampoline)
			ret = (unsigned long)KPRW_RI_RET(end);
	/* a return to the trampoline that no instance explains: there is no
	 * telling where to go, as in the kernel's own kretprobes */
	BUG_ON(!ret);
	instruction_pointer_set(regs, ret);
	if (__this_cpu_read(kprw_running)) {
		for (ri = first; ri != end; ri = KPRW_RI_NEXT(ri))
			if (READ_ONCE(KPRW_RI_HOLDER(ri)->rp))
				miss(KPRW_RI_HOLDER(ri)->rp);
	} else {
		struct kprw_kretprobe *rp0 = READ_ONCE(KPRW_RI_HOLDER(first)->rp);
		/* (it only marks this CPU busy: probes the handlers hit are missed) */
		struct kprw_point *busy = rp0 ? KPRW_KP_POINT(&rp0->kp) : NULL;

		__this_cpu_write(kprw_running, busy);
		/* (disabled since the entry, it runs still: as the kernel's
		 * kretprobe_rethook_handler(), which does not look) */
		for (ri = first; ri != end; ri = KPRW_RI_NEXT(ri)) {
			struct kprw_kretprobe *rp = READ_ONCE(KPRW_RI_HOLDER(ri)->rp);

			if (rp && rp->handler)
				rp->handler(ri, regs);
		}
		__this_cpu_write(kprw_running, NULL);
	}
	WRITE_ONCE(current->kprw_kret_instances, end);
	for (ri = first; ri != end; ) {
		struct kprw_kretprobe_instance *next = KPRW_RI_NEXT(ri);

		retired |= !READ_ONCE(KPRW_RI_HOLDER(ri)->rp);
		inst_give(ri);
		ri = next;
	}
	if (retired)
		irq_work_queue(&reap_irq);
	preempt_enable_notrace();
	return ret;
}

/* the return path, and the entry handler (which runs under the recursion
 * guard, as the kernel's own kretprobe_dispatcher is blacklisted) */
NOKPROBE_SYMBOL(kprw_kret_return);
NOKPROBE_SYMBOL(kprw_kret_entry);

/*
 * For the unwinders (arch/x86/include/asm/unwind.h, edited by integrate.sh),
 * where they meet the trampoline's address as a return address at addr_p:
 * the real one, from tk's followed calls (as the kernel's kretprobes answer
 * theirs). The trampoline's address when none is there.
 */
notrace unsigned long kprewrite_unwind_ret_addr(struct task_struct *tk, unsigned long *addr_p)
{
	struct kprw_kretprobe_instance *ri;

	for (ri = READ_ONCE(tk->kprw_kret_instances); ri; ri = READ_ONCE(KPRW_RI_NEXT(ri)))
		if (KPRW_RI_FP(ri) == addr_p && KPRW_RI_RET(ri) != kprewrite_kret_trampoline)
			return (unsigned long)KPRW_RI_RET(ri);
	return (unsigned long)kprewrite_kret_trampoline;
}

void kprewrite_flush_task(struct task_struct *tk)
{
	struct kprw_kretprobe_instance *ri = tk->kprw_kret_instances, *next;
	bool retired = false;

	tk->kprw_kret_instances = NULL;
	for (; ri; ri = next) {
		next = KPRW_RI_NEXT(ri);
		retired |= !READ_ONCE(KPRW_RI_HOLDER(ri)->rp);
		inst_give(ri);
	}
	if (retired)
		irq_work_queue(&reap_irq);
}

/* rp's instances: maxactive of them, each with data_size bytes of data */
static struct kprw_kretprobe_holder *holder_alloc(struct kprw_kretprobe *rp)
{
	size_t stride = ALIGN(sizeof(struct kprw_kretprobe_instance) + rp->data_size, sizeof(long));
	struct kprw_kretprobe_holder *h = kzalloc(struct_size(h, inst, (size_t)rp->maxactive * stride), GFP_KERNEL);
	int i;

	if (!h)
		return NULL;
	atomic_inc(&holders_live);
	h->n = rp->maxactive;
	h->stride = stride;
	h->rp = rp;
	for (i = 0; i < h->n; i++)
		KPRW_RI_HOLDER(inst(h, i)) = h;
	return h;
}

static void holder_free(struct kprw_kretprobe_holder *h)
{
	kfree(h);
	atomic_dec(&holders_live);
}

/* In the order of the kernel's register_kretprobe(), and its answers. */
int register_kprw_kretprobe(struct kprw_kretprobe *rp)
{
	struct kprw_kretprobe_holder *h;
	struct kprw_point *pt;
	unsigned long addr;
	bool entry, again;
	int rc;

	if (!rp)
		return -EINVAL;     /* (the kernel's oopses) */
	rc = kprw_resolve(&rp->kp, &addr, &entry);     /* kprobe_on_func_entry() */
	if (rc || !entry)
		return rc ? rc : -EINVAL;
	mutex_lock(&kprw_lock);
	again = rp->kp.addr && KPRW_KP_POINT(&rp->kp);
	mutex_unlock(&kprw_lock);
	if (again)
		return -EINVAL;
	if (rp->data_size > KPRW_KRET_MAX_DATA)
		return -E2BIG;
	rp->kp.pre_handler = kprw_kret_entry;
	rp->kp.post_handler = NULL;
	if (rp->maxactive <= 0)
		rp->maxactive = max(10, 2 * (int)num_possible_cpus());
	reap_holders();
	h = holder_alloc(rp);
	if (!h)
		return -ENOMEM;
	rp->nmissed = 0;
	mutex_lock(&kprw_lock);
	rc = kprw_kprobe_place(&rp->kp, &pt);
	if (!rc && pt->kind != KPRW_KIND_R)
		rc = -ENOENT;       /* not baked as SYM%return */
	if (!rc) {
		KPRW_RP_HOLDER(rp) = h;
		kprw_attach(&rp->kp, pt);
	}
	mutex_unlock(&kprw_lock);
	if (rc)
		holder_free(h);
	return rc;
}
EXPORT_SYMBOL_GPL(register_kprw_kretprobe);

/* Under kprw_lock: rp leaves its point, its holder onto `leaving` (not
 * registered: its kp.addr is cleared, as the kernel does; its module went:
 * kprw_kret_gone() retired the holder already). */
static void kret_leave(struct kprw_kretprobe *rp, struct list_head *leaving)
{
	struct kprw_kretprobe_holder *h = KPRW_RP_HOLDER(rp);

	if (!KPRW_KP_POINT(&rp->kp)) {
		rp->kp.addr = NULL;
		return;
	}
	kprw_detach(&rp->kp);
	if (!h)
		return;
	/* no return runs a handler of rp from now on; no entry takes an
	 * instance once a grace period has passed (one under way may yet:
	 * rp keeps its holder until then) */
	WRITE_ONCE(h->rp, NULL);
	list_add(&h->retired, leaving);
}

void unregister_kprw_kretprobes(struct kprw_kretprobe **rps, int num)
{
	LIST_HEAD(leaving);
	int i;

	if (!rps || num <= 0)
		return;
	mutex_lock(&kprw_lock);
	for (i = 0; i < num; i++)
		if (rps[i])
			kret_leave(rps[i], &leaving);
	mutex_unlock(&kprw_lock);
	/* (entries and returns run with preemption off) */
	synchronize_rcu();
	mutex_lock(&kprw_lock);
	for (i = 0; i < num; i++) {
		struct kprw_kretprobe_holder *h = rps[i] ? KPRW_RP_HOLDER(rps[i]) : NULL;

		/* (unless registered again meanwhile: a new holder) */
		if (h && !READ_ONCE(h->rp))
			KPRW_RP_HOLDER(rps[i]) = NULL;
	}
	list_splice(&leaving, &retired_holders);
	mutex_unlock(&kprw_lock);
	/* freed now if every instance is back, else when the last one is */
	reap_holders();
}
EXPORT_SYMBOL_GPL(unregister_kprw_kretprobes);

void unregister_kprw_kretprobe(struct kprw_kretprobe *rp)
{
	unregister_kprw_kretprobes(&rp, 1);
}
EXPORT_SYMBOL_GPL(unregister_kprw_kretprobe);

void kprw_kret_gone(struct kprw_kprobe *kp)
{
	struct kprw_kretprobe *rp = container_of(kp, struct kprw_kretprobe, kp);
	struct kprw_kretprobe_holder *h = KPRW_RP_HOLDER(rp);

	if (!h)
		return;
	/* its point left the probe paths a grace period ago: no entry takes
	 * an instance any more; a return still under way runs no handler */
	WRITE_ONCE(h->rp, NULL);
	KPRW_RP_HOLDER(rp) = NULL;
	list_add(&h->retired, &retired_holders);
	schedule_work(&reap_work);
}

int register_kprw_kretprobes(struct kprw_kretprobe **rps, int num)
{
	int i, rc;

	if (!rps || num <= 0)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		rc = register_kprw_kretprobe(rps[i]);
		if (rc < 0) {
			if (i > 0)
				unregister_kprw_kretprobes(rps, i);
			return rc;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(register_kprw_kretprobes);

#ifndef CONFIG_KPREWRITE_KPROBES_API   /* (else kprobes.h's inlines) */
int enable_kprw_kretprobe(struct kprw_kretprobe *rp)
{
	return enable_kprw_kprobe(&rp->kp);
}
EXPORT_SYMBOL_GPL(enable_kprw_kretprobe);

int disable_kprw_kretprobe(struct kprw_kretprobe *rp)
{
	return disable_kprw_kprobe(&rp->kp);
}
EXPORT_SYMBOL_GPL(disable_kprw_kretprobe);
#endif
