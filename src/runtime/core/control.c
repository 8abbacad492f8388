/*
 * The control directory's commands and the specs they name, as both
 * runtimes read them (kprw-core.h). No libc: the kernel runtime builds it.
 */
#include "kprw-core.h"

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool word_is(const char *w, size_t n, const char *lit)
{
    size_t i = 0;
    for (; i < n && lit[i]; i++)
        if (w[i] != lit[i])
            return false;
    return i == n && !lit[i];
}

bool kprw_ctl_parse(const char *line, size_t len, enum kprw_op *op, const char **spec, size_t *spec_len)
{
    static const char verbs[][12] = {   /* (arrays: no address to relocate) */ "enable", "disable", "optimize", "unoptimize" };
    const char *w[3];
    size_t n[3], words = 0, i = 0;
    while (i < len && words < 3) {
        while (i < len && blank(line[i]))
            i++;
        if (i == len)
            break;
        w[words] = line + i;
        while (i < len && !blank(line[i]) && line[i])
            i++;
        n[words] = (size_t)(line + i - w[words]);
        words++;
        if (i < len && !line[i])
            break;   /* a NUL ends the line */
    }
    if (words != 2)
        return false;
    for (unsigned v = 0; v < sizeof verbs / sizeof verbs[0]; v++)
        if (word_is(w[0], n[0], verbs[v])) {
            *op = (enum kprw_op)v;
            *spec = w[1];
            *spec_len = n[1];
            return true;
        }
    return false;
}

void kprw_ctl_apply(enum kprw_op op, bool *disabled, bool *unoptimized)
{
    switch (op) {
    case KPRW_OP_ENABLE: *disabled = false; break;
    case KPRW_OP_DISABLE: *disabled = true; break;
    case KPRW_OP_OPTIMIZE: *unoptimized = false; break;
    case KPRW_OP_UNOPTIMIZE: *unoptimized = true; break;
    }
}

enum kprw_ctl_result kprw_ctl_result(enum kprw_op op, size_t matched, size_t can_jump)
{
    if (!matched)
        return KPRW_CTL_NO_MATCH;
    if (op == KPRW_OP_OPTIMIZE && !can_jump)
        return KPRW_CTL_CANNOT_JUMP;
    return KPRW_CTL_OK;
}

/* s[0..n) as a number in C notation (0x hex, 0 octal, else decimal),
 * every character used; false on anything else or overflow. */
static bool number(const char *s, size_t n, uint64_t *v)
{
    unsigned base = 10;
    size_t i = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, i = 2;
    else if (n > 1 && s[0] == '0')
        base = 8, i = 1;
    if (i == n)
        return false;
    uint64_t r = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 99;
        if (d >= base || r > (~(uint64_t)0 - d) / base)
            return false;
        r = r * base + d;
    }
    *v = r;
    return true;
}

bool kprw_spec_matches(const char *spec, size_t spec_len, const char *name, uint32_t offset, uint64_t addr)
{
    uint64_t v;
    if (spec_len > 2 && spec[0] == '0' && (spec[1] == 'x' || spec[1] == 'X'))
        return number(spec, spec_len, &v) && v == addr;
    size_t plus = spec_len;
    while (plus > 0 && spec[plus - 1] != '+')
        plus--;
    if (!plus)
        return kprw_glob(spec, spec_len, name);
    return number(spec + plus, spec_len - plus, &v) && v == offset && kprw_glob(spec, plus - 1, name);
}

bool kprw_spec_matches_entry(const char *spec, size_t spec_len, const char *name, uint32_t offset, uint64_t addr,
                             uint32_t skipped)
{
    if (kprw_spec_matches(spec, spec_len, name, offset, addr))
        return true;
    return skipped && skipped == offset && kprw_spec_matches(spec, spec_len, name, 0, addr - skipped);
}

/* [set] at p (just after '['): does it hold c? *end: past its ']'. A set
 * without ']' is taken as a literal '['. */
static bool in_set(const char *p, const char *pe, char c, const char **end, bool *ok)
{
    bool neg = p < pe && (*p == '!' || *p == '^'), hit = false;
    const char *q = p + neg;
    for (bool first = true; q < pe && (*q != ']' || first); first = false) {
        char lo = *q, hi = lo;
        if (q + 2 < pe && q[1] == '-' && q[2] != ']') {
            hi = q[2];
            q += 3;
        } else {
            q++;
        }
        hit |= (unsigned char)c >= (unsigned char)lo && (unsigned char)c <= (unsigned char)hi;
    }
    *ok = q < pe;
    *end = q + 1;
    return hit != neg;
}

bool kprw_glob(const char *pat, size_t pat_len, const char *s)
{
    const char *p = pat, *pe = pat + pat_len, *star = NULL, *resume = NULL;
    while (*s) {
        if (p < pe && *p == '*') {
            star = ++p;   /* match nothing first; more on a mismatch */
            resume = s;
            continue;
        }
        if (p < pe) {
            const char *next = p + 1;
            bool m;
            if (*p == '?') {
                m = true;
            } else if (*p == '[') {
                bool ok;
                m = in_set(p + 1, pe, *s, &next, &ok);
                if (!ok) {   /* no closing ']': a literal '[' */
                    m = *s == '[';
                    next = p + 1;
                }
            } else {
                m = *p == *s;
            }
            if (m) {
                p = next;
                s++;
                continue;
            }
        }
        if (!star)
            return false;
        p = star;   /* let the last '*' take one more character */
        s = ++resume;
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}
