/*
 * The runtime core's events (src/runtime/core/event*.c), compiled as the
 * runtimes compile them: definitions in kprobe_events' syntax (each fetch
 * form, each type, errors with their columns), fetching into records over
 * a pretend pt_regs and memory with holes (faults), filters, and the
 * printed lines, names and histograms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/regs.h"
#include "runtime/core/event.h"
#include "tap.h"

static char arena_mem[1 << 20];
static struct kprw_arena arena;

static bool parse(const char *def, struct kprw_event *ev, struct kprw_ev_error *err)
{
    arena = (struct kprw_arena){ arena_mem, sizeof arena_mem, 0 };
    return kprw_event_parse(&x86_fetch_isa, def, strlen(def), &arena, ev, err);
}

/* ---- a pretend process: registers, and memory with holes ---- */
static unsigned long regs[X86_NSLOTS];
static char mem[4096];          /* readable */
static char stack[256];         /* readable: the stack */

static bool readable(uintptr_t a, size_t n)
{
    uintptr_t m = (uintptr_t)mem, s = (uintptr_t)stack;
    return (a >= m && a + n <= m + sizeof mem) || (a >= s && a + n <= s + sizeof stack);
}

static size_t t_read(void *dst, uintptr_t src, size_t n)
{
    if (!readable(src, n))
        return 0;
    memcpy(dst, (void *)src, n);
    return n;
}

static size_t t_read_str(char *dst, uintptr_t src, size_t max)
{
    size_t i = 0;
    for (; i + 1 < max; i++) {
        if (!readable(src + i, 1))
            return 0;
        if (!(dst[i] = *(char *)(src + i)))
            return i + 1;
    }
    dst[i] = 0;
    return i + 1;
}

static bool t_read_word(uint64_t *dst, uintptr_t src) { return t_read(dst, src, 8) == 8; }

static uint64_t entry_vals[KPRW_EV_ENTRY_ARGS];
static const struct kprw_fetch_env env = { regs, entry_vals, "tester", t_read, t_read_str, t_read_word, X86_SP };

static bool t_sym(void *ctx, uint64_t addr, bool with_off, struct kprw_sbuf *b)
{
    (void)ctx;
    if (addr < (uintptr_t)mem || addr >= (uintptr_t)mem + sizeof mem)
        return false;
    kprw_sb_str(b, "mem");
    if (with_off) {
        kprw_sb_char(b, '+');
        kprw_sb_hex(b, addr - (uintptr_t)mem);
        kprw_sb_str(b, "/0x1000");
    }
    return true;
}
static const struct kprw_fmt_env fenv = { t_sym, NULL };

static uint8_t rec[1 << 16];

/* Fetch and print a definition's arguments: " a=1 b=2", or "ERR col: msg". */
static const char *run(const char *def)
{
    static char out[4096];
    struct kprw_event ev;
    struct kprw_ev_error err;
    if (!parse(def, &ev, &err)) {
        snprintf(out, sizeof out, "ERR %zu: %s", err.col, err.msg);
        return out;
    }
    memset(rec, 0xa5, sizeof rec);
    uint32_t size = kprw_event_fetch(&ev, &env, rec);
    if (size > ev.max_size || size % 8)
        return "BAD SIZE";
    struct kprw_sbuf b = { out, 0, sizeof out };
    kprw_event_print_args(&ev, rec, &fenv, &b);
    kprw_sb_end(&b);
    return out;
}

static void setup(void)
{
    memset(regs, 0, sizeof regs);
    memset(mem, 0, sizeof mem);
    regs[X86_DI] = 3;
    regs[X86_SI] = (uintptr_t)mem;              /* a pointer */
    regs[X86_DX] = 100;
    regs[X86_CX] = (unsigned long)-2;
    regs[X86_R8] = 0x10;                        /* not a pointer: reads fault */
    regs[X86_R9] = (uintptr_t)(mem + 64);
    regs[X86_AX] = 42;
    regs[X86_SP] = (uintptr_t)stack;
    unsigned long sv[4] = { 0x401000, 7, 8, (uintptr_t)(mem + 128) };
    memcpy(stack, sv, sizeof sv);
    strcpy(mem, "hello");
    uint32_t u = 0xfffffffe;
    memcpy(mem + 16, &u, 4);
    uintptr_t p = (uintptr_t)(mem + 64);
    memcpy(mem + 24, &p, 8);                    /* mem+24 -> mem+64 */
    strcpy(mem + 64, "inner");
    memcpy(mem + 96, "\x01\x02\x03\x04", 4);
    strcpy(mem + 128, "on the stack");
}

static void test_fetch_forms(void)
{
    setup();
    is_string(" arg1=0x3", run("f %di"), "%%REG: x64 by default, named arg1");
    is_string(" fd=3 n=100", run("f fd=%di:s32 n=%dx:u64"), "NAME=FETCH:TYPE");
    is_string(" a=0x3", run("f a=%rdi"), "the assembler's register names are aliases");
    is_string(" a=-2 b=4294967294 c=0xfffffffe d=254 e=-2 f=0xfe", run("f a=%cx:s64 b=%cx:u32 c=%cx:x32 d=%cx:u8 e=%cx:s8 f=%cx:x8"),
              "each integer type and size truncates and extends as the kernel's");
    is_string(" s=\"hello\"", run("f s=%si:string"), "string at a register's address");
    is_string(" s=\"hello\"", run("f s=+0(%si):string"), "string: +0(...) reads the string there");
    is_string(" s=\"inner\"", run("f s=+0(+24(%si)):string"), "nested dereferences");
    is_string(" v=-2", run("f v=+16(%si):s32"), "a dereference reads the type's size");
    is_string(" v=0xfffffffe", run("f v=+u16(%si):x32"), "+uOFF: user memory, the same here");
    is_string(" v=0x6f6c6c", run("f v=-62(%r9):x32"), "negative dereference offsets");
    is_string(" a={0x1,0x2,0x3,0x4}", run("f a=+96(%si):x8[4]"), "arrays: TYPE[N] after a dereference");
    is_string(" a={513,1027}", run("f a=+96(%si):u16[2]"), "u16 arrays");
    is_string(" c='h'", run("f c=+0(%si):char"), "char");
    is_string(" r=0x401000", run("f r=$stack0"), "$stack0: the return address at an entry");
    is_string(" w=7", run("f w=$stack1:u64"), "$stackN");
    char want[64];
    snprintf(want, sizeof want, " sp=0x%lx", (unsigned long)(uintptr_t)stack);
    is_string(want, run("f sp=$stack"), "$stack: the stack pointer");
    is_string(" a1=3 a3=100 a4=-2 a5=0x10 a6=0x69", run("f a1=$arg1:u32 a3=$arg3:u32 a4=$arg4:s64 a5=$arg5 a6=+0($arg6):x8"),
              "$arg1..$arg6 are di si dx cx r8 r9");
    is_string(" a7=7 a8=8", run("f a7=$arg7:u8 a8=$arg8:u64"), "$arg7 on: the stack past the return address");
    is_string(" c=\"tester\"", run("f c=$comm"), "$comm: a string");
    is_string(" c=\"tester\"", run("f c=$COMM:string"), "$COMM:string");
    is_string(" i=-5 j=0x10", run("f i=\\-5:s32 j=\\0x10"), "\\IMM");
    is_string(" s=\"on the stack\"", run("f s=+0($stack3):string"), "a string through a stack slot");
    is_string(" s=mem+0x40/0x1000 t=0x10", run("f s=%r9:symbol t=%r8:symbol"), "symbol: sym+off/size, or hex");
    is_string(" r=42", run("r f r=$retval:u32"), "$retval on a return event");
    is_string(" r=42", run("f%return r=$retval:u32"), "SYM%%return is a return event");
}

/* kprw_rec_valid: a reader of another process's ring (kprewrite ctl on a
 * static program) takes only records the event can have made */
static void test_rec_valid(void)
{
    setup();
    struct kprw_event ev;
    struct kprw_ev_error err;
    ok(parse("f s=+0(%si):string n=%di:u32", &ev, &err), "parsed");
    memset(rec, 0xa5, sizeof rec);
    uint32_t size = kprw_event_fetch(&ev, &env, rec);
    ok(kprw_rec_valid(&ev, rec, size), "a record the event made is valid");
    ok(!kprw_rec_valid(&ev, rec, ev.fixed - 8), "... not with fewer bytes than its fixed part");
    ok(!kprw_rec_valid(&ev, rec, ev.max_size + 8), "... nor with more than the event can make");
    uint32_t loc;
    memcpy(&loc, rec + ev.args[0].off, 4);
    uint32_t bad = (loc & 0xffff0000u) | (size - 2);   /* the string running past the record */
    memcpy(rec + ev.args[0].off, &bad, 4);
    ok(!kprw_rec_valid(&ev, rec, size), "a string past the record's end: invalid");
    bad = (loc & 0xffff0000u) | 4;                      /* inside the header */
    memcpy(rec + ev.args[0].off, &bad, 4);
    ok(!kprw_rec_valid(&ev, rec, size), "a string inside the fixed part: invalid");
    memcpy(rec + ev.args[0].off, &loc, 4);
    rec[(loc & 0xffff) + (loc >> 16) - 1] = 'x';
    ok(!kprw_rec_valid(&ev, rec, size), "a string without its NUL: invalid");
}

/* kprw_clock: clock units to nanoseconds by two readings */
static void test_clock(void)
{
    struct kprw_clock c;
    kprw_clock_map(&c, 1000, 5000, 2000, 6000);
    ok(kprw_clock_ns(&c, 1000) == 5000 && kprw_clock_ns(&c, 1500) == 5500 && kprw_clock_ns(&c, 3000) == 7000,
       "clock: units that are nanoseconds already map one to one");
    ok(kprw_clock_ns(&c, 10) == 5000, "clock: a time before the first reading is that reading's");
    /* a 3 GHz TSC, an hour between the readings: within a microsecond at its end */
    uint64_t t0 = 123456789, ns0 = 987654321, hour = 3600ull * 1000000000u;
    kprw_clock_map(&c, t0, ns0, t0 + 3 * hour, ns0 + hour);
    uint64_t got = kprw_clock_ns(&c, t0 + 3 * hour - 3), want = ns0 + hour - 1;
    ok(got + 1000 >= want && got <= want + 1000, "clock: an hour of a 3 GHz TSC, to within 1 us at its end");
    ok(kprw_clock_ns(&c, t0 + 3000) == ns0 + 1000 - 1 || kprw_clock_ns(&c, t0 + 3000) == ns0 + 1000,
       "clock: 3,000 ticks are 1,000 ns (the ratio's fraction truncated at most a nanosecond)");
}

static void test_faults(void)
{
    setup();
    is_string(" v=(fault)", run("f v=+0(%r8):u32"), "a dereference of a bad pointer: (fault)");
    is_string(" s=(fault)", run("f s=%r8:string"), "a string at a bad address: (fault)");
    is_string(" s=(fault) n=3", run("f s=+0(+0(%r8)):string n=%di:u32"), "a fault in a nested dereference; the next argument is fetched");
    is_string(" a=(fault)", run("f a=+4094(%si):x8[4]"), "an array running off the mapping faults whole");
    regs[X86_SP] = 0x20;
    is_string(" w=(fault)", run("f w=$stack2"), "$stackN with a bad stack pointer: (fault)");
    is_string(" a=(fault)", run("f a=$arg7"), "$arg7 with a bad stack pointer: (fault)");
}

static void test_errors(void)
{
    setup();
    struct { const char *def, *want; } cases[] = {
        { "", "ERR 1: a probe spec (SYM, SYM+OFF, 0xADDR) is missing" },
        { "f %zz", "ERR 4: unknown register" },
        { "f a=%di:u128", "ERR 9: unknown type (u8..u64 s8..s64 x8..x64 char string ustring symbol, TYPE[N])" },
        { "f a=%di:%pd", "ERR 9: this type is the kernel's only (u8..u64 s8..s64 x8..x64 char string symbol here)" },
        { "f $retval", "ERR 3: $retval is not available on probe (only on return events)" },
        { "f+8 $arg1", "ERR 5: $argN is only available at a function's entry" },
        { "f $arg0", "ERR 7: bad $arg number ($arg1 is the first)" },
        { "f $stackx", "ERR 9: bad $stack number" },
        { "f $foo", "ERR 3: unknown variable (one of $stackN $stack $argN $retval $comm)" },
        { "f a=%di b=%si a=%dx", "ERR 15: this argument name is used already" },
        { "f 1a=%di", "ERR 3: an argument name is letters, digits and '_' (at most 63)" },
        { "f a=%di:u8[4]", "ERR 9: an array needs a memory fetch (+OFF(...) or @ADDR)" },
        { "f a=+0(%di):u8[65]", "ERR 15: an array is TYPE[N] with 1 <= N <= 64" },
        { "f a=+0(%di):string[2]", "ERR 19: string arrays are not supported" },
        { "f a=+0(%di", "ERR 5: a dereference is +OFF(FETCHARG) or -OFF(FETCHARG)" },
        { "f a=+x(%di)", "ERR 6: bad dereference offset" },
        { "f a=+0($comm)", "ERR 8: $comm cannot be dereferenced" },
        { "f a=$comm:u32", "ERR 11: $comm is a string" },
        { "f a=@", "ERR 6: an address or a symbol must follow '@'" },
        { "f a=@1x", "ERR 7: bad address" },
        { "f a=@sym+z", "ERR 10: bad offset" },
        { "f a=\\x", "ERR 6: bad immediate value (\\NUMBER)" },
        { "f a=di", "ERR 5: a fetch argument starts with % @ $ + - or \\" },
        { "p10:x f", "ERR 2: MAXACTIVE is for return probes (r<N>:...)" },
        { "p:1bad f", "ERR 3: an event name is letters, digits and '_'" },
        { "p:g-x/e f", "ERR 3: a group name is letters, digits and '_'" },
        { "r f+5", "ERR 3: a return probe is on a function's entry (SYM, SYM+0, or SYM+4 past an endbr64)" },
        { "f a=+0(+0(+0(+0(+0(+0(+0(+0(+0(%di))))))))):u8", "ERR 5: dereferences nested too deep" },
        { "f a=%di if", "ERR 11: a filter must follow 'if'" },
        { "f a=%di if b == 1", "ERR 12: no argument of this event has this name" },
        { "f a=%di if a = 1", "ERR 14: a comparison (== != < <= > >= & ~) is expected" },
        { "f a=%di if a ~ 1", "ERR 14: ~ compares strings" },
        { "f s=%si:string if s < x", "ERR 21: a string compares with == != or ~" },
        { "f a=%di if a == x1", "ERR 17: a number is expected" },
        { "f a=%di if (a == 1", "ERR 19: ')' is expected" },
        { "f a=%di if a == 1 b", "ERR 19: '&&', '||' or the end of the filter is expected" },
        { "f s=%si:string if s == \"x", "ERR 24: unterminated string" },
        { "f a=+0(%si):u8[2] if a == 1", "ERR 22: an array cannot be filtered on" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        is_string(cases[i].want, run(cases[i].def), "error: %s", cases[i].def);
    char many[8192] = "f";
    for (int i = 0; i < 129; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), " a%d=%%di", i);
    ok(strstr(run(many), "too many arguments (at most 128)") != NULL, "129 arguments: too many");
    char big[8192] = "f";
    for (int i = 0; i < 128; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), " s%d=+0(%%si):u64[64]", i);
    is_string("ERR 1: the event's record would be larger than 64 KiB", run(big), "128 arrays of 64 u64: a record over 64 KiB is refused");
}

static void test_prefix(void)
{
    struct kprw_event ev;
    struct kprw_ev_error err;
    ok(parse("p:grp/myprobe vfs_read fd=%di", &ev, &err) && !strcmp(ev.group, "grp") && !strcmp(ev.name, "myprobe") &&
           !ev.is_return && ev.spec_len == 8 && !memcmp(ev.spec, "vfs_read", 8) && ev.spec_col == 15,
       "p:GRP/EVENT SPEC: group, name and the spec's column");
    ok(parse("p:myprobe f", &ev, &err) && !strcmp(ev.group, "kprobes") && !strcmp(ev.name, "myprobe"),
       "p:EVENT: the group is kprobes");
    ok(parse("p f", &ev, &err) && ev.name == NULL && ev.nargs == 0, "p SPEC: no name (each point's), no arguments");
    ok(parse("r16:ret f $retval", &ev, &err) && ev.is_return && ev.maxactive == 16, "rN: MAXACTIVE");
    ok(parse("f a=%di", &ev, &err) && !ev.is_return && ev.name == NULL, "no prefix: a probe event");
    ok(parse("p p a=%di", &ev, &err) && ev.spec_len == 1 && ev.spec[0] == 'p', "a function named p, after the prefix");
    ok(parse("0x4010a0 a=%di", &ev, &err) && ev.spec_len == 8, "an address spec");
    ok(kprw_event_is_definition("f a=%di", 7) && kprw_event_is_definition("p f", 3) &&
           !kprw_event_is_definition("f", 1) && !kprw_event_is_definition(" f\n", 3) &&
           !kprw_event_is_definition("p:x", 3),
       "a definition has two words; a plain spec one");
    ok(parse("r f a=$arg1 b=$arg2 c=$arg1 d=$arg8", &ev, &err) && ev.nentry == 3 && ev.args[2].imm == ev.args[0].imm &&
           ev.entry_slot[2] == 0xff && ev.entry_stack[2] == 16,
       "$argN on a return event: kept at the entry, once each");
    ok(parse("f a=@counter+8:u32 b=@0x1000", &ev, &err) && ev.args[0].src == KPRW_FS_SYM &&
           !strcmp(ev.args[0].sym, "counter") && ev.args[0].imm == 8 && ev.args[1].src == KPRW_FS_IMM,
       "@SYM+OFF waits to be bound; @ADDR does not");
}

static bool resolve(void *ctx, const char *sym, uint64_t *addr)
{
    (void)ctx;
    if (strcmp(sym, "mem"))
        return false;
    *addr = (uintptr_t)mem;
    return true;
}

static void test_bind(void)
{
    setup();
    struct kprw_event ev;
    struct kprw_ev_error err;
    const struct kprw_farg *bad = NULL;
    ok(parse("f a=@mem+16:s32 s=@mem:string", &ev, &err) && kprw_event_bind(&ev, resolve, NULL, &bad),
       "@SYM binds");
    kprw_event_fetch(&ev, &env, rec);
    char out[256];
    struct kprw_sbuf b = { out, 0, sizeof out };
    kprw_event_print_args(&ev, rec, &fenv, &b);
    kprw_sb_end(&b);
    is_string(" a=-2 s=\"hello\"", out, "@SYM+OFF reads the memory there");
    ok(parse("f a=@nosuch", &ev, &err) && !kprw_event_bind(&ev, resolve, NULL, &bad) && bad == &ev.args[0],
       "an unknown @SYM is refused at binding, naming the argument");
}

static bool match(const char *def)
{
    struct kprw_event ev;
    struct kprw_ev_error err;
    if (!parse(def, &ev, &err)) {
        diag("%s: %zu: %s", def, err.col, err.msg);
        return false;
    }
    struct kprw_rec *h = (void *)rec;
    h->tid = 1234;
    kprw_event_fetch(&ev, &env, rec);
    return kprw_event_match(&ev, rec);
}

static void test_filters(void)
{
    setup();
    ok(match("f fd=%di:s32 if fd == 3"), "== matches");
    ok(!match("f fd=%di:s32 if fd != 3"), "!= does not");
    ok(match("f fd=%di n=%dx if fd == 3 && n > 99"), "&&");
    ok(!match("f fd=%di n=%dx if fd == 3 && n > 100"), "&& with one false");
    ok(match("f fd=%di n=%dx if fd == 4 || n >= 100"), "||");
    ok(match("f fd=%di n=%dx if !(fd == 4)"), "! and parentheses");
    ok(match("f fd=%di n=%dx if (fd == 4 || fd == 3) && (n <= 100)"), "nesting");
    ok(match("f v=%cx:s32 if v < 0"), "signed types compare signed");
    ok(!match("f v=%cx:u32 if v < 0"), "unsigned types compare unsigned");
    ok(match("f v=%cx:u32 if v == 0xfffffffe"), "hex values");
    ok(match("f v=%cx:s32 if v == -2"), "negative values");
    ok(match("f v=%dx if v & 4") && !match("f v=%dx if v & 3"), "& tests bits");
    ok(match("f s=%si:string if s == \"hello\"") && match("f s=%si:string if s == hello"), "strings: quoted or bare");
    ok(match("f s=%si:string if s ~ \"hel*\"") && !match("f s=%si:string if s ~ \"x*\""), "~: a glob");
    ok(match("f s=%si:string if s != world"), "string !=");
    ok(match("f a=%di if common_pid == 1234") && !match("f a=%di if common_pid == 1"), "common_pid");
    ok(!match("f v=+0(%r8):u32 if v == 0") && !match("f v=+0(%r8):u32 if v != 0"),
       "a predicate on a faulted argument is false");
    ok(match("r f r=$retval if r == 42"), "filters on return values");
    ok(match("f a=%di if a==3&&a!=4"), "no blanks needed");
}

static void test_lines(void)
{
    setup();
    struct kprw_event ev;
    struct kprw_ev_error err;
    ok(parse("p:myprobe vfs_read fd=%di:s32 buf=%si:string", &ev, &err), "parse for a line");
    struct kprw_rec *h = (void *)rec;
    kprw_event_fetch(&ev, &env, rec);
    h->tid = 597;
    h->cpu = 1;
    char out[512];
    struct kprw_sbuf b = { out, 0, sizeof out };
    kprw_event_print_line(&ev, rec, 41519442123ull, "bash", "myprobe", "vfs_read+0x0", &fenv, &b);
    kprw_sb_end(&b);
    is_string("            bash-597     [001]    41.519442: myprobe: (vfs_read+0x0) fd=3 buf=\"hello\"\n", out,
              "a trace_pipe line, in ftrace's columns");
    ok(parse("r:myret vfs_read ret=$retval:s64", &ev, &err), "a return event");
    kprw_event_fetch(&ev, &env, rec);
    h->tid = 12345678;
    h->cpu = 123;
    b = (struct kprw_sbuf){ out, 0, sizeof out };
    kprw_event_print_line(&ev, rec, 123456789012345ull, "a-very-long-thread-name", "myret", "ksys_read+0x9a <- vfs_read", &fenv, &b);
    kprw_sb_end(&b);
    is_string("a-very-long-thread-name-12345678 [123] 123456.789012: myret: (ksys_read+0x9a <- vfs_read) ret=42\n", out,
              "long fields widen their columns");
    b = (struct kprw_sbuf){ out, 0, 10 };
    kprw_event_print_line(&ev, rec, 0, "bash", "myret", "x", &fenv, &b);
    ok(!kprw_sb_end(&b) && strlen(out) == 9, "a line that does not fit is cut, never overrun");
    b = (struct kprw_sbuf){ out, 0, sizeof out };
    kprw_event_default_name(false, "vfs_read", 0, 0, &b);
    kprw_sb_char(&b, ' ');
    kprw_event_default_name(true, "fde@0x1a2b", 0, 0, &b);
    kprw_sb_char(&b, ' ');
    kprw_event_default_name(false, NULL, 0, 0x4010a0, &b);
    kprw_sb_char(&b, ' ');
    kprw_event_default_name(false, "_ZN3foo3barEv.cold", 12, 0, &b);
    kprw_sb_end(&b);
    is_string("p_vfs_read_0 r_fde_0x1a2b_0 p_0x4010a0 p__ZN3foo3barEv_cold_12", out, "default event names, as the kernel's");
}

static void test_json(void)
{
    setup();
    strcpy(mem + 200, "a \"q\"\n");
    regs[X86_R10] = (uintptr_t)(mem + 200);
    struct kprw_event ev;
    struct kprw_ev_error err;
    ok(parse("f fd=%di:s32 n=%dx:u64 h=%di s=%r10:string bad=+0(%r8):u8 a=+96(%si):u8[2]", &ev, &err), "parse for JSON");
    kprw_event_fetch(&ev, &env, rec);
    char out[512];
    struct kprw_sbuf b = { out, 0, sizeof out };
    kprw_event_json_args(&ev, rec, &fenv, &b);
    kprw_sb_end(&b);
    is_string("\"fd\":3,\"n\":100,\"h\":\"0x3\",\"s\":\"a \\\"q\\\"\\u000a\",\"bad\":null,\"a\":\"{1,2}\"", out,
              "JSON arguments: numbers, hex and strings escaped, null for a fault");
}

static void test_hist(void)
{
    uint64_t h[KPRW_HIST_BUCKETS] = { 0 };
    uint64_t vals[] = { 0, 1, 1, 3, 5, 6, 7, 1000, 1023, 1024, 5000000 };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        h[kprw_hist_bucket(vals[i])]++;
    ok(kprw_hist_bucket(0) == 0 && kprw_hist_bucket(1) == 1 && kprw_hist_bucket(2) == 2 && kprw_hist_bucket(3) == 2 &&
           kprw_hist_bucket(4) == 3 && kprw_hist_bucket(~0ull) == 64,
       "log2 buckets: [0] [1] [2,4) [4,8) ... [8E,16E)");
    static char out[8192];
    struct kprw_sbuf b = { out, 0, sizeof out };
    kprw_hist_print(h, &b);
    kprw_sb_end(&b);
    ok(strncmp(out, "[0]                    1 |", 26) == 0, "hist: bpftrace's columns");
    ok(strstr(out, "[512, 1K)              2 |") && strstr(out, "[1K, 2K)               1 |") &&
           strstr(out, "[4M, 8M)               1 |"),
       "hist: K and M bounds");
    ok(strstr(out, "[4, 8)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n") != NULL,
       "hist: the largest bucket's bar is 52 wide");
    ok(strstr(out, "[8K, 16K)              0 |                                                    |\n") != NULL,
       "hist: empty buckets between are shown");
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    is_int(24, lines, "hist: from the first to the last non-empty bucket");
}

/* Each argument's short path (its kind, kprw_event_plan) writes the same
 * record as the general one: every definition below fetched both ways,
 * compared byte by byte (fields, fault bits, strings). */
static uint8_t rec_any[1 << 16];
static void test_kinds(void)
{
    static struct kprw_fetch_op any_ops[KPRW_EV_MAX_ARGS];
    static const char *defs[] = {
        "f a=%di b=%bx c=+0(%si):u64 s=+0(+24(%si)):string",
        "f a=%di:u8 b=%si:u16 c=%cx:s32 d=%ax:x64 e=%dx:u32",
        "f a=+16(%si):u64 b=+0(%r8):u64 c=+8(%r9):x64",
        "f s=+0(+24(%si)):string t=+0(+0(%r8)):string u=+0(+8(%si)):string n=%di",
        "f a=%di:u8 b=+0(%r8):u8 c=%si:u16",
        "f a=%di:u8 b=+0(%r8):u64 c=%si:u8",
        "f s=+0(%si):string t=+24(%si):string u=+0(%r8):string n=%di",
        "f a=$stack0 b=$stack2 c=$arg7 d=$arg8:u32 e=$stack1:s64",
        "f a=%di:u8",
        "f",
    };
    char buf[2048];
    for (unsigned d = 0; d < sizeof defs / sizeof defs[0] + 1; d++) {
        const char *def = defs[d % (sizeof defs / sizeof defs[0])];
        if (d == sizeof defs / sizeof defs[0]) {
            /* 64 arguments, the last a u8: 9 bytes of fault bits and
             * padding (the wide path); a fault at the 61st */
            size_t n = (size_t)snprintf(buf, sizeof buf, "f");
            for (int k = 0; k < 64; k++)
                n += (size_t)snprintf(buf + n, sizeof buf - n, k == 60 ? " a%d=+0(%%r8):u64" : " a%d=%%di:u%d", k,
                                      64 >> (k % 4));
            def = buf;
        }
        struct kprw_event ev;
        struct kprw_ev_error err;
        if (!parse(def, &ev, &err)) {
            ok(false, "kinds: %s parses (col %zu: %s)", def, err.col, err.msg);
            continue;
        }
        memset(rec, 0xa5, sizeof rec);
        memset(rec_any, 0xa5, sizeof rec_any);
        uint32_t size = kprw_event_fetch(&ev, &env, rec);
        unsigned fast = 0;
        for (unsigned k = 0; k < ev.nargs; k++) {
            fast += ev.ops[k].kind != KPRW_FK_ANY;
            any_ops[k] = ev.ops[k];
            any_ops[k].kind = KPRW_FK_ANY;
            any_ops[k].a = k;
        }
        struct kprw_event general = ev;
        general.ops = any_ops;
        uint32_t size_any = kprw_event_fetch(&general, &env, rec_any);
        if (d == sizeof defs / sizeof defs[0])
            ok(ev.fixed - ev.fault_off > 8 && kprw_rec_fault(&ev, rec, 60) && !kprw_rec_fault(&ev, rec, 59) &&
               !kprw_rec_fault(&ev, rec, 63), "64 arguments: %u bytes of fault bits and padding, the 61st's set",
               ev.fixed - ev.fault_off);
        /* nothing past the room a ring reserves for it (max_size): the
         * fault bits' 8-byte store at fault_off included */
        bool inside = size <= ev.max_size;
        for (unsigned b = ev.max_size; b < ev.max_size + 16; b++)
            inside = inside && rec[b] == 0xa5 && rec_any[b] == 0xa5;
        ok(inside, "kinds: %.60s%s: the fetch writes within its %u bytes (fault bits at %u, strings at %u)", def,
           strlen(def) > 60 ? "..." : "", ev.max_size, ev.fault_off, ev.fixed);
        ok(size == size_any && memcmp(rec, rec_any, ev.max_size) == 0 && (ev.nargs == 0 || fast > 0),
           "kinds: %.60s%s: %u of %u arguments by a short path, the same record as the general path (%u bytes)",
           def, strlen(def) > 60 ? "..." : "", fast, ev.nargs, size);
    }
    setup();
    /* the fault bits share their word with the fields before them */
    char want[128];
    snprintf(want, sizeof want, " a=3 b=(fault) c=%u", (unsigned)(uint16_t)(uintptr_t)mem);
    is_string(want, run("f a=%di:u8 b=+0(%r8):u8 c=%si:u16"), "a fault bit written beside fields keeps them");
    is_string(" a=3 b=(fault) c=0", run("f a=%di:u8 b=+0(%r8):u64 c=%r10:u8"), "a fault in a u64 dereference: 0 and its bit");
    struct kprw_event ev;
    struct kprw_ev_error err;
    parse("f a=%di b=%si:u32 c=%cx:u16 d=%dx:u8 e=+8(%si):u64 f=@0x1000:u64 s=+0(+24(%si)):string t=+0(@0x1000):string "
          "u=+8(%si):string v=@0x1000:string", &ev, &err);
    const struct kprw_fetch_op *a = ev.ops;
    ok(a[0].kind == KPRW_FK_REG8 && a[1].kind == KPRW_FK_REG4 && a[2].kind == KPRW_FK_REG2 && a[3].kind == KPRW_FK_REG1 &&
       a[4].kind == KPRW_FK_MEM8_REG && a[5].kind == KPRW_FK_MEM8_IMM && a[6].kind == KPRW_FK_STR_REG &&
       a[7].kind == KPRW_FK_STR_IMM && a[8].kind == KPRW_FK_STRAT_REG && a[9].kind == KPRW_FK_STRAT_IMM,
       "kinds: registers by size, u64 dereferences, strings behind pointers and at addresses");
}

int main(void)
{
    plan_lazy();
    test_kinds();
    test_fetch_forms();
    test_faults();
    test_rec_valid();
    test_clock();
    test_errors();
    test_prefix();
    test_bind();
    test_filters();
    test_lines();
    test_json();
    test_hist();
    return tap_done();
}
