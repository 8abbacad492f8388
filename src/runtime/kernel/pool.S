/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kprewrite pool of a kernel: three areas kprewrite fills after vmlinux
 * is linked (include/kprewrite/abi.h), found by their symbols. Their section
 * names put them where the kernel's own linker script already puts code,
 * read-only data and data (so no linker script changes): detours inside
 * _stext.._etext (executable, read-only once the kernel marks its text so),
 * the table inside __start_rodata..__end_rodata, the state in .data (among
 * the read-mostly data: the counters are per CPU elsewhere). None
 * is ever freed.
 */

	.section .text.unlikely.kprewrite_pool, "ax"
	.balign 64
	.globl kprewrite_pool_text, kprewrite_pool_text_end
kprewrite_pool_text:
	.fill CONFIG_KPREWRITE_TEXT_KB * 1024, 1, 0xcc
kprewrite_pool_text_end:

	.section .rodata.kprewrite_pool, "a"
	.balign 64
	.globl kprewrite_pool_table, kprewrite_pool_table_end
kprewrite_pool_table:
	.fill CONFIG_KPREWRITE_TABLE_KB * 1024, 1, 0
kprewrite_pool_table_end:

	.section .data..read_mostly, "aw"
	.balign 64
	.globl kprewrite_pool_state, kprewrite_pool_state_end
kprewrite_pool_state:
	.fill CONFIG_KPREWRITE_DATA_KB * 1024, 1, 0
kprewrite_pool_state_end:

	.section .note.GNU-stack,"",@progbits
