// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: live patching. Each point's code is moved
 * between its states (enum code_state: the jump, int3, the original bytes)
 * by what the knobs, the point's own control state and its handlers want,
 * with the kernel's text patching under text_mutex.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/memory.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"

bool kprw_knob_enabled = true, kprw_knob_optimization = true;

static enum code_state wanted(const struct kprw_point *pt)
{
	return kprw_wanted(kprw_knob_enabled, kprw_knob_optimization, pt->disabled, pt->unoptimized || pt->ntrap,
			   pt->verdict == KPRW_OPTIMIZED && pt->detour);
}

/* The bytes of the site in state s. */
static void site_bytes(const struct kprw_point *pt, enum code_state s, u8 *b)
{
	memcpy(b, pt->orig, pt->len);
	if (s == CODE_INT3)
		kprw_arch_site_int3(b, pt->orig, pt->len);
	else if (s == CODE_OPTIMIZED)
		kprw_arch_site_jump(b, pt->addr, pt->detour, pt->len);   /* (checked at start-up: in reach, long enough) */
}

static void poke(struct kprw_point *pt, unsigned int from, const u8 *b, unsigned int n)
{
	kprw_arch_poke(pt->addr + from, b + from, n);
}

/* The kernel's own kprobes patch text too, an optprobe's undoing later,
 * from a worker: let the pending work finish, and leave a site alone while
 * one of them is there. */
static int kernel_kprobe_at(struct kprw_point *pt)
{
#ifdef CONFIG_KPROBES
	bool there;

	wait_for_kprobe_optimizer();
	preempt_disable();
	there = get_kprobe((void *)pt->addr);
	preempt_enable();
	if (there) {
		pr_err("%s+0x%x (0x%lx): a kprobe of the kernel's is there: not patched\n",
		       pt->name, pt->offset, pt->addr);
		return -EBUSY;
	}
#endif
	return 0;
}

/*
 * Bring a point's code to what it should be, under kprw_lock. Byte 0 is
 * an int3 while the rest changes; a CPU meeting it goes to the out-of-line
 * copy. Before the jmp goes in, every task must have left the DCR: a grace
 * period of RCU-tasks (RCU on a kernel without preemption) after the int3,
 * as the kernel's optprobes do.
 */
int kprw_apply(struct kprw_point *pt)
{
	enum code_state want = wanted(pt), have = pt->code;
	u8 now[KPRW_ORIG_MAX], cur[KPRW_ORIG_MAX], b[KPRW_ORIG_MAX];
	int rc;

	if (want == have)
		return 0;
	if (pt->pinned)
		return -EBUSY;
	rc = kernel_kprobe_at(pt);
	if (rc)
		return rc;
	/* every time, under text_mutex (which every patcher of kernel text
	 * takes): the site must hold what the state says */
	mutex_lock(&text_mutex);
	site_bytes(pt, have, now);
	copy_from_kernel_nofault(cur, (void *)pt->addr, pt->len);
	if (memcmp(cur, now, pt->len)) {
		mutex_unlock(&text_mutex);
		pr_err("%s+0x%x (0x%lx): the code is not what the probe table says: not patched\n",
		       pt->name, pt->offset, pt->addr);
		return -EILSEQ;
	}
	if (have != CODE_INT3) {
		site_bytes(pt, CODE_INT3, b);
		if (want == CODE_DISABLED)
			WRITE_ONCE(pt->code, CODE_DISABLED);    /* from now on nothing counts */
		else
			WRITE_ONCE(pt->code, CODE_INT3);
		poke(pt, 0, b, 1);
		if (have == CODE_OPTIMIZED && pt->len > 1)
			poke(pt, 1, b, pt->len - 1);    /* the original tail */
	}
	if (want == CODE_OPTIMIZED) {
		mutex_unlock(&text_mutex);
		synchronize_rcu_tasks();
		mutex_lock(&text_mutex);
		site_bytes(pt, CODE_OPTIMIZED, b);
		poke(pt, 1, b, pt->len - 1);
		poke(pt, 0, b, 1);
	} else if (want == CODE_DISABLED) {
		poke(pt, 0, pt->orig, 1);
	}
	WRITE_ONCE(pt->code, want);
	mutex_unlock(&text_mutex);
	return 0;
}

/* A point whose site holds its original bytes, and which no CPU can be
 * running (its module is coming): straight to what it should be. */
void kprw_arm_fresh(struct kprw_point *pt)
{
	enum code_state want = wanted(pt);
	u8 b[KPRW_ORIG_MAX];

	if (want == CODE_DISABLED)
		return;
	site_bytes(pt, want, b);
	mutex_lock(&text_mutex);
	kprw_arch_poke(pt->addr, b, pt->len);
	WRITE_ONCE(pt->code, want);
	mutex_unlock(&text_mutex);
}

int kprw_apply_all(void)
{
	struct kprw_set *s;
	struct kprw_point *pt;
	int rc = 0;

	for_each_kprw_point(s, pt) {
		int r = kprw_apply(pt);

		rc = rc ? rc : r;
	}
	return rc;
}
