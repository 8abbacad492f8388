/*
 * What tracing asks an ISA: the registers by name (kprobe_events' %REG) and
 * their slots in the ISA's struct pt_regs, where the function arguments are
 * ($argN), the return value ($retval) and the stack pointer ($stack). Each
 * ISA answers in src/arch/<isa>/regs.h; the runtime core's event parser
 * takes the answer as a parameter, so the rewriter can check a definition
 * for the image's ISA whatever it runs on. Header-only, no libc.
 */
#ifndef KPREWRITE_FETCH_ISA_H
#define KPREWRITE_FETCH_ISA_H

struct kprw_reg_name {
    char name[8];                /* (an array: a table of them holds no address to relocate) */
    unsigned char slot;          /* index of an 8-byte slot of pt_regs */
};

struct kprw_fetch_isa {
    const struct kprw_reg_name *names;
    unsigned nnames;
    const unsigned char *arg_slots;   /* $arg1.. in registers */
    unsigned narg_regs;
    unsigned char retval, sp, ip;     /* slots */
    unsigned char nslots;             /* pt_regs' size in slots */
    unsigned char word;               /* bytes in a pointer and a stack slot */
    unsigned char entry_prefix;       /* bytes a SYM+0 probe may be placed past (x86:
                                         endbr64, 4): SYM+OFF up to it may be an entry */
};
#endif
