/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kprewrite pool of a kernel: three areas kprewrite fills after vmlinux
 * is linked (include/kprewrite/abi.h), found by their symbols. Their section
 * names put them where the kernel's own linker script already puts code,
 * read-only data and data (so no linker script changes): detours inside
 * _stext.._etext (executable, read-only once the kernel marks its text so),
 * the table inside __start_rodata..__end_rodata, the state in .data (among
 * the read-mostly data: the counters are per CPU elsewhere). None
 * is ever freed. The symbols' names are abi.h's.
 */
#include "abi.h"
#ifdef __KERNEL__
#include <linux/objtool.h>
#else
#define ANNOTATE_NOENDBR   /* (t/kernel-detour.t's user-space stand-in) */
#endif

	.section .text.unlikely.kprewrite_pool, "ax"
	.balign 64
	.globl KPRW_KPOOL_TEXT, KPRW_KPOOL_TEXT_END
KPRW_KPOOL_TEXT:
	/* the runtime compares addresses with it; nothing calls it (IBT) */
	ANNOTATE_NOENDBR
	.fill CONFIG_KPREWRITE_TEXT_KB * 1024, 1, 0xcc
KPRW_KPOOL_TEXT_END:

	.section .rodata.kprewrite_pool, "a"
	.balign 64
	.globl KPRW_KPOOL_TABLE, KPRW_KPOOL_TABLE_END
KPRW_KPOOL_TABLE:
	.fill CONFIG_KPREWRITE_TABLE_KB * 1024, 1, 0
KPRW_KPOOL_TABLE_END:

	.section .data..read_mostly, "aw"
	.balign 64
	.globl KPRW_KPOOL_STATE, KPRW_KPOOL_STATE_END
KPRW_KPOOL_STATE:
	.fill CONFIG_KPREWRITE_DATA_KB * 1024, 1, 0
KPRW_KPOOL_STATE_END:

	.section .note.GNU-stack,"",@progbits
