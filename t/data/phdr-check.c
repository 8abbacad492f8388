/* For t/phdr.t: opens each library named on the command line and prints,
 * for each, how many program headers dl_iterate_phdr gives and whether they
 * lie in memory one of its PT_LOADs maps (ld.so found them there) or
 * elsewhere (a copy ld.so made). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static int each(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *want = arg;
    if (!info->dlpi_name || strcmp(info->dlpi_name, want) != 0)
        return 0;
    uintptr_t a = (uintptr_t)info->dlpi_phdr, n = info->dlpi_phnum * sizeof(ElfW(Phdr));
    const char *where = "outside its PT_LOADs";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a + n <= lo + ph->p_filesz)
            where = "in a PT_LOAD";
    }
    printf("%d program headers, %s\n", info->dlpi_phnum, where);
    return 1;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!dlopen(argv[i], RTLD_NOW)) {
            printf("dlopen: %s\n", dlerror());
            return 1;
        }
        if (!dl_iterate_phdr(each, argv[i]))
            printf("%s: not among the loaded objects\n", argv[i]);
    }
    return 0;
}
