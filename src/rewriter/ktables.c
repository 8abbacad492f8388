/* One table-driven reader for every vmlinux table that names code sites. */
#include "ktables.h"
#include "facts.h"
#include "../arch/x86/decode.h"
#include "../arch/isa.h"
#include "../util/array.h"
#include "../util/checked.h"
#include "krelocs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUSH(a, ...) ARRAY_PUSH((a).v, (a).n, (a).cap, __VA_ARGS__)

bool ktable_padding_symbol(const struct image *img, const char *name)
{
    const struct isa_kernel *k = img->isa->kernel;
    for (size_t i = 0; k && i < k->npadding_prefixes; i++)
        if (strncmp(name, k->padding_prefixes[i], strlen(k->padding_prefixes[i])) == 0)
            return true;
    return false;
}

/* Locate a table: the __start/__stop symbols (exact: sections such as
 * .smp_locks are padded to a page), else its own section. */
static bool locate(const struct facts_build *c, const struct ktable_desc *d, const uint8_t **data,
                   uint64_t *vaddr, uint64_t *size)
{
    const struct section *s = image_section_by_name(c->img, d->section);
    uint64_t a, b;
    size_t avail;

    if (symbols_addr_of(c->sy, d->start_sym, &a) && symbols_addr_of(c->sy, d->stop_sym, &b) && b >= a) {
        *data = image_read(c->img, a, &avail);
        if (b == a || (*data && avail >= b - a)) {
            *vaddr = a; *size = b - a;
            return b > a;
        }
    }
    if (s && s->data && s->size) {
        *data = s->data; *vaddr = s->addr; *size = s->size;
        return true;
    }
    return false;
}

/* Zero entries are padding: a NULL pointer, or a relative one naming itself. */
static bool padding(const struct ktable_desc *d, const uint8_t *e)
{
    static const uint8_t zero[8];
    return memcmp(e + d->site_off, zero, d->enc == KT_SITE_ABS64 ? 8 : 4) == 0;
}

static uint64_t site_of(const struct ktable_desc *d, const uint8_t *e, uint64_t eaddr)
{
    if (d->enc == KT_SITE_ABS64) {
        uint64_t v;
        memcpy(&v, e + d->site_off, 8);
        return v;
    }
    int32_t r;
    memcpy(&r, e + d->site_off, 4);
    return eaddr + d->site_off + (int64_t)r;
}

static unsigned site_len(const struct facts_build *c, const struct ktable_desc *d, const struct ktable_layout *l,
                         const uint8_t *e, uint64_t site)
{
    size_t avail = 0;
    const uint8_t *p;
    struct x86_insn in;

    switch (d->len_mode) {
    case KT_LEN_FIXED: return d->fixed_len;
    case KT_LEN_FIELD: return e[l->len_off];
    case KT_LEN_JUMP_LABEL:
        p = image_read(c->img, site, &avail);
        return c->img->isa->kernel->jump_label_len(p, avail);
    case KT_LEN_INSN:
        p = image_read(c->img, site, &avail);
        return p ? x86_decode(p, avail, site, &in) : 0;
    }
    return 0;
}

/* An alternative's replacement (KT_CHK_ALT_REPL entries): its address and
 * length, as the ISA lays its entries out. */
static uint64_t alt_repl(const struct facts_build *c, const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr,
                         unsigned *len)
{
    return c->img->isa->kernel->alt_replacement(l, e, eaddr, len);
}

/* Does every entry make sense with this layout? */
static bool layout_fits(const struct facts_build *c, const struct ktable_desc *d, const struct ktable_layout *l,
                        const uint8_t *data, uint64_t vaddr, uint64_t size)
{
    const struct section *repl = image_section_by_name(c->img, ".altinstr_replacement");
    if (size % l->entsize)
        return false;
    for (uint64_t off = 0; off < size; off += l->entsize) {
        const uint8_t *e = data + off;
        uint64_t site = site_of(d, e, vaddr + off);
        if (padding(d, e))
            continue;   /* linker padding: the kernel skips NULL entries too */
        if (!image_is_exec_addr(c->img, site))
            return false;
        if (d->check == KT_CHK_BUG) {
            size_t avail;
            const uint8_t *p = image_read(c->img, site, &avail);
            if (!c->img->isa->kernel->is_bug_site(p, avail))
                return false;
        }
        if (d->check == KT_CHK_ALT_REPL && repl) {
            unsigned repllen;
            uint64_t to = alt_repl(c, l, e, vaddr + off, &repllen);
            if (!ck_within(to, repllen, repl->addr, repl->size) || e[l->len_off] < repllen)
                return false;
        }
    }
    return true;
}

/* What an alternative's form (its original, or a replacement) at [at, at +
 * len) of img needs to be put back at another address (FOLLOW_*): the
 * ISA's answer, FOLLOW_NONE when it is not in the file. */
static uint8_t alt_form(const struct image *img, uint64_t at, unsigned len, bool original)
{
    size_t avail;
    const uint8_t *p = image_read(img, at, &avail);
    if (!p || avail < len)
        return FOLLOW_NONE;
    return img->isa->kernel->alt_form(p, len, at, original);
}

/* Can a site of a KT_ACT_FOLLOW table move into a copy, and how is it put
 * back (FOLLOW_*)? A return site moves when the ISA says the kernel
 * patches its copy as it would the site (x86-64: one jmp rel32 to the
 * return thunk, which apply_returns() patches). An alternative moves where
 * alt_form() says its original and replacement can, and it is not one the
 * kernel patches by the site's address (6.12's ALT_FLAG_DIRECT_CALL). The
 * kernel patches the copy as it would the site (by CPU feature, not by
 * address). */
static uint8_t follows(const struct facts_build *c, const struct ktable_desc *d, const struct ktable_layout *l,
                       const uint8_t *e, uint64_t eaddr, uint64_t site, unsigned len)
{
    const struct isa_kernel *k = c->img->isa->kernel;
    size_t avail;
    const uint8_t *p = image_read(c->img, site, &avail);
    if (!p)
        return FOLLOW_NONE;
    if (d->id == KT_RETURN)
        return k->return_site_moves(p, avail, site, len) ? FOLLOW_RETURN : FOLLOW_NONE;
    if (d->id != KT_ALTINSTR || d->check != KT_CHK_ALT_REPL)
        return FOLLOW_NONE;
    if (k->alt_by_address(l, e))
        return FOLLOW_NONE;
    unsigned rlen;
    uint64_t repl = alt_repl(c, l, e, eaddr, &rlen);
    uint8_t a = alt_form(c->img, site, len, true), b = alt_form(c->img, repl, rlen, false);
    return a == FOLLOW_NONE || b == FOLLOW_NONE ? FOLLOW_NONE : a == FOLLOW_REAIM || b == FOLLOW_REAIM ? FOLLOW_REAIM
                                                                                                       : FOLLOW_COPY;
}

/* Code outside every function that may run and branch into functions:
 * each direct branch of [addr, addr + len) (p, avail bytes readable) out of
 * it is a control-flow target, named from `from` (0: the branch itself).
 * An undecodable byte ends the walk, or with resync is skipped (padding). */
static int branches_out(struct facts_build *c, const uint8_t *p, size_t avail, uint64_t addr, uint64_t len, uint64_t from,
                        uint8_t table, bool resync)
{
    struct x86_insn in;
    for (uint64_t off = 0, n; p && off < len && off < avail; off += n) {
        n = x86_decode(p + off, avail - off, addr + off, &in);
        if (!n) {
            if (!resync)
                break;
            n = 1;
            continue;
        }
        if (x86_has_target(&in) && (in.target < addr || in.target >= addr + len)) {
            struct kref t = { in.target, from ? from : addr + off, table };
            if (!PUSH(c->targets, t))
                return -1;
        }
    }
    return 0;
}

/* An alternative's replacement runs where its site is once the kernel
 * patched it in: each branch it makes out of itself is a control-flow
 * target like any (landing inside a DCR, it would land on the jump's
 * bytes). */
static int repl_targets(struct facts_build *c, const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr)
{
    unsigned len;
    uint64_t repl = alt_repl(c, l, e, eaddr, &len);
    size_t avail = 0;
    const uint8_t *p = image_read(c->img, repl, &avail);
    return branches_out(c, p, avail, repl, len, eaddr, KT_ALTINSTR, false);
}

/* The table d at data (vaddr, size bytes). */
static int read_entries(struct facts_build *c, const struct ktable_desc *d, const uint8_t *data, uint64_t vaddr,
                        uint64_t size, struct kfacts *kf, char *err, size_t errlen)
{
    const struct ktable_layout *l = NULL;

    for (const struct ktable_layout *cand = d->layouts; cand->entsize; cand++)
        if (layout_fits(c, d, cand, data, vaddr, size)) {
            l = cand;
            break;
        }
    if (!l) {
        snprintf(err, errlen, "%s: table %s (%llu bytes at 0x%llx): entry layout not recognised; "
                 "refusing to guess", c->img->path, ktable_name(d->id), (unsigned long long)size,
                 (unsigned long long)vaddr);
        return -1;
    }
    kf->entsize[d->id] = l->entsize;
    for (uint64_t off = 0; off < size; off += l->entsize) {
        const uint8_t *e = data + off;
        uint64_t site = site_of(d, e, vaddr + off);
        if (padding(d, e))
            continue;
        kf->count[d->id]++;
        if (d->check == KT_CHK_ALT_REPL && repl_targets(c, l, e, vaddr + off) < 0)
            goto oom;
        if (d->target_off >= 0) {
            int32_t r;
            memcpy(&r, e + d->target_off, 4);
            struct kref t = { vaddr + off + (uint64_t)d->target_off + (int64_t)r, vaddr + off,
                              (uint8_t)d->id };
            if (!PUSH(c->targets, t))
                goto oom;
        }
        if (d->action == KT_ACT_BLACKLIST) {
            const struct func *fn = symbols_func_at(c->sy, site);
            struct krange r = { site, fn ? ck_u32(fn->end - site) : 1, (uint8_t)d->id, 0, 0, 0, 0, 0 };
            if (!PUSH(c->blacklist, r))
                goto oom;
            continue;
        }
        if (d->action == KT_ACT_EXTABLE) {
            /* Not a reserved range: the analysis refuses the faulting
             * instruction and int3s a DCR holding it (exception-table),
             * which a reserved:__ex_table verdict would hide; and the whole
             * function where the fixup lands in code no function covers
             * (its way back is not decoded) */
            int32_t r;
            memcpy(&r, e + d->target_off, 4);
            uint64_t fixup = vaddr + off + (uint64_t)d->target_off + (int64_t)r;
            if (!PUSH(c->extable, site) || (!symbols_func_at(c->sy, fixup) && !PUSH(c->extable_blind, site)))
                goto oom;
            continue;
        }
        struct krange r = { site, site_len(c, d, l, e, site), (uint8_t)d->id, 0, 0, 0, 0,
                            d->action == KT_ACT_PASS };
        if (r.len == 0)
            r.len = 1;
        if (d->action == KT_ACT_FOLLOW && d->enc == KT_SITE_REL32 && c->img->kind == IMG_VMLINUX &&
            (r.follow = follows(c, d, l, e, vaddr + off, site, r.len)))
            r.field = vaddr + off + d->site_off;
        if (!PUSH(c->reserved, r))
            goto oom;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory reading %s", c->img->path, ktable_name(d->id));
    return -1;
}

/* Every table d describes: one a section whose name starts with d's
 * (section "PREFIX*": one section a variable), or the one locate() finds. */
static int read_table(struct facts_build *c, const struct ktable_desc *d, struct kfacts *kf, char *err, size_t errlen)
{
    const uint8_t *data;
    uint64_t vaddr, size;
    size_t n = d->section ? strlen(d->section) : 0;

    if (n && d->section[n - 1] == '*') {
        for (size_t i = 0; i < c->img->nsecs; i++) {
            const struct section *s = &c->img->secs[i];
            if (strncmp(s->name, d->section, n - 1) == 0 && (s->flags & SHF_ALLOC) && s->data && s->size &&
                read_entries(c, d, s->data, s->addr, s->size, kf, err, errlen) < 0)
                return -1;
        }
        return 0;
    }
    return locate(c, d, &data, &vaddr, &size) ? read_entries(c, d, data, vaddr, size, kf, err, errlen) : 0;
}

/* The branches out of the code sections outside functions that jump into
 * them (the ISA's kernel->branching): decoded straight through (stubs, no
 * data). */
static int read_branching_code(struct facts_build *c)
{
    const struct isa_kernel *k = c->img->isa->kernel;
    for (size_t i = 0; i < k->nbranching; i++) {
        const struct section *s = image_section_by_name(c->img, k->branching[i]);
        if (s && s->data && s->size &&
            branches_out(c, s->data, s->size, s->addr, s->size, 0, KT_CODE_BRANCHING, true) < 0)
            return -1;
    }
    return 0;
}

/* Does symbol symi of symtab lie in a vmlinux's zero-based per-cpu area,
 * as its ISA says (x86-64: arch/x86/tools/relocs.c's is_percpu_sym)? */
static bool percpu_ref(const struct facts_build *c, const struct section *symtab, uint32_t symi)
{
    Elf64_Sym sym;
    const struct isa_kernel *k = c->img->isa->kernel;
    if (c->img->kind != IMG_VMLINUX || !k->percpu_symbol || !symtab || !symtab->data ||
        ((uint64_t)symi + 1) * sizeof sym > symtab->size)
        return false;
    memcpy(&sym, symtab->data + symi * sizeof sym, sizeof sym);
    if (sym.st_shndx >= c->img->nsecs)
        return false;
    const struct section *str = symtab->link < c->img->nsecs ? &c->img->secs[symtab->link] : NULL;
    const char *name = "";
    if (str && str->data && sym.st_name < str->size && memchr(str->data + sym.st_name, 0, str->size - sym.st_name))
        name = (const char *)str->data + sym.st_name;
    return k->percpu_symbol(c->img->secs[sym.st_shndx].name, name);
}

/* A vmlinux linked with --emit-relocs whose code's relocations were then
 * stripped (6.12's arch/x86/Makefile.postlink, after writing
 * vmlinux.relocs): some of its (unallocated) .rela sections survive
 * (.relaruntime_*), none for code. Baking it blind would put probes where KASLR patches at boot. */
static bool relocs_stripped(const struct image *img)
{
    const struct section *s;
    bool any = false;
    for (size_t i = 0; (s = image_next_rela(img, &i));) {
        if (s->flags & SHF_ALLOC)
            continue;   /* dynamic relocations (a static program's .rela.plt), not --emit-relocs' */
        any = true;
        if (s->info && s->info < img->nsecs && (img->secs[s->info].flags & SHF_EXECINSTR))
            return false;
    }
    return any;
}

static int read_relocs_file(struct facts_build *c, struct kfacts *kf, const char *path, char *err, size_t errlen)
{
    struct krelocs_site *v;
    size_t n;
    if (c->img->kind != IMG_VMLINUX) {
        snprintf(err, errlen, "%s: --relocs is for a vmlinux (give --kernel)", c->img->path);
        return -1;
    }
    if (krelocs_read(path, &v, &n, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!image_is_exec_addr(c->img, v[i].addr))
            continue;
        /* (not movable: the relocs file was written before; nothing here rewrites it) */
        struct krange kr = { v[i].addr, v[i].len, KT_RELOC, 0, 0, 0, 0, 0 };
        kf->count[KT_RELOC]++;
        if (!PUSH(c->reserved, kr)) {
            snprintf(err, errlen, "%s: out of memory reading relocations", path);
            free(v);
            return -1;
        }
    }
    free(v);
    return 0;
}

/* A vmlinux's code relocations, which KASLR applies: none to read for a
 * module's preview (the loader relocates a copied instruction as the
 * original); an error for a vmlinux whose .rela sections of code were
 * stripped; else the generic reader's, with the kernel's inverse per-cpu
 * relocations, the 4-byte ones movable into a detour's copy. */
static int read_relocs(struct facts_build *c, struct kfacts *kf, bool module, char *err, size_t errlen)
{
    static const struct reloc_rules kernel = { percpu_ref, true };
    if (module)
        return 0;
    if (c->img->kind == IMG_VMLINUX && relocs_stripped(c->img)) {
        snprintf(err, errlen, "%s: its code's relocations were stripped (the arch's post-link step, as "
                 "6.12's): give --relocs with the vmlinux.relocs written from it, or bake before that step",
                 c->img->path);
        return -1;
    }
    return facts_read_relocs(c, kf, &kernel, err, errlen);
}

/* Ranges that are blacklisted as a whole: by section, or by start/end symbols. */
static int read_blacklist_ranges(struct facts_build *c, bool module, char *err, size_t errlen)
{
    static const struct { enum ktable_id id; const char *sec, *a, *b; } ranges[] = {
        { KT_KPROBES_TEXT, ".kprobes.text", "__kprobes_text_start", "__kprobes_text_end" },
        { KT_NOINSTR_TEXT, ".noinstr.text", "__noinstr_text_start", "__noinstr_text_end" },
        { KT_ENTRY_TEXT, ".entry.text", "__entry_text_start", "__entry_text_end" },
        /* freed after boot: the runtime could not patch it live (kprobes
         * refuses it too) */
        { KT_INIT_TEXT, ".init.text", "_sinittext", "_einittext" },
        /* a vmlinux's: built-in code's exit functions, which never run and
         * are freed with the init memory (a module's runs at rmmod) */
        { KT_EXIT_TEXT, ".exit.text", NULL, NULL },
        /* static calls' trampolines: static_call_update() rewrites their
         * jmp at run time, over a detour's jump (and a probe disabled
         * later would put the old target back) */
        { KT_STATIC_CALL_TEXT, ".static_call.text", "__static_call_text_start", "__static_call_text_end" },
        /* the boot code at the start of .text, which runs before the kernel
         * is at its link address (identity-mapped, or 32-bit before
         * paging): bounded by symbols integrate.sh adds */
        { KT_HEAD_TEXT, ".head.text", "__kprewrite_head_text_start", "__kprewrite_head_text_end" },
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        const struct section *s = image_section_by_name(c->img, ranges[i].sec);
        uint64_t a = 0, b = 0;
        if (ranges[i].id == KT_EXIT_TEXT && module)
            continue;
        if (s && s->size) {
            a = s->addr; b = ck_end(s->addr, s->size);
        } else if (!ranges[i].a || !symbols_addr_of(c->sy, ranges[i].a, &a) || !symbols_addr_of(c->sy, ranges[i].b, &b)) {
            continue;
        }
        if (b <= a)
            continue;
        struct krange r = { a, ck_u32(b - a), (uint8_t)ranges[i].id, 0, 0, 0, 0, 0 };
        if (!PUSH(c->blacklist, r))
            goto oom;
    }
    for (size_t i = 0; i < c->img->isa->kernel->nkeep; i++) {
        const struct kcode_range *k = &c->img->isa->kernel->keep[i];
        uint64_t a = 0, b = 0;
        if (!symbols_addr_of(c->sy, k->start, &a))
            continue;
        if (k->end) {
            if (!symbols_addr_of(c->sy, k->end, &b))
                continue;
        } else {
            for (size_t j = 0; j < c->sy->nfuncs && !b; j++)
                if (c->sy->funcs[j].start == a)
                    b = c->sy->funcs[j].end;
        }
        struct krange r = { a, b > a ? ck_u32(b - a) : 1, KT_ARCH_CODE, 0, 0, 0, 0, 0 };
        if (!PUSH(c->blacklist, r))
            goto oom;
    }
    for (size_t i = 0; i < c->sy->nfuncs; i++) {
        const struct func *fn = &c->sy->funcs[i];
        if (ktable_padding_symbol(c->img, fn->name)) {
            struct krange r = { fn->start, ck_u32(fn->end - fn->start), KT_CFI_PREAMBLE, 0, 0, 0, 0, 0 };
            if (r.len && !PUSH(c->blacklist, r))
                goto oom;
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", c->img->path);
    return -1;
}

int kfacts_load(struct kfacts *kf, const struct image *img, const struct symbols *sy,
                const char *relocs, bool module, char *err, size_t errlen)
{
    struct facts_build c = { .img = img, .sy = sy };

    memset(kf, 0, sizeof *kf);
    /* Kernel tables only mean something in a vmlinux; a user program that
     * happened to name a section __ex_table must not be read as one. */
    if (img->kind == IMG_VMLINUX) {
        const struct isa_kernel *k = img->isa->kernel;
        if (!k) {
            snprintf(err, errlen, "%s: kprewrite reads no %s kernel", img->path, img->isa->name);
            goto fail;
        }
        for (size_t i = 0; i < k->ntables; i++)
            if (read_table(&c, &k->tables[i], kf, err, errlen) < 0)
                goto fail;
        if (read_blacklist_ranges(&c, module, err, errlen) < 0)
            goto fail;
        if (read_branching_code(&c) < 0) {
            snprintf(err, errlen, "%s: out of memory", img->path);
            goto fail;
        }
    }
    if ((relocs ? read_relocs_file(&c, kf, relocs, err, errlen) : read_relocs(&c, kf, module, err, errlen)) < 0)
        goto fail;
    return facts_build_finish(kf, &c, err, errlen);
fail:
    facts_build_free(&c);
    return -1;
}
