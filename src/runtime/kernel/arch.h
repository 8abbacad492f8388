/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel runtime's generic files ask of the instruction set. Each
 * one the runtime runs on provides arch-ISA.h (inline: the breakpoint's
 * length and what a handler's regs->ip is, the registers a detour leaves
 * out, where a return address is, a site's bytes in each state, text
 * patching), arch-ISA.c (below) and trampoline-ISA.S (the return trampoline,
 * the jprobe return). x86-64 is the only one today (Kconfig: X86_64).
 */
#ifndef KPREWRITE_ARCH_H
#define KPREWRITE_ARCH_H

#include <linux/types.h>

struct pt_regs;

#ifdef CONFIG_X86_64
#include "arch-x86.h"
#else
#error "kprewrite's kernel runtime supports x86-64 only"
#endif

/* ---- arch-ISA.c ---- */

/* The bytes at the start of function fn that its entry probe goes after
 * (x86: an endbr64, or the nop an IBT kernel seals an unused one with), as
 * the kernel's arch_adjust_kprobe_addr() skips them; 0 if none. */
unsigned int kprw_arch_entry_gap(unsigned long fn);
/* The length of the instruction in the n bytes at p; 0 if they do not
 * decode. */
int kprw_arch_insn_len(const void *p, unsigned int n);

/* The bytes a site the kernel patched at boot should hold at `at`, made
 * from its copy c as the kernel patched that (KPRW_T_FOLLOW, startup.c):
 * a return site's, or an alternative's with its relative operands aimed
 * from `at`. False when they cannot be made. */
bool kprw_arch_return_site_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len);
bool kprw_arch_reaim_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len);

/* Single-stepping a point's first instruction out of line (post.c): may it
 * be stepped (and the lengths of it and of its copy at ool), and the flags
 * that step it and that put back what the stepped code had. */
bool kprw_arch_step_allowed(const u8 *orig, unsigned int len, const void *ool, u8 *step_len, u8 *ool_step_len);
void kprw_arch_step_begin(struct pt_regs *regs, unsigned long *saved);
void kprw_arch_step_end(struct pt_regs *regs, unsigned long saved);

/* Hook the traps the runtime needs besides int3 (which do_int3() calls it
 * for): the single step's (then post.c's kprw_post_stepped()) and a fault's
 * in a handler (then fault.c's kprewrite_fault_handler()). 0, or an error. */
int kprw_arch_traps_init(void);

/* ---- trampoline-ISA.S ---- */

/* (kprewrite_kret_trampoline, where a followed call returns to, is
 * declared in kprewrite.h: the unwinders look for it) */
/* kprw_jprobe_return()'s breakpoint (jprobe.c): the address an int3 trap
 * there reports (its regs->ip) */
extern const u8 kprw_jprobe_return_trap[];

#endif
