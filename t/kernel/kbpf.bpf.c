// SPDX-License-Identifier: GPL-2.0
/*
 * kbpf.bpf.c: the BPF side of kbpf (t/kernel/kbpf.c), built with
 * clang -target bpf. A kprobe and a kretprobe program, attached by kbpf
 * to one function (vfs_read), count the calls of one process (the tgid
 * kbpf puts in counts[TGID]) and add up what they fetch: the third
 * argument (PT_REGS_PARM3, vfs_read's count), the second (its buffer),
 * the return value (PT_REGS_RC), and bpf_get_func_ip()'s answer.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kbpf-counts.h"

static __u64 *slot(__u32 k)
{
	return bpf_map_lookup_elem(&counts, &k);
}

/* is the caller the process kbpf watches? */
static int watched(void)
{
	__u64 *t = slot(TGID);

	return t && *t && *t == bpf_get_current_pid_tgid() >> 32;
}

static void add(__u32 k, __u64 v)
{
	__u64 *p = slot(k);

	if (p)
		__sync_fetch_and_add(p, v);
}

static void set(__u32 k, __u64 v)
{
	__u64 *p = slot(k);

	if (p)
		*p = v;
}

SEC("kprobe")
int on_entry(struct pt_regs *ctx)
{
	if (!watched())
		return 0;
	add(ENTRIES, 1);
	add(ENTRY_BYTES, PT_REGS_PARM3(ctx));
	set(LAST_BUF, PT_REGS_PARM2(ctx));
	set(FUNC_IP, bpf_get_func_ip(ctx));
	return 0;
}

SEC("kretprobe")
int on_return(struct pt_regs *ctx)
{
	if (!watched())
		return 0;
	add(RETURNS, 1);
	add(RETURN_BYTES, PT_REGS_RC(ctx));
	return 0;
}

/* (bpf_get_func_ip() is GPL-only) */
char LICENSE[] SEC("license") = "GPL";
