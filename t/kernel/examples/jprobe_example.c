// SPDX-License-Identifier: GPL-2.0
/*
 * The jprobe example of the kprobes documentation (Documentation/kprobes.txt
 * before 4.15, "Jprobes Example"), on kprewrite's kprw_ names: a jprobe on
 * the function that forks (do_fork() then, kernel_clone() now) whose handler
 * has the function's signature, prints the arguments it was called with and
 * ends in kprw_jprobe_return(). Built against a kernel with kprewrite, with
 * kernel_clone's entry baked; check-kernel loads it, forks, unloads it.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/kprewrite.h>

/* kernel_clone()'s own signature */
static pid_t j_kernel_clone(struct kernel_clone_args *args)
{
	/* (the exit signal, in clone_flags' low byte then, has a field now) */
	pr_info("jprobe: clone_flags = 0x%llx, exit_signal = %d, stack = 0x%lx, stack_size = 0x%lx\n",
		(unsigned long long)args->flags, args->exit_signal, args->stack, args->stack_size);
	/* always the end of a jprobe's handler */
	kprw_jprobe_return();
	return 0;
}

static struct kprw_jprobe my_jprobe = {
	.entry = j_kernel_clone,
	.kp = {
		.symbol_name = "kernel_clone",
	},
};

static int __init jprobe_init(void)
{
	int ret = register_kprw_jprobe(&my_jprobe);

	if (ret < 0) {
		pr_err("register_kprw_jprobe failed, returned %d\n", ret);
		return -1;
	}
	pr_info("Planted jprobe at %px, handler addr %px\n", my_jprobe.kp.addr, my_jprobe.entry);
	return 0;
}

static void __exit jprobe_exit(void)
{
	unregister_kprw_jprobe(&my_jprobe);
	pr_info("jprobe at %px unregistered\n", my_jprobe.kp.addr);
}

module_init(jprobe_init)
module_exit(jprobe_exit)
MODULE_LICENSE("GPL");
