/*
 * KPREWRITE_TRACE_FORMAT=json in a static program: the records written at
 * exit as Chrome trace events, as the runtime library writes them: a
 * return event's record is a complete event ("X": from the call's entry
 * to its return, "dur" its latency), an entry event's an instant one
 * ("i"), in one JSON array. No thread_name metadata events: no record
 * keeps its thread's name. Symbol fields print as addresses, as in text.
 * The event's object is the runtime core's (kprw_event_json_record), the
 * runtime library's too.
 */
#include "rt.h"
#include "events.h"
#include "runtime/core/event.h"

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
    uint64_t entry = ev->is_return ? kprw_clock_ns(clk, ((const struct kprw_rec_ret *)(rec + KPRW_REC_HDR))->entry_ts) : 0;
    kprw_event_json_record(ev, rec, name, sym, kprw_clock_ns(clk, h->ts), entry,
                           (uint64_t)kprs_sys(SYS_getpid, 0, 0, 0, 0), 0, b);
}
