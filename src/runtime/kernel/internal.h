/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the kprewrite kernel runtime (not installed): the probe
 * points and what the parts share, by file. The parts:
 *   startup.c    the kernel's table read and checked at boot; the sets of
 *                points; kprw_lock and kprw_sets
 *   dispatch.c   the probe paths: the detours' call, the int3 trap, the
 *                recursion guard
 *   patch.c      live patching: a point's code brought to what it should be
 *   api.c        register_kprw_kprobe() & co.
 *   kretprobe.c  return probes (and trampoline-ISA.S, where calls return)
 *   post.c       post_handlers: the single step
 *   jprobe.c     jprobes (kprw_ names; the kernel dropped them)
 *   fault.c      a kprobe's fault_handler (the kernel dropped it)
 *   module.c     probes baked into modules, as they come and go
 *   debugfs.c    /sys/kernel/debug/kprewrite/
 *   arch-ISA.c   the instruction set's facts (arch.h, arch-ISA.h)
 *   selftest*.c  the self-tests of make check-kernel (CONFIG_KPREWRITE_SELFTEST)
 */
#ifndef KPREWRITE_INTERNAL_H
#define KPREWRITE_INTERNAL_H

#include <linux/debugfs.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/percpu.h>
#include <linux/kprewrite.h>

#include "abi.h"
#include "kprw-core.h"   /* shared with the user runtime: enum code_state, specs, commands, table checks */
#include "arch.h"

struct kprw_set;

struct kprw_point {
	struct kprw_set *set;     /* the table it is from */
	/* its per-CPU counters: [0] hits, [1] misses (in its set's chunks) */
	u64 __percpu *count;
	unsigned long addr, detour, ool;
	const char *name;
	u32 offset, id;
	u8 kind, verdict, len;
	u8 gap;                   /* ftrace's call kept before the site: the API
				     names the point at the call (KPRW_F_AFTER_FENTRY) */
	u8 step_len, ool_step_len;  /* the lengths of the first instruction and
				       of its copy, for a post_handler's step */
	const u8 *orig;
	struct kprw_kprobe __rcu *handlers;
	int code;                 /* enum code_state; read by the probe paths */
	bool disabled, unoptimized;
	bool pinned;              /* its jump cannot be taken out (startup.c said why) */
	u32 ntrap;                /* enabled kprobes that need the int3 path (a
				     post_handler, a jprobe): the point runs unoptimized */
};

/* The points of one probe table: the kernel's, or a module's (module.c). */
struct kprw_set {
	struct list_head list;    /* in kprw_sets */
	struct module *mod;       /* NULL: the kernel's own */
	struct kprw_point *points;   /* in address order (the table's) */
	u32 npoints;
	/* the points' counters, KPRW_CHUNK points' to a per-CPU allocation
	 * (one of them all could exceed what the per-CPU allocator gives) */
	u64 __percpu **chunks;
	u32 nchunks;
	u8 *orig;                 /* a module's sites' bytes as loaded; the kernel's, KASLR-fixed (KPRW_T_KASLR) and with the boot-patched sites (KPRW_T_FOLLOW) */
};
#define KPRW_CHUNK 256            /* points a per-CPU counter allocation (4 KiB) */
/* Under kprw_lock: every point of every set */
#define for_each_kprw_point(s, pt)						\
	list_for_each_entry(s, &kprw_sets, list)				\
		for (pt = (s)->points; pt < (s)->points + (s)->npoints; pt++)

/* ---- startup.c ---- */
/* every set: the kernel's, then the modules'; changed under kprw_lock,
 * walked under RCU by the probe paths */
extern struct list_head kprw_sets;
/* live control and registration */
extern struct mutex kprw_lock;
/* A set's points (kvcalloc) and counters for n; -ENOMEM (nothing kept). */
int kprw_set_alloc(struct kprw_set *s, u32 n);
void kprw_set_free(struct kprw_set *s);
/* Point i of s from entry i of table t (whose offsets were checked). */
void kprw_point_fill(struct kprw_set *s, u32 i, const struct kprw_table *t);
/* How many of s's points are jumps now. */
u32 kprw_set_optimized(const struct kprw_set *s);

/* ---- dispatch.c ---- */
/* what every detour calls (abi.h's name; exported for modules' detours) */
void KPRW_KDISPATCH(struct kprw_state *st, struct pt_regs *regs);
/* the point whose handlers this CPU runs (the recursion guard) */
DECLARE_PER_CPU(struct kprw_point *, kprw_running);
/* Under kprw_lock or from a probe path: the point at addr, or NULL. */
struct kprw_point *kprw_point_at(unsigned long addr);
/* Where the kprobes API names pt (kp->addr; regs->ip is one past it): its
 * site, or ftrace's call before it, as the kernel's kprobes on ftrace do */
static inline unsigned long kprw_point_api(const struct kprw_point *pt)
{
	return pt->addr - pt->gap;
}
/* Hook the traps besides int3 (once); nonzero if they cannot be. */
int kprw_traps_hooked(void);
/* A hit of pt that ran no handler (profile's and list's nmissed). */
void kprw_count_miss(const struct kprw_point *pt);

/* The kprobe whose handler runs on this CPU, and the context it runs in
 * (fault.c: a fault there is its fault_handler's) */
struct kprw_cur {
	struct kprw_kprobe *kp;
	unsigned int ctx;
};
DECLARE_PER_CPU(struct kprw_cur, kprw_cur);
/* the context: NMI, hard interrupt, serving a softirq (preempt_count()'s) */
static __always_inline unsigned int kprw_ctx(void)
{
	return preempt_count() & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET);
}
static __always_inline void kprw_cur_set(struct kprw_kprobe *kp, unsigned int ctx)
{
	__this_cpu_write(kprw_cur.kp, kp);
	__this_cpu_write(kprw_cur.ctx, ctx);
}

/* ---- patch.c ---- */
/* the knobs: debugfs's `enabled` and `optimization` */
extern bool kprw_knob_enabled, kprw_knob_optimization;
/* Under kprw_lock: bring pt's code to what it should be (0, or why not). */
int kprw_apply(struct kprw_point *pt);
/* Under kprw_lock: every point's; the first error. */
int kprw_apply_all(void);
/* pt's site holds its original bytes and no CPU can run it (its module is
 * coming): write what it should hold. */
void kprw_arm_fresh(struct kprw_point *pt);

/* ---- api.c ---- */
/* Where kp is, as the kernel's _kprobe_addr() resolves it (kallsyms): 0,
 * -EINVAL (symbol_name and addr both or neither), -ENOENT; *entry: at a
 * function's entry (past its endbr64 counts). */
int kprw_resolve(const struct kprw_kprobe *kp, unsigned long *addr, bool *entry);
/* Under kprw_lock: register_kprobe()'s steps on kp up to planting the
 * probe (the address resolved, checked as the kernel does, set with the
 * flags and nmissed): 0 and its point in *ptp, -EINVAL, -ENOENT, -EILSEQ. */
int kprw_kprobe_place(struct kprw_kprobe *kp, struct kprw_point **ptp);
/* register_kprw_kprobe() and register_kprw_jprobe() once kp is filled in */
int kprw_register(struct kprw_kprobe *kp);
/* Under kprw_lock: kp runs at pt's hits from now on / no more (after a
 * grace period: handlers run with preemption off). */
void kprw_attach(struct kprw_kprobe *kp, struct kprw_point *pt);
void kprw_detach(struct kprw_kprobe *kp);
/* Under kprw_lock: pt's module goes; its kprobes are gone (the kernel's
 * KPROBE_FLAG_GONE): registered still, on kprw_gone_point */
void kprw_point_gone(struct kprw_point *pt);
extern struct kprw_point kprw_gone_point;

/* ---- kretprobe.c ---- */
/* what the return trampoline calls (trampoline-ISA.S) */
unsigned long kprw_kret_return(struct pt_regs *regs);
/* the pre_handler of a kretprobe's kp (what tells its kp from others) */
int kprw_kret_entry(struct kprw_kprobe *kp, struct pt_regs *regs);
static inline bool kprw_is_kret(const struct kprw_kprobe *kp)
{
	return kp->pre_handler == kprw_kret_entry;
}
/* kretprobes' instance holders allocated and not yet freed (the self-test's view) */
int kprw_kret_holders(void);
/* how many of rp's instances are free (the self-test's view) */
int kprw_kret_free_instances(const struct kprw_kretprobe *rp);
/* the same for a kretprobe's kp whose point went with its module, a grace
 * period later: its instances' holder is retired */
void kprw_kret_gone(struct kprw_kprobe *kp);

/* ---- jprobe.c ---- */
/* a jprobe's pre_handler (what tells its kp from others) */
int kprw_jprobe_setjmp(struct kprw_kprobe *kp, struct pt_regs *regs);
static inline bool kprw_is_jprobe(const struct kprw_kprobe *kp)
{
	return kp->pre_handler == kprw_jprobe_setjmp;
}
/* the point whose jprobe's handler runs on this CPU (its pre_handler set it
 * up), or NULL */
DECLARE_PER_CPU(struct kprw_point *, kprw_jprobe_pt);
static __always_inline bool kprw_jprobe_running(void)
{
	return __this_cpu_read(kprw_jprobe_pt) != NULL;
}
/* From the int3 path, at kprw_jprobe_return()'s trap: back to the probed
 * function (true: the trap was the runtime's). */
bool kprw_jprobe_longjmp(struct pt_regs *regs);

/* ---- post.c ---- */
/* Under kprw_lock: may a post_handler run at pt (its first instruction can
 * be stepped); notes the lengths the step needs. */
bool kprw_post_allowed(struct kprw_point *pt);
/* From the int3 path, regs->ip the copy: step pt's instruction if a
 * post_handler waits. */
void kprw_post_arm(struct kprw_point *pt, struct pt_regs *regs);
/* From the single step's trap (arch-ISA.c): true if it was this CPU's step
 * of a point, whose post_handlers then ran. */
bool kprw_post_stepped(struct pt_regs *regs);

/* ---- module.c ---- */
/* register and forget modules' probe tables as they come and go */
void kprw_module_init(void);

/* ---- debugfs.c ---- */
/* A debugfs file that reads NAME_show (a seq_file, m->private the file's
 * data) and writes through NAME_write: NAME_fops. */
#define KPRW_SHOW_WRITE_FOPS(name)						\
static int name##_open(struct inode *inode, struct file *file)			\
{										\
	return single_open(file, name##_show, inode->i_private);		\
}										\
static const struct file_operations name##_fops = {				\
	.open = name##_open,							\
	.read = seq_read,							\
	.llseek = seq_lseek,							\
	.release = single_release,						\
	.write = name##_write,							\
}
/* A command written to one of them: the len bytes at ubuf into buf (size
 * bytes, NUL-terminated), then *verb its first word and *arg the rest,
 * trimmed (NULL: none). 0, -EINVAL (too long) or -EFAULT. */
int kprw_command(const char __user *ubuf, size_t len, char *buf, size_t size, char **verb, char **arg);
/* "SYM+OFF" in place: spec keeps SYM, *off the offset (0 without one). */
int kprw_split_offset(char *spec, unsigned long *off);
/* A file in /sys/kernel/debug/kprewrite/ (from fs_initcall on) */
void kprw_debugfs_add(const char *name, umode_t mode, void *data, const struct file_operations *fops);

#endif
