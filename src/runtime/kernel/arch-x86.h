/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel runtime on x86-64: the instruction set's facts the generic
 * files use inline (arch.h lists what an instruction set provides; the rest
 * is in arch-x86.c and trampoline-x86.S).
 */
#ifndef KPREWRITE_ARCH_X86_H
#define KPREWRITE_ARCH_X86_H

#include <linux/preempt.h>
#include <linux/types.h>
#include <asm/insn.h>
#include <asm/ptrace.h>
#include <asm/segment.h>
#include <asm/setup.h>          /* kaslr_offset() */
#include <asm/text-patching.h>

#include "site.h"               /* src/arch/x86/site.h: what a site holds in each state */

/* The breakpoint is int3, one byte; the trap leaves regs->ip after it. */
#define KPRW_ARCH_BP_LEN INT3_INSN_SIZE
/* The longest instruction */
#define KPRW_ARCH_INSN_MAX MAX_INSN_SIZE
/* ftrace's call __fentry__ at a function's entry (a call rel32), which a
 * SYM+0 point is baked past (KPRW_F_AFTER_FENTRY) */
#define KPRW_ARCH_FENTRY_LEN CALL_INSN_SIZE

/* What a pre_handler finds in regs->ip at a probe on addr: addr + 1, as
 * the kernel's kprobe_int3_handler() and optimized_callback() give it
 * (past the int3, which is one byte). */
static __always_inline unsigned long kprw_arch_pre_ip(unsigned long addr)
{
	return addr + INT3_INSN_SIZE;
}

/* The context (preempt_count()'s interrupt bits) of the code an int3
 * trapped in, from the one inside the trap: a kernel-mode int3 runs as an
 * NMI (exc_int3()'s irqentry_nmi_enter()). */
static __always_inline unsigned int kprw_arch_trapped_ctx(unsigned int in_trap)
{
	return in_trap - (NMI_OFFSET + HARDIRQ_OFFSET);
}

/* The address of the breakpoint an int3 trap came from. */
static __always_inline unsigned long kprw_arch_bp_addr(const struct pt_regs *regs)
{
	return regs->ip - INT3_INSN_SIZE;
}

/* A detour pushed the general registers and the flags into regs: the rest
 * as the kernel's optimized_callback() has them (sp: the probed code's). */
static __always_inline void kprw_arch_detour_regs(struct pt_regs *regs, unsigned long addr)
{
	regs->ip = kprw_arch_pre_ip(addr);
	regs->sp = (unsigned long)(regs + 1);
	regs->cs = __KERNEL_CS;
	regs->ss = __KERNEL_DS;
	regs->orig_ax = ~0UL;
}

/* At a function's first instruction: the slot of its return address. */
static inline unsigned long *kprw_arch_ret_slot(const struct pt_regs *regs)
{
	return (unsigned long *)regs->sp;
}

/* Just after a function returned (the return trampoline's regs): the slot
 * its return address was in. */
static inline unsigned long *kprw_arch_ret_slot_returned(const struct pt_regs *regs)
{
	return (unsigned long *)regs->sp - 1;
}

/* A site's bytes in the int3 state and in the jump state (to target; the
 * runtime checked at start-up that it is in reach and the site long enough). */
#define kprw_arch_site_int3(b, orig, len) x86_site_int3(b, orig, len)
#define kprw_arch_site_jump(b, site, target, len) x86_site_jump(b, site, target, len)

/* A return site the kernel patches at boot (.return_sites) is a 5-byte jmp. */
#define KPRW_ARCH_RETURN_SITE_LEN JMP32_INSN_SIZE

/* Write n bytes of kernel text at addr, every CPU seeing them after (under
 * text_mutex). */
static inline void kprw_arch_poke(unsigned long addr, const u8 *b, unsigned int n)
{
	text_poke((void *)addr, b, n);
	text_poke_sync();
}

#endif
