/* .eh_frame FDE ranges and .gcc_except_table (LSDA) landing pads: see ehframe.h.
 *
 * Formats follow the LSB "Exception Frames" chapter (.eh_frame) and the GCC
 * LSDA layout consumed by __gxx_personality_v0.  Every read goes through a
 * bounded cursor; malformed input produces an error message, never an
 * out-of-bounds access. */
#include "ehframe.h"
#include "../util/array.h"
#include "../util/checked.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DW_EH_PE_* pointer encodings. */
enum {
    PE_absptr = 0x00,
    PE_uleb128 = 0x01,
    PE_udata2 = 0x02,
    PE_udata4 = 0x03,
    PE_udata8 = 0x04,
    PE_sleb128 = 0x09,
    PE_sdata2 = 0x0a,
    PE_sdata4 = 0x0b,
    PE_sdata8 = 0x0c,
    PE_pcrel = 0x10,
    PE_aligned = 0x50,
    PE_indirect = 0x80,
    PE_omit = 0xff,
};

/* Results of reading an encoded value. */
enum { RD_OK = 0, RD_TRUNC = -1, RD_BADENC = -2, RD_UNSUP = -3 };

/* A bounded read cursor: bytes d[pos..lim) may be read; pos <= lim always. */
struct cur {
    const uint8_t *d;
    size_t pos, lim;
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static bool rd_u8(struct cur *c, uint8_t *v)
{
    if (c->pos >= c->lim)
        return false;
    *v = c->d[c->pos++];
    return true;
}

/* Little-endian unsigned integer of nbytes (<= 8). */
static bool rd_le(struct cur *c, unsigned nbytes, uint64_t *v)
{
    if (c->lim - c->pos < nbytes)
        return false;
    uint64_t x = 0;
    for (unsigned i = 0; i < nbytes; i++)
        x |= (uint64_t)c->d[c->pos + i] << (8 * i);
    c->pos += nbytes;
    *v = x;
    return true;
}

/* LEB128; bits beyond 64 are dropped.  *last gets the final byte. */
static bool rd_leb(struct cur *c, uint64_t *v, unsigned *shift_out, uint8_t *last)
{
    uint64_t x = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (c->pos >= c->lim)
            return false;
        b = c->d[c->pos++];
        if (shift < 64) {
            x |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
        }
    } while (b & 0x80);
    *v = x;
    *shift_out = shift;
    *last = b;
    return true;
}

static bool rd_uleb(struct cur *c, uint64_t *v)
{
    unsigned shift;
    uint8_t last;
    return rd_leb(c, v, &shift, &last);
}

static bool rd_sleb(struct cur *c, uint64_t *v)
{
    unsigned shift;
    uint8_t last;
    if (!rd_leb(c, v, &shift, &last))
        return false;
    if (shift < 64 && (last & 0x40))
        *v |= ~(uint64_t)0 << shift;
    return true;
}

static uint64_t sext(uint64_t x, unsigned bits)
{
    uint64_t m = (uint64_t)1 << (bits - 1);
    return (x ^ m) - m;
}

/* Is the value format (low nibble) one we can decode? */
static bool fmt_known(uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_absptr: case PE_uleb128: case PE_udata2: case PE_udata4: case PE_udata8:
    case PE_sleb128: case PE_sdata2: case PE_sdata4: case PE_sdata8:
        return true;
    default:
        return false;
    }
}

/* Known format and application (absptr..aligned); omit (0xff) is not. */
static bool enc_known(uint8_t enc)
{
    return fmt_known(enc) && (enc & 0x70) <= PE_aligned;
}

/* Reads a value in format enc & 0x0f, sign-extending the signed forms. */
static int rd_format(struct cur *c, uint8_t enc, uint64_t *v)
{
    uint64_t x = 0;
    bool okay;
    switch (enc & 0x0f) {
    case PE_absptr: case PE_udata8: case PE_sdata8:
        okay = rd_le(c, 8, &x);
        break;
    case PE_uleb128:
        okay = rd_uleb(c, &x);
        break;
    case PE_sleb128:
        okay = rd_sleb(c, &x);
        break;
    case PE_udata2:
        okay = rd_le(c, 2, &x);
        break;
    case PE_sdata2:
        okay = rd_le(c, 2, &x);
        x = sext(x, 16);
        break;
    case PE_udata4:
        okay = rd_le(c, 4, &x);
        break;
    case PE_sdata4:
        okay = rd_le(c, 4, &x);
        x = sext(x, 32);
        break;
    default:
        return RD_BADENC;
    }
    if (!okay)
        return RD_TRUNC;
    *v = x;
    return RD_OK;
}

/* Reads a DW_EH_PE-encoded pointer; c->d[0] is at virtual address base.
 * pcrel is relative to the field's own address and, as in libgcc, applied only
 * to a nonzero value.  textrel/datarel/funcrel give RD_UNSUP unless skip_only
 * (the caller just wants to step over the field).  DW_EH_PE_indirect is left
 * to the caller. */
static int rd_encoded(struct cur *c, uint64_t base, uint8_t enc, bool skip_only, uint64_t *v)
{
    if (!enc_known(enc))
        return RD_BADENC;
    if ((enc & 0x70) == PE_aligned) {
        size_t pad = (size_t)((0 - (base + c->pos)) & 7);
        if (c->lim - c->pos < pad)
            return RD_TRUNC;
        c->pos += pad;
        return rd_le(c, 8, v) ? RD_OK : RD_TRUNC;
    }
    uint64_t field = base + c->pos, x;
    int r = rd_format(c, enc, &x);
    if (r != RD_OK)
        return r;
    switch (enc & 0x70) {
    case PE_absptr:
        break;
    case PE_pcrel:
        if (x != 0)
            x += field;
        break;
    default:
        if (!skip_only)
            return RD_UNSUP;
        break;
    }
    *v = x;
    return RD_OK;
}

/* ---- .eh_frame ---------------------------------------------------------- */

struct cie {
    size_t off;      /* record start in the section */
    size_t body;     /* first byte after the CIE id */
    size_t end;      /* one past the record */
    bool parsed;
    bool has_z;      /* augmentation data present (FDEs carry an aug length) */
    bool signal;     /* 'S': a signal frame */
    uint8_t fde_enc; /* 'R' */
    uint8_t lsda_enc;/* 'L', PE_omit when absent */
    size_t insns;    /* the initial instructions: insns..end */
    uint64_t code_align;
    int64_t data_align;
};

static int cie_enc_error(int r, uint8_t enc, size_t off, char *err, size_t errlen)
{
    if (r == RD_TRUNC)
        return fail(err, errlen, "eh_frame: truncated CIE at offset 0x%zx", off);
    return fail(err, errlen, "eh_frame: %s pointer encoding 0x%02x in CIE at offset 0x%zx",
                r == RD_UNSUP ? "unsupported" : "unknown", enc, off);
}

static int parse_cie(const uint8_t *data, uint64_t vaddr, struct cie *ci, char *err,
                     size_t errlen)
{
    struct cur c = { data, ci->body, ci->end };
    uint8_t ver, b;
    uint64_t u;

    ci->has_z = false;
    ci->signal = false;
    ci->fde_enc = PE_absptr;
    ci->lsda_enc = PE_omit;
    if (!rd_u8(&c, &ver))
        goto trunc;
    if (ver != 1 && ver != 3)
        return fail(err, errlen, "eh_frame: unsupported CIE version %u at offset 0x%zx",
                    ver, ci->off);
    const uint8_t *nul = memchr(data + c.pos, 0, c.lim - c.pos);
    if (!nul)
        goto trunc;
    const char *aug = (const char *)data + c.pos;
    c.pos = (size_t)(nul - data) + 1;
    if (aug[0] == 'e' && aug[1] == 'h') { /* GCC 2.x: eh_ptr follows the string */
        if (!rd_le(&c, 8, &u))
            goto trunc;
        aug += 2;
    }
    if (!rd_uleb(&c, &ci->code_align) || !rd_sleb(&c, &u)) /* code / data alignment */
        goto trunc;
    ci->data_align = (int64_t)u;
    if (ci->data_align != (int32_t)ci->data_align || ci->code_align > UINT32_MAX)   /* an FDE keeps them in 32 bits */
        return fail(err, errlen, "eh_frame: CIE alignment factors out of range at offset 0x%zx", ci->off);
    if (ver == 1 ? !rd_u8(&c, &b) : !rd_uleb(&c, &u)) /* return address register */
        goto trunc;
    ci->insns = c.pos;
    if (*aug == 'z') {
        ci->has_z = true;
        aug++;
        if (!rd_uleb(&c, &u))
            goto trunc;
        if (u > c.lim - c.pos)
            goto trunc;
        c.lim = c.pos + (size_t)u;
        ci->insns = c.lim;   /* after the augmentation data */
    }
    for (; *aug; aug++) {
        int r;
        switch (*aug) {
        case 'L':
            if (!rd_u8(&c, &ci->lsda_enc))
                goto trunc;
            if (ci->lsda_enc != PE_omit && !enc_known(ci->lsda_enc))
                return cie_enc_error(RD_BADENC, ci->lsda_enc, ci->off, err, errlen);
            break;
        case 'R':
            if (!rd_u8(&c, &ci->fde_enc))
                goto trunc;
            if (!enc_known(ci->fde_enc))
                return cie_enc_error(RD_BADENC, ci->fde_enc, ci->off, err, errlen);
            break;
        case 'P':
            if (!rd_u8(&c, &b))
                goto trunc;
            r = rd_encoded(&c, vaddr, b, true, &u);
            if (r != RD_OK)
                return cie_enc_error(r, b, ci->off, err, errlen);
            break;
        case 'S':
            ci->signal = true;
            break;
        case 'B': case 'G': /* flags without data */
            break;
        default:
            /* Like libgcc: with 'z' the rest can be skipped, without it we
             * cannot know where the CIE's fields end. */
            if (ci->has_z)
                goto done;
            return fail(err, errlen,
                        "eh_frame: unsupported CIE augmentation '%c' at offset 0x%zx",
                        *aug >= 0x20 && *aug < 0x7f ? *aug : '?', ci->off);
        }
    }
done:
    if (!ci->has_z)
        ci->insns = c.pos;
    ci->parsed = true;
    return 0;
trunc:
    return fail(err, errlen, "eh_frame: truncated CIE at offset 0x%zx", ci->off);
}

static int fde_cmp(const void *a, const void *b)
{
    const struct eh_fde *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* CIEs seen so far, in section order (so sorted by offset). */
struct cie_set {
    struct cie *v;
    size_t n, cap;
    size_t last; /* index of the most recently used CIE */
};

static struct cie *cie_find(struct cie_set *s, size_t off)
{
    if (s->last < s->n && s->v[s->last].off == off)
        return &s->v[s->last];
    size_t i = LOWER_BOUND(s->n, m, s->v[m].off < off);
    if (i == s->n || s->v[i].off != off)
        return NULL;
    s->last = i;
    return &s->v[i];
}

static int fde_enc_error(int r, uint8_t enc, size_t off, char *err, size_t errlen)
{
    if (r == RD_TRUNC)
        return fail(err, errlen, "eh_frame: truncated FDE at offset 0x%zx", off);
    return fail(err, errlen, "eh_frame: %s pointer encoding 0x%02x in FDE at offset 0x%zx",
                r == RD_UNSUP ? "unsupported" : "unknown", enc, off);
}

/* The body of the FDE at offset rec (c after its CIE pointer), of CIE ci:
 * 1 with *fde, 0 for one left behind for a discarded section (no start or
 * no range), -1 with err. */
static int parse_fde(struct cur *c, uint64_t vaddr, const struct cie *ci, size_t rec, struct eh_fde *fde,
                     char *err, size_t errlen)
{
    uint64_t start, range, lsda = 0;
    int r = rd_encoded(c, vaddr, ci->fde_enc, false, &start);
    if (r == RD_OK && (ci->fde_enc & PE_indirect))
        r = RD_UNSUP;
    if (r != RD_OK)
        return fde_enc_error(r, ci->fde_enc, rec, err, errlen);
    r = rd_format(c, ci->fde_enc, &range);
    if (r != RD_OK)
        return fde_enc_error(r, ci->fde_enc, rec, err, errlen);
    size_t rec_end = c->lim, insns = c->pos;
    if (ci->has_z) {
        uint64_t alen;
        if (!rd_uleb(c, &alen) || alen > c->lim - c->pos)
            return fde_enc_error(RD_TRUNC, 0, rec, err, errlen);
        c->lim = c->pos + (size_t)alen;
        insns = c->lim;
    }
    if (ci->lsda_enc != PE_omit) {
        r = rd_encoded(c, vaddr, ci->lsda_enc, false, &lsda);
        if (r == RD_OK && lsda != 0 && (ci->lsda_enc & PE_indirect))
            r = RD_UNSUP;
        if (r != RD_OK)
            return fde_enc_error(r, ci->lsda_enc, rec, err, errlen);
    }
    if (start == 0 || range == 0)
        return 0;
    if (range > UINT64_MAX - start)
        return fail(err, errlen, "eh_frame: FDE range overflows at offset 0x%zx", rec);
    if (!ci->has_z)
        insns = c->pos;
    *fde = (struct eh_fde){ start, start + range, lsda, (uint32_t)ci->insns, (uint32_t)ci->end, (uint32_t)insns,
                            (uint32_t)rec_end, (int32_t)ci->data_align, (uint32_t)ci->code_align, ci->signal };
    return 1;
}

/* Record layout: 4-byte length (0xffffffff: an 8-byte length follows; 0: the
 * terminator), then a 4-byte CIE id / CIE pointer.  The id stays 4 bytes with
 * the extended length, as the LSB specifies for .eh_frame.  A zero-size
 * section is reported as an error ("eh_frame: empty section"); callers that
 * want to accept one should check size first.  CIEs are parsed on first use
 * and looked up by offset, so an unreferenced odd CIE does not fail the walk.
 * FDE/LSDA pointers encoded textrel/datarel/funcrel or indirect are rejected. */
int eh_frame_fdes(const uint8_t *data, size_t size, uint64_t vaddr,
                  struct eh_fde **fdes, size_t *n, char *err, size_t errlen)
{
    struct cie_set cies = { 0 };
    struct eh_fde *out = NULL;
    size_t nout = 0, cap = 0;
    bool sorted = true;
    int rc = -1;

    *fdes = NULL;
    *n = 0;
    if (err && errlen)
        err[0] = '\0';
    if (!data || size == 0)
        return fail(err, errlen, "eh_frame: empty section");
    if (size > UINT32_MAX)   /* an FDE keeps its offsets in 32 bits */
        return fail(err, errlen, "eh_frame: section of 0x%zx bytes, larger than 4 GiB", size);

    size_t pos = 0;
    while (pos < size) {
        size_t rec = pos;
        struct cur c = { data, pos, size };
        uint64_t len, id;

        if (!rd_le(&c, 4, &len)) {
            fail(err, errlen, "eh_frame: truncated record header at offset 0x%zx", rec);
            goto out;
        }
        if (len == 0)
            break; /* terminator */
        if (len == 0xffffffff && !rd_le(&c, 8, &len)) {
            fail(err, errlen, "eh_frame: truncated record header at offset 0x%zx", rec);
            goto out;
        }
        if (len > c.lim - c.pos) {
            fail(err, errlen, "eh_frame: record at offset 0x%zx extends past end of section",
                 rec);
            goto out;
        }
        c.lim = c.pos + (size_t)len;
        size_t idpos = c.pos;
        if (!rd_le(&c, 4, &id)) {
            fail(err, errlen, "eh_frame: truncated record at offset 0x%zx", rec);
            goto out;
        }
        pos = c.lim;

        if (id == 0) { /* CIE: parsed lazily when an FDE first uses it */
            if (!ARRAY_PUSH(cies.v, cies.n, cies.cap, (struct cie){ .off = rec, .body = c.pos, .end = c.lim })) {
                fail(err, errlen, "eh_frame: out of memory");
                goto out;
            }
            continue;
        }

        /* FDE */
        struct cie *ci = id <= idpos ? cie_find(&cies, idpos - (size_t)id) : NULL;
        if (!ci) {
            fail(err, errlen, "eh_frame: bad CIE pointer in FDE at offset 0x%zx", rec);
            goto out;
        }
        if (!ci->parsed && parse_cie(data, vaddr, ci, err, errlen) < 0)
            goto out;

        struct eh_fde fde;
        int r = parse_fde(&c, vaddr, ci, rec, &fde, err, errlen);
        if (r < 0)
            goto out;
        if (r == 0)
            continue; /* left behind for a discarded section */
        /* about one FDE in 32 bytes: one allocation for most sections */
        if (!ARRAY_RESERVE(out, cap, nout ? nout + 1 : size / 32 + 1)) {
            fail(err, errlen, "eh_frame: out of memory");
            goto out;
        }
        if (nout && fde.start < out[nout - 1].start)
            sorted = false;
        out[nout++] = fde;
    }

    if (!sorted)
        sort_array(out, nout, sizeof *out, fde_cmp);
    if (!out && !(out = malloc(sizeof *out))) { /* never hand back NULL on success */
        fail(err, errlen, "eh_frame: out of memory");
        goto out;
    }
    *fdes = out;
    *n = nout;
    out = NULL;
    rc = 0;
out:
    free(out);
    free(cies.v);
    return rc;
}

/* ---- call frame instructions: the CFA rule at a pc ---------------------- */

#define CFA_STACK 16   /* remember_state depth kept */

struct cfa_run {
    struct eh_cfa cfa;
    struct eh_cfa saved[CFA_STACK];
    unsigned depth;
    uint64_t loc;
};

/* Runs the instructions data[from..to) until loc passes pc. Returns 1 when
 * it stopped there, 0 at their end, -1 on malformed or unsupported ones
 * (the CFA is then unknown). */
static int cfa_run(const uint8_t *data, size_t from, size_t to, const struct eh_fde *f, uint64_t pc,
                   struct cfa_run *r)
{
    struct cur c = { data, from, to };
    uint64_t a, b;
    uint8_t op, u8;
    while (c.pos < c.lim) {
        if (!rd_u8(&c, &op))
            return -1;
        uint64_t adv = 0;
        switch (op >> 6) {
        case 1: adv = op & 0x3f; goto advance;                       /* advance_loc */
        case 2: if (!rd_uleb(&c, &a)) return -1; continue;           /* offset */
        case 3: continue;                                            /* restore */
        default: break;
        }
        switch (op) {
        case 0x00: continue;                                         /* nop */
        case 0x02: if (!rd_u8(&c, &u8)) return -1; adv = u8; goto advance;
        case 0x03: if (!rd_le(&c, 2, &adv)) return -1; goto advance;
        case 0x04: if (!rd_le(&c, 4, &adv)) return -1; goto advance;
        case 0x05: case 0x09: case 0x11: case 0x14: case 0x15: case 0x2f:   /* two operands */
            if (!rd_uleb(&c, &a) || !rd_uleb(&c, &b)) return -1;
            continue;
        case 0x06: case 0x07: case 0x08: case 0x2e:                  /* one operand */
            if (!rd_uleb(&c, &a)) return -1;
            continue;
        case 0x0a:                                                   /* remember_state */
            if (r->depth < CFA_STACK)
                r->saved[r->depth] = r->cfa;
            r->depth++;
            continue;
        case 0x0b:                                                   /* restore_state */
            if (r->depth == 0 || r->depth > CFA_STACK)
                return -1;
            r->cfa = r->saved[--r->depth];
            continue;
        case 0x0c:                                                   /* def_cfa */
            if (!rd_uleb(&c, &a) || !rd_uleb(&c, &b)) return -1;
            r->cfa = (struct eh_cfa){ true, (unsigned)a, (int64_t)b };
            continue;
        case 0x12: {                                                 /* def_cfa_sf */
            int64_t off;
            if (!rd_uleb(&c, &a) || !rd_sleb(&c, &b) || !ck_smul((int64_t)b, f->data_align, &off)) return -1;
            r->cfa = (struct eh_cfa){ true, (unsigned)a, off };
            continue;
        }
        case 0x0d:                                                   /* def_cfa_register */
            if (!rd_uleb(&c, &a)) return -1;
            r->cfa.reg = (unsigned)a;
            continue;
        case 0x0e:                                                   /* def_cfa_offset */
            if (!rd_uleb(&c, &a)) return -1;
            r->cfa.off = (int64_t)a;
            continue;
        case 0x13:                                                   /* def_cfa_offset_sf */
            if (!rd_sleb(&c, &a) || !ck_smul((int64_t)a, f->data_align, &r->cfa.off)) return -1;
            continue;
        case 0x0f:                                                   /* def_cfa_expression */
            if (!rd_uleb(&c, &a) || a > c.lim - c.pos) return -1;
            c.pos += (size_t)a;
            r->cfa.known = false;
            continue;
        case 0x10: case 0x16:                                        /* (val_)expression */
            if (!rd_uleb(&c, &a) || !rd_uleb(&c, &b) || b > c.lim - c.pos) return -1;
            c.pos += (size_t)b;
            continue;
        default:                                                     /* set_loc, vendor ops */
            return -1;
        }
    advance: {
        uint64_t step, loc;
        if (!ck_mul(adv, f->code_align, &step) || !ck_add(r->loc, step, &loc) || loc > pc)
            return 1;   /* past pc (an advance past the end of the address space is too) */
        r->loc = loc;
    }
    }
    return 0;
}

struct eh_cfa eh_cfa_at(const uint8_t *data, size_t size, const struct eh_fde *fde, uint64_t pc)
{
    struct cfa_run r = { .loc = fde->start };
    struct eh_cfa unknown = { false, 0, 0 };
    if (fde->cie_insns > fde->cie_insns_end || fde->cie_insns_end > size || fde->insns > fde->insns_end ||
        fde->insns_end > size || pc < fde->start || pc >= fde->end || fde->code_align == 0)
        return unknown;
    /* the initial instructions describe the entry: no advance expected */
    if (cfa_run(data, fde->cie_insns, fde->cie_insns_end, fde, fde->start, &r) != 0)
        return unknown;
    r.depth = 0;
    if (cfa_run(data, fde->insns, fde->insns_end, fde, pc, &r) < 0)
        return unknown;
    return r.cfa;
}

/* ---- LSDA (.gcc_except_table) ------------------------------------------ */

int lsda_landing_pads(eh_read_fn read, void *ctx, uint64_t lsda, uint64_t func_start,
                      uint64_t **pads, size_t *n, char *err, size_t errlen)
{
    uint64_t *out = NULL;
    size_t nout = 0, cap = 0;
    size_t avail = 0;
    int r;

    *pads = NULL;
    *n = 0;
    if (err && errlen)
        err[0] = '\0';
    const uint8_t *p = read ? read(ctx, lsda, &avail) : NULL;
    if (!p)
        return fail(err, errlen, "lsda: address 0x%llx is not mapped", (unsigned long long)lsda);
    struct cur c = { p, 0, avail };
    uint8_t lpenc, ttenc, csenc;
    uint64_t lpstart = func_start, u;

    if (!rd_u8(&c, &lpenc))
        goto trunc;
    if (lpenc != PE_omit) {
        r = rd_encoded(&c, lsda, lpenc, false, &lpstart);
        if (r == RD_TRUNC)
            goto trunc;
        if (r != RD_OK)
            return fail(err, errlen, "lsda: %s LPStart encoding 0x%02x at 0x%llx",
                        r == RD_UNSUP ? "unsupported" : "unknown", lpenc,
                        (unsigned long long)lsda);
        if ((lpenc & PE_indirect) && lpstart != 0) {
            size_t a2 = 0;
            const uint8_t *q = read(ctx, lpstart, &a2);
            struct cur ind = { q, 0, q ? a2 : 0 };
            if (!q || !rd_le(&ind, 8, &lpstart))
                return fail(err, errlen, "lsda: indirect LPStart at 0x%llx is not mapped",
                            (unsigned long long)lsda);
        }
    }
    if (!rd_u8(&c, &ttenc))
        goto trunc;
    if (ttenc != PE_omit && !rd_uleb(&c, &u)) /* TType base offset: not needed */
        goto trunc;
    if (!rd_u8(&c, &csenc))
        goto trunc;
    if (!fmt_known(csenc) || (csenc & 0xf0) != 0)
        return fail(err, errlen, "lsda: unsupported call-site encoding 0x%02x at 0x%llx",
                    csenc, (unsigned long long)lsda);
    if (!rd_uleb(&c, &u))
        goto trunc;
    if (u > c.lim - c.pos)
        return fail(err, errlen, "lsda: call-site table at 0x%llx extends past mapped data",
                    (unsigned long long)lsda);
    c.lim = c.pos + (size_t)u;

    while (c.pos < c.lim) {
        uint64_t start, len, lp, action;
        if (rd_format(&c, csenc, &start) || rd_format(&c, csenc, &len) ||
            rd_format(&c, csenc, &lp) || !rd_uleb(&c, &action)) {
            free(out);
            return fail(err, errlen, "lsda: truncated call-site entry in LSDA at 0x%llx",
                        (unsigned long long)lsda);
        }
        if (lp == 0)
            continue;
        if (!ARRAY_PUSH(out, nout, cap, lpstart + lp)) {
            free(out);
            return fail(err, errlen, "lsda: out of memory");
        }
    }

    if (nout > 1) {
        sort_array(out, nout, sizeof *out, cmp_u64);
        size_t k = 1;
        for (size_t i = 1; i < nout; i++)
            if (out[i] != out[k - 1])
                out[k++] = out[i];
        nout = k;
    }
    if (!out && !(out = malloc(sizeof *out)))
        return fail(err, errlen, "lsda: out of memory");
    *pads = out;
    *n = nout;
    return 0;
trunc:
    return fail(err, errlen, "lsda: truncated header in LSDA at 0x%llx",
                (unsigned long long)lsda);
}
