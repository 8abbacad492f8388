// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: runs the probes kprewrite baked into this
 * vmlinux after it was linked (see doc/kernel.md).
 *
 *   - reads the probe table the rewriter wrote into the pool (pool.S), checks
 *     every offset, and points each probe's state at its record;
 *   - kprewrite_dispatch(): called by every detour (a direct call, with a
 *     full struct pt_regs built by the detour) counts the hit per CPU and
 *     runs the registered pre_handlers;
 *   - the int3 path: a die notifier on DIE_INT3 (no CONFIG_KPROBES needed)
 *     runs the same, then resumes at the out-of-line copy;
 *   - live control through text_poke(): enable, disable, unoptimize,
 *     optimize, under debugfs /sys/kernel/debug/kprewrite/;
 *   - register_kprw_kprobe() & co. for handlers (include/linux/kprewrite.h).
 *
 * The functions the probed code reaches are noinstr: the rewriter refuses to
 * probe .noinstr.text, and so does the kernel's kprobes.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/debugfs.h>
#include <linux/glob.h>
#include <linux/init.h>
#include <linux/kdebug.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/kallsyms.h>
#include <linux/memory.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/kprewrite.h>
#include <asm/setup.h>         /* kaslr_offset() */
#include <asm/text-patching.h>
#include <asm/ptrace.h>
#include <asm/alternative.h>     /* cpu_wants_rethunk_at() */
#include <asm/nospec-branch.h>   /* x86_return_thunk */
#include <asm/insn.h>

#include "internal.h"    /* struct kprw_point, shared with kretprobe.c */
#include "kprw-core.h"   /* shared with the user runtime: enum code_state, specs, commands, table checks */
#include "site.h"        /* src/arch/x86/site.h: what a site holds in each state */

/* pool.S: the areas the rewriter fills (their names are abi.h's, which the
 * rewriter looks for) */
extern u8 KPRW_KPOOL_TEXT[], KPRW_KPOOL_TEXT_END[];
extern const u8 KPRW_KPOOL_TABLE[], KPRW_KPOOL_TABLE_END[];
extern u8 KPRW_KPOOL_STATE[], KPRW_KPOOL_STATE_END[];
#define pool_text KPRW_KPOOL_TEXT
#define pool_text_end KPRW_KPOOL_TEXT_END
#define pool_table KPRW_KPOOL_TABLE
#define pool_table_end KPRW_KPOOL_TABLE_END
#define pool_state KPRW_KPOOL_STATE
#define pool_state_end KPRW_KPOOL_STATE_END

/* the kernel's own points, then each module's (module.c); the list
 * changes under kprw_lock, the probe paths walk it under RCU */
static struct kprw_set core_set;
LIST_HEAD(kprw_sets);
DEFINE_PER_CPU(struct kprw_point *, kprw_running);   /* the recursion guard */
DEFINE_MUTEX(kprw_lock);            /* live control, registration */
static bool knob_enabled = true, knob_optimization = true;

/* ---------------------------------------------------------------- hits */

/* The hit's handlers; false when it ran none of them: disabled, or missed
 * (then no post_handler runs either, as with the kernel's kprobes).
 * Inlined into the noinstr probe paths: a function of its own would be a
 * function '*' probes, its detour calling back here without end. For the
 * same reason preemption comes back without a reschedule: that would call
 * preempt_schedule_notrace's thunk, which a probe may hold (a reschedule
 * due waits for the next preemption point). */
static __always_inline bool run_handlers(struct kprw_point *pt, struct pt_regs *regs)
{
	struct kprw_kprobe *kp;
	bool ran = false;

	if (READ_ONCE(pt->code) == CODE_DISABLED)
		return false;           /* was in the detour when it was disabled */
	preempt_disable_notrace();
	if (unlikely(__this_cpu_read(kprw_running))) {
		this_cpu_inc(pt->count[1]);
		for (kp = rcu_dereference_raw(pt->handlers); kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
			if (kp->flags & KPRW_FLAG_RETPROBE)
				container_of(kp, struct kprw_kretprobe, kp)->nmissed++;
			else
				kp->nmissed++;
		goto out;
	}
	this_cpu_inc(pt->count[0]);
	ran = true;
	kp = rcu_dereference_raw(pt->handlers);
	if (!kp)
		goto out;
	__this_cpu_write(kprw_running, pt);
	for (; kp; kp = rcu_dereference_raw(KPRW_KP_NEXT(kp)))
		if (!(READ_ONCE(kp->flags) & KPRW_FLAG_DISABLED) && kp->pre_handler)
			kp->pre_handler(kp, regs);
	__this_cpu_write(kprw_running, NULL);
out:
	preempt_enable_no_resched_notrace();
	return ran;
}

/*
 * Every detour calls this directly, with regs a struct pt_regs holding all
 * general registers and the flags; ip, sp, cs, ss and orig_ax are filled
 * here. The detour pops every register back afterwards, so a handler's
 * writes take effect.
 */
noinstr void KPRW_KDISPATCH(struct kprw_state *st, struct pt_regs *regs)   /* kprewrite_dispatch */
{
	struct kprw_point *pt = READ_ONCE(st->rt);

	if (!pt)
		return;                 /* before the runtime started: not counted */
	instrumentation_begin();
	regs->ip = pt->addr;
	regs->sp = (unsigned long)(regs + 1);
	regs->cs = __KERNEL_CS;
	regs->ss = __KERNEL_DS;
	regs->orig_ax = ~0UL;
	run_handlers(pt, regs);
	instrumentation_end();
}
/* for the detours baked into modules (not GPL-only: any module's code may
 * be probed; registering handlers is) */
EXPORT_SYMBOL(KPRW_KDISPATCH);

/* Under kprw_lock, or from a probe path (preemption or interrupts off:
 * a set is freed a grace period after it leaves the list). A search of its
 * own, noinstr: lib's bsearch() and a comparison callback are functions
 * '*' probes, and an int3 probe on one would trap here again. */
static noinstr struct kprw_point *point_at(unsigned long addr)
{
	struct kprw_set *s;

	list_for_each_entry_rcu(s, &kprw_sets, list, true) {
		u32 lo = 0, hi = s->npoints;

		while (lo < hi) {
			u32 mid = lo + (hi - lo) / 2;
			unsigned long a = s->points[mid].addr;

			if (a == addr)
				return &s->points[mid];
			if (a < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return NULL;
}

/* The int3 path: int3 probes, and optimized ones while unoptimized or
 * being patched. Resumes at the out-of-line copy. do_int3() calls it
 * first (integrate.sh): on the die notifier chain it would come after
 * notifiers such as the hardware breakpoints', which '*' probes, and an
 * int3 in one of them would trap again before reaching it, without end. */
noinstr bool kprewrite_int3_handler(struct pt_regs *regs)
{
	struct kprw_point *pt;
	bool ours = false;

	if (user_mode(regs))
		return false;
	instrumentation_begin();
	pt = point_at(regs->ip - 1);
	/* ours while it is not a jmp (a jmp's int3 would be someone else's) */
	if (pt && READ_ONCE(pt->code) != CODE_OPTIMIZED) {
		bool ran;

		regs->ip = pt->addr;
		ran = run_handlers(pt, regs);
		if (regs->ip == pt->addr) {     /* a handler may have sent it elsewhere */
			regs->ip = pt->ool;
			if (ran)                /* a missed hit (recursion) steps no post_handler */
				kprw_post_arm(pt, regs);
		}
		ours = true;
	}
	instrumentation_end();
	return ours;
}

/* The debug trap, hooked once (the kernel's points or a module's,
 * whichever come first; do_int3() calls the int3 path itself): nonzero
 * when it cannot be, and int3 probes then stay disarmed. */
int kprw_traps_hooked(void)
{
	static int rc = 1;

	if (rc == 1) {
		rc = kprw_post_init();
		if (rc)
			pr_err("cannot hook int3 or the debug trap: int3 probes stay disarmed\n");
	}
	return rc;
}

/* ------------------------------------------------------------ patching */

static enum code_state wanted(const struct kprw_point *pt)
{
	return kprw_wanted(knob_enabled, knob_optimization, pt->disabled, pt->unoptimized || pt->npost,
			   pt->verdict == KPRW_OPTIMIZED && pt->detour);
}

/* The bytes of the site in state s. */
static void site_bytes(const struct kprw_point *pt, enum code_state s, u8 *b)
{
	memcpy(b, pt->orig, pt->len);
	if (s == CODE_INT3)
		x86_site_int3(b, pt->orig, pt->len);
	else if (s == CODE_OPTIMIZED)
		x86_site_jump(b, pt->addr, pt->detour, pt->len);   /* (checked at start-up: in reach, long enough) */
}

static void poke(struct kprw_point *pt, unsigned int from, const u8 *b, unsigned int n)
{
	text_poke((void *)(pt->addr + from), b + from, n);
	text_poke_sync();
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

	if (want == have)
		return 0;
	if (pt->pinned)
		return -EBUSY;
#ifdef CONFIG_KPROBES
	/* The kernel's own kprobes patch text too, an optprobe's undoing
	 * later, from a worker: let the pending work finish, and leave a site
	 * alone while one of them is there. */
	wait_for_kprobe_optimizer();
	preempt_disable();
	if (get_kprobe((void *)pt->addr)) {
		preempt_enable();
		pr_err("%s+0x%x (0x%lx): a kprobe of the kernel's is there: not patched\n",
		       pt->name, pt->offset, pt->addr);
		return -EBUSY;
	}
	preempt_enable();
#endif
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
	text_poke((void *)pt->addr, b, pt->len);
	text_poke_sync();
	WRITE_ONCE(pt->code, want);
	mutex_unlock(&text_mutex);
}

static int apply_all(void)
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

/* -------------------------------------------------------- registration */

void kprw_count_miss(const struct kprw_point *pt)
{
	this_cpu_inc(pt->count[1]);
}
NOKPROBE_SYMBOL(kprw_count_miss);

/* Does the code at a start with endbr64 or endbr32 (f3 0f 1e fa/fb), or
 * the 4-byte nop an IBT kernel seals an unused one with at boot (66 0f 1f
 * 00: apply_seal_endbr()), as the kernel's is_endbr() takes them? */
static bool starts_with_endbr(unsigned long a)
{
	u32 v;

	return !copy_from_kernel_nofault(&v, (const void *)a, sizeof(v)) &&
	       ((v & ~0x01000000u) == 0xfa1e0ff3 || v == 0x001f0f66);
}

/* "MOD:SYM" names a module's symbol, as for the kernel's kprobes. As the
 * kernel's arch_adjust_kprobe_addr() does, SYM+0 (or the address) of a
 * function that starts with endbr64 names the point after it, which is
 * where kprewrite put SYM's entry probe (SYM+0x4). */
struct kprw_point *kprw_find_point(const char *sym, unsigned int offset, unsigned long addr)
{
	const char *colon = sym ? strchr(sym, ':') : NULL;
	struct kprw_set *s;
	struct kprw_point *pt;

	if (!sym) {
		pt = point_at(addr);
		return pt || !starts_with_endbr(addr) ? pt : point_at(addr + 4);
	}
	for_each_kprw_point(s, pt) {
		if (colon && (!s->mod || strlen(module_name(s->mod)) != colon - sym ||
			      strncmp(module_name(s->mod), sym, colon - sym)))
			continue;
		if ((pt->offset == offset || (offset == 0 && pt->offset == 4 && starts_with_endbr(pt->addr - 4))) &&
		    strcmp(pt->name, colon ? colon + 1 : sym) == 0)
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

int register_kprw_kprobe(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;

	if (!kp)
		return -EINVAL;
	mutex_lock(&kprw_lock);
	if (KPRW_KP_POINT(kp)) {
		mutex_unlock(&kprw_lock);
		return -EBUSY;
	}
	if (!kp->symbol_name == !kp->addr) {
		mutex_unlock(&kprw_lock);
		return -EINVAL;
	}
	pt = kprw_find_point(kp->symbol_name, kp->offset, (unsigned long)kp->addr);
	if (!pt) {
		mutex_unlock(&kprw_lock);
		return -ENOENT;
	}
	kp->flags &= ~KPRW_FLAG_RETPROBE;
	if (kp->post_handler) {
		int rc = kprw_post_allowed(pt) ? 0 : -EOPNOTSUPP;

		if (!rc) {
			pt->npost++;
			rc = kprw_apply(pt);        /* unoptimized from now on */
			if (rc) {
				pt->npost--;
				kprw_apply(pt);
			}
		}
		if (rc) {
			mutex_unlock(&kprw_lock);
			return rc;
		}
	}
	kprw_attach(kp, pt);
	mutex_unlock(&kprw_lock);
	return 0;
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

/* -------------------------------------------------------------- debugfs */

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
		seq_printf(m, "%016lx  %c  %s+0x%x  %s%s%s  hits %llu  nmissed %llu\n", pt->addr, pt->kind,
			   pt->name, pt->offset, mod, pt->disabled ? "[DISABLED]" : "",
			   pt->code == CODE_OPTIMIZED ? "[OPTIMIZED]" : "", h, n);
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
		if (!kprw_spec_matches(colon ? colon + 1 : spec, spec_len, pt->name, pt->offset, pt->addr))
			continue;
		n++;
		can_jump += pt->verdict == KPRW_OPTIMIZED;
		kprw_ctl_apply(op, &pt->disabled, &pt->unoptimized);
	}
	r = kprw_ctl_result(op, n, can_jump);
	rc = r == KPRW_CTL_NO_MATCH ? -ENOENT : r == KPRW_CTL_CANNOT_JUMP ? -EOPNOTSUPP : apply_all();
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
	rc = apply_all();
	mutex_unlock(&kprw_lock);
	return rc < 0 ? rc : len;
}

KPRW_SHOW_WRITE_FOPS(knob);

/* ------------------------------------------------------------ start-up */

/* KPRW_T_KASLR: where the masks start, from the header */
static size_t kaslr_masks_at(const struct kprw_table *t)
{
	return ALIGN((size_t)t->strings_off + t->strings_size, 4);
}

/* KPRW_T_FOLLOW: where the records start, after the masks if any */
static size_t follow_at(const struct kprw_table *t)
{
	return kaslr_masks_at(t) + (t->flags & KPRW_T_KASLR ? 8 * (size_t)t->nentries : 0);
}

#define FOLLOW_SIZE (sizeof(struct kprw_follow) * KPRW_FOLLOW_PER_ENTRY)

/* NULL when every offset of the table can be followed; else why. */
static const char *table_check(const struct kprw_table *t)
{
	const u8 *base = (const u8 *)t;
	size_t table_size = pool_table_end - pool_table;
	const struct kprw_entry *e = (const void *)(t + 1);
	u32 i;

	/* a kernel's table has no flag but KPRW_T_KASLR and KPRW_T_FOLLOW */
	if (kprw_table_fault(t, KPRW_T_KASLR | KPRW_T_FOLLOW) != KPRW_TF_NONE)
		return "bad magic, unknown version, features this runtime lacks, or entry size";
	if (t->nentries > (table_size - sizeof(*t)) / sizeof(*e) ||
	    t->strings_off > table_size || t->strings_size > table_size - t->strings_off ||
	    (t->strings_size && base[t->strings_off + t->strings_size - 1]))
		return "entries or strings outside the table";
	if ((t->flags & KPRW_T_KASLR) &&
	    kaslr_masks_at(t) + 8 * (size_t)t->nentries > table_size)
		return "the KASLR masks are outside the table";
	if ((t->flags & KPRW_T_FOLLOW) &&
	    follow_at(t) + FOLLOW_SIZE * (size_t)t->nentries > table_size)
		return "the boot-patched sites' records are outside the table";
	if (t->tramp_rel || base + t->state_rel != pool_state ||
	    (u64)t->nentries * sizeof(struct kprw_state) > (u64)(pool_state_end - pool_state))
		return "state outside the pool, or features this runtime lacks";
	for (i = 0; i < t->nentries; i++) {
		unsigned long site = (unsigned long)base + e[i].site_rel;
		const u8 *det = base + e[i].code_rel, *ool = det + e[i].ool_off;
		struct kprw_state *st = (void *)pool_state + i * sizeof(*st);

		/* (no name in a dynamic string table: dynspan 0) */
		if (kprw_entry_faults(&e[i], t->strings_size, 0, false))
			return "an entry has a bad kind, verdict, length, name or original bytes";
		/* a vmlinux has symbols (no name by address), no short jumps, and
		 * its original bytes are in the strings; its return probes' code
		 * is a kprobe's (no hook) */
		if (KPRW_NAME_BY_ADDR(e[i].name_off) || e[i].hook_off ||
		    (e[i].flags & (KPRW_F_JUMP8 | KPRW_F_ORIG_AT_COPY)))
			return "an entry has a feature this runtime lacks";
		if (!core_kernel_text(site) || !core_kernel_text(site + e[i].dcr_len - 1) ||
		    is_kernel_inittext(site) ||
		    (i && site < (unsigned long)base + e[i - 1].site_rel + e[i - 1].dcr_len))
			return "an entry's site is not kernel text (or is init text), or out of order";
		if (ool < pool_text || ool >= pool_text_end ||
		    det < pool_text || det >= pool_text_end)
			return "an entry's detour is outside the pool";
		if (st->rt)
			return "a state names a record already (the image must hold zero there)";
		if (t->flags & KPRW_T_FOLLOW) {
			const struct kprw_follow *fw = (const void *)(base + follow_at(t) + FOLLOW_SIZE * i);
			int k;

			for (k = 0; k < KPRW_FOLLOW_PER_ENTRY; k++)
				if (fw[k].len && (e[i].verdict != KPRW_OPTIMIZED || fw[k].kind > KPRW_FOLLOW_REAIM ||
						  (fw[k].kind == KPRW_FOLLOW_RETURN && fw[k].len != JMP32_INSN_SIZE) ||
						  fw[k].dcr_off + fw[k].len > e[i].dcr_len ||
						  ool + fw[k].copy_off + fw[k].len > pool_text_end))
					return "a boot-patched site's record is outside its DCR or its copy";
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ the sets */

int kprw_set_alloc(struct kprw_set *s, u32 n)
{
	u32 c, i;

	s->nchunks = DIV_ROUND_UP(max(n, 1u), KPRW_CHUNK);
	s->points = kvcalloc(max(n, 1u), sizeof(*s->points), GFP_KERNEL);
	s->chunks = kcalloc(s->nchunks, sizeof(*s->chunks), GFP_KERNEL);
	if (!s->points || !s->chunks)
		goto fail;
	for (c = 0; c < s->nchunks; c++) {
		s->chunks[c] = __alloc_percpu(2 * sizeof(u64) * KPRW_CHUNK, sizeof(u64));
		if (!s->chunks[c])
			goto fail;
	}
	for (i = 0; i < n; i++)
		s->points[i].count = s->chunks[i / KPRW_CHUNK] + 2 * (i % KPRW_CHUNK);
	return 0;
fail:
	kprw_set_free(s);
	return -ENOMEM;
}

void kprw_set_free(struct kprw_set *s)
{
	u32 c;

	for (c = 0; s->chunks && c < s->nchunks; c++)
		free_percpu(s->chunks[c]);
	kfree(s->chunks);
	kvfree(s->points);
	s->chunks = NULL;
	s->points = NULL;
}

void kprw_point_fill(struct kprw_set *s, u32 i, const struct kprw_table *t)
{
	const struct kprw_entry *e = (const void *)(t + 1);
	const char *strings = (const char *)t + t->strings_off;
	struct kprw_point *pt = &s->points[i];

	pt->set = s;
	pt->addr = (unsigned long)t + e[i].site_rel;
	pt->detour = e[i].verdict == KPRW_OPTIMIZED ? (unsigned long)t + e[i].code_rel : 0;
	pt->ool = (unsigned long)t + e[i].code_rel + e[i].ool_off;
	pt->name = strings + e[i].name_off;
	pt->offset = e[i].offset;
	pt->id = i;
	pt->kind = e[i].kind;
	pt->verdict = e[i].verdict;
	pt->len = e[i].dcr_len;
	pt->orig = (const u8 *)strings + e[i].orig_off;
}

/*
 * KPRW_T_KASLR: the rewriter moved the KASLR relocations of pt's DCR to
 * the copy in its detour (the site holds the jump, which KASLR must not
 * touch), so the original bytes in the table hold those fields as linked:
 * pt's become a copy with KASLR's offset added to (plus) or subtracted
 * from (minus, per-cpu references) each, as the decompressor did to the
 * rest of the kernel. Restoring the site (disable, unoptimize) then writes
 * what the kernel would have held.
 */
static void kaslr_fix(struct kprw_point *pt, u8 *to, const u8 *masks)
{
	u32 plus, minus, b;

	memcpy(&plus, masks, 4);
	memcpy(&minus, masks + 4, 4);
	memcpy(to, pt->orig, pt->len);
	for (b = 0; b + 4 <= pt->len; b++) {
		u32 v;

		if (!((plus | minus) & (1u << b)))
			continue;
		memcpy(&v, to + b, 4);
		v = plus & (1u << b) ? v + (u32)kaslr_offset() : v - (u32)kaslr_offset();
		memcpy(to + b, &v, 4);
	}
	pt->orig = to;
}

/*
 * A return site's bytes: what apply_returns() patches a jmp
 * __x86_return_thunk at `at` to, c being its copy as the kernel patched it.
 * Where the kernel says per address (ITS: a ret may stay in the upper half
 * of a cache line only), as it would decide at the site; else the copy's
 * choice, which is the CPU's (ret, or a jmp to the thunk it needs, aimed
 * from the site).
 */
static bool return_site_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len)
{
	s32 rel;

#ifdef KPRW_HAVE_RETHUNK_AT
	if (cpu_wants_rethunk_at((void *)at)) {
		rel = (s32)((unsigned long)x86_return_thunk - (at + JMP32_INSN_SIZE));
		b[0] = JMP32_INSN_OPCODE;
		memcpy(b + 1, &rel, 4);
	} else {
		b[0] = RET_INSN_OPCODE;
		memset(b + 1, INT3_INSN_OPCODE, 4);
	}
	memset(b + JMP32_INSN_SIZE, INT3_INSN_OPCODE, len - JMP32_INSN_SIZE);
	return true;
#else
	if (c[0] == JMP32_INSN_OPCODE) {
		memcpy(&rel, c + 1, 4);
		rel = (s32)((unsigned long)c + JMP32_INSN_SIZE + rel - (at + JMP32_INSN_SIZE));
		b[0] = JMP32_INSN_OPCODE;
		memcpy(b + 1, &rel, 4);
		memcpy(b + JMP32_INSN_SIZE, c + JMP32_INSN_SIZE, len - JMP32_INSN_SIZE);
		return true;
	}
	if (c[0] == RET_INSN_OPCODE) {
		memcpy(b, c, len);
		return true;
	}
	return false;
#endif
}

/* Is insn a relative jmp or jcc (the only branches a KPRW_FOLLOW_REAIM
 * form has: kprewrite checked its every form)? */
static bool rel_jump(const struct insn *insn)
{
	u8 op = insn->opcode.bytes[0];

	return op == JMP32_INSN_OPCODE || op == JMP8_INSN_OPCODE || (op & 0xf0) == 0x70 ||
	       (op == 0x0f && (insn->opcode.bytes[1] & 0xf0) == 0x80);
}

/*
 * An alternative's bytes at `at` (len of them), from its copy c as the
 * kernel patched it: each RIP-relative displacement and each relative jump
 * out of the copy aimed from `at` at the same target. False when one does
 * not decode or does not reach (a rel8 jump out: kprewrite let only rel32
 * ones through, which the kernel keeps so far from their targets).
 */
static bool reaim_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len)
{
	unsigned int off, n;
	struct insn insn;

	memcpy(b, c, len);
	for (off = 0; off < len; off += n) {
		const u8 *from = c + off;
		long target, d;

		if (insn_decode_kernel(&insn, from) < 0 || !insn.length || off + insn.length > len)
			return false;
		n = insn.length;
		if (insn_rip_relative(&insn)) {
			target = (long)from + n + insn.displacement.value;
			d = target - (long)(at + off + n);
			if (d != (s32)d)
				return false;
			memcpy(b + off + insn_offset_displacement(&insn), &(s32){ d }, 4);
		} else if (rel_jump(&insn)) {
			target = (long)from + n + insn.immediate.value;
			if (target >= (long)c && target < (long)c + len)
				continue;   /* within the site: relative to it alike */
			d = target - (long)(at + off + n);
			if (insn.immediate.nbytes == 4 && d == (s32)d)
				memcpy(b + off + insn_offset_immediate(&insn), &(s32){ d }, 4);
			else if (insn.immediate.nbytes == 1 && d == (s8)d)
				b[off + insn_offset_immediate(&insn)] = (u8)d;
			else
				return false;
		}
	}
	return true;
}

/*
 * KPRW_T_FOLLOW: sites the kernel patches once at boot (a return site, an
 * alternative) lay in pt's DCR, and the kernel's tables named their copies
 * in the detour, which the kernel patched instead (before this initcall).
 * The bytes put back on disable or unoptimize are what the kernel would
 * have patched the site to: an alternative's are its copy's (reaim_bytes()
 * where its forms have relative operands), a return site's
 * return_site_bytes(). False when they cannot be made.
 */
static bool follow_fix(struct kprw_point *pt, u8 *to, const struct kprw_follow *fw)
{
	int k;

	if (pt->orig != to)
		memcpy(to, pt->orig, pt->len);
	for (k = 0; k < KPRW_FOLLOW_PER_ENTRY; k++) {
		const u8 *c = (const u8 *)pt->ool + fw[k].copy_off;
		u8 *b = to + fw[k].dcr_off;

		if (!fw[k].len)
			continue;
		if (fw[k].kind == KPRW_FOLLOW_COPY) {
			memcpy(b, c, fw[k].len);
		} else if (fw[k].kind == KPRW_FOLLOW_REAIM) {
			if (!reaim_bytes(b, pt->addr + fw[k].dcr_off, c, fw[k].len))
				return false;
		} else if (!return_site_bytes(b, pt->addr + fw[k].dcr_off, c, fw[k].len)) {
			return false;
		}
	}
	pt->orig = to;
	return true;
}

u32 kprw_set_optimized(const struct kprw_set *s)
{
	u32 i, n = 0;

	for (i = 0; i < s->npoints; i++)
		n += s->points[i].code == CODE_OPTIMIZED;
	return n;
}

static int __init kprewrite_init(void)
{
	const struct kprw_table *t = (const void *)pool_table;
	const char *why;
	u32 i;

	if (kprw_traps_hooked())
		knob_enabled = false;
	kprw_module_init();
	if (t->magic == 0) {
		pr_info("no probes baked into this kernel\n");
		return 0;
	}
	why = t->magic != KPRW_MAGIC ? "bad magic" : table_check(t);
	if (why) {
		pr_err("probe table refused: %s; its %u probes are not armed\n", why, t->nentries);
		return 0;
	}
	if (kprw_set_alloc(&core_set, t->nentries) ||
	    ((t->flags & (KPRW_T_KASLR | KPRW_T_FOLLOW)) &&
	     !(core_set.orig = kcalloc(t->nentries, KPRW_ORIG_MAX, GFP_KERNEL)))) {
		pr_err("out of memory: %u probes not armed\n", t->nentries);
		return -ENOMEM;
	}
	for (i = 0; i < t->nentries; i++) {
		struct kprw_point *pt = &core_set.points[i];

		kprw_point_fill(&core_set, i, t);
		if (t->flags & KPRW_T_KASLR)
			kaslr_fix(pt, core_set.orig + i * KPRW_ORIG_MAX, (const u8 *)t + kaslr_masks_at(t) + 8 * i);
		/* (the kernel patched the copies before this initcall) */
		if ((t->flags & KPRW_T_FOLLOW) &&
		    !follow_fix(pt, core_set.orig + i * KPRW_ORIG_MAX,
				(const void *)((const u8 *)t + follow_at(t) + FOLLOW_SIZE * i))) {
			/* the site keeps its jump, which stays right: the point
			 * is never disabled or unoptimized in its bytes */
			pr_err("%s+0x%x: what the kernel patched the moved site to cannot be put back at 0x%lx: "
			       "the jump stays, enabled, as baked\n", pt->name, pt->offset, pt->addr);
			pt->pinned = true;
		}
		/* the rewriter leaves int3 probes' sites as they were: an int3
		 * met before this notifier existed would oops; armed below */
		pt->code = pt->verdict == KPRW_OPTIMIZED ? CODE_OPTIMIZED : CODE_DISABLED;
	}
	core_set.npoints = t->nentries;
	/* from here on hits count */
	for (i = 0; i < core_set.npoints; i++) {
		struct kprw_state *st = (void *)pool_state + i * sizeof(*st);

		WRITE_ONCE(st->rt, &core_set.points[i]);
	}
	mutex_lock(&kprw_lock);
	list_add_rcu(&core_set.list, &kprw_sets);
	if (apply_all())
		pr_err("some probes could not be armed\n");
	mutex_unlock(&kprw_lock);
	pr_info("%u probes armed (%u optimized)\n", core_set.npoints, kprw_set_optimized(&core_set));
	return 0;
}
/* early, so that boot-time code is counted too */
core_initcall(kprewrite_init);

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
	kprw_debugfs_add("enabled", 0600, &knob_enabled, &knob_fops);
	kprw_debugfs_add("optimization", 0600, &knob_optimization, &knob_fops);
	return 0;
}
fs_initcall(kprewrite_debugfs_init);
