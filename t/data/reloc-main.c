/* t/reloc.t: runs one shape of reloc-shapes.S (argv[1]) and prints what
 * it returned and, for shapes that call, where the callee returned to (as
 * an offset in the image: an address in the probe pool shows up as a
 * different offset). The original and the rewritten program must print
 * the same. "list" prints the shapes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern long rs_callee(long), rs_callee_si(long, long);
extern long s_jmp_rip(long), s_jmp_got(long), s_call_rip_end(long), s_call_got_end(long);
extern long s_call_rax(long, void *), s_call_rsp8(long, void *), s_call_mem(void *, long), s_call_mid(long, void *);
extern long s_jmp_rax(long, void *), s_call_rel_end(long), s_int3_call(long, void *);
extern int s_jcc(int), s_rip_load(int), s_cmpl_imm(void), s_cmpw_imm(void), s_lock_inc(void), s_int3_rip(int);
extern void s_rip_store(int), s_sse_packed(void), s_avx(void), s_avx512(void);
extern void *s_rip_lea(void);
extern long s_movq_imm(void);
extern int s_movb_imm(void);
extern double s_sse(void);
extern uintptr_t rs_last_ret;
extern int rs_var;
extern int32_t rs_out[16];
extern int64_t rs_out64[8] __asm__("rs_out");
extern void *rs_fpp;
extern char __executable_start[];

/* where the last callee returned to, from the image's start */
static long ret_off(void)
{
    long r = rs_last_ret ? (long)(rs_last_ret - (uintptr_t)__executable_start) : -1;
    rs_last_ret = 0;
    return r;
}

/* the value, then where the callee returned to (in this order) */
#define CALLRET(e) do { long r_ = (e); long o_ = ret_off(); printf(" %ld ret %ld", r_, o_); } while (0)

static void vec(int n)
{
    for (int i = 0; i < n; i++)
        printf(" %d", rs_out[i]);
}

static const char *const shapes[] = {
    "jmp_rip", "jmp_got", "call_rip_end", "call_got_end", "call_rax", "call_rsp8", "call_mem", "call_mid",
    "jmp_rax", "jcc", "rip_load", "rip_store", "rip_lea", "cmpl_imm", "movq_imm", "movb_imm", "cmpw_imm",
    "lock_inc", "sse", "sse_packed", "avx", "avx512", "call_rel_end", "int3_call", "int3_rip",
};

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "list";
    if (!strcmp(s, "list")) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            puts(shapes[i]);
        return 0;
    }
    printf("%s:", s);
    if (!strcmp(s, "jmp_rip")) CALLRET(s_jmp_rip(5));
    else if (!strcmp(s, "jmp_got")) printf(" %ld %ld", s_jmp_got(-5), s_jmp_got(9));
    else if (!strcmp(s, "call_rip_end")) CALLRET(s_call_rip_end(6));
    else if (!strcmp(s, "call_got_end")) printf(" %ld %ld", s_call_got_end(-6), s_call_got_end(4));
    else if (!strcmp(s, "call_rax")) CALLRET(s_call_rax(7, (void *)rs_callee));
    else if (!strcmp(s, "call_rsp8")) CALLRET(s_call_rsp8(8, (void *)rs_callee));
    else if (!strcmp(s, "call_mem")) CALLRET(s_call_mem(&rs_fpp, 9));
    else if (!strcmp(s, "call_mid")) CALLRET(s_call_mid(10, (void *)rs_callee));
    else if (!strcmp(s, "jmp_rax")) CALLRET(s_jmp_rax(11, (void *)rs_callee));
    else if (!strcmp(s, "jcc")) printf(" %d %d", s_jcc(0), s_jcc(41));
    else if (!strcmp(s, "rip_load")) printf(" %d", s_rip_load(35));
    else if (!strcmp(s, "rip_store")) { s_rip_store(1234); printf(" %d", rs_var); }
    else if (!strcmp(s, "rip_lea")) printf(" %d", s_rip_lea() == (void *)&rs_var);
    else if (!strcmp(s, "cmpl_imm")) { int a = s_cmpl_imm(); rs_var = 1; printf(" %d %d", a, s_cmpl_imm()); }
    else if (!strcmp(s, "movq_imm")) printf(" %#lx", s_movq_imm());
    else if (!strcmp(s, "movb_imm")) printf(" %#x", s_movb_imm());
    else if (!strcmp(s, "cmpw_imm")) { int a = s_cmpw_imm(); rs_var = 0x51234; printf(" %d %d", a, s_cmpw_imm()); }
    else if (!strcmp(s, "lock_inc")) { int a = s_lock_inc(); printf(" %d %d", a, s_lock_inc()); }
    else if (!strcmp(s, "sse")) printf(" %g", s_sse());
    else if (!strcmp(s, "sse_packed")) { s_sse_packed(); vec(4); }
    else if (!strcmp(s, "avx")) {
        if (__builtin_cpu_supports("avx2")) { s_avx(); vec(8); } else printf(" no avx2 here");
    } else if (!strcmp(s, "avx512")) {
        if (__builtin_cpu_supports("avx512f")) {
            s_avx512();
            for (int i = 0; i < 8; i++)
                printf(" %" PRId64, rs_out64[i]);
        } else {
            printf(" no avx512f here");
        }
    }
    else if (!strcmp(s, "call_rel_end")) CALLRET(s_call_rel_end(12));
    else if (!strcmp(s, "int3_call")) CALLRET(s_int3_call(5, (void *)rs_callee));
    else if (!strcmp(s, "int3_rip")) printf(" %d", s_int3_rip(100));
    else { printf(" unknown shape\n"); return 2; }
    putchar('\n');
    return 0;
}
