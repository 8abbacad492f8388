/* The x86 kernel's tables and code rules (kernel-tables.c), in the terms
 * of ../ktable.h: x86-64's answer to isa->kernel (../isa.h). */
#ifndef KPREWRITE_X86_KERNEL_TABLES_H
#define KPREWRITE_X86_KERNEL_TABLES_H
#include "../isa.h"
#include "../ktable.h"

extern const struct isa_kernel x86_kernel;
#endif
