/*
 * Per-thread event buffers (tracebuf.h). Each ring is one anonymous
 * mapping: the header, then the data. The writer (its thread) moves head,
 * the reader (under the reader lock) moves tail; both are byte counts that
 * only grow, so head - tail is what is unread. A record never wraps: one
 * that would starts at the beginning, after a padding record.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/core/event.h"
#include "tracebuf.h"

#define TLS __attribute__((tls_model("initial-exec"))) __thread

static pthread_mutex_t reader = PTHREAD_MUTEX_INITIALIZER;
static struct tb_ring *_Atomic rings;
static uint32_t ring_size = 256 * 1024;
TLS struct tb_ring *tb_self_ring;
/* tb_reserve writes a padding record as its first two words */
_Static_assert(offsetof(struct kprw_rec, size) == 0 && offsetof(struct kprw_rec, id) == 4, "a record starts with its size and id");

void tb_reader_lock(void) { pthread_mutex_lock(&reader); }
void tb_reader_unlock(void) { pthread_mutex_unlock(&reader); }
struct tb_ring *tb_rings(void) { return atomic_load_explicit(&rings, memory_order_acquire); }

void tb_configure(uint32_t kib)
{
    uint32_t want = kib < 16 ? 16 : kib > 65536 ? 65536 : kib, size = 16;
    while (size < want)
        size <<= 1;
    ring_size = size * 1024;
}

static size_t mapping_size(uint32_t size)
{
    size_t page = 4096;
    return (sizeof(struct tb_ring) + page - 1) / page * page + size;
}

/* Populated at once: no page fault on a probe's path later. */
static struct tb_ring *ring_new(void)
{
    uint32_t size = ring_size;
    size_t hdr = mapping_size(size) - size;
    void *m = mmap(NULL, mapping_size(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct tb_ring *r = m;
    r->size = size;
    r->data = (uint8_t *)m + hdr;
    /* written once here, each page: a hypervisor that maps guest pages
     * on first write (shadow paging) then takes no exit on a probe's path */
    for (uint32_t off = 0; off < size; off += 4096)
        ((volatile uint8_t *)r->data)[off] = 0;
    r->tid = (uint32_t)syscall(SYS_gettid);
    prctl(PR_GET_NAME, r->comm, 0, 0, 0);
    r->comm[sizeof r->comm - 1] = 0;
    struct tb_ring *h = atomic_load_explicit(&rings, memory_order_relaxed);
    do
        r->next = h;
    while (!atomic_compare_exchange_weak_explicit(&rings, &h, r, memory_order_release, memory_order_relaxed));
    return r;
}

struct tb_ring *tb_self_new(void)
{
    return tb_self_ring = ring_new();
}

uint64_t tb_tail(struct tb_ring *r) { return atomic_load_explicit(&r->tail, memory_order_relaxed); }

/* The record at byte count pos (pads skipped, moving pos); NULL at head. */
static const uint8_t *at_pos(struct tb_ring *r, uint64_t *pos)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    while (*pos < head) {
        const struct kprw_rec *p = (const void *)(r->data + ((uint32_t)*pos & (r->size - 1)));
        uint32_t room = r->size - ((uint32_t)*pos & (r->size - 1));
        if (p->size < 8 || p->size % 8 || p->size > room || p->size > head - *pos) {
            *pos = head;   /* cannot happen; never follow a bad size */
            return NULL;
        }
        if (p->id != TB_PAD_ID)
            return (const uint8_t *)p;
        *pos += p->size;
    }
    return NULL;
}

const uint8_t *tb_peek(struct tb_ring *r, uint64_t *cursor)
{
    if (cursor)
        return at_pos(r, cursor);
    uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed), was = pos;
    const uint8_t *p = at_pos(r, &pos);
    if (pos != was)   /* padding skipped: the writer may use that room again */
        atomic_store_explicit(&r->tail, pos, memory_order_release);
    return p;
}

void tb_consume(struct tb_ring *r, uint64_t *cursor)
{
    if (cursor) {
        const uint8_t *p = at_pos(r, cursor);
        if (p)
            *cursor += ((const struct kprw_rec *)p)->size;
        return;
    }
    uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    const uint8_t *p = at_pos(r, &pos);
    if (p)
        atomic_store_explicit(&r->tail, pos + ((const struct kprw_rec *)p)->size, memory_order_release);
}

void tb_clear(void)
{
    tb_reader_lock();
    for (struct tb_ring *r = tb_rings(); r; r = r->next)
        atomic_store_explicit(&r->tail, atomic_load_explicit(&r->head, memory_order_acquire), memory_order_release);
    tb_reader_unlock();
}

static void ring_free(struct tb_ring *r) { munmap(r, mapping_size(r->size)); }

/* Unlink r (reader lock held; writers only ever push at the head). */
static void unlink_ring(struct tb_ring *r)
{
    struct tb_ring *h = r;
    if (atomic_compare_exchange_strong_explicit(&rings, &h, r->next, memory_order_acq_rel, memory_order_acquire))
        return;
    for (struct tb_ring *p = atomic_load_explicit(&rings, memory_order_acquire); p; p = p->next)
        if (p->next == r) {
            p->next = r->next;
            return;
        }
}

void tb_reap(void)
{
    for (struct tb_ring *r = tb_rings(), *next; r; r = next) {
        next = r->next;
        if (atomic_load_explicit(&r->dead, memory_order_acquire) &&
            atomic_load_explicit(&r->head, memory_order_acquire) == atomic_load_explicit(&r->tail, memory_order_relaxed)) {
            unlink_ring(r);
            ring_free(r);
        }
    }
}

void tb_thread_exit(void)
{
    struct tb_ring *r = tb_self_ring;
    tb_self_ring = NULL;
    if (r)
        atomic_store_explicit(&r->dead, true, memory_order_release);
}

void tb_fork_child(void)
{
    struct tb_ring *mine = tb_self_ring;
    for (struct tb_ring *r = atomic_load_explicit(&rings, memory_order_relaxed), *next; r; r = next) {
        next = r->next;
        if (r != mine)
            ring_free(r);
    }
    if (mine) {
        atomic_store(&mine->head, 0);
        atomic_store(&mine->tail, 0);
        mine->next = NULL;
        mine->tid = (uint32_t)syscall(SYS_gettid);
    }
    atomic_store(&rings, mine);
    pthread_mutex_init(&reader, NULL);
}
