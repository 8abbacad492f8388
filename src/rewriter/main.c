/* kprewrite: bake kprobes into ELF images. This file is the command line. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "image.h"
#include "ktables.h"
#include "report.h"
#include "resolve.h"
#include "spec.h"
#include "symbols.h"

static const char usage_text[] =
"Usage: kprewrite --check [--json] [--summary] [--disasm] (--probe SPEC)...\n"
"                 [--probe-file FILE] [--system-map FILE] [--kernel] IMAGE\n"
"       kprewrite --help | --version\n"
"\n"
"Decide, for every probe point, whether kprewrite can bake it into IMAGE as a\n"
"jump-optimized probe, must fall back to an int3 probe, or must refuse it.\n"
"\n"
"Options:\n"
"  -c, --check            report what would be done; change nothing\n"
"  -p, --probe SPEC       a probe point (repeatable):\n"
"                           SYM          function entry (after endbr64)\n"
"                           SYM+OFF      OFF bytes into SYM (decimal or 0x hex)\n"
"                           0xADDR       an address\n"
"                           SYM%return   a return probe on SYM\n"
"                           GLOB         e.g. 'vfs_*' or '*': every matching function entry\n"
"  -f, --probe-file FILE  one SPEC a line; '#' starts a comment\n"
"  -j, --json             one JSON document instead of text lines\n"
"  -s, --summary          add counts by verdict and reason (stderr with --json)\n"
"  -m, --system-map FILE  take symbols from FILE (a vmlinux without .symtab)\n"
"  -k, --kernel           treat an ET_EXEC image as a vmlinux\n"
"  -d, --disasm           print the decoded instructions of each probed function\n"
"  -h, --help             this text\n"
"  -V, --version          the version\n"
"\n"
"Each probe gives one line:\n"
"  ADDRESS  k|r  SYM+0xOFF  [OPTIMIZED]  dcr LEN: INSNS\n"
"  ADDRESS  k|r  SYM+0xOFF  [INT3] REASON (DETAIL)\n"
"  ADDRESS  k|r  SYM+0xOFF  refused: REASON (DETAIL)\n"
"\n"
"Exit status: 0 all optimized, 2 some int3 (none refused), 3 some refused,\n"
"1 error (bad input, unknown symbol, malformed spec).\n"
"Reasons are listed in kprewrite(1).\n";

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "check", no_argument, NULL, 'c' },
        { "probe", required_argument, NULL, 'p' },
        { "probe-file", required_argument, NULL, 'f' },
        { "json", no_argument, NULL, 'j' },
        { "summary", no_argument, NULL, 's' },
        { "system-map", required_argument, NULL, 'm' },
        { "kernel", no_argument, NULL, 'k' },
        { "disasm", no_argument, NULL, 'd' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct spec_list specs = { 0 };
    const char *system_map = NULL;
    bool check = false, json = false, summary = false, kernel = false, disasm = false;
    char err[1024];
    int c, status = EXIT_ERROR;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "cp:f:jsm:kdhV", opts, NULL)) != -1) {
        switch (c) {
        case 'c': check = true; break;
        case 'j': json = true; break;
        case 's': summary = true; break;
        case 'k': kernel = true; break;
        case 'd': disasm = true; break;
        case 'm': system_map = optarg; break;
        case 'p':
            if (spec_add(&specs, optarg, "--probe", err, sizeof err) < 0) {
                fprintf(stderr, "kprewrite: %s\n", err);
                goto out;
            }
            break;
        case 'f':
            if (spec_read_file(&specs, optarg, err, sizeof err) < 0) {
                fprintf(stderr, "kprewrite: %s\n", err);
                goto out;
            }
            break;
        case 'h': fputs(usage_text, stdout); status = 0; goto out;
        case 'V': printf("kprewrite %s\n", PACKAGE_VERSION); status = 0; goto out;
        default:
            if (optopt && strchr("pfm", optopt))
                fprintf(stderr, "kprewrite: option -%c needs an argument (try --help)\n", optopt);
            else
                fprintf(stderr, "kprewrite: unknown option '%s' (try --help)\n", argv[optind - 1]);
            goto out;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "kprewrite: %s (try --help)\n", optind >= argc ? "no IMAGE given" : "more than one IMAGE given");
        goto out;
    }
    if (!check) {
        fprintf(stderr, "kprewrite: only --check is available in this version (rewriting comes with the pool runtime)\n");
        goto out;
    }
    if (specs.n == 0) {
        fprintf(stderr, "kprewrite: no probe given: use --probe SPEC or --probe-file FILE\n");
        goto out;
    }

    struct image img;
    struct symbols sy;
    struct kfacts kf;
    struct probe_list probes = { 0 };
    struct analysis_stats st;
    if (image_open(&img, argv[optind], kernel, err, sizeof err) < 0) {
        fprintf(stderr, "kprewrite: %s\n", err);
        goto out;
    }
    if (symbols_load(&sy, &img, system_map, err, sizeof err) < 0) {
        fprintf(stderr, "kprewrite: %s\n", err);
        goto close_image;
    }
    if (kfacts_load(&kf, &img, &sy, err, sizeof err) < 0) {
        fprintf(stderr, "kprewrite: %s\n", err);
        goto free_symbols;
    }
    if (probes_resolve(&specs, &img, &sy, &probes, err, sizeof err) < 0 ||
        analyze_probes(&img, &sy, &kf, &probes, &st, err, sizeof err) < 0) {
        fprintf(stderr, "kprewrite: %s\n", err);
        goto free_all;
    }
    if (disasm)
        report_disasm(stdout, &img, &sy, &probes);
    else if (json)
        report_json(stdout, &img, &sy, &probes, &st);
    else
        report_text(stdout, &probes);
    if (summary)
        report_summary(json ? stderr : stdout, &probes, &st);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kprewrite: error writing the report\n");
        goto free_all;
    }
    status = (int)report_exit_status(&probes);
free_all:
    probe_list_free(&probes);
    kfacts_free(&kf);
free_symbols:
    symbols_free(&sy);
close_image:
    image_close(&img);
out:
    spec_list_free(&specs);
    return status;
}
