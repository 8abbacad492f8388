/* FDEs that start inside an instruction (t/fde-bounds.t). glibc's
 * __restore_rt, the sa_restorer of every sigaction handler, has a
 * hand-written signal-frame FDE (CIE augmentation "zRS") that starts one
 * byte before the symbol, in the padding nopl before it: unwinders look up
 * a return address minus one. fb_restore is built the same way; fb_mid's
 * FDE starts inside a nopl too, without 'S'. fb_first and fb_last are
 * ordinary functions around them. (.byte: the assembler would not start
 * an FDE inside an instruction it knows.) t/data/fde-restorer.c calls them
 * and returns from its signal handler through fb_restore. */
	.text
	.type	fb_first, @function
fb_first:
	.cfi_startproc
	push	%rbx
	.cfi_adjust_cfa_offset 8
	lea	1(%rdi), %rbx
	mov	%rbx, %rax
	pop	%rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	fb_first, .-fb_first

	.byte	0x0f, 0x1f, 0x40	/* nopl 0(%rax): its last byte is the FDE's first */
	.cfi_startproc
	.cfi_signal_frame
	.byte	0x00
	.type	fb_restore, @function
fb_restore:
	mov	$15, %rax		/* rt_sigreturn */
	syscall
	.cfi_endproc
	.size	fb_restore, .-fb_restore

	.byte	0x0f, 0x1f, 0x40	/* the same, for an FDE without 'S' */
	.cfi_startproc
	.byte	0x00
	.type	fb_mid, @function
fb_mid:
	push	%rbp
	.cfi_adjust_cfa_offset 8
	mov	%rsp, %rbp
	lea	2(%rdi), %rax
	pop	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	fb_mid, .-fb_mid

	.p2align 4
	.type	fb_last, @function
fb_last:
	.cfi_startproc
	lea	3(%rdi), %rax
	add	%rsi, %rax
	imul	%rdx, %rax
	ret
	.cfi_endproc
	.size	fb_last, .-fb_last

/* The functions stay local (a stripped copy knows them only by their
 * FDEs); a program reaches them through this table (t/data/fde-restorer.c). */
	.section .data.rel.ro, "aw"
	.globl	fb_funcs
	.type	fb_funcs, @object
	.p2align 3
fb_funcs:
	.quad	fb_first, fb_restore, fb_mid, fb_last
	.size	fb_funcs, .-fb_funcs
	.section .note.GNU-stack, "", @progbits
