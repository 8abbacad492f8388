/*
 * The static runtime's set-up, run from the program's entry point before
 * the program's own (start-x86.S): the table checked, a point record for
 * each entry (the states point at them), the report asked for by
 * KPREWRITE_REPORT, the SIGTRAP handler of the int3 probes, and last the
 * slots the pool's detours call through -- until then every detour runs
 * its displaced instructions uncounted (the thunks skip an empty slot).
 */
#include "rt.h"
#include "events.h"
#include "../core/kprw-core.h"
#include "kprewrite/ptrace.h"

/* The table flags this runtime takes. Return-probe detours enter through
 * kprs_kret_enter only when they save %r11 around it (KPRW_T_KRET_R11);
 * a call it hooks (a return event's: hook.c) returns through the return
 * slot, kprs_kret_return. */
#define KPRS_T_READS (KPRW_T_ADDED_POOL | KPRW_T_ENTER | KPRW_T_ORIG_AT_COPY | KPRW_T_FOUND_NAMES | \
                      KPRW_T_KRET_ENTRY | KPRW_T_KRET_RETURN | KPRW_T_KRET_R11 | KPRW_T_EVENTS)

static void say(const char *what)
{
    kprs_sys(SYS_write, 2, (long)"kprewrite: static runtime: ", 27, 0);
    kprs_sys(SYS_write, 2, (long)what, (long)kprs_strlen(what), 0);
    const char *tail = "; the program runs without its probes (an int3 probe it reaches ends it)\n";
    kprs_sys(SYS_write, 2, (long)tail, (long)kprs_strlen(tail), 0);
}

void kprs_note3(const char *a, const char *b, size_t n, const char *c)
{
    char line[600];
    size_t len = 0;
    const char *parts[3] = { "kprewrite: static runtime: ", a, c };
    for (int k = 0; k < 3; k++) {
        for (const char *p = parts[k]; *p && len < sizeof line - 1; p++)
            line[len++] = *p;
        for (size_t i = 0; k == 1 && i < n && len < sizeof line - 1; i++)
            line[len++] = b[i];
    }
    line[len++] = '\n';
    kprs_write_all(2, line, len);   /* one write: a line never torn by another's */
}

static void note(const char *what)
{
    kprs_note3(what, "", 0, "");
}

static const char *getenv_sp(uint64_t *sp, const char *name)
{
    char **envp = (char **)(sp + 1 + sp[0] + 1);
    size_t n = kprs_strlen(name);
    for (; *envp; envp++) {
        const char *e = *envp;
        size_t i = 0;
        while (i < n && e[i] == name[i])
            i++;
        if (i == n && e[n] == '=')
            return e + n + 1;
    }
    return 0;
}

/* The unwinder's entry points, where a thread's hooked calls get their
 * return addresses back (guard.c; kprewrite bakes them where the image
 * names them and a return may be hooked: kind-static.c) */
static bool unwinder(const char *name)
{
    static const char names[KPRS_UNWINDERS][28] = { "_Unwind_RaiseException", "_Unwind_Resume_or_Rethrow",
                                                    "_Unwind_ForcedUnwind", "_Unwind_Backtrace" };
    for (unsigned k = 0; name && k < KPRS_UNWINDERS; k++)
        if (!kprs_strcmp(name, names[k]))
            return true;
    return false;
}

/* _exit and libc's sigaction, whose addresses kprewrite
 * writes in the head (each by name, or by its code when stripped;
 * guard.c), and the unwinder's entry points by name: an entry's point, or
 * a return point (SYM%return baked too), whose entry runs the guard as
 * well (kprs_kret_enter) */
static uint8_t guard_of(const struct kprs_rt *r, uint32_t i)
{
    const struct kprs_head *h = kprs_head_addr();
    const struct kprw_entry *e = &r->e[i];
    if ((e->offset == 0 || (e->flags & KPRW_F_AFTER_ENDBR)) && unwinder(kprs_name(r, e)))
        return KPRS_GUARD_UNWIND;
    for (unsigned k = 0; k < KPRS_EXITS; k++)
        if (h->exit_rel[k] && kprs_site(r, i) == (uintptr_t)h + (uintptr_t)h->exit_rel[k])
            return KPRS_GUARD_EXIT;
    if (h->sigaction_rel && (e->offset == 0 || (e->flags & KPRW_F_AFTER_ENDBR)) &&
        kprs_site(r, i) - e->offset == (uintptr_t)h + (uintptr_t)h->sigaction_rel)
        return KPRS_GUARD_SIGACTION;
    return KPRS_GUARD_NONE;
}

static void report_setup(struct kprs_area *a, uint64_t *sp)
{
    const char *v = getenv_sp(sp, "KPREWRITE_REPORT");
    a->report_fd = -1;
    if (!v || !*v || !kprs_strcmp(v, "0"))
        return;
    a->report_all = !kprs_strcmp(v, "all");
    /* a copy of stderr: programs may close theirs before they exit */
    long fd = kprs_sys(SYS_fcntl, 2, KPRS_F_DUPFD_CLOEXEC, 3, 0);
    a->report_fd = fd >= 0 ? (int32_t)fd : 2;
}

_Static_assert(__builtin_offsetof(struct kprs_head, area_rel) == KPRS_HEAD_AREA_REL, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_area, stack_busy) == KPRS_AREA_STACK_BUSY, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_area, stacks) == KPRS_AREA_STACKS, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, hits) == KPRS_PT_HITS, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, disabled) == KPRS_PT_DISABLED, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, guard) == KPRS_PT_GUARD, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, ev) == KPRS_PT_EV, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, go) == KPRS_PT_GO, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, dropped) == KPRS_PT_DROPPED, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, ret) == KPRS_PT_RET, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_point, ev_off) == KPRS_PT_EV_OFF, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_area, ring_size) == KPRS_AREA_RING_SIZE, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_area, ring_head) == KPRS_AREA_RING_HEAD, "start-x86.S's offsets");
_Static_assert(__builtin_offsetof(struct kprs_area, ring_tail) == KPRS_AREA_RING_TAIL, "start-x86.S's offsets");
_Static_assert(KPRS_STACKS <= 32, "start-x86.S takes a stack's bit from a 32-bit mask");

/* A Go program's: its runtime installs its own SIGTRAP handler with a
 * system call of its own, so kprewrite baked no int3 (go-sigtrap), and
 * there is none for kprewrite ctl unoptimize to write either. */
static bool is_go(const struct kprs_rt *r)
{
    for (uint32_t i = 0; i < r->t->nentries; i++)
        if (r->e[i].flags & KPRW_F_GO)
            return true;
    return false;
}

/* KPREWRITE_TRACE=FILE | - (stderr): where the events go at exit; text,
 * or JSON (KPREWRITE_TRACE_FORMAT=json: trace-json.c), appended (whole lines: the processes of a workload share a file,
 * as with the runtime library). */
static void trace_setup(const struct kprs_rt *r, uint64_t *sp)
{
    const char *path = getenv_sp(sp, "KPREWRITE_TRACE"), *fmt = getenv_sp(sp, "KPREWRITE_TRACE_FORMAT");
    if (!path || !*path)
        return;
    if (!r->area->ring) {
        note("KPREWRITE_TRACE: no event is defined (kprewrite --probe 'p:EVENT SPEC ARGS', or KPREWRITE_EVENTS); "
             "ignored");
        return;
    }
    if (fmt && !kprs_strcmp(fmt, "json"))
        r->area->trace_json = 1;
    else if (fmt && *fmt && kprs_strcmp(fmt, "text"))
        note("KPREWRITE_TRACE_FORMAT: a static executable writes text or json only: text it is");
    long fd = path[0] == '-' && !path[1] ? kprs_sys(SYS_fcntl, 2, KPRS_F_DUPFD_CLOEXEC, 3, 0)
                                         : kprs_sys(SYS_openat, -100 /* AT_FDCWD */, (long)path,
                                                    01 | 0100 | 02000 | 02000000 /* WRONLY CREAT APPEND CLOEXEC */,
                                                    0644);
    if (fd < 0)
        kprs_note3("KPREWRITE_TRACE: cannot open ", path, kprs_strlen(path), "; the events stay in the ring");
    else
        r->area->trace_fd = (int32_t)fd;
}

void kprs_init(uint64_t *sp)
{
    struct kprs_rt r;
    kprs_rt_get(&r);
    const struct kprw_table *t = r.t;
    if (t->magic == 0)   /* never filled: every probe asked for was refused */
        return;
    if (kprw_table_fault(t, KPRW_T_KNOWN) != KPRW_TF_NONE || (t->flags & ~KPRS_T_READS) ||
        !(t->flags & KPRW_T_ADDED_POOL) || t->slot_rel == 0 ||
        ((t->flags & KPRW_T_KRET_ENTRY) && !(t->flags & KPRW_T_KRET_R11))) {
        say("the probe table is not one this runtime reads");
        return;
    }
    struct kprs_area *a = r.area;
    a->trace_fd = -1;
    a->nentries = t->nentries;
    a->pid = (int32_t)kprs_sys(SYS_getpid, 0, 0, 0, 0);
    a->trap_byte = 0xcc;   /* int3 */
    a->stacks = (uint64_t)(uintptr_t)a + kprs_area_layout(t->nentries).stacks;
    report_setup(a, sp);
    for (uint32_t i = 0; i < t->nentries; i++)
        if (kprw_entry_faults(&r.e[i], t->strings_size, 0, 0) & ~(1u << 3)) {   /* (names: any) */
            say("the probe table holds an entry this runtime cannot take");
            return;
        }
    int guards = 0;
    for (uint32_t i = 0; i < t->nentries; i++) {
        r.pt[i].guard = guard_of(&r, i);
        guards += r.pt[i].guard == KPRS_GUARD_EXIT;
        r.pt[i].site0 = *(const uint8_t *)kprs_site(&r, i);
        r.pt[i].go = (r.e[i].flags & KPRW_F_GO) != 0;
    }
    if (a->report_fd >= 0 && !guards)
        note("KPREWRITE_REPORT: kprewrite baked no report point in this executable (no _exit or runtime.exit "
             "found, or its probe refused): no report at exit; kprewrite ctl PID list shows the counts while it runs");
    if (getenv_sp(sp, "LD_PRELOAD"))   /* how handlers come: a library calling register_kprobe */
        note("LD_PRELOAD: nothing loads a library into a static executable: handlers need a dynamic program; "
             "its probes count hits only");
    if (!is_go(&r))
        kprs_hooks_init(&r, sp);
    kprs_events_init(&r, getenv_sp(sp, "KPREWRITE_TRACE_BUFFER"), getenv_sp(sp, "KPREWRITE_EVENTS"),
                     getenv_sp(sp, "KPREWRITE_TEST_CLOCK"));
    trace_setup(&r, sp);
    for (uint32_t i = 0; i < t->nentries; i++)   /* (the points complete: the detours may count now) */
        r.state[i].rt = &r.pt[i];
    kprs_sort_sites(&r);
    if (is_go(&r))
        a->trap_taken = 1;
    else if (kprs_trap_install() < 0) {
        kprs_int3_restore(&r);   /* the jumps count; nothing would run the int3 probes */
        note("cannot install its SIGTRAP handler: the int3 probes are put back");
    }
    void **slot = (void **)((char *)t + t->slot_rel);
    slot[KPRW_SLOT_KRET_RETURN] = (void *)kprs_kret_return;   /* (before any call can be hooked) */
    slot[KPRW_SLOT_DISPATCH] = (void *)kprs_dispatch_entry;
    slot[KPRW_SLOT_ENTER] = (void *)kprs_enter;
    slot[KPRW_SLOT_KRET_ENTER] = (void *)kprs_kret_enter;
    __atomic_store_n(&a->magic, KPRS_AREA_MAGIC, __ATOMIC_RELEASE);   /* kprewrite ctl may read it now */
}

/* Inline and shared detours (through kprs_dispatch_entry, which stored
 * the callee-saved registers and sp): the state in %rdi; the detour saved
 * the caller-saved registers and the flags. Non-zero: a return event's
 * call hooked (a return probe's detour with no kprs_kret_enter). */
uint64_t kprs_dispatch(struct kprw_state *st, void *regs)
{
    struct kprs_point *pt = st->rt;
    if (pt && !__atomic_load_n(&pt->disabled, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&pt->hits, 1, __ATOMIC_RELAXED);
        if (pt->guard || pt->ev)
            return kprs_hit(pt, regs, 1);
    }
    return 0;
}

/* A guard's or an event's point hit (counted): an entry event first (an
 * event on _exit is written by its guard), then the guard, then a return
 * event's call hooked when the caller can (a detour; not the int3 path:
 * non-zero then) -- after an unwinder's guard, which gives back the
 * thread's hooked calls above sp, this one's too were it hooked first. */
uint64_t kprs_hit(struct kprs_point *pt, void *regs, uint64_t can_hook)
{
    struct kprs_rt r;
    kprs_rt_get(&r);
    uint32_t i = (uint32_t)(pt - r.pt);
    struct pt_regs *p = regs;
    uint64_t hooked = 0;
    p->ip = kprs_site(&r, i);
    bool ev = pt->ev && !__atomic_load_n(&pt->ev_off, __ATOMIC_RELAXED);   /* (ctl untrace) */
    if (ev && !pt->ret)
        kprs_event(&r, i, p);   /* before the guard: _exit's writes the trace */
    if (pt->guard)
        kprs_guard(pt, p->di, p->si, p->sp);
    if (ev && pt->ret && can_hook)
        hooked = kprs_hook(&r, i, p);   /* after the guard: an unwinder's gives back the calls above sp */
    return hooked;
}
