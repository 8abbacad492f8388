/* Opening and validating ELF images with libelf. */
#include "image.h"
#include "../arch/isa.h"
#include "../util/array.h"
#include "../util/checked.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NT_GNU_PROPERTY_TYPE_0_ 5

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    snprintf(err, errlen, fmt, a, b);
    return -1;
}

const char *image_kind_name(enum image_kind k)
{
    switch (k) {
    case IMG_EXEC: return "exec";
    case IMG_PIE: return "pie";
    case IMG_DSO: return "dso";
    case IMG_VMLINUX: return "vmlinux";
    }
    return "?";
}

static int cmp_addr(const void *a, const void *b)
{
    const struct section *x = *(struct section *const *)a, *y = *(struct section *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* .note.gnu.property: does the image claim that indirect branches land on
 * markers (x86's IBT: on endbr64)? Its ISA says which property says so. */
static bool read_ibt(const struct image *img)
{
    const struct section *s = image_section_by_name(img, ".note.gnu.property");
    if (!s || !s->data)
        return false;
    const uint8_t *p = s->data, *end = s->data + s->size;
    while (end - p >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p, 4); memcpy(&descsz, p + 4, 4); memcpy(&type, p + 8, 4);
        size_t name_al = ((size_t)namesz + 3) & ~(size_t)3, desc_al = ((size_t)descsz + 7) & ~(size_t)7;
        if (name_al > (size_t)(end - p - 12) || desc_al > (size_t)(end - p - 12) - name_al)
            return false;
        const uint8_t *d = p + 12 + name_al;
        if (type == NT_GNU_PROPERTY_TYPE_0_ && namesz == 4 && memcmp(p + 12, "GNU", 4) == 0) {
            for (const uint8_t *q = d; q + 8 <= d + descsz;) {
                uint32_t pt, psz;
                memcpy(&pt, q, 4); memcpy(&psz, q + 4, 4);
                if (psz > (size_t)(d + descsz - q - 8))
                    return false;
                if (pt == img->isa->landing_pad_property && psz >= 4) {
                    uint32_t v;
                    memcpy(&v, q + 8, 4);
                    return v & img->isa->landing_pad_bit;
                }
                q += 8 + (((size_t)psz + 7) & ~(size_t)7);
            }
        }
        p += 12 + name_al + desc_al;
    }
    return false;
}

static bool looks_like_kernel(const struct image *img)
{
    return image_section_by_name(img, "__ex_table") || image_section_by_name(img, "__ksymtab") ||
           image_section_by_name(img, ".altinstructions");
}

static bool dynamic_pie_flag(const struct image *img)
{
    const struct section *s = image_section_by_name(img, ".dynamic");
    if (!s || !s->data)
        return false;
    for (size_t off = 0; off + 16 <= s->size; off += 16) {
        int64_t tag; uint64_t val;
        memcpy(&tag, s->data + off, 8); memcpy(&val, s->data + off + 8, 8);
        if (tag == DT_NULL)
            break;
        if (tag == DT_FLAGS_1 && (val & DF_1_PIE))
            return true;
    }
    return false;
}

static const char *segment_type(uint32_t type)
{
    switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    }
    return "segment";
}

/* The program headers: each one's file bytes in the file, its addresses
 * below IMAGE_ADDR_END, a PT_LOAD's file bytes no more than its memory.
 * Everything that reads a segment relies on this (addpool-plan.c). */
static int check_segments(const struct image *img, char *err, size_t errlen)
{
    size_t phnum = 0;
    if (elf_getphdrnum(img->elf, &phnum) != 0)
        return fail(err, errlen, "%s: malformed program headers: %s", img->path, elf_errmsg(-1));
    if (phnum && img->ehdr.e_phoff % 8) {   /* read in place as an array (addpool-plan.c) */
        snprintf(err, errlen, "%s: malformed program headers: e_phoff 0x%llx is not 8-byte aligned", img->path,
                 (unsigned long long)img->ehdr.e_phoff);
        return -1;
    }
    if (phnum && (img->ehdr.e_phentsize != sizeof(Elf64_Phdr) ||
                  !ck_array_in(img->ehdr.e_phoff, phnum, sizeof(Elf64_Phdr), img->map_size)))
        return fail(err, errlen, "%s: truncated: program headers past end of file%s", img->path, "");
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(img->elf, (int)i, &ph))
            return fail(err, errlen, "%s: malformed program header: %s", img->path, elf_errmsg(-1));
        if (ph.p_type == PT_NULL)
            continue;
        const char *what = NULL;
        if (ph.p_filesz && !ck_in(ph.p_offset, ph.p_filesz, img->map_size))
            what = "its file bytes (p_offset + p_filesz) lie past the end of the file";
        else if (!ck_in(ph.p_vaddr, ph.p_memsz, IMAGE_ADDR_END))
            what = "its addresses (p_vaddr + p_memsz) run past the end of the address space";
        else if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
            what = "p_filesz is larger than p_memsz";
        if (what) {
            snprintf(err, errlen, "%s: program header %zu (%s, p_offset 0x%llx, p_filesz 0x%llx, p_vaddr 0x%llx, "
                     "p_memsz 0x%llx): %s", img->path, i, segment_type(ph.p_type), (unsigned long long)ph.p_offset,
                     (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_vaddr,
                     (unsigned long long)ph.p_memsz, what);
            return -1;
        }
    }
    return 0;
}

static int parse(struct image *img, bool force_kernel, char *err, size_t errlen);

int image_open(struct image *img, const char *path, bool force_kernel, char *err, size_t errlen)
{
    struct stat st;

    memset(img, 0, sizeof *img);
    img->fd = -1;
    img->path = path;
    elf_version(EV_CURRENT);
    img->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (img->fd < 0)
        return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(img->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        image_close(img);
        return fail(err, errlen, "%s: not a regular file%s", path, "");
    }
    img->map_size = (size_t)st.st_size;
    img->mode = st.st_mode & 07777;
    if (img->map_size < EI_NIDENT) {
        image_close(img);
        return fail(err, errlen, "%s: not an ELF file (%s)", path, img->map_size ? "too short" : "empty");
    }
    /* Private and writable only because libelf may touch its buffer; the file never changes. */
    img->map = mmap(NULL, img->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, img->fd, 0);
    if (img->map == MAP_FAILED) {
        img->map = NULL;
        image_close(img);
        return fail(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    }
    return parse(img, force_kernel, err, errlen);
}

int image_open_mem(struct image *img, const char *label, uint8_t *buf, size_t size, unsigned mode,
                   char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    img->fd = -1;
    img->path = label;
    img->map = buf;
    img->map_size = size;
    img->map_malloced = true;
    img->mode = mode;
    elf_version(EV_CURRENT);
    return parse(img, false, err, errlen);
}

/* The ELF header: an ELF file of a class, byte order and machine
 * kprewrite knows (img->isa), executable or shared. -1 with err (img
 * closed). */
static int check_header(struct image *img, char *err, size_t errlen)
{
    const char *path = img->path;
    if (img->map_size < EI_NIDENT || memcmp(img->map, ELFMAG, SELFMAG) != 0) {
        image_close(img);
        return fail(err, errlen, "%s: not an ELF file%s", path, "");
    }
    if (img->map[EI_CLASS] != ELFCLASS64) {
        const char *cls = img->map[EI_CLASS] == ELFCLASS32 ? "32-bit" : "unknown-class";
        image_close(img);
        snprintf(err, errlen, "%s: %s ELF is not supported (%s only)", path, cls, isa_names());
        return -1;
    }
    if (img->map[EI_DATA] != ELFDATA2LSB) {
        image_close(img);
        return fail(err, errlen, "%s: big-endian ELF is not supported (%s only)", path, isa_names());
    }
    img->elf = elf_memory((char *)img->map, img->map_size);
    if (!img->elf || elf_kind(img->elf) != ELF_K_ELF || !gelf_getehdr(img->elf, &img->ehdr)) {
        image_close(img);
        return fail(err, errlen, "%s: malformed ELF header: %s", path, elf_errmsg(-1));
    }
    img->isa = isa_for_machine(img->ehdr.e_machine);
    if (!img->isa) {
        unsigned m = img->ehdr.e_machine;
        image_close(img);
        snprintf(err, errlen, "%s: unsupported machine (e_machine %u): %s only", path, m, isa_names());
        return -1;
    }
    if (img->ehdr.e_type == ET_REL) {
        image_close(img);
        return fail(err, errlen, "%s: relocatable object: link it first (a kernel module: give --kernel)%s", path, "");
    }
    if (img->ehdr.e_type != ET_EXEC && img->ehdr.e_type != ET_DYN) {
        image_close(img);
        return fail(err, errlen, "%s: not an executable or shared object (e_type)%s", path, "");
    }
    return 0;
}

/* The section headers into img->secs, the allocated sections by address
 * into img->by_addr. -1 with err (img closed). */
static int read_sections(struct image *img, char *err, size_t errlen)
{
    const char *path = img->path;
    size_t shnum, shstrndx;
    /* libelf does not check that section headers fit in the file. */
    if (!ck_array_in(img->ehdr.e_shoff, img->ehdr.e_shnum, img->ehdr.e_shentsize, img->map_size)) {
        image_close(img);
        return fail(err, errlen, "%s: truncated: section headers past end of file%s", path, "");
    }
    if (elf_getshdrnum(img->elf, &shnum) != 0 || elf_getshdrstrndx(img->elf, &shstrndx) != 0) {
        image_close(img);
        return fail(err, errlen, "%s: malformed section headers: %s", path, elf_errmsg(-1));
    }
    if (shnum == 0) {
        image_close(img);
        return fail(err, errlen, "%s: no section headers (cannot find functions)%s", path, "");
    }
    if (!ck_array_in(img->ehdr.e_shoff, shnum, img->ehdr.e_shentsize, img->map_size)) {
        image_close(img);
        return fail(err, errlen, "%s: truncated: section headers past end of file%s", path, "");
    }
    img->secs = calloc(shnum, sizeof *img->secs);
    img->by_addr = calloc(shnum, sizeof *img->by_addr);
    if (!img->secs || !img->by_addr) {
        image_close(img);
        return fail(err, errlen, "%s: out of memory%s", path, "");
    }
    img->nsecs = shnum;
    for (size_t i = 0; i < shnum; i++) {
        Elf_Scn *scn = elf_getscn(img->elf, i);
        GElf_Shdr sh;
        struct section *s = &img->secs[i];
        if (!scn || !gelf_getshdr(scn, &sh)) {
            image_close(img);
            return fail(err, errlen, "%s: malformed section header: %s", path, elf_errmsg(-1));
        }
        s->index = i;
        s->name = elf_strptr(img->elf, shstrndx, sh.sh_name);
        if (!s->name)
            s->name = "";
        s->addr = sh.sh_addr; s->size = sh.sh_size; s->offset = sh.sh_offset;
        s->flags = sh.sh_flags; s->type = sh.sh_type; s->entsize = sh.sh_entsize;
        s->link = sh.sh_link; s->info = sh.sh_info;
        if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL) {
            if (!ck_in(sh.sh_offset, sh.sh_size, img->map_size)) {
                char sec[64];
                snprintf(sec, sizeof sec, "%.60s", s->name);
                image_close(img);
                return fail(err, errlen, "%s: truncated: section %s extends past end of file", path, sec);
            }
            s->data = img->map + sh.sh_offset;
        }
        if ((sh.sh_flags & SHF_ALLOC) && !ck_in(sh.sh_addr, sh.sh_size, IMAGE_ADDR_END)) {
            snprintf(err, errlen, "%s: section %.60s: its addresses 0x%llx + 0x%llx run past the end of the address "
                     "space", path, s->name, (unsigned long long)sh.sh_addr, (unsigned long long)sh.sh_size);
            image_close(img);
            return -1;
        }
        if ((sh.sh_flags & SHF_ALLOC) && sh.sh_size)
            img->by_addr[img->nby_addr++] = s;
    }
    sort_array(img->by_addr, img->nby_addr, sizeof *img->by_addr, cmp_addr);
    if (check_segments(img, err, errlen) < 0) {
        image_close(img);
        return -1;
    }
    return 0;
}

/* What the image is (enum image_kind) and whether it claims IBT. -1 with
 * err (img closed). */
static int classify(struct image *img, bool force_kernel, char *err, size_t errlen)
{
    const char *path = img->path;
    img->ibt = read_ibt(img);
    size_t phnum = 0;
    elf_getphdrnum(img->elf, &phnum);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(img->elf, (int)i, &ph) && ph.p_type == PT_INTERP)
            img->interp = true;
    }
    if (img->ehdr.e_type == ET_EXEC)
        img->kind = (force_kernel || looks_like_kernel(img)) ? IMG_VMLINUX : IMG_EXEC;
    else {
        img->kind = (img->interp || dynamic_pie_flag(img)) ? IMG_PIE : IMG_DSO;
        if (force_kernel) {
            image_close(img);
            return fail(err, errlen, "%s: --kernel given but the image is ET_DYN, not a vmlinux%s", path, "");
        }
    }
    return 0;
}

/* Everything after the bytes are in img->map: checks, sections, kind. */
static int parse(struct image *img, bool force_kernel, char *err, size_t errlen)
{
    if (check_header(img, err, errlen) < 0 || read_sections(img, err, errlen) < 0 ||
        classify(img, force_kernel, err, errlen) < 0)
        return -1;
    return 0;
}

void image_close(struct image *img)
{
    if (img->elf)
        elf_end(img->elf);
    if (img->map && img->map_malloced)
        free(img->map);
    else if (img->map)
        munmap(img->map, img->map_size);
    if (img->fd >= 0)
        close(img->fd);
    free(img->secs);
    free(img->by_addr);
    img->elf = NULL; img->map = NULL; img->fd = -1; img->secs = NULL; img->by_addr = NULL;
}

const struct section *image_section_at(const struct image *img, uint64_t vaddr)
{
    size_t a = LOWER_BOUND(img->nby_addr, m, img->by_addr[m]->addr <= vaddr);   /* after the last with addr <= vaddr */
    /* Sections may nest or be empty; look back over a few candidates. */
    for (size_t i = a; i > 0 && a - i < 4; i--) {
        const struct section *s = img->by_addr[i - 1];
        if (vaddr >= s->addr && vaddr - s->addr < s->size)
            return s;
    }
    return NULL;
}

uint64_t image_next_readable(const struct image *img, uint64_t vaddr)
{
    size_t avail;
    if (image_read(img, vaddr, &avail))
        return vaddr;
    size_t i = LOWER_BOUND(img->nby_addr, m, img->by_addr[m]->addr <= vaddr);   /* the first above vaddr */
    for (; i < img->nby_addr; i++)
        if (img->by_addr[i]->data && img->by_addr[i]->size && image_read(img, img->by_addr[i]->addr, &avail))
            return img->by_addr[i]->addr;
    return UINT64_MAX;
}

const uint8_t *image_read(const struct image *img, uint64_t vaddr, size_t *avail)
{
    const struct section *s = image_section_at(img, vaddr);
    if (!s || !s->data) {
        *avail = 0;
        return NULL;
    }
    *avail = (size_t)(s->size - (vaddr - s->addr));
    return s->data + (vaddr - s->addr);
}

const uint8_t *image_read_cb(void *img, uint64_t vaddr, size_t *avail)
{
    return image_read(img, vaddr, avail);
}

const struct section *image_section_by_name(const struct image *img, const char *name)
{
    for (size_t i = 0; i < img->nsecs; i++)
        if (strcmp(img->secs[i].name, name) == 0)
            return &img->secs[i];
    return NULL;
}

bool image_is_exec_addr(const struct image *img, uint64_t vaddr)
{
    const struct section *s = image_section_at(img, vaddr);
    return s && (s->flags & SHF_EXECINSTR) && s->data;
}

bool image_symbol(const struct image *img, const char *name, uint64_t *value)
{
    for (size_t i = 0; i < img->nsecs; i++) {
        const struct section *s = &img->secs[i];
        if (s->type != SHT_SYMTAB || !s->data || s->link >= img->nsecs || !img->secs[s->link].data)
            continue;
        const struct section *str = &img->secs[s->link];
        size_t n = strlen(name);
        for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s->size; off += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, s->data + off, sizeof sym);
            if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str->size || str->size - sym.st_name <= n)
                continue;
            if (memcmp(str->data + sym.st_name, name, n + 1) == 0) {
                *value = sym.st_value;
                return true;
            }
        }
    }
    return false;
}

bool image_dynamic(const struct image *img, int64_t tag, uint64_t *value)
{
    size_t phnum = 0;
    if (elf_getphdrnum(img->elf, &phnum) != 0)
        return false;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(img->elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC ||
            !ck_in(ph.p_offset, ph.p_filesz, img->map_size))
            continue;
        for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= ph.p_filesz; off += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, img->map + ph.p_offset + off, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == tag) {
                *value = d.d_un.d_val;
                return true;
            }
        }
    }
    return false;
}

bool image_file_offset(const struct image *img, uint64_t vaddr, size_t len, size_t *off)
{
    const struct section *s = image_section_at(img, vaddr);
    if (!s || !s->data || !ck_within(vaddr, len, s->addr, s->size))
        return false;
    *off = (size_t)(s->offset + (vaddr - s->addr));
    return true;
}

const struct section *image_next_rela(const struct image *img, size_t *i)
{
    for (; *i < img->nsecs; (*i)++) {
        const struct section *s = &img->secs[*i];
        if (s->type == SHT_RELA && s->data && s->entsize == sizeof(Elf64_Rela)) {
            (*i)++;
            return s;
        }
    }
    return NULL;
}

bool image_rela_unloaded(const struct image *img, const struct section *rela)
{
    return rela->info && rela->info < img->nsecs && !(img->secs[rela->info].flags & SHF_ALLOC);
}

bool image_is_code_cb(void *img, uint64_t vaddr)
{
    return image_is_exec_addr(img, vaddr);
}
