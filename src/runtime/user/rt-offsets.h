/* Field offsets the assembly dispatcher (dispatch.S) uses; rt.c checks
 * every one of them against the C structures at compile time. */
#ifndef KPREWRITE_RT_OFFSETS_H
#define KPREWRITE_RT_OFFSETS_H

/* struct kprw_state (abi.h) */
#define ST_RT 0
/* struct point (rt.h) */
#define PT_ADDR 0
#define PT_FLAGS 20
#define PT_ID 24
#define PT_HANDLERS 56
#define PT_FPU 64
#define PT_CODE 88
/* struct kprobe (kprobes.h) */
#define KP_PRE_HANDLER 24
#define KP_FLAGS 48
#define KP_NEXT 64
/* struct kretprobe (kprobes.h) */
#define KRP_ENTRY_HANDLER 80
/* struct rt_thread (rt.h) */
#define TH_HITS 0
#define TH_CAP 8
#define TH_RUNNING 16
#define TH_HOOK 40

/* constants */
#define CODE_DISABLED_VALUE 2          /* enum code_state CODE_DISABLED */
#define KPRW_F_FLAGS_SAVED_VALUE 2     /* abi.h */
#define KPROBE_FLAG_DISABLED_VALUE 2   /* kprobes.h */
#endif
