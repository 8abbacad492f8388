/* The x86 kernel tables' entry layouts (kernel-tables.c), in the form the
 * generic reader takes (struct ktable_desc, src/rewriter/ktables.h). */
#ifndef KPREWRITE_X86_KERNEL_TABLES_H
#define KPREWRITE_X86_KERNEL_TABLES_H
#include "../../rewriter/ktables.h"

extern const struct ktable_desc x86_ktables[];
extern const size_t x86_nktables;
extern const struct kcode_range x86_kcode_keep[];
extern const size_t x86_nkcode_keep;
/* Sections of code outside every function that branches into functions
 * (static_cpu_has()'s slow paths): their targets are branch targets. */
extern const char *const x86_kcode_branching[];
extern const size_t x86_nkcode_branching;
/* Prefixes of the symbols the compiler puts on a function's padding (call
 * padding, CFI preambles): function-typed, but no function's entry. */
extern const char *const x86_kpadding_prefixes[];
extern const size_t x86_nkpadding_prefixes;
#endif
