// SPDX-License-Identifier: GPL-2.0
/*
 * The fault_handler of the kprobes documentation before 5.14 (its
 * kprobe_example had one: "called if an exception is generated for any
 * instruction within the pre- or post-handler"), on kprewrite's kprw_
 * names: a kprobe on kernel_clone() whose pre_handler reads, with
 * copy_from_kernel_nofault(), the guard page after a one-page vmalloc. The
 * read faults; the fault_handler prints the probe's address and the trap
 * number and returns 0, not handling it, so the fault takes its course: the
 * exception-table fixup makes the copy return -EFAULT, which the
 * pre_handler prints. check-kernel loads it, forks, unloads it.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/kprewrite.h>

static u8 *page;

static int handler_pre(struct kprw_kprobe *p, struct pt_regs *regs)
{
	u8 b;
	long rc = copy_from_kernel_nofault(&b, page + PAGE_SIZE, 1);

	/* (a line must not begin with '<': busybox's dmesg takes it for a level) */
	pr_info("pre_handler: <%s> reading past the page gave %ld\n", p->symbol_name, rc);
	return 0;
}

/* called when a handler of this kprobe faults */
static int handler_fault(struct kprw_kprobe *p, struct pt_regs *regs, int trapnr)
{
	pr_info("fault_handler: p->addr = 0x%px, trap #%d\n", p->addr, trapnr);
	/* 0: not handled here, the fault takes its course */
	return 0;
}

static struct kprw_kprobe kp = {
	.symbol_name = "kernel_clone",
	.pre_handler = handler_pre,
	.fault_handler = handler_fault,
};

static int __init fault_example_init(void)
{
	int ret;

	page = vmalloc(PAGE_SIZE);
	if (!page)
		return -ENOMEM;
	ret = register_kprw_kprobe(&kp);
	if (ret < 0) {
		vfree(page);
		pr_err("register_kprw_kprobe failed, returned %d\n", ret);
		return ret;
	}
	pr_info("Planted kprobe at %px\n", kp.addr);
	return 0;
}

static void __exit fault_example_exit(void)
{
	unregister_kprw_kprobe(&kp);
	vfree(page);
	pr_info("kprobe at %px unregistered\n", kp.addr);
}

module_init(fault_example_init)
module_exit(fault_example_exit)
MODULE_LICENSE("GPL");
