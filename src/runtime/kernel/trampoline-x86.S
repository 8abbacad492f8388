/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprewrite's kernel runtime on x86-64: the return trampoline of its return
 * probes (kretprobe.c), and the end of a jprobe's handler (jprobe.c, below).
 *
 * The return trampoline:
 * A followed call's function returns here instead of to its caller, with
 * %rsp just above the slot its return address was in. The trampoline puts
 * a word back into that slot (its own address until the real return
 * address is known: a return address the unwinders recognize and look up,
 * kprewrite_unwind_ret_addr()), makes a frame on it as a called function
 * would (so both unwinders walk through it to the real caller), builds a
 * struct pt_regs below, calls kprw_kret_return(regs), which runs the
 * handlers and answers the real return address, stores that in the slot,
 * reloads the registers (a handler's writes take effect, the return
 * value's included; bp comes back from the frame) and returns through the
 * slot: the caller's stack is as deep as the call left it. The flags are
 * not restored (dead after a return, by the ABI), and never with popfq.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/ptrace-abi.h>
#include <asm/segment.h>
#include <asm/unwind_hints.h>
#include <linux/version.h>

/* no frame an unwinder could follow: 6.4 renamed the hint */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define KPRW_HINT_NO_FRAME UNWIND_HINT_UNDEFINED
#else
#define KPRW_HINT_NO_FRAME UNWIND_HINT_EMPTY
#endif

	.text
SYM_CODE_START(kprewrite_kret_trampoline)
	/* reached by a ret: no frame an unwinder could follow yet */
	KPRW_HINT_NO_FRAME
	ANNOTATE_NOENDBR
	pushq	$kprewrite_kret_trampoline	/* the slot again */
	UNWIND_HINT_FUNC			/* as if called from the slot */
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$FRAME_SIZE, %rsp		/* struct pt_regs */
	movq	%rax, RAX(%rsp)
	movq	%r15, R15(%rsp)
	movq	%r14, R14(%rsp)
	movq	%r13, R13(%rsp)
	movq	%r12, R12(%rsp)
	movq	(%rbp), %rax			/* the bp the function returned with */
	movq	%rax, RBP(%rsp)
	movq	%rbx, RBX(%rsp)
	movq	%r11, R11(%rsp)
	movq	%r10, R10(%rsp)
	movq	%r9, R9(%rsp)
	movq	%r8, R8(%rsp)
	movq	%rcx, RCX(%rsp)
	movq	%rdx, RDX(%rsp)
	movq	%rsi, RSI(%rsp)
	movq	%rdi, RDI(%rsp)
	movq	$-1, ORIG_RAX(%rsp)
	movq	$kprewrite_kret_trampoline, RIP(%rsp)
	movq	$__KERNEL_CS, CS(%rsp)
	pushfq
	popq	EFLAGS(%rsp)
	leaq	16(%rbp), %rax			/* where the caller's stack is */
	movq	%rax, RSP(%rsp)
	movq	$__KERNEL_DS, SS(%rsp)
	movq	%rsp, %rdi
	call	kprw_kret_return
	movq	%rax, 8(%rbp)			/* the real return address */
	movq	R15(%rsp), %r15
	movq	R14(%rsp), %r14
	movq	R13(%rsp), %r13
	movq	R12(%rsp), %r12
	movq	RBX(%rsp), %rbx
	movq	R11(%rsp), %r11
	movq	R10(%rsp), %r10
	movq	R9(%rsp), %r9
	movq	R8(%rsp), %r8
	movq	RAX(%rsp), %rax
	movq	RCX(%rsp), %rcx
	movq	RDX(%rsp), %rdx
	movq	RSI(%rsp), %rsi
	movq	RDI(%rsp), %rdi
	leave
	RET
SYM_CODE_END(kprewrite_kret_trampoline)

/*
 * kprw_jprobe_return() (jprobe.c): a jprobe's handler ends by calling it.
 * Its int3 comes to kprewrite_int3_handler(), which finds the trap's
 * regs->ip at kprw_jprobe_return_trap and puts the registers and the stack
 * back as the jprobe's hit found them: the call never returns. Called
 * outside a jprobe's handler, the trap returns and so does the call.
 */
SYM_FUNC_START(kprw_jprobe_return)
	int3
SYM_INNER_LABEL(kprw_jprobe_return_trap, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR	/* the runtime compares addresses with it; nothing calls it */
	RET
SYM_FUNC_END(kprw_jprobe_return)
