/*
 * The x86-64 registers as tracing names them (kprobe_events' %REG, $argN,
 * $retval, $stack): their slots in struct pt_regs (include/kprewrite/
 * ptrace.h, the kernel's layout), the System V argument registers, the
 * return-value register and the stack pointer. Header-only, no libc.
 */
#ifndef KPREWRITE_X86_REGS_H
#define KPREWRITE_X86_REGS_H
#include "arch/fetch-isa.h"

/* pt_regs slot indices (8 bytes each) */
enum x86_reg_slot {
    X86_R15, X86_R14, X86_R13, X86_R12, X86_BP, X86_BX, X86_R11, X86_R10, X86_R9, X86_R8,
    X86_AX, X86_CX, X86_DX, X86_SI, X86_DI, X86_ORIG_AX, X86_IP, X86_CS, X86_FLAGS, X86_SP, X86_SS,
    X86_NSLOTS
};

/* The kernel's names (regs_query_register_offset), then the assembler's
 * 64-bit names as aliases. */
static const struct kprw_reg_name x86_reg_names[] = {
    { "ax", X86_AX }, { "bx", X86_BX }, { "cx", X86_CX }, { "dx", X86_DX },
    { "si", X86_SI }, { "di", X86_DI }, { "bp", X86_BP }, { "sp", X86_SP },
    { "r8", X86_R8 }, { "r9", X86_R9 }, { "r10", X86_R10 }, { "r11", X86_R11 },
    { "r12", X86_R12 }, { "r13", X86_R13 }, { "r14", X86_R14 }, { "r15", X86_R15 },
    { "ip", X86_IP }, { "flags", X86_FLAGS }, { "cs", X86_CS }, { "ss", X86_SS }, { "orig_ax", X86_ORIG_AX },
    { "rax", X86_AX }, { "rbx", X86_BX }, { "rcx", X86_CX }, { "rdx", X86_DX },
    { "rsi", X86_SI }, { "rdi", X86_DI }, { "rbp", X86_BP }, { "rsp", X86_SP }, { "rip", X86_IP },
};

/* $arg1..$arg6 (System V AMD64); the 7th and later are on the stack, the
 * 7th at $stack1 at the function's entry ($stack0: the return address). */
static const unsigned char x86_arg_slots[] = { X86_DI, X86_SI, X86_DX, X86_CX, X86_R8, X86_R9 };

/* (an initializer of its own: the static runtime, which may hold no
 * stored address, builds one at run time) */
#define X86_FETCH_ISA_INIT { \
    x86_reg_names, sizeof x86_reg_names / sizeof x86_reg_names[0], \
    x86_arg_slots, sizeof x86_arg_slots, X86_AX, X86_SP, X86_IP, X86_NSLOTS, 8, 4, \
}
static const struct kprw_fetch_isa x86_fetch_isa = X86_FETCH_ISA_INIT;
#endif
