// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: register_kprw_kprobe() & co.
 * (include/linux/kprewrite.h): handlers attached to the points baked into
 * the kernel and its modules. Return probes are kretprobe.c's.
 *
 * Where the runtime provides the kernel's own API (no CONFIG_KPROBES), a
 * caller must see what kernel/kprobes.c would do, so registration follows
 * its steps and answers: _kprobe_addr() (the address from symbol_name or
 * addr, plus offset, by kallsyms; an entry past endbr64), the
 * re-registration check, the flags the caller may set, the text and
 * instruction-boundary checks. Then, where the kernel would plant a
 * breakpoint, the point must have been baked (-ENOENT otherwise).
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/kprewrite.h>

#include "internal.h"

/* where a kprobe whose module went stays registered (never on any list) */
struct kprw_point kprw_gone_point;

/* The point named SYM+OFF in the tables ("MOD:SYM" a module's), for a
 * symbol kallsyms does not resolve to it (a static function whose name
 * another has too). SYM+0 of a function whose entry probe kprewrite put
 * past its first bytes (x86: endbr64, SYM+0x4) names that point. */
static struct kprw_point *point_named(const char *sym, unsigned int offset)
{
	const char *colon = strchr(sym, ':');
	struct kprw_set *s;
	struct kprw_point *pt;

	for_each_kprw_point(s, pt) {
		if (colon && (!s->mod || strlen(module_name(s->mod)) != colon - sym ||
			      strncmp(module_name(s->mod), sym, colon - sym)))
			continue;
		if (strcmp(pt->name, colon ? colon + 1 : sym))
			continue;
		if (pt->offset == offset ||
		    (offset == 0 && pt->offset && pt->offset == kprw_arch_entry_gap(kprw_point_api(pt) - pt->offset)))
			return pt;
	}
	return NULL;
}

/*
 * Where kp is, as the kernel's _kprobe_addr() resolves it: symbol_name
 * (by kallsyms, "MOD:SYM" too) or addr, plus offset; an address at a
 * function's start that kprewrite's entry probe is past (endbr64) is that
 * point, as arch_adjust_kprobe_addr() has it. *entry: at the function's
 * entry. 0, -EINVAL (both or neither given), -ENOENT (no such symbol, or
 * the address is in none).
 */
int kprw_resolve(const struct kprw_kprobe *kp, unsigned long *addr, bool *entry)
{
	unsigned long a, size, off;
	unsigned int gap;

	if (!kp->symbol_name == !kp->addr)
		return -EINVAL;
	a = kp->symbol_name ? kallsyms_lookup_name(kp->symbol_name) : (unsigned long)kp->addr;
	if (!a)
		return -ENOENT;
	a += kp->offset;
	if (!kallsyms_lookup_size_offset(a, &size, &off))
		return -ENOENT;
	gap = kprw_arch_entry_gap(a - off);
	*entry = off == 0 || (gap && off == gap);
	*addr = off == 0 ? a + gap : a;
	return 0;
}

#ifdef CONFIG_KPREWRITE_KPROBES_API
/* kernel/kprobes.c's, which kprobe_events (kernel/trace/trace_kprobe.c)
 * asks: 0 where sym+offset (or addr) is a function's entry, -EINVAL where
 * it is not (or both or neither are given), -ENOENT where no such symbol */
int kprobe_on_func_entry(kprobe_opcode_t *addr, const char *sym, unsigned long offset)
{
	struct kprobe kp = { .addr = addr, .symbol_name = sym, .offset = offset };
	unsigned long a;
	bool entry;
	int rc = kprw_resolve(&kp, &a, &entry);

	return rc ? rc : entry ? 0 : -EINVAL;
}

/* the kernel's __weak default: kallsyms (offset not folded in) */
kprobe_opcode_t *kprobe_lookup_name(const char *name, unsigned int offset)
{
	return (kprobe_opcode_t *)kallsyms_lookup_name(name);
}

/* kernel/kprobes.c's: the kprobe whose pre_handler runs on this CPU, in
 * this context (fault.c's note), or NULL. A BPF kprobe program's
 * bpf_get_func_ip() asks it, for kp->addr (a function's entry only). */
struct kprobe *kprobe_running(void)
{
	struct kprw_cur *c = raw_cpu_ptr(&kprw_cur);

	return c->ctx == kprw_ctx() ? READ_ONCE(c->kp) : NULL;
}
NOKPROBE_SYMBOL(kprobe_running);
#endif

/* Is addr the start of an instruction? Decoded from its function's start,
 * as the kernel's can_probe() does, a baked site's instructions from its
 * original bytes (the site may hold a jump or an int3). */
static bool insn_boundary(unsigned long addr)
{
	unsigned long size, off, a;
	u8 buf[KPRW_ARCH_INSN_MAX];

	if (!kallsyms_lookup_size_offset(addr, &size, &off))
		return false;
	for (a = addr - off; a < addr; ) {
		struct kprw_point *pt = kprw_point_at(a);
		unsigned int i = 0;
		int n;

		if (pt) {
			for (; i < pt->len && a + i < addr; i += n) {
				n = kprw_arch_insn_len(pt->orig + i, pt->len - i);
				if (n <= 0)
					return false;
			}
			a += i;
			continue;
		}
		if (copy_from_kernel_nofault(buf, (void *)a, sizeof(buf)))
			return false;
		n = kprw_arch_insn_len(buf, sizeof(buf));
		if (n <= 0)
			return false;
		a += n;
	}
	return a == addr;
}

static bool registered(const struct kprw_kprobe *kp)
{
	return KPRW_KP_POINT(kp) != NULL;
}

/* Is addr kernel or module code (the kernel's check_kprobe_address_safe())? */
static bool is_code(unsigned long addr)
{
	bool code;

	if (core_kernel_text(addr))
		return true;
	preempt_disable();
	code = __module_text_address(addr) != NULL;
	preempt_enable();
	return code;
}

/* Does kp, enabled, make its point run on the int3 path (a post_handler's
 * step, a jprobe's handler, which only a trap can send the code to)? */
static bool needs_trap(const struct kprw_kprobe *kp)
{
	return kp->post_handler || kprw_is_jprobe(kp);
}

/* Under kprw_lock: pt's jprobe, if it has one */
static bool has_jprobe(struct kprw_point *pt)
{
	struct kprw_kprobe *kp;

	for (kp = rcu_dereference_protected(pt->handlers, lockdep_is_held(&kprw_lock)); kp;
	     kp = rcu_dereference_protected(KPRW_KP_NEXT(kp), 1))
		if (kprw_is_jprobe(kp))
			return true;
	return false;
}

/*
 * Under kprw_lock: register_kprobe()'s steps up to planting the probe, on
 * kp: its point in *ptp. -EINVAL, -ENOENT, -EILSEQ as the kernel's (and
 * -ENOENT where no point was baked). kp->addr, flags and nmissed are set
 * as the kernel sets them, whether it fails later or not.
 */
int kprw_kprobe_place(struct kprw_kprobe *kp, struct kprw_point **ptp)
{
	unsigned long addr;
	bool entry;
	int rc = kprw_resolve(kp, &addr, &entry);

	if (rc)
		return rc;
	kp->addr = (void *)addr;
	if (registered(kp))
		return -EINVAL;
	kp->flags &= KPRW_FLAG_DISABLED;        /* all a caller may set */
	kp->nmissed = 0;
	if (!is_code(addr))
		return -EINVAL;
	if (entry)
		kp->flags |= KPRW_FLAG_ON_FUNC_ENTRY;
	if (!insn_boundary(addr))
		return -EILSEQ;
	/* a point past ftrace's call is the call's: SYM+0 */
	*ptp = kprw_point_at(addr);
	if (*ptp && (*ptp)->gap)
		*ptp = NULL;
	if (!*ptp && entry) {
		*ptp = kprw_point_at(addr + KPRW_ARCH_FENTRY_LEN);
		if (*ptp && !(*ptp)->gap)
			*ptp = NULL;
	}
	if (!*ptp && kp->symbol_name)
		*ptp = point_named(kp->symbol_name, kp->offset);
	return *ptp ? 0 : -ENOENT;
}

/* Under kprw_lock: what enabled kp asks of pt (the int3 path for a
 * post_handler) is given, or taken back (0, or why not: nothing changed). */
static int trap_get(struct kprw_point *pt)
{
	int rc;

	pt->ntrap++;
	rc = kprw_apply(pt);        /* unoptimized from now on */
	if (rc) {
		pt->ntrap--;
		kprw_apply(pt);
	}
	return rc;
}

static void trap_put(struct kprw_point *pt)
{
	if (!--pt->ntrap)
		kprw_apply(pt);     /* optimized again, if it may be */
}

int kprw_register(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;
	int rc;

	mutex_lock(&kprw_lock);
	rc = kprw_kprobe_place(kp, &pt);
	if (!rc && kp->post_handler && !kprw_post_allowed(pt))
		rc = -EOPNOTSUPP;
	if (!rc && kprw_is_jprobe(kp) && has_jprobe(pt))
		rc = -EEXIST;       /* one jprobe a point, as the kernel had it */
	if (!rc && needs_trap(kp) && !(kp->flags & KPRW_FLAG_DISABLED))
		rc = trap_get(pt);
	if (!rc)
		kprw_attach(kp, pt);
	mutex_unlock(&kprw_lock);
	return rc;
}

int register_kprw_kprobe(struct kprw_kprobe *kp)
{
	if (!kp)
		return -EINVAL;     /* (the kernel's oopses) */
	return kprw_register(kp);
}
EXPORT_SYMBOL_GPL(register_kprw_kprobe);

/* Newest first, as the kernel's add_new_kprobe() puts a kprobe on an
 * address; a jprobe last, as its kernel put one (it sends the code away:
 * the others run before). */
void kprw_attach(struct kprw_kprobe *kp, struct kprw_point *pt)
{
	struct kprw_kprobe __rcu **pp = &pt->handlers;

	KPRW_KP_POINT(kp) = pt;
	kp->addr = (void *)kprw_point_api(pt);
	if (kprw_is_jprobe(kp))
		while (rcu_access_pointer(*pp))
			pp = &KPRW_KP_NEXT(rcu_dereference_protected(*pp, lockdep_is_held(&kprw_lock)));
	RCU_INIT_POINTER(KPRW_KP_NEXT(kp), rcu_dereference_protected(*pp, lockdep_is_held(&kprw_lock)));
	rcu_assign_pointer(*pp, kp);
}

void kprw_detach(struct kprw_kprobe *kp)
{
	struct kprw_point *pt = KPRW_KP_POINT(kp);
	struct kprw_kprobe __rcu **pp;

	for (pp = &pt->handlers; pt != &kprw_gone_point && rcu_access_pointer(*pp); ) {
		struct kprw_kprobe *k = rcu_dereference_protected(*pp, lockdep_is_held(&kprw_lock));

		if (k == kp) {
			rcu_assign_pointer(*pp, rcu_dereference_protected(KPRW_KP_NEXT(k), 1));
			break;
		}
		pp = &KPRW_KP_NEXT(k);
	}
	KPRW_KP_POINT(kp) = NULL;
}

/* Under kprw_lock: pt's module goes; its kprobes stay registered, gone
 * (as the kernel's), and no longer run once a grace period has passed. */
void kprw_point_gone(struct kprw_point *pt)
{
	struct kprw_kprobe *kp;

	for (kp = rcu_dereference_protected(pt->handlers, lockdep_is_held(&kprw_lock)); kp;
	     kp = rcu_dereference_protected(KPRW_KP_NEXT(kp), 1)) {
		KPRW_KP_POINT(kp) = &kprw_gone_point;
		kp->flags |= KPRW_FLAG_GONE;
	}
}

/* Under kprw_lock: kp (a kprobe's, not a kretprobe's) leaves its point;
 * false when it was not registered. */
static bool kprobe_leave(struct kprw_kprobe *kp)
{
	struct kprw_point *pt = KPRW_KP_POINT(kp);

	if (!pt || kprw_is_kret(kp))
		return false;
	kprw_detach(kp);
	if (pt != &kprw_gone_point && needs_trap(kp) && !(kp->flags & KPRW_FLAG_DISABLED))
		trap_put(pt);
	return true;
}

void unregister_kprw_kprobes(struct kprw_kprobe **kps, int num)
{
	int i;

	if (!kps || num <= 0)
		return;
	mutex_lock(&kprw_lock);
	for (i = 0; i < num; i++)
		if (kps[i] && !kprw_is_kret(kps[i]) && !kprobe_leave(kps[i]))
			kps[i]->addr = NULL;    /* not registered: as the kernel does */
	mutex_unlock(&kprw_lock);
	/* handlers run with preemption off (or in the int3 trap): a grace
	 * period ends every run that could still see them */
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(unregister_kprw_kprobes);

void unregister_kprw_kprobe(struct kprw_kprobe *kp)
{
	unregister_kprw_kprobes(&kp, 1);
}
EXPORT_SYMBOL_GPL(unregister_kprw_kprobe);

int register_kprw_kprobes(struct kprw_kprobe **kps, int num)
{
	int i, rc;

	if (!kps || num <= 0)
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

/* As the kernel's: a disabled kprobe runs no handler and its point is
 * disarmed of what it asked (here: a post_handler's int3 path); a gone one
 * cannot be enabled. */
int enable_kprw_kprobe(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;
	int rc = 0;

	if (!kp)
		return -EINVAL;
	mutex_lock(&kprw_lock);
	pt = KPRW_KP_POINT(kp);
	if (!pt || pt == &kprw_gone_point)
		rc = -EINVAL;
	else if (kp->flags & KPRW_FLAG_DISABLED) {
		if (needs_trap(kp))
			rc = trap_get(pt);
		if (!rc)
			WRITE_ONCE(kp->flags, kp->flags & ~KPRW_FLAG_DISABLED);
	}
	mutex_unlock(&kprw_lock);
	return rc;
}
EXPORT_SYMBOL_GPL(enable_kprw_kprobe);

int disable_kprw_kprobe(struct kprw_kprobe *kp)
{
	struct kprw_point *pt;
	int rc = 0;

	if (!kp)
		return -EINVAL;
	mutex_lock(&kprw_lock);
	pt = KPRW_KP_POINT(kp);
	if (!pt)
		rc = -EINVAL;
	else if (pt != &kprw_gone_point && !(kp->flags & KPRW_FLAG_DISABLED)) {
		WRITE_ONCE(kp->flags, kp->flags | KPRW_FLAG_DISABLED);
		if (needs_trap(kp))
			trap_put(pt);
	}
	mutex_unlock(&kprw_lock);
	return rc;
}
EXPORT_SYMBOL_GPL(disable_kprw_kprobe);
