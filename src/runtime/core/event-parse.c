/*
 * Event definitions (event.h): the prefix, the spec, the fetch arguments
 * and their types, the record's layout. The filter after "if" is
 * event-filter.c's. No libc: the kernel runtime and a static runtime build
 * it too.
 */
#include "event.h"
#include "event-text.h"

void *kprw_arena_alloc(struct kprw_arena *a, size_t n, size_t align)
{
    size_t at = (a->used + align - 1) & ~(align - 1);
    if (at < a->used || at > a->size || n > a->size - at)
        return 0;
    a->used = at + n;
    char *p = a->base + at;
    for (size_t i = 0; i < n; i++)
        p[i] = 0;
    return p;
}

char *kprw_arena_strdup(struct kprw_arena *a, const char *s, size_t n)
{
    char *p = kprw_arena_alloc(a, n + 1, 1);
    if (p)
        for (size_t i = 0; i < n; i++)
            p[i] = s[i];
    return p;
}

/* ---- a cursor over the definition, for errors with columns ---- */
struct cur {
    const char *s;             /* the whole definition */
    size_t len, at;
    struct kprw_ev_error *err;
};

static bool fail(struct cur *c, size_t at, const char *msg)
{
    c->err->col = at + 1;
    c->err->msg = msg;
    return false;
}

static bool at_word_end(const struct cur *c, size_t i) { return i >= c->len || kprw_blank(c->s[i]); }

static void skip_blanks(struct cur *c)
{
    while (c->at < c->len && kprw_blank(c->s[c->at]))
        c->at++;
}

/* ---- the prefix: p[:[GRP/][EVENT]] or r[MAXACTIVE][:[GRP/][EVENT]] ---- */

/* Does the word at w (n bytes) look like a prefix? */
static bool is_prefix(const char *w, size_t n)
{
    if (n == 0 || (w[0] != 'p' && w[0] != 'r'))
        return false;
    size_t i = 1;
    while (i < n && kprw_digit(w[i]))
        i++;
    return i == n || w[i] == ':';
}

static bool parse_name(struct cur *c, size_t from, size_t to, struct kprw_arena *a, const char **out,
                       const char *what)
{
    if (!kprw_good_name(c->s + from, to - from))
        return fail(c, from, what);
    *out = kprw_arena_strdup(a, c->s + from, to - from);
    return *out ? true : fail(c, from, "out of memory");
}

static bool parse_prefix(struct cur *c, size_t end, struct kprw_arena *a, struct kprw_event *ev)
{
    size_t i = c->at + 1;
    ev->is_return = c->s[c->at] == 'r';
    if (i < end && kprw_digit(c->s[i])) {
        if (!ev->is_return)
            return fail(c, i, "MAXACTIVE is for return probes (r<N>:...)");
        uint64_t v = 0;
        while (i < end && kprw_digit(c->s[i])) {
            v = v * 10 + (uint64_t)(c->s[i] - '0');
            if (v > 0x7fffffff)
                return fail(c, i, "MAXACTIVE is too large");
            i++;
        }
        ev->maxactive = (int)v;
    }
    if (i < end) {   /* ':' [GRP/][EVENT] */
        i++;
        size_t slash = end;
        for (size_t j = i; j < end; j++)
            if (c->s[j] == '/') {
                slash = j;
                break;
            }
        if (slash < end) {
            if (!parse_name(c, i, slash, a, &ev->group, "a group name is letters, digits and '_'"))
                return false;
            i = slash + 1;
        }
        if (i < end && !parse_name(c, i, end, a, &ev->name, "an event name is letters, digits and '_'"))
            return false;
        ev->name_col = i < end ? (uint16_t)(i + 1) : 0;
    }
    c->at = end;
    return true;
}

/* ---- the spec: one word; its offset matters for $argN and return events ---- */

static bool parse_spec(const struct kprw_fetch_isa *isa, struct cur *c, struct kprw_event *ev, bool *nonzero_off)
{
    size_t from = c->at, to = from;
    while (!at_word_end(c, to))
        to++;
    if (to == from)
        return fail(c, from, "a probe spec (SYM, SYM+OFF, 0xADDR) is missing");
    ev->spec = c->s + from;
    ev->spec_len = (uint32_t)(to - from);
    ev->spec_col = (uint16_t)(from + 1);
    static const char ret[] = "%return";
    size_t rl = sizeof ret - 1, end = to;
    if (to - from > rl && kprw_mem_eq(c->s + to - rl, ret, rl)) {
        ev->is_return = true;
        end = to - rl;
    }
    *nonzero_off = false;
    for (size_t j = from; j < end; j++)
        if (c->s[j] == '+') {
            uint64_t off;
            size_t bad;
            if (kprw_parse_u64(c->s + j + 1, end - j - 1, &off, &bad) && off != 0) {
                ev->entry_off = off <= isa->entry_prefix;   /* SYM+4 past endbr64 is the entry */
                *nonzero_off = !ev->entry_off;
            }
            break;
        }
    /* as the kernel's arch_kprobe_on_func_entry: SYM+4 past an endbr64 is
     * the entry too (checked where the point is known) */
    if (ev->is_return && *nonzero_off)
        return fail(c, from, "a return probe is on a function's entry (SYM, SYM+0, or SYM+4 past an endbr64)");
    c->at = to;
    return true;
}

/* ---- one fetch: %REG @ADDR @SYM[+-OFF] $var +|-[u]OFF(FETCH) \IMM ---- */

struct fetch_ctx {
    const struct kprw_fetch_isa *isa;
    struct kprw_event *ev;
    struct kprw_arena *a;
    bool nonzero_off;
};

static bool parse_reg(struct cur *c, size_t i, size_t end, const struct kprw_fetch_isa *isa, struct kprw_farg *f)
{
    for (unsigned r = 0; r < isa->nnames; r++) {
        const char *n = isa->names[r].name;
        size_t k = 0;
        while (n[k] && i + k < end && c->s[i + k] == n[k])
            k++;
        if (!n[k] && i + k == end) {
            f->src = KPRW_FS_REG;
            f->reg = isa->names[r].slot;
            return true;
        }
    }
    return fail(c, i, "unknown register");
}

/* $argN of a return event: a slot of what its entry keeps. */
static bool entry_arg(struct cur *c, size_t at, struct fetch_ctx *x, unsigned n, struct kprw_farg *f)
{
    struct kprw_event *ev = x->ev;
    uint8_t slot = n < x->isa->narg_regs ? x->isa->arg_slots[n] : 0xff;
    uint16_t stack = n < x->isa->narg_regs ? 0 : (uint16_t)((n - x->isa->narg_regs + 1) * x->isa->word);
    unsigned k = 0;
    while (k < ev->nentry && !(ev->entry_slot[k] == slot && ev->entry_stack[k] == stack))
        k++;
    if (k == ev->nentry) {
        if (k == KPRW_EV_ENTRY_ARGS)
            return fail(c, at, "too many different $argN in one return event");
        ev->entry_slot[k] = slot;
        ev->entry_stack[k] = stack;
        ev->nentry++;
    }
    f->src = KPRW_FS_ENTRY_ARG;
    f->imm = k;
    return true;
}

static bool parse_var(struct cur *c, size_t i, size_t end, struct fetch_ctx *x, struct kprw_farg *f)
{
    const char *w = c->s + i;
    size_t n = end - i;
    uint64_t v;
    size_t bad;
    if (n == 6 && kprw_mem_eq(w, "retval", 6)) {
        if (!x->ev->is_return)
            return fail(c, i - 1, "$retval is not available on probe (only on return events)");
        f->src = KPRW_FS_REG;
        f->reg = x->isa->retval;
        return true;
    }
    if (n == 4 && (kprw_mem_eq(w, "comm", 4) || kprw_mem_eq(w, "COMM", 4))) {
        f->src = KPRW_FS_COMM;
        x->ev->uses_comm = true;
        return true;
    }
    if (n == 5 && kprw_mem_eq(w, "stack", 5)) {
        f->src = KPRW_FS_STACKP;
        return true;
    }
    if (n > 5 && kprw_mem_eq(w, "stack", 5)) {
        if (!kprw_parse_dec(w + 5, n - 5, &v, &bad) || v > 4096)
            return fail(c, i + 5 + bad, "bad $stack number");
        f->src = KPRW_FS_STACK;
        f->reg = x->isa->sp;   /* (for kprw_event_plan: the word at sp + imm) */
        f->imm = (int64_t)v * x->isa->word;
        return true;
    }
    if (n > 3 && kprw_mem_eq(w, "arg", 3)) {
        if (!kprw_parse_dec(w + 3, n - 3, &v, &bad) || v == 0 || v > 4096)
            return fail(c, i + 3 + bad, "bad $arg number ($arg1 is the first)");
        unsigned k = (unsigned)v - 1;
        if (x->ev->is_return)
            return entry_arg(c, i - 1, x, k, f);
        if (x->nonzero_off)
            return fail(c, i - 1, "$argN is only available at a function's entry");
        if (!x->ev->uses_args)
            x->ev->args_col = (uint16_t)i;
        x->ev->uses_args = true;
        if (k < x->isa->narg_regs) {
            f->src = KPRW_FS_REG;
            f->reg = x->isa->arg_slots[k];
        } else {
            f->src = KPRW_FS_STACK;
            f->reg = x->isa->sp;
            f->imm = (int64_t)(k - x->isa->narg_regs + 1) * x->isa->word;
        }
        return true;
    }
    return fail(c, i - 1, "unknown variable (one of $stackN $stack $argN $retval $comm)");
}

/* @ADDR or @SYM[+|-OFF]: the memory there. */
static bool parse_at(struct cur *c, size_t i, size_t end, struct fetch_ctx *x, struct kprw_farg *f)
{
    uint64_t v;
    size_t bad;
    if (i == end)
        return fail(c, i, "an address or a symbol must follow '@'");
    if (kprw_digit(c->s[i])) {
        if (!kprw_parse_u64(c->s + i, end - i, &v, &bad))
            return fail(c, i + bad, "bad address");
        f->src = KPRW_FS_IMM;
        f->imm = (int64_t)v;
    } else {
        size_t j = i;
        while (j < end && c->s[j] != '+' && c->s[j] != '-')
            j++;
        if (!kprw_good_symbol(c->s + i, j - i))
            return fail(c, i, "bad symbol name");
        int64_t off = 0;
        if (j < end) {
            if (!kprw_parse_u64(c->s + j + 1, end - j - 1, &v, &bad) || v > 0x7fffffff)
                return fail(c, j + 1 + bad, "bad offset");
            off = c->s[j] == '-' ? -(int64_t)v : (int64_t)v;
        }
        f->src = KPRW_FS_SYM;
        f->sym = kprw_arena_strdup(x->a, c->s + i, j - i);
        if (!f->sym)
            return fail(c, i, "out of memory");
        f->imm = off;
    }
    f->deref[0] = 0;
    f->nderef = 1;
    return true;
}

/* Where the fetch starting at i ends (its closing parentheses matched),
 * before a ':TYPE' or the word's end. */
static size_t fetch_end(const struct cur *c, size_t i, size_t end)
{
    int depth = 0;
    for (; i < end; i++) {
        if (c->s[i] == '(')
            depth++;
        else if (c->s[i] == ')')
            depth--;
        else if (c->s[i] == ':' && depth == 0)
            return i;
    }
    return end;
}

static bool parse_fetch(struct cur *c, size_t i, size_t end, struct fetch_ctx *x, struct kprw_farg *f);

/* +|-[u]OFF(FETCH): a dereference of what FETCH gives, OFF bytes on. */
static bool parse_deref(struct cur *c, size_t i, size_t end, struct fetch_ctx *x, struct kprw_farg *f)
{
    bool neg = c->s[i] == '-';
    size_t j = i + 1;
    if (j < end && c->s[j] == 'u')
        j++;   /* user memory: the same memory here */
    size_t open = j;
    while (open < end && c->s[open] != '(')
        open++;
    if (open == end || c->s[end - 1] != ')')
        return fail(c, i, "a dereference is +OFF(FETCHARG) or -OFF(FETCHARG)");
    uint64_t v;
    size_t bad;
    if (!kprw_parse_u64(c->s + j, open - j, &v, &bad) || v > 0x7fffffff)
        return fail(c, j + bad, "bad dereference offset");
    if (!parse_fetch(c, open + 1, end - 1, x, f))
        return false;
    if (f->src == KPRW_FS_COMM)
        return fail(c, open + 1, "$comm cannot be dereferenced");
    if (f->nderef == KPRW_EV_MAX_DEREF)
        return fail(c, i, "dereferences nested too deep");
    f->deref[f->nderef++] = neg ? -(int32_t)v : (int32_t)v;
    return true;
}

static bool parse_fetch(struct cur *c, size_t i, size_t end, struct fetch_ctx *x, struct kprw_farg *f)
{
    if (i >= end)
        return fail(c, i, "a fetch argument is missing");
    uint64_t v;
    size_t bad;
    switch (c->s[i]) {
    case '%':
        return parse_reg(c, i + 1, end, x->isa, f);
    case '$':
        return parse_var(c, i + 1, end, x, f);
    case '@':
        return parse_at(c, i + 1, end, x, f);
    case '+':
    case '-':
        return parse_deref(c, i, end, x, f);
    case '\\': {
        bool neg = i + 1 < end && c->s[i + 1] == '-';
        size_t from = i + 1 + neg;
        if (!kprw_parse_u64(c->s + from, end - from, &v, &bad))
            return fail(c, from + bad, "bad immediate value (\\NUMBER)");
        f->src = KPRW_FS_IMM;
        f->imm = neg ? -(int64_t)v : (int64_t)v;
        return true;
    }
    default:
        return fail(c, i, "a fetch argument starts with % @ $ + - or \\");
    }
}

/* ---- types ---- */

static bool parse_type(struct cur *c, size_t i, size_t end, struct kprw_farg *f)
{
    static const struct {
        char name[8];   /* (an array: no address to relocate, for the static runtime) */
        uint8_t type, size;
    } types[] = {
        { "u8", KPRW_FT_U, 1 }, { "u16", KPRW_FT_U, 2 }, { "u32", KPRW_FT_U, 4 }, { "u64", KPRW_FT_U, 8 },
        { "s8", KPRW_FT_S, 1 }, { "s16", KPRW_FT_S, 2 }, { "s32", KPRW_FT_S, 4 }, { "s64", KPRW_FT_S, 8 },
        { "x8", KPRW_FT_X, 1 }, { "x16", KPRW_FT_X, 2 }, { "x32", KPRW_FT_X, 4 }, { "x64", KPRW_FT_X, 8 },
        { "char", KPRW_FT_CHAR, 1 }, { "string", KPRW_FT_STRING, 4 }, { "ustring", KPRW_FT_STRING, 4 },
        { "symbol", KPRW_FT_SYMBOL, 8 },
    };
    size_t n = i;
    while (n < end && c->s[n] != '[')
        n++;
    unsigned t = 0;
    while (t < sizeof types / sizeof types[0] &&
           !(kprw_strlen(types[t].name) == n - i && kprw_mem_eq(c->s + i, types[t].name, n - i)))
        t++;
    if (t == sizeof types / sizeof types[0]) {
        if ((n - i == 3 && kprw_mem_eq(c->s + i, "%pd", 3)) || (n - i == 3 && kprw_mem_eq(c->s + i, "%pD", 3)) ||
            (n - i == 6 && kprw_mem_eq(c->s + i, "symstr", 6)) || (n > i && c->s[i] == 'b'))
            return fail(c, i, "this type is the kernel's only (u8..u64 s8..s64 x8..x64 char string symbol here)");
        return fail(c, i, "unknown type (u8..u64 s8..s64 x8..x64 char string ustring symbol, TYPE[N])");
    }
    f->type = types[t].type;
    f->size = types[t].size;
    if (n < end) {   /* [N] */
        uint64_t v;
        size_t bad;
        if (c->s[end - 1] != ']' || !kprw_parse_dec(c->s + n + 1, end - n - 2, &v, &bad) || v == 0 ||
            v > KPRW_EV_MAX_ARRAY)
            return fail(c, n, "an array is TYPE[N] with 1 <= N <= 64");
        if (f->type == KPRW_FT_STRING)
            return fail(c, n, "string arrays are not supported");
        f->count = (uint8_t)v;
    }
    return true;
}

/* ---- one argument: [NAME=]FETCH[:TYPE] ---- */

static bool name_taken(const struct kprw_event *ev, const char *name, size_t n)
{
    for (unsigned k = 0; k < ev->nargs; k++)
        if (kprw_strlen(ev->args[k].name) == n && kprw_mem_eq(ev->args[k].name, name, n))
            return true;
    return false;
}

static bool parse_arg(struct cur *c, size_t end, struct fetch_ctx *x, struct kprw_farg *f, unsigned index)
{
    size_t i = c->at, eq = i;
    while (eq < end && c->s[eq] != '=' && c->s[eq] != '(' && c->s[eq] != ':')
        eq++;
    f->col = (uint16_t)(i + 1);
    if (eq < end && c->s[eq] == '=') {
        if (eq - i > KPRW_EV_NAME_MAX - 1 || !kprw_good_name(c->s + i, eq - i))
            return fail(c, i, "an argument name is letters, digits and '_' (at most 63)");
        if (name_taken(x->ev, c->s + i, eq - i))
            return fail(c, i, "this argument name is used already");
        f->name = kprw_arena_strdup(x->a, c->s + i, eq - i);
        i = eq + 1;
    } else {
        char buf[16] = "arg";
        struct kprw_sbuf b = { buf, 3, sizeof buf };
        kprw_sb_u64(&b, index + 1);
        kprw_sb_end(&b);
        if (name_taken(x->ev, buf, b.len))
            return fail(c, i, "the default name of this argument is used already: name it");
        f->name = kprw_arena_strdup(x->a, buf, b.len);
    }
    if (!f->name)
        return fail(c, i, "out of memory");
    size_t fe = fetch_end(c, i, end);
    if (!parse_fetch(c, i, fe, x, f))
        return false;
    if (fe < end) {
        if (!parse_type(c, fe + 1, end, f))
            return false;
    } else {
        f->type = f->src == KPRW_FS_COMM ? KPRW_FT_STRING : KPRW_FT_X;
        f->size = f->src == KPRW_FS_COMM ? 4 : x->isa->word;
    }
    if (f->src == KPRW_FS_COMM && f->type != KPRW_FT_STRING)
        return fail(c, fe + 1, "$comm is a string");
    if (f->count && f->nderef == 0)
        return fail(c, fe + 1, "an array needs a memory fetch (+OFF(...) or @ADDR)");
    if (f->src == KPRW_FS_IMM && f->nderef == 0 && f->type == KPRW_FT_STRING)
        return fail(c, i, "an immediate is a number");
    c->at = end;
    return true;
}

/* The record: header, return part, fields aligned to their size, the
 * fault bits, then the strings. */
static bool lay_out(struct cur *c, struct kprw_event *ev)
{
    uint32_t at = KPRW_REC_HDR + (ev->is_return ? sizeof(struct kprw_rec_ret) : 0), strings = 0;
    for (unsigned k = 0; k < ev->nargs; k++) {
        struct kprw_farg *f = &ev->args[k];
        uint32_t al = f->size;
        at = (at + al - 1) & ~(al - 1);
        f->off = (uint16_t)at;
        at += f->size * (f->count ? f->count : 1);
        strings += f->type == KPRW_FT_STRING;
    }
    ev->fault_off = (uint16_t)at;
    at += (ev->nargs + 7) / 8;
    at = (at + 7) & ~7u;
    ev->fixed = (uint16_t)at;
    /* room for the fetch's 8-byte store of the fault bits at fault_off
     * (event-fetch.h) however short the record */
    uint32_t end = at + strings * KPRW_EV_STRING_MAX;
    if (end < ev->fault_off + 8u)
        end = ev->fault_off + 8u;
    ev->max_size = (end + 7) & ~7u;
    if (ev->max_size > 0xffff)
        return fail(c, 0, "the event's record would be larger than 64 KiB");
    kprw_event_plan(ev);
    return true;
}

/* A definition has at least two words (a prefix or a spec, then a spec or
 * an argument); a plain spec is one word. */
/* A definition: a p/r prefix word (p, r, rN, p:..., r:...), or a spec
 * followed by a word that can only be a fetch argument or a filter (one
 * holding = % @ $ \\ ( or "if"). Anything else with blanks is a bad spec,
 * and its own parser says so. */
bool kprw_event_is_definition(const char *text, size_t len)
{
    size_t i = 0, w0;
    while (i < len && kprw_blank(text[i]))
        i++;
    w0 = i;
    while (i < len && !kprw_blank(text[i]))
        i++;
    size_t n0 = i - w0;
    const char *f = text + w0;
    bool prefix = (n0 >= 1 && (f[0] == 'p' || f[0] == 'r') &&
                   (n0 == 1 || f[1] == ':' || (f[0] == 'r' && kprw_digit(f[1]))));
    while (i < len && kprw_blank(text[i]))
        i++;
    if (i == len)
        return false;   /* one word: a plain spec, even "p" (a function may be named so) */
    if (prefix)
        return true;
    size_t w1 = i;
    while (i < len && !kprw_blank(text[i]))
        i++;
    if (i - w1 == 2 && text[w1] == 'i' && text[w1 + 1] == 'f')
        return true;
    for (size_t k = w1; k < i; k++)
        if (text[k] == '=' || text[k] == '%' || text[k] == '@' || text[k] == '$' || text[k] == '\\' || text[k] == '(')
            return true;
    return false;
}

static bool parse_args(struct cur *c, struct fetch_ctx *x, size_t *filter_at)
{
    struct kprw_event *ev = x->ev;
    *filter_at = 0;
    for (;;) {
        skip_blanks(c);
        if (c->at >= c->len)
            return true;
        size_t end = c->at;
        while (!at_word_end(c, end))
            end++;
        if (end - c->at == 2 && kprw_mem_eq(c->s + c->at, "if", 2)) {
            *filter_at = end;
            return true;
        }
        if (ev->nargs == KPRW_EV_MAX_ARGS)
            return fail(c, c->at, "too many arguments (at most 128)");
        if (!parse_arg(c, end, x, &ev->args[ev->nargs], ev->nargs))
            return false;
        ev->nargs++;
    }
}

bool kprw_event_parse(const struct kprw_fetch_isa *isa, const char *text, size_t len, struct kprw_arena *a,
                      struct kprw_event *ev, struct kprw_ev_error *err)
{
    struct cur c = { text, len, 0, err };
    for (size_t k = 0; k < sizeof *ev; k++)
        ((char *)ev)[k] = 0;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        c.len = --len;
    for (size_t k = 0; k < len; k++)
        if (!text[k] || ((unsigned char)text[k] < ' ' && text[k] != '\t'))
            return fail(&c, k, "unexpected character");
    ev->text = kprw_arena_strdup(a, text, len);
    ev->args = kprw_arena_alloc(a, KPRW_EV_MAX_ARGS * sizeof *ev->args, 8);
    if (!ev->text || !ev->args)
        return fail(&c, 0, "out of memory");
    skip_blanks(&c);
    size_t w = c.at, we = w;
    while (!at_word_end(&c, we))
        we++;
    size_t next = we;
    while (next < len && kprw_blank(text[next]))
        next++;
    if (is_prefix(text + w, we - w) && next < len && !parse_prefix(&c, we, a, ev))
        return false;
    skip_blanks(&c);
    bool nonzero_off;
    if (!parse_spec(isa, &c, ev, &nonzero_off))
        return false;
    struct fetch_ctx x = { isa, ev, a, nonzero_off };
    size_t filter_at;
    if (!parse_args(&c, &x, &filter_at))
        return false;
    /* one cache line for the first four arguments' ops */
    ev->ops = kprw_arena_alloc(a, (ev->nargs ? ev->nargs : 1u) * sizeof *ev->ops, 64);
    if (!ev->ops)
        return fail(&c, 0, "out of memory");
    if (!lay_out(&c, ev))
        return false;
    if (!ev->group)
        ev->group = KPRW_EV_DEFAULT_GROUP;
    if (filter_at)
        return kprw_filter_parse(ev, text, len, filter_at, a, err);
    return true;
}

bool kprw_event_bind(struct kprw_event *ev, bool (*resolve)(void *ctx, const char *sym, uint64_t *addr), void *ctx,
                     const struct kprw_farg **bad)
{
    for (unsigned k = 0; k < ev->nargs; k++) {
        struct kprw_farg *f = &ev->args[k];
        uint64_t addr;
        if (f->src != KPRW_FS_SYM)
            continue;
        if (!resolve(ctx, f->sym, &addr)) {
            *bad = f;
            return false;
        }
        f->src = KPRW_FS_IMM;
        f->imm = (int64_t)(addr + (uint64_t)f->imm);
    }
    kprw_event_plan(ev);
    return true;
}
