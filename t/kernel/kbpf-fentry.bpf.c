// SPDX-License-Identifier: GPL-2.0
/*
 * kbpf-fentry.bpf.c: an fentry program for kbpf (t/kernel/kbpf.c, mode
 * fentry), built with clang -target bpf: attached to vfs_read through the
 * kernel's BPF trampoline on ftrace's fentry site (a kernel with BTF), it
 * counts the calls of one process (the tgid kbpf puts in counts[TGID]) and
 * adds up their third argument. A separate object: libbpf resolves an
 * fentry program's target in the kernel's BTF when it loads the object,
 * which a kernel without BTF would refuse for the whole object.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kbpf-counts.h"

SEC("fentry/vfs_read")
int BPF_PROG(on_fentry, __u64 file, __u64 buf, __u64 count)
{
	__u32 k = TGID;
	__u64 *t = bpf_map_lookup_elem(&counts, &k);

	if (!t || !*t || *t != bpf_get_current_pid_tgid() >> 32)
		return 0;
	k = ENTRIES;
	t = bpf_map_lookup_elem(&counts, &k);
	if (t)
		__sync_fetch_and_add(t, 1);
	k = ENTRY_BYTES;
	t = bpf_map_lookup_elem(&counts, &k);
	if (t)
		__sync_fetch_and_add(t, count);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
