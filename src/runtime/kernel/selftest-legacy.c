// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite self-test of jprobes and fault_handler (CONFIG_KPREWRITE_SELFTEST;
 * make check-kernel), through /sys/kernel/debug/kprewrite/selftest-legacy:
 *
 *   jprobe SYM      a kprw_jprobe on SYM, which must be vfs_read: its handler
 *                   has vfs_read()'s signature; at kdrive's reads of 777
 *                   bytes it notes the arguments, calls __x64_sys_getpid()
 *                   (whose baked point is then missed), and ends in
 *                   kprw_jprobe_return()
 *   jprobe-fault SYM  the same, its handler reading an unmapped page first:
 *                   the jprobe's fault_handler sends it past the read
 *   fault SYM+OFF MODE  a kprw_kprobe whose handler, at kdrive's hits, faults:
 *                   pf  the pre_handler reads an unmapped kernel page (a page
 *                       fault); the fault_handler sends it past the read,
 *                       returns 1
 *                   gp  the same at a non-canonical address (a general
 *                       protection fault)
 *                   post  the post_handler reads the unmapped page
 *                   fixup  the pre_handler reads it with
 *                       copy_from_kernel_nofault(); the fault_handler, the
 *                       documents' example, prints the trap and returns 0:
 *                       the exception-table fixup makes the copy fail
 *   off             unregister everything
 *
 * Reading it gives what was seen. x86-64 (the reads are asm). Not for
 * production kernels.
 */
#define pr_fmt(fmt) "kprewrite selftest: " fmt

#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kprewrite.h>
#include <linux/mutex.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "internal.h"

asmlinkage long __x64_sys_getpid(const struct pt_regs *regs);

static DEFINE_MUTEX(lg_lock);
static struct kprw_jprobe lg_jp, lg_jp2;
static struct kprw_kprobe lg_kp;
static char lg_sym[KSYM_NAME_LEN];
static atomic_long_t lg_jhits, lg_j777, lg_nests, lg_faults, lg_resumed;
static unsigned long lg_buf, lg_count;
static int lg_trapnr = -1, lg_copy_rc = 1, lg_second = 1;
static bool lg_jfault;
enum lg_mode { LG_PF, LG_GP, LG_POST, LG_FIXUP };
static enum lg_mode lg_mode;
/* a page that is never mapped: the guard after a one-page vmalloc */
static u8 *lg_page;
#define LG_UNMAPPED ((const void *)(lg_page + PAGE_SIZE))
#define LG_NONCANONICAL ((const void *)0xdead000000000000UL)
/* where the read goes on when its fault was handled */
static unsigned long lg_resume;

static bool in_kdrive(void)
{
	return !strcmp(current->comm, "kdrive");
}

/* The word at p, or 0 when a fault_handler sent the code past the read. */
static noinline unsigned long read_or_skip(const void *p)
{
	unsigned long v = 0;

	asm volatile("leaq 1f(%%rip), %%rax\n\t"
		     "movq %%rax, %[resume]\n\t"
		     "movq (%[p]), %[v]\n"
		     "1:"
		     : [v] "+r" (v), [resume] "=m" (lg_resume)
		     : [p] "r" (p)
		     : "rax", "memory");
	atomic_long_inc(&lg_resumed);
	return v;
}

/* the fault_handler: past the read (1), or, as the documents' example,
 * a line and 0 (the fault takes its course) */
static int lg_fault(struct kprw_kprobe *kp, struct pt_regs *regs, int trapnr)
{
	atomic_long_inc(&lg_faults);
	lg_trapnr = trapnr;
	if (lg_mode == LG_FIXUP && !lg_jfault) {
		pr_info("fault_handler: p->addr = 0x%px, trap #%d\n", kp->addr, trapnr);
		return 0;
	}
	regs->ip = lg_resume;
	return 1;
}

/* vfs_read()'s signature: the jprobe's handler */
static ssize_t j_vfs_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
{
	atomic_long_inc(&lg_jhits);
	if (in_kdrive() && count == 777) {
		atomic_long_inc(&lg_j777);
		lg_buf = (unsigned long)buf;
		lg_count = count;
		if (lg_jfault)
			read_or_skip(LG_UNMAPPED);
		/* a probe hit here is missed */
		__x64_sys_getpid(NULL);
		atomic_long_inc(&lg_nests);
	}
	kprw_jprobe_return();
	return 0;
}

static int lg_pre(struct kprw_kprobe *kp, struct pt_regs *regs)
{
	u8 b;

	if (!in_kdrive())
		return 0;
	if (lg_mode == LG_PF)
		read_or_skip(LG_UNMAPPED);
	else if (lg_mode == LG_GP)
		read_or_skip(LG_NONCANONICAL);
	else if (lg_mode == LG_FIXUP)
		lg_copy_rc = copy_from_kernel_nofault(&b, LG_UNMAPPED, 1);
	return 0;
}

static void lg_post(struct kprw_kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
	if (in_kdrive() && lg_mode == LG_POST)
		read_or_skip(LG_UNMAPPED);
}

static void lg_off(void)
{
	if (KPRW_KP_POINT(&lg_jp.kp))
		unregister_kprw_jprobe(&lg_jp);
	if (KPRW_KP_POINT(&lg_kp))
		unregister_kprw_kprobe(&lg_kp);
}

static void lg_reset(void)
{
	atomic_long_set(&lg_jhits, 0);
	atomic_long_set(&lg_j777, 0);
	atomic_long_set(&lg_nests, 0);
	atomic_long_set(&lg_faults, 0);
	atomic_long_set(&lg_resumed, 0);
	lg_buf = lg_count = 0;
	lg_trapnr = -1;
	lg_copy_rc = 1;
}

static int lg_jprobe(const char *sym, bool fault)
{
	int rc;

	lg_off();
	lg_reset();
	memset(&lg_jp, 0, sizeof(lg_jp));
	strscpy(lg_sym, sym, sizeof(lg_sym));
	lg_jp.kp.symbol_name = lg_sym;
	lg_jp.kp.fault_handler = lg_fault;
	lg_jp.entry = j_vfs_read;
	lg_jfault = fault;
	rc = register_kprw_jprobe(&lg_jp);
	if (rc)
		return rc;
	/* one jprobe a point */
	memset(&lg_jp2, 0, sizeof(lg_jp2));
	lg_jp2.kp.symbol_name = lg_sym;
	lg_jp2.entry = j_vfs_read;
	lg_second = register_kprw_jprobe(&lg_jp2);
	if (!lg_second)
		unregister_kprw_jprobe(&lg_jp2);
	return 0;
}

static int lg_kprobe(char *spec, const char *mode)
{
	unsigned long off;
	int rc = kprw_split_offset(spec, &off);

	if (rc)
		return rc;
	lg_off();
	lg_reset();
	lg_jfault = false;
	lg_mode = !strcmp(mode, "pf") ? LG_PF : !strcmp(mode, "gp") ? LG_GP :
		  !strcmp(mode, "post") ? LG_POST : !strcmp(mode, "fixup") ? LG_FIXUP : -1;
	if ((int)lg_mode < 0)
		return -EINVAL;
	memset(&lg_kp, 0, sizeof(lg_kp));
	strscpy(lg_sym, spec, sizeof(lg_sym));
	lg_kp.symbol_name = lg_sym;
	lg_kp.offset = off;
	lg_kp.pre_handler = lg_pre;
	lg_kp.post_handler = lg_mode == LG_POST ? lg_post : NULL;
	lg_kp.fault_handler = lg_fault;
	return register_kprw_kprobe(&lg_kp);
}

static int lg_show(struct seq_file *m, void *v)
{
	mutex_lock(&lg_lock);
	seq_printf(m, "jprobe %s hits %ld hits777 %ld buf %lx count %lu nests %ld jp-nmissed %lu second %d\n",
		   KPRW_KP_POINT(&lg_jp.kp) ? "on" : "off", atomic_long_read(&lg_jhits),
		   atomic_long_read(&lg_j777), lg_buf, lg_count, atomic_long_read(&lg_nests), lg_jp.kp.nmissed,
		   lg_second);
	seq_printf(m, "fault %s faults %ld trapnr %d resumed %ld nmissed %lu copy-rc %d\n",
		   KPRW_KP_POINT(&lg_kp) ? "on" : "off", atomic_long_read(&lg_faults), lg_trapnr,
		   atomic_long_read(&lg_resumed), lg_kp.nmissed, lg_copy_rc);
	mutex_unlock(&lg_lock);
	return 0;
}

static ssize_t lg_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[KSYM_NAME_LEN + 32], *arg, *verb, *sym;
	int rc;

	rc = kprw_command(ubuf, len, buf, sizeof(buf), &verb, &arg);
	if (rc)
		return rc;
	sym = arg ? strsep(&arg, " ") : NULL;
	mutex_lock(&lg_lock);
	if (!strcmp(verb, "off"))
		lg_off();
	else if (!sym || !*sym || !lg_page)
		rc = -EINVAL;
	else if (!strcmp(verb, "jprobe") || !strcmp(verb, "jprobe-fault"))
		rc = lg_jprobe(sym, !strcmp(verb, "jprobe-fault"));
	else if (!strcmp(verb, "fault") && arg)
		rc = lg_kprobe(sym, arg);
	else
		rc = -EINVAL;
	mutex_unlock(&lg_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(lg);

static int __init kprewrite_selftest_legacy_init(void)
{
	lg_page = vmalloc(PAGE_SIZE);
	kprw_debugfs_add("selftest-legacy", 0600, NULL, &lg_fops);
	return 0;
}
late_initcall(kprewrite_selftest_legacy_init);
