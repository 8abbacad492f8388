// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: /sys/kernel/debug/kprewrite/ (doc/kernel.md):
 * list, profile, control, enabled, optimization; the self-tests add theirs.
 * The formats are the user runtime's control directory's.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"

static void stats(const struct kprw_point *pt, u64 *h, u64 *m)
{
	int cpu;

	*h = *m = 0;
	for_each_possible_cpu(cpu) {
		*h += per_cpu_ptr(pt->count, cpu)[0];
		*m += per_cpu_ptr(pt->count, cpu)[1];
	}
}

/* "[MODULE] " after a module's symbol, as kallsyms names it */
static void module_tag(const struct kprw_point *pt, char *buf, size_t size)
{
	buf[0] = 0;
	if (pt->set->mod)
		snprintf(buf, size, "[%s] ", module_name(pt->set->mod));
}

/* Like /sys/kernel/debug/kprobes/list, with the counts after it (the
 * user runtime's format). */
static int list_show(struct seq_file *m, void *v)
{
	char mod[MODULE_NAME_LEN + 4];
	struct kprw_set *s;
	struct kprw_point *pt;
	u64 h, n;

	mutex_lock(&kprw_lock);
	for_each_kprw_point(s, pt) {
		stats(pt, &h, &n);
		module_tag(pt, mod, sizeof(mod));
		/* (a point past ftrace's call: where the API names it, and
		 * [FTRACE] as the kernel's list marks its kprobes on ftrace) */
		seq_printf(m, "%016lx  %c  %s+0x%x  %s%s%s%s  hits %llu  nmissed %llu\n", kprw_point_api(pt),
			   pt->kind, pt->name, pt->offset, mod, pt->disabled ? "[DISABLED]" : "",
			   pt->code == CODE_OPTIMIZED ? "[OPTIMIZED]" : "", pt->gap ? "[FTRACE]" : "", h, n);
	}
	mutex_unlock(&kprw_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(list);

/* Like kprobe_profile: name, hits, misses. */
static int profile_show(struct seq_file *m, void *v)
{
	char name[KSYM_NAME_LEN + MODULE_NAME_LEN + 20], mod[MODULE_NAME_LEN + 4];
	struct kprw_set *s;
	struct kprw_point *pt;
	u64 h, n;

	mutex_lock(&kprw_lock);
	for_each_kprw_point(s, pt) {
		stats(pt, &h, &n);
		module_tag(pt, mod, sizeof(mod));
		snprintf(name, sizeof(name), "%s+0x%x %s", pt->name, pt->offset, mod);
		seq_printf(m, "  %-44s %15llu %15llu\n", strim(name), h, n);
	}
	mutex_unlock(&kprw_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(profile);

int kprw_command(const char __user *ubuf, size_t len, char *buf, size_t size, char **verb, char **arg)
{
	if (len >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (verb) {
		*arg = strim(buf);
		*verb = strsep(arg, " ");
	}
	return 0;
}

int kprw_split_offset(char *spec, unsigned long *off)
{
	char *plus = strchr(spec, '+');

	*off = 0;
	if (!plus)
		return 0;
	*plus = 0;
	return kstrtoul(plus + 1, 0, off);
}

/* "enable|disable|optimize|unoptimize SPEC" */
static ssize_t control_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char buf[KSYM_NAME_LEN + 32];
	const char *spec;
	size_t spec_len, n = 0, can_jump = 0;
	enum kprw_op op;
	enum kprw_ctl_result r;
	struct kprw_set *s;
	struct kprw_point *pt;
	const char *colon;
	size_t mod_len = 0;
	int rc;

	rc = kprw_command(ubuf, len, buf, sizeof(buf), NULL, NULL);
	if (rc)
		return rc;
	if (!kprw_ctl_parse(buf, len, &op, &spec, &spec_len))
		return -EINVAL;
	/* MOD:SPEC: only module MOD's points */
	colon = memchr(spec, ':', spec_len);
	if (colon) {
		mod_len = colon - spec;
		spec_len -= mod_len + 1;
	}
	mutex_lock(&kprw_lock);
	for_each_kprw_point(s, pt) {
		if (colon && (!s->mod || strlen(module_name(s->mod)) != mod_len ||
			      strncmp(module_name(s->mod), spec, mod_len)))
			continue;
		if (!kprw_spec_matches(colon ? colon + 1 : spec, spec_len, pt->name, pt->offset, kprw_point_api(pt)))
			continue;
		n++;
		can_jump += pt->verdict == KPRW_OPTIMIZED;
		kprw_ctl_apply(op, &pt->disabled, &pt->unoptimized);
	}
	r = kprw_ctl_result(op, n, can_jump);
	rc = r == KPRW_CTL_NO_MATCH ? -ENOENT : r == KPRW_CTL_CANNOT_JUMP ? -EOPNOTSUPP : kprw_apply_all();
	mutex_unlock(&kprw_lock);
	return rc < 0 ? rc : len;
}

static int control_show(struct seq_file *m, void *v)
{
	seq_puts(m, "enable|disable|optimize|unoptimize [MOD:]0xADDR|SYM+OFF|SYM-GLOB\n");
	return 0;
}

KPRW_SHOW_WRITE_FOPS(control);

/* `enabled` arms or disarms every point (each keeps its own state);
 * `optimization` 0 unoptimizes every point. */
static int knob_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%d\n", *(bool *)m->private);
	return 0;
}

static ssize_t knob_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	bool *knob = ((struct seq_file *)f->private_data)->private, v;
	int rc = kstrtobool_from_user(ubuf, len, &v);

	if (rc)
		return rc;
	mutex_lock(&kprw_lock);
	*knob = v;
	rc = kprw_apply_all();
	mutex_unlock(&kprw_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(knob);

/* debugfs registers itself at core_initcall too: the files come later */
static struct dentry *debugfs_dir;

void kprw_debugfs_add(const char *name, umode_t mode, void *data, const struct file_operations *fops)
{
	debugfs_create_file(name, mode, debugfs_dir, data, fops);
}

static int __init kprewrite_debugfs_init(void)
{
	debugfs_dir = debugfs_create_dir("kprewrite", NULL);
	kprw_debugfs_add("list", 0400, NULL, &list_fops);
	kprw_debugfs_add("profile", 0400, NULL, &profile_fops);
	kprw_debugfs_add("control", 0600, NULL, &control_fops);
	kprw_debugfs_add("enabled", 0600, &kprw_knob_enabled, &knob_fops);
	kprw_debugfs_add("optimization", 0600, &kprw_knob_optimization, &knob_fops);
	return 0;
}
fs_initcall(kprewrite_debugfs_init);
