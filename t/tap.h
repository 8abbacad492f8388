/* Minimal TAP producer for kprewrite's C tests (API in the style of c-tap-harness). */
#ifndef KPREWRITE_T_TAP_H
#define KPREWRITE_T_TAP_H
#include <stdbool.h>
#include <stdint.h>

#define TAP_PRINTF(f, a) __attribute__((format(printf, f, a)))

void plan(int n);
void plan_lazy(void);
void skip_all(const char *fmt, ...) TAP_PRINTF(1, 2) __attribute__((noreturn));
bool ok(bool cond, const char *fmt, ...) TAP_PRINTF(2, 3);
bool is_int(long long want, long long seen, const char *fmt, ...) TAP_PRINTF(3, 4);
bool is_hex(unsigned long long want, unsigned long long seen, const char *fmt, ...) TAP_PRINTF(3, 4);
bool is_string(const char *want, const char *seen, const char *fmt, ...) TAP_PRINTF(3, 4);
void skip(const char *fmt, ...) TAP_PRINTF(1, 2);
void diag(const char *fmt, ...) TAP_PRINTF(1, 2);
void bail(const char *fmt, ...) TAP_PRINTF(1, 2) __attribute__((noreturn));
/* Path of a file under the build tree's t/ directory (uses $KP_BUILDDIR, else "."). */
const char *test_build_path(const char *rel);
/* Number of failed tests so far; exit status for main. */
int tap_done(void);
#endif
