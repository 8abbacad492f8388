/* Test-only second opinion on an ELF image, through LIEF's C API (not
 * used by the product): one line a fact, for t/prebuilt.t to compare. */
#include <LIEF/ELF.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    Elf_Binary_t *b = elf_parse(argv[1]);
    if (!b) {
        printf("unparsable\n");
        return 1;
    }
    size_t nsec = 0, nseg = 0, nload = 0;
    for (Elf_Section_t **s = b->sections; s && *s; s++) {
        nsec++;
        printf("section %s\n", (*s)->name);
    }
    for (Elf_Segment_t **g = b->segments; g && *g; g++) {
        nseg++;
        nload += (*g)->type == LIEF_ELF_PT_LOAD;
    }
    for (Elf_DynamicEntry_t **d = b->dynamic_entries; d && *d; d++)
        if ((*d)->tag == LIEF_ELF_DT_NEEDED)
            printf("needed %s\n", ((Elf_DynamicEntry_Library_t *)*d)->name);
    printf("sections %zu\nsegments %zu\nloads %zu\n", nsec, nseg, nload);
    elf_binary_destroy(b);
    return 0;
}
