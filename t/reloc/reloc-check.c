/*
 * reloc-check ORIGINAL REWRITTEN: an independent check of the code
 * kprewrite wrote into REWRITTEN (doc/hardening.md, "Relocation check").
 *
 * For every entry of the probe table (include/kprewrite/abi.h, the only
 * thing shared with kprewrite), the original instructions of its DCR (the
 * table's copy of the site's bytes, checked against ORIGINAL) are decoded
 * and matched, one by one, against the relocated copy in the pool at
 * code + ool_off: same operation; direct branches to the same absolute
 * target with the same condition; RIP-relative operands reaching the same
 * absolute address; calls emulated so that the original return address is
 * pushed (followed by a small symbolic evaluation, callsim.c); indirect
 * jumps through the same operand; then the jmp back to site + dcr_len.
 * The site must hold the jmp to its detour (or the int3), and no byte of
 * the image may change outside the sites, the pool, the headers and the
 * dynamic data kprewrite re-points. Every site must be an instruction
 * boundary: its function's start one of a linear sweep from the last
 * function symbol before it or its section's start (rc-bounds.c), the
 * site one of the decode from there.
 *
 * One line a mismatch:
 *   LABEL: NAME+0xOFF at 0xSITE: [rule] 'original' -> 'copy': why
 * then a summary line. Exit 0: no mismatch; 1: mismatches; 2: error.
 *
 * Decodes with Zydis through its own setup (rc-insn.c); shares no code
 * with src/arch/x86 or src/rewriter, on purpose.
 */
#include "rc.h"
#include "kprewrite/abi.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf {
    const char *path;
    const uint8_t *map;
    size_t size;
    const Elf64_Ehdr *eh;
    const Elf64_Phdr *ph;
    size_t phnum;
    const Elf64_Shdr *sh;
    size_t shnum;
    const char *shstr;
    size_t shstrsz;
};

struct range {
    uint64_t lo, hi;
};

/* An instruction of an optimized DCR after its first, and its copy. */
struct inner {
    uint64_t orig, copy, site;
};

struct ctx {
    struct elf in, out;
    struct inner *inner;              /* sorted by orig once every entry is checked */
    size_t ninner, capinner;
    struct range *fixes;              /* the fixups' ranges (vaddr) */
    size_t nfixes;
    uint64_t *codes;                  /* every optimized entry's detour entry */
    size_t ncodes;
    const char *label;
    bool verbose, quiet, bytes;
    long max_lines;
    unsigned long mis[R_COUNT], printed[R_COUNT];
    unsigned long entries, optimized, int3, insns;
    unsigned long bounds;             /* sites whose boundaries were checked (rc-bounds.c) */
    uint64_t tab;                     /* the table's link-time address */
    uint64_t text_lo, text_hi;        /* .kprewrite.text */
    struct range *sites;
    size_t nsites;
    uint64_t *fsyms;                  /* the original's function symbols (addresses, sorted, once each) */
    size_t nfsyms;
    struct rc_bq *bq;                 /* boundaries to prove, once every entry is read */
    size_t nbq, capbq;
    char (*bwho)[160];                /* for each query's tag: the entry it is about */
    size_t nbwho, capbwho;
    uint64_t *pads;                   /* the original's FDE starts, but signal frames' (sorted) */
    size_t npads;
};

static int die(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    fputs("reloc-check: ", stderr);
    vfprintf(stderr, f, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ---- ELF ------------------------------------------------------------------ */

static void elf_open(struct elf *e, const char *path)
{
    memset(e, 0, sizeof *e);
    e->path = path;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        die("%s: %s", path, strerror(errno));
    if ((size_t)st.st_size < sizeof(Elf64_Ehdr))
        die("%s: not an ELF file", path);
    e->size = (size_t)st.st_size;
    void *m = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        die("%s: mmap: %s", path, strerror(errno));
    close(fd);
    e->map = m;
    e->eh = m;
    const Elf64_Ehdr *h = e->eh;
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_machine != EM_X86_64)
        die("%s: not an x86-64 ELF file", path);
    if (h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phoff > e->size || h->e_phoff % 8 ||
        (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > e->size - h->e_phoff)
        die("%s: malformed program headers", path);
    e->ph = (const Elf64_Phdr *)(e->map + h->e_phoff);
    e->phnum = h->e_phnum;
    if (h->e_shnum) {
        if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shoff > e->size || h->e_shoff % 8 ||
            (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size - h->e_shoff)
            die("%s: malformed section headers", path);
        e->sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
        e->shnum = h->e_shnum;
        if (h->e_shstrndx && h->e_shstrndx < e->shnum) {
            const Elf64_Shdr *s = &e->sh[h->e_shstrndx];
            if (s->sh_offset <= e->size && s->sh_size <= e->size - s->sh_offset && s->sh_size) {
                e->shstr = (const char *)e->map + s->sh_offset;
                e->shstrsz = s->sh_size;
            }
        }
    }
}

static const char *sec_name(const struct elf *e, const Elf64_Shdr *s)
{
    if (!e->shstr || s->sh_name >= e->shstrsz || !memchr(e->shstr + s->sh_name, 0, e->shstrsz - s->sh_name))
        return "";
    return e->shstr + s->sh_name;
}

static const Elf64_Shdr *sec_by_name(const struct elf *e, const char *name)
{
    for (size_t i = 1; i < e->shnum; i++)
        if (strcmp(sec_name(e, &e->sh[i]), name) == 0)
            return &e->sh[i];
    return NULL;
}

/* The file bytes at vaddr, through the PT_LOADs. */
static const uint8_t *vread(const struct elf *e, uint64_t vaddr, size_t *avail)
{
    for (size_t i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD || vaddr < p->p_vaddr || vaddr - p->p_vaddr >= p->p_filesz)
            continue;
        if (p->p_offset > e->size || p->p_filesz > e->size - p->p_offset)
            continue;
        *avail = (size_t)(p->p_filesz - (vaddr - p->p_vaddr));
        return e->map + p->p_offset + (vaddr - p->p_vaddr);
    }
    *avail = 0;
    return NULL;
}

static bool v2off(const struct elf *e, uint64_t vaddr, uint64_t *off)
{
    size_t avail;
    const uint8_t *p = vread(e, vaddr, &avail);
    if (!p)
        return false;
    *off = (uint64_t)(p - e->map);
    return true;
}

static bool off2v(const struct elf *e, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type == PT_LOAD && off >= p->p_offset && off - p->p_offset < p->p_filesz) {
            *vaddr = p->p_vaddr + (off - p->p_offset);
            return true;
        }
    }
    return false;
}

static const uint8_t *out_read(void *c, uint64_t addr, size_t *avail)
{
    return vread(&((struct ctx *)c)->out, addr, avail);
}

/* A word of a non-writable PT_LOAD of the rewritten image (for constants). */
static const uint8_t *out_read_const(void *c, uint64_t addr, size_t *avail)
{
    const struct elf *e = &((struct ctx *)c)->out;
    for (size_t i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type == PT_LOAD && !(p->p_flags & PF_W) && addr >= p->p_vaddr && addr - p->p_vaddr < p->p_filesz)
            return vread(e, addr, avail);
    }
    *avail = 0;
    return NULL;
}

/* ---- reporting ---------------------------------------------------------------- */

struct entry_ctx {
    char who[160];                    /* NAME+0xOFF at 0xSITE */
    uint64_t site, code, ool;
    unsigned dcr_len;
};

static void mismatch(struct ctx *c, const struct entry_ctx *ec, enum rule r, const char *orig, const char *copy,
                     const char *f, ...)
{
    c->mis[r]++;
    if (c->quiet || (c->max_lines >= 0 && c->printed[r] >= (unsigned long)c->max_lines))
        return;
    c->printed[r]++;
    char why[400];
    va_list ap;
    va_start(ap, f);
    vsnprintf(why, sizeof why, f, ap);
    va_end(ap);
    printf("%s: %s: [%s] '%s' -> '%s': %s\n", c->label, ec ? ec->who : "image", rule_name[r], orig ? orig : "",
           copy ? copy : "", why);
}

static void hex(const uint8_t *p, size_t n, char *buf, size_t size)
{
    size_t u = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && u + 4 < size; i++)
        u += snprintf(buf + u, size - u, "%s%02x", i ? " " : "", p[i]);
}

/* ---- instruction classes ---------------------------------------------------------- */

enum cls { C_OTHER, C_JMP, C_JCC, C_JMP_IND, C_CALL, C_CALL_IND, C_RET };

static bool is_rel_imm(const struct insn *in)
{
    return in->zi.operand_count_visible >= 1 && in->op[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
           in->op[0].imm.is_relative;
}

static uint64_t rel_target(const struct insn *in)
{
    return in->addr + in->zi.length + (uint64_t)in->op[0].imm.value.s;
}

/* By the operands, not by ZYDIS_ATTRIB_IS_RELATIVE (also set for a
 * RIP-relative memory operand). */
static enum cls classify(const struct insn *in)
{
    const ZydisDecodedInstruction *zi = &in->zi;
    if (zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
        return C_OTHER;
    switch (zi->mnemonic) {
    case ZYDIS_MNEMONIC_JMP:
        return is_rel_imm(in) ? C_JMP : C_JMP_IND;
    case ZYDIS_MNEMONIC_CALL:
        return is_rel_imm(in) ? C_CALL : C_CALL_IND;
    case ZYDIS_MNEMONIC_RET:
        return C_RET;
    default:
        break;
    }
    if (zi->meta.category == ZYDIS_CATEGORY_COND_BR && is_rel_imm(in))
        return C_JCC;
    return C_OTHER;
}

/* Cannot run anywhere but where it was: why, or NULL. */
static const char *unrelocatable(const struct insn *in)
{
    const ZydisDecodedInstruction *zi = &in->zi;
    switch (zi->mnemonic) {
    case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
    case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ:
        return "loop/jrcxz has only a rel8 form";
    case ZYDIS_MNEMONIC_XBEGIN:
        return "xbegin's abort target is relative";
    case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INTO: case ZYDIS_MNEMONIC_INT1:
        return "a trap reports its address";
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
        return "ud: a bug/trap site found by its address";
    case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSENTER: case ZYDIS_MNEMONIC_SYSRET:
    case ZYDIS_MNEMONIC_SYSEXIT:
        return "a system call's return address is its own";
    case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
        return "privileged or interrupt return";
    default:
        break;
    }
    if (zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
        return "far transfer";
    if (zi->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED)
        return "privileged";
    if (zi->mnemonic == ZYDIS_MNEMONIC_MOV && in->op[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
        in->op[0].reg.value == ZYDIS_REGISTER_SS)
        return "mov to %ss shadows the next instruction";
    return NULL;
}

/* Does control never reach the next instruction? */
static bool ends_flow(const struct insn *in)
{
    switch (in->zi.mnemonic) {
    case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ: case ZYDIS_MNEMONIC_SYSRET: case ZYDIS_MNEMONIC_SYSEXIT:
        return true;
    default:
        return false;
    }
}

/* The absolute address a RIP- (or EIP-) relative operand reaches. */
static uint64_t ripabs(const struct insn *in, const ZydisDecodedOperand *o)
{
    uint64_t a = in->addr + in->zi.length + (uint64_t)o->mem.disp.value;
    return o->mem.base == ZYDIS_REGISTER_EIP ? (a & 0xffffffffu) : a;
}

static bool riprel(const ZydisDecodedOperand *o)
{
    return o->type == ZYDIS_OPERAND_TYPE_MEMORY &&
           (o->mem.base == ZYDIS_REGISTER_RIP || o->mem.base == ZYDIS_REGISTER_EIP);
}

#define PREFIX_ATTRIBS (ZYDIS_ATTRIB_HAS_LOCK | ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE | \
    ZYDIS_ATTRIB_HAS_BND | ZYDIS_ATTRIB_HAS_XACQUIRE | ZYDIS_ATTRIB_HAS_XRELEASE | ZYDIS_ATTRIB_HAS_NOTRACK | \
    ZYDIS_ATTRIB_HAS_SEGMENT | ZYDIS_ATTRIB_HAS_OPERANDSIZE | ZYDIS_ATTRIB_HAS_ADDRESSSIZE | \
    ZYDIS_ATTRIB_HAS_EVEX_B)

/* Two memory operands reach the same memory: -1 yes, else the rule. */
static int same_mem(const struct insn *a, const ZydisDecodedOperand *x, const struct insn *b,
                    const ZydisDecodedOperand *y, char *why, size_t n)
{
    if (x->mem.type != y->mem.type || x->mem.segment != y->mem.segment || x->mem.base != y->mem.base ||
        x->mem.index != y->mem.index || x->mem.scale != y->mem.scale) {
        snprintf(why, n, "another memory operand");
        return R_SAME_OP;
    }
    if (riprel(x)) {
        if (ripabs(a, x) != ripabs(b, y)) {
            snprintf(why, n, "reaches 0x%llx, the original 0x%llx", (unsigned long long)ripabs(b, y),
                     (unsigned long long)ripabs(a, x));
            return R_RIPREL;
        }
    } else if (x->mem.disp.value != y->mem.disp.value) {
        snprintf(why, n, "displacement %lld, the original %lld", (long long)y->mem.disp.value,
                 (long long)x->mem.disp.value);
        return R_SAME_OP;
    }
    return -1;
}

/* The copy does what the original did: -1 yes, else the rule and why. */
static int same_insn(const struct insn *a, const struct insn *b, char *why, size_t n)
{
    const ZydisDecodedInstruction *x = &a->zi, *y = &b->zi;
    if (x->mnemonic != y->mnemonic) {
        snprintf(why, n, "another instruction");
        return R_SAME_OP;
    }
    if ((x->attributes & PREFIX_ATTRIBS) != (y->attributes & PREFIX_ATTRIBS)) {
        snprintf(why, n, "other prefixes");
        return R_SAME_OP;
    }
    if (x->encoding != y->encoding || x->operand_width != y->operand_width || x->address_width != y->address_width ||
        x->operand_count != y->operand_count || x->operand_count_visible != y->operand_count_visible) {
        snprintf(why, n, "another encoding, width or operand count");
        return R_SAME_OP;
    }
    if (x->avx.vector_length != y->avx.vector_length || x->avx.mask.mode != y->avx.mask.mode ||
        x->avx.mask.reg != y->avx.mask.reg || x->avx.broadcast.mode != y->avx.broadcast.mode ||
        x->avx.rounding.mode != y->avx.rounding.mode || x->avx.has_sae != y->avx.has_sae ||
        x->avx.has_eviction_hint != y->avx.has_eviction_hint) {
        snprintf(why, n, "other vector attributes (length, mask, broadcast, rounding)");
        return R_SAME_OP;
    }
    for (unsigned i = 0; i < x->operand_count; i++) {
        const ZydisDecodedOperand *o = &a->op[i], *p = &b->op[i];
        if (o->type != p->type || o->size != p->size || o->visibility != p->visibility) {
            snprintf(why, n, "operand %u differs", i + 1);
            return R_SAME_OP;
        }
        switch (o->type) {
        case ZYDIS_OPERAND_TYPE_REGISTER:
            if (o->reg.value != p->reg.value) {
                snprintf(why, n, "operand %u: another register", i + 1);
                return R_SAME_OP;
            }
            break;
        case ZYDIS_OPERAND_TYPE_MEMORY: {
            int r = same_mem(a, o, b, p, why, n);
            if (r >= 0)
                return r;
            break;
        }
        case ZYDIS_OPERAND_TYPE_IMMEDIATE:
            if (o->imm.is_relative != p->imm.is_relative ||
                (o->imm.is_relative ? rel_target(a) != rel_target(b) : o->imm.value.u != p->imm.value.u)) {
                snprintf(why, n, "operand %u: another immediate", i + 1);
                return R_SAME_OP;
            }
            break;
        case ZYDIS_OPERAND_TYPE_POINTER:
            if (o->ptr.segment != p->ptr.segment || o->ptr.offset != p->ptr.offset) {
                snprintf(why, n, "operand %u: another pointer", i + 1);
                return R_SAME_OP;
            }
            break;
        default:
            break;
        }
    }
    return -1;
}

/* ---- one entry ------------------------------------------------------------------ */

struct deferred {                     /* a branch into the DCR: resolved once the copy is walked */
    unsigned from;                    /* original instruction */
    uint64_t target;                  /* original target, inside the DCR */
    uint64_t got;                     /* the copy's */
    char ctext[160];
    enum rule rule;
};

/* A byte assemblers pad with (int3, the nop forms). */
static bool pad_byte(uint8_t b)
{
    return b == 0xcc || b == 0x90 || b == 0x66 || b == 0x2e || b == 0x0f || b == 0x1f || b == 0x00 || b == 0x40 ||
           b == 0x44 || b == 0x80 || b == 0x84;
}

/* ---- instruction boundaries ---------------------------------------------------- */

static const uint8_t *in_read(void *c, uint64_t addr, size_t *avail)
{
    return vread(&((struct ctx *)c)->in, addr, avail);
}

/* The allocated section of code holding addr in e, or NULL. */
static const Elf64_Shdr *code_sec_at(const struct elf *e, uint64_t addr)
{
    for (size_t i = 1; i < e->shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_NOBITS && (s->sh_flags & SHF_EXECINSTR) && (s->sh_flags & SHF_ALLOC) &&
            addr >= s->sh_addr && addr - s->sh_addr < s->sh_size)
            return s;
    }
    return NULL;
}

static int cmp_u64v(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Where functions start by the original's symbols (.symtab, .dynsym):
 * named, defined FUNC and IFUNC symbols in code. A sweep may start there. */
static void func_symbols(struct ctx *c)
{
    const struct elf *e = &c->in;
    size_t cap = 0;
    for (size_t i = 1; i < e->shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_offset > e->size ||
            s->sh_size > e->size - s->sh_offset || s->sh_link >= e->shnum)
            continue;
        const Elf64_Shdr *st = &e->sh[s->sh_link];
        if (st->sh_offset > e->size || st->sh_size > e->size - st->sh_offset)
            continue;
        for (uint64_t o = sizeof(Elf64_Sym); o + sizeof(Elf64_Sym) <= s->sh_size; o += sizeof(Elf64_Sym)) {
            Elf64_Sym y;
            memcpy(&y, e->map + s->sh_offset + o, sizeof y);
            int type = ELF64_ST_TYPE(y.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || y.st_shndx == SHN_UNDEF || y.st_shndx == SHN_ABS ||
                y.st_name == 0 || y.st_name >= st->sh_size || e->map[st->sh_offset + y.st_name] == 0 ||
                !code_sec_at(e, y.st_value))
                continue;
            if (c->nfsyms == cap) {
                cap = cap ? 2 * cap : 1024;
                c->fsyms = realloc(c->fsyms, cap * sizeof *c->fsyms);
                if (!c->fsyms)
                    die("out of memory");
            }
            c->fsyms[c->nfsyms++] = y.st_value;
        }
    }
    if (c->nfsyms)
        qsort(c->fsyms, c->nfsyms, sizeof *c->fsyms, cmp_u64v);
    size_t k = 0;
    for (size_t i = 0; i < c->nfsyms; i++)
        if (!k || c->fsyms[i] != c->fsyms[k - 1])
            c->fsyms[k++] = c->fsyms[i];
    c->nfsyms = k;
}

static void push_bq(struct ctx *c, uint64_t origin, uint64_t addr, uint64_t limit, bool entry, size_t tag)
{
    if (c->nbq == c->capbq) {
        c->capbq = c->capbq ? 2 * c->capbq : 1024;
        c->bq = realloc(c->bq, c->capbq * sizeof *c->bq);
        if (!c->bq)
            die("out of memory");
    }
    c->bq[c->nbq++] = (struct rc_bq){ .origin = origin, .addr = addr, .limit = limit, .entry = entry, .tag = tag };
}

/* The entry's function's start fs must be a boundary of a linear sweep
 * from the last function symbol at or before it in its section, or the
 * section's start (an FDE's function in a stripped image: the FDE alone
 * proves nothing), and its site one of the decode from fs. */
static void want_boundaries(struct ctx *c, const struct entry_ctx *ec, uint64_t fs)
{
    const Elf64_Shdr *s = code_sec_at(&c->in, fs);
    if (!s || ec->site < fs || ec->site - s->sh_addr >= s->sh_size) {
        mismatch(c, ec, R_BOUNDARY, NULL, NULL, "the function's start 0x%llx and the site are not in one section of code",
                 (unsigned long long)fs);
        return;
    }
    size_t lo = 0, hi = c->nfsyms;   /* the first symbol past fs */
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (c->fsyms[m] <= fs) lo = m + 1; else hi = m;
    }
    uint64_t origin = lo && c->fsyms[lo - 1] >= s->sh_addr ? c->fsyms[lo - 1] : s->sh_addr;
    if (c->nbwho == c->capbwho) {
        c->capbwho = c->capbwho ? 2 * c->capbwho : 1024;
        c->bwho = realloc(c->bwho, c->capbwho * sizeof *c->bwho);
        if (!c->bwho)
            die("out of memory");
    }
    snprintf(c->bwho[c->nbwho], sizeof c->bwho[0], "%s", ec->who);
    c->bounds++;
    if (origin != fs)
        push_bq(c, origin, fs, s->sh_addr + s->sh_size, true, c->nbwho);
    if (ec->site != fs)
        push_bq(c, fs, ec->site, s->sh_addr + s->sh_size, false, c->nbwho);
    c->nbwho++;
}

static void check_boundaries(struct ctx *c)
{
    rc_sweep(c->bq, c->nbq, in_read, c, c->pads, c->npads);
    for (size_t i = 0; i < c->nbq; i++) {
        const struct rc_bq *b = &c->bq[i];
        if (b->ok)
            continue;
        struct entry_ctx ec;
        memset(&ec, 0, sizeof ec);
        snprintf(ec.who, sizeof ec.who, "%s", c->bwho[b->tag]);
        size_t lo = 0, hi = c->nfsyms;
        while (lo < hi) {
            size_t m = (lo + hi) / 2;
            if (c->fsyms[m] < b->origin) lo = m + 1; else hi = m;
        }
        const char *from = !b->entry ? "the function's start" :
                           lo < c->nfsyms && c->fsyms[lo] == b->origin ? "a function symbol" : "the section's start";
        char it[160] = "(undecodable)", after[96] = "";
        size_t avail;
        const uint8_t *p = vread(&c->in, b->insn, &avail);
        struct insn I;
        if (p && rc_decode(p, avail, b->insn, &I))
            rc_format(&I, it, sizeof it);
        if (b->undecodable)
            snprintf(after, sizeof after, ", after stepping over undecodable bytes up to 0x%llx",
                     (unsigned long long)b->undecodable);
        mismatch(c, &ec, R_BOUNDARY, it, NULL, "%s0x%llx is inside an instruction: the linear sweep from 0x%llx (%s%s) "
                 "decodes 0x%llx-0x%llx", b->entry ? "the function's start " : "", (unsigned long long)b->addr,
                 (unsigned long long)b->origin, from, after, (unsigned long long)b->insn,
                 (unsigned long long)b->insn_end);
    }
}


/* window: e stands for a window evicted for trampolines (a fixup): its
 * copy is checked as a DCR's, its bytes after the jmp by check_fixups */
static void check_entry(struct ctx *c, const struct kprw_table *t, const struct kprw_entry *e, const char *strs,
                        bool window)
{
    struct entry_ctx ec;
    memset(&ec, 0, sizeof ec);
    uint32_t strsz = t->strings_size;
    ec.site = c->tab + (uint64_t)(int64_t)e->site_rel;
    ec.code = c->tab + (uint64_t)(int64_t)e->code_rel;
    ec.ool = ec.code + e->ool_off;
    ec.dcr_len = e->dcr_len;
    char name[128];
    if (KPRW_NAME_BY_ADDR(e->name_off))
        snprintf(name, sizeof name, "%s%llx", e->name_off == KPRW_NAME_FDE ? KPRW_FDE_PREFIX : KPRW_FOUND_PREFIX,
                 (unsigned long long)(t->link_addr + (uint64_t)(int64_t)e->site_rel - e->offset));
    else if (e->name_off < strsz && memchr(strs + e->name_off, 0, strsz - e->name_off))
        snprintf(name, sizeof name, "%s", strs + e->name_off);
    else if ((e->name_off & KPRW_NAME_DYN) && t->version >= 5 && t->dynstr_rel) {
        size_t av;   /* the image's own name, in its dynamic string table */
        const char *d = (const char *)vread(&c->out, c->tab + (uint64_t)(int64_t)t->dynstr_rel +
                                            (e->name_off & ~KPRW_NAME_DYN), &av);
        if (d && memchr(d, 0, av))
            snprintf(name, sizeof name, "%s", d);
        else
            snprintf(name, sizeof name, "(name_off 0x%x)", e->name_off);
    }
    else
        snprintf(name, sizeof name, "(name_off 0x%x)", e->name_off);
    if (window)
        snprintf(ec.who, sizeof ec.who, "window evicted at 0x%llx", (unsigned long long)ec.site);
    else
        snprintf(ec.who, sizeof ec.who, "%s+0x%x at 0x%llx", name, e->offset, (unsigned long long)ec.site);
    c->entries += !window;
    want_boundaries(c, &ec, ec.site - e->offset);

    bool opt = e->verdict == KPRW_OPTIMIZED;
    if ((e->verdict != KPRW_OPTIMIZED && e->verdict != KPRW_INT3) || (e->kind != KPRW_KIND_K && e->kind != KPRW_KIND_R) ||
        e->dcr_len == 0 || e->dcr_len > KPRW_ORIG_MAX ||
        (!(e->flags & KPRW_F_ORIG_AT_COPY) && (uint64_t)e->orig_off + e->dcr_len > strsz) ||
        ((e->flags & KPRW_F_ORIG_AT_COPY) && !(t->flags & KPRW_T_ORIG_AT_COPY)) ||
        (!KPRW_NAME_BY_ADDR(e->name_off) && !(e->name_off & KPRW_NAME_DYN) && e->name_off >= strsz) ||
        (e->name_off == KPRW_NAME_FOUND && !(t->flags & KPRW_T_FOUND_NAMES))) {
        mismatch(c, &ec, R_TABLE, NULL, NULL, "malformed entry (verdict %u, kind %u, dcr_len %u, orig_off %u)",
                 e->verdict, e->kind, e->dcr_len, e->orig_off);
        return;
    }
    if (window)
        ;
    else if (opt)
        c->optimized++;
    else
        c->int3++;
    if (e->dcr_len < ((e->flags & KPRW_F_JUMP8) ? 2 : 5) && opt)
        mismatch(c, &ec, R_TABLE, NULL, NULL, "an optimized entry owns %u bytes, fewer than its jmp", e->dcr_len);
    char h1[100], h2[100];
    size_t avail;
    /* the table's original bytes: in its strings, or the copy's first bytes
     * (checked against the input below, like the strings' would be) */
    const uint8_t *orig = (const uint8_t *)strs + e->orig_off;
    if (e->flags & KPRW_F_ORIG_AT_COPY) {
        orig = vread(&c->out, ec.ool, &avail);
        if (!orig || avail < e->dcr_len) {
            mismatch(c, &ec, R_TABLE, NULL, NULL, "the original bytes it keeps in its copy are not in the file");
            return;
        }
    }

    /* the original bytes, as the input has them */
    const uint8_t *ip = vread(&c->in, ec.site, &avail);
    if (!ip || avail < e->dcr_len) {
        mismatch(c, &ec, R_ORIG, NULL, NULL, "the site is not in the original image's file bytes");
    } else if (memcmp(ip, orig, e->dcr_len)) {
        hex(ip, e->dcr_len, h1, sizeof h1);
        hex(orig, e->dcr_len, h2, sizeof h2);
        mismatch(c, &ec, R_ORIG, h1, h2, "the table's original bytes are not the original image's");
    }
    /* the site now: jmp code; int3 padding. Or int3 and the original tail. */
    const uint8_t *sp = vread(&c->out, ec.site, &avail);
    if (!sp || avail < e->dcr_len) {
        mismatch(c, &ec, R_SITE, NULL, NULL, "the site is not in the rewritten image's file bytes");
    } else {
        bool good;
        if (opt && (e->flags & KPRW_F_JUMP8)) {
            /* a short site: jmp rel8 to a trampoline, a jmp rel32 to the detour */
            uint64_t tr = ec.site + 2 + (uint64_t)(int64_t)(int8_t)sp[1];
            size_t ta;
            const uint8_t *tp = vread(&c->out, tr, &ta);
            int32_t d = 0;
            if (tp && ta >= 5)
                memcpy(&d, tp + 1, 4);
            good = e->dcr_len >= 2 && sp[0] == 0xeb && tp && ta >= 5 && tp[0] == 0xe9 &&
                   tr + 5 + (uint64_t)(int64_t)d == ec.code;
            for (unsigned i = 2; good && i < e->dcr_len; i++)
                good = sp[i] == 0xcc;
        } else if (opt) {
            int32_t d;
            memcpy(&d, sp + 1, 4);
            good = e->dcr_len >= 5 && sp[0] == 0xe9 && ec.site + 5 + (uint64_t)(int64_t)d == ec.code;
            for (unsigned i = 5; good && !window && i < e->dcr_len; i++)
                good = sp[i] == 0xcc;
        } else {
            good = sp[0] == 0xcc && memcmp(sp + 1, orig + 1, e->dcr_len - 1u) == 0;
        }
        if (!good) {
            hex(sp, e->dcr_len, h1, sizeof h1);
            mismatch(c, &ec, R_SITE, NULL, h1, opt ? "the site is not a jmp to its detour at 0x%llx (then int3s)"
                                                  : "the site is not an int3 and the original tail", (unsigned long long)ec.code);
        }
    }
    if (ec.code < c->text_lo || ec.code >= c->text_hi || ec.ool < c->text_lo || ec.ool >= c->text_hi) {
        mismatch(c, &ec, R_TABLE, NULL, NULL, "code 0x%llx / copy 0x%llx outside %s", (unsigned long long)ec.code,
                 (unsigned long long)ec.ool, KPRW_SEC_TEXT);
        return;
    }

    /* the original instructions: the whole DCR, or up to a ret/jmp
     * followed by padding; an int3 entry's first instruction */
    struct insn oi[KPRW_ORIG_MAX];
    char otext[KPRW_ORIG_MAX][160];
    unsigned n = 0, off = 0;
    while (off < e->dcr_len) {
        if (!rc_decode(orig + off, e->dcr_len - off, ec.site + off, &oi[n])) {
            hex(orig + off, e->dcr_len - off, h1, sizeof h1);
            mismatch(c, &ec, R_DCR, h1, NULL, "the bytes at +%u are not a whole instruction within the %u bytes the "
                     "probe owns", off, e->dcr_len);
            return;
        }
        rc_format(&oi[n], otext[n], sizeof otext[n]);
        off += oi[n].zi.length;
        n++;
        if (!opt)
            break;
        if (ends_flow(&oi[n - 1])) {
            /* what follows a ret or jmp is padding the jump reaches into
             * (the padding tactic), or more of the DCR that a branch
             * reaches (a loop back into it) */
            bool pad = true;
            for (unsigned k = off; k < e->dcr_len; k++)
                pad &= pad_byte(orig[k]);
            if (pad)
                break;
        }
    }
    if (!opt && off != e->dcr_len)
        mismatch(c, &ec, R_DCR, otext[0], NULL, "an int3 entry owns %u bytes, its instruction has %u", e->dcr_len, off);

    /* walk the copy */
    uint64_t pc = ec.ool, copy_at[KPRW_ORIG_MAX];
    struct deferred dfr[KPRW_ORIG_MAX];
    unsigned ndfr = 0;
    bool left = false;                 /* the copy's last instruction ended control (an emulated call) */
    char ctext[600];
    for (unsigned i = 0; i < n; i++) {
        const struct insn *I = &oi[i];
        const char *ot = otext[i];
        uint64_t inext = I->addr + I->zi.length;
        copy_at[i] = pc;
        left = false;
        c->insns++;
        const char *why = unrelocatable(I);
        if (why) {
            mismatch(c, &ec, R_UNRELOC, ot, NULL, "%s: must not be in a%s DCR", why, opt ? "n optimized" : "n int3 entry's");
            goto out;
        }
        struct insn C;
        const uint8_t *cp = vread(&c->out, pc, &avail);
        if (!rc_decode(cp, avail, pc, &C)) {
            mismatch(c, &ec, R_DCR, ot, NULL, "undecodable copy at 0x%llx", (unsigned long long)pc);
            goto out;
        }
        rc_format(&C, ctext, sizeof ctext);
        enum cls k = classify(I);
        switch (k) {
        case C_JMP:
        case C_JCC: {
            uint64_t T = rel_target(I);
            if (classify(&C) != k || C.zi.mnemonic != I->zi.mnemonic) {
                mismatch(c, &ec, R_BRANCH, ot, ctext, k == C_JMP ? "not a direct jmp" : "not a jcc with the same condition");
                break;
            }
            uint64_t got = rel_target(&C);
            if (T > ec.site && T < ec.site + e->dcr_len) {
                dfr[ndfr] = (struct deferred){ i, T, got, "", R_BRANCH };
                snprintf(dfr[ndfr].ctext, sizeof dfr[ndfr].ctext, "%.159s", ctext);
                ndfr++;
            } else if (got != T) {
                mismatch(c, &ec, R_BRANCH, ot, ctext, "goes to 0x%llx, the original to 0x%llx", (unsigned long long)got,
                         (unsigned long long)T);
            }
            break;
        }
        case C_JMP_IND: {
            const ZydisDecodedOperand *o = &I->op[0], *p = &C.op[0];
            char w[160] = "";
            bool good = C.zi.mnemonic == ZYDIS_MNEMONIC_JMP && classify(&C) == C_JMP_IND && o->type == p->type &&
                        o->size == p->size;
            if (good && o->type == ZYDIS_OPERAND_TYPE_REGISTER)
                good = o->reg.value == p->reg.value;
            else if (good && o->type == ZYDIS_OPERAND_TYPE_MEMORY)
                good = same_mem(I, o, &C, p, w, sizeof w) < 0;
            if (!good)
                mismatch(c, &ec, R_INDJMP, ot, ctext, "not an indirect jmp through the same operand%s%s", w[0] ? ": " : "", w);
            break;
        }
        case C_CALL:
        case C_CALL_IND: {
            if (C.zi.mnemonic == ZYDIS_MNEMONIC_CALL) {
                /* a call in the copy: the callee returns into the pool */
                mismatch(c, &ec, R_CALL_RET, ot, ctext, "a call in the copy: the callee returns to 0x%llx, in the "
                         "pool, not to 0x%llx%s", (unsigned long long)(pc + C.zi.length), (unsigned long long)inext,
                         i + 1 < n ? "; and the call is not the DCR's last instruction, so that address is overwritten too" : "");
                char w[160];
                if (k == C_CALL && (classify(&C) != C_CALL || rel_target(&C) != rel_target(I)))
                    mismatch(c, &ec, R_CALL_TARGET, ot, ctext, "calls elsewhere");
                else if (k == C_CALL_IND && same_insn(I, &C, w, sizeof w) >= 0)
                    mismatch(c, &ec, R_CALL_TARGET, ot, ctext, "calls through another operand: %s", w);
                pc += C.zi.length;
                continue;
            }
            struct callsim_expect x = {
                .kind = k == C_CALL ? CS_DIRECT : I->op[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? CS_REG : CS_MEM,
                .ret = inext, .pic = c->out.eh->e_type == ET_DYN, .read_const = out_read_const, .ctx = c,
            };
            if (x.kind == CS_DIRECT)
                x.target = rel_target(I);
            else if (x.kind == CS_REG)
                x.reg = rc_gpr64(I->op[0].reg.value);
            else
                x.orig = I;
            if (I->zi.operand_width != 64 || (x.kind == CS_REG && x.reg < 0)) {
                mismatch(c, &ec, R_CALL_TARGET, ot, ctext, "a call this checker cannot follow (operand width %u)",
                         I->zi.operand_width);
                goto out;
            }
            static struct callsim_result res;
            callsim(&x, out_read, c, pc, &res);
            size_t u = 0;
            ctext[0] = 0;
            for (unsigned j = 0; j < res.ninsns && u + 4 < sizeof ctext; j++) {
                char one[160];
                rc_format(&res.insns[j], one, sizeof one);
                u += snprintf(ctext + u, sizeof ctext - u, "%s%s", j ? "; " : "", one);
            }
            bool ret_problem = false;
            for (unsigned j = 0; j < res.nproblems; j++) {
                mismatch(c, &ec, res.problem[j].rule, ot, ctext, "%s", res.problem[j].text);
                ret_problem |= res.problem[j].rule == R_CALL_RET;
            }
            if (!res.complete)
                goto out;   /* cannot tell where the rest of the copy is */
            if (!ret_problem && inext > ec.site && inext < ec.site + e->dcr_len)
                mismatch(c, &ec, R_IN_DCR, ot, ctext, "returns to 0x%llx, inside the DCR's overwritten bytes",
                         (unsigned long long)inext);
            pc = res.end;
            left = true;
            continue;
        }
        case C_RET:
        case C_OTHER: {
            char w[200];
            int r = same_insn(I, &C, w, sizeof w);
            if (r >= 0)
                mismatch(c, &ec, (enum rule)r, ot, ctext, "%s", w);
            break;
        }
        }
        pc += C.zi.length;
    }
    for (unsigned d = 0; d < ndfr; d++) {
        unsigned j;
        for (j = 0; j < n && oi[j].addr != dfr[d].target; j++)
            ;
        if (j == n)
            mismatch(c, &ec, R_IN_DCR, otext[dfr[d].from], dfr[d].ctext, "the original goes to 0x%llx, inside the DCR "
                     "but not to one of its copied instructions", (unsigned long long)dfr[d].target);
        else if (dfr[d].got == dfr[d].target)
            mismatch(c, &ec, R_IN_DCR, otext[dfr[d].from], dfr[d].ctext, "goes to 0x%llx, inside the DCR's "
                     "overwritten bytes (its copy is at 0x%llx)", (unsigned long long)dfr[d].target,
                     (unsigned long long)copy_at[j]);
        else if (dfr[d].got != copy_at[j])
            mismatch(c, &ec, dfr[d].rule, otext[dfr[d].from], dfr[d].ctext, "goes to 0x%llx, not to the copy of "
                     "0x%llx at 0x%llx", (unsigned long long)dfr[d].got, (unsigned long long)dfr[d].target,
                     (unsigned long long)copy_at[j]);
    }
    /* the DCR's instructions after its first, and where their copies are:
     * a re-pointed branch or table entry must go there; at a Go function's
     * entry (KPRW_F_GO) the first too: the jump back to the entry after
     * runtime.morestack goes to the entry's copy (analyze.c, go_reentries:
     * a stack growth is no second call), which runs the same instructions */
    for (unsigned i = (e->flags & KPRW_F_GO) ? 0 : 1; opt && i < n; i++) {
        if (c->ninner == c->capinner) {
            c->capinner = c->capinner ? c->capinner * 2 : 1024;
            c->inner = realloc(c->inner, c->capinner * sizeof *c->inner);
            if (!c->inner)
                die("out of memory");
        }
        c->inner[c->ninner++] = (struct inner){ oi[i].addr, copy_at[i], ec.site };
    }
    /* the jmp back after the last instruction */
    const struct insn *L = &oi[n - 1];
    uint64_t back = ec.site + e->dcr_len;
    if (!left && !ends_flow(L)) {
        struct insn C;
        const uint8_t *cp = vread(&c->out, pc, &avail);
        bool good = rc_decode(cp, avail, pc, &C);
        if (good)
            rc_format(&C, ctext, sizeof ctext);
        else
            snprintf(ctext, sizeof ctext, "(undecodable)");
        if (!good || classify(&C) != C_JMP || rel_target(&C) != back)
            mismatch(c, &ec, R_JMP_BACK, otext[n - 1], ctext, "after the last instruction, not a jmp to 0x%llx",
                     (unsigned long long)back);
        else
            pc += C.zi.length;
    }
out:
    if (c->verbose && !c->quiet) {
        size_t u = 0;
        char all[600];
        all[0] = 0;
        for (unsigned i = 0; i < n && u + 4 < sizeof all; i++)
            u += snprintf(all + u, sizeof all - u, "%s%s", i ? "; " : "", otext[i]);
        printf("%s: %s: entry %s kind %c dcr %u copy 0x%llx-0x%llx: %s\n", c->label, ec.who,
               opt ? "optimized" : "int3", e->kind, e->dcr_len, (unsigned long long)ec.ool, (unsigned long long)pc, all);
    }
}

/* ---- re-pointed branches, table entries, trampolines (struct kprw_fixup) ------------- */

static int cmp_inner(const void *a, const void *b)
{
    const struct inner *x = a, *y = b;
    return x->orig < y->orig ? -1 : x->orig > y->orig;
}

/* The copy of the DCR instruction at a (after a DCR's first), or 0. */
static uint64_t copy_of(const struct ctx *c, uint64_t a)
{
    size_t lo = 0, hi = c->ninner;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (c->inner[m].orig < a) lo = m + 1; else hi = m;
    }
    return lo < c->ninner && c->inner[lo].orig == a ? c->inner[lo].copy : 0;
}

static bool is_code_entry(const struct ctx *c, uint64_t a)
{
    for (size_t i = 0; i < c->ncodes; i++)
        if (c->codes[i] == a)
            return true;
    return false;
}

/* Each fixup: its original bytes are the input's; a branch is the same
 * branch aimed at the copy of the DCR instruction it went to (or at a
 * trampoline that jumps there); a table entry moved by exactly as much
 * as its target; a trampoline, in what was padding, jumps to a copy or a
 * detour's entry. */
static void check_fixups(struct ctx *c, const struct kprw_table *t, const struct kprw_fixup *fx, uint32_t nfx,
                         const char *strs)
{
    /* windows evicted for trampolines: each copied out of line like a DCR
     * (its copy's instructions join the map before it is sorted) */
    struct range *wins = calloc(nfx ? nfx : 1, sizeof *wins);
    size_t nwins = 0;
    if (!wins)
        die("out of memory");
    for (uint32_t i = 0; i < nfx; i++) {
        const struct kprw_fixup *f = &fx[i];
        if (f->kind != KPRW_FIX_EVICT)
            continue;
        uint64_t a = c->tab + (uint64_t)(int64_t)f->site_rel;
        size_t oa;
        const uint8_t *op = vread(&c->out, a, &oa);
        if (!op || oa < 5 || f->len < 10 || op[0] != 0xe9 || (uint64_t)f->orig_off + f->len > t->strings_size)
            continue;   /* reported below */
        int32_t d;
        memcpy(&d, op + 1, 4);
        struct kprw_entry w = { .site_rel = f->site_rel, .code_rel = (int32_t)(a + 5 + (uint64_t)(int64_t)d - c->tab),
                                .name_off = KPRW_NAME_FDE, .orig_off = f->orig_off, .dcr_len = f->len,
                                .kind = KPRW_KIND_K, .verdict = KPRW_OPTIMIZED };
        check_entry(c, t, &w, strs, true);
        wins[nwins++] = (struct range){ a, a + f->len };
    }
    if (c->ninner)   /* (qsort of NULL, 0: undefined) */
        qsort(c->inner, c->ninner, sizeof *c->inner, cmp_inner);
    c->fixes = calloc(nfx ? nfx : 1, sizeof *c->fixes);
    if (!c->fixes)
        die("out of memory");
    for (uint32_t i = 0; i < nfx; i++) {
        const struct kprw_fixup *f = &fx[i];
        uint64_t a = c->tab + (uint64_t)(int64_t)f->site_rel;
        struct entry_ctx ec;
        memset(&ec, 0, sizeof ec);
        snprintf(ec.who, sizeof ec.who, "fixup %u at 0x%llx", i, (unsigned long long)a);
        size_t ia, oa;
        const uint8_t *ip = vread(&c->in, a, &ia), *op = vread(&c->out, a, &oa);
        if (f->len == 0 || f->len > KPRW_ORIG_MAX || (uint64_t)f->orig_off + f->len > t->strings_size || !ip ||
            !op || ia < f->len || oa < f->len) {
            mismatch(c, &ec, R_TABLE, NULL, NULL, "malformed fixup (len %u, orig_off %u)", f->len, f->orig_off);
            continue;
        }
        c->fixes[c->nfixes++] = (struct range){ a, a + f->len };
        char h1[100], h2[100];
        hex(ip, f->len, h1, sizeof h1);
        hex(op, f->len, h2, sizeof h2);
        if (memcmp(ip, strs + f->orig_off, f->len)) {
            mismatch(c, &ec, R_ORIG, h1, NULL, "the table's original bytes are not the original image's");
            continue;
        }
        struct insn I, C;
        char ot[160] = "", ct[160] = "";
        switch (f->kind) {
        case KPRW_FIX_BRANCH:
        case KPRW_FIX_BRANCH8: {
            if (!rc_decode(ip, f->len, a, &I) || I.zi.length != f->len || !is_rel_imm(&I) ||
                !rc_decode(op, f->len, a, &C) || C.zi.length != f->len || !is_rel_imm(&C)) {
                mismatch(c, &ec, R_FIXUP, h1, h2, "not a direct branch before and after");
                break;
            }
            rc_format(&I, ot, sizeof ot);
            rc_format(&C, ct, sizeof ct);
            uint64_t T = rel_target(&I), got = rel_target(&C), want = copy_of(c, T);
            if (I.zi.mnemonic != C.zi.mnemonic) {
                mismatch(c, &ec, R_FIXUP, ot, ct, "another condition");
                break;
            }
            if (!want) {
                mismatch(c, &ec, R_FIXUP, ot, ct, "the original goes to 0x%llx, no instruction of an optimized DCR "
                         "after its first", (unsigned long long)T);
                break;
            }
            if (f->kind == KPRW_FIX_BRANCH8) {   /* through a trampoline */
                size_t ta;
                const uint8_t *tp = vread(&c->out, got, &ta);
                struct insn J;
                if (!tp || !rc_decode(tp, ta, got, &J) || classify(&J) != C_JMP) {
                    mismatch(c, &ec, R_FIXUP, ot, ct, "0x%llx is no trampoline (jmp)", (unsigned long long)got);
                    break;
                }
                got = rel_target(&J);
            }
            if (got != want)
                mismatch(c, &ec, R_FIXUP, ot, ct, "goes to 0x%llx, not to the copy of 0x%llx at 0x%llx",
                         (unsigned long long)got, (unsigned long long)T, (unsigned long long)want);
            break;
        }
        case KPRW_FIX_TABLE: {
            if (f->len == 8) {
                uint64_t v, w;
                memcpy(&v, ip, 8);
                memcpy(&w, op, 8);
                if (!copy_of(c, v) || copy_of(c, v) != w)
                    mismatch(c, &ec, R_FIXUP, h1, h2, "an absolute entry for 0x%llx is 0x%llx, not its copy 0x%llx",
                             (unsigned long long)v, (unsigned long long)w, (unsigned long long)copy_of(c, v));
            } else if (f->len == 4) {
                /* target = base + entry: the entry moved by as much as some
                 * DCR instruction to its copy, the table's base at or before it */
                int32_t v, w;
                memcpy(&v, ip, 4);
                memcpy(&w, op, 4);
                bool found = false;
                for (size_t k = 0; k < c->ninner && !found; k++) {
                    uint64_t base = c->inner[k].orig - (uint64_t)(int64_t)v;
                    found = (int64_t)(c->inner[k].copy - c->inner[k].orig) == (int64_t)w - (int64_t)v &&
                            base <= a && (a - base) % 4 == 0 && a - base < 4 * 65536;
                }
                if (!found)
                    mismatch(c, &ec, R_FIXUP, h1, h2, "a relative entry moved by %lld, as no DCR instruction to "
                             "its copy does", (long long)w - (long long)v);
            } else {
                mismatch(c, &ec, R_FIXUP, h1, h2, "a table entry of %u bytes", f->len);
            }
            break;
        }
        case KPRW_FIX_TRAMPOLINE: {
            bool pad = true;
            for (unsigned k = 0; k < f->len; k++)
                pad &= pad_byte(ip[k]);
            for (size_t w = 0; w < nwins && !pad; w++)   /* or in an evicted window's tail */
                pad = a >= wins[w].lo + 5 && a + f->len <= wins[w].hi;
            if (!pad || f->len != 5 || !rc_decode(op, f->len, a, &C) || classify(&C) != C_JMP) {
                mismatch(c, &ec, R_FIXUP, h1, h2, "a trampoline must be a jmp written over padding or an evicted "
                         "window's tail");
                break;
            }
            uint64_t to = rel_target(&C);
            bool known = is_code_entry(c, to);
            for (size_t k = 0; !known && k < c->ninner; k++)
                known = c->inner[k].copy == to;
            if (!known)
                mismatch(c, &ec, R_FIXUP, h1, h2, "the trampoline goes to 0x%llx, neither a detour nor a copy",
                         (unsigned long long)to);
            break;
        }
        case KPRW_FIX_EVICT: {
            /* the copy was checked above; the tail: int3, where no trampoline is */
            bool good = f->len >= 10 && op[0] == 0xe9;
            for (unsigned k = 5; good && k < f->len; k++) {
                bool tr = false;
                for (uint32_t q = 0; q < nfx && !tr; q++) {
                    uint64_t b = c->tab + (uint64_t)(int64_t)fx[q].site_rel;
                    tr = fx[q].kind == KPRW_FIX_TRAMPOLINE && a + k >= b && a + k < b + fx[q].len;
                }
                good = tr || op[k] == 0xcc;
            }
            if (!good)
                mismatch(c, &ec, R_FIXUP, h1, h2, "an evicted window must be a jmp to its copy, then int3 or "
                         "trampolines");
            break;
        }
        default:
            mismatch(c, &ec, R_TABLE, h1, h2, "unknown fixup kind %u", f->kind);
        }
    }
    free(wins);
}

/* ---- where the original's code is: function symbols and FDEs ------------------ */

static int cmp_range(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct rangeset {
    struct range *v;
    size_t n, cap;
};

static void radd(struct rangeset *s, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            die("out of memory");
    }
    s->v[s->n++] = (struct range){ lo, hi };
}

static void rfinish(struct rangeset *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, cmp_range);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && s->v[i].lo <= s->v[k - 1].hi) {
            if (s->v[i].hi > s->v[k - 1].hi)
                s->v[k - 1].hi = s->v[i].hi;
        } else {
            s->v[k++] = s->v[i];
        }
    }
    s->n = k;
}


/* A DW_EH_PE value of .eh_frame (the forms compilers use), at *pos. */
static bool eh_value(const uint8_t *d, size_t size, size_t *pos, uint8_t enc, uint64_t vaddr, uint64_t *v)
{
    uint64_t x = 0;
    size_t n;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: n = 8; break;
    case 0x03: case 0x0b: n = 4; break;
    case 0x02: case 0x0a: n = 2; break;
    default: return false;
    }
    if (*pos + n > size)
        return false;
    for (size_t i = 0; i < n; i++)
        x |= (uint64_t)d[*pos + i] << (8 * i);
    if ((enc & 0x0f) == 0x0b)
        x = (uint64_t)(int64_t)(int32_t)x;
    else if ((enc & 0x0f) == 0x0a)
        x = (uint64_t)(int64_t)(int16_t)x;
    if ((enc & 0x70) == 0x10)
        x += vaddr + *pos;
    else if ((enc & 0x70) != 0)
        return false;
    *pos += n;
    *v = x;
    return true;
}

static bool uleb(const uint8_t *d, size_t size, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned sh = 0; *pos < size; sh += 7) {
        uint8_t b = d[(*pos)++];
        if (sh < 64)
            x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* The FDE encoding of the CIE at off ('R' of its augmentation), or -1. */
static int cie_fde_enc(const uint8_t *d, size_t size, size_t off, uint64_t vaddr)
{
    size_t pos = off + 8;   /* length, id */
    if (pos + 1 > size || d[pos] != 1)
        return -1;          /* version 1: a u8 return register */
    const char *aug = (const char *)d + pos + 1;
    size_t alen = strnlen(aug, size - pos - 1);
    pos += 2 + alen;
    uint64_t u;
    if (!uleb(d, size, &pos, &u) || !uleb(d, size, &pos, &u) || pos >= size)   /* alignments */
        return -1;
    pos++;                  /* return address register */
    if (aug[0] != 'z')
        return 0;           /* absptr */
    if (!uleb(d, size, &pos, &u))
        return -1;
    for (const char *a = aug + 1; *a; a++) {
        if (pos >= size)
            return -1;
        if (*a == 'R')
            return d[pos];
        if (*a == 'L')
            pos++;
        else if (*a == 'P') {
            uint8_t enc = d[pos++];
            uint64_t v;
            if (!eh_value(d, size, &pos, enc & 0x7f, vaddr, &v))
                return -1;
        } else if (*a != 'S' && *a != 'B' && *a != 'G')
            return -1;
    }
    return 0;
}

/* The original's code as its functions cover it: FUNC symbols with a size,
 * and .eh_frame's FDEs (a stripped binary keeps those). A linear sweep of
 * these finds its branches, not what data inside .text (hand-written
 * crypto's strings and tables) decodes as. */
static void code_ranges(const struct elf *e, struct rangeset *out)
{
    for (size_t i = 1; i < e->shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_offset > e->size ||
            s->sh_size > e->size - s->sh_offset)
            continue;
        for (uint64_t o = 0; o + sizeof(Elf64_Sym) <= s->sh_size; o += sizeof(Elf64_Sym)) {
            Elf64_Sym y;
            memcpy(&y, e->map + s->sh_offset + o, sizeof y);
            if (ELF64_ST_TYPE(y.st_info) == STT_FUNC && y.st_shndx != SHN_UNDEF && y.st_size)
                radd(out, y.st_value, y.st_value + y.st_size);
        }
    }
    const Elf64_Shdr *eh = sec_by_name(e, ".eh_frame");
    if (eh && eh->sh_type == SHT_PROGBITS && eh->sh_offset <= e->size && eh->sh_size <= e->size - eh->sh_offset) {
        const uint8_t *d = e->map + eh->sh_offset;
        size_t size = eh->sh_size;
        for (size_t pos = 0; pos + 8 <= size;) {
            uint32_t len, id;
            memcpy(&len, d + pos, 4);
            if (len == 0 || len == 0xffffffffu || len > size - pos - 4)
                break;
            memcpy(&id, d + pos + 4, 4);
            if (id != 0 && id <= pos + 4) {
                int enc = cie_fde_enc(d, size, pos + 4 - id, eh->sh_addr);
                size_t p = pos + 8;
                uint64_t start, range;
                if (enc >= 0 && eh_value(d, size, &p, (uint8_t)enc, eh->sh_addr, &start) &&
                    eh_value(d, size, &p, (uint8_t)(enc & 0x0f), eh->sh_addr, &range) && start && range)
                    radd(out, start, start + range);
            }
            pos += 4 + (size_t)len;
        }
    }
    rfinish(out);
}

/* Does the CIE at off of .eh_frame d (size bytes) have 'S' in its
 * augmentation (a signal frame)? */
static bool cie_signal(const uint8_t *d, size_t size, size_t off)
{
    size_t pos = off + 9;   /* length, id, version */
    if (pos >= size)
        return false;
    const char *aug = (const char *)d + pos;
    size_t n = strnlen(aug, size - pos);
    return memchr(aug, 'S', n) != NULL;
}

/* Where code may follow zero padding: the starts of the original's FDEs
 * (but signal frames', whose start is a byte early by convention). */
static void fde_pads(struct ctx *c)
{
    const struct elf *e = &c->in;
    const Elf64_Shdr *eh = sec_by_name(e, ".eh_frame");
    size_t cap = 0;
    /* (lld types it SHT_X86_64_UNWIND) */
    if (!eh || (eh->sh_type != SHT_PROGBITS && eh->sh_type != SHT_X86_64_UNWIND) || eh->sh_offset > e->size ||
        eh->sh_size > e->size - eh->sh_offset)
        return;
    const uint8_t *d = e->map + eh->sh_offset;
    size_t size = eh->sh_size;
    for (size_t pos = 0; pos + 8 <= size;) {
        uint32_t len, id;
        memcpy(&len, d + pos, 4);
        if (len == 0 || len == 0xffffffffu || len > size - pos - 4)
            break;
        memcpy(&id, d + pos + 4, 4);
        if (id != 0 && id <= pos + 4) {
            size_t cie = pos + 4 - id, p = pos + 8;
            int enc = cie_fde_enc(d, size, cie, eh->sh_addr);
            uint64_t start;
            if (enc >= 0 && !cie_signal(d, size, cie) && eh_value(d, size, &p, (uint8_t)enc, eh->sh_addr, &start) && start) {
                if (c->npads == cap) {
                    cap = cap ? 2 * cap : 1024;
                    c->pads = realloc(c->pads, cap * sizeof *c->pads);
                    if (!c->pads)
                        die("out of memory");
                }
                c->pads[c->npads++] = start;
            }
        }
        pos += 4 + (size_t)len;
    }
    if (c->npads)
        qsort(c->pads, c->npads, sizeof *c->pads, cmp_u64v);
}

/*
 * An independent look at the analysis: a linear sweep over the original
 * image's functions finds every direct branch; one that lands inside an
 * optimized DCR (after its first byte, from outside it) must have been
 * re-pointed to the copy by a fixup. (Jump tables and landing pads are
 * beyond a linear sweep.)
 */
static void check_branches_into(struct ctx *c)
{
    const struct elf *in = &c->in;
    struct range *sites = c->sites;
    struct rangeset code = { 0 };
    code_ranges(in, &code);
    for (size_t r = 0; r < code.n; r++) {
        size_t avail;
        const uint8_t *p = vread(in, code.v[r].lo, &avail);
        if (!p)
            continue;
        uint64_t len = code.v[r].hi - code.v[r].lo < avail ? code.v[r].hi - code.v[r].lo : avail;
        for (uint64_t o = 0; o < len;) {
            struct insn I;
            if (!rc_decode(p + o, len - o, code.v[r].lo + o, &I)) {
                o++;
                continue;
            }
            o += I.zi.length;
            if (!is_rel_imm(&I))
                continue;
            uint64_t T = rel_target(&I);
            size_t lo = 0, hi = c->nsites;   /* the site holding T */
            while (lo < hi) {
                size_t m = (lo + hi) / 2;
                if (sites[m].hi <= T) lo = m + 1; else hi = m;
            }
            if (lo == c->nsites || T <= sites[lo].lo || T >= sites[lo].hi || !copy_of(c, T))
                continue;
            if (I.addr >= sites[lo].lo && I.addr < sites[lo].hi)
                continue;   /* from the DCR itself: its copy goes to the copy (checked above) */
            bool fixed = false;
            for (size_t k = 0; k < c->nfixes && !fixed; k++)
                fixed = c->fixes[k].lo == I.addr;
            if (!fixed) {
                char ot[160];
                struct entry_ctx ec;
                memset(&ec, 0, sizeof ec);
                snprintf(ec.who, sizeof ec.who, "branch at 0x%llx", (unsigned long long)I.addr);
                rc_format(&I, ot, sizeof ot);
                mismatch(c, &ec, R_INTO_DCR, ot, NULL, "lands at 0x%llx, inside the optimized DCR at 0x%llx, and "
                         "was not re-pointed to the copy", (unsigned long long)T, (unsigned long long)sites[lo].lo);
            }
        }
    }
    free(code.v);
}

/* ---- bytes changed outside the sites ------------------------------------------------ */

static bool rhas(const struct rangeset *s, uint64_t x)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (x < s->v[m].lo)
            hi = m;
        else if (x >= s->v[m].hi)
            lo = m + 1;
        else
            return true;
    }
    return false;
}

static const char *out_sec_at(const struct elf *e, uint64_t off)
{
    for (size_t i = 1; i < e->shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_NOBITS && off >= s->sh_offset && off - s->sh_offset < s->sh_size)
            return sec_name(e, s);
    }
    return "no section";
}

static void report_run(struct ctx *c, uint64_t lo, uint64_t hi)
{
    const struct elf *in = &c->in, *out = &c->out;
    uint8_t a[8] = { 0 }, b[8] = { 0 };
    size_t m = hi - lo < 8 ? hi - lo : 8;
    for (size_t i = 0; i < m; i++) {
        a[i] = lo + i < in->size ? in->map[lo + i] : 0;
        b[i] = lo + i < out->size ? out->map[lo + i] : 0;
    }
    char h1[40], h2[40], where[64] = "";
    hex(a, m, h1, sizeof h1);
    hex(b, m, h2, sizeof h2);
    uint64_t v;
    if (off2v(out, lo, &v))
        snprintf(where, sizeof where, "0x%llx, ", (unsigned long long)v);
    struct entry_ctx ec;
    memset(&ec, 0, sizeof ec);
    snprintf(ec.who, sizeof ec.who, "file bytes 0x%llx-0x%llx (%s%s)", (unsigned long long)lo,
             (unsigned long long)hi, where, out_sec_at(out, lo));
    mismatch(c, &ec, R_BYTES, h1, h2, "%llu byte(s) changed outside every probe site",
             (unsigned long long)(hi - lo));
}

/*
 * Every byte that differs between the two files must be in a range
 * kprewrite may change: the headers, the pool, the sections it re-points,
 * grows or adds (.dynamic, .dynstr, .shstrtab), the file past what the
 * original loads (section names, symbols and section headers move there
 * after the pool), and the probe sites.
 * (When the emitter re-targets branches into DCRs, their displacements
 * become a range of their own here, under a rule of their own.)
 */
static void check_bytes(struct ctx *c)
{
    const struct elf *in = &c->in, *out = &c->out;
    struct rangeset ok = { 0 }, sites = { 0 };
    radd(&ok, 0, sizeof(Elf64_Ehdr));
    const struct elf *both[2] = { in, out };
    for (int k = 0; k < 2; k++) {
        const Elf64_Ehdr *h = both[k]->eh;
        radd(&ok, h->e_phoff, h->e_phoff + (uint64_t)h->e_phnum * sizeof(Elf64_Phdr));
        if (h->e_shnum)
            radd(&ok, h->e_shoff, h->e_shoff + (uint64_t)h->e_shnum * sizeof(Elf64_Shdr));
    }
    for (size_t i = 1; i < out->shnum; i++) {
        const Elf64_Shdr *s = &out->sh[i];
        if (s->sh_type == SHT_NOBITS)
            continue;
        bool pool = strncmp(sec_name(out, s), ".kprewrite.", 11) == 0;
        bool moved = i >= in->shnum || in->sh[i].sh_offset != s->sh_offset || in->sh[i].sh_size != s->sh_size;
        if (pool || moved)
            radd(&ok, s->sh_offset, s->sh_offset + s->sh_size);
    }
    /* .symtab: symbols of the sections kprewrite copied elsewhere (.dynamic,
     * .dynstr, ...) follow them: only their value and section index move */
    for (size_t i = 1; i < out->shnum && i < in->shnum; i++) {
        const Elf64_Shdr *s = &out->sh[i], *si = &in->sh[i];
        if (s->sh_type != SHT_SYMTAB || si->sh_type != SHT_SYMTAB || s->sh_offset != si->sh_offset ||
            s->sh_size != si->sh_size || s->sh_offset > out->size || s->sh_size > out->size - s->sh_offset ||
            si->sh_offset > in->size || si->sh_size > in->size - si->sh_offset)
            continue;
        for (uint64_t o = 0; o + sizeof(Elf64_Sym) <= s->sh_size; o += sizeof(Elf64_Sym)) {
            Elf64_Sym a, b;
            memcpy(&a, in->map + si->sh_offset + o, sizeof a);
            memcpy(&b, out->map + s->sh_offset + o, sizeof b);
            if (memcmp(&a, &b, sizeof a) && a.st_name == b.st_name && a.st_info == b.st_info &&
                a.st_other == b.st_other && a.st_size == b.st_size && b.st_shndx < out->shnum &&
                (b.st_shndx >= in->shnum || out->sh[b.st_shndx].sh_addr != in->sh[b.st_shndx].sh_addr ||
                 b.st_shndx != a.st_shndx))
                radd(&ok, s->sh_offset + o, s->sh_offset + o + sizeof b);
        }
    }
    uint64_t loaded_end = sizeof(Elf64_Ehdr);
    for (size_t i = 0; i < in->phnum; i++)
        if (in->ph[i].p_filesz && in->ph[i].p_offset + in->ph[i].p_filesz > loaded_end)
            loaded_end = in->ph[i].p_offset + in->ph[i].p_filesz;
    radd(&ok, loaded_end, UINT64_MAX);
    for (size_t i = 0; i < out->phnum; i++) {   /* (edited in place, or a copy) */
        const Elf64_Phdr *p = &out->ph[i];
        if (p->p_type == PT_DYNAMIC)
            radd(&ok, p->p_offset, p->p_offset + p->p_filesz);
    }
    for (size_t i = 0; i < c->nsites; i++) {
        uint64_t off;
        if (v2off(out, c->sites[i].lo, &off))
            radd(&sites, off, off + (c->sites[i].hi - c->sites[i].lo));
    }
    for (size_t i = 0; i < c->nfixes; i++) {   /* checked on their own: check_fixups */
        uint64_t off;
        if (v2off(out, c->fixes[i].lo, &off))
            radd(&sites, off, off + (c->fixes[i].hi - c->fixes[i].lo));
    }
    rfinish(&ok);
    rfinish(&sites);

    uint64_t end = in->size > out->size ? in->size : out->size;
    uint64_t run_lo = 0, run_hi = 0;
    bool in_run = false;
    for (uint64_t blk = 0; blk < end; blk += 4096) {
        uint64_t bend = blk + 4096 < end ? blk + 4096 : end;
        if (bend <= in->size && bend <= out->size && memcmp(in->map + blk, out->map + blk, bend - blk) == 0)
            continue;
        for (uint64_t o = blk; o < bend; o++) {
            uint8_t a = o < in->size ? in->map[o] : 0, b = o < out->size ? out->map[o] : 0;
            if (a == b || rhas(&ok, o) || rhas(&sites, o))
                continue;
            if (in_run && o <= run_hi + 16) {   /* one run for bytes a few apart */
                run_hi = o + 1;
                continue;
            }
            if (in_run)
                report_run(c, run_lo, run_hi);
            in_run = true;
            run_lo = o;
            run_hi = o + 1;
        }
    }
    if (in_run)
        report_run(c, run_lo, run_hi);
    free(ok.v);
    free(sites.v);
}

/* ---- main ----------------------------------------------------------------------- */

static int cmp_site(const void *a, const void *b)
{
    return cmp_range(a, b);
}

static void usage(void)
{
    fputs("usage: reloc-check [-v] [-q] [-m N] [-L LABEL] [--no-bytes] ORIGINAL REWRITTEN\n"
          "Checks every relocated DCR copy kprewrite wrote into REWRITTEN against ORIGINAL.\n"
          "  -v         also print every entry checked, with its copy's address range\n"
          "  -q         print the summary line only\n"
          "  -m N       print at most N lines a rule (all are counted)\n"
          "  -L LABEL   name the image LABEL in the report (default: REWRITTEN)\n"
          "  --no-bytes skip the check of bytes changed outside the sites\n"
          "Exit status: 0 no mismatch, 1 mismatches, 2 error.\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    static struct ctx c;
    c.max_lines = -1;
    c.bytes = true;
    static const struct option lo[] = { { "no-bytes", no_argument, NULL, 'B' }, { "help", no_argument, NULL, 'h' },
                                        { NULL, 0, NULL, 0 } };
    int ch;
    while ((ch = getopt_long(argc, argv, "vqm:L:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'v': c.verbose = true; break;
        case 'q': c.quiet = true; break;
        case 'm': c.max_lines = strtol(optarg, NULL, 0); break;
        case 'L': c.label = optarg; break;
        case 'B': c.bytes = false; break;
        default: usage();
        }
    }
    if (argc - optind != 2)
        usage();
    elf_open(&c.in, argv[optind]);
    elf_open(&c.out, argv[optind + 1]);
    if (!c.label)
        c.label = argv[optind + 1];

    func_symbols(&c);
    fde_pads(&c);
    const Elf64_Shdr *ts = sec_by_name(&c.out, KPRW_SEC_TABLE), *xs = sec_by_name(&c.out, KPRW_SEC_TEXT);
    if (!ts || !xs)
        die("%s: no %s and %s sections: not an image with a kprewrite pool", c.out.path, KPRW_SEC_TABLE, KPRW_SEC_TEXT);
    if (ts->sh_type == SHT_NOBITS || ts->sh_offset > c.out.size || ts->sh_size > c.out.size - ts->sh_offset ||
        ts->sh_size < sizeof(struct kprw_table))
        die("%s: %s has no file bytes or is too small", c.out.path, KPRW_SEC_TABLE);
    c.tab = ts->sh_addr;
    c.text_lo = xs->sh_addr;
    c.text_hi = xs->sh_addr + xs->sh_size;
    const struct kprw_table *t = (const void *)(c.out.map + ts->sh_offset);
    if (t->magic == KPRW_MAGIC) {
        if (t->version < KPRW_VERSION_MIN || t->version > KPRW_VERSION || t->entry_size != sizeof(struct kprw_entry) ||
            sizeof *t + (uint64_t)t->nentries * sizeof(struct kprw_entry) > ts->sh_size ||
            (uint64_t)t->strings_off + t->strings_size > ts->sh_size || t->strings_size == 0)
            die("%s: probe table version %u, entry size %u, %u entries: not a table this checker reads", c.out.path,
                t->version, t->entry_size, t->nentries);
        if (t->link_addr != c.tab)
            mismatch(&c, NULL, R_TABLE, NULL, NULL, "the table's link_addr 0x%llx is not its section's address 0x%llx",
                     (unsigned long long)t->link_addr, (unsigned long long)c.tab);
        const struct kprw_entry *e = (const void *)(t + 1);
        const char *strs = (const char *)t + t->strings_off;
        c.sites = calloc(t->nentries ? t->nentries : 1, sizeof *c.sites);
        if (!c.sites)
            die("out of memory");
        c.codes = calloc(t->nentries ? t->nentries : 1, sizeof *c.codes);
        if (!c.codes)
            die("out of memory");
        for (uint32_t i = 0; i < t->nentries; i++) {
            check_entry(&c, t, &e[i], strs, false);
            uint64_t s = c.tab + (uint64_t)(int64_t)e[i].site_rel;
            c.sites[c.nsites++] = (struct range){ s, s + e[i].dcr_len };
            if (e[i].verdict == KPRW_OPTIMIZED)
                c.codes[c.ncodes++] = c.tab + (uint64_t)(int64_t)e[i].code_rel;
        }
        uint32_t nfx = t->version >= 5 ? t->nfixups : 0;
        const struct kprw_fixup *fx = (const void *)(e + t->nentries);
        if ((uint64_t)((const uint8_t *)(fx + nfx) - (const uint8_t *)t) > t->strings_off)
            die("%s: %u fixups run into the strings", c.out.path, nfx);
        check_fixups(&c, t, fx, nfx, strs);
        /* sites must not overlap: each owns its bytes */
        if (c.nsites)
            qsort(c.sites, c.nsites, sizeof *c.sites, cmp_site);
        for (size_t i = 1; i < c.nsites; i++)
            if (c.sites[i].lo < c.sites[i - 1].hi) {
                struct entry_ctx ec;
                memset(&ec, 0, sizeof ec);
                snprintf(ec.who, sizeof ec.who, "sites 0x%llx and 0x%llx", (unsigned long long)c.sites[i - 1].lo,
                         (unsigned long long)c.sites[i].lo);
                mismatch(&c, &ec, R_TABLE, NULL, NULL, "two entries own overlapping bytes");
            }
        check_branches_into(&c);
        check_boundaries(&c);
    } else if (t->magic != 0) {
        die("%s: %s does not start with a probe table (magic 0x%x)", c.out.path, KPRW_SEC_TABLE, t->magic);
    }
    if (c.bytes)
        check_bytes(&c);

    unsigned long total = 0;
    for (int r = 0; r < R_COUNT; r++)
        total += c.mis[r];
    printf("reloc-check: %s: %lu entries (%lu optimized, %lu int3), %lu instructions checked, %lu site boundaries "
           "checked, %lu mismatches", c.label, c.entries, c.optimized, c.int3, c.insns, c.bounds, total);
    const char *sep = ": ";
    for (int r = 0; r < R_COUNT; r++)
        if (c.mis[r]) {
            printf("%s%s %lu", sep, rule_name[r], c.mis[r]);
            sep = ", ";
        }
    putchar('\n');
    free(c.sites);
    free(c.inner);
    free(c.fixes);
    free(c.codes);
    free(c.fsyms);
    free(c.bq);
    free(c.bwho);
    free(c.pads);
    return total ? 1 : 0;
}
