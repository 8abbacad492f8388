/* Field offsets the assembly fast paths (dispatch.S, kretprobe-fast.S) use;
 * rt.c and kretprobe.c check every one of them against the C structures
 * at compile time. */
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
#define PT_KRET 112
/* struct kprobe (kprobes.h) */
#define KP_PRE_HANDLER 24
#define KP_FLAGS 48
#define KP_NEXT 64
/* struct kretprobe (kprobes.h) */
#define KRP_ENTRY_HANDLER 80
#define KRP_HOLDER 104
/* struct kretprobe_instance (kprobes.h) */
#define RI_RET 8
#define RI_SLOT 24
#define RI_HOLDER 32
#define RI_NEXT 40
/* struct holder (kretprobe.c) */
#define H_PT 8
#define H_KC_OFF 16
#define H_FAST 24
/* struct rt_thread (rt.h) */
#define TH_HITS 0
#define TH_CAP 8
#define TH_RUNNING 16
#define TH_RACTIVE 32
#define TH_HOOK 40
#define TH_LISTED 12
#define TH_STEAL 48
#define TH_HOT 56
/* struct rt_kcache (rt.h), at H_KC_OFF in struct rt_thread */
#define KC_HOLDER 0
#define KC_HEAD 8
#define KC_N 16

/* constants */
#define CODE_DISABLED_VALUE 2          /* enum code_state CODE_DISABLED */
#define KPRW_F_FLAGS_SAVED_VALUE 2     /* abi.h */
#define KPROBE_FLAG_DISABLED_VALUE 2   /* kprobes.h */
#define KC_MAX_VALUE 2                 /* kretprobe.c: cached instances a way */
#endif
