/* One table-driven reader for every vmlinux table that names code sites. */
#include "ktables.h"
#include "../arch/x86/decode.h"
#include "../arch/x86/kernel-tables.h"
#include "../arch/x86/psabi.h"
#include "../util/array.h"
#include "../util/checked.h"
#include "krelocs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[KT__COUNT] = {
    [KT_EX_TABLE] = "__ex_table", [KT_ALTINSTR] = ".altinstructions", [KT_SMP_LOCKS] = ".smp_locks",
    [KT_JUMP_TABLE] = "__jump_table", [KT_STATIC_CALL] = ".static_call_sites",
    [KT_RETPOLINE] = ".retpoline_sites", [KT_RETURN] = ".return_sites", [KT_CALL_SITES] = ".call_sites",
    [KT_IBT_SEAL] = ".ibt_endbr_seal", [KT_CFI_SITES] = ".cfi_sites",
    [KT_PARAINSTR] = ".parainstructions", [KT_BUG_TABLE] = "__bug_table", [KT_MCOUNT] = "__mcount_loc",
    [KT_KPROBE_BLACKLIST] = "_kprobe_blacklist", [KT_RELOC] = "relocation", [KT_RUNTIME_CONST] = "runtime_const",
    [KT_CODE_BRANCHING] = ".altinstr_aux",
    [KT_KPROBES_TEXT] = ".kprobes.text", [KT_NOINSTR_TEXT] = ".noinstr.text",
    [KT_ENTRY_TEXT] = ".entry.text", [KT_INIT_TEXT] = ".init.text",
    [KT_EXIT_TEXT] = ".exit.text", [KT_STATIC_CALL_TEXT] = ".static_call.text",
    [KT_HEAD_TEXT] = ".head.text", [KT_CFI_PREAMBLE] = "__cfi_/__pfx_",
    [KT_ARCH_CODE] = "copied by ftrace, or CPU bring-up code",
};

const char *ktable_name(enum ktable_id id)
{
    return id < KT__COUNT ? names[id] : "?";
}

bool ktable_padding_symbol(const char *name)
{
    for (size_t i = 0; i < x86_nkpadding_prefixes; i++)
        if (strncmp(name, x86_kpadding_prefixes[i], strlen(x86_kpadding_prefixes[i])) == 0)
            return true;
    return false;
}

struct ranges { struct krange *v; size_t n, cap; };

struct ctx {
    const struct image *img;
    const struct symbols *sy;
    struct ranges reserved, blacklist;
    struct { struct kref *v; size_t n, cap; } targets;
    struct { uint64_t *v; size_t n, cap; } extable, extable_blind;
};

#define PUSH(a, ...) ARRAY_PUSH((a).v, (a).n, (a).cap, __VA_ARGS__)

/* Locate a table: the __start/__stop symbols (exact: sections such as
 * .smp_locks are padded to a page), else its own section. */
static bool locate(const struct ctx *c, const struct ktable_desc *d, const uint8_t **data,
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

static unsigned site_len(const struct ctx *c, const struct ktable_desc *d, const struct ktable_layout *l,
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
        return x86_jump_label_len(p, avail);
    case KT_LEN_INSN:
        p = image_read(c->img, site, &avail);
        return p ? x86_decode(p, avail, site, &in) : 0;
    }
    return 0;
}

/* An alternative's replacement (KT_CHK_ALT_REPL entries): its address, from
 * the s32 at +4 of entry e at eaddr, and its length (the byte after the
 * instruction's length). */
static uint64_t alt_repl(const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr, unsigned *len)
{
    int32_t r;
    memcpy(&r, e + 4, 4);
    *len = e[l->len_off + 1];
    return eaddr + 4 + (int64_t)r;
}

/* Does every entry make sense with this layout? */
static bool layout_fits(const struct ctx *c, const struct ktable_desc *d, const struct ktable_layout *l,
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
        if (d->check == KT_CHK_UD) {
            size_t avail;
            const uint8_t *p = image_read(c->img, site, &avail);
            if (!x86_is_ud_site(p, avail))
                return false;
        }
        if (d->check == KT_CHK_ALT_REPL && repl) {
            unsigned repllen;
            uint64_t to = alt_repl(l, e, vaddr + off, &repllen);
            if (!ck_within(to, repllen, repl->addr, repl->size) || e[l->len_off] < repllen)
                return false;
        }
    }
    return true;
}

/* What an alternative's form (its original, or a replacement) at [at, at +
 * len) of img needs to be put back at another address: FOLLOW_COPY when it
 * is position-independent; FOLLOW_REAIM when its only relative operands
 * are RIP-relative displacements and rel32 branches (jmp, jcc) out of it,
 * which the kernel aims from wherever it puts the form, and which the
 * runtime can aim again from the site; FOLLOW_NONE when it does not decode,
 * is a call (a kernel's DCR holds none), or has a rel8 branch out of it (or
 * the original any rel8 branch: copied out of line it would grow). */
static uint8_t alt_form(const struct image *img, uint64_t at, unsigned len, bool original)
{
    size_t avail;
    const uint8_t *p = image_read(img, at, &avail);
    struct x86_insn in;
    uint8_t how = FOLLOW_COPY;
    if (!p || avail < len)
        return FOLLOW_NONE;
    for (unsigned off = 0, n; off < len; off += n) {
        n = x86_decode(p + off, len - off, at + off, &in);
        if (!n || in.kind == XK_CALL || in.kind == XK_CALL_IND || (in.flags & XF_OPS_UNKNOWN))
            return FOLLOW_NONE;
        if (in.flags & XF_RIPREL)
            how = FOLLOW_REAIM;
        if (!x86_has_target(&in))
            continue;
        bool inside = in.target >= at && in.target < at + len;
        bool rel32 = (in.kind == XK_JMP && n == 5) || (in.kind == XK_JCC && n == 6);
        if (original ? !rel32 : !inside && !rel32)
            return FOLLOW_NONE;
        if (!inside || original)
            how = FOLLOW_REAIM;
    }
    return how;
}

/* Can a site of a KT_ACT_FOLLOW table move into a copy, and how is it put
 * back (FOLLOW_*)? A return site is one jmp rel32 (to the return thunk):
 * its copy is the same jmp, which apply_returns() patches. An alternative
 * moves where alt_form() says its original and replacement can, and it is
 * not a call the kernel makes up (6.12's ALT_FLAG_DIRECT_CALL). The kernel
 * patches the copy as it would the site (by CPU feature, not by address). */
static uint8_t follows(const struct ctx *c, const struct ktable_desc *d, const struct ktable_layout *l,
                       const uint8_t *e, uint64_t eaddr, uint64_t site, unsigned len)
{
    size_t avail;
    const uint8_t *p = image_read(c->img, site, &avail);
    struct x86_insn in;
    if (!p)
        return FOLLOW_NONE;
    if (d->id == KT_RETURN)
        return len == X86_JMP32_LEN && x86_decode(p, avail, site, &in) == X86_JMP32_LEN &&
               in.kind == XK_JMP && in.rel_size == 32 ? FOLLOW_RETURN : FOLLOW_NONE;
    if (d->id != KT_ALTINSTR || d->check != KT_CHK_ALT_REPL)
        return FOLLOW_NONE;
    uint32_t ft_flags = 0;
    if (l->entsize == 14)
        memcpy(&ft_flags, e + 8, 4);
    if ((ft_flags >> 16) & 2)   /* ALT_FLAG_DIRECT_CALL */
        return FOLLOW_NONE;
    unsigned rlen;
    uint64_t repl = alt_repl(l, e, eaddr, &rlen);
    uint8_t a = alt_form(c->img, site, len, true), b = alt_form(c->img, repl, rlen, false);
    return a == FOLLOW_NONE || b == FOLLOW_NONE ? FOLLOW_NONE : a == FOLLOW_REAIM || b == FOLLOW_REAIM ? FOLLOW_REAIM
                                                                                                       : FOLLOW_COPY;
}

/* Code outside every function that may run and branch into functions:
 * each direct branch of [addr, addr + len) (p, avail bytes readable) out of
 * it is a control-flow target, named from `from` (0: the branch itself).
 * An undecodable byte ends the walk, or with resync is skipped (padding). */
static int branches_out(struct ctx *c, const uint8_t *p, size_t avail, uint64_t addr, uint64_t len, uint64_t from,
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
static int repl_targets(struct ctx *c, const struct ktable_layout *l, const uint8_t *e, uint64_t eaddr)
{
    unsigned len;
    uint64_t repl = alt_repl(l, e, eaddr, &len);
    size_t avail = 0;
    const uint8_t *p = image_read(c->img, repl, &avail);
    return branches_out(c, p, avail, repl, len, eaddr, KT_ALTINSTR, false);
}

/* The table d at data (vaddr, size bytes). */
static int read_entries(struct ctx *c, const struct ktable_desc *d, const uint8_t *data, uint64_t vaddr,
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
                 "refusing to guess", c->img->path, names[d->id], (unsigned long long)size,
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
            struct krange r = { site, fn ? ck_u32(fn->end - site) : 1, (uint8_t)d->id, 0, 0, 0, 0 };
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
        struct krange r = { site, site_len(c, d, l, e, site), (uint8_t)d->id, 0, 0, 0, 0 };
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
    snprintf(err, errlen, "%s: out of memory reading %s", c->img->path, names[d->id]);
    return -1;
}

/* Every table d describes: one a section whose name starts with d's
 * (section "PREFIX*": one section a variable), or the one locate() finds. */
static int read_table(struct ctx *c, const struct ktable_desc *d, struct kfacts *kf, char *err, size_t errlen)
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
 * them (x86_kcode_branching): decoded straight through (stubs, no data). */
static int read_branching_code(struct ctx *c)
{
    for (size_t i = 0; i < x86_nkcode_branching; i++) {
        const struct section *s = image_section_by_name(c->img, x86_kcode_branching[i]);
        if (s && s->data && s->size &&
            branches_out(c, s->data, s->size, s->addr, s->size, 0, KT_CODE_BRANCHING, true) < 0)
            return -1;
    }
    return 0;
}

/* Does symbol symi of symtab lie in a vmlinux's zero-based per-cpu area
 * (relocs.c's is_percpu_sym)? */
static bool percpu_ref(const struct ctx *c, const struct section *symtab, uint32_t symi)
{
    Elf64_Sym sym;
    if (c->img->kind != IMG_VMLINUX || !symtab || !symtab->data ||
        ((uint64_t)symi + 1) * sizeof sym > symtab->size)
        return false;
    memcpy(&sym, symtab->data + symi * sizeof sym, sizeof sym);
    if (sym.st_shndx >= c->img->nsecs || strcmp(c->img->secs[sym.st_shndx].name, ".data..percpu") != 0)
        return false;
    const struct section *str = symtab->link < c->img->nsecs ? &c->img->secs[symtab->link] : NULL;
    const char *name = "";
    if (str && str->data && sym.st_name < str->size && memchr(str->data + sym.st_name, 0, str->size - sym.st_name))
        name = (const char *)str->data + sym.st_name;
    /* the symbols of the section's load address, not of per-cpu data */
    return strcmp(name, "__init_begin") != 0 && strncmp(name, "__per_cpu_load", 14) != 0 &&
           strncmp(name, "init_per_cpu_", 13) != 0;
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

static int read_relocs_file(struct ctx *c, struct kfacts *kf, const char *path, char *err, size_t errlen)
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
        struct krange kr = { v[i].addr, v[i].len, KT_RELOC, 0, 0, 0, 0 };
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

/* Relocations that patch code bytes: at load (TEXTREL, KASLR) the bytes
 * change, so an instruction carrying one must not move or be copied.
 * PC-relative ones survive moving the whole text, except the kernel's
 * inverse per-cpu relocations (PC32 against .data..percpu symbols). */
static int read_relocs(struct ctx *c, struct kfacts *kf, char *err, size_t errlen)
{
    const struct section *s;
    if (c->img->relocs_follow)
        return 0;
    if (c->img->kind == IMG_VMLINUX && relocs_stripped(c->img)) {
        snprintf(err, errlen, "%s: its code's relocations were stripped (the arch's post-link step, as "
                 "6.12's): give --relocs with the vmlinux.relocs written from it, or bake before that step",
                 c->img->path);
        return -1;
    }
    for (size_t i = 0; (s = image_next_rela(c->img, &i));) {
        /* Relocations of a non-allocated section have offsets inside that
         * section, not addresses: they would alias code at low link
         * addresses. */
        if (image_rela_unloaded(c->img, s))
            continue;
        const struct section *symtab = s->link < c->img->nsecs ? &c->img->secs[s->link] : NULL;
        for (size_t k = 0; k < rela_count(s); k++) {
            Elf64_Rela r = rela_get(s, k);
            bool pcrel;
            unsigned len = x86_reloc_size(ELF64_R_TYPE(r.r_info), &pcrel);
            if (!len)
                continue;
            /* as arch/x86/tools/relocs decides: relative references need
             * KASLR's fixing only to a per-cpu symbol (zero-based, it does
             * not move: the inverse relocations), absolute ones only to
             * anything else */
            if (pcrel != percpu_ref(c, symtab, ELF64_R_SYM(r.r_info)))
                continue;
            /* vmlinux: r_offset is a virtual address (ET_EXEC --emit-relocs). */
            if (!image_is_exec_addr(c->img, r.r_offset))
                continue;
            /* In a vmlinux the rewriter re-points a 4-byte one to the copy
             * of its instruction (emit.c); the 8-byte ones (movabs) stay. */
            struct krange kr = { r.r_offset, len, KT_RELOC, c->img->kind == IMG_VMLINUX && len == 4, pcrel, 0, 0 };
            kf->count[KT_RELOC]++;
            if (!PUSH(c->reserved, kr)) {
                snprintf(err, errlen, "%s: out of memory reading relocations", c->img->path);
                return -1;
            }
        }
    }
    return 0;
}

/* Ranges that are blacklisted as a whole: by section, or by start/end symbols. */
static int read_blacklist_ranges(struct ctx *c, char *err, size_t errlen)
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
        if (ranges[i].id == KT_EXIT_TEXT && c->img->kmodule)
            continue;
        if (s && s->size) {
            a = s->addr; b = ck_end(s->addr, s->size);
        } else if (!ranges[i].a || !symbols_addr_of(c->sy, ranges[i].a, &a) || !symbols_addr_of(c->sy, ranges[i].b, &b)) {
            continue;
        }
        if (b <= a)
            continue;
        struct krange r = { a, ck_u32(b - a), (uint8_t)ranges[i].id, 0, 0, 0, 0 };
        if (!PUSH(c->blacklist, r))
            goto oom;
    }
    for (size_t i = 0; i < x86_nkcode_keep; i++) {
        const struct kcode_range *k = &x86_kcode_keep[i];
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
        struct krange r = { a, b > a ? ck_u32(b - a) : 1, KT_ARCH_CODE, 0, 0, 0, 0 };
        if (!PUSH(c->blacklist, r))
            goto oom;
    }
    for (size_t i = 0; i < c->sy->nfuncs; i++) {
        const struct func *fn = &c->sy->funcs[i];
        if (ktable_padding_symbol(fn->name)) {
            struct krange r = { fn->start, ck_u32(fn->end - fn->start), KT_CFI_PREAMBLE, 0, 0, 0, 0 };
            if (r.len && !PUSH(c->blacklist, r))
                goto oom;
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", c->img->path);
    return -1;
}

static int cmp_range(const void *a, const void *b)
{
    const struct krange *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_kref(const void *a, const void *b)
{
    const struct kref *x = a, *y = b;
    return x->target < y->target ? -1 : x->target > y->target;
}

static size_t uniq_u64(uint64_t *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

static bool range_is_wide(const struct krange *r)
{
    return r->table >= KT_KPROBES_TEXT && r->table <= KT_HEAD_TEXT;
}

/* The section-wide ranges (.init.text and the like) nest function ranges,
 * so the lookup checks them apart; copied out once, since a look through
 * all ranges per instruction took 80 % of a --check of every entry of
 * Debian's 6.12 vmlinux (6.1 s, now 1.1 s). */
static int collect_wide(struct kfacts *kf, char *err, size_t errlen)
{
    size_t n = 0;
    for (size_t i = 0; i < kf->nblacklist; i++)
        n += range_is_wide(&kf->blacklist[i]);
    if (n == 0)
        return 0;
    kf->wide = malloc(n * sizeof *kf->wide);
    if (!kf->wide) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < kf->nblacklist; i++)
        if (range_is_wide(&kf->blacklist[i]))
            kf->wide[kf->nwide++] = kf->blacklist[i];
    return 0;
}

int kfacts_load(struct kfacts *kf, const struct image *img, const struct symbols *sy,
                const char *relocs, char *err, size_t errlen)
{
    struct ctx c = { .img = img, .sy = sy };

    memset(kf, 0, sizeof *kf);
    /* Kernel tables only mean something in a vmlinux; a user program that
     * happened to name a section __ex_table must not be read as one. */
    if (img->kind == IMG_VMLINUX) {
        for (size_t i = 0; i < x86_nktables; i++)
            if (read_table(&c, &x86_ktables[i], kf, err, errlen) < 0)
                goto fail;
        if (read_blacklist_ranges(&c, err, errlen) < 0)
            goto fail;
        if (read_branching_code(&c) < 0) {
            snprintf(err, errlen, "%s: out of memory", img->path);
            goto fail;
        }
    }
    if ((relocs ? read_relocs_file(&c, kf, relocs, err, errlen) : read_relocs(&c, kf, err, errlen)) < 0)
        goto fail;
    sort_array(c.reserved.v, c.reserved.n, sizeof(struct krange), cmp_range);
    sort_array(c.blacklist.v, c.blacklist.n, sizeof(struct krange), cmp_range);
    sort_array(c.targets.v, c.targets.n, sizeof(struct kref), cmp_kref);
    sort_array(c.extable.v, c.extable.n, 8, cmp_u64);
    kf->reserved = c.reserved.v; kf->nreserved = c.reserved.n;
    kf->blacklist = c.blacklist.v; kf->nblacklist = c.blacklist.n;
    if (collect_wide(kf, err, errlen) < 0)
        goto fail_set;
    kf->targets = c.targets.v; kf->ntargets = c.targets.n;
    kf->extable = c.extable.v; kf->nextable = uniq_u64(c.extable.v, c.extable.n);
    sort_array(c.extable_blind.v, c.extable_blind.n, 8, cmp_u64);
    kf->extable_blind = c.extable_blind.v; kf->nextable_blind = uniq_u64(c.extable_blind.v, c.extable_blind.n);
    return 0;
fail:
    free(c.reserved.v); free(c.targets.v); free(c.extable.v); free(c.extable_blind.v); free(c.blacklist.v);
    return -1;
fail_set:
    free(c.targets.v); free(c.extable.v); free(c.extable_blind.v);
    kfacts_free(kf);
    return -1;
}

void kfacts_free(struct kfacts *kf)
{
    free(kf->reserved); free(kf->targets); free(kf->extable); free(kf->extable_blind); free(kf->blacklist);
    free(kf->wide);
    memset(kf, 0, sizeof *kf);
}

/* Ranges are short (<= 255 bytes) except blacklist ones, so for reserved
 * sites it is enough to look back from the first start >= end. */
const struct krange *kfacts_reserved_overlap(const struct kfacts *kf, uint64_t start, uint64_t len)
{
    size_t a = LOWER_BOUND(kf->nreserved, m, kf->reserved[m].start < start + len);
    for (size_t i = a; i > 0 && a - i < 64; i--) {
        const struct krange *r = &kf->reserved[i - 1];
        if (r->start + r->len > start)
            return r;
        if (r->start + 256 < start)
            break;
    }
    return NULL;
}

const struct krange *kfacts_fixed_overlap(const struct kfacts *kf, uint64_t start, uint64_t len, uint64_t lo,
                                          uint64_t hi)
{
    size_t a = LOWER_BOUND(kf->nreserved, m, kf->reserved[m].start < start + len);
    for (size_t i = a; i > 0 && a - i < 64; i--) {
        const struct krange *r = &kf->reserved[i - 1];
        bool moves = r->movable || (r->follow && r->start >= lo && r->start + r->len <= hi);
        if (r->start + r->len > start && !moves)
            return r;
        if (r->start + 256 < start)
            break;
    }
    return NULL;
}

unsigned kfacts_movable_in(const struct kfacts *kf, uint64_t start, uint64_t len, uint32_t *plus, uint32_t *minus)
{
    unsigned n = 0;
    *plus = *minus = 0;
    size_t a = LOWER_BOUND(kf->nreserved, m, kf->reserved[m].start < start);
    for (size_t i = a; i < kf->nreserved && kf->reserved[i].start < start + len; i++) {
        const struct krange *r = &kf->reserved[i];
        if (!r->movable || r->start - start >= 32)
            continue;
        *(r->inverse ? minus : plus) |= 1u << (r->start - start);
        n++;
    }
    return n;
}

unsigned kfacts_follow_in(const struct kfacts *kf, uint64_t start, uint64_t len, const struct krange **out,
                          unsigned max)
{
    unsigned n = 0;
    size_t a = LOWER_BOUND(kf->nreserved, m, kf->reserved[m].start < start);
    for (size_t i = a; i < kf->nreserved && kf->reserved[i].start < start + len; i++)
        if (kf->reserved[i].follow) {
            if (n < max)
                out[n] = &kf->reserved[i];
            n++;
        }
    return n;
}

const struct krange *kfacts_blacklisted(const struct kfacts *kf, uint64_t addr)
{
    /* Function ranges do not nest, so the last start <= addr decides among
     * them; the few section-wide ranges are checked one by one. */
    size_t a = LOWER_BOUND(kf->nblacklist, m, kf->blacklist[m].start <= addr);
    for (size_t i = a; i > 0 && a - i < 4; i--) {
        const struct krange *r = &kf->blacklist[i - 1];
        if (addr - r->start < r->len)
            return r;
    }
    for (size_t i = 0; i < kf->nwide; i++) {
        const struct krange *r = &kf->wide[i];
        if (addr >= r->start && addr - r->start < r->len)
            return r;
    }
    return NULL;
}

uint64_t kfacts_extable_in(const struct kfacts *kf, uint64_t start, uint64_t end)
{
    size_t a = LOWER_BOUND(kf->nextable, m, kf->extable[m] < start);
    return a < kf->nextable && kf->extable[a] < end ? kf->extable[a] : 0;
}

uint64_t kfacts_extable_blind_in(const struct kfacts *kf, uint64_t start, uint64_t end)
{
    size_t a = LOWER_BOUND(kf->nextable_blind, m, kf->extable_blind[m] < start);
    return a < kf->nextable_blind && kf->extable_blind[a] < end ? kf->extable_blind[a] : 0;
}
