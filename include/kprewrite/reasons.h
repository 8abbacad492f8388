/*
 * The fixed vocabulary of verdict reasons, shared by the report, the probe
 * table and the tests. Each entry: identifier, printed name, one-line meaning.
 * doc/reasons.md and kprewrite(1) list the same words; t/reasons.t checks that.
 * Numbers are part of the probe-table ABI: append only, never renumber.
 */
#ifndef KPREWRITE_REASONS_H
#define KPREWRITE_REASONS_H

#define KP_REASONS(X) \
    X(NONE,               "none",                     "no reason: the probe is optimized") \
    X(TOO_SHORT,          "too-short",                "fewer than 5 bytes of whole instructions before the function ends") \
    X(CROSSES_FUNCTION,   "crosses-function",         "the 5-byte jump would run into the next function") \
    X(JUMP_INTO_DCR,      "jump-into-dcr",            "a branch, call, jump-table entry, landing pad or fixup targets the DCR after its first byte") \
    X(INDIRECT_JUMP,      "indirect-jump",            "the function has an indirect jump whose targets cannot be proven") \
    X(NOT_RELOCATABLE,    "not-relocatable",          "an instruction of the DCR cannot run out of line (int3, ud2, int n, syscall, privileged, loop/jrcxz, xbegin, ...)") \
    X(CALL_IN_DCR,        "call-in-dcr",              "the DCR holds a call and the image has no unwind data for detours (vmlinux: ORC)") \
    X(EXCEPTION_TABLE,    "exception-table",          "an instruction of the function has an exception-table entry (__ex_table): its fixup may jump back in") \
    X(RESERVED,           "reserved",                 "the DCR overlaps a site the kernel patches or searches (printed as reserved:<table>)") \
    X(NOT_INSN_BOUNDARY,  "not-instruction-boundary", "the probe address is inside an instruction") \
    X(BLACKLISTED,        "blacklisted",              "the function may not be probed (kprobe blacklist, .kprobes.text, .noinstr.text, .entry.text, __cfi_/__pfx_, or a piece of such a function)") \
    X(OUTSIDE_FUNCTION,   "outside-function",         "the offset is at or past the end of the function") \
    X(NO_FUNCTION,        "no-function",              "no function (symbol or FDE) covers the address") \
    X(NOT_EXECUTABLE,     "not-executable",           "the address is not in an executable section") \
    X(DECODE_FAILED,      "decode-failed",            "the function's bytes do not decode as x86-64 up to the probe") \
    X(PLT_STUB,           "plt-stub",                 "the address is in a PLT stub (.plt, .plt.got, .plt.sec)") \
    X(INIT_FINI_STUB,     "init-fini-stub",           "the address is in the .init or .fini stub") \
    X(RETURN_NOT_AT_ENTRY,"return-not-at-entry",      "a return probe must be on the function entry") \
    X(OVERLAPS_PROBE,     "overlaps-probe",           "another probe lies inside the DCR (that one keeps its place)") \
    X(NORETURN,           "noreturn",                 "a return probe on a function that never returns (no ret, no tail jump): its instances would never come back") \
    X(STACK_SWITCH,       "stack-switch",             "a return probe on a function that loads %rsp from elsewhere (a context or coroutine switch): its return cannot be matched") \
    X(RETURNS_TWICE,      "returns-twice",            "a return probe on setjmp, vfork, getcontext or the like: the second return would find no instance") \
    X(NOT_CALLED,         "not-called",               "a return probe on code that is jumped to, not called (a .cold piece, a landing pad): by its unwind data the stack holds no return address there") \
    X(UNDECODABLE_OPERANDS,"undecodable-operands",    "an instruction the probe would copy out of line decodes, but its operands do not: whether its displacement is RIP-relative (and must be re-pointed) is unknown") \
    X(MOVES_AT_RUN_TIME,  "moves-at-run-time",        "the code is copied or remapped elsewhere at run time and run there (V8's embedded builtins): a jump there would run from the copy") \
    X(SIGNAL_FRAME,       "signal-frame",             "the address is in a signal trampoline (an FDE whose CIE has the S augmentation, as glibc's __restore_rt): the kernel returns into it from a signal handler, and unwinders and debuggers know it by its bytes") \
    X(UNPROVEN_ENTRY,     "unproven-entry",           "the function has no symbol and its start (from an FDE) is not proven an instruction boundary: a linear decode from the preceding symbol or section start runs through it") \
    X(GO_RUNTIME,         "go-runtime",               "a Go runtime function that switches stacks or runs without a goroutine's frame (morestack, mcall, systemstack, gogo, asmcgocall, cgocallback, rt0_go, sigtramp, goexit, ...), or a Go function that Go marks SPWRITE (or a runtime one TOPFRAME): no room for a detour below its SP") \
    X(GO_RETURN,          "go-return",                "a return probe on a Go function: Go copies goroutine stacks as they grow, and its unwinder (tracebacks, panics, stack growth, the GC) rejects a return address it does not know") \
    X(GO_STACK,           "go-stack",                 "a probe in a Go function other than a kprobe at its entry with a compact detour (the default): any other detour saves its registers below a 128-byte red zone on the goroutine stack, past what Go's stack guard leaves free; an int3 runs on the signal stack") \
    X(GO_SIGTRAP,         "go-sigtrap",               "a probe that needs an int3 in a static Go executable: Go's runtime installs its own SIGTRAP handler with a system call of its own (no libc to interpose), so a trap would end the program; only jumps are baked there")

enum kp_reason {
#define KP_REASON_ENUM(id, name, text) KP_R_##id,
    KP_REASONS(KP_REASON_ENUM)
#undef KP_REASON_ENUM
    KP_R__COUNT
};

#endif
