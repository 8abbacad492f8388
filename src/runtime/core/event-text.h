/*
 * Small text helpers the event parser, filter and printer share (no libc).
 * Internal to src/runtime/core.
 */
#ifndef KPREWRITE_EVENT_TEXT_H
#define KPREWRITE_EVENT_TEXT_H
#include "event.h"

static inline bool kprw_blank(char c) { return c == ' ' || c == '\t'; }
static inline bool kprw_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool kprw_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static inline size_t kprw_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static inline bool kprw_mem_eq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static inline bool kprw_str_eq(const char *a, const char *b, size_t n)   /* a NUL-terminated */
{
    return kprw_strlen(a) == n && kprw_mem_eq(a, b, n);
}

/* [A-Za-z_][A-Za-z0-9_]*: event, group and argument names */
static inline bool kprw_good_name(const char *s, size_t n)
{
    if (n == 0 || !kprw_alpha(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!kprw_alpha(s[i]) && !kprw_digit(s[i]))
            return false;
    return true;
}

/* a data symbol: what a linker allows, less what the syntax uses */
static inline bool kprw_good_symbol(const char *s, size_t n)
{
    if (n == 0 || kprw_digit(s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!kprw_alpha(s[i]) && !kprw_digit(s[i]) && s[i] != '.' && s[i] != '$' && s[i] != '@')
            return false;
    return true;
}

/* Decimal digits, the whole of s[0..n); *bad: where it went wrong. */
static inline bool kprw_parse_dec(const char *s, size_t n, uint64_t *v, size_t *bad)
{
    uint64_t x = 0;
    *bad = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!kprw_digit(s[i]) || x > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) {
            *bad = i;
            return false;
        }
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

/* Decimal, or hexadecimal after 0x. */
static inline bool kprw_parse_u64(const char *s, size_t n, uint64_t *v, size_t *bad)
{
    if (!(n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
        return kprw_parse_dec(s, n, v, bad);
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        char c = s[i];
        unsigned d = kprw_digit(c) ? (unsigned)(c - '0') : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                   : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10) : 16;
        if (d == 16 || x >> 60) {
            *bad = i;
            return false;
        }
        x = x << 4 | d;
    }
    *v = x;
    *bad = 0;
    return true;
}

char *kprw_arena_strdup(struct kprw_arena *a, const char *s, size_t n);
/* The filter of a definition, from text[at..len) (event-filter.c). */
bool kprw_filter_parse(struct kprw_event *ev, const char *text, size_t len, size_t at, struct kprw_arena *a,
                       struct kprw_ev_error *err);
/* Does the shell-style glob pat match s (control.c's, bounded)? */
bool kprw_glob(const char *pat, size_t pat_len, const char *s);
#endif
