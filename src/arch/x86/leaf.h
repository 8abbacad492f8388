/* What a leaf function of x86-64 code returns when it computes it from
 * constants alone (isa->leaf_value, ../isa.h). */
#ifndef KPREWRITE_X86_LEAF_H
#define KPREWRITE_X86_LEAF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../isa.h"

/* The value %rax (%eax) holds at the function's ret, when its straight-line
 * code sets it from an immediate or a RIP-relative address and loads
 * through it (at most twice): `mov $imm,%eax`, `lea sym(%rip),%rax`,
 * `mov sym(%rip),%eax`, `lea slot(%rip),%rax; mov (%rax),%rax`. endbr64
 * and nops are skipped; anything else is false. */
bool x86_leaf_value(const uint8_t *code, size_t len, uint64_t at, struct isa_leaf_value *out);
#endif
