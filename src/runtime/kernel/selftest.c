// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite self-test and benchmark hooks (CONFIG_KPREWRITE_SELFTEST), used
 * by kprewrite's make check-kernel and make bench-kernel from inside the
 * guest, through /sys/kernel/debug/kprewrite/selftest:
 *
 *   kprw SYM+OFF     register a kprw_kprobe on a baked point (counts hits,
 *                    keeps the registers of calls whose 3rd argument is 777)
 *   kprw-empty SYM+OFF  the same with a handler that only counts (benchmarks)
 *   post SYM+OFF     "kprw" with a post_handler too: counts its runs, and
 *                    those with regs->ip past the probed instruction and the
 *                    flags as the pre_handler saw them (TF clear)
 *   kprobe SYM       register the kernel's own kprobe (empty pre_handler:
 *                    optimized when the kernel can)
 *   kprobe-int3 SYM  the kernel's kprobe with a post_handler (never optimized)
 *   stack SYM+OFF    register a kprw_kprobe whose handler, at its first run
 *                    in a task named kdrive, unwinds from inside itself:
 *                    stack_trace_save(), stack_trace_save_tsk_reliable(current)
 *                    (when the kernel has it), stack_trace_save_regs(regs),
 *                    and dump_stack() between two marker lines in the log
 *   post-refused SYM+OFF  a kprw_kprobe with a post_handler on a point whose
 *                    instruction touches the trap or interrupt flag: the
 *                    registration's result, into the report
 *   off              unregister everything
 *
 * Reading it reports what was seen. Not for production kernels.
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

#include "internal.h"   /* KPRW_SHOW_WRITE_FOPS, kprw_debugfs_add(), the point's step length */

static DEFINE_MUTEX(st_lock);
static struct kprw_kprobe st_kp;
static char st_sym[KSYM_NAME_LEN];
static unsigned long st_hits, st_hits777, st_ip_ok, st_di, st_si, st_dx, st_sp_ok;
static int st_post_refused = 1;     /* 1: not tried */
static unsigned long st_posts, st_post_ip_ok, st_post_flags_ok, st_pre_flags;

static int st_pre(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	st_hits++;
	st_pre_flags = regs->flags;
	/* the probe address + 1 (x86), as the kernel's kprobes give it */
	st_ip_ok += regs->ip == kprw_arch_pre_ip((unsigned long)kp->addr);
	/* sp is the probed code's: at a function entry, the return address */
	st_sp_ok += regs->sp > (unsigned long)regs && regs->sp - (unsigned long)regs <= 512;
	if (regs->dx == 777) {
		st_hits777++;
		st_di = regs->di;
		st_si = regs->si;
		st_dx = regs->dx;
	}
	return 0;
}

static void st_post(struct kprw_kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
	st_posts++;
	/* the next instruction in place, as the kernel's resume_singlestep() */
	st_post_ip_ok += regs->ip == (unsigned long)kp->addr + ((struct kprw_point *)KPRW_KP_POINT(kp))->step_len;
	st_post_flags_ok += !(regs->flags & X86_EFLAGS_TF) &&
			    (regs->flags & X86_EFLAGS_IF) == (st_pre_flags & X86_EFLAGS_IF);
}

/*
 * What an unwinder sees from inside a handler (doc/kernel.md, Unwinding):
 * three walks taken at the first hit in kdrive (the guest's driver), reported
 * symbolized by st_show.
 */
#define ST_DEPTH 32
enum { ST_SAVE, ST_RELIABLE, ST_REGS, ST_NWALKS };
static const char *const st_walk_name[ST_NWALKS] = { "save", "reliable", "regs" };
static unsigned long st_walk[ST_NWALKS][ST_DEPTH];
static unsigned int st_walk_n[ST_NWALKS];
static int st_reliable_rc;
static bool st_stack_on, st_captured;

static const char *st_unwinder(void)
{
	if (IS_ENABLED(CONFIG_UNWINDER_ORC))
		return "orc";
	if (IS_ENABLED(CONFIG_UNWINDER_FRAME_POINTER))
		return "frame-pointer";
	return "guess";
}

static int st_pre_stack(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	st_hits++;
	if (st_captured || strcmp(current->comm, "kdrive"))
		return 0;
#ifdef CONFIG_STACKTRACE
	memset(st_walk, 0, sizeof(st_walk));
	st_walk_n[ST_SAVE] = stack_trace_save(st_walk[ST_SAVE], ST_DEPTH, 0);
	/* -ENOSYS without CONFIG_HAVE_RELIABLE_STACKTRACE; on a failure the
	 * entries stored before it stay (the store was zeroed) */
	st_reliable_rc = stack_trace_save_tsk_reliable(current, st_walk[ST_RELIABLE], ST_DEPTH);
	st_walk_n[ST_RELIABLE] = 0;
	while (st_walk_n[ST_RELIABLE] < ST_DEPTH && st_walk[ST_RELIABLE][st_walk_n[ST_RELIABLE]])
		st_walk_n[ST_RELIABLE]++;
	st_walk_n[ST_REGS] = stack_trace_save_regs(regs, st_walk[ST_REGS], ST_DEPTH, 0);
#endif
	pr_info("dump_stack from a handler {\n");
	dump_stack();
	pr_info("} dump_stack from a handler\n");
	st_captured = true;
	return 0;
}

static int st_pre_empty(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	st_hits++;
	return 0;
}

#ifdef CONFIG_KPROBES
static struct kprobe st_kprobe;
static bool st_kprobe_on;
static unsigned long st_kprobe_hits;

/* the probe kprobes built around ours: optimization flags the aggregate */
static int st_kprobe_optimized(void)
{
	struct kprobe *ap;
	int opt;

	preempt_disable();
	ap = get_kprobe(st_kprobe.addr);
	opt = ap && (ap->flags & KPROBE_FLAG_OPTIMIZED);
	preempt_enable();
	return opt;
}

static int st_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	st_kprobe_hits++;
	return 0;
}

static void st_kprobe_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

static int st_kprobe_register(const char *sym, bool int3)
{
	memset(&st_kprobe, 0, sizeof(st_kprobe));
	strscpy(st_sym, sym, sizeof(st_sym));
	st_kprobe.symbol_name = st_sym;
	st_kprobe.pre_handler = st_kprobe_pre;
	if (int3)
		st_kprobe.post_handler = st_kprobe_post;   /* keeps it unoptimized */
	st_kprobe_hits = 0;
	if (register_kprobe(&st_kprobe))
		return -EINVAL;
	st_kprobe_on = true;
	return 0;
}
#endif

static void st_off(void)
{
	if (KPRW_KP_POINT(&st_kp))
		unregister_kprw_kprobe(&st_kp);
	st_stack_on = false;
#ifdef CONFIG_KPROBES
	if (st_kprobe_on)
		unregister_kprobe(&st_kprobe);
	st_kprobe_on = false;
#endif
}

static int st_show(struct seq_file *m, void *v)
{
	mutex_lock(&st_lock);
	seq_printf(m, "kprw %s hits %lu ip-ok %lu sp-ok %lu hits777 %lu di %lx si %lx dx %lu\n",
		   KPRW_KP_POINT(&st_kp) ? "on" : "off", st_hits, st_ip_ok, st_sp_ok, st_hits777, st_di, st_si, st_dx);
#ifdef CONFIG_KPROBES
	seq_printf(m, "kprobe %s hits %lu optimized %d\n", st_kprobe_on ? "on" : "off", st_kprobe_hits,
		   st_kprobe_on ? st_kprobe_optimized() : 0);
#endif
	seq_printf(m, "post posts %lu post-ip-ok %lu post-flags-ok %lu post-refused %d\n", st_posts, st_post_ip_ok,
		   st_post_flags_ok, st_post_refused);
	if (st_stack_on || st_captured) {
		int w;
		unsigned int i;

		seq_printf(m, "unwind unwinder %s stacktrace %d captured %d save-n %u reliable-rc %d reliable-n %u regs-n %u\n",
			   st_unwinder(), IS_ENABLED(CONFIG_STACKTRACE), st_captured, st_walk_n[ST_SAVE],
			   st_reliable_rc, st_walk_n[ST_RELIABLE], st_walk_n[ST_REGS]);
		for (w = 0; w < ST_NWALKS && st_captured; w++)
			for (i = 0; i < st_walk_n[w]; i++)
				seq_printf(m, "%s #%u %pS\n", st_walk_name[w], i, (void *)st_walk[w][i]);
	}
	mutex_unlock(&st_lock);
	return 0;
}

static ssize_t st_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[KSYM_NAME_LEN + 32], *arg, *verb;
	unsigned long off = 0;
	int rc;

	rc = kprw_command(ubuf, len, buf, sizeof(buf), &verb, &arg);
	if (rc)
		return rc;
	mutex_lock(&st_lock);
	if (!strcmp(verb, "off")) {
		st_off();
	} else if (!arg || !*arg) {
		rc = -EINVAL;
	} else if (!strcmp(verb, "kprw") || !strcmp(verb, "kprw-empty") ||
		   !strcmp(verb, "stack") || !strcmp(verb, "post") || !strcmp(verb, "post-refused")) {
		rc = kprw_split_offset(arg, &off);
		strscpy(st_sym, arg, sizeof(st_sym));
		if (!rc && !strcmp(verb, "post-refused")) {
			static struct kprw_kprobe r;

			memset(&r, 0, sizeof(r));
			r.symbol_name = st_sym;
			r.offset = off;
			r.pre_handler = st_pre_empty;
			r.post_handler = st_post;
			st_post_refused = register_kprw_kprobe(&r);
			if (!st_post_refused)
				unregister_kprw_kprobe(&r);
		} else if (!rc) {
			st_off();
			memset(&st_kp, 0, sizeof(st_kp));
			st_kp.symbol_name = st_sym;
			st_kp.offset = off;
			st_kp.pre_handler = !strcmp(verb, "kprw") || !strcmp(verb, "post") ? st_pre :
					    !strcmp(verb, "stack") ? st_pre_stack : st_pre_empty;
			st_kp.post_handler = !strcmp(verb, "post") ? st_post : NULL;
			st_hits = st_hits777 = st_ip_ok = st_sp_ok = 0;
			st_posts = st_post_ip_ok = st_post_flags_ok = 0;
			st_captured = false;
			memset(st_walk_n, 0, sizeof(st_walk_n));
			st_reliable_rc = 0;
			rc = register_kprw_kprobe(&st_kp);
			st_stack_on = !rc && !strcmp(verb, "stack");
		}
#ifdef CONFIG_KPROBES
	} else if (!strcmp(verb, "kprobe") || !strcmp(verb, "kprobe-int3")) {
		st_off();
		rc = st_kprobe_register(arg, !strcmp(verb, "kprobe-int3"));
#endif
	} else {
		rc = -EINVAL;
	}
	mutex_unlock(&st_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(st);

static int __init kprewrite_selftest_init(void)
{
	kprw_debugfs_add("selftest", 0600, NULL, &st_fops);
	return 0;
}
late_initcall(kprewrite_selftest_init);
