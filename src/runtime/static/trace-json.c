/*
 * KPREWRITE_TRACE_FORMAT=json in a static program: the records written at
 * exit as Chrome trace events, as the runtime library writes them: a
 * return event's record is a complete event ("X": from the call's entry
 * to its return, "dur" its latency), an entry event's an instant one
 * ("i"), in one JSON array. No thread_name metadata events: no record
 * keeps its thread's name. Symbol fields print as addresses, as in text.
 */
#include "rt.h"
#include "events.h"
#include "runtime/core/event.h"

/* microseconds with three decimals */
static void us(struct kprw_sbuf *b, uint64_t ns)
{
    kprw_sb_u64(b, ns / 1000);
    kprw_sb_char(b, '.');
    uint64_t f = ns % 1000;
    kprw_sb_char(b, (char)('0' + f / 100));
    kprw_sb_char(b, (char)('0' + f / 10 % 10));
    kprw_sb_char(b, (char)('0' + f % 10));
}

void kprs_json_record(const struct kprs_rt *r, const struct kprw_event *ev, const uint8_t *rec,
                      const struct kprw_clock *clk, struct kprw_sbuf *b)
{
    const struct kprw_rec *h = (const struct kprw_rec *)rec;
    const struct kprw_entry *e = &r->e[h->id];
    char sym[300], name[KPRW_EV_NAME_MAX];
    kprs_entry_name(r, e, sym, sizeof sym);
    struct kprw_sbuf nb = { name, 0, sizeof name };
    kprw_event_point_name(ev, sym, e->offset, e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0, kprs_site(r, h->id), &nb);
    kprw_sb_end(&nb);
    kprw_sb_str(b, "{\"name\":\"");
    kprw_sb_json(b, ev->is_return ? sym : name);
    kprw_sb_str(b, "\",\"cat\":\"");
    kprw_sb_json(b, name);
    kprw_sb_str(b, "\",\"ph\":\"");
    uint64_t ts = kprw_clock_ns(clk, h->ts);
    if (ev->is_return) {
        uint64_t entry = kprw_clock_ns(clk, ((const struct kprw_rec_ret *)(rec + KPRW_REC_HDR))->entry_ts);
        kprw_sb_str(b, "X\",\"ts\":");
        us(b, entry);
        kprw_sb_str(b, ",\"dur\":");
        us(b, ts >= entry ? ts - entry : 0);
    } else {
        kprw_sb_str(b, "i\",\"s\":\"t\",\"ts\":");
        us(b, ts);
    }
    kprw_sb_str(b, ",\"pid\":");
    kprw_sb_u64(b, (uint64_t)kprs_sys(SYS_getpid, 0, 0, 0, 0));
    kprw_sb_str(b, ",\"tid\":");
    kprw_sb_u64(b, h->tid);
    kprw_sb_str(b, ",\"args\":{");
    kprw_event_json_args(ev, rec, 0, b);
    kprw_sb_str(b, "}}");
}
