// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: start-up (core_initcall). Reads the probe table
 * the rewriter wrote into the pool (pool.S), checks every offset, makes the
 * kernel's points (a set; module.c adds one a module), fixes their original
 * bytes for what the kernel did at boot (KASLR, the sites it patched), points
 * each probe's state at its record and arms them.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/kallsyms.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "internal.h"

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
DEFINE_MUTEX(kprw_lock);            /* live control, registration */

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

/* NULL when entry i's offsets can be followed; else why. */
static const char *entry_check(const struct kprw_table *t, u32 i)
{
	const u8 *base = (const u8 *)t;
	const struct kprw_entry *e = (const void *)(t + 1);
	unsigned long site = (unsigned long)base + e[i].site_rel;
	const u8 *det = base + e[i].code_rel, *ool = det + e[i].ool_off;
	struct kprw_state *st = (void *)pool_state + i * sizeof(*st);
	int k;

	/* (no name in a dynamic string table: dynspan 0) */
	if (kprw_entry_faults(&e[i], t->strings_size, 0, false))
		return "an entry has a bad kind, verdict, length, name or original bytes";
	/* a vmlinux has symbols (no KPRW_NAME_FDE), no short jumps, and
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

		for (k = 0; k < KPRW_FOLLOW_PER_ENTRY; k++)
			if (fw[k].len && (e[i].verdict != KPRW_OPTIMIZED || fw[k].kind > KPRW_FOLLOW_REAIM ||
					  (fw[k].kind == KPRW_FOLLOW_RETURN && fw[k].len != KPRW_ARCH_RETURN_SITE_LEN) ||
					  fw[k].dcr_off + fw[k].len > e[i].dcr_len ||
					  ool + fw[k].copy_off + fw[k].len > pool_text_end))
				return "a boot-patched site's record is outside its DCR or its copy";
	}
	return NULL;
}

/* NULL when every offset of the table can be followed; else why. */
static const char *table_check(const struct kprw_table *t)
{
	const u8 *base = (const u8 *)t;
	size_t table_size = pool_table_end - pool_table;
	const struct kprw_entry *e = (const void *)(t + 1);
	const char *why;
	u32 i;

	/* a kernel's table has no flag but KPRW_T_KASLR and KPRW_T_FOLLOW */
	if (t->magic == KPRW_MAGIC && (t->flags & KPRW_T_EVENTS))
		return "it defines events (fetch-args), which are user-space only for now";
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
		why = entry_check(t, i);
		if (why)
			return why;
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
	pt->gap = e[i].flags & KPRW_F_AFTER_FENTRY ? KPRW_ARCH_FENTRY_LEN : 0;
	pt->orig = (const u8 *)strings + e[i].orig_off;
}

u32 kprw_set_optimized(const struct kprw_set *s)
{
	u32 i, n = 0;

	for (i = 0; i < s->npoints; i++)
		n += s->points[i].code == CODE_OPTIMIZED;
	return n;
}

/* --------------------------------------- what the kernel did at boot */

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
 * KPRW_T_FOLLOW: sites the kernel patches once at boot (a return site, an
 * alternative) lay in pt's DCR, and the kernel's tables named their copies
 * in the detour, which the kernel patched instead (before this initcall).
 * The bytes put back on disable or unoptimize are what the kernel would
 * have patched the site to: an alternative's are its copy's (re-aimed where
 * its forms have relative operands), a return site's made as the kernel
 * makes them (arch-ISA.c). False when they cannot be made.
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
			if (!kprw_arch_reaim_bytes(b, pt->addr + fw[k].dcr_off, c, fw[k].len))
				return false;
		} else if (!kprw_arch_return_site_bytes(b, pt->addr + fw[k].dcr_off, c, fw[k].len)) {
			return false;
		}
	}
	pt->orig = to;
	return true;
}

/* Point i of the kernel's set from entry i of t, its original bytes as the
 * kernel left the site at boot. */
static void core_point(const struct kprw_table *t, u32 i)
{
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
	 * met before the trap was hooked would oops; armed below */
	pt->code = pt->verdict == KPRW_OPTIMIZED ? CODE_OPTIMIZED : CODE_DISABLED;
}

static int __init kprewrite_init(void)
{
	const struct kprw_table *t = (const void *)pool_table;
	const char *why;
	u32 i;

	if (kprw_traps_hooked())
		kprw_knob_enabled = false;
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
	for (i = 0; i < t->nentries; i++)
		core_point(t, i);
	core_set.npoints = t->nentries;
	/* from here on hits count */
	for (i = 0; i < core_set.npoints; i++) {
		struct kprw_state *st = (void *)pool_state + i * sizeof(*st);

		WRITE_ONCE(st->rt, &core_set.points[i]);
	}
	mutex_lock(&kprw_lock);
	list_add_rcu(&core_set.list, &kprw_sets);
	if (kprw_apply_all())
		pr_err("some probes could not be armed\n");
	mutex_unlock(&kprw_lock);
	pr_info("%u probes armed (%u optimized)\n", core_set.npoints, kprw_set_optimized(&core_set));
	return 0;
}
/* early, so that boot-time code is counted too */
core_initcall(kprewrite_init);
