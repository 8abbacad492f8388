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
 */
#ifndef _LINUX_KPREWRITE_H
#define _LINUX_KPREWRITE_H

#include <linux/types.h>

struct pt_regs;
struct kprw_kprobe;

/* Runs at each hit, before the probed instruction, with preemption off
 * (and in the int3 path with interrupts off). Writes to the general
 * registers take effect; a changed ip is honoured on the int3 path only, as
 * with the kernel's optprobes. The return value is ignored. */
typedef int (*kprw_pre_handler_t)(struct kprw_kprobe *kp, struct pt_regs *regs);

#define KPRW_FLAG_DISABLED 2    /* registered but not run (as KPROBE_FLAG_DISABLED) */

struct kprw_kprobe {
	/* where: symbol_name (+ offset), or addr; not both */
	const char *symbol_name;
	unsigned int offset;
	void *addr;
	kprw_pre_handler_t pre_handler;
	u32 flags;
	/* hits of this point that ran no handler: another handler was running
	 * on this CPU (the recursion guard) */
	unsigned long nmissed;
	/* private to the runtime */
	struct kprw_kprobe __rcu *next;
	void *point;
};

/* 0; -EINVAL (symbol_name and addr both set, or neither); -ENOENT (no point
 * was baked there); -EBUSY (kp is registered already) */
int register_kprw_kprobe(struct kprw_kprobe *kp);
/* Returns once no CPU runs kp's handler any more. */
void unregister_kprw_kprobe(struct kprw_kprobe *kp);
/* All or nothing: on an error the ones registered are unregistered again. */
int register_kprw_kprobes(struct kprw_kprobe **kps, int num);
void unregister_kprw_kprobes(struct kprw_kprobe **kps, int num);
int enable_kprw_kprobe(struct kprw_kprobe *kp);
int disable_kprw_kprobe(struct kprw_kprobe *kp);

#endif
