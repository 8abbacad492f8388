/*
 * The facts an image imposes on probes (facts.h): built by its kind's
 * reader (ktables.c for a kernel's tables, the generic relocation reader
 * here for every image), sorted once, then looked up by the analysis.
 */
#include "facts.h"
#include "../arch/isa.h"
#include "../util/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUSH(a, ...) ARRAY_PUSH((a).v, (a).n, (a).cap, __VA_ARGS__)

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

/* Relocations that patch code bytes: at load (TEXTREL, KASLR) the bytes
 * change, so an instruction carrying one must not move or be copied.
 * PC-relative ones survive moving the whole text, except inverse ones
 * (rules->inverse: the kernel's per-cpu relocations, PC32 against
 * .data..percpu symbols). */
int facts_read_relocs(struct facts_build *c, struct kfacts *kf, const struct reloc_rules *rules, char *err,
                      size_t errlen)
{
    const struct section *s;
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
            unsigned len = c->img->isa->reloc_size(ELF64_R_TYPE(r.r_info), &pcrel);
            if (!len)
                continue;
            /* as arch/x86/tools/relocs decides: relative references need
             * KASLR's fixing only to a per-cpu symbol (zero-based, it does
             * not move: the inverse relocations), absolute ones only to
             * anything else */
            if (pcrel != (rules->inverse && rules->inverse(c, symtab, ELF64_R_SYM(r.r_info))))
                continue;
            /* vmlinux: r_offset is a virtual address (ET_EXEC --emit-relocs). */
            if (!image_is_exec_addr(c->img, r.r_offset))
                continue;
            /* In a vmlinux the rewriter re-points a 4-byte one to the copy
             * of its instruction (emit.c); the 8-byte ones (movabs) stay. */
            struct krange kr = { r.r_offset, len, KT_RELOC, rules->movable && len == 4, pcrel, 0, 0, 0 };
            kf->count[KT_RELOC]++;
            if (!PUSH(c->reserved, kr)) {
                snprintf(err, errlen, "%s: out of memory reading relocations", c->img->path);
                return -1;
            }
        }
    }
    return 0;
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

static int cmp_moving(const void *a, const void *b)
{
    const struct kmoving *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

void facts_build_free(struct facts_build *c)
{
    free(c->reserved.v); free(c->targets.v); free(c->extable.v); free(c->extable_blind.v); free(c->blacklist.v);
    free(c->moving.v);
    memset(c, 0, sizeof *c);
}

int facts_build_finish(struct kfacts *kf, struct facts_build *c, char *err, size_t errlen)
{
    sort_array(c->reserved.v, c->reserved.n, sizeof(struct krange), cmp_range);
    sort_array(c->blacklist.v, c->blacklist.n, sizeof(struct krange), cmp_range);
    sort_array(c->targets.v, c->targets.n, sizeof(struct kref), cmp_kref);
    sort_array(c->extable.v, c->extable.n, 8, cmp_u64);
    kf->reserved = c->reserved.v; kf->nreserved = c->reserved.n;
    kf->blacklist = c->blacklist.v; kf->nblacklist = c->blacklist.n;
    if (collect_wide(kf, err, errlen) < 0)
        goto fail_set;
    kf->targets = c->targets.v; kf->ntargets = c->targets.n;
    kf->extable = c->extable.v; kf->nextable = uniq_u64(c->extable.v, c->extable.n);
    sort_array(c->extable_blind.v, c->extable_blind.n, 8, cmp_u64);
    kf->extable_blind = c->extable_blind.v; kf->nextable_blind = uniq_u64(c->extable_blind.v, c->extable_blind.n);
    sort_array(c->moving.v, c->moving.n, sizeof(struct kmoving), cmp_moving);
    kf->moving = c->moving.v; kf->nmoving = c->moving.n;
    return 0;
fail_set:
    free(c->targets.v); free(c->extable.v); free(c->extable_blind.v); free(c->moving.v);
    kfacts_free(kf);
    return -1;
}

void kfacts_free(struct kfacts *kf)
{
    free(kf->reserved); free(kf->targets); free(kf->extable); free(kf->extable_blind); free(kf->blacklist);
    free(kf->wide); free(kf->moving);
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

const struct kmoving *kfacts_moving(const struct kfacts *kf, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < kf->nmoving; i++)   /* a few ranges an image at most */
        if (kf->moving[i].start < hi && lo < kf->moving[i].start + kf->moving[i].len)
            return &kf->moving[i];
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
