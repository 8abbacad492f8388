/* Go's ABI wrappers (x86-64): Go names an ABI wrapper as the function it
 * wraps; the one that calls a Go function from assembly (ABI0 to
 * ABIInternal) sets up the registers ABIInternal takes as given before the
 * call: X15 zero, R14 the goroutine (Go's cmd/compile/abi-internal.md). */
#include "gowrap.h"

#include <string.h>

bool x86_enters_go_abi(const uint8_t *code, size_t len)
{
    static const uint8_t zero_x15[] = { 0x45, 0x0f, 0x57, 0xff };                             /* xorps %xmm15,%xmm15 */
    static const uint8_t load_g[] = { 0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff };   /* mov %fs:-8,%r14 */
    if (len > 64)
        len = 64;
    for (size_t i = 0; i < len; i++)
        if ((i + sizeof zero_x15 <= len && !memcmp(code + i, zero_x15, sizeof zero_x15)) ||
            (i + sizeof load_g <= len && !memcmp(code + i, load_g, sizeof load_g)))
            return true;
    return false;
}
