/* Unit tests for src/rewriter/ehframe.c on hand-built .eh_frame and LSDA bytes. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "ehframe.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a tiny byte builder ------------------------------------------------ */

struct buf {
    uint8_t b[4096];
    size_t n;
};

static void put8(struct buf *b, unsigned v) { b->b[b->n++] = (uint8_t)v; }
static void putn(struct buf *b, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        put8(b, (unsigned)(v >> (8 * i)) & 0xff);
}
static void uleb(struct buf *b, uint64_t v)
{
    do {
        uint8_t x = v & 0x7f;
        v >>= 7;
        put8(b, x | (v ? 0x80 : 0));
    } while (v);
}
static void sleb(struct buf *b, int64_t v)
{
    for (;;) {
        uint8_t x = v & 0x7f;
        v >>= 7; /* arithmetic shift with gcc */
        if ((v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40))) {
            put8(b, x);
            return;
        }
        put8(b, x | 0x80);
    }
}
static void str(struct buf *b, const char *s)
{
    size_t l = strlen(s) + 1;
    memcpy(b->b + b->n, s, l);
    b->n += l;
}
static void patch32(struct buf *b, size_t at, uint64_t v)
{
    for (unsigned i = 0; i < 4; i++)
        b->b[at + i] = (uint8_t)(v >> (8 * i));
}

/* Starts a record: returns the offset of its 4-byte length field. */
static size_t rec_begin(struct buf *b)
{
    size_t at = b->n;
    putn(b, 0, 4);
    return at;
}
/* Pads with DW_CFA_nop to a 4-byte multiple and fills in the length. */
static void rec_end(struct buf *b, size_t at)
{
    while ((b->n - at) % 4)
        put8(b, 0);
    patch32(b, at, b->n - at - 4);
}
/* FDE header: length placeholder and CIE pointer; returns the length offset. */
static size_t fde_begin(struct buf *b, size_t cie)
{
    size_t at = rec_begin(b);
    putn(b, b->n - cie, 4);
    return at;
}

#define VADDR 0x400000ull
/* pcrel|sdata4 value for target at the current position of b. */
static void pcrel4(struct buf *b, uint64_t target) { putn(b, target - (VADDR + b->n), 4); }

static size_t cie_z(struct buf *b, const char *aug, unsigned renc)
{
    size_t at = rec_begin(b);
    putn(b, 0, 4);           /* CIE id */
    put8(b, 1);              /* version */
    str(b, aug);             /* "zR" or "zRS" etc.: R must be the only data */
    uleb(b, 1);              /* code alignment */
    sleb(b, -8);             /* data alignment */
    put8(b, 16);             /* RA register (byte in v1) */
    uleb(b, 1);              /* aug length */
    put8(b, renc);
    put8(b, 0x0c); put8(b, 7); put8(b, 8);  /* DW_CFA_def_cfa rsp+8 */
    put8(b, 0x90); put8(b, 1);              /* DW_CFA_offset r16 */
    rec_end(b, at);
    return at;
}
static size_t cie_zR(struct buf *b, unsigned renc) { return cie_z(b, "zR", renc); }

static void fde_pcrel(struct buf *b, size_t cie, uint64_t start, uint64_t range, bool z)
{
    size_t at = fde_begin(b, cie);
    if (start)
        pcrel4(b, start);
    else
        putn(b, 0, 4);
    putn(b, range, 4);
    if (z)
        uleb(b, 0);
    put8(b, 0x41);           /* DW_CFA_advance_loc 1 */
    rec_end(b, at);
}

/* The main sample section; see the expected table in test_good(). */
static void build_good(struct buf *b)
{
    memset(b, 0, sizeof *b);
    size_t A = cie_zR(b, 0x1b);                  /* pcrel|sdata4 */
    fde_pcrel(b, A, 0x401000, 0x20, true);
    fde_pcrel(b, A, 0x400f00, 0x10, true);       /* out of order */

    /* CIE B: v3 "zPLR", personality indirect|pcrel|sdata4. */
    size_t B = rec_begin(b);
    putn(b, 0, 4);
    put8(b, 3);
    str(b, "zPLR");
    uleb(b, 1);
    sleb(b, -8);
    uleb(b, 16);                                 /* RA register (uleb in v3) */
    uleb(b, 7);                                  /* P enc + 4 bytes, L enc, R enc */
    put8(b, 0x9b);
    pcrel4(b, 0x600000);
    put8(b, 0x1b);
    put8(b, 0x1b);
    rec_end(b, B);

    size_t f = fde_begin(b, B);                  /* with an LSDA */
    pcrel4(b, 0x402000);
    putn(b, 0x100, 4);
    uleb(b, 4);
    pcrel4(b, 0x500000);
    rec_end(b, f);
    f = fde_begin(b, B);                         /* LSDA pointer 0: none */
    pcrel4(b, 0x402100);
    putn(b, 0x40, 4);
    uleb(b, 4);
    putn(b, 0, 4);
    rec_end(b, f);

    fde_pcrel(b, A, 0, 0x30, true);              /* pc_begin 0: discarded */
    fde_pcrel(b, A, 0x401800, 0, true);          /* pc_range 0: discarded */

    /* CIE C: old "eh" augmentation, absptr FDEs. */
    size_t C = rec_begin(b);
    putn(b, 0, 4);
    put8(b, 1);
    str(b, "eh");
    putn(b, 0x12345678, 8);                      /* eh_ptr */
    uleb(b, 1);
    sleb(b, -8);
    put8(b, 16);
    rec_end(b, C);
    f = fde_begin(b, C);
    putn(b, 0x403000, 8);
    putn(b, 0x8, 8);
    rec_end(b, f);

    /* FDE with a 64-bit extended length (CIE pointer stays 4 bytes). */
    f = b->n;
    putn(b, 0xffffffff, 4);
    putn(b, 0, 8);
    putn(b, b->n - A, 4);
    pcrel4(b, 0x404000);
    putn(b, 0x10, 4);
    uleb(b, 0);
    while ((b->n - f) % 4)
        put8(b, 0);
    for (unsigned i = 0; i < 8; i++)
        b->b[f + 4 + i] = (uint8_t)((uint64_t)(b->n - f - 12) >> (8 * i));

    /* CIE D: "zRS" with udata4 absolute FDE pointers. */
    size_t D = cie_z(b, "zRS", 0x03);
    f = fde_begin(b, D);
    putn(b, 0x405000, 4);
    putn(b, 0x50, 4);
    uleb(b, 0);
    rec_end(b, f);

    /* CIE E: v1 "zPLRS": personality absptr, LSDA udata4, FDE sdata4 absolute. */
    size_t E = rec_begin(b);
    putn(b, 0, 4);
    put8(b, 1);
    str(b, "zPLRS");
    uleb(b, 1);
    sleb(b, -8);
    put8(b, 16);
    uleb(b, 11);
    put8(b, 0x00);
    putn(b, 0x601000, 8);
    put8(b, 0x03);
    put8(b, 0x0b);
    rec_end(b, E);
    f = fde_begin(b, E);
    putn(b, 0x406000, 4);
    putn(b, 0x60, 4);
    uleb(b, 4);
    putn(b, 0x510000, 4);
    rec_end(b, f);

    putn(b, 0, 4);                               /* terminator */
    putn(b, 0xdeadbeef, 4);                      /* ignored after it */
}

static const struct { uint64_t start, end, lsda; } want_good[] = {
    { 0x400f00, 0x400f10, 0 },
    { 0x401000, 0x401020, 0 },
    { 0x402000, 0x402100, 0x500000 },
    { 0x402100, 0x402140, 0 },
    { 0x403000, 0x403008, 0 },
    { 0x404000, 0x404010, 0 },
    { 0x405000, 0x405050, 0 },
    { 0x406000, 0x406060, 0x510000 },
};
#define NGOOD (sizeof want_good / sizeof want_good[0])

/* Runs eh_frame_fdes on an exact-size heap copy so ASan sees any overread. */
static int run(const uint8_t *d, size_t n, struct eh_fde **f, size_t *nf, char *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (n)
        memcpy(copy, d, n);
    int rc = eh_frame_fdes(copy, n, VADDR, f, nf, err, 128);
    free(copy);
    return rc;
}

static void test_good(void)
{
    struct buf b;
    struct eh_fde *f = NULL;
    size_t n = 0;
    char err[128] = "";

    build_good(&b);
    int rc = run(b.b, b.n, &f, &n, err);
    if (!is_int(0, rc, "good section parses"))
        diag("%s", err);
    if (!is_int(NGOOD, (long long)n, "good section: FDE count (2 discarded skipped)") || rc)
        return;
    for (size_t i = 0; i < NGOOD; i++) {
        bool same = f[i].start == want_good[i].start && f[i].end == want_good[i].end &&
                    f[i].lsda == want_good[i].lsda;
        ok(same, "FDE %zu: [%#llx,%#llx) lsda %#llx", i, (unsigned long long)want_good[i].start,
           (unsigned long long)want_good[i].end, (unsigned long long)want_good[i].lsda);
        if (!same)
            diag("seen [%#llx,%#llx) lsda %#llx", (unsigned long long)f[i].start,
                 (unsigned long long)f[i].end, (unsigned long long)f[i].lsda);
    }
    is_hex(0x500000, f[2].lsda, "pcrel LSDA pointer through zPLR CIE");
    is_hex(0x510000, f[7].lsda, "udata4 LSDA pointer through zPLRS CIE");
    size_t nsig = 0;
    for (size_t i = 0; i < NGOOD; i++)
        nsig += f[i].signal_frame;
    ok(nsig == 2 && f[6].signal_frame && f[7].signal_frame,
       "the FDEs of the zRS and zPLRS CIEs, and only those, are signal frames ('S')");
    free(f);

    /* Every truncation and a few thousand byte mutations: only 0 or -1 with
     * a message, never a crash (ASan/UBSan watch the reads). */
    bool fine = true;
    for (size_t len = 0; len < b.n; len++) {
        err[0] = '\0';
        rc = run(b.b, len, &f, &n, err);
        if (rc == 0)
            free(f);
        else if (rc != -1 || !err[0] || f)
            fine = false;
    }
    ok(fine, "all %zu truncations return 0 or -1 with a message", b.n);

    fine = true;
    uint32_t seed = 12345;
    for (int it = 0; it < 5000; it++) {
        struct buf m = b;
        for (int k = 0; k < 1 + it % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % m.n;
            seed = seed * 1103515245u + 12345u;
            m.b[at] = (uint8_t)(seed >> 16);
        }
        err[0] = '\0';
        rc = run(m.b, m.n, &f, &n, err);
        if (rc == 0) {
            for (size_t i = 1; i < n; i++)
                if (f[i - 1].start > f[i].start)
                    fine = false;
            free(f);
        } else if (rc != -1 || !err[0]) {
            fine = false;
        }
    }
    ok(fine, "5000 mutated sections: no crash, sorted output or an error");
}

static void expect_fail(const uint8_t *d, size_t n, const char *what, const char *needle)
{
    struct eh_fde *f = (struct eh_fde *)1;
    size_t nf = 99;
    char err[128] = "";
    int rc = run(d, n, &f, &nf, err);
    ok(rc == -1 && f == NULL && nf == 0 && strstr(err, needle) != NULL, "%s: -1 (%s)", what, err);
    if (rc == 0)
        free(f);
}

static void test_malformed(void)
{
    struct buf b;

    expect_fail(NULL, 0, "empty section", "empty");

    static const uint8_t two[] = { 0x10, 0x00 };
    expect_fail(two, sizeof two, "2-byte section", "truncated record header");

    memset(&b, 0, sizeof b);
    size_t A = cie_zR(&b, 0x1b);
    patch32(&b, A, 0x100);                       /* length past the end */
    expect_fail(b.b, b.n, "length past end", "extends past end");

    memset(&b, 0, sizeof b);
    A = cie_zR(&b, 0x1b);
    size_t f = rec_begin(&b);
    putn(&b, b.n + 4, 4);                        /* points before the section */
    pcrel4(&b, 0x401000);
    putn(&b, 0x10, 4);
    uleb(&b, 0);
    rec_end(&b, f);
    expect_fail(b.b, b.n, "CIE pointer before section start", "bad CIE pointer");

    memset(&b, 0, sizeof b);
    A = cie_zR(&b, 0x1b);
    fde_pcrel(&b, A, 0x401000, 0x10, true);
    f = fde_begin(&b, A + 24);                  /* points at the first FDE */
    pcrel4(&b, 0x402000);
    putn(&b, 0x10, 4);
    uleb(&b, 0);
    rec_end(&b, f);
    expect_fail(b.b, b.n, "CIE pointer to an FDE", "bad CIE pointer");

    memset(&b, 0, sizeof b);
    A = cie_zR(&b, 0x07);                        /* format 7 does not exist */
    fde_pcrel(&b, A, 0x401000, 0x10, true);
    expect_fail(b.b, b.n, "unknown FDE encoding", "unknown pointer encoding 0x07");

    memset(&b, 0, sizeof b);
    A = cie_zR(&b, 0x3b);                        /* datarel|sdata4 */
    fde_pcrel(&b, A, 0x401000, 0x10, true);
    expect_fail(b.b, b.n, "datarel FDE encoding", "unsupported pointer encoding 0x3b");

    memset(&b, 0, sizeof b);
    A = rec_begin(&b);                           /* CIE whose string never ends */
    putn(&b, 0, 4);
    put8(&b, 1);
    put8(&b, 'z');
    put8(&b, 'R');
    put8(&b, 'S');
    patch32(&b, A, b.n - A - 4);
    fde_pcrel(&b, A, 0x401000, 0x10, true);
    expect_fail(b.b, b.n, "unterminated CIE augmentation", "truncated CIE at offset 0x0");

    memset(&b, 0, sizeof b);
    A = cie_zR(&b, 0x1b);
    f = fde_begin(&b, A);
    pcrel4(&b, 0x401000);
    putn(&b, 0x10, 2);                           /* range cut short by the length */
    patch32(&b, f, b.n - f - 4);
    expect_fail(b.b, b.n, "truncated FDE", "truncated FDE at offset 0x18");
}

/* Exercises the fast path: 60,000 FDEs over 3 CIEs. */
static void test_many(void)
{
    enum { N = 60000 };
    size_t cap = 3 * 24 + (size_t)N * 20 + 4;
    uint8_t *d = calloc(1, cap);
    size_t n = 0, cies[3];
    for (int k = 0; k < 3; k++) {
        struct buf b;
        memset(&b, 0, sizeof b);
        cie_zR(&b, 0x1b);
        cies[k] = n;
        memcpy(d + n, b.b, b.n);
        n += b.n;
    }
    for (int i = 0; i < N; i++) {
        size_t at = n;
        uint64_t start = 0x800000 + (uint64_t)(N - i) * 0x40;   /* descending */
        uint8_t *p = d + at;
        uint32_t v[4] = { 16, (uint32_t)(at + 4 - cies[i % 3]),
                          (uint32_t)(start - (VADDR + at + 8)), 0x30 };
        memcpy(p, v, 16);
        p[16] = 0;                               /* aug length */
        n += 20;
    }
    n += 4;                                      /* terminator (calloc'ed) */
    struct eh_fde *f = NULL;
    size_t nf = 0;
    char err[128] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = eh_frame_fdes(d, n, VADDR, &f, &nf, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    diag("60000 FDEs parsed in %.2f ms",
         (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    bool good = rc == 0 && nf == N;
    for (size_t i = 0; good && i < nf; i++)
        good = f[i].start == 0x800000 + (uint64_t)(i + 1) * 0x40 && f[i].end == f[i].start + 0x30;
    ok(good, "60000 FDEs parsed and sorted (%s)", err);
    if (rc == 0)
        free(f);
    free(d);
}

/* ---- LSDA --------------------------------------------------------------- */

struct mem {
    uint64_t base;
    const uint8_t *p;
    size_t n;
};

static const uint8_t *mem_read(void *ctx, uint64_t vaddr, size_t *avail)
{
    struct mem *m = ctx;
    if (vaddr < m->base || vaddr - m->base >= m->n)
        return NULL;
    *avail = m->n - (size_t)(vaddr - m->base);
    return m->p + (vaddr - m->base);
}

static int lsda_run(struct buf *b, uint64_t base, uint64_t func, uint64_t **pads, size_t *n,
                    char *err)
{
    uint8_t *copy = malloc(b->n);
    memcpy(copy, b->b, b->n);
    struct mem m = { base, copy, b->n };
    int rc = lsda_landing_pads(mem_read, &m, base, func, pads, n, err, 128);
    free(copy);
    return rc;
}

static void test_lsda(void)
{
    struct buf b;
    uint64_t *pads = NULL;
    size_t n = 0;
    char err[128] = "";

    /* GCC's usual form: LPStart omitted, TType present, uleb128 call sites. */
    memset(&b, 0, sizeof b);
    put8(&b, 0xff);
    put8(&b, 0x9b);
    uleb(&b, 200);                               /* TType offset (2-byte uleb) */
    put8(&b, 0x01);
    struct buf cs = { .n = 0 };
    uleb(&cs, 0x10); uleb(&cs, 0x5); uleb(&cs, 0x140); uleb(&cs, 0);
    uleb(&cs, 0x20); uleb(&cs, 0x8); uleb(&cs, 0); uleb(&cs, 0);      /* no pad */
    uleb(&cs, 0x30); uleb(&cs, 0x4); uleb(&cs, 0x60); uleb(&cs, 1);
    uleb(&cs, 0x38); uleb(&cs, 0x2); uleb(&cs, 0x140); uleb(&cs, 3);  /* repeat */
    uleb(&b, cs.n);
    memcpy(b.b + b.n, cs.b, cs.n);
    b.n += cs.n;
    put8(&b, 1); put8(&b, 0);                    /* action table */
    int rc = lsda_run(&b, 0x500000, 0x402000, &pads, &n, err);
    is_int(0, rc, "uleb128 LSDA parses (%s)", err);
    is_int(2, (long long)n, "two unique landing pads");
    if (rc == 0 && n == 2) {
        is_hex(0x402060, pads[0], "pad = func_start + 0x60");
        is_hex(0x402140, pads[1], "pad = func_start + 0x140");
    }
    if (rc == 0)
        free(pads);

    /* Explicit udata4 LPStart and udata4 call sites. */
    memset(&b, 0, sizeof b);
    put8(&b, 0x03);
    putn(&b, 0x402800, 4);
    put8(&b, 0xff);
    put8(&b, 0x03);
    uleb(&b, 26);
    putn(&b, 0x0, 4); putn(&b, 0x10, 4); putn(&b, 0x10, 4); uleb(&b, 0);
    putn(&b, 0x10, 4); putn(&b, 0x10, 4); putn(&b, 0, 4); uleb(&b, 0);
    rc = lsda_run(&b, 0x500100, 0x402000, &pads, &n, err);
    ok(rc == 0 && n == 1 && pads[0] == 0x402810, "udata4 LPStart + udata4 call sites (%s)", err);
    if (rc == 0)
        free(pads);

    /* pcrel|sdata4 LPStart, relative to its own field (lsda + 1). */
    memset(&b, 0, sizeof b);
    put8(&b, 0x1b);
    putn(&b, 0x403000 - (0x500200 + 1), 4);
    put8(&b, 0xff);
    put8(&b, 0x01);
    uleb(&b, 4);
    uleb(&b, 0); uleb(&b, 4); uleb(&b, 8); uleb(&b, 0);
    rc = lsda_run(&b, 0x500200, 0x402000, &pads, &n, err);
    ok(rc == 0 && n == 1 && pads[0] == 0x403008, "pcrel LPStart (%s)", err);
    if (rc == 0)
        free(pads);

    /* Empty call-site table. */
    memset(&b, 0, sizeof b);
    put8(&b, 0xff); put8(&b, 0xff); put8(&b, 0x01); uleb(&b, 0);
    rc = lsda_run(&b, 0x500300, 0x402000, &pads, &n, err);
    ok(rc == 0 && n == 0 && pads != NULL, "empty call-site table: no pads");
    if (rc == 0)
        free(pads);

    /* Call-site table longer than the mapped bytes. */
    memset(&b, 0, sizeof b);
    put8(&b, 0xff); put8(&b, 0xff); put8(&b, 0x01); uleb(&b, 40);
    uleb(&b, 0); uleb(&b, 4); uleb(&b, 8); uleb(&b, 0);
    rc = lsda_run(&b, 0x500400, 0x402000, &pads, &n, err);
    ok(rc == -1 && strstr(err, "extends past") && pads == NULL, "overlong call-site table: -1 (%s)", err);

    /* Entry cut off inside the table. */
    memset(&b, 0, sizeof b);
    put8(&b, 0xff); put8(&b, 0xff); put8(&b, 0x03); uleb(&b, 6);
    putn(&b, 0, 4); putn(&b, 0x10, 2);
    rc = lsda_run(&b, 0x500500, 0x402000, &pads, &n, err);
    ok(rc == -1 && strstr(err, "truncated call-site entry"), "truncated call-site entry: -1 (%s)", err);

    /* Unknown call-site encoding; unmapped LSDA. */
    memset(&b, 0, sizeof b);
    put8(&b, 0xff); put8(&b, 0xff); put8(&b, 0x07); uleb(&b, 0);
    rc = lsda_run(&b, 0x500600, 0x402000, &pads, &n, err);
    ok(rc == -1 && strstr(err, "call-site encoding"), "unknown call-site encoding: -1 (%s)", err);
    struct mem m = { 0x500000, b.b, b.n };
    rc = lsda_landing_pads(mem_read, &m, 0x700000, 0x402000, &pads, &n, err, sizeof err);
    ok(rc == -1 && strstr(err, "not mapped"), "unmapped LSDA: -1 (%s)", err);

    /* Every truncation of the first LSDA. */
    memset(&b, 0, sizeof b);
    put8(&b, 0x1b); putn(&b, 0x100, 4); put8(&b, 0x9b); uleb(&b, 300); put8(&b, 0x01);
    uleb(&b, cs.n);
    memcpy(b.b + b.n, cs.b, cs.n);
    b.n += cs.n;
    bool fine = true;
    size_t full = b.n;
    for (size_t len = 1; len <= full; len++) {
        b.n = len;
        rc = lsda_run(&b, 0x500000, 0x402000, &pads, &n, err);
        if (rc == 0)
            free(pads);
        if ((len < full) != (rc == -1))
            fine = false;
    }
    ok(fine, "every truncated LSDA fails, the full one parses");
}

int main(void)
{
    plan(37);
    test_good();
    test_malformed();
    test_many();
    test_lsda();
    return tap_done() ? 1 : 0;
}
