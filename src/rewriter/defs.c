/*
 * The event definitions a bake stores in the probe table (abi.h
 * KPRW_T_EVENTS): those an earlier run baked, then those given now
 * (--probe DEFINITION), checked as the user runtime will bind them at
 * start-up: each to the points of this table its spec names, an event
 * name (GRP/EVENT) given by one definition only.
 *
 * A new definition whose spec is an address or SYM+OFF is stored with its
 * point's SYM+0xOFF instead: the runtime matches an address against where
 * the image is loaded (a PIE or a library moves), and SYM+0 on a function
 * that starts with endbr64 is baked at SYM+0x4.
 */
#define _GNU_SOURCE
#include "defs.h"
#include "../arch/isa.h"
#include "runtime/core/event.h"
#include "runtime/core/kprw-core.h"
#include "../util/array.h"

#include <stdlib.h>
#include <string.h>

#define DEF_ARENA (64 * 1024)   /* the runtime's (events.c) */
#define RETURN_SUFFIX "%return"

struct def {
    char *text;                       /* as stored (malloc'd) */
    const struct probe_spec *sp;      /* a new one's spec; NULL: baked before */
    char group[KPRW_EV_NAME_MAX], name[KPRW_EV_NAME_MAX];   /* name "": each point's default name */
    size_t name_col;                  /* where its name is written (1-based), else its spec's */
    size_t spec_at, spec_len;         /* its spec in text */
    bool is_return, gone;
    bool entry_args;                  /* $argN at SYM+OFF, OFF within the entry prefix */
    size_t args_col;                  /* ... where the first $argN is */
};

struct defs {
    struct def *v;
    size_t n, cap;
    const struct kprw_fetch_isa *isa;   /* the image's */
    const char *image;
    FILE *msg;
};

/* Parse text into d (text taken) for isa; false with *col and *msg on a
 * malformed one. */
static bool def_parse(struct def *d, const struct kprw_fetch_isa *isa, char *text, size_t *col, const char **msg)
{
    struct kprw_event ev;
    struct kprw_ev_error e = { 0, NULL };
    struct kprw_arena a = { malloc(DEF_ARENA), DEF_ARENA, 0 };
    memset(d, 0, sizeof *d);
    d->text = text;
    if (!a.base) {
        *col = 1, *msg = "out of memory";
        return false;
    }
    bool ok = kprw_event_parse(isa, text, strlen(text), &a, &ev, &e);
    if (ok) {
        snprintf(d->group, sizeof d->group, "%s", ev.group ? ev.group : KPRW_EV_DEFAULT_GROUP);
        snprintf(d->name, sizeof d->name, "%s", ev.name ? ev.name : "");
        d->spec_at = (size_t)(ev.spec - text);
        d->spec_len = ev.spec_len;
        d->is_return = ev.is_return;
        d->entry_args = (ev.uses_args || ev.is_return) && ev.entry_off;
        d->args_col = ev.args_col;
        d->name_col = ev.name_col ? ev.name_col : d->spec_at + 1;
    } else {
        *col = e.col, *msg = e.msg ? e.msg : "malformed event definition";
    }
    free(a.base);
    return ok;
}

/* Does d bind to p at run time (events.c point_fits)? */
static bool fits(const struct def *d, const struct probe *p)
{
    const char *w = d->text + d->spec_at;
    size_t n = d->spec_len, rl = strlen(RETURN_SUFFIX);
    if (!p->sym || (d->is_return && !p->is_return))
        return false;
    if (n > rl && memcmp(w + n - rl, RETURN_SUFFIX, rl) == 0)
        n -= rl;
    if (d->entry_args && !(p->notes & (NOTE_AFTER_ENDBR | NOTE_AFTER_PAD_NOP)))
        return false;   /* $argN or a return at SYM+4: the entry only past an endbr64 */
    return kprw_spec_matches(w, n, p->sym, (uint32_t)p->off, p->addr);
}

/* The offset the runtime names d's event on p by (events.c
 * named_offset): a SYM+0 point placed past endbr64 is SYM+0 (p_SYM_0),
 * unless the spec says SYM+OFF. */
static uint32_t named_offset(const struct def *d, const struct probe *p)
{
    bool after = p->notes & (NOTE_AFTER_ENDBR | NOTE_AFTER_PAD_NOP);
    return after && !memchr(d->text + d->spec_at, '+', d->spec_len) ? 0 : (uint32_t)p->off;
}

/* The probe a spec naming one point (0xADDR, SYM+OFF) resolved to: its
 * own, or the one kept for its address (baked before, or given twice). */
static const struct probe *point_of(const struct probe_spec *sp, const struct symbols *sy, const struct probe_list *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        if (pl->v[i].spec == sp)
            return &pl->v[i];
    uint64_t a = sp->addr;
    if (sp->sym) {
        const struct name_ent *ne = symbols_lookup(sy, sp->sym);
        if (!ne)
            return NULL;
        a = ne->addr + sp->off;
    }
    for (size_t i = 0; i < pl->n; i++) {
        const struct probe *p = &pl->v[i];
        if (p->addr == a || (p->sym && (p->notes & (NOTE_AFTER_ENDBR | NOTE_AFTER_PAD_NOP)) && p->addr - p->off == a))
            return p;
    }
    return NULL;
}

/* A new definition naming one point by address or offset: its spec
 * respelled SYM+0xOFF (SYM for a return event), as the runtime names it. */
static int respell(struct def *d, const struct probe *p)
{
    const char *w = d->text + d->spec_at;
    size_t rl = strlen(RETURN_SUFFIX);
    bool suffix = d->spec_len > rl && memcmp(w + d->spec_len - rl, RETURN_SUFFIX, rl) == 0;
    char *t = NULL;
    int n = d->is_return ? asprintf(&t, "%.*s%s%s%s", (int)d->spec_at, d->text, p->sym, suffix ? RETURN_SUFFIX : "",
                                    w + d->spec_len)
                         : asprintf(&t, "%.*s%s+0x%llx%s", (int)d->spec_at, d->text, p->sym,
                                    (unsigned long long)p->off, w + d->spec_len);
    if (n < 0)
        return -1;
    free(d->text);
    d->text = t;   /* (parsed again by the caller) */
    return 0;
}

static int oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* The definitions an earlier run baked, then the new ones (respelled). */
static int load(struct defs *ds, const struct spec_list *specs, const struct symbols *sy,
                const struct probe_list *pl, char *err, size_t errlen)
{
    for (size_t i = 0; i < specs->ndefs + specs->n; i++) {
        const struct probe_spec *sp = i < specs->ndefs ? NULL : &specs->v[i - specs->ndefs];
        if (sp && (!sp->def || sp->baked))
            continue;
        char *text = strdup(sp ? sp->def : specs->defs[i]);
        size_t col = 0;
        const char *msg = NULL;
        if (!text || !ARRAY_RESERVE(ds->v, ds->cap, ds->n + 1)) {
            free(text);
            return oom(err, errlen);
        }
        struct def *d = &ds->v[ds->n++];
        if (!def_parse(d, ds->isa, text, &col, &msg)) {   /* for the image's ISA */
            if (sp)
                spec_error(sp, col, msg, err, errlen);
            else
                snprintf(err, errlen, "%s: the probe table's event '%s' is malformed: col %zu: %s", ds->image, text,
                         col, msg);
            return -1;
        }
        const struct probe *p;
        if (sp && (!sp->sym || (sp->has_off && !sp->is_glob)) && (p = point_of(sp, sy, pl)) != NULL && p->sym) {
            size_t args_col = d->args_col;   /* a column in the text as given */
            if (respell(d, p) < 0)
                return oom(err, errlen);
            if (!def_parse(d, ds->isa, d->text, &col, &msg)) {
                snprintf(err, errlen, "%s: internal error: '%s' respelled is malformed: col %zu: %s", ds->image,
                         d->text, col, msg);
                return -1;
            }
            d->args_col = args_col;
        }
        d->sp = sp;
    }
    return 0;
}

/* Said on msg: a baked definition left out. */
static void drop_baked(struct defs *ds, struct def *d, const char *why, const struct def *by)
{
    d->gone = true;
    if (by)
        fprintf(ds->msg, "kprewrite: %s: baked event '%s' %s %s '%s'\n", ds->image, d->text, why, by->sp->origin,
                by->sp->text);
    else
        fprintf(ds->msg, "kprewrite: %s: baked event '%s' %s\n", ds->image, d->text, why);
}

/* The same text twice: the later, or the baked one, goes. Then those
 * that bind to no point baked now. */
static int drop_unbound(struct defs *ds, const struct probe_list *pl, char *err, size_t errlen)
{
    for (size_t i = 0; i < ds->n; i++)
        for (size_t j = i + 1; j < ds->n && !ds->v[i].gone; j++)
            if (!ds->v[j].gone && strcmp(ds->v[i].text, ds->v[j].text) == 0)
                ds->v[ds->v[i].sp ? j : i].gone = true;
    for (size_t i = 0; i < ds->n; i++) {
        struct def *d = &ds->v[i];
        bool bound = false, refused = false;
        for (size_t k = 0; k < pl->n && !bound; k++)
            if (fits(d, &pl->v[k])) {
                bound = pl->v[k].verdict != V_REFUSED;
                refused = !bound;
            }
        if (d->gone || bound)
            continue;
        if (!d->sp)
            drop_baked(ds, d, "left out: no point it names is baked now", NULL);
        else if (refused)
            d->gone = true;   /* its point was refused: said, and the exit status says so */
        else {
            if (d->entry_args && d->is_return)
                spec_error(d->sp, d->spec_at + 1, "a return probe is on a function's entry: SYM+4 is that only past an endbr64",
                           err, errlen);
            else if (d->entry_args)
                spec_error(d->sp, d->args_col, "$argN is only available at a function's entry", err, errlen);
            else
                spec_error(d->sp, d->spec_at + 1, "no point baked now matches the event's spec", err, errlen);
            return -1;
        }
    }
    return 0;
}

/* One event (definition x point) by name. */
struct inst {
    char name[2 * KPRW_EV_NAME_MAX + 2];   /* GRP/EVENT */
    size_t def;
};

static int cmp_inst(const void *a, const void *b)
{
    const struct inst *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->def > y->def) - (x->def < y->def);
}

/* The events the definitions not gone give, sorted by name. */
static int instances(const struct defs *ds, const struct probe_list *pl, struct inst **out, size_t *nout)
{
    struct inst *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < ds->n; i++) {
        const struct def *d = &ds->v[i];
        for (size_t k = 0; k < pl->n && !d->gone; k++) {
            const struct probe *p = &pl->v[k];
            if (p->verdict == V_REFUSED || !fits(d, p))
                continue;
            if (!ARRAY_RESERVE(v, cap, n + 1)) {
                free(v);
                return -1;
            }
            struct inst *in = &v[n++];
            struct kprw_sbuf b = { in->name, 0, sizeof in->name };
            kprw_sb_str(&b, d->group);
            kprw_sb_char(&b, '/');
            if (d->name[0])
                kprw_sb_str(&b, d->name);
            else
                kprw_event_default_name(d->is_return, p->sym, named_offset(d, p), p->addr, &b);
            kprw_sb_end(&b);
            in->def = i;
            if (d->name[0])
                break;   /* one name, whatever the points */
        }
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_inst);
    *out = v;
    *nout = n;
    return 0;
}

/* Two definitions giving an event of one name: a new one replaces a baked
 * one; two new ones are an error (at the later one's name). */
static int check_names(struct defs *ds, const struct probe_list *pl, char *err, size_t errlen)
{
    for (bool again = true; again;) {
        struct inst *v;
        size_t n;
        if (instances(ds, pl, &v, &n) < 0)
            return oom(err, errlen);
        again = false;
        for (size_t k = 1; k < n && !again; k++) {
            if (strcmp(v[k].name, v[k - 1].name) != 0 || v[k].def == v[k - 1].def)
                continue;
            struct def *a = &ds->v[v[k - 1].def], *b = &ds->v[v[k].def];   /* a before b */
            if (!a->sp && b->sp) {
                drop_baked(ds, a, "replaced by", b);
                again = true;
                continue;
            }
            char msg[512];
            if (!a->sp)
                snprintf(err, errlen, "%s: the probe table's baked events define %s twice", ds->image, v[k].name);
            else {
                snprintf(msg, sizeof msg, "event %s is defined twice (also by %s '%s')", v[k].name, a->sp->origin,
                         a->sp->text);
                spec_error(b->sp, b->name_col, msg, err, errlen);
            }
            free(v);
            return -1;
        }
        free(v);
    }
    return 0;
}

/* The block the table stores: each definition left, NUL-terminated. */
static int build(const struct defs *ds, struct probe_list *pl)
{
    size_t size = 0, k = 0;
    for (size_t i = 0; i < ds->n; i++)
        size += ds->v[i].gone ? 0 : strlen(ds->v[i].text) + 1;
    char *b = size ? malloc(size) : NULL;
    if (size && !b)
        return -1;
    for (size_t i = 0; i < ds->n; i++)
        if (!ds->v[i].gone) {
            size_t n = strlen(ds->v[i].text) + 1;
            memcpy(b + k, ds->v[i].text, n);
            k += n;
            pl->ndefs++;
        }
    free(pl->defs);
    pl->defs = b;
    pl->defs_size = size;
    return 0;
}

int defs_collect(const struct spec_list *specs, const struct symbols *sy, struct probe_list *probes,
                 const struct kprw_fetch_isa *isa, const char *image, FILE *msg, char *err, size_t errlen)
{
    struct defs ds = { NULL, 0, 0, isa, image, msg };
    probes->ndefs = 0;
    int rc = load(&ds, specs, sy, probes, err, errlen);
    if (rc == 0)
        rc = drop_unbound(&ds, probes, err, errlen);
    if (rc == 0)
        rc = check_names(&ds, probes, err, errlen);
    if (rc == 0 && build(&ds, probes) < 0)
        rc = oom(err, errlen);
    for (size_t i = 0; i < ds.n; i++)
        free(ds.v[i].text);
    free(ds.v);
    return rc;
}
