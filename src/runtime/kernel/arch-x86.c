// SPDX-License-Identifier: GPL-2.0
/*
 * kprewrite kernel runtime: what is x86's (arch.h says what an instruction
 * set provides). The entry probe past endbr64, instruction lengths, the
 * bytes of the sites the kernel patches at boot (return thunks,
 * alternatives), the trap flag that single-steps an instruction, and the
 * traps the runtime hooks on the die notifier chain.
 */
#define pr_fmt(fmt) "kprewrite: " fmt

#include <linux/kdebug.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/notifier.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/alternative.h>     /* cpu_wants_rethunk_at() */
#include <asm/debugreg.h>
#include <asm/insn.h>
#include <asm/nospec-branch.h>   /* x86_return_thunk */
#include <asm/processor-flags.h>

#include "internal.h"

/* Does the code at fn start with endbr64 or endbr32 (f3 0f 1e fa/fb), or
 * the 4-byte nop an IBT kernel seals an unused one with at boot (66 0f 1f
 * 00: apply_seal_endbr()), as the kernel's is_endbr() takes them? Then
 * kprewrite put fn's entry probe after it, at fn+4, and SYM+0 means that
 * point (arch_adjust_kprobe_addr()). */
unsigned int kprw_arch_entry_gap(unsigned long fn)
{
	u32 v;

	if (copy_from_kernel_nofault(&v, (const void *)fn, sizeof(v)))
		return 0;
	return (v & ~0x01000000u) == 0xfa1e0ff3 || v == 0x001f0f66 ? 4 : 0;
}

int kprw_arch_insn_len(const void *p, unsigned int n)
{
	struct insn insn;

	return insn_decode(&insn, p, n, INSN_MODE_KERN) < 0 ? 0 : insn.length;
}

/*
 * A return site's bytes: what apply_returns() patches a jmp
 * __x86_return_thunk at `at` to, c being its copy as the kernel patched it.
 * Where the kernel says per address (ITS: a ret may stay in the upper half
 * of a cache line only), as it would decide at the site; else the copy's
 * choice, which is the CPU's (ret, or a jmp to the thunk it needs, aimed
 * from the site).
 */
bool kprw_arch_return_site_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len)
{
	s32 rel;

#ifdef KPRW_HAVE_RETHUNK_AT
	if (cpu_wants_rethunk_at((void *)at)) {
		rel = (s32)((unsigned long)x86_return_thunk - (at + JMP32_INSN_SIZE));
		b[0] = JMP32_INSN_OPCODE;
		memcpy(b + 1, &rel, 4);
	} else {
		b[0] = RET_INSN_OPCODE;
		memset(b + 1, INT3_INSN_OPCODE, 4);
	}
	memset(b + JMP32_INSN_SIZE, INT3_INSN_OPCODE, len - JMP32_INSN_SIZE);
	return true;
#else
	if (c[0] == JMP32_INSN_OPCODE) {
		memcpy(&rel, c + 1, 4);
		rel = (s32)((unsigned long)c + JMP32_INSN_SIZE + rel - (at + JMP32_INSN_SIZE));
		b[0] = JMP32_INSN_OPCODE;
		memcpy(b + 1, &rel, 4);
		memcpy(b + JMP32_INSN_SIZE, c + JMP32_INSN_SIZE, len - JMP32_INSN_SIZE);
		return true;
	}
	if (c[0] == RET_INSN_OPCODE) {
		memcpy(b, c, len);
		return true;
	}
	return false;
#endif
}

/* Is insn a relative jmp or jcc (the only branches a KPRW_FOLLOW_REAIM
 * form has: kprewrite checked its every form)? */
static bool rel_jump(const struct insn *insn)
{
	u8 op = insn->opcode.bytes[0];

	return op == JMP32_INSN_OPCODE || op == JMP8_INSN_OPCODE || (op & 0xf0) == 0x70 ||
	       (op == 0x0f && (insn->opcode.bytes[1] & 0xf0) == 0x80);
}

/*
 * An alternative's bytes at `at` (len of them), from its copy c as the
 * kernel patched it: each RIP-relative displacement and each relative jump
 * out of the copy aimed from `at` at the same target. False when one does
 * not decode or does not reach (a rel8 jump out: kprewrite let only rel32
 * ones through, which the kernel keeps so far from their targets).
 */
bool kprw_arch_reaim_bytes(u8 *b, unsigned long at, const u8 *c, unsigned int len)
{
	unsigned int off, n;
	struct insn insn;

	memcpy(b, c, len);
	for (off = 0; off < len; off += n) {
		const u8 *from = c + off;
		long target, d;

		if (insn_decode_kernel(&insn, from) < 0 || !insn.length || off + insn.length > len)
			return false;
		n = insn.length;
		if (insn_rip_relative(&insn)) {
			target = (long)from + n + insn.displacement.value;
			d = target - (long)(at + off + n);
			if (d != (s32)d)
				return false;
			memcpy(b + off + insn_offset_displacement(&insn), &(s32){ d }, 4);
		} else if (rel_jump(&insn)) {
			target = (long)from + n + insn.immediate.value;
			if (target >= (long)c && target < (long)c + len)
				continue;   /* within the site: relative to it alike */
			d = target - (long)(at + off + n);
			if (insn.immediate.nbytes == 4 && d == (s32)d)
				memcpy(b + off + insn_offset_immediate(&insn), &(s32){ d }, 4);
			else if (insn.immediate.nbytes == 1 && d == (s8)d)
				b[off + insn_offset_immediate(&insn)] = (u8)d;
			else
				return false;
		}
	}
	return true;
}

/*
 * A post_handler's step (post.c): the int3 path resumes at the copy with
 * the trap flag set and interrupts off, and the debug trap after that one
 * instruction runs the post_handlers. The instructions that read or write
 * the trap or interrupt flag (pushf, popf, cli, sti, iret) would see ours:
 * they are not stepped. Decoded here, at registration, not in the debug
 * trap: the decoder is code '*' probes.
 */
bool kprw_arch_step_allowed(const u8 *orig, unsigned int len, const void *ool, u8 *step_len, u8 *ool_step_len)
{
	unsigned int i = 0;
	int n, m;
	u8 op;

	/* legacy and REX prefixes, then the opcode */
	while (i < len && (orig[i] == 0x66 || orig[i] == 0xf2 || orig[i] == 0xf3 || (orig[i] & 0xf0) == 0x40))
		i++;
	if (i >= len)
		return false;
	op = orig[i];
	if (op == 0x9c || op == 0x9d || op == 0xfa || op == 0xfb || op == 0xcf)
		return false;
	n = kprw_arch_insn_len(orig, len);
	m = kprw_arch_insn_len(ool, MAX_INSN_SIZE);
	if (n <= 0 || m <= 0)
		return false;
	*step_len = n;
	*ool_step_len = m;
	return true;
}

void kprw_arch_step_begin(struct pt_regs *regs, unsigned long *saved)
{
	*saved = regs->flags;
	regs->flags = (regs->flags | X86_EFLAGS_TF) & ~X86_EFLAGS_IF;
}

void kprw_arch_step_end(struct pt_regs *regs, unsigned long saved)
{
	regs->flags = (regs->flags & ~(X86_EFLAGS_TF | X86_EFLAGS_IF)) | (saved & (X86_EFLAGS_TF | X86_EFLAGS_IF));
}

/* The debug trap after a step (DIE_DEBUG, a single step in dr6); a fault
 * in a handler: a general protection fault (DIE_GPF, after the
 * exception-table fixups, as the kernel's kprobes were asked) and the other
 * traps (DIE_TRAP: a divide error, an invalid opcode... before them). Page
 * faults come to kprewrite_fault_handler() from the page fault handler
 * itself (integrate.sh). */
static int kprw_debug(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long *dr6 = (unsigned long *)args->err;

	if (val == DIE_GPF || val == DIE_TRAP)
		return kprewrite_fault_handler(args->regs, args->trapnr) ? NOTIFY_STOP : NOTIFY_DONE;
	if (val != DIE_DEBUG || !(*dr6 & DR_STEP) || !kprw_post_stepped(args->regs))
		return NOTIFY_DONE;
	*dr6 &= ~DR_STEP;
	return NOTIFY_STOP;
}

/* the trap paths: not to be probed (kprewrite refuses the kernel's kprobe
 * blacklist, which integrate.sh keeps in a kernel without CONFIG_KPROBES) */
NOKPROBE_SYMBOL(kprw_arch_step_begin);
NOKPROBE_SYMBOL(kprw_arch_step_end);
NOKPROBE_SYMBOL(kprw_debug);

static struct notifier_block kprw_debug_nb = {
	.notifier_call = kprw_debug,
	.priority = 0x7fffffff,         /* before debuggers' notifiers */
};

int kprw_arch_traps_init(void)
{
	return register_die_notifier(&kprw_debug_nb);
}
