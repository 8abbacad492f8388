/*
 * The user runtime's reads that cannot fault (src/runtime/user/
 * safe-read-x86.S), which events use for dereferences and strings: exact
 * copies and lengths at every alignment, strings that end on the last byte
 * of a page before an unreadable one (a word read must never cross into
 * it), truncation, and faults resumed at the fixups as the runtime's fault
 * handler does (rt_safe_read_fixup, as fault.c).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/user/safe-read.h"
#include "tap.h"

static int faults;
static void on_segv(int sig, siginfo_t *si, void *vuc)
{
    (void)sig; (void)si;
    ucontext_t *uc = vuc;
    uintptr_t fixup = rt_safe_read_fixup((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
    if (fixup) {
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fixup;
        faults++;
        return;
    }
    _exit(99);   /* a fault outside the reads: a bug */
}

int main(void)
{
    plan_lazy();
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    sigaction(SIGSEGV, &sa, NULL);
    long page = sysconf(_SC_PAGESIZE);
    /* two readable pages, then one that is not */
    char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + 2 * page, page, PROT_NONE) != 0)
        bail("cannot map the test pages");
    char *edge = m + 2 * page;   /* the first unreadable byte */
    char dst[512];

    /* a string whose NUL is the last readable byte, every length to 300 */
    int bad = 0;
    for (int len = 0; len <= 300; len++) {
        char *s = edge - len - 1;
        memset(m, 'x', 2 * page);
        s[len] = 0;
        memset(dst, 0x5a, sizeof dst);
        size_t n = rt_safe_read_str(dst, (uintptr_t)s, 257);
        size_t want = len < 256 ? (size_t)len + 1 : 257;
        if (n != want || memcmp(dst, s, want - 1) != 0 || dst[want - 1] != 0)
            bad++;
    }
    is_int(0, bad, "strings ending on the last byte before an unreadable page: copied whole, lengths exact (0-300 bytes)");
    is_int(0, faults, "... with no fault");

    /* every alignment and length inside a page, with bytes after the NUL */
    bad = 0;
    for (int al = 0; al < 16; al++)
        for (int len = 0; len <= 70; len++) {
            char *s = m + 1000 + al;
            for (int i = 0; i < len; i++)
                s[i] = (char)('a' + (i * 7 + al) % 26);
            s[len] = 0;
            memset(s + len + 1, 'y', 16);
            memset(dst, 0x5a, sizeof dst);
            size_t n = rt_safe_read_str(dst, (uintptr_t)s, 256);
            if (n != (size_t)len + 1 || strcmp(dst, s) != 0)
                bad++;
        }
    is_int(0, bad, "every alignment (16) and length (0-70): the string and its NUL, no more counted");

    strcpy(m + 100, "hello world");
    memset(dst, 0x5a, sizeof dst);
    ok(rt_safe_read_str(dst, (uintptr_t)(m + 100), 5) == 5 && strcmp(dst, "hell") == 0, "max 5: four bytes and a NUL");
    ok(rt_safe_read_str(dst, (uintptr_t)(m + 100), 9) == 9 && strcmp(dst, "hello wo") == 0, "max 9: eight bytes and a NUL (a whole word, then the NUL)");
    ok(rt_safe_read_str(dst, (uintptr_t)(m + 100), 1) == 1 && dst[0] == 0, "max 1: the NUL alone");
    ok(rt_safe_read_str(dst, (uintptr_t)(m + 100), 0) == 0, "max 0: nothing");

    /* faults */
    faults = 0;
    memset(edge - 40, 'z', 40);   /* no NUL before the unreadable page */
    for (int back = 1; back <= 40; back++)
        if (rt_safe_read_str(dst, (uintptr_t)(edge - back), 256) != 0)
            bad++;
    is_int(0, bad, "a string running into an unreadable page: 0 (a fault), from each of the 40 bytes before it");
    is_int(40, faults, "... each resumed at the fixup once");
    ok(rt_safe_read_str(dst, (uintptr_t)edge, 256) == 0, "a string at an unreadable address: 0");
    ok(rt_safe_read_str(dst, 16, 256) == 0, "a string at address 16: 0");

    uint64_t v = 0, w = 0x1122334455667788ull;
    memcpy(m + 8, &w, 8);
    ok(rt_safe_read_word(&v, (uintptr_t)(m + 8)) && v == w, "an 8-byte load");
    v = 7;
    ok(!rt_safe_read_word(&v, (uintptr_t)edge) && v == 7, "an 8-byte load from an unreadable page: false, nothing written");
    ok(!rt_safe_read_word(&v, (uintptr_t)(edge - 4)), "an 8-byte load across into it: false");
    ok(rt_safe_read(dst, (uintptr_t)(edge - 4), 8) < 8, "rt_safe_read across into it: short (a fault)");
    return tap_done();
}
