/* Is a function x86-64 Linux's _exit (isa->exits_process, ../isa.h)? The
 * static runtime prints its report there; a stripped static executable
 * names no _exit, so kprewrite knows it by its code: glibc's loads 231
 * (exit_group) into %esi and jumps to `mov %esi,%eax; syscall`, musl's
 * moves it into %eax and makes the call. */
#include "exitfn.h"
#include "decode.h"

#include <string.h>

#define NR_EXIT_GROUP 231

/* mov $imm32,%r32 (b8+r, or 41 b8+r): the immediate, else -1 */
static int64_t mov_imm32(const uint8_t *p, unsigned n)
{
    uint32_t v;
    if (n == 5 && p[0] >= 0xb8 && p[0] <= 0xbf) {
        memcpy(&v, p + 1, 4);
        return v;
    }
    if (n == 6 && p[0] == 0x41 && p[1] >= 0xb8 && p[1] <= 0xbf) {
        memcpy(&v, p + 2, 4);
        return v;
    }
    return -1;
}

bool x86_exits_process(const uint8_t *code, size_t len, uint64_t at)
{
    bool nr = false;
    size_t off = 0;
    for (int k = 0; k < 12 && off < len; k++) {
        struct x86_insn in;
        unsigned n = x86_decode(code + off, len - off, at + off, &in);
        if (!n)
            return false;
        if (k < 4 && mov_imm32(code + off, n) == NR_EXIT_GROUP)
            nr = true;
        if (in.kind == XK_SYSCALL)
            return nr;
        if (in.kind == XK_JMP && in.target > at && in.target < at + len) {   /* forward, in the function */
            off = in.target - at;
            continue;
        }
        if (x86_has_target(&in) || x86_ends_flow(&in))
            return false;
        off += n;
    }
    return false;
}
