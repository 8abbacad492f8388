/*
 * Code an image's runtime copies or remaps elsewhere at run time and runs
 * there (facts.h, struct kmoving), recognised by how the runtime marks it.
 * A probe's jump in such code runs from the copy, where its rel32 lands
 * where nothing is; so does any byte the rewriter writes there (a
 * trampoline, a re-pointed branch, an evicted window).
 *
 * V8 (node, libnode): its builtins are compiled ahead of time into one
 * blob of position-independent code in .text, the embedded blob: from
 * v8_Default_embedded_blob_code_, v8_Default_embedded_blob_code_size_ bytes
 * (a 4-byte value in .rodata), the Builtins_* functions. With short builtin
 * calls (node 20: on x86-64 with 4 GiB of memory or more) V8 maps the blob
 * again inside its code range, from the file or by copying it, and runs
 * builtins there, near the code it compiles. In a stripped image
 * (Debian's libnode.so.108) the symbols are gone, but the exported getters
 * v8::internal::DefaultEmbeddedBlobCode() and DefaultEmbeddedBlobCodeSize()
 * return the same two values (isa->leaf_value reads their code).
 *
 * Other JIT runtimes of Debian 12 run the code they generate, not copies
 * of their own (doc/analysis.md, "Code that moves at run time").
 */
#include "facts.h"
#include "../arch/isa.h"
#include "../util/array.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PUSH(a, ...) ARRAY_PUSH((a).v, (a).n, (a).cap, __VA_ARGS__)

static const char v8_why[] = "V8 copies them into its code range at run time (short builtin calls)";

/* The width-byte little-endian word at addr as the loader leaves it: an
 * 8-byte word with a RELATIVE dynamic relocation holds its addend (the
 * image's load base is 0 here). */
static bool word_at(const struct image *img, uint64_t addr, unsigned width, uint64_t *out)
{
    size_t avail;
    const uint8_t *p = image_read(img, addr, &avail);
    if (!p || avail < width || (width != 4 && width != 8))
        return false;
    uint64_t v = 0;
    for (unsigned i = width; i-- > 0;)
        v = v << 8 | p[i];
    const struct section *s;
    for (size_t i = 0; width == 8 && (s = image_next_rela(img, &i));) {
        if (image_rela_unloaded(img, s))
            continue;
        for (size_t k = 0; k < rela_count(s); k++) {
            Elf64_Rela r = rela_get(s, k);
            if (r.r_offset == addr && ELF64_R_TYPE(r.r_info) == img->isa->reloc_relative)
                v = (uint64_t)r.r_addend;
        }
    }
    *out = v;
    return true;
}

/* What the leaf function named name returns (isa->leaf_value, its loads
 * read from the image). */
static bool getter_value(const struct image *img, const struct symbols *sy, const char *name, uint64_t *out)
{
    const struct name_ent *ne = symbols_lookup(sy, name);
    if (!ne || ne->func == SIZE_MAX || !img->isa->leaf_value)
        return false;
    const struct func *fn = &sy->funcs[ne->func];
    size_t avail;
    const uint8_t *code = image_read(img, fn->start, &avail);
    struct isa_leaf_value lv;
    if (!code || !img->isa->leaf_value(code, avail < fn->end - fn->start ? avail : fn->end - fn->start, fn->start, &lv))
        return false;
    uint64_t v = lv.value;
    for (unsigned i = 0; i < lv.nloads; i++)
        if (!word_at(img, v, lv.width[i], &v))
            return false;
    *out = v;
    return true;
}

/* [start, start + len) as code that moves, when it is code of one
 * executable section (a marking that says otherwise is not believed). */
static int add_range(struct facts_build *c, uint64_t start, uint64_t len, const char *why, char *err, size_t errlen,
                     const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int add_range(struct facts_build *c, uint64_t start, uint64_t len, const char *why, char *err, size_t errlen,
                     const char *fmt, ...)
{
    const struct section *s = image_section_at(c->img, start);
    if (!len || !s || !(s->flags & SHF_EXECINSTR) || len > s->addr + s->size - start)
        return 0;
    for (size_t i = 0; i < c->moving.n; i++)
        if (c->moving.v[i].start == start)
            return 0;   /* the same blob, marked twice */
    struct kmoving m = { start, len, { 0 }, why };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m.what, sizeof m.what, fmt, ap);
    va_end(ap);
    if (!PUSH(c->moving, m)) {
        snprintf(err, errlen, "%s: out of memory", c->img->path);
        return -1;
    }
    return 0;
}

/* V8's embedded blobs by their symbols: every v8_<variant>_embedded_blob_code_
 * with its v8_<variant>_embedded_blob_code_size_. */
static int v8_blob_symbols(struct facts_build *c, char *err, size_t errlen)
{
    static const char prefix[] = "v8_", suffix[] = "_embedded_blob_code_";
    const struct symbols *sy = c->sy;
    size_t a = LOWER_BOUND(sy->naddrs, m, strcmp(sy->addrs[m].name, prefix) < 0);
    for (; a < sy->naddrs && strncmp(sy->addrs[a].name, prefix, sizeof prefix - 1) == 0; a++) {
        const char *name = sy->addrs[a].name;
        size_t n = strlen(name);
        char size_name[160];
        uint64_t size_at, size;
        if (n < sizeof suffix || strcmp(name + n - (sizeof suffix - 1), suffix) != 0 ||
            (size_t)snprintf(size_name, sizeof size_name, "%ssize_", name) >= sizeof size_name ||
            !symbols_addr_of(sy, size_name, &size_at) || !word_at(c->img, size_at, 4, &size))
            continue;
        if (add_range(c, sy->addrs[a].addr, size, v8_why, err, errlen, "V8's embedded builtins (%s and _size_)",
                      name) < 0)
            return -1;
    }
    return 0;
}

/* V8's default embedded blob by its exported getters (a stripped image). */
static int v8_blob_getters(struct facts_build *c, char *err, size_t errlen)
{
    uint64_t start, size;
    if (!getter_value(c->img, c->sy, "_ZN2v88internal23DefaultEmbeddedBlobCodeEv", &start) ||
        !getter_value(c->img, c->sy, "_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv", &size))
        return 0;
    return add_range(c, start, size & 0xffffffffu, v8_why, err, errlen,
                     "V8's embedded builtins (v8::internal::DefaultEmbeddedBlobCode(), ...Size())");
}

int facts_read_moving(struct facts_build *c, char *err, size_t errlen)
{
    if (v8_blob_symbols(c, err, errlen) < 0)
        return -1;
    return c->moving.n ? 0 : v8_blob_getters(c, err, errlen);
}
