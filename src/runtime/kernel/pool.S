/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kprewrite pool of a kernel: three areas kprewrite fills after vmlinux
 * is linked (include/kprewrite/abi.h). The linker script keeps each in an
 * output section of its own (integrate.sh): .kprewrite.text before _etext
 * (executable, read-only once the kernel marks its text so), .kprewrite.table
 * in the read-only data, .kprewrite.data in the data. None is ever freed.
 */

	.section .kprewrite.text, "ax"
	.balign 64
	.globl kprewrite_pool_text, kprewrite_pool_text_end
kprewrite_pool_text:
	.fill CONFIG_KPREWRITE_TEXT_KB * 1024, 1, 0xcc
kprewrite_pool_text_end:

	.section .kprewrite.table, "a"
	.balign 64
	.globl kprewrite_pool_table, kprewrite_pool_table_end
kprewrite_pool_table:
	.fill CONFIG_KPREWRITE_TABLE_KB * 1024, 1, 0
kprewrite_pool_table_end:

	.section .kprewrite.data, "aw"
	.balign 64
	.globl kprewrite_pool_state, kprewrite_pool_state_end
kprewrite_pool_state:
	.fill CONFIG_KPREWRITE_DATA_KB * 1024, 1, 0
kprewrite_pool_state_end:

	.section .note.GNU-stack,"",@progbits
