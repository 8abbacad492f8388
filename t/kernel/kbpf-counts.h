/* SPDX-License-Identifier: GPL-2.0 */
/* kbpf's BPF programs' one map (kbpf.bpf.c, kbpf-fentry.bpf.c), whose
 * slots kbpf.c reads: the watched tgid, then what the programs add up */
enum { TGID, ENTRIES, ENTRY_BYTES, LAST_BUF, FUNC_IP, RETURNS, RETURN_BYTES, NSLOTS };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NSLOTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");
