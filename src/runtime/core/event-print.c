/*
 * Printing records as ftrace prints kprobe events (kernel/trace/
 * trace_kprobe.c, trace_probe.c, trace_output.c), and log2 histograms as
 * bpftrace prints hist(). No libc: a bounded buffer of our own.
 */
#include "event.h"
#include "event-text.h"

void kprw_sb_mem(struct kprw_sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, b->len++)
        if (b->len + 1 < b->cap)
            b->p[b->len] = s[i];
}

void kprw_sb_str(struct kprw_sbuf *b, const char *s) { kprw_sb_mem(b, s, kprw_strlen(s)); }
void kprw_sb_char(struct kprw_sbuf *b, char c) { kprw_sb_mem(b, &c, 1); }

void kprw_sb_u64(struct kprw_sbuf *b, uint64_t v)
{
    char d[20];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n)
        kprw_sb_char(b, d[--n]);
}

void kprw_sb_s64(struct kprw_sbuf *b, int64_t v)
{
    if (v < 0) {
        kprw_sb_char(b, '-');
        kprw_sb_u64(b, -(uint64_t)v);
    } else {
        kprw_sb_u64(b, (uint64_t)v);
    }
}

void kprw_sb_hex(struct kprw_sbuf *b, uint64_t v)
{
    char d[16];
    int n = 0;
    do
        d[n++] = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    kprw_sb_mem(b, "0x", 2);
    while (n)
        kprw_sb_char(b, d[--n]);
}

/* s[0..n) in a field of `width` columns, padded with spaces on the left
 * (right-aligned) or on the right. */
void kprw_sb_field(struct kprw_sbuf *b, const char *s, size_t n, size_t width, bool right)
{
    size_t pad = n < width ? width - n : 0;
    for (size_t i = 0; right && i < pad; i++)
        kprw_sb_char(b, ' ');
    kprw_sb_mem(b, s, n);
    for (size_t i = 0; !right && i < pad; i++)
        kprw_sb_char(b, ' ');
}

static void u64_field(struct kprw_sbuf *b, uint64_t v, size_t width, bool right)
{
    char d[24];
    struct kprw_sbuf t = { d, 0, sizeof d };
    kprw_sb_u64(&t, v);
    kprw_sb_field(b, d, t.len, width, right);
}

bool kprw_sb_end(struct kprw_sbuf *b)
{
    if (b->cap)
        b->p[b->len < b->cap ? b->len : b->cap - 1] = 0;
    return b->len < b->cap;
}

static uint64_t element(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v |= (uint64_t)p[i] << 8 * i;
    return v;
}

static void print_value(const struct kprw_farg *f, const uint8_t *p, const struct kprw_fmt_env *env,
                        struct kprw_sbuf *b)
{
    uint64_t v = element(p, f->size);
    switch (f->type) {
    case KPRW_FT_U:
        kprw_sb_u64(b, v);
        break;
    case KPRW_FT_S:
        if (f->size < 8 && (v >> (8 * f->size - 1) & 1))
            v |= ~0ull << 8 * f->size;
        kprw_sb_s64(b, (int64_t)v);
        break;
    case KPRW_FT_CHAR:
        kprw_sb_char(b, '\'');
        kprw_sb_char(b, (char)v);
        kprw_sb_char(b, '\'');
        break;
    case KPRW_FT_SYMBOL:
        if (env && env->symbolize && env->symbolize(env->ctx, v, true, b))
            break;
        kprw_sb_hex(b, v);   /* an address nothing names */
        break;
    default:
        kprw_sb_hex(b, v);
    }
}

void kprw_event_print_args(const struct kprw_event *ev, const uint8_t *rec, const struct kprw_fmt_env *env,
                           struct kprw_sbuf *b)
{
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_farg *f = &ev->args[k];
        kprw_sb_char(b, ' ');
        kprw_sb_str(b, f->name);
        kprw_sb_char(b, '=');
        if (kprw_rec_fault(ev, rec, k)) {
            kprw_sb_str(b, "(fault)");
        } else if (f->type == KPRW_FT_STRING) {
            kprw_sb_char(b, '"');
            kprw_sb_str(b, kprw_rec_string(ev, rec, k));
            kprw_sb_char(b, '"');
        } else if (f->count) {
            kprw_sb_char(b, '{');
            for (unsigned e = 0; e < f->count; e++) {
                if (e)
                    kprw_sb_char(b, ',');
                print_value(f, rec + f->off + e * f->size, env, b);
            }
            kprw_sb_char(b, '}');
        } else {
            print_value(f, rec + f->off, env, b);
        }
    }
}

void kprw_event_print_line(const struct kprw_event *ev, const uint8_t *rec, uint64_t ts_ns, const char *comm,
                           const char *event, const char *where, const struct kprw_fmt_env *env, struct kprw_sbuf *b)
{
    const struct kprw_rec *h = (const void *)rec;
    kprw_sb_field(b, comm, kprw_strlen(comm), 16, true);
    kprw_sb_char(b, '-');
    u64_field(b, h->tid, 7, false);
    kprw_sb_str(b, " [");
    if (h->cpu < 100)
        kprw_sb_char(b, '0');
    if (h->cpu < 10)
        kprw_sb_char(b, '0');
    kprw_sb_u64(b, h->cpu);
    kprw_sb_str(b, "] ");
    u64_field(b, ts_ns / 1000000000u, 5, true);
    kprw_sb_char(b, '.');
    uint64_t us = ts_ns / 1000 % 1000000;
    for (uint64_t d = 100000; d > 1 && us < d; d /= 10)
        kprw_sb_char(b, '0');
    kprw_sb_u64(b, us);
    kprw_sb_str(b, ": ");
    kprw_sb_str(b, event);
    kprw_sb_str(b, ": (");
    kprw_sb_str(b, where);
    kprw_sb_char(b, ')');
    kprw_event_print_args(ev, rec, env, b);
    kprw_sb_char(b, '\n');
}

void kprw_sb_json(struct kprw_sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            kprw_sb_char(b, '\\');
            kprw_sb_char(b, (char)c);
        } else if (c < 0x20) {
            kprw_sb_str(b, "\\u00");
            kprw_sb_char(b, "0123456789abcdef"[c >> 4]);
            kprw_sb_char(b, "0123456789abcdef"[c & 15]);
        } else {
            kprw_sb_char(b, (char)c);
        }
    }
}

void kprw_event_json_args(const struct kprw_event *ev, const uint8_t *rec, const struct kprw_fmt_env *env,
                          struct kprw_sbuf *b)
{
    char tmp[KPRW_EV_STRING_MAX + 64];
    for (unsigned k = 0; k < ev->nargs; k++) {
        const struct kprw_farg *f = &ev->args[k];
        if (k)
            kprw_sb_char(b, ',');
        kprw_sb_char(b, '"');
        kprw_sb_str(b, f->name);
        kprw_sb_str(b, "\":");
        bool number = !f->count && (f->type == KPRW_FT_U || f->type == KPRW_FT_S);
        if (kprw_rec_fault(ev, rec, k)) {
            kprw_sb_str(b, "null");
        } else if (number) {
            print_value(f, rec + f->off, env, b);
        } else {
            struct kprw_sbuf t = { tmp, 0, sizeof tmp };
            if (f->type == KPRW_FT_STRING) {
                kprw_sb_str(&t, kprw_rec_string(ev, rec, k));
            } else if (f->count) {
                for (unsigned e = 0; e < f->count; e++) {
                    kprw_sb_char(&t, e ? ',' : '{');
                    print_value(f, rec + f->off + e * f->size, env, &t);
                }
                kprw_sb_char(&t, '}');
            } else {
                print_value(f, rec + f->off, env, &t);
            }
            kprw_sb_end(&t);
            kprw_sb_char(b, '"');
            kprw_sb_json(b, tmp);
            kprw_sb_char(b, '"');
        }
    }
}

void kprw_sb_us(struct kprw_sbuf *b, uint64_t ns)
{
    kprw_sb_u64(b, ns / 1000);
    kprw_sb_char(b, '.');
    uint64_t f = ns % 1000;
    kprw_sb_char(b, (char)('0' + f / 100));
    kprw_sb_char(b, (char)('0' + f / 10 % 10));
    kprw_sb_char(b, (char)('0' + f % 10));
}

void kprw_event_json_record(const struct kprw_event *ev, const uint8_t *rec, const char *name, const char *sym,
                            uint64_t ts_ns, uint64_t entry_ns, uint64_t pid, const struct kprw_fmt_env *env,
                            struct kprw_sbuf *b)
{
    const struct kprw_rec *h = (const struct kprw_rec *)rec;
    kprw_sb_str(b, "{\"name\":\"");
    kprw_sb_json(b, ev->is_return ? sym : name);
    kprw_sb_str(b, "\",\"cat\":\"");
    kprw_sb_json(b, name);
    if (ev->is_return) {
        kprw_sb_str(b, "\",\"ph\":\"X\",\"ts\":");
        kprw_sb_us(b, entry_ns);
        kprw_sb_str(b, ",\"dur\":");
        kprw_sb_us(b, ts_ns >= entry_ns ? ts_ns - entry_ns : 0);
    } else {
        kprw_sb_str(b, "\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        kprw_sb_us(b, ts_ns);
    }
    kprw_sb_str(b, ",\"pid\":");
    kprw_sb_u64(b, pid);
    kprw_sb_str(b, ",\"tid\":");
    kprw_sb_u64(b, h->tid);
    kprw_sb_str(b, ",\"args\":{");
    kprw_event_json_args(ev, rec, env, b);
    kprw_sb_str(b, "}}");
}

void kprw_event_default_name(bool is_return, const char *sym, uint32_t offset, uint64_t addr, struct kprw_sbuf *b)
{
    size_t at = b->len;
    kprw_sb_str(b, is_return ? "r_" : "p_");
    if (sym) {
        kprw_sb_str(b, sym);
        kprw_sb_char(b, '_');
        kprw_sb_u64(b, offset);
    } else {
        kprw_sb_hex(b, addr);
    }
    for (size_t i = at; i < b->len && i + 1 < b->cap; i++)
        if (!kprw_alpha(b->p[i]) && !kprw_digit(b->p[i]))
            b->p[i] = '_';
}

void kprw_event_point_name(const struct kprw_event *ev, const char *sym, uint32_t offset, uint32_t skipped,
                           uint64_t addr, struct kprw_sbuf *b)
{
    if (ev->name) {
        kprw_sb_str(b, ev->name);
        return;
    }
    bool plus = false;
    for (uint32_t c = 0; c < ev->spec_len; c++)
        plus |= ev->spec[c] == '+';
    kprw_event_default_name(ev->is_return, sym, skipped && skipped == offset && !plus ? 0 : offset, addr, b);
}

void kprw_event_print_point_line(const struct kprw_event *ev, const uint8_t *rec, uint64_t ts_ns, const char *comm,
                                 const char *sym, uint32_t offset, uint32_t skipped, uint64_t addr,
                                 struct kprw_sbuf *b)
{
    char name[KPRW_EV_NAME_MAX], where[320];
    struct kprw_sbuf nb = { name, 0, sizeof name }, wb = { where, 0, sizeof where };
    kprw_event_point_name(ev, sym, offset, skipped, addr, &nb);
    kprw_sb_end(&nb);
    if (ev->is_return) {   /* CALLER <- SYM, the caller by its address */
        kprw_sb_hex(&wb, ((const struct kprw_rec_ret *)(rec + KPRW_REC_HDR))->ret_ip);
        kprw_sb_str(&wb, " <- ");
        kprw_sb_str(&wb, sym);
    } else {
        kprw_sb_str(&wb, sym);
        kprw_sb_char(&wb, '+');
        kprw_sb_hex(&wb, offset);
    }
    kprw_sb_end(&wb);
    kprw_event_print_line(ev, rec, ts_ns, comm, name, where, NULL, b);
}

/* ---- a record's time ---- */

/* n / d, the quotient's low 64 bits, by shift and subtract: a runtime with
 * no libgcc (the static one) has no 128-bit division */
static uint64_t div128(unsigned __int128 n, uint64_t d)
{
    unsigned __int128 q = 0, r = 0;
    for (int i = 127; i >= 0; i--) {
        r = r << 1 | (uint64_t)(n >> i & 1);
        if (r >= d) {
            r -= d;
            q |= (unsigned __int128)1 << i;
        }
    }
    return (uint64_t)q;
}

void kprw_clock_map(struct kprw_clock *c, uint64_t t0, uint64_t ns0, uint64_t t1, uint64_t ns1)
{
    c->t0 = t0;
    c->ns0 = ns0;
    c->mult = t1 > t0 && ns1 > ns0 ? div128((unsigned __int128)(ns1 - ns0) << 32, t1 - t0) : 0;
}

uint64_t kprw_clock_ns(const struct kprw_clock *c, uint64_t t)
{
    return t < c->t0 ? c->ns0 : c->ns0 + (uint64_t)((unsigned __int128)(t - c->t0) * c->mult >> 32);
}

/* ---- histograms ---- */

/* 2^p as bpftrace writes bucket bounds: 1, 2, ..., 512, 1K, ... 8E. */
static void power(struct kprw_sbuf *b, unsigned p)
{
    static const char units[] = " KMGTPE";
    kprw_sb_u64(b, 1ull << (p % 10));
    if (p >= 10)
        kprw_sb_char(b, units[p / 10]);
}

void kprw_hist_print(const uint64_t *buckets, struct kprw_sbuf *b)
{
    unsigned lo = KPRW_HIST_BUCKETS, hi = 0;
    uint64_t max = 0;
    for (unsigned k = 0; k < KPRW_HIST_BUCKETS; k++)
        if (buckets[k]) {
            lo = lo < k ? lo : k;
            hi = k;
            max = buckets[k] > max ? buckets[k] : max;
        }
    for (unsigned k = lo; k <= hi && lo < KPRW_HIST_BUCKETS; k++) {
        char l[24];
        struct kprw_sbuf t = { l, 0, sizeof l };
        kprw_sb_char(&t, '[');
        if (k < 2) {
            kprw_sb_u64(&t, k);
            kprw_sb_char(&t, ']');
        } else {
            power(&t, k - 1);
            kprw_sb_str(&t, ", ");
            if (k == 64)
                kprw_sb_str(&t, "16E");
            else
                power(&t, k);
            kprw_sb_char(&t, ')');
        }
        kprw_sb_field(b, l, t.len, 16, false);
        u64_field(b, buckets[k], 8, true);
        kprw_sb_str(b, " |");
        unsigned bar = max ? (unsigned)(buckets[k] * 52 / max) : 0;
        for (unsigned i = 0; i < 52; i++)
            kprw_sb_char(b, i < bar ? '@' : ' ');
        kprw_sb_str(b, "|\n");
    }
}
