/* Probe spec parsing with exact error columns. */
#include "spec.h"
#include "../arch/isa.h"
#include "runtime/core/event.h"
#include "../util/array.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETURN_SUFFIX "%return"

static int bad(size_t *col, size_t c, char *err, size_t errlen, const char *msg)
{
    *col = c;
    snprintf(err, errlen, "%s", msg);
    return -1;
}

/* Number: decimal or 0x hex, the whole of [s, s+len). */
static bool parse_number(const char *s, size_t len, uint64_t *v, size_t *badpos)
{
    size_t i = 0;
    int base = 10;
    uint64_t x = 0;
    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    }
    if (i == len) {
        *badpos = i;
        return false;
    }
    for (; i < len; i++) {
        int d;
        if (isdigit((unsigned char)s[i])) d = s[i] - '0';
        else if (base == 16 && isxdigit((unsigned char)s[i])) d = tolower((unsigned char)s[i]) - 'a' + 10;
        else { *badpos = i; return false; }
        if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) { *badpos = i; return false; }
        x = x * (uint64_t)base + (uint64_t)d;
    }
    *v = x;
    return true;
}

/* A point: SYM, SYM+OFF, 0xADDR, SYM%return, a glob. */
static int parse_point(const char *text, struct probe_spec *out, size_t *col, char *err, size_t errlen)
{
    size_t len = strlen(text), end, plus = SIZE_MAX, badpos;

    memset(out, 0, sizeof *out);
    if (len == 0)
        return bad(col, 1, err, errlen, "empty probe spec");
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)text[i]) || !isprint((unsigned char)text[i]))
            return bad(col, i + 1, err, errlen, "unexpected character in probe spec");
    end = len;
    char *pct = strchr(text, '%');
    if (pct) {
        if (strcmp(pct, RETURN_SUFFIX) != 0)
            return bad(col, (size_t)(pct - text) + 1, err, errlen, "only '%return' may follow '%'");
        out->is_return = true;
        end = (size_t)(pct - text);
        if (end == 0)
            return bad(col, 1, err, errlen, "'%return' needs a function name");
    }
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        if (!parse_number(text, end, &out->addr, &badpos))
            return bad(col, badpos + 1, err, errlen, "bad hexadecimal address");
    } else {
        for (size_t i = 0; i < end; i++) {
            if (text[i] == '+') { plus = i; break; }
            if (text[i] == '-')
                return bad(col, i + 1, err, errlen, "negative offsets are not allowed; use SYM+OFF");
        }
        size_t symlen = plus == SIZE_MAX ? end : plus;
        if (symlen == 0)
            return bad(col, 1, err, errlen, "missing symbol name before '+'");
        if (isdigit((unsigned char)text[0]))
            return bad(col, 1, err, errlen, "a symbol name cannot start with a digit (addresses start with 0x)");
        for (size_t i = 0; i < symlen; i++) {
            char c = text[i];
            if (!(isalnum((unsigned char)c) || strchr("_.$@*?[]!-:~<>,/()", c)))   /* (/, ( and ): Go names, net/http.(*Server).Serve) */
                return bad(col, i + 1, err, errlen, "unexpected character in symbol name");
        }
        if (plus != SIZE_MAX) {
            if (plus + 1 == end)
                return bad(col, plus + 2, err, errlen, "missing offset after '+'");
            if (!parse_number(text + plus + 1, end - plus - 1, &out->off, &badpos))
                return bad(col, plus + 2 + badpos, err, errlen, "bad offset (decimal or 0x hex)");
            out->has_off = true;
            if (out->is_return && out->off != 0)
                return bad(col, plus + 2, err, errlen, "a return probe goes on the function entry (+0)");
        }
        out->sym = strndup(text, symlen);
        if (!out->sym)
            return bad(col, 1, err, errlen, "out of memory");
        out->is_glob = strpbrk(out->sym, "*?[") != NULL;
        if (out->is_glob && out->has_off && out->off != 0) {
            free(out->sym);
            out->sym = NULL;
            return bad(col, plus + 1, err, errlen, "a glob expands to function entries and takes no offset");
        }
    }
    out->text = strdup(text);
    if (!out->text) {
        free(out->sym);
        return bad(col, 1, err, errlen, "out of memory");
    }
    return 0;
}

/* The arena a definition is parsed in: the user runtime's (events.c), so
 * that what parses here parses there. */
#define DEF_ARENA (64 * 1024)

/* An event definition: the runtime core's parser checks it (the fetch
 * arguments, for the default ISA until an image says which: defs.c checks
 * it again for the image's; the filter) and finds its spec, parsed as a
 * point; an 'r' prefix makes it a return probe. */
static int parse_definition(const char *text, size_t len, struct probe_spec *out, size_t *col, char *err,
                            size_t errlen)
{
    struct kprw_event ev;
    struct kprw_ev_error e = { 0, NULL };
    struct kprw_arena a = { malloc(DEF_ARENA), DEF_ARENA, 0 };
    memset(out, 0, sizeof *out);
    if (!a.base)
        return bad(col, 1, err, errlen, "out of memory");
    if (!kprw_event_parse(isa_default()->fetch, text, len, &a, &ev, &e)) {
        free(a.base);
        return bad(col, e.col, err, errlen, e.msg ? e.msg : "malformed event definition");
    }
    char *word = strndup(ev.spec, ev.spec_len);
    size_t at = ev.spec_col, c = 0;
    bool ret = ev.is_return;
    free(a.base);
    if (!word)
        return bad(col, 1, err, errlen, "out of memory");
    int rc = parse_point(word, out, &c, err, errlen);
    free(word);
    if (rc < 0) {
        *col = at - 1 + c;
        return -1;
    }
    out->is_return |= ret;
    /* r SYM+4: the function's return probe (placed past its endbr64);
     * defs.c binds the definition only where the entry is there */
    if (ret && out->has_off && out->off && out->off <= isa_default()->fetch->entry_prefix) {
        out->off = 0;
        out->has_off = false;
    }
    free(out->text);
    out->text = strdup(text);
    out->def = out->text;
    if (!out->text) {
        free(out->sym);
        out->sym = NULL;
        return bad(col, 1, err, errlen, "out of memory");
    }
    return 0;
}

int spec_parse(const char *text, struct probe_spec *out, size_t *col, char *err, size_t errlen)
{
    size_t len = strlen(text);
    if (len && kprw_event_is_definition(text, len))
        return parse_definition(text, len, out, col, err, errlen);
    return parse_point(text, out, col, err, errlen);
}

/* Append a parsed spec (taking its strings), naming where it came from. */
static int spec_push(struct spec_list *l, struct probe_spec *s, const char *origin, char *err, size_t errlen)
{
    snprintf(s->origin, sizeof s->origin, "%s", origin);
    if (!ARRAY_RESERVE(l->v, l->cap, l->n + 1)) {
        free(s->sym); free(s->text);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->v[l->n++] = *s;
    return 0;
}

int spec_add(struct spec_list *l, const char *text, const char *origin, char *err, size_t errlen)
{
    struct probe_spec s;
    size_t col = 0;
    char msg[200];

    if (spec_parse(text, &s, &col, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "%s '%s': col %zu: %s", origin, text, col, msg);
        return -1;
    }
    return spec_push(l, &s, origin, err, errlen);
}

void spec_error(const struct probe_spec *s, size_t col, const char *msg, char *err, size_t errlen)
{
    if (s->in_file)
        snprintf(err, errlen, "%s:%zu: %s", s->origin, s->indent + col, msg);
    else
        snprintf(err, errlen, "%s '%s': col %zu: %s", s->origin, s->text, col, msg);
}

int spec_add_baked_def(struct spec_list *l, const char *def, char *err, size_t errlen)
{
    char *d = strdup(def);
    if (!d || !ARRAY_RESERVE(l->defs, l->capdefs, l->ndefs + 1)) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->defs[l->ndefs++] = d;
    return 0;
}

/* A line of a probe file without its comment: '#' outside a "string" (a
 * filter's) starts one. */
static void cut_comment(char *line)
{
    bool quoted = false;
    for (char *p = line; *p; p++) {
        if (*p == '"' && (p == line || p[-1] != '\\'))
            quoted = !quoted;
        else if (*p == '#' && !quoted) {
            *p = 0;
            return;
        }
    }
}

int spec_add_baked(struct spec_list *l, const char *text, char *err, size_t errlen)
{
    if (spec_add(l, text, "baked", err, errlen) < 0)
        return -1;
    l->v[l->n - 1].baked = true;
    return 0;
}

int spec_read_file(struct spec_list *l, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t got;

    if (!f) {
        snprintf(err, errlen, "%s: cannot open probe file: %s", path, strerror(errno));
        return -1;
    }
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        cut_comment(line);
        size_t start = 0, stop = strlen(line);
        while (start < stop && isspace((unsigned char)line[start]))
            start++;
        while (stop > start && isspace((unsigned char)line[stop - 1]))
            stop--;
        if (start == stop)
            continue;
        line[stop] = 0;
        struct probe_spec s;
        size_t col = 0;
        char msg[200];
        if ((strchr(line + start, ' ') || strchr(line + start, '\t')) &&
            !kprw_event_is_definition(line + start, stop - start)) {
            size_t c = strcspn(line + start, " \t");
            snprintf(err, errlen, "%s:%zu:%zu: one probe spec per line", path, lineno, start + c + 1);
            goto fail;
        }
        if (spec_parse(line + start, &s, &col, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s:%zu:%zu: %s", path, lineno, start + col, msg);
            goto fail;
        }
        char origin[300];
        snprintf(origin, sizeof origin, "%s:%zu", path, lineno);
        s.in_file = true;
        s.indent = start;
        if (spec_push(l, &s, origin, err, errlen) < 0)
            goto fail;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto fail;
    }
    free(line);
    fclose(f);
    return 0;
fail:
    free(line);
    fclose(f);
    return -1;
}

int spec_list_move(struct spec_list *dst, struct spec_list *src)
{
    if (!ARRAY_RESERVE(dst->v, dst->cap, dst->n + src->n) ||
        !ARRAY_RESERVE(dst->defs, dst->capdefs, dst->ndefs + src->ndefs))
        return -1;
    if (src->n)
        memcpy(dst->v + dst->n, src->v, src->n * sizeof *src->v);
    if (src->ndefs)
        memcpy(dst->defs + dst->ndefs, src->defs, src->ndefs * sizeof *src->defs);
    dst->n += src->n;
    dst->ndefs += src->ndefs;
    src->n = src->ndefs = 0;
    return 0;
}

void spec_list_free(struct spec_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].sym);
        free(l->v[i].text);   /* (def is text) */
    }
    for (size_t i = 0; i < l->ndefs; i++)
        free(l->defs[i]);
    free(l->v);
    free(l->defs);
    memset(l, 0, sizeof *l);
}
