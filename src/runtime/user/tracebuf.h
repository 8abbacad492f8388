/*
 * Per-thread event buffers: one ring per thread that records events,
 * written only by its thread (no lock, no atomic read-modify-write, no
 * system call once it exists) and read by whoever holds the reader lock
 * (trace_pipe, trace, the KPREWRITE_TRACE writer). A full ring drops the
 * event and the caller counts the drop. A thread's ring outlives the
 * thread until it has been read.
 */
#ifndef KPREWRITE_TRACEBUF_H
#define KPREWRITE_TRACEBUF_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tb_ring {
    _Atomic uint64_t head;             /* bytes committed by the writer */
    _Atomic uint64_t tail;             /* bytes consumed by the reader */
    uint32_t size;                     /* a power of two */
    uint32_t tid;
    char comm[16];                     /* the thread's name when the ring was made */
    struct tb_ring *next;              /* every ring, newest first */
    _Atomic bool dead;                 /* its thread is gone: freed once read */
    uint8_t *data;
};

/* The reader lock (a plain mutex: readers are the control thread and the
 * writer thread, never a probed hot path). */
void tb_reader_lock(void);
void tb_reader_unlock(void);

/* This thread's ring, made on first use (an mmap: async-signal-safe); NULL
 * when none can be made. Inline, as tb_reserve and tb_commit: they are an
 * event's hot path. */
extern __thread struct tb_ring *tb_self_ring __attribute__((tls_model("initial-exec")));
struct tb_ring *tb_self_new(void);
static inline struct tb_ring *tb_self(void)
{
    struct tb_ring *r = tb_self_ring;
    return __builtin_expect(r != NULL, 1) ? r : tb_self_new();
}

/* A padding record's id: readers skip it. */
#define TB_PAD_ID 0xffffffffu

/* Room for a record of at most max bytes at the ring's head: where to
 * write it, or NULL (full: the caller counts a drop). Records are 8-byte
 * aligned and never wrap: a record that would is preceded by padding
 * (*pad bytes, for tb_commit). */
static inline uint8_t *tb_reserve(struct tb_ring *r, uint32_t max, uint32_t *pad)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint32_t size = r->size, pos = (uint32_t)head & (size - 1);
    uint32_t p = pos + max > size ? size - pos : 0;
    if (max > size / 2 || head + p + max - tail > size)
        return NULL;
    if (__builtin_expect(p != 0, 0)) {
        uint32_t w[2] = { p, TB_PAD_ID };   /* a struct kprw_rec's size and id */
        __builtin_memcpy(r->data + pos, w, sizeof w);
        pos = 0;
    }
    *pad = p;
    return r->data + pos;
}

/* Publish the record written at the reserved place (size bytes, the size
 * of its struct kprw_rec; pad: what tb_reserve said). */
static inline void tb_commit(struct tb_ring *r, uint32_t pad, uint32_t size)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    atomic_store_explicit(&r->head, head + pad + size, memory_order_release);
}

/* Reader side, under the reader lock. The list of rings, newest first. */
struct tb_ring *tb_rings(void);
/* The oldest unread record of r (NULL: none) without consuming it; with
 * cursor non-NULL, the one at *cursor (a snapshot walk: start at
 * tb_tail(r)). */
const uint8_t *tb_peek(struct tb_ring *r, uint64_t *cursor);
uint64_t tb_tail(struct tb_ring *r);
/* Consume the record tb_peek(r, NULL) gave, or move a cursor past it. */
void tb_consume(struct tb_ring *r, uint64_t *cursor);
/* Every ring emptied, what it held unread dropped (takes the reader
 * lock): `echo > trace`, as the kernel's. */
void tb_clear(void);
/* Free the rings of threads that are gone and fully read. */
void tb_reap(void);

/* This thread exits: its ring is marked dead. */
void tb_thread_exit(void);
/* The child of a fork: only this thread's ring is kept, emptied (the
 * parent's events stay the parent's). */
void tb_fork_child(void);
/* Bytes of each new ring: KPREWRITE_TRACE_BUFFER (KiB), 256 by default. */
void tb_configure(uint32_t kib);
#endif
