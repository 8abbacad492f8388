/*
 * Trusting a probe table before arming its probes. The table comes from an
 * image file, which anyone may have edited after kprewrite wrote it: every
 * offset the runtime would follow (sites, detours, out-of-line copies, the
 * state array, strings) must land inside the right kind of segment of the
 * object holding the table. One bad entry refuses the whole table: its
 * detours then count nothing and call no handler. What a site holds is
 * checked before the runtime first writes to it (patch.c), not here: a
 * start-up that read every site would touch every page of code.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>   /* program_invocation_name */
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "kprewrite/abi.h"
#include "rt.h"

#define MAX_SEGS 32

struct object {
    const void *want;                 /* an address in the object */
    const char *name;
    int n;
    uintptr_t lo[MAX_SEGS], hi[MAX_SEGS];
    uintptr_t file_end[MAX_SEGS];     /* lo + p_filesz: zero-filled memory from there to hi */
    uint32_t flags[MAX_SEGS];         /* PF_R, PF_W, PF_X */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object *o = arg;
    bool mine = false;
    o->n = 0;
    for (int i = 0; i < info->dlpi_phnum && o->n < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        o->lo[o->n] = lo;
        o->hi[o->n] = hi;
        o->file_end[o->n] = lo + (ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz);
        o->flags[o->n++] = ph->p_flags;
        if ((uintptr_t)o->want >= lo && (uintptr_t)o->want < hi)
            mine = true;
    }
    if (mine)
        o->name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : program_invocation_name;
    return mine;
}

/* [a, a + len) lies in one segment with all of the flags `need` (and, when
 * `deny` is set, none of those). *hint remembers the segment that matched
 * last: the entries of one kind of offset mostly land in the same one, and
 * a start-up checks thousands of them. */
static bool in_segment_at(const struct object *o, int *hint, uintptr_t a, uint64_t len, uint32_t need, uint32_t deny)
{
    int h = *hint;
    if (!(h >= 0 && h < o->n && a >= o->lo[h] && a < o->hi[h]))
        for (h = 0; h < o->n; h++)
            if (a >= o->lo[h] && a < o->hi[h])
                break;
    if (h == o->n)
        return false;
    *hint = h;
    return len <= o->hi[h] - a && (o->flags[h] & need) == need && !(o->flags[h] & deny);
}

/* [a, a + len) lies in the zero-filled part of one segment (no file bytes). */
static bool zero_filled(const struct object *o, uintptr_t a, uint64_t len)
{
    for (int h = 0; h < o->n; h++)
        if (a >= o->file_end[h] && a < o->hi[h])
            return len <= o->hi[h] - a;
    return false;
}

/* An added pool's slot section: the pointers its flags say the runtime fills. */
static uint64_t slots_size(uint32_t flags)
{
    return (flags & KPRW_T_ENTER) ? KPRW_SLOTS_SIZE : (flags & KPRW_T_KRET_RETURN) ? KPRW_SLOTS_KRET_RETURN
         : (flags & KPRW_T_KRET_ENTRY) ? KPRW_SLOTS_KRET_ENTRY : KPRW_SLOT_OFF(KPRW_SLOT_RETURN + 1);
}

static bool in_segment(const struct object *o, uintptr_t a, uint64_t len, uint32_t need, uint32_t deny)
{
    int hint = -1;
    return in_segment_at(o, &hint, a, len, need, deny);
}

static uintptr_t at(const void *base, int64_t rel) { return (uintptr_t)base + (uintptr_t)rel; }

struct span { int64_t lo, hi; };   /* offsets from the table */

/* (an entry's own fields: kprw_entry_faults, shared with the kernel
 * runtime; original bytes kept in the copy lie in the code the entry jumps
 * to, whose bounds fields_sane() takes: to + ool_off + dcr_len) */

/* Every entry's own fields make sense (entry_faults); sites gets the
 * bounds of the sites, jumps those of the code the entries jump to;
 * *int3s counts the entries that are not optimized. Accumulates instead
 * of branching. */
static bool fields_sane(const struct kprw_entry *e, uint32_t n, uint32_t strings_size, uint64_t dynspan,
                        struct span *sites, struct span *jumps, uint32_t *int3s)
{
    unsigned wrong = 0, int3 = 0;
    int64_t slo = INT64_MAX, shi = INT64_MIN, clo = INT64_MAX, chi = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        const struct kprw_entry *x = &e[i];
        wrong |= kprw_entry_faults(x, strings_size, dynspan, false);
        int3 += x->verdict != KPRW_OPTIMIZED;
        int64_t site = x->site_rel, to = x->code_rel;
        unsigned far = x->ool_off > x->hook_off ? x->ool_off : x->hook_off;
        unsigned copy_end = (x->flags & KPRW_F_ORIG_AT_COPY) ? x->ool_off + x->dcr_len - 1u : 0;
        far = copy_end > far ? copy_end : far;
        slo = site < slo ? site : slo;
        shi = site + x->dcr_len > shi ? site + x->dcr_len : shi;
        clo = to < clo ? to : clo;
        chi = to + far + 1 > chi ? to + far + 1 : chi;
    }
    *sites = (struct span){ slo, shi };
    *jumps = (struct span){ clo, chi };
    *int3s = int3;
    return !wrong;
}

const char *rt_table_check(const struct kprw_table *t, const char **object, uint32_t *int3s, uint64_t *dynspan,
                           char *why, size_t len)
{
    *int3s = 0;
    *dynspan = 0;
    struct object o = { .want = t, .name = "?" };
    *object = "?";
    if (!dl_iterate_phdr(find_object, &o))
        return "the table is in no loaded object";
    *object = o.name;
    switch (kprw_table_fault(t, KPRW_T_KNOWN)) {
    case KPRW_TF_NONE:
        break;
    case KPRW_TF_MAGIC:
        return "bad magic";
    case KPRW_TF_VERSION:
        snprintf(why, len, "table version %u, this runtime reads versions %u to %u", t->version, KPRW_VERSION_MIN,
                 KPRW_VERSION);
        return why;
    case KPRW_TF_FLAGS:
        snprintf(why, len, "table flags 0x%x, unknown to this runtime (0x%x)", t->flags & ~(uint32_t)KPRW_T_KNOWN,
                 (unsigned)KPRW_T_KNOWN);
        return why;
    case KPRW_TF_ENTRY_SIZE:
        snprintf(why, len, "entry size %u, expected %zu", t->entry_size, sizeof(struct kprw_entry));
        return why;
    }
    uint64_t body = sizeof *t + (uint64_t)t->nentries * sizeof(struct kprw_entry);
    if (!in_segment(&o, (uintptr_t)t, body, PF_R, PF_W)) {
        snprintf(why, len, "%u entries run past the read-only segment holding the table", t->nentries);
        return why;
    }
    const char *strings = (const char *)t + t->strings_off;
    if (t->nentries && (t->strings_size == 0 || !in_segment(&o, (uintptr_t)strings, t->strings_size, PF_R, PF_W) ||
                        strings[t->strings_size - 1] != 0))
        return "the string table lies outside the table's segment or is not terminated";
    if (t->flags & KPRW_T_EVENTS) {   /* the definitions: NUL-terminated text before the strings */
        uint64_t from = kprw_table_events_off(t);
        const char *defs = (const char *)t + from;
        if (from >= t->strings_off || !in_segment(&o, (uintptr_t)defs, t->strings_off - from, PF_R, PF_W) ||
            strings[-1] != 0)
            return "the event definitions lie outside the table's segment or are not terminated";
    }
    /* names in the image's dynamic string table: the readable bytes from
     * there to the end of its segment (a name's end is looked for within) */
    if (t->version >= 5 && t->dynstr_rel) {
        uintptr_t ds = at(t, t->dynstr_rel);
        int h = -1;
        if (!in_segment_at(&o, &h, ds, 1, PF_R, 0))
            return "the dynamic string table lies outside the object";
        *dynspan = o.hi[h] - ds < o.file_end[h] - ds ? o.hi[h] - ds : o.file_end[h] - ds;
    }
    struct kprw_state *st = (void *)at(t, t->state_rel);
    if (t->nentries && !in_segment(&o, (uintptr_t)st, (uint64_t)t->nentries * sizeof *st, PF_R | PF_W, PF_X))
        return "the state array lies outside a writable, non-executable segment";
    if ((t->flags & KPRW_T_ADDED_POOL) && !in_segment(&o, at(t, t->slot_rel), slots_size(t->flags), PF_R | PF_W, PF_X))
        return "the slots lie outside a writable, non-executable segment";
    if (t->tramp_rel && !in_segment(&o, at(t, t->tramp_rel), 1, PF_R | PF_X, PF_W))
        return "the return trampoline lies outside executable code";
    /* States in zero-filled memory (a pool kprewrite added to a prebuilt
     * image) are zero at load: nothing to read, and reading them would
     * fault in a page every 256 states */
    bool states_zero = (t->flags & KPRW_T_ADDED_POOL) && zero_filled(&o, (uintptr_t)st, (uint64_t)t->nentries * sizeof *st);
    const struct kprw_entry *e = (const void *)(t + 1);
    /* One pass over the entries checks their fields and takes the bounds
     * of the sites and of the code they jump to (detours, out-of-line
     * copies, return hooks: all executable), as offsets from the table:
     * when both bounds lie in one good segment, so does every entry's
     * address, with no lookup per entry. The pass has no branch per field
     * (it is most of the runtime's start-up in a binary with a probe on
     * every function); when it finds something wrong, the second pass
     * below finds which entry and says why. */
    struct span sites, jumps;
    bool fields_ok = fields_sane(e, t->nentries, t->strings_size, *dynspan, &sites, &jumps, int3s);
    if (fields_ok && !states_zero)
        for (uint32_t k = 0; k < t->nentries; k++)
            fields_ok &= st[k].rt == NULL;   /* the detours would follow it: only the runtime sets it */
    const struct kprw_entry *x = NULL;
    const char *bad = NULL;
    uint32_t i = 0;
    for (; !fields_ok && i < t->nentries && !bad; i++) {
        x = &e[i];
        unsigned faults = kprw_entry_faults(x, t->strings_size, *dynspan, true);
        if (faults)
            bad = kprw_entry_fault_names[__builtin_ctz(faults)];
        else if (!states_zero && st[i].rt)
            bad = "its state names a record already (the file must hold zero there)";
    }
    bool bounded = !bad && (!t->nentries || (in_segment(&o, at(t, sites.lo), (uint64_t)(sites.hi - sites.lo), PF_R | PF_X, PF_W) &&
                                             in_segment(&o, at(t, jumps.lo), (uint64_t)(jumps.hi - jumps.lo), PF_R | PF_X, PF_W)));
    int hsite = -1, hool = -1, hhook = -1, hdetour = -1;
    for (i = bad ? i : 0; !bad && !bounded && i < t->nentries; i++) {
        x = &e[i];
        uintptr_t code = at(t, x->code_rel);
        if (!in_segment_at(&o, &hsite, at(t, x->site_rel), x->dcr_len, PF_R | PF_X, PF_W))
            bad = "site outside executable code";
        else if (x->verdict == KPRW_OPTIMIZED && !in_segment_at(&o, &hdetour, code, 1, PF_R | PF_X, PF_W))
            bad = "detour outside executable code";
        else if (!in_segment_at(&o, &hool, code + x->ool_off, (x->flags & KPRW_F_ORIG_AT_COPY) ? x->dcr_len : 1,
                                PF_R | PF_X, PF_W))
            bad = "out-of-line copy outside executable code";
        else if (x->hook_off && !in_segment_at(&o, &hhook, code + x->hook_off, 1, PF_R | PF_X, PF_W))
            bad = "return hook outside executable code";
    }
    if (bad) {   /* i is one past the bad entry */
        snprintf(why, len, "entry %u (%.60s+0x%x): %s", i - 1,
                 x->name_off < t->strings_size ? strings + x->name_off
                 : x->name_off == KPRW_NAME_FDE ? KPRW_FDE_PREFIX : x->name_off == KPRW_NAME_FOUND ? KPRW_FOUND_PREFIX
                 : (x->name_off & KPRW_NAME_DYN) ? "(dynamic name)" : "?",
                 x->offset, bad);
        return why;
    }
    return NULL;
}
