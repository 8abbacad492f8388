/*
 * Folded stacks from return events: each return record is one call, an
 * interval [entry, return] on its thread. A thread's returns arrive in the
 * order they happened, so a call's callees (the intervals inside it) have
 * all arrived when it does: it adopts them. Subtrees are merged by
 * function as they are adopted, so memory grows with the distinct call
 * paths, not with the calls. The value of a path is its calls' exclusive
 * time in nanoseconds.
 */
#ifndef KPREWRITE_FOLDED_H
#define KPREWRITE_FOLDED_H
#include <stddef.h>
#include <stdint.h>

struct folded;
struct folded *folded_new(void);
void folded_free(struct folded *f);
/* One call: thread tid, the function (a name the caller keeps alive),
 * entered at entry ns and returned at ret ns. */
void folded_add(struct folded *f, uint32_t tid, const char *fn, uint64_t entry, uint64_t ret);
/* "a;b;c VALUE\n" lines, sorted. malloc'd. */
char *folded_text(struct folded *f, size_t *len);
#endif
