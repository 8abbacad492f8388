/* Is a function x86-64 Linux's _exit (isa->exits_process, ../isa.h), or
 * libc's sigaction (isa->sets_signal_action)? The static runtime prints
 * its report at the one and guards its SIGTRAP at the other; a stripped
 * static executable names neither, so kprewrite knows them by their code:
 * glibc's _exit loads 231 (exit_group) into %esi and jumps to `mov
 * %esi,%eax; syscall`, musl's moves it into %eax and makes the call; both
 * libcs' __libc_sigaction make the rt_sigaction call (13) with the
 * signal set's size, 8, in %r10. */
#include "exitfn.h"
#include "decode.h"

#include <string.h>

#define NR_EXIT_GROUP 231
#define NR_RT_SIGACTION 13
#define SIGSET_SIZE 8

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

/* mov $imm32,%r10d (41 ba imm32): the immediate, else -1 */
static int64_t mov_r10d(const uint8_t *p, unsigned n)
{
    uint32_t v;
    if (n != 6 || p[0] != 0x41 || p[1] != 0xba)
        return -1;
    memcpy(&v, p + 2, 4);
    return v;
}

bool x86_sets_signal_action(const uint8_t *code, size_t len, uint64_t at)
{
    int64_t last_nr = -1000, last_size = -1000;   /* where the two were loaded (instruction numbers) */
    size_t off = 0;
    for (int64_t k = 0; off < len; k++) {
        struct x86_insn in;
        unsigned n = x86_decode(code + off, len - off, at + off, &in);
        if (!n)
            return false;
        if (mov_imm32(code + off, n) == NR_RT_SIGACTION && code[off] == 0xb8)   /* mov $13,%eax */
            last_nr = k;
        if (mov_r10d(code + off, n) == SIGSET_SIZE)
            last_size = k;
        if (in.kind == XK_SYSCALL && k - last_nr <= 6 && k - last_size <= 6)
            return true;
        off += n;
    }
    return false;
}
