/* Fuzzes the --check path: every function entry and return of an arbitrary
 * image resolved, analyzed and reported (text, JSON or --disasm, chosen by
 * the input's last byte). */
#include <stdint.h>

#include "elf-mutate.h"
#include "fuzz-io.h"
#include "run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    const char *path = fuzz_path("check");
    if (fuzz_write(path, data, size) < 0)
        return 0;
    uint8_t mode = size ? data[size - 1] : 0;
    struct spec_list specs = { 0 };
    if (spec_add(&specs, "*", "--probe", err, sizeof err) < 0 ||
        spec_add(&specs, "*%return", "--probe", err, sizeof err) < 0)
        abort();
    struct run_opts o = {
        .image = path, .specs = &specs, .check = true,
        .kernel = mode & 1, .json = mode & 2, .disasm = (mode & 12) == 12, .summary = mode & 16,
        .out = fuzz_null(), .msg = fuzz_null(),
    };
    run_image(&o);
    spec_list_free(&specs);
    return 0;
}
