/*
 * Fuzzes the write path of a prebuilt image: kprewrite adding a pool to an
 * image built without the runtime (addpool-plan.c, addpool.c: the program
 * header table taking the new PT_LOADs over PT_NOTEs, growing in place or
 * moving; .dynamic and .dynstr), the probes planned, emitted and the table
 * written (bake.c, emit.c, table.c), the result written to a file
 * (atomic-write.c) - with the ELF-aware mutation of elf-mutate.h.
 *
 * The probe: the entry point (0xE_ENTRY, cheap: one function analyzed), or
 * with the last byte's low two bits set every function entry. Besides the
 * sanitizers, what a run must leave is checked, and a breach aborts (a
 * finding): the input byte for byte as it was; on an error no output and
 * nothing else in the directory (no temporary file); on success an output
 * that kprewrite's own reader opens, with a pool it finds.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-mutate.h"
#include "fuzz-io.h"
#include "kinds.h"
#include "run.h"
#include "table.h"

static void fail(const char *why, const char *detail)
{
    fprintf(stderr, "fuzz-prebuilt: %s%s%s\n", why, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* The directory's entries besides . and .. (at most 4 are looked at). */
static int entries(const char *dir, char names[4][64])
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        fail("cannot list the work directory", NULL);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n < 4)
            snprintf(names[n++], 64, "%s", e->d_name);
    closedir(d);
    return n;
}

static bool same_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    uint8_t buf[65536];
    size_t at = 0, n;
    bool same = true;
    while (same && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        same = at + n <= size && memcmp(buf, data + at, n) == 0;
        at += n;
    }
    fclose(f);
    return same && at == size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[256], in[300], out[300];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", fuzz_path("prebuilt"));
        if (mkdir(dir, 0700) < 0)
            fail("cannot make the work directory", dir);
        snprintf(in, sizeof in, "%s/in", dir);
        snprintf(out, sizeof out, "%s/out", dir);
    }
    unlink(out);
    if (fuzz_write(in, data, size) < 0)
        return 0;
    char spec[32], err[1024];
    uint64_t entry = 0;
    if (size >= 32)
        memcpy(&entry, data + 24, 8);
    bool every = size && (data[size - 1] & 3) == 3;
    snprintf(spec, sizeof spec, every ? "*" : "0x%llx", (unsigned long long)entry);
    struct spec_list specs = { 0 };
    if (spec_add(&specs, spec, "--probe", err, sizeof err) < 0)
        abort();
    struct run_opts o = { .image = in, .output = out, .specs = &specs, .out = fuzz_null(), .msg = fuzz_null() };
    int status = run_image(&o);
    spec_list_free(&specs);

    if (!same_file(in, data, size))
        fail("the input changed", NULL);
    char names[4][64];
    int n = entries(dir, names);
    bool has_out = access(out, F_OK) == 0;
    if (status == 1 && (has_out || n != 1))
        fail("an error left files behind", n > 1 ? names[strcmp(names[0], "in") ? 0 : 1] : "out");
    if (status != 1 && (!has_out || n != 2))
        fail("a success left no output, or a temporary file", n > 2 ? names[2] : NULL);
    if (status != 1) {
        struct image img;
        struct pool_sections ps;
        if (image_open(&img, out, false, err, sizeof err) < 0)
            fail("kprewrite cannot read what it wrote", err);
        kind_attach(&img);   /* pool_find asks the image kind's hooks */
        if (pool_find(&img, &ps, err, sizeof err) < 0)
            fail("kprewrite finds no pool in what it wrote", err);
        image_close(&img);
    }
    return 0;
}
