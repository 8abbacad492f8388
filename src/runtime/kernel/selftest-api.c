// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite self-test of the kprobes API against the kernel's own
 * (CONFIG_KPREWRITE_SELFTEST; make check-kernel): what register_kprobe()
 * and its kin answer and do, as kernel/kprobes.c would, through
 * /sys/kernel/debug/kprewrite/selftest-api:
 *
 *   static ENTRY MID RET KONLY  registration's answers, a line "NAME VALUE"
 *                  each (doc/kernel.md lists the kernel's beside them):
 *                  ENTRY a function whose entry is baked (optimized), MID
 *                  SYM+OFF a baked mid-function point, RET a function baked
 *                  as RET%return, KONLY one baked without %return
 *   order SYM+OFF  kprobes A, then B, on one point: the order their
 *                  pre_handlers ran at kdrive's hits ("order BA")
 *   redirect SYM+OFF RET  two kprobes on a function's entry: the older
 *                  counts kdrive's hits, the newer sets regs->ax to 4242
 *                  and, with RET 1, returns from the function for it
 *                  (regs->ip the return address, regs->sp past it) and
 *                  returns 1; with RET 0 it sets regs->ip alone, returns 0
 *   race SYM+OFF N  register and unregister a kprobe on the point N times
 *                  (every other one with a post_handler: the point goes
 *                  between int3 and its jump) while kdrive hits it
 *   off            unregister everything
 *
 * Reading it gives the results. Not for production kernels.
 */
#define pr_fmt(fmt) "kprewrite selftest: " fmt

#include <linux/atomic.h>
#include <linux/init.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kprewrite.h>
#include <linux/mutex.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/string.h>

#include "internal.h"

static DEFINE_MUTEX(sa_lock);
static char sa_out[3072];
static size_t sa_len;
static struct kprw_kprobe sa_a, sa_b;
static struct kprw_kretprobe sa_r;
static char sa_sym[KSYM_NAME_LEN], sa_prev[KSYM_NAME_LEN];
static char sa_order[8];
static int sa_order_n, sa_redirect_ret;
static long sa_race_fails = -1;
static atomic_t sa_count_ran, sa_redirect_ran;

static void put(const char *name, long v)
{
	sa_len += scnprintf(sa_out + sa_len, sizeof(sa_out) - sa_len, "%s %ld\n", name, v);
}

static bool in_kdrive(void)
{
	return !strcmp(current->comm, "kdrive");
}

static int pre_empty(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	return 0;
}

static void post_empty(struct kprw_kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
}

static int ret_empty(struct kprw_kretprobe_instance *ri, struct pt_regs *regs)
{
	return 0;
}

static void init_kp(struct kprw_kprobe *kp, const char *sym, unsigned int off)
{
	memset(kp, 0, sizeof(*kp));
	kp->symbol_name = sym;
	kp->offset = off;
	kp->pre_handler = pre_empty;
}

static void init_rp(const char *sym)
{
	memset(&sa_r, 0, sizeof(sa_r));
	sa_r.kp.symbol_name = sym;
	sa_r.handler = ret_empty;
}

/* NULL and malformed arguments (the kernel oopses on the NULL ones) */
static void check_args(const char *entry)
{
	struct kprw_kprobe *kps[2] = { &sa_a, NULL };

	put("null-register", register_kprw_kprobe(NULL));
	unregister_kprw_kprobe(NULL);
	unregister_kprw_kprobes(NULL, 1);
	put("null-unregister", 0);
	put("null-enable", enable_kprw_kprobe(NULL));
	put("null-disable", disable_kprw_kprobe(NULL));
	put("null-array", register_kprw_kprobes(NULL, 1));
	init_kp(&sa_a, entry, 0);
	put("zero-num", register_kprw_kprobes(kps, 0));
	put("null-in-array", register_kprw_kprobes(kps, 2));
	put("null-in-array-rolled-back", !KPRW_KP_POINT(&sa_a));
	put("null-kretprobe", register_kprw_kretprobe(NULL));
	put("null-get-kretprobe", get_kprw_kretprobe(NULL) == NULL);
	init_kp(&sa_a, entry, 0);
	sa_a.addr = (void *)kallsyms_lookup_name(entry);
	put("both", register_kprw_kprobe(&sa_a));
	init_kp(&sa_a, NULL, 0);
	put("neither", register_kprw_kprobe(&sa_a));
	init_kp(&sa_a, "kprewrite_no_such_symbol", 0);
	put("no-symbol", register_kprw_kprobe(&sa_a));
}

/* The instruction after the baked point at m, and the symbol before m's
 * function (whose offset to m runs past its end). */
static unsigned int point_len(unsigned long m)
{
	struct kprw_point *pt;
	int n = 0;

	mutex_lock(&kprw_lock);
	pt = kprw_point_at(m);
	if (pt)
		n = kprw_arch_insn_len(pt->orig, pt->len);
	mutex_unlock(&kprw_lock);
	return n > 0 ? n : 0;
}

/* Where a kprobe goes, and what an address inside an instruction, in data,
 * past its symbol's end, or not baked gets */
static void check_where(const char *mid, unsigned int mid_off)
{
	unsigned long m = kallsyms_lookup_name(mid) + mid_off;
	unsigned long size, off, prev;
	char *modname;
	int rc;

	/* (inside the mid point's instruction: one byte is a whole one) */
	init_kp(&sa_a, mid, mid_off + 1);
	put("inside-insn", point_len(m) > 1 ? register_kprw_kprobe(&sa_a) : -1000);
	put("inside-insn-addr-set", (unsigned long)sa_a.addr == m + 1);
	init_kp(&sa_a, NULL, 0);
	sa_a.addr = (void *)&kprw_knob_enabled;
	put("data", register_kprw_kprobe(&sa_a));
	init_kp(&sa_a, mid, mid_off + point_len(m));
	put("not-baked", register_kprw_kprobe(&sa_a));
	/* SYM+OFF past SYM's end: the next function's point, by address */
	if (!kallsyms_lookup(m - mid_off - 1, &size, &off, &modname, sa_prev)) {
		put("past-end", -1000);
		return;
	}
	prev = m - mid_off - 1 - off;
	init_kp(&sa_a, sa_prev, m - prev);
	rc = register_kprw_kprobe(&sa_a);
	put("past-end", kallsyms_lookup_name(sa_prev) == prev ? rc : -1000);
	put("past-end-addr-ok", (unsigned long)sa_a.addr == m);
	if (!rc)
		unregister_kprw_kprobe(&sa_a);
}

/* kp's point's code is the jump */
static int jumps(const struct kprw_kprobe *kp)
{
	const struct kprw_point *pt = KPRW_KP_POINT(kp);

	return pt && READ_ONCE(pt->code) == CODE_OPTIMIZED;
}

/* What register leaves in kp, registering twice and again, unregistering
 * an unregistered kprobe, and disable_kprobe() disarming */
static void check_kprobe(const char *entry, const char *mid, unsigned int mid_off)
{
	unsigned long e = kallsyms_lookup_name(entry);
	char disarm[5];
	int rc;

	init_kp(&sa_a, entry, 0);
	sa_a.flags = 0x40000000 | KPRW_FLAG_GONE;   /* not the caller's to set */
	sa_a.nmissed = 99;
	put("entry-register", register_kprw_kprobe(&sa_a));
	put("entry-flags", sa_a.flags);
	put("entry-nmissed", sa_a.nmissed);
	put("entry-addr-ok", (unsigned long)sa_a.addr == e + kprw_arch_entry_gap(e));
	put("registered-twice", register_kprw_kprobe(&sa_a));
	unregister_kprw_kprobe(&sa_a);
	put("again-by-symbol", register_kprw_kprobe(&sa_a));
	sa_a.symbol_name = NULL;
	rc = register_kprw_kprobe(&sa_a);
	put("again-by-addr", rc);
	if (!rc)
		unregister_kprw_kprobe(&sa_a);
	init_kp(&sa_a, NULL, 0);
	sa_a.addr = (void *)e;
	unregister_kprw_kprobe(&sa_a);
	put("unregistered-addr-cleared", sa_a.addr == NULL);
	put("unregistered-enable", enable_kprw_kprobe(&sa_a));
	put("unregistered-disable", disable_kprw_kprobe(&sa_a));
	init_kp(&sa_a, mid, mid_off);
	sa_a.flags = KPRW_FLAG_DISABLED;
	rc = register_kprw_kprobe(&sa_a);
	put("mid-disabled-flags", rc ? rc : sa_a.flags);
	unregister_kprw_kprobe(&sa_a);
	/* a post_handler's kprobe takes the point off its jump; disabled, it
	 * gives that up */
	init_kp(&sa_a, entry, 0);
	sa_a.post_handler = post_empty;
	rc = register_kprw_kprobe(&sa_a);
	disarm[0] = '0' + jumps(&sa_a);
	disable_kprw_kprobe(&sa_a);
	disarm[1] = '0' + jumps(&sa_a);
	enable_kprw_kprobe(&sa_a);
	disarm[2] = '0' + jumps(&sa_a);
	disable_kprw_kprobe(&sa_a);
	disarm[3] = '0' + jumps(&sa_a);
	disarm[4] = 0;
	unregister_kprw_kprobe(&sa_a);
	sa_len += scnprintf(sa_out + sa_len, sizeof(sa_out) - sa_len, "disarm %s\n", rc ? "failed" : disarm);
}

/* register_kretprobe()'s answers, in its order, and the instances freed */
static void check_kretprobe(const char *ret, const char *mid, unsigned int mid_off, const char *konly)
{
	int holders = kprw_kret_holders(), rc, i;

	init_rp(ret);
	sa_r.data_size = KPRW_KRET_MAX_DATA + 1;
	put("kret-data-4097", register_kprw_kretprobe(&sa_r));
	put("kret-data-4097-maxactive", sa_r.maxactive);
	init_rp(ret);
	sa_r.data_size = (size_t)-64;
	put("kret-data-wrap", register_kprw_kretprobe(&sa_r));
	init_rp(ret);
	sa_r.kp.post_handler = post_empty;
	put("kret-register", register_kprw_kretprobe(&sa_r));
	put("kret-maxactive-default", sa_r.maxactive);
	put("kret-flags", sa_r.kp.flags);
	put("kret-post-cleared", sa_r.kp.post_handler == NULL);
	put("kret-twice", register_kprw_kretprobe(&sa_r));
	unregister_kprw_kretprobe(&sa_r);
	init_rp(ret);
	sa_r.maxactive = -3;
	rc = register_kprw_kretprobe(&sa_r);
	put("kret-maxactive-negative", rc ? rc : sa_r.maxactive);
	unregister_kprw_kretprobe(&sa_r);
	init_rp(ret);
	sa_r.handler = NULL;
	put("kret-no-handler", register_kprw_kretprobe(&sa_r));
	unregister_kprw_kretprobe(&sa_r);
	init_rp(mid);
	sa_r.kp.offset = mid_off;
	put("kret-not-entry", register_kprw_kretprobe(&sa_r));
	init_rp(konly);
	put("kret-not-baked", register_kprw_kretprobe(&sa_r));
	put("kret-not-baked-maxactive", sa_r.maxactive);
	init_rp(NULL);
	sa_r.kp.addr = (void *)kallsyms_lookup_name(ret);
	unregister_kprw_kretprobe(&sa_r);
	put("kret-unregistered-addr-cleared", sa_r.kp.addr == NULL);
	for (i = 0, rc = 0; i < 40 && !rc; i++) {
		init_rp(ret);
		rc = register_kprw_kretprobe(&sa_r);
		if (!rc)
			unregister_kprw_kretprobe(&sa_r);
	}
	put("kret-40-registrations", rc);
	put("kret-holders-left", kprw_kret_holders() - holders);
}

static void sa_off(void)
{
	if (KPRW_KP_POINT(&sa_b))
		unregister_kprw_kprobe(&sa_b);
	if (KPRW_KP_POINT(&sa_a))
		unregister_kprw_kprobe(&sa_a);
}

static int pre_a(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	if (in_kdrive() && sa_order_n < 6)
		sa_order[sa_order_n++] = 'A';
	return 0;
}

static int pre_b(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	if (in_kdrive() && sa_order_n < 6)
		sa_order[sa_order_n++] = 'B';
	return 0;
}

static int pre_count(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	if (in_kdrive())
		atomic_inc(&sa_count_ran);
	return 0;
}

/* at a function's entry (x86: the return address at regs->sp) */
static int pre_redirect(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	unsigned long *slot = kprw_arch_ret_slot(regs);

	if (!in_kdrive())
		return 0;
	atomic_inc(&sa_redirect_ran);
	regs->ax = 4242;
	regs->ip = *slot;
	if (sa_redirect_ret)
		regs->sp += sizeof(long);   /* (a changed sp would stay: not with 0) */
	return sa_redirect_ret;
}

/* A, then B, on one point */
static int sa_two(const char *sym, unsigned int off, kprw_pre_handler_t a, kprw_pre_handler_t b)
{
	int rc;

	sa_off();
	init_kp(&sa_a, sym, off);
	sa_a.pre_handler = a;
	init_kp(&sa_b, sym, off);
	sa_b.pre_handler = b;
	rc = register_kprw_kprobe(&sa_a);
	if (!rc)
		rc = register_kprw_kprobe(&sa_b);
	return rc;
}

static int sa_race(const char *sym, unsigned int off, long n)
{
	long i, fails = 0;

	sa_off();
	for (i = 0; i < n; i++) {
		init_kp(&sa_a, sym, off);
		sa_a.pre_handler = pre_count;
		sa_a.post_handler = i % 2 ? post_empty : NULL;
		if (register_kprw_kprobe(&sa_a))
			fails++;
		else
			unregister_kprw_kprobe(&sa_a);
	}
	sa_race_fails = fails;
	return 0;
}

/* "static ENTRY MID RET KONLY" */
static int sa_static(char *arg)
{
	char *entry = strsep(&arg, " "), *mid = arg ? strsep(&arg, " ") : NULL;
	char *ret = arg ? strsep(&arg, " ") : NULL, *konly = arg;
	unsigned long off;

	if (!mid || !ret || !konly || kprw_split_offset(mid, &off))
		return -EINVAL;
	sa_off();
	sa_len = 0;
	check_args(entry);
	check_where(mid, off);
	check_kprobe(entry, mid, off);
	check_kretprobe(ret, mid, off, konly);
	return 0;
}

static int sa_show(struct seq_file *m, void *v)
{
	mutex_lock(&sa_lock);
	seq_puts(m, sa_out);
	seq_printf(m, "order %.*s\n", sa_order_n, sa_order);
	seq_printf(m, "race-failures %ld\n", sa_race_fails);
	seq_printf(m, "redirect count-ran %d redirect-ran %d\n", atomic_read(&sa_count_ran),
		   atomic_read(&sa_redirect_ran));
	mutex_unlock(&sa_lock);
	return 0;
}

/* "order|redirect|race SYM+OFF [N]" */
static int sa_live(const char *verb, char *arg)
{
	char *sym = strsep(&arg, " ");
	unsigned long off = 0;
	long n = 0;
	int rc = kprw_split_offset(sym, &off);

	if (!rc && arg)
		rc = kstrtol(arg, 0, &n);
	if (rc)
		return rc;
	strscpy(sa_sym, sym, sizeof(sa_sym));
	sa_order_n = 0;
	atomic_set(&sa_count_ran, 0);
	atomic_set(&sa_redirect_ran, 0);
	if (!strcmp(verb, "order"))
		return sa_two(sa_sym, off, pre_a, pre_b);
	if (!strcmp(verb, "redirect")) {
		sa_redirect_ret = n;
		return sa_two(sa_sym, off, pre_count, pre_redirect);
	}
	if (!strcmp(verb, "race"))
		return sa_race(sa_sym, off, n);
	return -EINVAL;
}

static ssize_t sa_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	static char buf[4 * KSYM_NAME_LEN + 32];    /* (under sa_lock) */
	char *arg, *verb;
	int rc;

	mutex_lock(&sa_lock);
	rc = kprw_command(ubuf, len, buf, sizeof(buf), &verb, &arg);
	if (rc)
		;
	else if (!strcmp(verb, "off"))
		sa_off();
	else if (!arg || !*arg)
		rc = -EINVAL;
	else if (!strcmp(verb, "static"))
		rc = sa_static(arg);
	else
		rc = sa_live(verb, arg);
	mutex_unlock(&sa_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(sa);

static int __init kprewrite_selftest_api_init(void)
{
	kprw_debugfs_add("selftest-api", 0600, NULL, &sa_fops);
	return 0;
}
late_initcall(kprewrite_selftest_api_init);
