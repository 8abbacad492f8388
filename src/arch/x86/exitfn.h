/* Whether a function is the process's _exit (isa->exits_process). */
#ifndef KPREWRITE_X86_EXITFN_H
#define KPREWRITE_X86_EXITFN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Straight-line code from the entry (forward jumps followed) that loads
 * exit_group's number (231) with mov $imm32 in its first four
 * instructions and reaches a syscall within twelve. */
bool x86_exits_process(const uint8_t *code, size_t len, uint64_t at);
#endif
