/*
 * The pool an image holds and its probe table (include/kprewrite/abi.h):
 * finding the pool, reading back the probes an earlier run baked (their
 * original bytes put back), and writing the table of a plan.
 */
#include "table.h"
#include "../arch/isa.h"
#include "kind.h"
#include "plan.h"

#include <stdio.h>
#include <string.h>

int pool_malformed(const struct image *img, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: the kprewrite pool sections are malformed (not PROGBITS, too small, or "
             "text not executable, table executable, state not writable)", img->path);
    return -1;
}

int pool_user_areas(const struct image *img, struct pool_sections *ps, char *err, size_t errlen)
{
    ps->text = image_section_by_name(img, KPRW_SEC_TEXT);
    ps->table = image_section_by_name(img, KPRW_SEC_TABLE);
    ps->data = image_section_by_name(img, KPRW_SEC_DATA);
    ps->slot = image_section_by_name(img, KPRW_SEC_SLOT);
    if (!ps->text && !ps->table && !ps->data && !ps->slot) {
        snprintf(err, errlen, "%s: no kprewrite pool", img->path);
        return -2;
    }
    if (!ps->text || !ps->table || !ps->data || !ps->slot) {
        snprintf(err, errlen, "%s: no kprewrite pool (sections %s, %s, %s, %s): link the program with "
                 "`pkg-config --libs kprewrite-rt`", img->path, KPRW_SEC_TEXT, KPRW_SEC_TABLE,
                 KPRW_SEC_DATA, KPRW_SEC_SLOT);
        return -1;
    }
    /* slots may be zero-filled memory (a pool added to a library) */
    if ((!ps->slot->data && ps->slot->type != SHT_NOBITS) || ps->slot->size < 8)
        return pool_malformed(img, err, errlen);
    return 0;
}

int pool_find(const struct image *img, struct pool_sections *ps, char *err, size_t errlen)
{
    memset(ps, 0, sizeof *ps);
    int found = img->hooks->pool_areas(img, ps, err, errlen);
    if (found < 0)
        return found;
    /* state may be zero-filled memory (a pool added to a library) */
    if (!ps->text->data || !ps->table->data || (!ps->data->data && ps->data->type != SHT_NOBITS) ||
        !(ps->text->flags & SHF_EXECINSTR) || ps->table->size < sizeof(struct kprw_table))
        return pool_malformed(img, err, errlen);
    /* the table, entries and states are written and read in place */
    if (ps->table->offset % 8 || ps->table->addr % 8 || ps->data->offset % 8 || ps->data->addr % 8 ||
        (ps->slot && (ps->slot->offset % 8 || ps->slot->addr % 8))) {
        snprintf(err, errlen, "%s: the kprewrite pool sections are misaligned (table, data and slots need 8 bytes)",
                 img->path);
        return -1;
    }
    const struct kprw_table *t = (const void *)ps->table->data;
    ps->added = t->magic == KPRW_MAGIC && (t->flags & KPRW_T_ADDED_POOL);   /* a pool an earlier run added */
    return 0;
}

/* The event definitions an earlier run baked (KPRW_T_EVENTS), from defs
 * (the fixups' end) to the strings, into specs->defs. */
static int pool_existing_defs(const struct image *img, const struct kprw_table *t, const char *defs,
                              struct spec_list *specs, char *err, size_t errlen)
{
    const char *end = (const char *)t + t->strings_off;
    if (defs >= end || end[-1] != 0) {
        snprintf(err, errlen, "%s: the probe table's event definitions are empty or not terminated", img->path);
        return -1;
    }
    for (const char *d = defs; d < end; d += strlen(d) + 1)
        if (*d && spec_add_baked_def(specs, d, err, errlen) < 0)
            return -1;
    return 0;
}

int pool_existing(struct image *img, const struct pool_sections *ps, struct spec_list *specs,
                  char *err, size_t errlen)
{
    const struct kprw_table *t = (const void *)ps->table->data;
    if (t->magic == 0)
        return 0;
    if (t->magic != KPRW_MAGIC || t->version < KPRW_VERSION_MIN || t->version > KPRW_VERSION || t->entry_size != sizeof(struct kprw_entry) ||
        sizeof *t + (uint64_t)t->nentries * sizeof(struct kprw_entry) > ps->table->size ||
        (uint64_t)t->strings_off + t->strings_size > ps->table->size) {
        snprintf(err, errlen, "%s: the probe table has an unknown format (version %u): rebuild the image",
                 img->path, t->magic == KPRW_MAGIC ? t->version : 0);
        return -1;
    }
    if (t->flags & (KPRW_T_KASLR | KPRW_T_FOLLOW)) {
        /* its relocations, or the kernel's tables, point into the old detours now */
        snprintf(err, errlen, "%s: its probes moved %s into their detours: bake the vmlinux as it was linked",
                 img->path, t->flags & KPRW_T_KASLR ? "KASLR relocations" : "boot-patched sites");
        return -1;
    }
    const struct kprw_entry *e = (const void *)(t + 1);
    uint32_t nfix = t->version >= 5 ? t->nfixups : 0;
    /* (32-bit counts times small sizes: no 64-bit sum here wraps) */
    if (sizeof *t + (uint64_t)t->nentries * sizeof *e + (uint64_t)nfix * sizeof(struct kprw_fixup) > t->strings_off) {
        snprintf(err, errlen, "%s: the probe table's %u fixups overlap its strings", img->path, nfix);
        return -1;
    }
    const struct kprw_fixup *fx = (const void *)(e + t->nentries);
    if ((t->flags & KPRW_T_EVENTS) && pool_existing_defs(img, t, (const char *)(fx + nfix), specs, err, errlen) < 0)
        return -1;
    for (uint32_t i = 0; i < nfix; i++) {
        uint64_t at = ps->table->addr + (uint64_t)(int64_t)fx[i].site_rel;
        size_t off;
        if (fx[i].len > KPRW_ORIG_MAX || !image_file_offset(img, at, fx[i].len, &off) ||
            (uint64_t)fx[i].orig_off + fx[i].len > t->strings_size) {
            snprintf(err, errlen, "%s: probe table fixup %u names 0x%llx, outside the image", img->path, i,
                     (unsigned long long)at);
            return -1;
        }
        memcpy(img->map + off, (const uint8_t *)t + t->strings_off + fx[i].orig_off, fx[i].len);   /* our private copy */
    }
    for (uint32_t i = 0; i < t->nentries; i++) {
        uint64_t site = ps->table->addr + (uint64_t)e[i].site_rel;
        uint64_t copy = ps->table->addr + (uint64_t)(int64_t)e[i].code_rel + e[i].ool_off;
        bool at_copy = e[i].flags & KPRW_F_ORIG_AT_COPY;
        size_t off, copy_off = 0;
        if (e[i].dcr_len > KPRW_ORIG_MAX || !image_file_offset(img, site, e[i].dcr_len, &off) ||
            (at_copy ? !image_file_offset(img, copy, e[i].dcr_len, &copy_off)
                     : (uint64_t)e[i].orig_off + e[i].dcr_len > t->strings_size)) {
            snprintf(err, errlen, "%s: probe table entry %u names 0x%llx, outside the image", img->path, i,
                     (unsigned long long)site);
            return -1;
        }
        /* our private copy; the pool's text is not among what is put back */
        memcpy(img->map + off, at_copy ? img->map + copy_off : (const uint8_t *)t + t->strings_off + e[i].orig_off,
               e[i].dcr_len);
        char text[48];
        bool ret = e[i].kind == KPRW_KIND_R;
        /* a SYM+0 baked past ftrace's fentry call is asked for at the call
         * (the analysis puts it past the call again) */
        if ((e[i].flags & KPRW_F_AFTER_FENTRY) && img->isa->kernel)
            site -= img->isa->kernel->fentry_len;
        if (!ret || (e[i].flags & KPRW_F_KPROBE)) {
            snprintf(text, sizeof text, "0x%llx", (unsigned long long)site);
            if (spec_add_baked(specs, text, err, errlen) < 0)
                return -1;
        }
        if (ret) {
            snprintf(text, sizeof text, "0x%llx%%return", (unsigned long long)site);
            if (spec_add_baked(specs, text, err, errlen) < 0)
                return -1;
        }
    }
    return (int)t->nentries;
}

void pool_dynstr(const struct image *img, const struct image *out, struct pool_sections *ps)
{
    const struct section *s = image_section_by_name(img, ".dynstr");
    uint64_t strtab = 0;
    ps->dynstr = NULL;
    ps->dynstr_size = 0;
    ps->dynstr_vaddr = 0;
    if (!s || !s->data || !image_dynamic(img, DT_STRTAB, &strtab) || strtab != s->addr)
        return;
    ps->dynstr = (const char *)s->data;
    ps->dynstr_size = s->size;
    if (out && !image_dynamic(out, DT_STRTAB, &ps->dynstr_vaddr))
        ps->dynstr_vaddr = 0;
}

/* The entries, with where their site and code are from the header. */
static int write_entries(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                         const struct bake_plan *plan, struct kprw_entry *e, char *err, size_t errlen)
{
    for (size_t k = 0; k < plan->nentries; k++) {
        const struct plan_entry *pe = &plan->entries[k];
        const struct probe *p = &probes->v[pe->probe];
        uint64_t code = ps->text->addr + pe->off + pe->code_off;
        int64_t site_rel = (int64_t)(p->addr - ps->table->addr), code_rel = (int64_t)(code - ps->table->addr);
        if (site_rel != (int32_t)site_rel || code_rel != (int32_t)code_rel) {
            snprintf(err, errlen, "%s: %s+0x%llx: the probe table is out of 32-bit reach of the site",
                     img->path, p->sym, (unsigned long long)p->off);
            return -1;
        }
        e[k] = pe->e;
        e[k].site_rel = (int32_t)site_rel;
        e[k].code_rel = (int32_t)code_rel;
    }
    return 0;
}

int table_write(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
                const struct bake_plan *plan, uint8_t *out, char *err, size_t errlen)
{
    struct kprw_table *t = (void *)(out + ps->table->offset);
    size_t n = plan->nentries;
    memset(t, 0, ps->table->size);
    if (ps->data->data)
        memset(out + ps->data->offset, 0, ps->data->size);   /* the states: zero until the runtime fills them */
    if (!n)
        return 0;
    /* the dynamic string table, where names may be left */
    int64_t dynstr_rel = ps->dynstr_vaddr ? (int64_t)(ps->dynstr_vaddr - ps->table->addr) : 0;
    if (dynstr_rel != (int32_t)dynstr_rel)
        dynstr_rel = 0;   /* out of reach: names are copied */
    if (plan->dyn_names && !dynstr_rel) {
        snprintf(err, errlen, "%s: the image's dynamic string table is out of the probe table's reach", img->path);
        return -1;
    }
    struct kprw_entry *e = (struct kprw_entry *)(t + 1);
    if (write_entries(img, ps, probes, plan, e, err, errlen) < 0)
        return -1;
    struct kprw_fixup *fx = (struct kprw_fixup *)(e + n);
    for (size_t i = 0; i < plan->nfixups; i++) {
        const struct plan_fixup *f = &plan->fixups[i];
        int64_t rel = (int64_t)(f->at - ps->table->addr);
        if (rel != (int32_t)rel) {
            snprintf(err, errlen, "%s: 0x%llx: the bytes to re-point are not in the file, or out of the table's reach",
                     img->path, (unsigned long long)f->at);
            return -1;
        }
        fx[i] = (struct kprw_fixup){ (int32_t)rel, f->orig_off, f->len, f->kind, 0 };
    }
    /* the event definitions (KPRW_T_EVENTS), then the strings and a NUL:
     * every name ends inside them */
    char *defs = (char *)(fx + plan->nfixups), *str = defs + probes->defs_size;
    if (probes->defs_size) {
        memcpy(defs, probes->defs, probes->defs_size);
        t->flags |= KPRW_T_EVENTS;
    }
    if (plan->strs.used)
        memcpy(str, plan->strs.bytes, plan->strs.used);
    str[plan->strs.used] = 0;
    const struct plan_calls *c = &plan->calls;
    t->magic = KPRW_MAGIC;
    t->version = KPRW_VERSION;
    t->entry_size = sizeof(struct kprw_entry);
    t->nentries = (uint32_t)n;
    t->nfixups = (uint32_t)plan->nfixups;
    t->strings_off = (uint32_t)(str - (char *)t);
    t->strings_size = (uint32_t)(plan->strs.used + 1);
    t->link_addr = ps->table->addr;
    t->dynstr_rel = (int32_t)dynstr_rel;
    t->state_rel = (int64_t)(ps->data->addr - ps->table->addr);
    t->tramp_rel = plan->tramp != PLAN_NONE ? (int64_t)(ps->text->addr + plan->tramp - ps->table->addr) : 0;
    if (c->kret)
        t->flags |= KPRW_T_KRET_ENTRY | KPRW_T_KRET_R11;
    if (c->enter)
        t->flags |= KPRW_T_ENTER;
    if (c->kret_return)
        t->flags |= KPRW_T_KRET_RETURN;
    if (!c->kernel)
        t->flags |= KPRW_T_ORIG_AT_COPY;
    if (plan->found_names)
        t->flags |= KPRW_T_FOUND_NAMES;
    if (c->added) {
        t->flags |= KPRW_T_ADDED_POOL;
        t->slot_rel = (int64_t)(ps->slot->addr - ps->table->addr);
    }
    /* after the strings (abi.h): the fields KASLR relocated in the
     * original bytes, then where the boot-patched sites' copies are */
    size_t at = ((size_t)t->strings_off + t->strings_size + 3) / 4 * 4;
    size_t follow_size = sizeof(struct kprw_follow) * KPRW_FOLLOW_PER_ENTRY;
    if (at + (plan->kaslr ? n * 8 : 0) + (plan->follow ? n * follow_size : 0) > ps->table->size) {
        snprintf(err, errlen, "%s: internal error: the probe table is larger than planned", img->path);
        return -1;
    }
    if (plan->kaslr) {
        uint8_t *m = (uint8_t *)t + at;
        for (size_t k = 0; k < n; k++) {
            const struct probe *p = &probes->v[plan->entries[k].probe];
            memcpy(m + 8 * k, &p->kaslr_plus, 4);
            memcpy(m + 8 * k + 4, &p->kaslr_minus, 4);
        }
        t->flags |= KPRW_T_KASLR;
        at += n * 8;
    }
    if (plan->follow) {
        for (size_t k = 0; k < n; k++)
            memcpy((uint8_t *)t + at + k * follow_size, plan->entries[k].follow, follow_size);
        t->flags |= KPRW_T_FOLLOW;
    }
    return 0;
}
