/*
 * struct pt_regs with the x86-64 kernel's layout and field names
 * (arch/x86/include/asm/ptrace.h): what a detour builds on the stack and
 * what kprobe handlers receive. 21 eight-byte slots, 168 bytes.
 */
#ifndef KPREWRITE_PTRACE_H
#define KPREWRITE_PTRACE_H

#ifndef __ASSEMBLER__
struct pt_regs {
    unsigned long r15;
    unsigned long r14;
    unsigned long r13;
    unsigned long r12;
    unsigned long bp;
    unsigned long bx;
    unsigned long r11;
    unsigned long r10;
    unsigned long r9;
    unsigned long r8;
    unsigned long ax;
    unsigned long cx;
    unsigned long dx;
    unsigned long si;
    unsigned long di;
    unsigned long orig_ax;  /* ~0: not a system call */
    unsigned long ip;       /* the probe address */
    unsigned long cs;
    unsigned long flags;    /* arithmetic flags (CF PF AF ZF SF OF) and bit 1 */
    unsigned long sp;       /* the probed code's %rsp */
    unsigned long ss;
};

/* regs_return_value(), as in the kernel */
static inline unsigned long regs_return_value(const struct pt_regs *regs) { return regs->ax; }
#endif

/* Byte offsets, for the detour templates. */
#define PTREGS_R15 0
#define PTREGS_R14 8
#define PTREGS_R13 16
#define PTREGS_R12 24
#define PTREGS_BP 32
#define PTREGS_BX 40
#define PTREGS_R11 48
#define PTREGS_R10 56
#define PTREGS_R9 64
#define PTREGS_R8 72
#define PTREGS_AX 80
#define PTREGS_CX 88
#define PTREGS_DX 96
#define PTREGS_SI 104
#define PTREGS_DI 112
#define PTREGS_ORIG_AX 120
#define PTREGS_IP 128
#define PTREGS_CS 136
#define PTREGS_FLAGS 144
#define PTREGS_SP 152
#define PTREGS_SS 160
#define PTREGS_SIZE 168
#endif
