// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite self-test of return probes (CONFIG_KPREWRITE_SELFTEST), used by
 * make check-kernel and make bench-kernel from inside the guest, through
 * /sys/kernel/debug/kprewrite/selftest-kret:
 *
 *   follow SYM [MAXACTIVE [AX]]  register a kprw_kretprobe on SYM%return:
 *                  its entry_handler stores a mark and the entry's sp in
 *                  ri->data, its handler checks what it is given (below) and,
 *                  with AX, makes AX the return value of calls in kdrive
 *   empty SYM      a kprw_kretprobe whose handler only counts (benchmarks)
 *   stack SYM      a kprw_kretprobe whose handler, at its first run in a
 *                  task named kdrive, walks the stack: stack_trace_save()
 *                  and stack_trace_save_regs(regs), reported symbolized
 *   kretprobe SYM  the kernel's own kretprobe, empty handler (CONFIG_KPROBES)
 *   refuse SYM     "follow" whose entry_handler returns 1 (the call is not
 *                  followed)
 *   nest SYM+OFF   also a kprw_kprobe on SYM+OFF whose handler calls
 *                  __x64_sys_getpid(): a return probe there is missed
 *   disable, enable  disable_kprw_kretprobe(), enable_kprw_kretprobe()
 *   mark           remember nmissed and kp.nmissed (the report gives their
 *                  growth between the last two marks)
 *   off            unregister everything
 *
 * Reading it reports: entries, returns, how many returns had regs->ip the
 * call's return address, regs->sp just above where it was, ri->data what the
 * entry stored, regs->ax the task's tgid (for getpid); nmissed (no free
 * instance) and kp.nmissed (a hit while a handler ran), their growth
 * between the last two marks, the free instances, the instance holders not
 * freed yet, and the entries and returns in hard interrupts. Not for
 * production.
 */
#define pr_fmt(fmt) "kprewrite selftest: " fmt

#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kprewrite.h>
#include <linux/mutex.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"   /* kprw_kret_free_instances() */

asmlinkage long __x64_sys_getpid(const struct pt_regs *regs);

static DEFINE_MUTEX(kt_lock);
static struct kprw_kretprobe kt_rp;
static struct kprw_kprobe kt_nest;
static char kt_sym[KSYM_NAME_LEN], kt_nest_sym[KSYM_NAME_LEN];
/* (atomic: calls on several CPUs at once count) */
static atomic_long_t kt_entries, kt_returns, kt_ip_ok, kt_sp_ok, kt_data_ok, kt_ax_tgid, kt_nests,
	kt_irq_entries, kt_irq_returns;
static long kt_set_ax;
static long kt_mark[2], kt_kp_mark[2];
static bool kt_getpid, kt_refuse;

struct kt_data {
	unsigned long magic, sp;
};
#define KT_MAGIC 0x6b707277726574UL     /* "kprwret" */

static int kt_entry(struct kprw_kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kt_data *d = (void *)ri->data;

	atomic_long_inc(&kt_entries);
	if (in_hardirq())
		atomic_long_inc(&kt_irq_entries);
	d->magic = KT_MAGIC;
	d->sp = regs->sp;       /* where the return address is: ri->fp */
	return kt_refuse;
}

static int kt_return(struct kprw_kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kt_data *d = (void *)ri->data;

	atomic_long_inc(&kt_returns);
	if (in_hardirq())
		atomic_long_inc(&kt_irq_returns);
	if (regs->ip == (unsigned long)KPRW_RI_RET(ri))
		atomic_long_inc(&kt_ip_ok);
	if (regs->sp == (unsigned long)KPRW_RI_FP(ri) + sizeof(long))
		atomic_long_inc(&kt_sp_ok);
	/* the data is this call's */
	if (d->magic == KT_MAGIC && d->sp == (unsigned long)KPRW_RI_FP(ri))
		atomic_long_inc(&kt_data_ok);
	if (kt_getpid && regs_return_value(regs) == task_tgid_vnr(current))
		atomic_long_inc(&kt_ax_tgid);
	if (kt_set_ax && !strcmp(current->comm, "kdrive"))
		regs->ax = kt_set_ax;
	d->magic = 0;
	return 0;
}

static int kt_return_empty(struct kprw_kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&kt_returns);
	return 0;
}

#define KT_DEPTH 24
static unsigned long kt_walk[2][KT_DEPTH];
static unsigned int kt_walk_n[2];
static bool kt_captured;

static int kt_return_stack(struct kprw_kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&kt_returns);
	if (kt_captured || strcmp(current->comm, "kdrive"))
		return 0;
#ifdef CONFIG_STACKTRACE
	kt_walk_n[0] = stack_trace_save(kt_walk[0], KT_DEPTH, 0);
	kt_walk_n[1] = stack_trace_save_regs(regs, kt_walk[1], KT_DEPTH, 0);
#endif
	kt_captured = true;
	return 0;
}

static int kt_nest_pre(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	atomic_long_inc(&kt_nests);
	__x64_sys_getpid(regs);
	return 0;
}

#ifdef CONFIG_KPROBES   /* the kernel's own (without it, kretprobes are ours) */
static struct kretprobe kt_kernel_rp;
static bool kt_kernel_on;

static int kt_kernel_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_long_inc(&kt_returns);
	return 0;
}
#endif

/* the free instances of kt_rp (-1: not registered) */
static int kt_free(void)
{
	return KPRW_KP_POINT(&kt_rp.kp) ? kprw_kret_free_instances(&kt_rp) : -1;
}

static void kt_off(void)
{
	if (KPRW_KP_POINT(&kt_nest))
		unregister_kprw_kprobe(&kt_nest);
	if (KPRW_KP_POINT(&kt_rp.kp))
		unregister_kprw_kretprobe(&kt_rp);
#ifdef CONFIG_KPROBES
	if (kt_kernel_on)
		unregister_kretprobe(&kt_kernel_rp);
	kt_kernel_on = false;
#endif
}

enum kt_kind { KT_FOLLOW, KT_EMPTY, KT_STACK, KT_REFUSE };

static int kt_follow(const char *sym, int maxactive, long ax, enum kt_kind kind)
{
	kt_off();
	memset(&kt_rp, 0, sizeof(kt_rp));
	strscpy(kt_sym, sym, sizeof(kt_sym));
	kt_rp.kp.symbol_name = kt_sym;
	kt_rp.maxactive = maxactive;
	kt_rp.data_size = sizeof(struct kt_data);
	kt_rp.entry_handler = kind == KT_FOLLOW || kind == KT_REFUSE ? kt_entry : NULL;
	kt_rp.handler = kind == KT_FOLLOW || kind == KT_REFUSE ? kt_return :
			kind == KT_EMPTY ? kt_return_empty : kt_return_stack;
	kt_refuse = kind == KT_REFUSE;
	kt_captured = false;
	kt_walk_n[0] = kt_walk_n[1] = 0;
	atomic_long_set(&kt_entries, 0);
	atomic_long_set(&kt_returns, 0);
	atomic_long_set(&kt_ip_ok, 0);
	atomic_long_set(&kt_sp_ok, 0);
	atomic_long_set(&kt_data_ok, 0);
	atomic_long_set(&kt_ax_tgid, 0);
	atomic_long_set(&kt_nests, 0);
	atomic_long_set(&kt_irq_entries, 0);
	atomic_long_set(&kt_irq_returns, 0);
	kt_mark[0] = kt_mark[1] = kt_kp_mark[0] = kt_kp_mark[1] = 0;
	kt_set_ax = ax;
	kt_getpid = !strcmp(sym, "__x64_sys_getpid");
	return register_kprw_kretprobe(&kt_rp);
}

static int kt_show(struct seq_file *m, void *v)
{
	mutex_lock(&kt_lock);
#define V(c) atomic_long_read(&(c))
	seq_printf(m, "kret %s entries %ld returns %ld ip-ok %ld sp-ok %ld data-ok %ld ax-tgid %ld nmissed %d marked %ld kp-nmissed %lu kp-marked %ld free %d holders %d nests %ld irq-entries %ld irq-returns %ld\n",
		   KPRW_KP_POINT(&kt_rp.kp) ? "on" : "off", V(kt_entries), V(kt_returns), V(kt_ip_ok), V(kt_sp_ok),
		   V(kt_data_ok), V(kt_ax_tgid), kt_rp.nmissed, kt_mark[1] - kt_mark[0], kt_rp.kp.nmissed,
		   kt_kp_mark[1] - kt_kp_mark[0], kt_free(), kprw_kret_holders(), V(kt_nests),
		   V(kt_irq_entries), V(kt_irq_returns));
#undef V
#ifdef CONFIG_KPROBES
	seq_printf(m, "kretprobe %s nmissed %d\n", kt_kernel_on ? "on" : "off", kt_kernel_rp.nmissed);
#endif
	if (kt_captured) {
		int w;
		unsigned int i;

		for (w = 0; w < 2; w++)
			for (i = 0; i < kt_walk_n[w]; i++)
				seq_printf(m, "%s #%u %pS\n", w ? "kregs" : "ksave", i, (void *)kt_walk[w][i]);
	}
	mutex_unlock(&kt_lock);
	return 0;
}

static ssize_t kt_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[KSYM_NAME_LEN + 64], *arg, *verb, *sym;
	unsigned long off = 0;
	int rc, maxactive = 0;
	long ax = 0;

	rc = kprw_command(ubuf, len, buf, sizeof(buf), &verb, &arg);
	if (rc)
		return rc;
	sym = arg ? strsep(&arg, " ") : NULL;
	mutex_lock(&kt_lock);
	if (!strcmp(verb, "off")) {
		kt_off();
	} else if (!strcmp(verb, "mark")) {
		kt_mark[0] = kt_mark[1];
		kt_mark[1] = kt_rp.nmissed;
		kt_kp_mark[0] = kt_kp_mark[1];
		kt_kp_mark[1] = kt_rp.kp.nmissed;
	} else if (!strcmp(verb, "disable")) {
		rc = disable_kprw_kretprobe(&kt_rp);
	} else if (!strcmp(verb, "enable")) {
		rc = enable_kprw_kretprobe(&kt_rp);
	} else if (!sym || !*sym) {
		rc = -EINVAL;
	} else if (!strcmp(verb, "follow") || !strcmp(verb, "empty") || !strcmp(verb, "stack") ||
		   !strcmp(verb, "refuse")) {
		char *a = arg ? strsep(&arg, " ") : NULL;

		if (a && *a)
			rc = kstrtoint(a, 0, &maxactive);
		if (!rc && arg && *arg)
			rc = kstrtol(arg, 0, &ax);
		if (!rc)
			rc = kt_follow(sym, maxactive, ax, !strcmp(verb, "follow") ? KT_FOLLOW :
				       !strcmp(verb, "empty") ? KT_EMPTY : !strcmp(verb, "refuse") ? KT_REFUSE : KT_STACK);
	} else if (!strcmp(verb, "nest")) {
		rc = kprw_split_offset(sym, &off);
		if (!rc && KPRW_KP_POINT(&kt_nest))
			unregister_kprw_kprobe(&kt_nest);
		if (!rc) {
			memset(&kt_nest, 0, sizeof(kt_nest));
			strscpy(kt_nest_sym, sym, sizeof(kt_nest_sym));
			kt_nest.symbol_name = kt_nest_sym;
			kt_nest.offset = off;
			kt_nest.pre_handler = kt_nest_pre;
			rc = register_kprw_kprobe(&kt_nest);
		}
#ifdef CONFIG_KPROBES
	} else if (!strcmp(verb, "kretprobe")) {
		kt_off();
		memset(&kt_kernel_rp, 0, sizeof(kt_kernel_rp));
		strscpy(kt_sym, sym, sizeof(kt_sym));
		kt_kernel_rp.kp.symbol_name = kt_sym;
		kt_kernel_rp.handler = kt_kernel_return;
		rc = register_kretprobe(&kt_kernel_rp);
		kt_kernel_on = !rc;
#endif
	} else {
		rc = -EINVAL;
	}
	mutex_unlock(&kt_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(kt);

static int __init kprewrite_selftest_kret_init(void)
{
	kprw_debugfs_add("selftest-kret", 0600, NULL, &kt_fops);
	return 0;
}
late_initcall(kprewrite_selftest_kret_init);
