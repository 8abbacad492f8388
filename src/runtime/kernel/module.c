// SPDX-License-Identifier: GPL-2.0
/*
 * Probes baked into loadable modules (kprewrite --kernel MODULE.ko, see
 * doc/kernel.md): the module loader finds the module's probe table
 * (struct module's kprw_table, section .kprewrite.table); when the module
 * comes, its table is checked, its sites' bytes as the loader made them
 * are kept as the original bytes (the table's, but for the bytes the
 * loader's relocations wrote), and its points join the kernel's; when it
 * goes, they leave, and kprobes registered on them are gone, as with the
 * kernel's kprobes.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "internal.h"
#include "kprw-core.h"

#ifdef CONFIG_MODULES

/* Is [addr, addr + len) in mod's core text? */
static bool core_text(const struct module *mod, unsigned long addr, size_t len)
{
	bool ok;

	preempt_disable();      /* __module_text_address's rule */
	ok = len && __module_text_address(addr) == mod && __module_text_address(addr + len - 1) == mod &&
	     within_module_core(addr, mod) && within_module_core(addr + len - 1, mod);
	preempt_enable();
	return ok;
}

/* The masks of the sites' relocated bytes: after the strings. */
static const u32 *masks_of(const struct kprw_table *t)
{
	return (const void *)((const u8 *)t + ALIGN((size_t)t->strings_off + t->strings_size, 4));
}

/* NULL when every offset of mod's table can be followed; else why. */
static const char *table_check(const struct module *mod, const struct kprw_table *t, size_t size)
{
	const u8 *base = (const u8 *)t;
	const struct kprw_entry *e = (const void *)(t + 1);
	unsigned long state;
	size_t masks;
	u32 i;

	if (size < sizeof(*t) || !IS_ALIGNED((unsigned long)t, 8))
		return "smaller than its header, or misaligned";
	if (t->magic == KPRW_MAGIC && (t->flags & KPRW_T_EVENTS))
		return "it defines events (fetch-args), which are user-space only for now";
	if (kprw_table_fault(t, KPRW_T_MODULE) != KPRW_TF_NONE || !(t->flags & KPRW_T_MODULE))
		return "bad magic, unknown version, features this runtime lacks, or entry size";
	if (t->nentries > (size - sizeof(*t)) / sizeof(*e) || t->nfixups ||
	    t->strings_off > size || t->strings_size > size - t->strings_off ||
	    (t->strings_size && base[t->strings_off + t->strings_size - 1]))
		return "entries or strings outside the table";
	masks = ALIGN((size_t)t->strings_off + t->strings_size, 4);
	if (masks > size || (size - masks) / 4 < t->nentries)
		return "relocation masks outside the table";
	state = (unsigned long)base + t->state_rel;
	if (t->tramp_rel || (t->nentries && (!within_module_core(state, mod) ||
	    !within_module_core(state + t->nentries * sizeof(struct kprw_state) - 1, mod))))
		return "state outside the module, or features this runtime lacks";
	for (i = 0; i < t->nentries; i++) {
		unsigned long site = (unsigned long)base + e[i].site_rel;
		unsigned long det = (unsigned long)base + e[i].code_rel, ool = det + e[i].ool_off;
		const struct kprw_state *st = (const void *)(state + i * sizeof(*st));

		if (kprw_entry_faults(&e[i], t->strings_size, 0, false))
			return "an entry has a bad kind, verdict, length, name or original bytes";
		if (KPRW_NAME_BY_ADDR(e[i].name_off) || e[i].hook_off ||
		    (e[i].flags & (KPRW_F_JUMP8 | KPRW_F_ORIG_AT_COPY)))
			return "an entry has a feature this runtime lacks";
		if (!core_text(mod, site, e[i].dcr_len))
			return "an entry's site is not the module's core text";
		if (!core_text(mod, det, 1) || !core_text(mod, ool, 1))
			return "an entry's code is not the module's core text";
		if (st->rt)
			return "a state names a record already (the module must hold zero there)";
	}
	return NULL;
}

static int cmp_point(const void *a, const void *b)
{
	const struct kprw_point *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void set_free(struct kprw_set *s)
{
	kprw_set_free(s);
	kfree(s->orig);
	kfree(s);
}

static void module_coming(struct module *mod)
{
	const struct kprw_table *t = mod->kprw_table;
	struct kprw_set *s;
	const char *why;
	const u32 *masks;
	u32 i, b;

	if (!t)
		return;
	why = table_check(mod, t, mod->kprw_table_size);
	if (why) {
		pr_err("%s: probe table refused: %s; its probes are not armed\n", mod->name, why);
		return;
	}
	if (!t->nentries)
		return;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s || kprw_set_alloc(s, t->nentries) || !(s->orig = kcalloc(t->nentries, KPRW_ORIG_MAX, GFP_KERNEL))) {
		pr_err("%s: out of memory: %u probes not armed\n", mod->name, t->nentries);
		if (s)
			set_free(s);
		return;
	}
	s->mod = mod;
	s->npoints = t->nentries;
	masks = masks_of(t);
	for (i = 0; i < t->nentries; i++) {
		struct kprw_point *pt = &s->points[i];
		u8 *loaded = s->orig + i * KPRW_ORIG_MAX;

		kprw_point_fill(s, i, t);
		memcpy(loaded, (void *)pt->addr, pt->len);
		for (b = 0; b < pt->len; b++)
			if (!(masks[i] & (1u << b)) && loaded[b] != pt->orig[b]) {
				pr_err("%s: %s+0x%x: the code is not what the probe table says: its probes are not armed\n",
				       mod->name, pt->name, pt->offset);
				set_free(s);
				return;
			}
		pt->orig = loaded;
		pt->code = CODE_DISABLED;       /* the site as loaded */
	}
	/* in the loader's order (the table's is the file's): lookups bisect;
	 * a point's id stays its entry's, which its state and counters are */
	sort(s->points, s->npoints, sizeof(*s->points), cmp_point, NULL);
	for (i = 1; i < s->npoints; i++)
		if (s->points[i].addr < s->points[i - 1].addr + s->points[i - 1].len) {
			pr_err("%s: probe table refused: sites overlap; its probes are not armed\n", mod->name);
			set_free(s);
			return;
		}
	for (i = 0; i < s->npoints; i++) {
		struct kprw_state *st = (void *)((unsigned long)t + t->state_rel + s->points[i].id * sizeof(*st));

		WRITE_ONCE(st->rt, &s->points[i]);
	}
	mutex_lock(&kprw_lock);
	list_add_tail_rcu(&s->list, &kprw_sets);
	for (i = 0; i < s->npoints; i++)
		kprw_arm_fresh(&s->points[i]);
	mutex_unlock(&kprw_lock);
	pr_info("%s: %u probes armed (%u optimized)\n", mod->name, s->npoints, kprw_set_optimized(s));
}

static void module_going(struct module *mod)
{
	struct kprw_set *s, *found = NULL;
	struct kprw_point *pt;
	struct kprw_kprobe *kp;

	mutex_lock(&kprw_lock);
	list_for_each_entry(s, &kprw_sets, list)
		if (s->mod == mod) {
			found = s;
			break;
		}
	if (!found) {
		mutex_unlock(&kprw_lock);
		return;
	}
	list_del_rcu(&found->list);
	for (pt = found->points; pt < found->points + found->npoints; pt++)
		kprw_point_gone(pt);
	/* no probe path sees the set after this (registration waits on the
	 * lock: the handler chains stay as they are) */
	synchronize_rcu();
	for (pt = found->points; pt < found->points + found->npoints; pt++)
		for (kp = rcu_dereference_protected(pt->handlers, 1); kp; kp = rcu_dereference_protected(KPRW_KP_NEXT(kp), 1))
			if (kprw_is_kret(kp))
				kprw_kret_gone(kp);
	mutex_unlock(&kprw_lock);
	set_free(found);
}

static int module_notify(struct notifier_block *nb, unsigned long val, void *data)
{
	if (val == MODULE_STATE_COMING)
		module_coming(data);
	else if (val == MODULE_STATE_GOING)
		module_going(data);
	return NOTIFY_DONE;
}

static struct notifier_block module_nb = {
	.notifier_call = module_notify,
};

void kprw_module_init(void)
{
	if (register_module_notifier(&module_nb))
		pr_err("cannot follow modules: probes baked into modules stay disarmed\n");
}

#else
void kprw_module_init(void)
{
}
#endif
