/* Fuzzes the ELF reader: image_open, the symbol tables, .eh_frame and the
 * facts its kind reads (a vmlinux's kernel tables), on an arbitrary file. */
#include <stdint.h>

#include "elf-mutate.h"
#include "fuzz-io.h"
#include "facts.h"
#include "image.h"
#include "kinds.h"
#include "symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    const char *path = fuzz_path("elf");
    if (fuzz_write(path, data, size) < 0)
        return 0;
    struct image img;
    bool kernel = size && (data[size - 1] & 1);   /* also read ET_EXEC as a vmlinux */
    if (image_open(&img, path, kernel, err, sizeof err) < 0)
        return 0;
    kind_attach(&img);
    struct symbols sy;
    if (symbols_load(&sy, &img, NULL, err, sizeof err) == 0) {
        struct kfacts kf;
        if (img.hooks->load_facts(&kf, &img, &sy, NULL, err, sizeof err) == 0)
            kfacts_free(&kf);
        symbols_free(&sy);
    }
    image_close(&img);
    return 0;
}
