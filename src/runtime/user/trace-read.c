/*
 * Reading the event buffers (trace-read.h). Records are merged over the
 * threads' rings by time; each is printed from its instance (events.h):
 * ftrace's line, a Chrome trace event, or a call for the folded stacks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "folded.h"
#include "trace-read.h"
#include "tracebuf.h"

bool tr_format_parse(const char *s, enum tr_format *f)
{
    static const char *const names[] = { "text", "json", "folded" };
    for (unsigned i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *f = (enum tr_format)i;
            return true;
        }
    return false;
}

/* ---- the merge ---- */

struct merge {
    struct tb_ring **r;
    uint64_t *cur;                     /* snapshot cursors; NULL: consume */
    size_t n;
};

static bool merge_open(struct merge *m, bool consume)
{
    size_t n = 0;
    for (struct tb_ring *r = tb_rings(); r; r = r->next)
        n++;
    m->n = n;
    m->r = malloc((n ? n : 1) * sizeof *m->r);
    m->cur = consume ? NULL : malloc((n ? n : 1) * sizeof *m->cur);
    if (!m->r || (!consume && !m->cur)) {
        free(m->r);
        free(m->cur);
        return false;
    }
    size_t i = 0;
    for (struct tb_ring *r = tb_rings(); r && i < n; r = r->next, i++) {
        m->r[i] = r;
        if (m->cur)
            m->cur[i] = tb_tail(r);
    }
    m->n = i;
    return true;
}

static void merge_close(struct merge *m)
{
    free(m->r);
    free(m->cur);
}

/* The oldest record over all rings (NULL: none); *which: its ring. */
static const uint8_t *merge_peek(struct merge *m, size_t *which)
{
    const uint8_t *best = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const uint8_t *p = tb_peek(m->r[i], m->cur ? &m->cur[i] : NULL);
        if (p && (!best || ((const struct kprw_rec *)p)->ts < ((const struct kprw_rec *)best)->ts)) {
            best = p;
            *which = i;
        }
    }
    return best;
}

static void merge_next(struct merge *m, size_t which) { tb_consume(m->r[which], m->cur ? &m->cur[which] : NULL); }

/* ---- one record in each format ---- */

static const struct kprw_fmt_env sym_env = { ev_symbolize, NULL };

/* "CALLER+0xOFF <- SYM" of a return record. */
static void return_where(const struct ev_inst *in, const uint8_t *rec, struct kprw_sbuf *b)
{
    const struct kprw_rec_ret *r = (const void *)(rec + KPRW_REC_HDR);
    if (!ev_symbolize(NULL, r->ret_ip, true, b))
        kprw_sb_hex(b, r->ret_ip);
    kprw_sb_str(b, " <- ");
    kprw_sb_str(b, in->sym);
}

static void text_line(const struct ev_inst *in, const uint8_t *rec, const struct tb_ring *ring, struct kprw_sbuf *b)
{
    char where[640];
    struct kprw_sbuf w = { where, 0, sizeof where };
    if (in->is_return)
        return_where(in, rec, &w);
    else
        kprw_sb_str(&w, in->where);
    kprw_sb_end(&w);
    const struct kprw_rec *h = (const void *)rec;
    kprw_event_print_line(in->def, rec, clk_ns(h->ts), ring->comm, in->name, where, &sym_env, b);
}

/* microseconds with three decimals */
/* A Chrome trace event (the core's: kprw_event_json_record). */
static void json_event(const struct ev_inst *in, const uint8_t *rec, struct kprw_sbuf *b)
{
    const struct kprw_rec *h = (const void *)rec;
    uint64_t entry = in->is_return ? clk_ns(((const struct kprw_rec_ret *)(rec + KPRW_REC_HDR))->entry_ts) : 0;
    kprw_event_json_record(in->def, rec, in->name, in->sym, clk_ns(h->ts), entry, (uint64_t)getpid(), &sym_env, b);
}

/* The thread's name, once a ring (a metadata event). */
static void json_thread(const struct tb_ring *r, struct kprw_sbuf *b)
{
    kprw_sb_str(b, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
    kprw_sb_u64(b, (uint64_t)getpid());
    kprw_sb_str(b, ",\"tid\":");
    kprw_sb_u64(b, r->tid);
    kprw_sb_str(b, ",\"args\":{\"name\":\"");
    kprw_sb_json(b, r->comm);
    kprw_sb_str(b, "\"}}");
}

static void fold(struct folded *f, const struct ev_inst *in, const uint8_t *rec)
{
    if (!in->is_return)
        return;
    const struct kprw_rec *h = (const void *)rec;
    const struct kprw_rec_ret *r = (const void *)(rec + KPRW_REC_HDR);
    folded_add(f, h->tid, in->sym, clk_ns(r->entry_ts), clk_ns(h->ts));
}

/* ---- a growing text ---- */

struct out {
    char *s;
    size_t n, cap;
};

/* Room for at least `want` more bytes; a buffer to write into. */
static bool out_room(struct out *o, size_t want)
{
    if (o->cap - o->n > want)
        return true;
    size_t cap = (o->cap + want) * 2;
    char *s = realloc(o->s, cap);
    if (!s)
        return false;
    o->s = s;
    o->cap = cap;
    return true;
}

/* Append what print writes, growing as needed. */
static void out_put(struct out *o, void (*print)(const void *, const void *, struct kprw_sbuf *), const void *a,
                    const void *c)
{
    for (size_t want = 1024;; want *= 4) {
        if (!out_room(o, want))
            return;
        struct kprw_sbuf b = { o->s + o->n, 0, o->cap - o->n };
        print(a, c, &b);
        if (b.len < b.cap) {
            o->n += b.len;
            return;
        }
    }
}

static void put_str(const void *s, const void *unused, struct kprw_sbuf *b)
{
    (void)unused;
    kprw_sb_str(b, s);
}

struct rec_ctx {
    const struct ev_inst *in;
    const struct tb_ring *ring;
};

static void put_text(const void *rec, const void *c, struct kprw_sbuf *b)
{
    const struct rec_ctx *x = c;
    text_line(x->in, rec, x->ring, b);
}

static void put_json(const void *rec, const void *c, struct kprw_sbuf *b)
{
    json_event(((const struct rec_ctx *)c)->in, rec, b);
}

static void put_thread(const void *ring, const void *unused, struct kprw_sbuf *b)
{
    (void)unused;
    json_thread(ring, b);
}

/* ---- snapshots ---- */

static void header(struct out *o, uint64_t in_buffer)
{
    uint64_t dropped = 0;   /* (ftrace says entries-written; a ring here drops when full, it never overwrites) */
    for (uint32_t i = 0, n = ev_count(); i < n; i++) {
        struct ev_inst *in = ev_by_id(i);
        if (in)
            dropped += atomic_load_explicit(&in->dropped, memory_order_relaxed);
    }
    char h[512];
    snprintf(h, sizeof h,
             "# tracer: nop\n#\n# entries-in-buffer/entries-dropped: %llu/%llu   #P:%ld\n#\n"
             "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
             "#              | |         |         |         |\n",
             (unsigned long long)in_buffer, (unsigned long long)dropped, sysconf(_SC_NPROCESSORS_ONLN));
    out_put(o, put_str, h, NULL);
}

char *tr_snapshot(enum tr_format fmt, size_t *len)
{
    struct out o = { 0 };
    struct merge m;
    struct folded *f = fmt == TR_FOLDED ? folded_new() : NULL;
    tb_reader_lock();
    if (!merge_open(&m, false)) {
        tb_reader_unlock();
        folded_free(f);
        return NULL;
    }
    uint64_t n = 0;
    if (fmt == TR_JSON) {
        out_put(&o, put_str, "[\n", NULL);
        for (size_t i = 0; i < m.n; i++) {
            out_put(&o, put_thread, m.r[i], NULL);
            out_put(&o, put_str, ",\n", NULL);
        }
    }
    const uint8_t *rec;
    size_t which;
    struct out body = { 0 };
    while ((rec = merge_peek(&m, &which))) {
        const struct ev_inst *in = ev_by_id(((const struct kprw_rec *)rec)->id);
        if (in) {
            struct rec_ctx x = { in, m.r[which] };
            if (fmt == TR_TEXT)
                out_put(&body, put_text, rec, &x);
            else if (fmt == TR_JSON) {
                if (n)
                    out_put(&o, put_str, ",\n", NULL);
                out_put(&o, put_json, rec, &x);
            } else if (f)
                fold(f, in, rec);
            n++;
        }
        merge_next(&m, which);
    }
    merge_close(&m);
    tb_reader_unlock();
    if (fmt == TR_TEXT) {
        header(&o, n);
        if (body.n && out_room(&o, body.n)) {
            memcpy(o.s + o.n, body.s, body.n);
            o.n += body.n;
        }
    } else if (fmt == TR_JSON) {
        if (!n && o.n >= 2)
            o.n -= 2;   /* the last thread's ",\n" */
        out_put(&o, put_str, "\n]\n", NULL);
    } else if (f) {
        size_t fl;
        char *t = folded_text(f, &fl);
        if (t)
            out_put(&o, put_str, t, NULL);
        free(t);
        folded_free(f);
    }
    free(body.s);
    if (!o.s)
        out_room(&o, 1);
    if (o.s)
        o.s[o.n] = 0;
    *len = o.n;
    return o.s;
}

/* ---- streams ---- */

static bool named(const struct tr_stream *s, uint32_t tid)
{
    for (size_t i = 0; i < s->nnamed; i++)
        if (s->named[i] == tid)
            return true;
    return false;
}

static void name_thread(struct tr_stream *s, uint32_t tid)
{
    if (named(s, tid))
        return;
    uint32_t *v = realloc(s->named, (s->nnamed + 1) * sizeof *v);
    if (v) {
        v[s->nnamed++] = tid;
        s->named = v;
    }
}

size_t tr_stream_read(struct tr_stream *s, char *buf, size_t cap)
{
    struct merge m;
    size_t n = 0;
    tb_reader_lock();
    if (!merge_open(&m, true)) {
        tb_reader_unlock();
        return 0;
    }
    if (s->fmt == TR_FOLDED && !s->folded)
        s->folded = folded_new();
    const uint8_t *rec;
    size_t which;
    while ((rec = merge_peek(&m, &which))) {
        const struct ev_inst *in = ev_by_id(((const struct kprw_rec *)rec)->id);
        if (in) {
            struct kprw_sbuf b = { buf + n, 0, cap - n };
            if (s->fmt == TR_TEXT) {
                text_line(in, rec, m.r[which], &b);
            } else if (s->fmt == TR_JSON) {
                kprw_sb_str(&b, s->started ? ",\n" : "[\n");
                if (!named(s, m.r[which]->tid)) {
                    json_thread(m.r[which], &b);
                    kprw_sb_str(&b, ",\n");
                }
                json_event(in, rec, &b);
            } else if (s->folded) {
                fold(s->folded, in, rec);
            }
            if (b.len >= b.cap)
                break;   /* does not fit: left for the next read */
            n += b.len;
            if (s->fmt == TR_JSON) {
                s->started = true;
                name_thread(s, m.r[which]->tid);
            }
        }
        merge_next(&m, which);
    }
    merge_close(&m);
    tb_reap();
    tb_reader_unlock();
    return n;
}

char *tr_stream_end(struct tr_stream *s, size_t *len)
{
    char *t = NULL;
    *len = 0;
    if (s->fmt == TR_JSON && s->started) {
        t = strdup("\n]\n");
        *len = t ? 3 : 0;
    } else if (s->fmt == TR_FOLDED && s->folded) {
        t = folded_text(s->folded, len);
        folded_free(s->folded);
        s->folded = NULL;
    }
    free(s->named);
    s->named = NULL;
    s->nnamed = 0;
    return t;
}

/* ---- histograms ---- */

static void hist_key(struct out *o, const struct ev_inst *in, const struct ev_hist *h, const struct ev_hist_key *k)
{
    char line[512];
    const struct kprw_farg *by = h->by >= 0 ? &in->def->args[h->by] : NULL;
    if (by && by->type == KPRW_FT_STRING)
        snprintf(line, sizeof line, "%s=\"%s\":\n", by->name, k->str);
    else if (by)
        snprintf(line, sizeof line, "%s=%lld:\n", by->name, (long long)atomic_load(&k->key));
    else
        line[0] = 0;
    out_put(o, put_str, line, NULL);
    uint64_t b[KPRW_HIST_BUCKETS];
    for (unsigned i = 0; i < KPRW_HIST_BUCKETS; i++)
        b[i] = atomic_load_explicit(&k->buckets[i], memory_order_relaxed);
    for (size_t want = 8192;; want *= 2) {
        if (!out_room(o, want))
            return;
        struct kprw_sbuf sb = { o->s + o->n, 0, o->cap - o->n };
        kprw_hist_print(b, &sb);
        if (sb.len < sb.cap) {
            o->n += sb.len;
            break;
        }
    }
}

static void hist_of(struct out *o, const struct ev_inst *in, const struct ev_hist *h)
{
    char line[640];
    snprintf(line, sizeof line, "# %s: (%s) %s%s%s\n", in->name, in->where,
             h->of >= 0 ? in->def->args[h->of].name : "latency (ns)", h->by >= 0 ? " by " : "",
             h->by >= 0 ? in->def->args[h->by].name : "");
    out_put(o, put_str, line, NULL);
    for (unsigned i = 0; i < EV_HIST_KEYS; i++)
        if (atomic_load_explicit(&h->keys[i].used, memory_order_acquire) == 2)
            hist_key(o, in, h, &h->keys[i]);
    uint64_t other = atomic_load(&h->other);
    if (other) {
        snprintf(line, sizeof line, "# %llu hits whose key found no room (more than %d keys)\n",
                 (unsigned long long)other, EV_HIST_KEYS);
        out_put(o, put_str, line, NULL);
    }
    out_put(o, put_str, "\n", NULL);
}

char *tr_hists(const char *spec, size_t *len)
{
    struct out o = { 0 };
    for (uint32_t i = 0, n = ev_count(); i < n; i++) {
        struct ev_inst *in = ev_by_id(i);
        struct ev_hist *h = in ? atomic_load_explicit(&in->hist, memory_order_acquire) : NULL;
        if (!h || in->gone)
            continue;
        if (spec && !ev_inst_matches(in, spec))
            continue;
        hist_of(&o, in, h);
    }
    if (!o.s)
        out_room(&o, 1);
    if (o.s)
        o.s[o.n] = 0;
    *len = o.n;
    return o.s;
}
