/* Fuzzes the rewrite path: every function entry of an arbitrary image baked
 * into its pool (when it has one), then a second run on the output (which
 * reads the probes back from the table) removing one of them. With the last
 * byte's bit 1, as a kernel image (a relocatable object: a module). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "elf-mutate.h"
#include "fuzz-io.h"
#include "run.h"

static int rewrite(const char *in, const char *out, const char *probe, const char *remove, bool kernel)
{
    char err[1024];
    struct spec_list specs = { 0 }, removes = { 0 };
    if ((probe && spec_add(&specs, probe, "--probe", err, sizeof err) < 0) ||
        (remove && spec_add(&removes, remove, "--remove", err, sizeof err) < 0))
        abort();
    struct run_opts o = {
        .image = in, .output = out, .specs = &specs, .removes = &removes, .kernel = kernel,
        .out = fuzz_null(), .msg = fuzz_null(),
    };
    int status = run_image(&o);
    spec_list_free(&specs);
    spec_list_free(&removes);
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = fuzz_path("rewrite");
    char out[300];
    snprintf(out, sizeof out, "%s.out", in);
    if (fuzz_write(in, data, size) < 0)
        return 0;
    bool kernel = size && (data[size - 1] & 2);
    if (rewrite(in, out, "*", NULL, kernel) != 1) {
        /* the output exists: rewrite it again, taking one probe out */
        rewrite(out, out, size && (data[size - 1] & 1) ? "*" : NULL, "main", kernel);
        unlink(out);
    }
    return 0;
}
