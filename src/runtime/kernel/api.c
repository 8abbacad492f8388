// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: register_kprw_kprobe() & co.
 * (include/linux/kprewrite.h): handlers attached to the points baked into
 * the kernel and its modules. Return probes are kretprobe.c's.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/kprewrite.h>

#include "internal.h"

/* "MOD:SYM" names a module's symbol, as for the kernel's kprobes. As the
 * kernel's arch_adjust_kprobe_addr() does, SYM+0 (or the address) of a
 * function whose entry probe kprewrite put past its first bytes (x86:
 * endbr64, SYM+0x4) names that point. */
struct kprw_point *kprw_find_point(const char *sym, unsigned int offset, unsigned long addr)
{
	const char *colon = sym ? strchr(sym, ':') : NULL;
	struct kprw_set *s;
	struct kprw_point *pt;

	if (!sym) {
		unsigned int gap;

		pt = kprw_point_at(addr);
		if (pt)
			return pt;
		gap = kprw_arch_entry_gap(addr);
		return gap ? kprw_point_at(addr + gap) : NULL;
	}
	for_each_kprw_point(s, pt) {
		if (colon && (!s->mod || strlen(module_name(s->mod)) != colon - sym ||
			      strncmp(module_name(s->mod), sym, colon - sym)))
			continue;
		if (strcmp(pt->name, colon ? colon + 1 : sym))
			continue;
		if (pt->offset == offset ||
		    (offset == 0 && pt->offset && pt->offset == kprw_arch_entry_gap(pt->addr - pt->offset)))
			return pt;
	}
	return NULL;
}

/* Under kprw_lock: pt's module goes; its kprobes stay registered, gone
 * (as the kernel's), and no longer run once a grace period has passed. */
void kprw_point_gone(struct kprw_point *pt)
{
	struct kprw_kprobe *kp;

	for (kp = rcu_dereference_protected(pt->handlers, lockdep_is_held(&kprw_lock)); kp;
	     kp = rcu_dereference_protected(KPRW_KP_NEXT(kp), 1)) {
		KPRW_KP_POINT(kp) = NULL;
		kp->flags |= KPRW_FLAG_GONE;
	}
}

/* Under kprw_lock: a post_handler makes pt run unoptimized (0, or why not). */
static int post_attach(struct kprw_point *pt)
{
	int rc = kprw_post_allowed(pt) ? 0 : -EOPNOTSUPP;

	if (!rc) {
		pt->npost++;
		rc = kprw_apply(pt);        /* unoptimized from now on */
		if (rc) {
			pt->npost--;
			kprw_apply(pt);
		}
	}
	return rc;
}

int register_kprw_kprobe(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;
	int rc = 0;

	if (!kp)
		return -EINVAL;
	mutex_lock(&kprw_lock);
	if (KPRW_KP_POINT(kp))
		rc = -EBUSY;
	else if (!kp->symbol_name == !kp->addr)
		rc = -EINVAL;
	pt = rc ? NULL : kprw_find_point(kp->symbol_name, kp->offset, (unsigned long)kp->addr);
	if (!rc && !pt)
		rc = -ENOENT;
	if (!rc) {
		kp->flags &= ~KPRW_FLAG_RETPROBE;
		if (kp->post_handler)
			rc = post_attach(pt);
	}
	if (!rc)
		kprw_attach(kp, pt);
	mutex_unlock(&kprw_lock);
	return rc;
}
EXPORT_SYMBOL_GPL(register_kprw_kprobe);

void kprw_attach(struct kprw_kprobe *kp, struct kprw_point *pt)
{
	KPRW_KP_POINT(kp) = pt;
	kp->addr = (void *)pt->addr;
	RCU_INIT_POINTER(KPRW_KP_NEXT(kp), rcu_dereference_protected(pt->handlers, lockdep_is_held(&kprw_lock)));
	rcu_assign_pointer(pt->handlers, kp);
}

void kprw_detach(struct kprw_kprobe *kp)
{
	struct kprw_point *pt = KPRW_KP_POINT(kp);
	struct kprw_kprobe __rcu **pp;

	for (pp = &pt->handlers; rcu_access_pointer(*pp); ) {
		struct kprw_kprobe *k = rcu_dereference_protected(*pp, lockdep_is_held(&kprw_lock));

		if (k == kp) {
			rcu_assign_pointer(*pp, rcu_dereference_protected(KPRW_KP_NEXT(k), 1));
			break;
		}
		pp = &KPRW_KP_NEXT(k);
	}
	KPRW_KP_POINT(kp) = NULL;
}

void unregister_kprw_kprobe(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;

	mutex_lock(&kprw_lock);
	if (!kp || !KPRW_KP_POINT(kp) || (kp->flags & KPRW_FLAG_RETPROBE)) {
		mutex_unlock(&kprw_lock);
		return;
	}
	pt = KPRW_KP_POINT(kp);
	kprw_detach(kp);
	if (kp->post_handler && !--pt->npost)
		kprw_apply(pt);                      /* optimized again, if it may be */
	mutex_unlock(&kprw_lock);
	/* handlers run with preemption off (or in the int3 trap): a grace
	 * period ends every run that could still see kp */
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(unregister_kprw_kprobe);

int register_kprw_kprobes(struct kprw_kprobe **kps, int num)
{
	int i, rc;

	if (num <= 0)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		rc = register_kprw_kprobe(kps[i]);
		if (rc < 0) {
			if (i > 0)
				unregister_kprw_kprobes(kps, i);
			return rc;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(register_kprw_kprobes);

void unregister_kprw_kprobes(struct kprw_kprobe **kps, int num)
{
	int i;

	for (i = 0; i < num; i++)
		unregister_kprw_kprobe(kps[i]);
}
EXPORT_SYMBOL_GPL(unregister_kprw_kprobes);

int enable_kprw_kprobe(struct kprw_kprobe *kp)
{
	if (!KPRW_KP_POINT(kp))
		return -EINVAL;
	WRITE_ONCE(kp->flags, kp->flags & ~KPRW_FLAG_DISABLED);
	return 0;
}
EXPORT_SYMBOL_GPL(enable_kprw_kprobe);

int disable_kprw_kprobe(struct kprw_kprobe *kp)
{
	if (!KPRW_KP_POINT(kp))
		return -EINVAL;
	WRITE_ONCE(kp->flags, kp->flags | KPRW_FLAG_DISABLED);
	return 0;
}
EXPORT_SYMBOL_GPL(disable_kprw_kprobe);
