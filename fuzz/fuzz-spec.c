/* Fuzzes the probe-spec parser: each input line through spec_add, and the
 * whole input as a --probe-file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-io.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    struct spec_list l = { 0 };
    for (char *line = text, *nl; line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = 0;
        struct probe_spec ps;
        size_t col = 0;
        if (spec_parse(line, &ps, &col, err, sizeof err) == 0) {
            free(ps.text);
            free(ps.sym);
        } else if (col > strlen(line) + 1) {
            abort();   /* an error column past the end of the spec */
        }
        spec_add(&l, line, "--probe", err, sizeof err);
    }
    spec_list_free(&l);
    free(text);
    const char *path = fuzz_path("spec");
    if (fuzz_write(path, data, size) == 0) {
        spec_read_file(&l, path, err, sizeof err);
        spec_list_free(&l);
    }
    return 0;
}
