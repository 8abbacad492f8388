/*
 * Events in the user runtime: definitions (runtime/core/event.h, the
 * syntax of kprobe_events) bound to the points their spec names. Each
 * (definition, point) is an instance: a kprobe (entry events) or a
 * kretprobe (return events) registered through the runtime's own API,
 * whose handler fetches the arguments into the thread's ring (tracebuf.h)
 * and may add to a histogram. Instances are never freed (a record names
 * its instance by id, and readers may still hold records of an untraced
 * one); `untrace` unregisters them.
 *
 * The hot path (record): no lock, no allocation, no system call; reads of
 * the program's memory go through rt_safe_read (safe-read-x86.S), which a
 * fault cannot end (fault.c resumes it at its fixup).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/regs.h"
#include "clock.h"
#include "elf-syms.h"
#include "events.h"
#include "runtime/core/event-fetch.h"
#include "rt.h"
#include "safe-read.h"
#include "tracebuf.h"
#include "rt-offsets.h"

OFFSET_CHECK(offsetof(struct ev_inst, direct) - offsetof(struct ev_inst, u.kp), KP_DIRECT);

#define EV_MAX (1 << 18)               /* instances in a process (node, every entry traced: 78,126;
                                          the table is zero pages until used) */
#define ARENA_BYTES (64 * 1024)


_Static_assert(EV_MAX == 262144, "define's -ENOSPC message says 262144");
static struct ev_inst *_Atomic table[EV_MAX];
static _Atomic uint32_t ninst;

struct ev_inst *ev_by_id(uint32_t id)
{
    return id < EV_MAX ? atomic_load_explicit(&table[id], memory_order_acquire) : NULL;
}
uint32_t ev_count(void) { return atomic_load_explicit(&ninst, memory_order_acquire); }

const struct kprw_fetch_isa *ev_isa(void) { return &x86_fetch_isa; }

/* ---- recording (the probed thread) ---- */

static void fetch_env(struct kprw_fetch_env *env, struct pt_regs *regs, const uint64_t *entry, const char *comm)
{
    env->regs = (const unsigned long *)regs;
    env->entry = entry;
    env->comm = comm;
    env->read = rt_safe_read;
    env->read_str = rt_safe_read_str;
    env->read_word = rt_safe_read_word;
    env->sp_slot = X86_SP;
}

/* A string key's hash (FNV-1a), or a number's own value. */
static uint64_t key_of(const struct kprw_event *ev, const uint8_t *rec, unsigned i, const char **str)
{
    if (ev->args[i].type != KPRW_FT_STRING) {
        *str = NULL;
        return (uint64_t)kprw_rec_value(ev, rec, i);
    }
    const char *s = kprw_rec_string(ev, rec, i);
    *str = s ? s : "(fault)";
    uint64_t h = 1469598103934665603ull;
    for (const char *p = *str; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static struct ev_hist_key *hist_slot(struct ev_hist *h, uint64_t key, const char *str)
{
    for (unsigned n = 0, i = (unsigned)(key * 0x9e3779b97f4a7c15ull >> 56); n < EV_HIST_KEYS;
         n++, i = (i + 1) % EV_HIST_KEYS) {
        struct ev_hist_key *k = &h->keys[i];
        uint32_t used = atomic_load_explicit(&k->used, memory_order_acquire);
        if (used == 2 && atomic_load_explicit(&k->key, memory_order_relaxed) == key)
            return k;
        if (used == 0) {
            uint32_t zero = 0;
            if (atomic_compare_exchange_strong(&k->used, &zero, 1)) {
                atomic_store_explicit(&k->key, key, memory_order_relaxed);
                if (str) {
                    strncpy(k->str, str, sizeof k->str - 1);
                    k->str[sizeof k->str - 1] = 0;
                }
                atomic_store_explicit(&k->used, 2, memory_order_release);
                return k;
            }
            if (atomic_load_explicit(&k->used, memory_order_acquire) == 2 &&
                atomic_load_explicit(&k->key, memory_order_relaxed) == key)
                return k;
        }
        if (used == 1)
            return NULL;   /* being set: not waited for */
    }
    return NULL;
}

static void hist_add(const struct ev_inst *in, struct ev_hist *h, const uint8_t *rec, uint64_t latency_ns)
{
    const struct kprw_event *ev = in->def;
    uint64_t v = h->of < 0 ? latency_ns : (uint64_t)kprw_rec_value(ev, rec, (unsigned)h->of);
    const char *str = NULL;
    uint64_t key = h->by < 0 ? 0 : key_of(ev, rec, (unsigned)h->by, &str);
    struct ev_hist_key *k = hist_slot(h, key, str);
    if (!k) {
        atomic_fetch_add_explicit(&h->other, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&k->buckets[kprw_hist_bucket(v)], 1, memory_order_relaxed);
}

/* Fill and publish one record: the header, the return part (ret: NULL for
 * an entry event), the arguments; the filter decides. */
static void record(struct ev_inst *in, struct pt_regs *regs, const uint64_t *entry, const struct kprw_rec_ret *ret)
{
    const struct kprw_event *ev = in->def;
    struct ev_hist *hist = atomic_load_explicit(&in->hist, memory_order_acquire);
    uint32_t cpu = 0;
    uint64_t now = 0;
    /* a latency histogram without a key needs no record: it counts every
     * call, filtered (no filter can be read without one) and dropped
     * ones too */
    bool plain_hist = hist && hist->of < 0 && hist->by < 0 && ret && !ev->filter;
    if (plain_hist) {
        now = clk_now(&cpu);
        hist_add(in, hist, NULL, clk_delta_ns(now - ret->entry_ts));
    }
    struct tb_ring *r = tb_self();
    uint32_t pad;
    uint8_t *at = r ? tb_reserve(r, ev->max_size, &pad) : NULL;
    if (!at) {
        atomic_fetch_add_explicit(&in->dropped, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&in->pt->ev_dropped, 1, memory_order_relaxed);
        return;
    }
    struct kprw_rec *h = (struct kprw_rec *)at;
    h->id = in->id;
    h->tid = r->tid;
    h->ip = in->addr;
    if (ret)
        *(struct kprw_rec_ret *)(h + 1) = *ret;
    struct kprw_fetch_env env;
    fetch_env(&env, regs, entry, r->comm);
    uint32_t size = kprw_event_fetch_inline(ev, &env, at);
    if (ev->filter && !kprw_event_match(ev, at)) {
        atomic_fetch_add_explicit(&in->filtered, 1, memory_order_relaxed);
        return;
    }
    /* the time after the fetch, not before: rdtsc is microcode that holds
     * up what comes after it, while the fetch's loads, issued before it,
     * complete meanwhile (a few ns of the hit's cost; the stamp is the
     * same hit's either way) */
    if (!plain_hist)
        now = clk_now(&cpu);
    h->ts = now;
    h->cpu = cpu;
    h->size = size;
    if (hist && !plain_hist)
        hist_add(in, hist, at, ret ? clk_delta_ns(now - ret->entry_ts) : 0);
    tb_commit(r, pad, size);
}

static int on_entry(struct kprobe *kp, struct pt_regs *regs)
{
    struct ev_inst *in = (struct ev_inst *)((char *)kp - offsetof(struct ev_inst, u.kp));
    if (atomic_load_explicit(&in->enabled, memory_order_relaxed))
        record(in, regs, NULL, NULL);
    return 0;
}

/* A return event's instance data: when the call was entered and the
 * slots its $argN need. */
struct entry_data {
    uint64_t ts;
    uint64_t slots[];
};

static struct ev_inst *inst_of(struct kretprobe_instance *ri)
{
    return (struct ev_inst *)((char *)ri->rp - offsetof(struct ev_inst, u.rp));
}

static int on_call(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    struct ev_inst *in = inst_of(ri);
    struct entry_data *d = (struct entry_data *)ri->data;
    uint32_t cpu;
    d->ts = clk_now(&cpu);
    if (in->def->nentry) {
        struct kprw_fetch_env env;
        fetch_env(&env, regs, NULL, "");
        kprw_event_fetch_entry(in->def, &env, d->slots);
    }
    return 0;
}

static int on_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    struct ev_inst *in = inst_of(ri);
    if (!atomic_load_explicit(&in->enabled, memory_order_relaxed))
        return 0;
    const struct entry_data *d = (const struct entry_data *)ri->data;
    /* regs->ip, not ri->ret_addr: a tail-called function's return
     * address is its caller's hook, regs->ip where the call really
     * returns to (kretprobe.c, ret_regs) */
    struct kprw_rec_ret ret = { (uint64_t)regs->ip, d->ts };
    record(in, regs, d->slots, &ret);
    return 0;
}

/* ---- definitions and instances (the control thread, start-up) ---- */

struct ev_def {
    struct kprw_event ev;
    struct kprw_arena arena;
    struct ev_def *next;
    kprobe_pre_handler_t recorder;     /* generated (recorder.c), or NULL: on_entry */
    kprobe_pre_handler_t direct;       /* ... its entry for the dispatcher's direct call, or NULL */
    bool recorder_tried;
};
static struct ev_def *defs;            /* under rt_lock */



static bool resolve_sym(void *ctx, const char *sym, uint64_t *addr)
{
    (void)ctx;
    void *p = dlsym(RTLD_DEFAULT, sym);
    *addr = (uint64_t)(uintptr_t)p;
    return p != NULL || rt_elf_symbol(sym, addr);
}

bool ev_inst_matches(const struct ev_inst *in, const char *spec)
{
    size_t n = strlen(spec);
    const char *slash = memchr(spec, '/', n);
    if (slash)   /* GRP/EVENT */
        return kprw_glob(spec, (size_t)(slash - spec), in->group) && kprw_glob(slash + 1, n - (size_t)(slash - spec) - 1, in->name);
    return kprw_glob(spec, n, in->name) || kprw_spec_matches_entry(spec, n, in->sym, in->offset, in->addr, rt_point_skipped(in->pt));
}

static const char ret_suffix[] = "%return";   /* SYM%return: the point is SYM's */

static size_t spec_sym_len(const char *spec, size_t spec_len)
{
    size_t k = sizeof ret_suffix - 1;
    return spec_len > k && memcmp(spec + spec_len - k, ret_suffix, k) == 0 ? spec_len - k : spec_len;
}

/* The symbol of a plain SYM[+OFF][%return] spec into sym (256 bytes);
 * *plus: where OFF starts (0: none). false for a glob or an address. */
static bool plain_sym(const struct kprw_event *ev, char *sym, size_t *plus)
{
    size_t n = spec_sym_len(ev->spec, ev->spec_len), p = n;
    if (!n || n >= 256 || memchr(ev->spec, '*', n) || memchr(ev->spec, '?', n) || memchr(ev->spec, '[', n) ||
        (n > 2 && ev->spec[0] == '0' && (ev->spec[1] == 'x' || ev->spec[1] == 'X')))
        return false;
    while (p > 0 && ev->spec[p - 1] != '+')
        p--;
    size_t sl = p ? p - 1 : n;
    memcpy(sym, ev->spec, sl);
    sym[sl] = 0;
    *plus = p;
    return sl > 0;
}

/* Where a plain SYM[+OFF] spec points by the symbol's value, as the
 * kernel's kallsyms lookup does: an alias (write for a point named
 * __write, _Exit for _exit) names the same code. 0: not plain, or no such
 * symbol. Found before rt_lock is taken (dlsym takes the loader's lock). */
static uint64_t spec_by_value(const struct kprw_event *ev)
{
    char sym[256], *end;
    size_t plus, n = spec_sym_len(ev->spec, ev->spec_len);
    uint64_t off = 0, a;
    if (!plain_sym(ev, sym, &plus))
        return 0;
    if (plus) {   /* OFF in C notation (copied: the spec is no string of its own) */
        char num[32];
        if (n - plus >= sizeof num)
            return 0;
        memcpy(num, ev->spec + plus, n - plus);
        num[n - plus] = 0;
        off = strtoull(num, &end, 0);
        if (*end || end == num)
            return 0;
    }
    return resolve_sym(NULL, sym, &a) && a ? a + off : 0;
}

/* A return event needs a return point ('r': the function baked with
 * SYM%return), which serves entry events too. by_value: where the spec's
 * symbol points (spec_by_value), or 0. */
static bool point_fits(const struct kprw_event *ev, const struct point *pt, const char *spec, size_t spec_len,
                       uint64_t by_value)
{
    if (ev->is_return && pt->kind != KPRW_KIND_R)
        return false;
    if ((ev->uses_args || ev->is_return) && ev->entry_off && !(rt_point_skipped(pt) && rt_point_skipped(pt) == pt->offset))
        return false;   /* $argN or a return at SYM+4: only past an endbr64 is that the entry */
    spec_len = spec_sym_len(spec, spec_len);
    if (kprw_spec_matches_entry(spec, spec_len, pt->name, pt->offset, pt->addr, rt_point_skipped(pt)))
        return true;
    /* the symbol's value: the point itself, or SYM+0 placed past an endbr64 */
    return by_value && (pt->addr == by_value ||
                        (!ev->entry_off && rt_point_skipped(pt) && rt_point_skipped(pt) == pt->offset &&
                         pt->addr - pt->offset == by_value));
}

/* The offset the kernel names a probe on pt by: the one the spec gives.
 * A SYM+0 point placed past endbr64 is SYM+0 (p_SYM_0), unless the spec
 * says SYM+OFF with its real offset. */
static uint32_t named_offset(const struct kprw_event *ev, const struct point *pt)
{
    if (!rt_point_skipped(pt) || memchr(ev->spec, '+', ev->spec_len) == NULL)
        return rt_point_skipped(pt) ? 0 : pt->offset;
    return kprw_spec_matches(ev->spec, ev->spec_len, pt->name, pt->offset, pt->addr) ? pt->offset : 0;
}

/* The event's name on pt: the definition's, or the kernel's default. */
static void inst_name(const struct kprw_event *ev, const struct point *pt, char *buf, size_t size)
{
    struct kprw_sbuf b = { buf, 0, size };
    if (ev->name)
        kprw_sb_str(&b, ev->name);
    else {
        /* the kernel's default name is made of the symbol the spec gives
         * (p_write_0 on a point named __write, found by value) */
        char sym[256];
        size_t plus;
        bool plain = plain_sym(ev, sym, &plus);
        kprw_event_default_name(ev->is_return, plain ? sym : pt->name, named_offset(ev, pt), pt->addr, &b);
    }
    kprw_sb_end(&b);
}

/* An instance still registered of another definition has the name an
 * instance of ev on pt would have (GRP/EVENT): the kernel refuses an event
 * whose name exists (EEXIST). Under define_lock. */
static TLS char taken_msg[2 * KPRW_EV_NAME_MAX + 40];   /* the error's message, for the caller */
static bool name_taken(const struct kprw_event *ev, const struct point *pt)
{
    char name[KPRW_EV_NAME_MAX];
    inst_name(ev, pt, name, sizeof name);
    for (uint32_t i = 0, c = ev_count(); i < c; i++) {
        const struct ev_inst *in = ev_by_id(i);
        if (in && !in->gone && in->def != ev && strcmp(in->name, name) == 0 && strcmp(in->group, ev->group) == 0) {
            snprintf(taken_msg, sizeof taken_msg, "event %s/%s exists already", ev->group, name);
            return true;
        }
    }
    return false;
}

static struct ev_inst *inst_new(const struct ev_def *d, struct point *pt)
{
    uint32_t id = atomic_load(&ninst);
    if (id >= EV_MAX)
        return NULL;
    struct ev_inst *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->def = &d->ev;
    in->pt = pt;
    in->id = id;
    in->is_return = d->ev.is_return;
    in->addr = pt->addr;
    in->offset = pt->offset;
    in->sym = pt->name;
    in->group = d->ev.group ? d->ev.group : KPRW_EV_DEFAULT_GROUP;
    inst_name(&d->ev, pt, in->name, sizeof in->name);
    struct kprw_sbuf b = { in->where, 0, sizeof in->where };
    kprw_sb_str(&b, pt->name);
    if (!in->is_return) {
        kprw_sb_str(&b, "+");
        kprw_sb_hex(&b, pt->offset);
    }
    kprw_sb_end(&b);
    return in;
}

static bool reads_memory(const struct kprw_event *ev)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        if (ev->args[i].nderef || ev->args[i].type == KPRW_FT_STRING)
            return true;
    return false;
}

static int inst_register(struct ev_inst *in)
{
    const struct kprw_event *ev = in->def;
    atomic_store(&in->enabled, true);
    if (in->is_return) {
        in->u.rp.kp.addr = (void *)(uintptr_t)in->addr;
        in->u.rp.entry_handler = on_call;
        in->u.rp.handler = on_return;
        in->u.rp.data_size = sizeof(struct entry_data) + 8u * ev->nentry;
        in->u.rp.maxactive = ev->maxactive;
        return register_kretprobe(&in->u.rp);
    }
    struct ev_def *d = (struct ev_def *)((char *)ev - offsetof(struct ev_def, ev));
    if (!d->recorder_tried) {
        d->recorder = ev_recorder_make(ev, on_entry, &d->direct);
        d->recorder_tried = true;
    }
    in->u.kp.addr = (void *)(uintptr_t)in->addr;
    in->u.kp.pre_handler = d->recorder ? d->recorder : on_entry;
    in->direct = d->direct;
    int rc = register_kprobe(&in->u.kp);
    if (rc == 0 && d->direct)   /* (registration keeps no flag of the runtime's) */
        __atomic_or_fetch(&in->u.kp.flags, KPROBE_FLAG_RT_RECORDER, __ATOMIC_RELEASE);
    return rc;
}

/* Bind definition d to every point it names (of table only, unless
 * NULL); the instances made, or -errno (-EEXIST: an event of a name one
 * would have exists; none is made). Not under rt_lock (registration takes
 * it). */
static int bind_points(struct ev_def *d, const struct kprw_table *only)
{
    uint64_t by_value = spec_by_value(&d->ev);
    rt_lock_take();
    rt_points_ready();
    uint32_t n = rt_point_count();
    struct point **v = malloc((n ? n : 1) * sizeof *v);
    size_t nv = 0;
    if (!v) {
        rt_lock_drop();
        return -ENOMEM;
    }
    struct point *const *points = rt_point_list();
    for (uint32_t i = 0; i < n; i++)
        if (point_fits(&d->ev, points[i], d->ev.spec, d->ev.spec_len, by_value) && (!only || rt_point_in_table(points[i], only)))
            v[nv++] = points[i];
    rt_lock_drop();
    int made = 0, rc = 0;
    for (size_t i = 0; i < nv && rc == 0; i++)
        if (name_taken(&d->ev, v[i]))
            rc = -EEXIST;
    bool mem = reads_memory(&d->ev);
    for (size_t i = 0; i < nv && rc == 0; i++) {
        struct ev_inst *in = inst_new(d, v[i]);
        if (!in) {
            rc = -ENOSPC;
            break;
        }
        if (mem) {
            rt_lock_take();
            rt_fault_users(1);   /* the safe reads' fixups need the fault signals */
            rt_lock_drop();
        }
        rc = inst_register(in);
        if (rc < 0) {
            if (mem) {
                rt_lock_take();
                rt_fault_users(-1);
                rt_lock_drop();
            }
            free(in);
            break;
        }
        in->reads_memory = mem;
        ev_hist_default(in);
        atomic_store_explicit(&table[in->id], in, memory_order_release);
        atomic_store_explicit(&ninst, in->id + 1, memory_order_release);
        made++;
    }
    free(v);
    return rc < 0 ? rc : made ? made : -ENOENT;
}

/* Is there a point ev's spec names, entry or not? (ev's $argN refused it) */
static bool spec_names_a_point(const struct kprw_event *ev)
{
    bool any = false;
    rt_lock_take();
    struct point *const *points = rt_point_list();
    for (uint32_t i = 0, n = rt_point_count(); i < n && !any; i++)
        any = kprw_spec_matches(ev->spec, ev->spec_len, points[i]->name, points[i]->offset, points[i]->addr);
    rt_lock_drop();
    return any;
}

static pthread_mutex_t define_lock = PTHREAD_MUTEX_INITIALIZER;   /* definitions are made one at a time */

int ev_define(const char *text, size_t len, struct kprw_ev_error *err)
{
    return ev_define_in(text, len, NULL, err);
}

int ev_define_in(const char *text, size_t len, const struct kprw_table *only, struct kprw_ev_error *err)
{
    struct ev_def *d = calloc(1, sizeof *d);
    char *mem = malloc(ARENA_BYTES);
    if (!d || !mem) {
        free(d);
        free(mem);
        err->col = 1, err->msg = "out of memory";
        return -ENOMEM;
    }
    d->arena = (struct kprw_arena){ mem, ARENA_BYTES, 0 };
    const struct kprw_farg *bad = NULL;
    if (!kprw_event_parse(ev_isa(), text, len, &d->arena, &d->ev, err))
        goto invalid;
    if (!kprw_event_bind(&d->ev, resolve_sym, NULL, &bad)) {
        err->col = bad->col, err->msg = "no such symbol";
        goto invalid;
    }
    pthread_mutex_lock(&define_lock);
    int rc = bind_points(d, only);
    if (rc > 0) {
        d->next = defs;
        defs = d;
    }
    pthread_mutex_unlock(&define_lock);
    if (rc <= 0) {
        bool args = rc == -ENOENT && d->ev.uses_args && d->ev.entry_off && spec_names_a_point(&d->ev);
        err->col = rc == -EEXIST && d->ev.name_col ? d->ev.name_col : args ? d->ev.args_col : d->ev.spec_col;
        err->msg = args            ? "$argN is only available at a function's entry (no point there is one)"
                   : rc == -ENOENT ? (d->ev.is_return ? "no return point matches the spec (bake SYM%return)"
                                                      : "no probe point matches the spec")
                   : rc == -EEXIST ? taken_msg
                   : rc == -ENOSPC ? "more points than the 262144 event instances a process holds (the points "
                                     "bound before the last stay)"
                                   : "cannot register the event";
        /* instances made before a failure stay (never freed), so d does too */
        if (rc == -ENOENT || rc == -EEXIST) {
            free(mem);
            free(d);
        }
    }
    return rc;
invalid:
    free(mem);
    free(d);
    return -EINVAL;
}

/* untrace SPEC: each instance SPEC names is unregistered (its records
 * stay readable). The instances, or -ENOENT. */
int ev_untrace(const char *spec)
{
    int n = 0;
    pthread_mutex_lock(&define_lock);
    for (uint32_t i = 0, c = ev_count(); i < c; i++) {
        struct ev_inst *in = ev_by_id(i);
        if (!in || in->gone || !ev_inst_matches(in, spec))
            continue;
        atomic_store(&in->enabled, false);
        if (in->is_return)
            unregister_kretprobe(&in->u.rp);
        else
            unregister_kprobe(&in->u.kp);
        if (in->reads_memory) {
            rt_lock_take();
            rt_fault_users(-1);
            rt_lock_drop();
        }
        in->gone = true;
        n++;
    }
    pthread_mutex_unlock(&define_lock);
    return n ? n : -ENOENT;
}

static int arg_index(const struct kprw_event *ev, const char *name)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        if (strcmp(ev->args[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* hist SPEC [of NAME] [by NAME]: the instances SPEC names keep a
 * histogram of NAME's value (default: a return event's latency, an entry
 * event's first argument), keyed by another argument. */
int ev_hist(const char *spec, const char *of, const char *by)
{
    int n = 0, rc = -ENOENT;
    pthread_mutex_lock(&define_lock);
    for (uint32_t i = 0, c = ev_count(); i < c; i++) {
        struct ev_inst *in = ev_by_id(i);
        if (!in || in->gone || !ev_inst_matches(in, spec))
            continue;
        int o = of ? arg_index(in->def, of) : in->is_return ? -1 : in->def->nargs ? 0 : -2;
        int k = by ? arg_index(in->def, by) : -1;
        if (o == -2 || (of && o < 0) || (by && k < 0)) {
            rc = -EINVAL;   /* no such argument: nothing counted */
            continue;
        }
        struct ev_hist *h = calloc(1, sizeof *h);
        if (!h) {
            rc = -ENOMEM;
            break;
        }
        h->of = (int16_t)o;
        h->by = (int16_t)k;
        struct ev_hist *old = atomic_exchange(&in->hist, h);
        (void)old;   /* a recorder may still add to it: kept */
        n++;
    }
    pthread_mutex_unlock(&define_lock);
    return n ? n : rc;
}

/* Start-up: a histogram of latency for every return event. */
void ev_hist_default(struct ev_inst *in)
{
    if (!in->is_return || atomic_load(&in->hist))
        return;
    struct ev_hist *h = calloc(1, sizeof *h);
    if (h) {
        h->of = h->by = -1;
        atomic_store(&in->hist, h);
    }
}

/* ---- symbols, for the readers ---- */

struct sym_point {
    uintptr_t addr;
    const char *name;
};
static struct sym_point *by_addr;
static uint32_t nby_addr, by_addr_n;

static int cmp_sym(const void *a, const void *b)
{
    uintptr_t x = ((const struct sym_point *)a)->addr, y = ((const struct sym_point *)b)->addr;
    return x < y ? -1 : x > y;
}

/* The functions' entries the points know (their names include static
 * functions, which dladdr does not), sorted; rebuilt when points come. */
static void sym_refresh(void)
{
    rt_lock_take();
    uint32_t n = rt_point_count();
    if (n != nby_addr) {
        struct sym_point *v = malloc((n ? n : 1) * sizeof *v);
        if (v) {
            struct point *const *points = rt_point_list();
            uint32_t k = 0;
            for (uint32_t i = 0; i < n; i++)
                if (points[i]->offset == 0 && points[i]->name)
                    v[k++] = (struct sym_point){ points[i]->addr, points[i]->name };
            qsort(v, k, sizeof *v, cmp_sym);
            free(by_addr);
            by_addr = v;
            nby_addr = n;
            by_addr_n = k;
        }
    }
    rt_lock_drop();
}

bool ev_symbolize(void *ctx, uint64_t addr, bool with_off, struct kprw_sbuf *b)
{
    (void)ctx;
    const char *name = NULL;
    uint64_t start;
    if (rt_elf_function(addr, &name, &start)) {   /* the object's own symbols */
        kprw_sb_str(b, name);
        if (with_off) {
            kprw_sb_str(b, "+");
            kprw_sb_hex(b, addr - start);
        }
        return true;
    }
    /* no file, or no symbol there: the points' names (a stripped image's
     * probed functions), and what the loader exports */
    sym_refresh();
    uintptr_t base = 0;
    uint32_t lo = 0, hi = by_addr_n;
    while (lo < hi) {   /* the last entry at or below addr */
        uint32_t mid = (lo + hi) / 2;
        if (by_addr[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo) {
        name = by_addr[lo - 1].name;
        base = by_addr[lo - 1].addr;
    }
    Dl_info di;
    if (dladdr((void *)(uintptr_t)addr, &di) && di.dli_sname && (uintptr_t)di.dli_saddr > base) {
        name = di.dli_sname;
        base = (uintptr_t)di.dli_saddr;
    }
    if (!name)
        return false;
    kprw_sb_str(b, name);
    if (with_off) {
        kprw_sb_str(b, "+");
        kprw_sb_hex(b, addr - base);
    }
    return true;
}

/* The `events` file: one line an instance, as kprobe_events lists them
 * (p:GRP/EVENT SYM+OFF ARGS, r:GRP/EVENT SYM ARGS), then its counts. */
char *ev_listing(size_t *len)
{
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (uint32_t i = 0, c = ev_count(); s && i < c; i++) {
        const struct ev_inst *in = ev_by_id(i);
        if (!in)
            continue;
        const struct kprw_event *ev = in->def;
        const char *args = ev->text + ev->spec_col - 1 + ev->spec_len;
        for (;;) {
            int k = snprintf(s + n, cap - n, "%c:%s/%s %s%s%s  # dropped %lu filtered %lu%s\n", in->is_return ? 'r' : 'p',
                             in->group, in->name, in->is_return ? in->sym : in->where, args,
                             in->gone ? "  [UNTRACED]" : "", (unsigned long)atomic_load(&in->dropped),
                             (unsigned long)atomic_load(&in->filtered),
                             !in->is_return && in->u.kp.pre_handler != on_entry ? " compiled" : "");
            if (k >= 0 && n + (size_t)k < cap) {
                n += (size_t)k;
                break;
            }
            char *t = realloc(s, cap * 2 + (size_t)(k > 0 ? k : 0));
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
            cap = cap * 2 + (size_t)(k > 0 ? k : 0);
        }
    }
    *len = n;
    if (s && !n)
        s[0] = 0;
    return s;
}
