/* Filling the pool: detours, site jumps, probe table, live state. */
#include "bake.h"
#include "atomic-write.h"
#include "fentry.h"
#include "../arch/x86/decode.h"
#include "../arch/x86/detour.h"
#include "kprewrite/abi.h"
#include "../util/array.h"
#include "strtab.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* vmlinux: an area of the pool between the symbols NAME and NAME_end,
 * inside one section with file bytes; false when the symbols are missing. */
static bool kernel_area(const struct image *img, const char *name, struct section *area, bool *bad)
{
    char end[64];
    uint64_t a, b;
    snprintf(end, sizeof end, "%s_end", name);
    if (!image_symbol(img, name, &a) || !image_symbol(img, end, &b))
        return false;
    const struct section *s = image_section_at(img, a);
    if (b <= a || !s || !s->data || b > s->addr + s->size) {
        *bad = true;
        return true;
    }
    *area = *s;
    area->name = name;
    area->addr = a;
    area->size = b - a;
    area->offset = s->offset + (a - s->addr);
    area->data = s->data + (a - s->addr);
    return true;
}

int pool_find(const struct image *img, struct pool_sections *ps, char *err, size_t errlen)
{
    memset(ps, 0, sizeof *ps);
    bool kernel = img->kind == IMG_VMLINUX;   /* no slot: detours call the runtime directly */
    if (kernel) {
        static const char *const names[3] = { KPRW_STR(KPRW_KPOOL_TEXT), KPRW_STR(KPRW_KPOOL_TABLE),
                                              KPRW_STR(KPRW_KPOOL_STATE) };
        bool bad = false;
        int found = 0;
        for (int i = 0; i < 3; i++)
            found += kernel_area(img, names[i], &ps->kernel_area[i], &bad);
        if (found == 0) {
            snprintf(err, errlen, "%s: no kprewrite pool: build the kernel with CONFIG_KPREWRITE=y (doc/kernel.md)",
                     img->path);
            return -2;
        }
        if (found < 3 || bad) {
            snprintf(err, errlen, "%s: the kernel's kprewrite pool is incomplete or malformed (symbols "
                     KPRW_STR(KPRW_KPOOL_TEXT) ", _table, _state and their _end)", img->path);
            return -1;
        }
        /* the kernel's .rodata is writable in the file (read-only after
         * init data): the table must lie between its rodata symbols */
        uint64_t ro_a, ro_b;
        if (image_symbol(img, "__start_rodata", &ro_a) && image_symbol(img, "__end_rodata", &ro_b) &&
            (ps->kernel_area[1].addr < ro_a || ps->kernel_area[1].addr + ps->kernel_area[1].size > ro_b)) {
            snprintf(err, errlen, "%s: the kprewrite probe table is not in the kernel's read-only data", img->path);
            return -1;
        }
        ps->text = &ps->kernel_area[0];
        ps->table = &ps->kernel_area[1];
        ps->data = &ps->kernel_area[2];
    } else {
        ps->text = image_section_by_name(img, KPRW_SEC_TEXT);
        ps->table = image_section_by_name(img, KPRW_SEC_TABLE);
        ps->data = image_section_by_name(img, KPRW_SEC_DATA);
        ps->slot = image_section_by_name(img, KPRW_SEC_SLOT);
    }
    if (!ps->text && !ps->table && !ps->data && !ps->slot) {
        snprintf(err, errlen, "%s: no kprewrite pool", img->path);
        return -2;
    }
    if (!kernel && (!ps->text || !ps->table || !ps->data || !ps->slot)) {
        snprintf(err, errlen, "%s: no kprewrite pool (sections %s, %s, %s, %s): link the program with "
                 "`pkg-config --libs kprewrite-rt`", img->path, KPRW_SEC_TEXT, KPRW_SEC_TABLE,
                 KPRW_SEC_DATA, KPRW_SEC_SLOT);
        return -1;
    }
    /* state and slots may be zero-filled memory (a pool added to a library) */
    if (!ps->text->data || !ps->table->data || (!ps->data->data && ps->data->type != SHT_NOBITS) ||
        (!kernel && ((!ps->slot->data && ps->slot->type != SHT_NOBITS) || ps->slot->size < 8)) ||
        !(ps->text->flags & SHF_EXECINSTR) || ps->table->size < sizeof(struct kprw_table) ||
        (kernel && ((ps->table->flags & SHF_EXECINSTR) || !(ps->data->flags & SHF_WRITE)))) {
        snprintf(err, errlen, "%s: the kprewrite pool sections are malformed (not PROGBITS, too small, or "
                 "text not executable, table executable, state not writable)", img->path);
        return -1;
    }
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
    const struct kprw_entry *e = (const void *)(t + 1);
    uint32_t nfix = t->version >= 5 ? t->nfixups : 0;
    const struct kprw_fixup *fx = (const void *)(e + t->nentries);
    if ((uint64_t)((const uint8_t *)(fx + nfix) - (const uint8_t *)t) > t->strings_off) {
        snprintf(err, errlen, "%s: the probe table's %u fixups overlap its strings", img->path, nfix);
        return -1;
    }
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


/* Bytes changed outside the sites (struct kprw_fixup), listed in the table
 * with their original bytes so that a later run can put them back. */
struct fixups {
    struct kprw_fixup *v;
    size_t n, cap;
};

/* Write len bytes at addr into out (unless measuring: out NULL) and list
 * the original ones. */
static int fix(const struct image *img, uint8_t *out, uint64_t addr, const uint8_t *bytes, unsigned len,
               enum kprw_fixup_kind kind, uint64_t table_addr, struct strtab *strs, struct fixups *fx,
               char *err, size_t errlen)
{
    size_t off;
    int64_t rel = (int64_t)(addr - table_addr);
    if (!image_file_offset(img, addr, len, &off) || rel != (int32_t)rel) {
        snprintf(err, errlen, "%s: 0x%llx: the bytes to re-point are not in the file, or out of the table's reach",
                 img->path, (unsigned long long)addr);
        return -1;
    }
    int64_t o = strtab_add(strs, img->map + off, len);
    if (o < 0 || !ARRAY_RESERVE(fx->v, fx->cap, fx->n + 1)) {
        snprintf(err, errlen, "%s: out of memory", img->path);
        return -1;
    }
    fx->v[fx->n++] = (struct kprw_fixup){ (int32_t)rel, (uint32_t)o, (uint8_t)len, (uint8_t)kind, 0 };
    if (out)
        memcpy(out + off, bytes, len);
    return 0;
}

/* A probe's retargets: each branch or jump-table entry that lands inside
 * its DCR now lands on the same instruction's copy in its detour (at +
 * map->off[k] for the DCR's byte k), a rel8 branch through a trampoline. */
static int retarget(const struct image *img, uint8_t *out, const struct probe *p, uint64_t at,
                    const struct x86_copy_map *map, uint64_t table_addr, struct strtab *strs, struct fixups *fx,
                    char *err, size_t errlen)
{
    for (size_t k = 0; k < p->nretargets; k++) {
        const struct retarget *t = &p->retargets[k];
        uint64_t d = t->target - p->addr;
        if (d >= X86_COPY_MAX || map->off[d] == 0xffff) {
            snprintf(err, errlen, "%s: %s+0x%llx: 0x%llx is no instruction of its DCR", img->path, p->sym,
                     (unsigned long long)p->off, (unsigned long long)t->target);
            return -1;
        }
        uint64_t to = at + map->off[d];
        uint8_t b[16];
        size_t avail;
        const uint8_t *orig = image_read(img, t->at, &avail);
        bool ok = orig && avail >= t->len;
        enum kprw_fixup_kind kind = KPRW_FIX_TABLE;
        if (ok && t->kind == RT_BRANCH) {
            ok = x86_retarget(orig, t->len, t->at, to, b);
            kind = KPRW_FIX_BRANCH;
        } else if (ok && t->kind == RT_BRANCH8) {
            uint8_t j[X86_JMP32_LEN];
            ok = x86_emit_jmp32(t->tramp, to, j) && x86_retarget(orig, t->len, t->at, t->tramp, b);
            if (ok && fix(img, out, t->tramp, j, sizeof j, KPRW_FIX_TRAMPOLINE, table_addr, strs, fx, err, errlen) < 0)
                return -1;
            kind = KPRW_FIX_BRANCH8;
        } else if (ok && t->kind == RT_TABLE4) {
            int64_t v = (int64_t)(to - t->base);
            int32_t v32 = (int32_t)v;
            ok = v == v32;
            memcpy(b, &v32, 4);
        } else if (ok) {
            memcpy(b, &to, 8);
        }
        if (!ok) {
            snprintf(err, errlen, "%s: %s+0x%llx: the %s at 0x%llx cannot reach the DCR's copy", img->path,
                         p->sym, (unsigned long long)p->off, t->kind >= RT_TABLE4 ? "table entry" : "branch",
                         (unsigned long long)t->at);
            return -1;
        }
        if (fix(img, out, t->at, b, t->len, kind, table_addr, strs, fx, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Is name one of the image's dynamic strings, which the runtime finds in
 * memory (a whole string: it ends there too)? */
static bool in_dynstr(const struct pool_sections *ps, const char *name)
{
    return ps->dynstr_vaddr && ps->dynstr && name >= ps->dynstr && name < ps->dynstr + ps->dynstr_size &&
           (size_t)(name - ps->dynstr) < KPRW_NAME_DYN && memchr(name, 0, ps->dynstr_size - (size_t)(name - ps->dynstr));
}

static bool bakeable(const struct probe *p)
{
    return p->verdict == V_OPTIMIZED || p->verdict == V_INT3;
}

static const struct probe *sort_base;
static int cmp_index_addr(const void *a, const void *b)
{
    uint64_t x = sort_base[*(const size_t *)a].addr, y = sort_base[*(const size_t *)b].addr;
    return x < y ? -1 : x > y;
}

/* A kprobe and a return probe at one address share one entry (kind 'r',
 * flag KPRW_F_KPROBE): the site has one jump. twinned[i]: probes->v[i] has
 * a bakeable probe of the other kind at its address. One sort, not a scan
 * per probe (every entry of a large program may be probed). NULL: no
 * memory. */
/* Which probes share their address with a twin (SYM and SYM%return), and
 * (*order, *norder) the bakeable probes in address order: entries are
 * written in that order, so the runtime's trap index needs no sort. */
static bool *find_twins(const struct probe_list *probes, size_t **order, size_t *norder)
{
    bool *twinned = calloc(probes->n ? probes->n : 1, sizeof *twinned);
    size_t *idx = malloc((probes->n ? probes->n : 1) * sizeof *idx);
    if (!twinned || !idx) {
        free(twinned);
        free(idx);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < probes->n; i++)
        if (bakeable(&probes->v[i]))
            idx[m++] = i;
    sort_base = probes->v;
    sort_array(idx, m, sizeof *idx, cmp_index_addr);
    for (size_t a = 0, b; a < m; a = b) {
        bool k = false, r = false;
        for (b = a; b < m && probes->v[idx[b]].addr == probes->v[idx[a]].addr; b++) {
            r |= probes->v[idx[b]].is_return;
            k |= !probes->v[idx[b]].is_return;
        }
        for (size_t j = a; j < b; j++)
            twinned[idx[j]] = k && r;
    }
    *order = idx;
    *norder = m;
    return twinned;
}

/* Does probes->v[i] get a table entry of its own? */
static bool own_entry(const struct probe_list *probes, const bool *twinned, size_t i)
{
    return bakeable(&probes->v[i]) && (probes->v[i].is_return || !twinned[i]);
}

int bake(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
         const char *out_path, struct bake_result *res, char *err, size_t errlen)
{
    size_t n = 0;
    bool returns = false, measure = out_path == NULL;
    memset(res, 0, sizeof *res);
    size_t *order = NULL, norder = 0;
    bool *twinned = find_twins(probes, &order, &norder);
    uint8_t *out = NULL;
    struct kprw_entry *e = NULL;   /* the table's entries and strings, built here */
    struct strtab strs = { 0 };
    struct fixups fx = { 0 };
    if (!twinned) {
        snprintf(err, errlen, "%s: out of memory", img->path);
        return -1;
    }
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        if (own_entry(probes, twinned, i)) {
            n++;
            returns |= p->is_return;
        }
    }
    bool kernel = img->kind == IMG_VMLINUX;
    if (kernel && !ps->kernel_dispatch) {
        snprintf(err, errlen, "%s: the kernel has a kprewrite pool but no %s: build it with CONFIG_KPREWRITE=y",
                 img->path, KPRW_KERNEL_DISPATCH);
        goto fail;
    }
    if (returns && kernel) {
        snprintf(err, errlen, "%s: return probes (%%return) are not baked into a kernel yet", img->path);
        goto fail;
    }
    if (returns && ps->slot->size < 16 && !measure) {
        snprintf(err, errlen, "%s: the pool predates return probes (%s has %llu bytes, needs 16): relink the "
                 "program with the current libkprewrite-pool", img->path, KPRW_SEC_SLOT,
                 (unsigned long long)ps->slot->size);
        goto fail;
    }
    uint8_t *text = NULL, *table = NULL, *data = NULL;
    if (!measure) {
        out = malloc(img->map_size);
        if (!out) {
            snprintf(err, errlen, "%s: out of memory", img->path);
            goto fail;
        }
        memcpy(out, img->map, img->map_size);   /* original bytes already restored at old sites */
        text = out + ps->text->offset, table = out + ps->table->offset;
        data = ps->data->data ? out + ps->data->offset : NULL;   /* NULL: zero-filled memory */
        x86_fill_int3(text, ps->text->size);
        memset(table, 0, ps->table->size);
        if (data)
            memset(data, 0, ps->data->size);   /* the states: zero until the runtime fills them */
    }
    /* In measure mode nothing is written: every write below checks that
     * its section is big enough, and a measured pool has size 0. */
    uint64_t text_size = measure ? 0 : ps->text->size;

    /* the dynamic string table, where names may be left (in_dynstr) */
    int64_t dynstr_rel64 = ps->dynstr_vaddr ? (int64_t)(ps->dynstr_vaddr - ps->table->addr) : 0;
    int32_t dynstr_rel = (int32_t)dynstr_rel64;
    struct pool_sections psn = *ps;
    if (dynstr_rel64 != dynstr_rel)
        psn.dynstr_vaddr = 0, dynstr_rel = 0;   /* out of reach: copy the names */
    ps = &psn;
    size_t data_need = n * sizeof(struct kprw_state);
    struct kprw_table *t = (void *)table;
    /* entries and strings are built here, then copied when they fit */
    e = calloc(n ? n : 1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", img->path);
        goto fail;
    }
    size_t text_used = 0, k = 0;
    uint8_t det[DETOUR_MAX > OOL_MAX ? DETOUR_MAX : OOL_MAX];
    uint64_t tramp = 0;
    /* Where detours call the runtime: the slots, or thunks reading them. */
    uint64_t call_dispatch = kernel ? ps->kernel_dispatch : ps->slot->addr,
             call_return = kernel ? 0 : ps->slot->addr + KPRW_SLOT_OFF(KPRW_SLOT_RETURN),
             /* a pool linked or added before the third slot: the old entry */
             call_kret = !kernel && ps->slot->size >= KPRW_SLOTS_KRET_ENTRY ? ps->slot->addr + KPRW_SLOT_OFF(KPRW_SLOT_KRET_ENTER) : 0,
             /* before the fourth: the detour carries the return frame */
             jmp_kret_return = !kernel && ps->slot->size >= KPRW_SLOTS_KRET_RETURN
                                   ? ps->slot->addr + KPRW_SLOT_OFF(KPRW_SLOT_KRET_RETURN) : 0,
             /* before the fifth: no compact detours */
             call_enter = !kernel && ps->compact_entries && ps->slot->size >= KPRW_SLOTS_SIZE
                              ? ps->slot->addr + KPRW_SLOT_OFF(KPRW_SLOT_ENTER) : 0;
    if (ps->added) {
        for (int th = 0; th < KPRW_NSLOTS; th++) {
            if ((th == KPRW_SLOT_KRET_ENTER && !call_kret) || th == KPRW_SLOT_KRET_RETURN || (th == KPRW_SLOT_ENTER && !call_enter))
                continue;   /* the return slot is jumped through by the detours themselves */
            uint64_t at = ps->text->addr + text_used;
            uint64_t slot = ps->slot->addr + KPRW_SLOT_OFF((uint64_t)th);
            size_t len = th == KPRW_SLOT_KRET_ENTER ? x86_emit_kret_slot_thunk(at, slot, det)
                       : th == KPRW_SLOT_ENTER ? x86_emit_enter_slot_thunk(at, slot, det) : x86_emit_slot_thunk(at, slot, det);
            if (!len) {
                snprintf(err, errlen, "%s: %s is out of rel32 reach of %s", img->path, KPRW_SEC_SLOT, KPRW_SEC_TEXT);
                goto fail;
            }
            if (text_used + len <= text_size)
                memcpy(text + text_used, det, len);
            *(th == KPRW_SLOT_ENTER ? &call_enter : th == KPRW_SLOT_KRET_ENTER ? &call_kret
              : th == KPRW_SLOT_RETURN ? &call_return : &call_dispatch) = at;
            text_used = (text_used + len + 15) & ~(size_t)15;
        }
    }
    if (ps->shared_detours && kernel) {
        snprintf(err, errlen, "%s: shared detours are for user-space images (use --detours=inline)", img->path);
        goto fail;
    }
    uint64_t common[2] = { 0, 0 };   /* the shared detours' bodies: flags dead, flags live */
    for (int f = 0; ps->shared_detours && f < 2; f++) {
        uint64_t at = ps->text->addr + text_used;
        size_t len = x86_emit_shared_common(at, call_dispatch, ps->added, f == 1, det);
        if (!len) {
            snprintf(err, errlen, "%s: %s is out of rel32 reach of %s", img->path, KPRW_SEC_SLOT, KPRW_SEC_TEXT);
            goto fail;
        }
        if (text_used + len <= text_size)
            memcpy(text + text_used, det, len);
        common[f] = at;
        text_used = (text_used + len + 15) & ~(size_t)15;
    }

    /* windows evicted for trampolines: a jmp to a stub running them, then
     * int3 where trampolines go (written with their probes, below) */
    for (size_t w = 0; w < probes->nev; w++) {
        const struct eviction *ev = &probes->ev[w];
        size_t avail;
        const uint8_t *orig = image_read(img, ev->at, &avail);
        uint64_t at = ps->text->addr + text_used;
        uint8_t win[256];
        char derr[200];
        size_t len = orig && avail >= ev->len ? x86_emit_ool(at, ev->at, orig, ev->len, det, derr, sizeof derr) : 0;
        if (!len || !x86_emit_evicted_window(ev->at, at, ev->len, win)) {
            snprintf(err, errlen, "%s: the window evicted at 0x%llx: %s", img->path, (unsigned long long)ev->at,
                     len ? "the pool is out of jump reach" : orig ? derr : "not in the file");
            goto fail;
        }
        if (fix(img, out, ev->at, win, ev->len, KPRW_FIX_EVICT, ps->table->addr, &strs, &fx, err, errlen) < 0)
            goto fail;
        if (text_used + len <= text_size)
            memcpy(text + text_used, det, len);
        text_used += len;
    }

    if (returns) {
        /* one return trampoline for the image, first in the text */
        uint64_t at = ps->text->addr + text_used;
        size_t len = x86_emit_ret_trampoline(at, call_return, ps->added, det);
        if (!len) {
            snprintf(err, errlen, "%s: %s is out of rel32 reach of %s", img->path, KPRW_SEC_SLOT, KPRW_SEC_TEXT);
            goto fail;
        }
        if (text_used + len <= text_size)
            memcpy(text + text_used, det, len);
        tramp = at;
        text_used = (text_used + len + 15) & ~(size_t)15;
    }
    for (size_t o = 0; o < norder; o++) {
        size_t i = order[o];
        const struct probe *p = &probes->v[i];
        if (!own_entry(probes, twinned, i))
            continue;
        size_t avail;
        const uint8_t *orig = image_read(img, p->addr, &avail);
        /* a taken-over fentry site: its call is the nop ftrace would have
         * made of it, in the detour and in the bytes a disabled probe gets */
        uint8_t nopped[KPRW_ORIG_MAX];
        if (orig && (p->notes & NOTE_FENTRY_TAKEOVER) && avail >= sizeof x86_nop5) {
            size_t n = avail < sizeof nopped ? avail : sizeof nopped;
            memcpy(nopped, orig, n);
            memcpy(nopped, x86_nop5, sizeof x86_nop5);
            orig = nopped;
            avail = n;
            if (!measure && fentry_take_over(img, out, p->addr, err, errlen) < 0)
                goto fail;
        }
        uint64_t state = ps->data->addr + k * sizeof(struct kprw_state);
        /* a kprobe at a call entry (flags dead, red zone free): compact */
        bool compact = call_enter && p->verdict == V_OPTIMIZED && !p->is_return && p->at_entry &&
                       !(p->notes & NOTE_FLAGS_SAVED);
        bool shared = !compact && ps->shared_detours && p->verdict == V_OPTIMIZED && !p->is_return;
        if (!shared && !compact)   /* shared and compact detours are packed; the others start on 16 bytes */
            text_used = (text_used + 15) & ~(size_t)15;
        uint64_t at = ps->text->addr + text_used, ool, entry = at;
        char derr[200];
        size_t len, dcr_off = 0, hook_off = 0;
        uint64_t hook = 0;
        unsigned site_len;   /* bytes of the site the probe owns (orig[] in the table) */
        uint8_t site_bytes[KPRW_ORIG_MAX];
        struct x86_copy_map map;
        if (compact) {
            size_t entry_off;
            len = x86_emit_compact_detour(at, p->addr, orig, p->code_len ? p->code_len : p->dcr_len, state,
                                          call_enter, ps->added, det, &entry_off, &dcr_off, &map, derr, sizeof derr);
            entry = at + entry_off;
            ool = at + dcr_off;
            site_len = p->dcr_len;
        } else if (shared) {
            size_t entry_off;
            len = x86_emit_shared_detour(at, p->addr, orig, p->code_len ? p->code_len : p->dcr_len, state,
                                         common[(p->notes & NOTE_FLAGS_SAVED) != 0], det, &entry_off, &dcr_off,
                                         &map, derr, sizeof derr);
            entry = at + entry_off;
            ool = at + dcr_off;
            site_len = p->dcr_len;
        } else if (p->verdict == V_OPTIMIZED) {
            struct detour_params dp = {
                /* the instructions; the site's bytes may reach into padding */
                .at = at, .site = p->addr, .dcr = orig, .dcr_len = p->code_len ? p->code_len : p->dcr_len, .state = state,
                .slot = call_dispatch, .save_flags = (p->notes & NOTE_FLAGS_SAVED) != 0,
                .entry_aligned = p->entry_aligned,
                /* return probes are at function entries: no live flags (ABI) */
                .ret_slot = p->is_return ? call_return : 0,
                .kret_slot = p->is_return ? call_kret : 0,
                .kret_return_slot = p->is_return ? jmp_kret_return : 0,
                .via_thunks = ps->added || kernel,
                .kernel = kernel,
            };
            len = x86_emit_detour(&dp, det, &dcr_off, &hook_off, &map, derr, sizeof derr);
            hook = p->is_return ? at + hook_off : 0;
            ool = at + dcr_off;
            site_len = p->dcr_len;
        } else {
            /* int3 at byte 0; the runtime's SIGTRAP handler resumes at the
             * out-of-line copy of the first instruction */
            struct x86_insn in;
            site_len = x86_decode(orig, avail, p->addr, &in);
            ool = at;
            if (site_len) {
                len = x86_emit_ool(at, p->addr, orig, site_len, det, derr, sizeof derr);
                /* a kernel boots with its int3 probes disarmed: an int3 met
                 * before the runtime hooks the trap would oops; it arms them */
                memcpy(site_bytes, orig, site_len);
                if (!kernel)
                    x86_fill_int3(site_bytes, 1);
            } else {
                snprintf(derr, sizeof derr, "undecodable instruction at 0x%llx", (unsigned long long)p->addr);
                len = 0;
            }
        }
        /* the site's jump: to the detour, or (a short site) to a trampoline
         * in padding that jumps there */
        if (len && p->verdict == V_OPTIMIZED &&
            !((p->notes & NOTE_JUMP8) ? x86_emit_site_jump8(p->addr, p->tramp, p->dcr_len, site_bytes)
                                      : x86_emit_site_jump(p->addr, entry, p->dcr_len, site_bytes))) {
            snprintf(derr, sizeof derr, "the pool is out of jump reach");
            len = 0;
        }
        size_t site_off;
        if (len && !image_file_offset(img, p->addr, site_len, &site_off)) {
            snprintf(derr, sizeof derr, "the site has no bytes in the file");
            len = 0;
        }
        if (!len) {
            snprintf(err, errlen, "%s: %s+0x%llx: %s", img->path, p->sym, (unsigned long long)p->off, derr);
            goto fail;
        }
        if (text_used + len <= text_size)
            memcpy(text + text_used, det, len);
        text_used += len;
        if (!measure)
            memcpy(out + site_off, site_bytes, site_len);
        if (p->verdict == V_OPTIMIZED) {
            uint8_t j[X86_JMP32_LEN];
            if ((p->notes & NOTE_JUMP8) && !x86_emit_jmp32(p->tramp, entry, j)) {
                snprintf(err, errlen, "%s: %s+0x%llx: the trampoline is out of reach of the pool", img->path,
                         p->sym, (unsigned long long)p->off);
                goto fail;
            }
            if ((p->notes & NOTE_JUMP8) &&
                fix(img, out, p->tramp, j, sizeof j, KPRW_FIX_TRAMPOLINE, ps->table->addr, &strs, &fx, err, errlen) < 0)
                goto fail;
            if (retarget(img, out, p, at, &map, ps->table->addr, &strs, &fx, err, errlen) < 0)
                goto fail;
        }
        {
            uint64_t code = p->verdict == V_OPTIMIZED ? entry : ool;
            int64_t site_rel = (int64_t)(p->addr - ps->table->addr), code_rel = (int64_t)(code - ps->table->addr);
            if (site_rel != (int32_t)site_rel || code_rel != (int32_t)code_rel) {
                snprintf(err, errlen, "%s: %s+0x%llx: the probe table is out of 32-bit reach of the site",
                         img->path, p->sym, (unsigned long long)p->off);
                goto fail;
            }
            if (ool - code > UINT8_MAX || (hook && hook - code > UINT16_MAX)) {
                snprintf(err, errlen, "%s: %s+0x%llx: the detour is too long for the probe table",
                         img->path, p->sym, (unsigned long long)p->off);
                goto fail;
            }
            e[k].site_rel = (int32_t)site_rel;
            e[k].code_rel = (int32_t)code_rel;
            e[k].ool_off = (uint8_t)(ool - code);
            e[k].hook_off = (uint16_t)(hook ? hook - code : 0);
            /* an unnamed function is named by its address: the runtime
             * spells the name, the table need not */
            char fde[32];
            snprintf(fde, sizeof fde, KPRW_FDE_PREFIX "%" PRIx64, (uint64_t)(p->addr - p->off));
            int64_t name = !kernel && strcmp(p->sym, fde) == 0 ? (int64_t)KPRW_NAME_FDE
                         : in_dynstr(ps, p->sym) ? (int64_t)(KPRW_NAME_DYN | (uint32_t)(p->sym - ps->dynstr))
                                                 : strtab_add(&strs, p->sym, strlen(p->sym) + 1);
            /* a copy that needed no relocation holds the original bytes
             * already (whether it did does not depend on where the pool
             * is, so the measuring run counts the same strings) */
            size_t copy_at = ool - at;
            bool at_copy = !kernel && len >= copy_at + site_len && memcmp(det + copy_at, orig, site_len) == 0;
            int64_t obytes = at_copy ? 0 : strtab_add(&strs, orig, site_len);
            if (name < 0 || obytes < 0) {
                snprintf(err, errlen, "%s: out of memory", img->path);
                goto fail;
            }
            e[k].name_off = (uint32_t)name;
            e[k].orig_off = (uint32_t)obytes;
            e[k].offset = (uint32_t)p->off;
            e[k].flags = ((p->notes & (NOTE_AFTER_ENDBR | NOTE_AFTER_PAD_NOP)) ? KPRW_F_AFTER_ENDBR : 0) |
                         (p->verdict == V_OPTIMIZED && (p->notes & NOTE_JUMP8) ? KPRW_F_JUMP8 : 0) |
                         ((p->notes & NOTE_FLAGS_SAVED) ? KPRW_F_FLAGS_SAVED : 0) |
                         (p->at_entry ? KPRW_F_ENTRY : 0) | (at_copy ? KPRW_F_ORIG_AT_COPY : 0) |
                         (p->is_return && twinned[i] ? KPRW_F_KPROBE : 0);
            e[k].kind = p->is_return ? KPRW_KIND_R : KPRW_KIND_K;
            e[k].verdict = p->verdict == V_OPTIMIZED ? KPRW_OPTIMIZED : KPRW_INT3;
            e[k].reason = (uint8_t)p->reason;
            e[k].dcr_len = (uint8_t)site_len;
        }
        k++;
    }
    /* the strings, then a NUL: every name ends inside them */
    size_t strings_size = strs.used + 1;
    size_t table_need = sizeof(struct kprw_table) + n * sizeof(struct kprw_entry) + fx.n * sizeof(struct kprw_fixup) +
                        strings_size;
    res->baked = n;
    res->text_used = text_used;
    res->table_used = table_need;
    res->data_used = data_need;
    if (measure)
        goto done;
    if (ps->added && (text_used > ps->text->size || table_need > ps->table->size || data_need > ps->data->size)) {
        snprintf(err, errlen, "%s: the pool kprewrite added to this image is sized for the probes it was given "
                 "(%s has %llu bytes, %zu needed): rewrite the original image with every probe you want",
                 img->path, KPRW_SEC_TEXT, (unsigned long long)ps->text->size, text_used);
        goto fail;
    }
    if (kernel && (text_used > ps->text->size || table_need > ps->table->size || data_need > ps->data->size)) {
        snprintf(err, errlen, "%s: the kernel's pool is too small for %zu probes: detours need %zu bytes (has "
                 "%llu), the table %zu (has %llu), the state %zu (has %llu); raise CONFIG_KPREWRITE_TEXT_KB, "
                 "_TABLE_KB or _DATA_KB", img->path, n, text_used, (unsigned long long)ps->text->size, table_need,
                 (unsigned long long)ps->table->size, data_need, (unsigned long long)ps->data->size);
        goto fail;
    }
    if (text_used > ps->text->size || table_need > ps->table->size || data_need > ps->data->size) {
        snprintf(err, errlen, "%s: the pool is too small for %zu probes: %s needs %zu bytes (has %llu), "
                 "%s needs %zu (has %llu), %s needs %zu (has %llu); enlarge it with KPREWRITE_POOL() "
                 "(see kprewrite/pool.h)", img->path, n, KPRW_SEC_TEXT, text_used,
                 (unsigned long long)ps->text->size, KPRW_SEC_TABLE, table_need,
                 (unsigned long long)ps->table->size, KPRW_SEC_DATA, data_need, (unsigned long long)ps->data->size);
        goto fail;
    }
    if (n) {
        memcpy(t + 1, e, n * sizeof *e);
        struct kprw_fixup *fxs = (struct kprw_fixup *)((struct kprw_entry *)(t + 1) + n);
        if (fx.n)
            memcpy(fxs, fx.v, fx.n * sizeof *fxs);
        t->nfixups = (uint32_t)fx.n;
        char *str = (char *)(fxs + fx.n);
        if (strs.used)
            memcpy(str, strs.bytes, strs.used);
        str[strs.used] = 0;
        t->magic = KPRW_MAGIC;
        t->version = KPRW_VERSION;
        t->entry_size = sizeof(struct kprw_entry);
        t->nentries = (uint32_t)n;
        t->strings_off = (uint32_t)((char *)str - (char *)t);
        t->strings_size = (uint32_t)strings_size;
        t->link_addr = ps->table->addr;
        t->dynstr_rel = dynstr_rel;
        t->state_rel = (int64_t)(ps->data->addr - ps->table->addr);
        t->tramp_rel = tramp ? (int64_t)(tramp - ps->table->addr) : 0;
        if (call_kret)
            t->flags |= KPRW_T_KRET_ENTRY | KPRW_T_KRET_R11;
        if (call_enter)
            t->flags |= KPRW_T_ENTER;
        if (jmp_kret_return)
            t->flags |= KPRW_T_KRET_RETURN;
        if (!kernel)
            t->flags |= KPRW_T_ORIG_AT_COPY;
        if (ps->added) {
            t->flags |= KPRW_T_ADDED_POOL;
            t->slot_rel = (int64_t)(ps->slot->addr - ps->table->addr);
        }
    }
    if (write_atomic(out_path, out, img->map_size, img->mode, err, errlen) < 0)
        goto fail;
done:
    free(out);
    free(twinned);
    free(order);
    free(e);
    strtab_free(&strs);
    free(fx.v);
    return 0;
fail:
    free(out);
    free(twinned);
    free(order);
    free(e);
    strtab_free(&strs);
    free(fx.v);
    return -1;
}
