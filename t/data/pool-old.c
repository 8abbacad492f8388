/* A pool as libkprewrite-pool reserved it before the return-probe return
 * (OLD_SLOTS 3: the dispatcher, the return handler and the return-probe
 * entry) or before the entry too (OLD_SLOTS 2), for t/kretprobe.t: return
 * probes baked into it must carry the return frame in their detours, and
 * with two slots enter through the dispatcher. */
#include "kprewrite/pool.h"

__asm__(".pushsection .kprewrite.text,\"ax\",@progbits\n"
        ".balign 4096\n"
        ".fill 65536,1,0xcc\n"
        ".popsection\n"
        ".pushsection .kprewrite.table,\"a\",@progbits\n"
        ".balign 64\n"
        "old_pool_table:\n"
        ".fill 32768,1,0\n"
        ".popsection\n"
        ".pushsection .kprewrite.data,\"aw\",@progbits\n"
        ".balign 64\n"
        ".fill 16384,1,0\n"
        ".popsection\n"
        ".pushsection .kprewrite.slot,\"aw\",@progbits\n"
        ".balign 8\n"
        ".quad __kprewrite_dispatch\n"
        ".quad __kprewrite_return\n"
#if OLD_SLOTS > 2
        ".quad __kprewrite_kret_enter\n"
#endif
        ".popsection\n");
extern const char old_pool_table[] __attribute__((visibility("hidden")));

__attribute__((constructor(101))) static void old_pool_ctor(void)
{
    __kprewrite_register_pool(old_pool_table);
}
