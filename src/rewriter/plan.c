/*
 * The plan of a bake (plan.h): the layout of the pool's text, each table
 * entry, the fixups and the strings, and the sizes they need, without
 * writing a byte of the image. The code's lengths come from the emitters
 * in counting mode (emit.c), so they are the lengths emit_image writes.
 */
#include "plan.h"
#include "emit.h"
#include "facts.h"
#include "../arch/isa.h"
#include "kind.h"
#include "../arch/x86/decode.h"
#include "../util/array.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct planner {
    const struct image *img;
    const struct pool_sections *ps;
    const struct probe_list *probes;
    struct bake_plan *plan;
    struct emit_env env;
    bool dynstr_ok;      /* names may stay in the dynamic string table: it is within the table's reach */
    size_t text_used;
    char *err;
    size_t errlen;
};

static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

static int oom(struct planner *pl)
{
    snprintf(pl->err, pl->errlen, "%s: out of memory", pl->img->path);
    return -1;
}

struct plan_calls plan_calls_of(const struct image *img, const struct pool_sections *ps)
{
    struct plan_calls c = { .kernel = img->hooks->kernel_contract, .added = ps->added, .shared = ps->shared_detours };
    if (!c.kernel) {
        c.kret = ps->slot->size >= KPRW_SLOTS_KRET_ENTRY;
        c.kret_return = ps->slot->size >= KPRW_SLOTS_KRET_RETURN;
        c.enter = ps->compact_entries && ps->slot->size >= KPRW_SLOTS_SIZE;
    }
    return c;
}

/* The next piece of text, at the end of what is used; NULL: no memory. */
static struct piece *add_piece(struct planner *pl, enum piece_kind kind, size_t index)
{
    struct bake_plan *plan = pl->plan;
    if (!ARRAY_RESERVE(plan->pieces, plan->cappieces, plan->npieces + 1))
        return NULL;
    struct piece *pc = &plan->pieces[plan->npieces++];
    *pc = (struct piece){ (uint8_t)kind, (uint32_t)index, pl->text_used, 0, plan->nfixups, 0 };
    return pc;
}

/* A piece other than an entry, measured; the text used grows by it. */
static int plan_piece(struct planner *pl, enum piece_kind kind, size_t index, bool align_after, size_t *off)
{
    struct piece *pc = add_piece(pl, kind, index);
    if (!pc)
        return oom(pl);
    pc->len = emit_piece(&pl->env, pc, NULL, pl->err, pl->errlen);
    if (!pc->len)
        return -1;
    if (off)
        *off = pc->off;
    pl->text_used = align_after ? align16(pc->off + pc->len) : pc->off + pc->len;
    return 0;
}

/* Lists fixup f (its original bytes in the strings) after checking that
 * its bytes can be made here. */
static int add_fixup(struct planner *pl, struct plan_fixup f)
{
    struct bake_plan *plan = pl->plan;
    uint8_t b[KPRW_ORIG_MAX];
    size_t off;
    int64_t rel = (int64_t)(f.at - pl->ps->table->addr);
    if (!fixup_bytes(&pl->env, &f, b, pl->err, pl->errlen))
        return -1;
    if (!image_file_offset(pl->img, f.at, f.len, &off) || rel != (int32_t)rel) {
        snprintf(pl->err, pl->errlen, "%s: 0x%llx: the bytes to re-point are not in the file, or out of the table's reach",
                 pl->img->path, (unsigned long long)f.at);
        return -1;
    }
    int64_t o = strtab_add(&plan->strs, pl->img->map + off, f.len);
    if (o < 0 || !ARRAY_RESERVE(plan->fixups, plan->capfixups, plan->nfixups + 1))
        return oom(pl);
    f.orig_off = (uint32_t)o;
    plan->fixups[plan->nfixups++] = f;
    return 0;
}

/* What comes before the entries: the thunks reading the slots (an added
 * pool), the shared detours' bodies, the stubs of evicted windows (with
 * the jumps to them), the return trampoline. */
static int plan_head(struct planner *pl, bool returns)
{
    struct bake_plan *plan = pl->plan;
    const struct plan_calls *c = &plan->calls;
    pool_addrs(plan, pl->ps, &pl->env.a);
    for (int th = 0; c->added && th < KPRW_NSLOTS; th++) {
        if ((th == KPRW_SLOT_KRET_ENTER && !c->kret) || th == KPRW_SLOT_KRET_RETURN || (th == KPRW_SLOT_ENTER && !c->enter))
            continue;   /* the return slot is jumped through by the detours themselves */
        if (plan_piece(pl, PIECE_THUNK, (size_t)th, true, &plan->thunk[th]) < 0)
            return -1;
    }
    pool_addrs(plan, pl->ps, &pl->env.a);
    if (c->shared && c->kernel) {
        snprintf(pl->err, pl->errlen, "%s: shared detours are for user-space images (use --detours=inline)", pl->img->path);
        return -1;
    }
    for (int f = 0; c->shared && f < 2; f++)   /* flags dead, flags live */
        if (plan_piece(pl, PIECE_COMMON, (size_t)f, true, &plan->common[f]) < 0)
            return -1;
    pool_addrs(plan, pl->ps, &pl->env.a);
    /* windows evicted for trampolines: a jmp to a stub running them, then
     * int3 where trampolines go (written with their probes) */
    for (size_t w = 0; w < pl->probes->nev; w++) {
        const struct eviction *ev = &pl->probes->ev[w];
        size_t stub;
        if (plan_piece(pl, PIECE_EVICT, w, false, &stub) < 0)
            return -1;
        struct plan_fixup f = { .at = ev->at, .target = stub, .to_text = true, .probe = SIZE_MAX, .len = ev->len,
                                .kind = KPRW_FIX_EVICT, .how = FIX_WINDOW };
        if (add_fixup(pl, f) < 0)
            return -1;
        plan->pieces[plan->npieces - 1].nfix = 1;
    }
    /* one return trampoline for the image (a kernel's is the runtime's:
     * its return probes' detours are its kprobes', and the runtime takes
     * the return address over from pt_regs.sp) */
    if (returns && !c->kernel && plan_piece(pl, PIECE_RET_TRAMPOLINE, 0, true, &plan->tramp) < 0)
        return -1;
    return 0;
}

/* A probe's retargets: each branch or jump-table entry that lands inside
 * its DCR now lands on the same instruction's copy in its detour (map->off[k]
 * from the entry's code for the DCR's byte k), a rel8 branch through a
 * trampoline. */
static int plan_retargets(struct planner *pl, size_t i, size_t off, const struct x86_copy_map *map)
{
    const struct probe *p = &pl->probes->v[i];
    for (size_t k = 0; k < p->nretargets; k++) {
        const struct retarget *t = &p->retargets[k];
        uint64_t d = t->target - p->addr;
        if (d >= X86_COPY_MAX || map->off[d] == 0xffff) {
            snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: 0x%llx is no instruction of its DCR", pl->img->path, p->sym,
                     (unsigned long long)p->off, (unsigned long long)t->target);
            return -1;
        }
        struct plan_fixup f = { .at = t->at, .target = off + map->off[d], .to_text = true, .base = t->base,
                                .branch = t->at, .probe = i, .len = t->len, .kind = KPRW_FIX_TABLE,
                                .how = t->kind == RT_TABLE4 ? FIX_TABLE4 : FIX_TABLE8 };
        if (t->kind == RT_BRANCH8) {
            /* aimed at a trampoline (checked first: the branch's message) */
            struct plan_fixup tr = { .at = t->tramp, .target = f.target, .to_text = true, .branch = t->at, .probe = i,
                                     .len = (uint8_t)pl->img->isa->jump_len, .kind = KPRW_FIX_TRAMPOLINE,
                                     .how = FIX_JMP32 };
            uint8_t b[KPRW_ORIG_MAX];
            if (!fixup_bytes(&pl->env, &tr, b, pl->err, pl->errlen))
                return -1;
            f.target = t->tramp;
            f.to_text = false;
            f.kind = KPRW_FIX_BRANCH8;
            f.how = FIX_BRANCH;
            uint8_t bb[KPRW_ORIG_MAX];
            if (!fixup_bytes(&pl->env, &f, bb, pl->err, pl->errlen) || add_fixup(pl, tr) < 0)
                return -1;
        } else if (t->kind == RT_BRANCH) {
            f.kind = KPRW_FIX_BRANCH;
            f.how = FIX_BRANCH;
        }
        if (add_fixup(pl, f) < 0)
            return -1;
    }
    return 0;
}

/* A vmlinux probe's boot-patched table sites (NOTE_SITE_MOVED): each
 * table entry names the site's copy in the detour instead (a fixup), and
 * the table records where the copy is (KPRW_T_FOLLOW), for the runtime to
 * take the bytes the kernel patched there when it puts the site back. */
static int plan_follow(struct planner *pl, size_t i, struct plan_entry *pe, const struct x86_copy_map *map)
{
    const struct probe *p = &pl->probes->v[i];
    unsigned nrec = 0;
    for (unsigned k = 0; k < p->nfollow; k++) {
        const struct probe_follow *fw = &p->follow[k];
        uint16_t at = fw->off < X86_COPY_MAX ? map->off[fw->off] : 0xffff;
        if (at == 0xffff || at < pe->dcr_off || at - pe->dcr_off > UINT8_MAX) {
            snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: the %s site at DCR byte %u is not copied", pl->img->path,
                     p->sym, (unsigned long long)p->off, ktable_name((enum ktable_id)fw->table), fw->off);
            return -1;
        }
        struct plan_fixup f = { .at = fw->field, .target = pe->off + at, .to_text = true, .base = fw->field,
                                .branch = fw->field, .probe = i, .len = 4, .kind = KPRW_FIX_KTABLE, .how = FIX_TABLE4 };
        if (add_fixup(pl, f) < 0)
            return -1;
        /* one record a site (an alternative of two has two entries) */
        bool seen = false;
        for (unsigned m = 0; m < nrec; m++)
            seen |= pe->follow[m].dcr_off == fw->off && pe->follow[m].len == fw->len;
        if (seen)
            continue;
        if (nrec == KPRW_FOLLOW_PER_ENTRY) {
            snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: internal error: more boot-patched sites than an entry "
                     "records", pl->img->path, p->sym, (unsigned long long)p->off);
            return -1;
        }
        pe->follow[nrec++] = (struct kprw_follow){ fw->off, (uint8_t)(at - pe->dcr_off), fw->len,
                                                   fw->how == FOLLOW_RETURN ? KPRW_FOLLOW_RETURN
                                                   : fw->how == FOLLOW_REAIM ? KPRW_FOLLOW_REAIM : KPRW_FOLLOW_COPY };
        pl->plan->follow = true;
    }
    return 0;
}

/* Is name one of the image's dynamic strings, which the runtime finds in
 * memory (a whole string: it ends there too)? */
static bool in_dynstr(const struct planner *pl, const char *name)
{
    const struct pool_sections *ps = pl->ps;
    return pl->dynstr_ok && ps->dynstr && name >= ps->dynstr && name < ps->dynstr + ps->dynstr_size &&
           (size_t)(name - ps->dynstr) < KPRW_NAME_DYN && memchr(name, 0, ps->dynstr_size - (size_t)(name - ps->dynstr));
}

/* The table entry of pe but its addresses: where the code's parts are from
 * the code it names, the name and the original bytes in the strings, the
 * flags. */
static int plan_table_entry(struct planner *pl, struct plan_entry *pe, const struct probe *p, bool twinned)
{
    struct kprw_entry *e = &pe->e;
    uint64_t table = pl->ps->table->addr, code = pl->env.a.text + pe->off + pe->code_off;
    int64_t site_rel = (int64_t)(p->addr - table), code_rel = (int64_t)(code - table);
    if (site_rel != (int32_t)site_rel || code_rel != (int32_t)code_rel) {
        snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: the probe table is out of 32-bit reach of the site",
                 pl->img->path, p->sym, (unsigned long long)p->off);
        return -1;
    }
    size_t ool = pe->dcr_off - pe->code_off, hook = pe->hook_off ? pe->hook_off - pe->code_off : 0;
    if (ool > UINT8_MAX || hook > UINT16_MAX) {
        snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: the detour is too long for the probe table",
                 pl->img->path, p->sym, (unsigned long long)p->off);
        return -1;
    }
    e->ool_off = (uint8_t)ool;
    e->hook_off = (uint16_t)hook;
    /* an unnamed function is named by its address: the runtime spells the
     * name, the table need not */
    bool kernel = pl->plan->calls.kernel;
    char fde[32], found[32];
    snprintf(fde, sizeof fde, KPRW_FDE_PREFIX "%" PRIx64, (uint64_t)(p->addr - p->off));
    snprintf(found, sizeof found, KPRW_FOUND_PREFIX "%" PRIx64, (uint64_t)(p->addr - p->off));
    bool by_fde = !kernel && strcmp(p->sym, fde) == 0, by_found = !kernel && strcmp(p->sym, found) == 0;
    bool unnamed = by_fde || by_found, dyn = !unnamed && in_dynstr(pl, p->sym);
    pl->plan->found_names |= by_found;
    int64_t name = unnamed ? (int64_t)(by_fde ? KPRW_NAME_FDE : KPRW_NAME_FOUND)
                 : dyn ? (int64_t)(KPRW_NAME_DYN | (uint32_t)(p->sym - pl->ps->dynstr))
                       : strtab_add(&pl->plan->strs, p->sym, strlen(p->sym) + 1);
    pl->plan->dyn_names |= dyn;
    /* a copy that needed no relocation holds the original bytes already */
    size_t avail;
    int64_t obytes = pe->at_copy ? 0 : strtab_add(&pl->plan->strs, image_read(pl->img, p->addr, &avail), pe->site_len);
    if (name < 0 || obytes < 0)
        return oom(pl);
    e->name_off = (uint32_t)name;
    e->orig_off = (uint32_t)obytes;
    e->offset = (uint32_t)p->off;
    e->flags = ((p->notes & (NOTE_AFTER_ENDBR | NOTE_AFTER_PAD_NOP)) ? KPRW_F_AFTER_ENDBR : 0) |
               (p->verdict == V_OPTIMIZED && (p->notes & NOTE_JUMP8) ? KPRW_F_JUMP8 : 0) |
               ((p->notes & NOTE_FLAGS_SAVED) ? KPRW_F_FLAGS_SAVED : 0) |
               (p->at_entry ? KPRW_F_ENTRY : 0) | (pe->at_copy ? KPRW_F_ORIG_AT_COPY : 0) |
               (p->is_return && twinned ? KPRW_F_KPROBE : 0) |
               ((p->notes & NOTE_AFTER_FENTRY) ? KPRW_F_AFTER_FENTRY : 0) |
               ((p->notes & NOTE_GO) ? KPRW_F_GO : 0);
    e->kind = p->is_return ? KPRW_KIND_R : KPRW_KIND_K;
    e->verdict = p->verdict == V_OPTIMIZED ? KPRW_OPTIMIZED : KPRW_INT3;
    e->reason = (uint8_t)p->reason;
    e->dcr_len = pe->site_len;
    return 0;
}

/* Table entry k, for probes->v[i]: its code measured after what is used
 * (a compact or shared detour packed, others on 16 bytes), its fixups, its
 * table entry. */
static int plan_entry(struct planner *pl, size_t i, size_t k, bool twinned)
{
    const struct probe *p = &pl->probes->v[i];
    const struct plan_calls *c = &pl->plan->calls;
    struct plan_entry *pe = &pl->plan->entries[k];
    bool opt = p->verdict == V_OPTIMIZED;
    /* a kprobe at a call entry (flags dead, red zone free): compact */
    bool compact = c->enter && opt && !p->is_return && p->at_entry && !(p->notes & NOTE_FLAGS_SAVED);
    bool shared = !compact && c->shared && opt && !p->is_return;
    if (opt && (p->notes & NOTE_GO) && !compact) {   /* (golang.c keeps any other detour off Go code) */
        snprintf(pl->err, pl->errlen, "%s: %s+0x%llx: a Go function's probe needs a compact detour: the pool has no "
                 "room for its entry's slot", pl->img->path, p->sym, (unsigned long long)p->off);
        return -1;
    }
    pe->probe = i;
    pe->code = compact ? CODE_COMPACT : shared ? CODE_SHARED : opt ? CODE_DETOUR : CODE_OOL;
    if (!shared && !compact)
        pl->text_used = align16(pl->text_used);
    struct piece *pc = add_piece(pl, PIECE_ENTRY, k);
    if (!pc)
        return oom(pl);
    struct entry_info ec;
    pc->len = emit_entry(&pl->env, pe, k, pc->off, NULL, &ec, pl->err, pl->errlen);
    if (!pc->len)
        return -1;
    pl->text_used = pc->off + pc->len;
    pe->off = pc->off;
    pe->entry_off = ec.entry_off;
    pe->dcr_off = ec.dcr_off;
    pe->hook_off = ec.hook_off;
    pe->code_off = opt ? ec.entry_off : 0;
    pe->site_len = (uint8_t)ec.site_len;
    pe->copy_len = pe->code == CODE_OOL ? (uint8_t)ec.site_len : p->code_len ? p->code_len : p->dcr_len;
    pe->at_copy = !c->kernel && ec.map.verbatim && pe->site_len == pe->copy_len;
    size_t fix = pl->plan->nfixups;
    if (opt && (p->notes & NOTE_JUMP8)) {
        struct plan_fixup f = { .at = p->tramp, .target = pe->off + pe->entry_off, .to_text = true, .probe = i,
                                .len = (uint8_t)pl->img->isa->jump_len, .kind = KPRW_FIX_TRAMPOLINE, .how = FIX_JMP32 };
        if (add_fixup(pl, f) < 0)
            return -1;
    }
    if (opt && plan_retargets(pl, i, pe->off, &ec.map) < 0)
        return -1;
    if (opt && p->nfollow && plan_follow(pl, i, pe, &ec.map) < 0)
        return -1;
    pc = &pl->plan->pieces[pl->plan->npieces - 1];
    pc->fix = fix;
    pc->nfix = pl->plan->nfixups - fix;
    return plan_table_entry(pl, pe, p, twinned);
}

static bool bakeable(const struct probe *p)
{
    return p->verdict == V_OPTIMIZED || p->verdict == V_INT3;
}

struct by_addr { uint64_t addr; size_t i; };

static int cmp_by_addr(const void *a, const void *b)
{
    const struct by_addr *x = a, *y = b;
    return x->addr != y->addr ? (x->addr < y->addr ? -1 : 1) : (x->i > y->i) - (x->i < y->i);
}

/* The bakeable probes in address order (entries are written in that order,
 * so the runtime's trap index needs no sort), and which share their
 * address with a bakeable probe of the other kind (SYM and SYM%return):
 * such a pair has one entry (kind 'r', flag KPRW_F_KPROBE), the site one
 * jump. One sort, not a scan per probe (every entry of a large program may
 * be probed). -1: no memory. */
static int order_probes(const struct probe_list *probes, struct by_addr **order, size_t *norder, bool **twinned)
{
    size_t m = 0;
    *order = malloc((probes->n ? probes->n : 1) * sizeof **order);
    *twinned = calloc(probes->n ? probes->n : 1, sizeof **twinned);
    if (!*order || !*twinned)
        return -1;
    for (size_t i = 0; i < probes->n; i++)
        if (bakeable(&probes->v[i]))
            (*order)[m++] = (struct by_addr){ probes->v[i].addr, i };
    sort_array(*order, m, sizeof **order, cmp_by_addr);
    const struct by_addr *o = *order;
    for (size_t a = 0, b; a < m; a = b) {
        bool k = false, r = false;
        for (b = a; b < m && o[b].addr == o[a].addr; b++) {
            r |= probes->v[o[b].i].is_return;
            k |= !probes->v[o[b].i].is_return;
        }
        for (size_t j = a; j < b; j++)
            (*twinned)[o[j].i] = k && r;
    }
    *norder = m;
    return 0;
}

/* The pool's sections' promises the plan relies on. */
static int check_pool(struct planner *pl, bool returns)
{
    const struct pool_sections *ps = pl->ps;
    const char *path = pl->img->path;
    bool kernel = pl->plan->calls.kernel;
    if (kernel && !ps->kernel_dispatch) {
        snprintf(pl->err, pl->errlen, "%s: the kernel has a kprewrite pool but no %s: build it with CONFIG_KPREWRITE=y",
                 path, KPRW_KERNEL_DISPATCH);
        return -1;
    }
    if (returns && !kernel && ps->slot->size < KPRW_SLOT_OFF(KPRW_SLOT_RETURN + 1)) {
        snprintf(pl->err, pl->errlen, "%s: the pool predates return probes (%s has %llu bytes, needs 16): relink the "
                 "program with the current libkprewrite-pool", path, KPRW_SEC_SLOT, (unsigned long long)ps->slot->size);
        return -1;
    }
    return 0;
}

int bake_plan_make(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                   struct bake_plan *plan, char *err, size_t errlen)
{
    struct planner pl = { img, ps, probes, plan, { img, probes, &plan->calls, { 0 }, NULL }, false, 0, err, errlen };
    struct by_addr *order = NULL;
    bool *twinned = NULL;
    size_t norder = 0, n = 0;
    bool returns = false;
    int rc = -1;
    memset(plan, 0, sizeof *plan);
    plan->calls = plan_calls_of(img, ps);
    for (int th = 0; th < KPRW_NSLOTS; th++)
        plan->thunk[th] = PLAN_NONE;
    plan->common[0] = plan->common[1] = plan->tramp = PLAN_NONE;
    if (order_probes(probes, &order, &norder, &twinned) < 0) {
        oom(&pl);
        goto out;
    }
    /* a kprobe and a return probe at one address: the return probe's entry */
    for (size_t o = 0; o < norder; o++) {
        const struct probe *p = &probes->v[order[o].i];
        if (p->is_return || !twinned[order[o].i]) {
            order[n++] = order[o];
            returns |= p->is_return;
        }
    }
    if (check_pool(&pl, returns) < 0)
        goto out;
    /* names stay in the dynamic string table only within the table's reach */
    int64_t dyn = ps->dynstr_vaddr ? (int64_t)(ps->dynstr_vaddr - ps->table->addr) : 0;
    pl.dynstr_ok = ps->dynstr_vaddr && dyn == (int32_t)dyn;
    plan->entries = calloc(n ? n : 1, sizeof *plan->entries);
    if (!plan->entries) {
        oom(&pl);
        goto out;
    }
    plan->nentries = n;
    if (plan_head(&pl, returns) < 0)
        goto out;
    for (size_t k = 0; k < n; k++)
        if (plan_entry(&pl, order[k].i, k, twinned[order[k].i]) < 0)
            goto out;
    /* the strings, then a NUL: every name ends inside them */
    plan->text_size = pl.text_used;
    plan->table_size = sizeof(struct kprw_table) + n * sizeof(struct kprw_entry) +
                       plan->nfixups * sizeof(struct kprw_fixup) + probes->defs_size + plan->strs.used + 1;
    /* KPRW_T_KASLR: two masks an entry after the strings; then
     * KPRW_T_FOLLOW's records (plan->follow: set by plan_follow()) */
    for (size_t i = 0; i < probes->n && !plan->kaslr; i++)
        plan->kaslr = probes->v[i].verdict == V_OPTIMIZED && (probes->v[i].notes & NOTE_RELOC_MOVED);
    if (plan->kaslr || plan->follow)
        plan->table_size = (plan->table_size + 3) / 4 * 4;
    if (plan->kaslr)
        plan->table_size += n * 8;
    if (plan->follow)
        plan->table_size += n * sizeof(struct kprw_follow) * KPRW_FOLLOW_PER_ENTRY;
    plan->data_size = n * sizeof(struct kprw_state);
    rc = 0;
out:
    free(order);
    free(twinned);
    if (rc < 0)
        bake_plan_free(plan);
    return rc;
}

void bake_plan_free(struct bake_plan *plan)
{
    free(plan->pieces);
    free(plan->entries);
    free(plan->fixups);
    strtab_free(&plan->strs);
    memset(plan, 0, sizeof *plan);
}
