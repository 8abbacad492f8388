/* Resolving probe specs to probe points. */
#include "resolve.h"
#include "kind.h"
#include "../arch/x86/decode.h"
#include "../util/array.h"
#include "../util/checked.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct probe *new_probe(struct probe_list *l)
{
    if (!ARRAY_RESERVE(l->v, l->cap, l->n + 1))
        return NULL;
    struct probe *p = &l->v[l->n++];
    memset(p, 0, sizeof *p);
    p->func = SIZE_MAX;
    return p;
}

static void refuse(struct probe *p, enum kp_reason r, const char *detail)
{
    p->verdict = V_REFUSED;
    p->reason = r;
    snprintf(p->detail, sizeof p->detail, "%s", detail ? detail : "");
}

/* Stubs that are not function bodies. */
static bool stub_section(const struct image *img, uint64_t addr, struct probe *p)
{
    const struct section *s = image_section_at(img, addr);
    if (!s)
        return false;
    if (!strcmp(s->name, ".plt") || !strcmp(s->name, ".plt.got") || !strcmp(s->name, ".plt.sec")) {
        refuse(p, KP_R_PLT_STUB, s->name);
        return true;
    }
    if (!strcmp(s->name, ".init") || !strcmp(s->name, ".fini")) {
        refuse(p, KP_R_INIT_FINI_STUB, s->name);
        return true;
    }
    return false;
}

/* Fill in a probe at addr; sym/off name it. */
static void place(struct probe *p, const struct image *img, const struct symbols *sy, uint64_t addr,
                  const char *sym, uint64_t off, uint64_t sym_addr)
{
    p->addr = addr;
    p->sym = sym;
    p->off = off;
    if (stub_section(img, addr, p))
        return;
    const struct func *fn = symbols_func_at(sy, sym ? sym_addr : addr);
    if (fn) {
        p->func = (size_t)(fn - sy->funcs);
        if (!sym) {
            p->sym = fn->name;
            p->off = addr - fn->start;
        }
    }
    /* no probe in a signal trampoline, named or not */
    const struct eh_fde *sf = symbols_signal_frame_at(sy, addr);
    if (sf) {
        char d[96];
        snprintf(d, sizeof d, "FDE 0x%llx-0x%llx", (unsigned long long)sf->start, (unsigned long long)sf->end);
        refuse(p, KP_R_SIGNAL_FRAME, d);
        return;
    }
    if (!fn) {
        if (!image_is_exec_addr(img, addr))
            refuse(p, KP_R_NOT_EXECUTABLE, NULL);
        else
            refuse(p, KP_R_NO_FUNCTION, NULL);
        return;
    }
    if (fn->entry_unproven) {
        const struct entry_doubt *d = symbols_entry_doubt(sy, fn);
        char t[160] = "";
        if (d)
            entry_doubt_text(d, t, sizeof t);
        refuse(p, KP_R_UNPROVEN_ENTRY, t);
        return;
    }
    if (addr < fn->start || addr >= fn->end) {
        char d[96];
        snprintf(d, sizeof d, "%s is 0x%llx bytes long", fn->name,
                 (unsigned long long)(fn->end - fn->start));
        refuse(p, KP_R_OUTSIDE_FUNCTION, d);
        return;
    }
    /* sym+0 on an endbr64 function means after the endbr64 (arch_adjust_kprobe_addr). */
    size_t avail;
    unsigned elen = 0;
    const uint8_t *b = image_read(img, fn->start, &avail);
    bool endbr = b && x86_is_endbr_like(b, avail, &elen) && fn->end - fn->start > elen;
    if (addr == fn->start && endbr) {
        p->addr += elen;
        p->off += elen;
        p->notes |= NOTE_AFTER_ENDBR;
    } else if (endbr && addr == fn->start + elen) {
        p->notes |= NOTE_AFTER_ENDBR;   /* 0xADDR of a baked SYM+0 */
    }
    /* a return probe: the entry, or just after its endbr64 (0xADDR%return
     * of a baked one names that address) */
    if (p->is_return && p->addr != fn->start + (endbr ? elen : 0))
        refuse(p, KP_R_RETURN_NOT_AT_ENTRY, NULL);
}

/* Probes at one address of one kind, from several specs (a glob and a
 * name, or a probe baked by an earlier run and asked for again): the first
 * stays (a baked one comes first: --remove then knows it), the others go,
 * the order of the rest kept. */
struct addr_kind { uint64_t addr; size_t i; bool ret; };
static int cmp_addr_kind(const void *a, const void *b)
{
    const struct addr_kind *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->ret != y->ret)
        return x->ret < y->ret ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static bool drop_duplicates(struct probe_list *l)
{
    struct addr_kind *k = malloc((l->n ? l->n : 1) * sizeof *k);
    bool *gone = calloc(l->n ? l->n : 1, sizeof *gone);
    if (!k || !gone) {
        free(k);
        free(gone);
        return false;
    }
    for (size_t i = 0; i < l->n; i++)
        k[i] = (struct addr_kind){ l->v[i].addr, i, l->v[i].is_return };
    sort_array(k, l->n, sizeof *k, cmp_addr_kind);
    for (size_t j = 1, first = 0; j < l->n; j++) {
        if (k[j].addr == k[j - 1].addr && k[j].ret == k[j - 1].ret) {
            gone[k[j].i] = true;
            l->v[k[first].i].exit_guard |= l->v[k[j].i].exit_guard;   /* the survivor keeps the mark */
        } else {
            first = j;
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (gone[i])
            free(l->v[i].retargets);
        else
            l->v[m++] = l->v[i];
    }
    l->n = m;
    free(k);
    free(gone);
    return true;
}

int probes_resolve(const struct spec_list *specs, const struct image *img, const struct symbols *sy,
                   struct probe_list *out, char *err, size_t errlen)
{
    /* Which functions a glob already gave an entry probe: bit 0 for k, bit 1 for r. */
    uint8_t *globbed = calloc(sy->nfuncs ? sy->nfuncs : 1, 1);
    if (!globbed)
        goto oom;
    for (size_t s = 0; s < specs->n; s++) {
        const struct probe_spec *sp = &specs->v[s];
        uint8_t bit = sp->is_return ? 2 : 1;
        if (sp->is_glob) {
            size_t matched = 0;
            for (size_t i = 0; i < sy->nnames; i++) {
                const struct name_ent *ne = &sy->names[i];
                if (ne->func == SIZE_MAX || sy->funcs[ne->func].start != ne->addr ||
                    fnmatch(sp->sym, ne->name, 0) != 0)
                    continue;
                /* Globs expand to function bodies: PLT and .init/.fini stubs are
                 * not, nor a kernel's padding symbols (__pfx_, __cfi_) */
                struct probe stub;
                if (stub_section(img, ne->addr, &stub) ||
                    (img->hooks->padding_symbol && img->hooks->padding_symbol(img, ne->name)))
                    continue;
                matched++;
                if (globbed[ne->func] & bit)
                    continue;   /* an alias, or an earlier glob */
                globbed[ne->func] |= bit;
                struct probe *p = new_probe(out);
                if (!p)
                    goto oom;
                p->spec = sp;
                p->is_return = sp->is_return;
                place(p, img, sy, ne->addr, sy->funcs[ne->func].name, 0, ne->addr);
            }
            if (!matched) {
                snprintf(err, errlen, "%s: %s: no function matches '%s'", img->path, sp->origin, sp->sym);
                free(globbed);
                return -1;
            }
            continue;
        }
        struct probe *p = new_probe(out);
        if (!p)
            goto oom;
        p->spec = sp;
        p->is_return = sp->is_return;
        p->exit_guard = sp->exit_guard;
        if (!sp->sym) {
            place(p, img, sy, sp->addr, NULL, 0, 0);
        } else {
            const struct name_ent *ne = symbols_lookup(sy, sp->sym);
            uint64_t a;
            if (!ne) {
                snprintf(err, errlen, symbols_addr_of(sy, sp->sym, &a)
                         ? "%s: %s: '%s' is not a function" : "%s: %s: unknown symbol '%s'",
                         img->path, sp->origin, sp->sym);
                free(globbed);
                return -1;
            }
            uint64_t at;
            if (!ck_add(ne->addr, sp->off, &at))
                at = UINT64_MAX;   /* past every function: outside-function */
            place(p, img, sy, at, ne->name, sp->off, ne->addr);
        }
    }
    free(globbed);
    if (!drop_duplicates(out))
        goto oom_after;
    return 0;
oom:
    free(globbed);
oom_after:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void probe_list_free(struct probe_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].retargets);
    free(l->v);
    free(l->ev);
    free(l->defs);
    memset(l, 0, sizeof *l);
}
