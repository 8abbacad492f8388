/*
 * Reading the event buffers: every thread's records merged in time order,
 * as ftrace's text (trace_pipe, trace), Chrome trace-event JSON (Perfetto,
 * chrome://tracing) or folded stacks (flame graphs). Under the reader lock
 * (tracebuf.h), which the functions here take themselves.
 */
#ifndef KPREWRITE_TRACE_READ_H
#define KPREWRITE_TRACE_READ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tr_format { TR_TEXT, TR_JSON, TR_FOLDED };
bool tr_format_parse(const char *s, enum tr_format *f);

/* A consuming reader's state (trace_pipe, the KPREWRITE_TRACE writer). */
struct tr_stream {
    enum tr_format fmt;
    bool started;                      /* JSON: the opening bracket and an event are out */
    struct folded *folded;             /* TR_FOLDED: what was read so far, aggregated */
    uint32_t *named;                   /* JSON: the threads whose names are out */
    size_t nnamed;
};

/* Consume records into buf, whole lines (or JSON events) only, at most cap
 * bytes; the bytes written (0: nothing to read, or nothing fits).
 * TR_FOLDED aggregates what it reads and writes nothing (tr_stream_end
 * writes it). */
size_t tr_stream_read(struct tr_stream *s, char *buf, size_t cap);
/* What ends a stream: JSON's closing bracket, the folded stacks. malloc'd. */
char *tr_stream_end(struct tr_stream *s, size_t *len);

/* Everything unread, without consuming it: `trace` (with ftrace's header),
 * trace.json, trace.folded. malloc'd. */
char *tr_snapshot(enum tr_format fmt, size_t *len);

/* Lines of the histograms of every instance that keeps one (SPEC: those
 * whose point it names; NULL: all). malloc'd. */
char *tr_hists(const char *spec, size_t *len);
#endif
