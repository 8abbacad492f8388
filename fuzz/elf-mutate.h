/*
 * An ELF-aware mutation for the harnesses that read images: half the time
 * libFuzzer's own byte-level mutation, the other half one field of the ELF
 * header, a program header, a section header or a dynamic entry set to a
 * value that breaks arithmetic on it: 0, 1, all ones, 2^31, 2^32, 2^63,
 * 2^63 + 0x1000 (issue 33's p_filesz), 2^64 - 0x1000, the file's size, its
 * value plus or minus a little, or another field's value. Byte flips
 * almost never make such values (the crafted PT_LOAD of issue 33 needs two
 * 8-byte fields set together), so the checks on them were never reached.
 * Include once, in the harness's .c file.
 */
#ifndef KPREWRITE_FUZZ_ELF_MUTATE_H
#define KPREWRITE_FUZZ_ELF_MUTATE_H
#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint64_t em_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t em_get(const uint8_t *p, unsigned width)
{
    uint64_t v = 0;
    memcpy(&v, p, width);
    return v;
}

/* A value for a field that now holds old (width bytes); other is another
 * field's value, size the file's. */
static uint64_t em_value(uint64_t *s, uint64_t old, uint64_t other, uint64_t size)
{
    static const uint64_t edges[] = { 0, 1, UINT64_MAX, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
                                      1ull << 63, (1ull << 63) + 0x1000, UINT64_MAX - 0xfff, 0x1000, 0xffff };
    switch (em_next(s) % 6) {
    case 0: case 1: return edges[em_next(s) % (sizeof edges / sizeof edges[0])];
    case 2: return old + (em_next(s) % 33) - 16;
    case 3: return size - (em_next(s) % 17);
    case 4: return other;
    default: return old ^ (1ull << (em_next(s) % 64));
    }
}

/* Sets the width-byte field at off (inside data) from the other field at
 * other_off. */
static void em_set(uint8_t *data, size_t size, size_t off, unsigned width, size_t other_off, unsigned other_width,
                   uint64_t *s)
{
    if (off + width > size)
        return;
    uint64_t other = other_off + other_width <= size ? em_get(data + other_off, other_width) : 0;
    uint64_t v = em_value(s, em_get(data + off, width), other, size);
    memcpy(data + off, &v, width);
}

/* One field of a table of n entries of entsize bytes at off: one of the
 * given (offset, width) fields of a random entry. */
static void em_table(uint8_t *data, size_t size, uint64_t off, uint64_t n, uint64_t entsize, const uint8_t (*f)[2],
                     unsigned nf, uint64_t *s)
{
    if (!n || !entsize || off >= size || n > (size - off) / entsize)
        return;
    uint64_t e = off + (em_next(s) % n) * entsize, o = off + (em_next(s) % n) * entsize;
    unsigned k = (unsigned)(em_next(s) % nf), j = (unsigned)(em_next(s) % nf);
    em_set(data, size, e + f[k][0], f[k][1], o + f[j][0], f[j][1], s);
}

static const uint8_t em_ehdr[][2] = { { 24, 8 }, { 32, 8 }, { 40, 8 }, { 54, 2 }, { 56, 2 }, { 58, 2 }, { 60, 2 },
                                      { 62, 2 } };   /* entry, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx */
static const uint8_t em_phdr[][2] = { { 0, 4 }, { 8, 8 }, { 16, 8 }, { 32, 8 }, { 40, 8 }, { 48, 8 } };
static const uint8_t em_shdr[][2] = { { 4, 4 }, { 16, 8 }, { 24, 8 }, { 32, 8 }, { 40, 4 }, { 44, 4 }, { 48, 8 },
                                      { 56, 8 } };
static const uint8_t em_dyn[][2] = { { 0, 8 }, { 8, 8 } };

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t s = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
    if (size < sizeof(Elf64_Ehdr) || memcmp(data, ELFMAG, SELFMAG) != 0 || em_next(&s) % 2)
        return LLVMFuzzerMutate(data, size, max_size);
    Elf64_Ehdr eh;
    memcpy(&eh, data, sizeof eh);
    for (unsigned rounds = 1 + (unsigned)(em_next(&s) % 2); rounds--;) {
        switch (em_next(&s) % 4) {
        case 0:
            em_table(data, size, 0, 1, sizeof eh, em_ehdr, sizeof em_ehdr / sizeof em_ehdr[0], &s);
            break;
        case 1:
            em_table(data, size, eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), em_phdr,
                     sizeof em_phdr / sizeof em_phdr[0], &s);
            break;
        case 2:
            em_table(data, size, eh.e_shoff, eh.e_shnum, sizeof(Elf64_Shdr), em_shdr,
                     sizeof em_shdr / sizeof em_shdr[0], &s);
            break;
        default:   /* the dynamic section, through PT_DYNAMIC */
            for (uint64_t i = 0; i < eh.e_phnum && eh.e_phoff < size &&
                                 i < (size - eh.e_phoff) / sizeof(Elf64_Phdr); i++) {
                Elf64_Phdr ph;
                memcpy(&ph, data + eh.e_phoff + i * sizeof ph, sizeof ph);
                if (ph.p_type == PT_DYNAMIC && ph.p_offset < size && ph.p_filesz <= size - ph.p_offset)
                    em_table(data, size, ph.p_offset, ph.p_filesz / sizeof(Elf64_Dyn), sizeof(Elf64_Dyn), em_dyn,
                             2, &s);
            }
            break;
        }
    }
    return size;
}
#endif
