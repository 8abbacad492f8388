/* Whether a Go ABI wrapper calls into Go's register ABI
 * (isa->enters_go_abi). */
#ifndef KPREWRITE_X86_GOWRAP_H
#define KPREWRITE_X86_GOWRAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Within its first 64 bytes: xorps %xmm15,%xmm15 (X15 is zero in
 * ABIInternal) or mov %fs:-8,%r14 (R14 holds the goroutine). */
bool x86_enters_go_abi(const uint8_t *code, size_t len);
#endif
