/* Whether a function is the process's _exit (isa->exits_process) or
 * libc's sigaction (isa->sets_signal_action). */
#ifndef KPREWRITE_X86_EXITFN_H
#define KPREWRITE_X86_EXITFN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Straight-line code from the entry (forward jumps followed) that loads
 * exit_group's number (231) with mov $imm32 in its first four
 * instructions and reaches a syscall within twelve. */
bool x86_exits_process(const uint8_t *code, size_t len, uint64_t at);
/* Whether the function (decoded linearly to its end) makes the
 * rt_sigaction system call: mov $13,%eax and mov $8,%r10d within the six
 * instructions before a syscall. */
bool x86_sets_signal_action(const uint8_t *code, size_t len, uint64_t at);
#endif
