/*
 * The pool a probed image reserves at link time, which kprewrite fills in
 * place after linking. Linking libkprewrite-pool (pkg-config kprewrite-rt)
 * pulls in the default pool:
 *
 *   KPREWRITE_POOL_TEXT  64 KiB   detours and out-of-line copies
 *   KPREWRITE_POOL_TABLE 32 KiB   probe table and names (read-only)
 *   KPREWRITE_POOL_DATA  16 KiB   live state, 32 bytes a probe
 *
 * A detour is about 170 bytes and a table entry 64 bytes plus the name, so
 * the default holds a few hundred probes. To enlarge it, put
 *
 *   #include <kprewrite/pool.h>
 *   KPREWRITE_POOL(1 << 20, 256 << 10, 64 << 10)
 *
 * in exactly one C file of the program (or library): it then replaces the
 * default pool. kprewrite names the size needed when a pool is too small.
 */
#ifndef KPREWRITE_POOL_H
#define KPREWRITE_POOL_H

#define KPREWRITE_POOL_TEXT (64 << 10)
#define KPREWRITE_POOL_TABLE (32 << 10)
#define KPREWRITE_POOL_DATA (16 << 10)

void __kprewrite_register_pool(const void *table);
void __kprewrite_dispatch(void *state, void *regs);
unsigned long __kprewrite_return(void *regs);
void __kprewrite_kret_enter(void);   /* its own convention: see kretprobe-fast.S */
void __kprewrite_kret_return(void);  /* jumped to, not called: see kretprobe-fast.S */
void __kprewrite_enter(void);        /* its own convention: see enter-fast.S */

#define KPREWRITE_POOL_STR_(x) #x
#define KPREWRITE_POOL_STR(x) KPREWRITE_POOL_STR_(x)

/* The sections are plain PROGBITS so kprewrite can fill them in the file;
 * the slot holds ordinary relocated pointers to the runtime's dispatcher,
 * its return handler (for return probes' trampoline), its return-probe
 * entry and its return-probe return. */
#define KPREWRITE_POOL(text, table, data)                                              \
    __asm__(".pushsection .kprewrite.text,\"ax\",@progbits\n"                          \
            ".balign 4096\n"                                                             \
            ".fill " KPREWRITE_POOL_STR(text) ",1,0xcc\n"                               \
            ".popsection\n"                                                              \
            ".pushsection .kprewrite.table,\"a\",@progbits\n"                          \
            ".balign 64\n"                                                               \
            "__kprewrite_pool_table:\n"                                                  \
            ".fill " KPREWRITE_POOL_STR(table) ",1,0\n"                                 \
            ".popsection\n"                                                              \
            ".pushsection .kprewrite.data,\"aw\",@progbits\n"                          \
            ".balign 64\n"                                                               \
            ".fill " KPREWRITE_POOL_STR(data) ",1,0\n"                                  \
            ".popsection\n"                                                              \
            ".pushsection .kprewrite.slot,\"aw\",@progbits\n"                          \
            ".balign 8\n"                                                                \
            ".quad __kprewrite_dispatch\n"                                               \
            ".quad __kprewrite_return\n"                                                 \
            ".quad __kprewrite_kret_enter\n"                                             \
            ".quad __kprewrite_kret_return\n"                                            \
            ".quad __kprewrite_enter\n"                                                  \
            ".popsection\n"                                                              \
            ".globl __kprewrite_pool\n"                                                  \
            ".hidden __kprewrite_pool\n"                                                 \
            ".set __kprewrite_pool, __kprewrite_pool_table\n");                         \
    extern const char __kprewrite_pool_table[] __attribute__((visibility("hidden")));   \
    __attribute__((constructor(101))) static void __kprewrite_pool_ctor(void)           \
    {                                                                                    \
        __kprewrite_register_pool(__kprewrite_pool_table);                              \
    }
#endif
