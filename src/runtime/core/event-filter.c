/*
 * An event's filter, in ftrace's filter syntax (Documentation/trace/
 * events.rst, "Event filtering"), after "if" in a definition:
 *
 *   expr  := and ( '||' and )*
 *   and   := unary ( '&&' unary )*
 *   unary := '!' unary | '(' expr ')' | FIELD OP VALUE
 *
 * FIELD is an argument's name or common_pid; numbers compare with == != <
 * <= > >= and & (a bit test), strings with == != and ~ (a shell glob),
 * against "quoted" text or a bare word. A predicate on an argument whose
 * fetch faulted is false. No libc.
 */
#include "event.h"
#include "event-text.h"

struct fcur {
    const char *s;
    size_t len, at;
    struct kprw_event *ev;
    struct kprw_arena *a;
    struct kprw_ev_error *err;
    int depth;
};

static const struct kprw_fnode *fail(struct fcur *c, size_t at, const char *msg)
{
    c->err->col = at + 1;
    c->err->msg = msg;
    return 0;
}

static void skip(struct fcur *c)
{
    while (c->at < c->len && kprw_blank(c->s[c->at]))
        c->at++;
}

static bool eat(struct fcur *c, const char *tok)
{
    skip(c);
    size_t n = kprw_strlen(tok);
    if (c->len - c->at >= n && kprw_mem_eq(c->s + c->at, tok, n)) {
        c->at += n;
        return true;
    }
    return false;
}

static struct kprw_fnode *node(struct fcur *c, uint8_t op)
{
    struct kprw_fnode *n = kprw_arena_alloc(c->a, sizeof *n, 8);
    if (n)
        n->op = op;
    else
        fail(c, c->at, "out of memory");
    return n;
}

static const struct kprw_fnode *parse_or(struct fcur *c);

/* The comparison operator at the cursor. */
static bool parse_op(struct fcur *c, uint8_t *op)
{
    static const struct {
        char tok[3];    /* (an array: no address to relocate, for the static runtime) */
        uint8_t op;
    } ops[] = {   /* two-character operators first */
        { "==", KPRW_FO_EQ }, { "!=", KPRW_FO_NE }, { "<=", KPRW_FO_LE }, { ">=", KPRW_FO_GE },
        { "<", KPRW_FO_LT }, { ">", KPRW_FO_GT }, { "&", KPRW_FO_BAND }, { "~", KPRW_FO_GLOB },
    };
    skip(c);
    for (unsigned k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t n = kprw_strlen(ops[k].tok);
        /* '&' is not the start of '&&' here: a field is never followed by && */
        if (c->len - c->at >= n && kprw_mem_eq(c->s + c->at, ops[k].tok, n)) {
            c->at += n;
            *op = ops[k].op;
            return true;
        }
    }
    return false;
}

/* The field at the cursor: an argument, or common_pid. */
static bool parse_field(struct fcur *c, uint16_t *field, const struct kprw_farg **arg)
{
    skip(c);
    size_t i = c->at;
    while (c->at < c->len && (kprw_alpha(c->s[c->at]) || kprw_digit(c->s[c->at])))
        c->at++;
    size_t n = c->at - i;
    if (n == 0)
        return fail(c, i, "a field name (an argument's, or common_pid) is expected"), false;
    *arg = 0;
    if (kprw_str_eq("common_pid", c->s + i, n)) {
        *field = KPRW_FIELD_PID;
        return true;
    }
    for (unsigned k = 0; k < c->ev->nargs; k++)
        if (kprw_str_eq(c->ev->args[k].name, c->s + i, n)) {
            *field = (uint16_t)k;
            *arg = &c->ev->args[k];
            if ((*arg)->count)
                return fail(c, i, "an array cannot be filtered on"), false;
            return true;
        }
    return fail(c, i, "no argument of this event has this name"), false;
}

/* A string value: "quoted" (no escapes but \") or a bare word. */
static bool parse_string(struct fcur *c, struct kprw_fnode *n)
{
    skip(c);
    size_t i = c->at;
    if (i < c->len && c->s[i] == '"') {
        size_t j = i + 1;
        while (j < c->len && c->s[j] != '"')
            j += (c->s[j] == '\\' && j + 1 < c->len) ? 2 : 1;
        if (j >= c->len)
            return fail(c, i, "unterminated string"), false;
        char *p = kprw_arena_alloc(c->a, j - i, 1);
        if (!p)
            return fail(c, i, "out of memory"), false;
        size_t o = 0;
        for (size_t k = i + 1; k < j; k++)
            p[o++] = c->s[k] == '\\' && k + 1 < j ? c->s[++k] : c->s[k];
        p[o] = 0;
        n->str = p;
        c->at = j + 1;
        return true;
    }
    size_t j = i;
    while (j < c->len && !kprw_blank(c->s[j]) && c->s[j] != ')' && c->s[j] != '&' && c->s[j] != '|')
        j++;
    if (j == i)
        return fail(c, i, "a string value is expected"), false;
    n->str = kprw_arena_strdup(c->a, c->s + i, j - i);
    c->at = j;
    return n->str ? true : (fail(c, i, "out of memory"), false);
}

static bool parse_number(struct fcur *c, struct kprw_fnode *n)
{
    skip(c);
    size_t i = c->at;
    bool neg = i < c->len && c->s[i] == '-';
    size_t j = i + neg;
    while (j < c->len && (kprw_alpha(c->s[j]) || kprw_digit(c->s[j])))
        j++;
    uint64_t v;
    size_t bad = 0;
    if (j == i + neg || !kprw_parse_u64(c->s + i + neg, j - i - neg, &v, &bad))
        return fail(c, i + neg + bad, "a number is expected"), false;
    n->num = neg ? -(int64_t)v : (int64_t)v;
    c->at = j;
    return true;
}

static const struct kprw_fnode *parse_pred(struct fcur *c)
{
    struct kprw_fnode *n = node(c, 0);
    const struct kprw_farg *arg;
    if (!n || !parse_field(c, &n->field, &arg))
        return 0;
    size_t opat = (skip(c), c->at);
    if (!parse_op(c, &n->op))
        return fail(c, opat, "a comparison (== != < <= > >= & ~) is expected");
    bool string = arg && arg->type == KPRW_FT_STRING;
    if (string && n->op != KPRW_FO_EQ && n->op != KPRW_FO_NE && n->op != KPRW_FO_GLOB)
        return fail(c, opat, "a string compares with == != or ~");
    if (!string && n->op == KPRW_FO_GLOB)
        return fail(c, opat, "~ compares strings");
    return (string ? parse_string(c, n) : parse_number(c, n)) ? n : 0;
}

static const struct kprw_fnode *parse_unary(struct fcur *c)
{
    skip(c);
    size_t at = c->at;
    if (++c->depth > KPRW_EV_FILTER_DEPTH)
        return fail(c, at, "the filter is nested too deep");
    const struct kprw_fnode *r;
    if (c->at + 1 < c->len && c->s[c->at] == '!' && c->s[c->at + 1] != '=' && eat(c, "!")) {
        struct kprw_fnode *n = node(c, KPRW_FO_NOT);
        r = n && (n->l = parse_unary(c)) ? n : 0;
    } else if (eat(c, "(")) {
        r = parse_or(c);
        if (r && !eat(c, ")"))
            r = fail(c, c->at, "')' is expected");
    } else {
        r = parse_pred(c);
    }
    c->depth--;
    return r;
}

static const struct kprw_fnode *parse_and(struct fcur *c)
{
    const struct kprw_fnode *l = parse_unary(c);
    while (l && eat(c, "&&")) {
        struct kprw_fnode *n = node(c, KPRW_FO_AND);
        if (!n || !(n->r = parse_unary(c)))
            return 0;
        n->l = l;
        l = n;
    }
    return l;
}

static const struct kprw_fnode *parse_or(struct fcur *c)
{
    const struct kprw_fnode *l = parse_and(c);
    while (l && eat(c, "||")) {
        struct kprw_fnode *n = node(c, KPRW_FO_OR);
        if (!n || !(n->r = parse_and(c)))
            return 0;
        n->l = l;
        l = n;
    }
    return l;
}

bool kprw_filter_parse(struct kprw_event *ev, const char *text, size_t len, size_t at, struct kprw_arena *a,
                       struct kprw_ev_error *err)
{
    struct fcur c = { text, len, at, ev, a, err, 0 };
    skip(&c);
    if (c.at == len) {
        fail(&c, at, "a filter must follow 'if'");
        return false;
    }
    const struct kprw_fnode *f = parse_or(&c);
    if (!f)
        return false;
    skip(&c);
    if (c.at < len) {
        fail(&c, c.at, "'&&', '||' or the end of the filter is expected");
        return false;
    }
    ev->filter = f;
    return true;
}

/* ---- evaluation, on a filled record ---- */

static bool compare(uint8_t op, uint64_t v, int64_t w, bool sign)
{
    bool lt = sign ? (int64_t)v < w : v < (uint64_t)w;
    bool eq = v == (uint64_t)w;
    switch (op) {
    case KPRW_FO_EQ: return eq;
    case KPRW_FO_NE: return !eq;
    case KPRW_FO_LT: return lt;
    case KPRW_FO_LE: return lt || eq;
    case KPRW_FO_GT: return !lt && !eq;
    case KPRW_FO_GE: return !lt;
    case KPRW_FO_BAND: return (v & (uint64_t)w) != 0;
    default: return false;
    }
}

static bool pred(const struct kprw_event *ev, const struct kprw_fnode *n, const uint8_t *rec)
{
    if (n->field == KPRW_FIELD_PID)
        return compare(n->op, ((const struct kprw_rec *)rec)->tid, n->num, true);
    const struct kprw_farg *f = &ev->args[n->field];
    if (kprw_rec_fault(ev, rec, n->field))
        return false;
    if (f->type == KPRW_FT_STRING) {
        const char *s = kprw_rec_string(ev, rec, n->field);
        bool m = n->op == KPRW_FO_GLOB ? kprw_glob(n->str, kprw_strlen(n->str), s)
                                       : kprw_str_eq(n->str, s, kprw_strlen(s));
        return n->op == KPRW_FO_NE ? !m : m;
    }
    return compare(n->op, (uint64_t)kprw_rec_value(ev, rec, n->field), n->num, f->type == KPRW_FT_S);
}

static bool eval(const struct kprw_event *ev, const struct kprw_fnode *n, const uint8_t *rec)
{
    switch (n->op) {
    case KPRW_FO_AND: return eval(ev, n->l, rec) && eval(ev, n->r, rec);
    case KPRW_FO_OR: return eval(ev, n->l, rec) || eval(ev, n->r, rec);
    case KPRW_FO_NOT: return !eval(ev, n->l, rec);
    default: return pred(ev, n, rec);
    }
}

bool kprw_event_match(const struct kprw_event *ev, const uint8_t *rec)
{
    return !ev->filter || eval(ev, ev->filter, rec);
}
