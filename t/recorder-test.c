/*
 * Generated event recorders (src/arch/x86/recorder.c) against the C one:
 * each definition below recorded by its generated code into a pretend
 * ring, over real memory with an unreadable page (faults resumed at the
 * fixups the emitter gives, as the runtime's fault handler does), and
 * fetched by the runtime core's kprw_event_fetch: the same record byte for
 * byte (header, fields, fault bits, strings), nothing written past its
 * room, the ring's head moved by its size, the time and the CPU from the
 * clock asked for. And every case it hands to the C recorder: nothing
 * written, the same arguments passed on.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "arch/recorder.h"
#include "arch/x86/regs.h"
#include "runtime/core/event.h"
#include "runtime/user/safe-read.h"
#include "tap.h"

#include "recorder-harness.h"

static int fallbacks;
static void *fb_kp, *fb_regs;
static unsigned long fb_seen[X86_NSLOTS];   /* pt_regs as the C recorder got them */
static int t_fallback(void *kp, void *regs)
{
    fallbacks++;
    fb_kp = kp;
    fb_regs = regs;
    memcpy(fb_seen, regs, sizeof fb_seen);
    return 0;
}

static char arena_mem[1 << 20];
static bool parse(const char *def, struct kprw_event *ev)
{
    struct kprw_arena arena = { arena_mem, sizeof arena_mem, 0 };
    struct kprw_ev_error err;
    if (kprw_event_parse(&x86_fetch_isa, def, strlen(def), &arena, ev, &err))
        return true;
    ok(false, "%s parses (col %zu: %s)", def, err.col, err.msg);
    return false;
}

static struct kprw_recorder_env env_for(int clock) { return harness_env(clock, t_fallback); }

typedef int (*recorder_fn)(void *kp, void *regs);
static size_t direct_off;   /* the last recorder's direct entry (0: none) */
static recorder_fn make(const struct kprw_event *ev, int clock)
{
    struct kprw_recorder_env env = env_for(clock);
    size_t n = kprw_recorder_emit(ev, &env, NULL, 0, 0, fix, &nfix, &direct_off);
    if (!n)
        return NULL;
    nfix = 0;
    memset(code, 0xcc, 65536);
    if (kprw_recorder_emit(ev, &env, code, 65536, (uint64_t)(uintptr_t)code, fix, &nfix, &direct_off) != n)
        return NULL;
    __builtin___clear_cache((char *)code, (char *)code + n);
    recorder_fn f;
    uintptr_t a = (uintptr_t)code;
    memcpy(&f, &a, sizeof f);
    return f;
}

static unsigned long regs[X86_NSLOTS];
/* the direct entry's pt_regs: the caller-saved registers as regs, the rest
 * not filled (poison), the probed %rsp FRAME bytes above them */
static union { unsigned long w[1024]; } frame_buf;
static unsigned long *const fregs = frame_buf.w;
static const unsigned callee_slots[6] = { X86_BX, X86_BP, X86_R12, X86_R13, X86_R14, X86_R15 };
static void direct_frame(unsigned long *callee)
{
    memcpy(fregs, regs, sizeof regs);
    for (unsigned i = 0; i < 6; i++) {
        callee[i] = regs[callee_slots[i]];
        fregs[callee_slots[i]] = 0xdeadbeefdeadbeeful;
    }
    fregs[X86_SP] = fregs[X86_IP] = fregs[X86_ORIG_AX] = 0xdeadbeefdeadbeeful;
    fregs[X86_FLAGS] = 0x246;
}
static struct t_inst inst;
static struct t_ring ring;
static uint8_t ring_mem[1 << 16];
static uint8_t ref[1 << 13];
static uint64_t global_u64 = 0x5566778899aabbccull;
static const char global_str[] = "global";
static const char *global_ptr = global_str;

static const struct kprw_fetch_env cenv = { regs, NULL, "tester", rt_safe_read, rt_safe_read_str, rt_safe_read_word, X86_SP };

/* The generated code's record at pos of the ring against the C fetch's. */
static void compare(const char *def, const struct kprw_event *ev, recorder_fn f, int clock, uint32_t pos, bool direct)
{
    memset(ring_mem, 0xa5, sizeof ring_mem);
    ring = (struct t_ring){ .tail = 3ull * sizeof ring_mem + pos, .head = 3ull * sizeof ring_mem + pos, .tid = 4242,
                            .size = sizeof ring_mem, .data = ring_mem };
    ring_tls = &ring;
    cpu_tls = 7;
    memset(ref, 0xa5, sizeof ref);
    struct kprw_rec *h = (struct kprw_rec *)ref;
    h->id = inst.id;
    h->tid = ring.tid;
    h->ip = inst.addr;
    h->size = kprw_event_fetch(ev, &cenv, ref);
    int fb = fallbacks;
    unsigned aux0, aux1;
    uint64_t t0 = __rdtscp(&aux0);
    unsigned long callee[6];
    direct_frame(callee);
    int r = direct ? call_direct((void *)((uint8_t *)code + direct_off), &inst, fregs, callee) : f(&inst, regs);
    uint64_t t1 = __rdtscp(&aux1);
    const struct kprw_rec *got = (const struct kprw_rec *)(ring_mem + pos);
    bool same = r == 0 && fallbacks == fb && got->size == h->size && memcmp(got, ref, 12) == 0 &&
                memcmp(ring_mem + pos + 24, ref + 24, ev->max_size - 24) == 0;
    bool room = true;
    for (size_t b = pos + ev->max_size; b < sizeof ring_mem; b++)
        room = room && ring_mem[b] == 0xa5;
    for (size_t b = 0; b < pos; b++)
        room = room && ring_mem[b] == 0xa5;
    bool when = got->ts >= t0 && got->ts <= t1 &&
                (clock == 1 ? got->cpu == 7 : (got->cpu == (aux0 & 0xfff) || got->cpu == (aux1 & 0xfff)));
    ok(same && room && when && ring.head == 3ull * sizeof ring_mem + pos + h->size && ring.tail == 3ull * sizeof ring_mem + pos,
       "%.70s%s (clock %d, at %u%s): the C recorder's record (%u bytes)%s%s%s", def, strlen(def) > 70 ? "..." : "", clock,
       pos, direct ? ", the direct entry" : "", h->size, same ? "" : ": differs", room ? "" : ": written outside its room", when ? "" : ": time or CPU wrong");
}

int main(void)
{
    plan_lazy();
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    long page = sysconf(_SC_PAGESIZE);
    code = mmap(NULL, 65536, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED || m == MAP_FAILED || mprotect(m + 2 * page, page, PROT_NONE) != 0)
        bail("cannot map the test pages");
    char *edge = m + 2 * page;   /* the first unreadable byte */
    /* a structure %di points at: a number, then pointers to strings of
     * each path (the first word holds the NUL or not; near the page's
     * end; truncated), to the unreadable page and to 0 */
    uint64_t *s = (uint64_t *)m;
    s[0] = 0x1122334455667788ull;
    char *strs[] = { m + 512, m + 600, m + 700, m + 1000, edge - 3, edge, NULL, edge - 5, m + 800 };
    strcpy(strs[0], "hello");
    strcpy(strs[1], "abcdefg");                 /* the NUL the 8th byte: in the first word */
    strcpy(strs[2], "abcdefgh");                /* the NUL the 9th: the slow path */
    memset(strs[3], 'L', 300);                  /* truncated to 255 and its NUL */
    strs[3][300] = 0;
    strcpy(strs[4], "ab");                      /* within 8 bytes of the page's end */
    strcpy(strs[7], "wxyz");                    /* its NUL the page's last byte */
    strs[8][0] = 0;                             /* empty */
    for (unsigned i = 0; i < sizeof strs / sizeof strs[0]; i++)
        s[1 + i] = (uint64_t)(uintptr_t)strs[i];
    regs[X86_DI] = (unsigned long)(uintptr_t)m;
    regs[X86_SI] = (unsigned long)(uintptr_t)(m + 8);
    regs[X86_DX] = (unsigned long)(uintptr_t)edge;
    regs[X86_CX] = 0xfedcba9876543210ul;
    regs[X86_BX] = 0x0102030405060708ul;
    regs[X86_R9] = (unsigned long)(uintptr_t)m - 2147483632ul;
    regs[X86_R12] = (unsigned long)(uintptr_t)(edge - 5);   /* "wxyz": the page's last bytes */
    /* the probed %rsp where the direct entry finds it: FRAME above its
     * pt_regs, over words of the memory's pattern ($stackN, +8(%sp)) */
    regs[X86_SP] = (unsigned long)(uintptr_t)((char *)fregs + FRAME);
    memcpy((char *)fregs + FRAME, m + 2048, 512);
    regs[X86_BP] = (unsigned long)(uintptr_t)m;
    regs[X86_R13] = 0x1357;
    regs[X86_R14] = (unsigned long)(uintptr_t)m;
    regs[X86_R15] = (unsigned long)(uintptr_t)strs[0];
    static struct t_point point;
    inst = (struct t_inst){ .id = 77, .enabled = 1, .addr = 0x401234, .pt = &point };

    char defs[8][1024];
    snprintf(defs[0], sizeof defs[0], "f c=@0x%lx:u64 g=+0(@0x%lx):string h=@0x%lx:string", (unsigned long)(uintptr_t)&global_u64,
             (unsigned long)(uintptr_t)&global_ptr, (unsigned long)(uintptr_t)global_str);
    const char *fixed[] = {
        "f a=%di b=%bx c=+0(%di):u64 s=+0(+8(%di)):string",
        "f a=%cx:u8 b=%cx:s16 c=%cx:u32 d=%cx:x64 e=%bx:s8 f=%r12:x16 g=%bp:s32",
        "f s=+0(+8(%di)):string t=+0(+16(%di)):string u=+0(+24(%di)):string v=+0(+32(%di)):string "
            "w=+0(+40(%di)):string x=+0(+64(%di)):string y=+0(+72(%di)):string",
        "f p=+0(+48(%di)):string q=+0(+56(%di)):string r=+0(%dx):u64 z=+0(+0(%dx)):string n=+0(%di):u64",
        "f big=+2147483632(%r9):u64 st=+8(%sp):u64 i=%ip s0=$stack0 s2=$stack2 a7=$arg7:x64",
        "f st=+8(%sp):u64 s0=$stack0 a7=$arg7:x64 sp=%sp b=%bx:u32 bp=%bp r13=%r13:s16 n=+0(%r14):u64 s=+0(%r15):string "
            "t=+0(+8(%bp)):string",
        "f a=+0(%r12):string b=+512(%di):string c=+0(%dx):string d=+8(%r12):string e=+1000(%di):string",
        "f a=%di:u8",
        "f",
    };
    const char *all[16];
    unsigned nall = 0;
    all[nall++] = defs[0];
    for (unsigned i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        all[nall++] = fixed[i];
    /* 49 arguments: 7 bytes of fault bits and one of padding (one 8-byte
     * store zeroes them), a fault at the 49th; 50 take 12 (left to C) */
    for (int d = 1; d <= 2; d++) {
        size_t n = (size_t)snprintf(defs[d], sizeof defs[d], "f");
        for (int k = 0; k < 48 + d; k++)
            n += (size_t)snprintf(defs[d] + n, sizeof defs[d] - n, k == 48 ? " a%d=+0(%%dx):u64" : k % 2 ? " a%d=%%di:u%d" :
                                  " a%d=+0(%%di):u64", k, 64 >> (k % 4));
    }
    all[nall++] = defs[1];

    unsigned cpu_eax, ebx, ecx, edx;
    bool rdtscp = __get_cpuid(0x80000001, &cpu_eax, &ebx, &ecx, &edx) && (edx & (1u << 27));
    for (int clock = 1; clock <= 2; clock++) {
        if (clock == 2 && !rdtscp) {
            skip("the CPU has no rdtscp: clock 2 untested");
            continue;
        }
        for (unsigned d = 0; d < nall; d++) {
            struct kprw_event ev;
            if (!parse(all[d], &ev))
                continue;
            recorder_fn f = make(&ev, clock);
            if (!f) {
                ok(false, "%s: a recorder is generated", all[d]);
                continue;
            }
            compare(all[d], &ev, f, clock, 0, false);
            compare(all[d], &ev, f, clock, 8 * 37, false);
            /* the last place it fits without wrapping */
            compare(all[d], &ev, f, clock, (uint32_t)(sizeof ring_mem - ((ev.max_size + 7) & ~7u)), false);
            if (!direct_off) {
                ok(strstr(all[d], "%ip") != NULL, "%.60s: no direct entry (it reads ip)", all[d]);
                continue;
            }
            compare(all[d], &ev, f, clock, 8 * 37, true);
            compare(all[d], &ev, f, clock, (uint32_t)(sizeof ring_mem - ((ev.max_size + 7) & ~7u)), true);
        }
    }
    ok(faults > 0, "faults in the generated loads were resumed at their fixups (%d)", faults);

    /* what goes to the C recorder: nothing written, the same arguments */
    struct kprw_event ev;
    if (parse(fixed[0], &ev)) {
        recorder_fn f = make(&ev, 1);
        struct { const char *what; int setup; } cases[] = {
            { "no ring yet", 0 }, { "a histogram", 1 }, { "a record that would wrap", 2 }, { "a full ring", 3 },
            { "a ring with a byte too few", 4 },
        };
        for (unsigned c = 0; f && c < sizeof cases / sizeof cases[0]; c++) {
            memset(ring_mem, 0xa5, sizeof ring_mem);
            uint64_t base = 5ull * sizeof ring_mem;
            ring = (struct t_ring){ .tail = base, .head = base, .tid = 1, .size = sizeof ring_mem, .data = ring_mem };
            ring_tls = &ring;
            inst.hist = NULL;
            switch (cases[c].setup) {
            case 0: ring_tls = NULL; break;
            case 1: inst.hist = &inst; break;
            case 2: ring.head = ring.tail = base + sizeof ring_mem - ((ev.max_size + 7) & ~7u) + 8; break;
            case 3: ring.tail = base - sizeof ring_mem + 64; ring.head = base; break;
            case 4: ring.tail = base - sizeof ring_mem + ev.max_size - 1; ring.head = base; break;
            }
            uint64_t head = ring.head;
            int fb = fallbacks;
            int r = f(&inst, regs);
            bool untouched = true;
            for (size_t b = 0; b < sizeof ring_mem; b++)
                untouched = untouched && ring_mem[b] == 0xa5;
            ok(r == 0 && fallbacks == fb + 1 && fb_kp == &inst && fb_regs == regs && untouched && ring.head == head,
               "%s: to the C recorder, with its arguments, nothing written", cases[c].what);
        }
        inst.hist = NULL;
        ring = (struct t_ring){ .tail = 0, .head = 0, .tid = 1, .size = sizeof ring_mem, .data = ring_mem };
        ring_tls = &ring;
        inst.enabled = 0;
        int fb = fallbacks;
        ok(f && f(&inst, regs) == 0 && fallbacks == fb && ring.head == 0, "the event off: nothing recorded, nothing called");
        inst.enabled = 1;
    }

    /* the direct entry hands C what the dispatcher did not fill: the
     * callee-saved registers, sp, ip (addr + 1), orig_ax (-1), the flags
     * (0x202, or kept when the point's detour saved them) */
    if (parse(fixed[5], &ev)) {
        recorder_fn f = make(&ev, 1);
        for (int saved = 0; f && direct_off && saved < 2; saved++) {
            ((struct t_point *)inst.pt)->flags = saved ? FLAGS_SAVED : 0;
            ring_tls = NULL;   /* no ring yet: to C */
            unsigned long callee[6];
            direct_frame(callee);
            int fb = fallbacks;
            int r = call_direct((void *)((uint8_t *)code + direct_off), &inst, fregs, callee);
            bool filled = true;
            for (unsigned i = 0; i < 6; i++)
                filled = filled && fb_seen[callee_slots[i]] == regs[callee_slots[i]];
            ok(r == 0 && fallbacks == fb + 1 && fb_regs == fregs && filled && fb_seen[X86_SP] == regs[X86_SP] &&
               fb_seen[X86_IP] == inst.addr + 1 && fb_seen[X86_ORIG_AX] == ~0ul &&
               fb_seen[X86_FLAGS] == (saved ? 0x246ul : 0x202ul) && fb_seen[X86_DI] == regs[X86_DI],
               "the direct entry to C, the point's flags %s: pt_regs filled as the dispatcher fills them",
               saved ? "saved (kept)" : "dead (0x202)");
        }
        ((struct t_point *)inst.pt)->flags = 0;
        ok(f && direct_off, "%.50s...: a direct entry", fixed[5]);
    }

    /* definitions it leaves to the C recorder */
    const char *c_only[] = {
        "f a=%di if a == 1", "f a=$comm", "f a=+0(%di):u32", "f a=+0(+0(%di)):u64", "f a=+0(+0(+0(%di))):string",
        "r f ret=$retval", "f a=+0(%di):u8[4]", "f a=$stack0:u32", defs[2],
    };
    for (unsigned i = 0; i < sizeof c_only / sizeof c_only[0]; i++) {
        struct kprw_event e;
        if (!parse(c_only[i], &e))
            continue;
        struct kprw_recorder_env env = env_for(1);
        ok(kprw_recorder_emit(&e, &env, NULL, 0, 0, fix, &nfix, &direct_off) == 0, "%.60s%s: left to the C recorder", c_only[i],
           strlen(c_only[i]) > 60 ? "..." : "");
    }
    struct kprw_recorder_env env = env_for(0);
    ok(kprw_recorder_emit(&ev, &env, NULL, 0, 0, fix, &nfix, &direct_off) == 0, "no TSC clock: left to the C recorder");
    return tap_done();
}
