/* kprewrite: bake kprobes into ELF images. This file is the command line. */
#include "config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "kinds.h"
#include "report.h"
#include "run.h"
#include "spec.h"

static const char usage_text[] =
"Usage: kprewrite [--check [--json] [--disasm]] [--summary] (--probe SPEC)...\n"
"                 [--probe-file FILE] [--remove SPEC]... [-o OUT]\n"
"                 [--system-map FILE] [--kernel] [--relocs FILE] [--runtime LIB]\n"
"                 [--strict-indirect] [--detours compact|inline|shared] IMAGE\n"
"       kprewrite ctl PID COMMAND    (see kprewrite ctl --help)\n"
"       kprewrite --help | --version\n"
"\n"
"Bake probes into IMAGE (in place, or into OUT): each probe that can be\n"
"jump-optimized gets a detour in the pool the image reserved by linking\n"
"libkprewrite-rt; an image built without it gets a pool added and loads\n"
"the runtime (LIB) at start-up. With --check, only report what would be done.\n"
"\n"
"Options:\n"
"  -c, --check            report what would be done; change nothing\n"
"  -o, --output OUT       write the rewritten image to OUT (default: in place)\n"
"  -r, --remove SPEC      remove a probe baked earlier (its bytes come back)\n"
"  -p, --probe SPEC       a probe point (repeatable):\n"
"                           SYM          function entry (after endbr64)\n"
"                           SYM+OFF      OFF bytes into SYM (decimal or 0x hex)\n"
"                           0xADDR       an address\n"
"                           SYM%return   a return probe on SYM\n"
"                           GLOB         e.g. 'vfs_*' or '*': every matching function entry\n"
"                         or an event on its point, in kprobe_events' syntax, which\n"
"                         the runtime defines at start-up (doc/tracing.md):\n"
"                           [p|r][:[GRP/]EVENT] SPEC [NAME=]FETCHARG[:TYPE]... [if FILTER]\n"
"  -f, --probe-file FILE  one SPEC or event a line; '#' starts a comment\n"
"  -j, --json             one JSON document instead of text lines\n"
"  -s, --summary          add counts by verdict and reason (stderr with --json)\n"
"  -m, --system-map FILE  take symbols from FILE (a vmlinux without .symtab)\n"
"  -k, --kernel           treat an ET_EXEC image as a vmlinux\n"
"  -L, --relocs FILE      a vmlinux whose .rela sections were stripped (6.12's\n"
"                         post-link step): its KASLR relocation sites, from FILE\n"
"                         as arch/x86/tools/relocs writes it (vmlinux.relocs)\n"
"  -R, --runtime LIB      the runtime an image built without it loads (DT_NEEDED);\n"
"                         default " KPRW_RUNTIME_DEFAULT "\n"
"  -d, --disasm           print the decoded instructions of each probed function\n"
"  -S, --strict-indirect  an indirect jump that is not a recognised jump table\n"
"                         keeps its function int3, even when no address inside\n"
"                         it is taken anywhere (for hand-written jump arithmetic)\n"
"  -D, --detours MODE     compact (the default): a kprobe at a function entry gets\n"
"                         a 6-byte call of the runtime's entry, which counts a\n"
"                         hit without saving more than it uses (the fastest\n"
"                         count-only hit, about 10 bytes + the DCR a probe);\n"
"                         other kprobes get shared detours in a pool kprewrite\n"
"                         adds, inline ones elsewhere; inline: every kprobe's\n"
"                         detour saves the registers and calls the runtime\n"
"                         itself (vmlinux: always); shared: a 14-byte head calls\n"
"                         code common to the pool (one more call and return\n"
"                         a hit than inline, about 60 bytes less a probe)\n"
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

static const struct option long_opts[] = {
    { "check", no_argument, NULL, 'c' },
    { "probe", required_argument, NULL, 'p' },
    { "probe-file", required_argument, NULL, 'f' },
    { "json", no_argument, NULL, 'j' },
    { "summary", no_argument, NULL, 's' },
    { "system-map", required_argument, NULL, 'm' },
    { "relocs", required_argument, NULL, 'L' },
    { "kernel", no_argument, NULL, 'k' },
    { "disasm", no_argument, NULL, 'd' },
    { "output", required_argument, NULL, 'o' },
    { "remove", required_argument, NULL, 'r' },
    { "runtime", required_argument, NULL, 'R' },
    { "strict-indirect", no_argument, NULL, 'S' },
    { "detours", required_argument, NULL, 'D' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

/* --detours MODE into *detours; false (said) for another word. */
static bool parse_detours(const char *mode, int *detours)
{
    if (strcmp(mode, "inline") == 0) {
        *detours = DETOURS_INLINE;
    } else if (strcmp(mode, "shared") == 0) {
        *detours = DETOURS_SHARED;
    } else if (strcmp(mode, "compact") == 0) {
        *detours = DETOURS_COMPACT;
    } else {
        fprintf(stderr, "kprewrite: --detours takes compact, inline or shared, not '%s'\n", mode);
        return false;
    }
    return true;
}

/* One option c (its argument optarg) into ro and its spec lists. 0, 1
 * when it was --help or --version (done), -1 when it was wrong (said). */
static int take_option(int c, char **argv, struct run_opts *ro)
{
    char err[1024];
    int rc = 0, detours = ro->detours;
    switch (c) {
    case 'c': ro->check = true; break;
    case 'j': ro->json = true; break;
    case 's': ro->summary = true; break;
    case 'k': ro->kernel = true; break;
    case 'd': ro->disasm = true; break;
    case 'S': ro->strict_indirect = true; break;
    case 'o': ro->output = optarg; break;
    case 'm': ro->system_map = optarg; break;
    case 'L': ro->relocs = optarg; break;
    case 'R': ro->runtime = optarg; break;
    case 'D':
        if (!parse_detours(optarg, &detours))
            return -1;
        ro->detours = detours;
        break;
    case 'r':
        rc = spec_add(ro->removes, optarg, "--remove", err, sizeof err);
        if (rc == 0 && ro->removes->v[ro->removes->n - 1].def) {   /* a point's events go with it */
            snprintf(err, sizeof err, "--remove '%s': col 1: a point (SPEC), not an event definition", optarg);
            rc = -1;
        }
        break;
    case 'p': rc = spec_add(ro->specs, optarg, "--probe", err, sizeof err); break;
    case 'f': rc = spec_read_file(ro->specs, optarg, err, sizeof err); break;
    case 'h': fputs(usage_text, stdout); return 1;
    case 'V': printf("kprewrite %s\n", PACKAGE_VERSION); return 1;
    default:
        if (optopt && strchr("pfmorRD", optopt))
            fprintf(stderr, "kprewrite: option -%c needs an argument (try --help)\n", optopt);
        else
            fprintf(stderr, "kprewrite: unknown option '%s' (try --help)\n", argv[optind - 1]);
        return -1;
    }
    if (rc < 0) {
        fprintf(stderr, "kprewrite: %s\n", err);
        return -1;
    }
    return 0;
}

/* The options that cannot go together, or are missing; false (said). */
static bool options_agree(int argc, const struct run_opts *ro)
{
    if (optind != argc - 1) {
        fprintf(stderr, "kprewrite: %s (try --help)\n", optind >= argc ? "no IMAGE given" : "more than one IMAGE given");
        return false;
    }
    if (ro->check && (ro->output || ro->removes->n)) {
        fprintf(stderr, "kprewrite: --check changes nothing: it takes no --output or --remove\n");
        return false;
    }
    if (ro->specs->n == 0 && (ro->check || !ro->removes->n)) {
        fprintf(stderr, "kprewrite: no probe given: use --probe SPEC or --probe-file FILE\n");
        return false;
    }
    return true;
}

/* static-blob.S: the static runtime, built into kprewrite */
extern const uint8_t kprs_blob[], kprs_blob_end[];

int main(int argc, char **argv)
{
    kind_static_runtime(kprs_blob, (size_t)(kprs_blob_end - kprs_blob));
    if (argc > 1 && strcmp(argv[1], "ctl") == 0)
        return ctl_main(argc - 1, argv + 1);
    struct spec_list specs = { 0 }, removes = { 0 };
    struct run_opts ro = { .specs = &specs, .removes = &removes, .detours = DETOURS_DEFAULT,
                           .out = stdout, .msg = stderr };
    int c, taken = 0, status = EXIT_ERROR;

    opterr = 0;
    while (taken == 0 && (c = getopt_long(argc, argv, "cp:f:jsm:L:kdo:r:R:SD:hV", long_opts, NULL)) != -1)
        taken = take_option(c, argv, &ro);
    if (taken > 0) {
        status = 0;
    } else if (taken == 0 && options_agree(argc, &ro)) {
        ro.image = argv[optind];
        status = run_image(&ro);
    }
    spec_list_free(&specs);
    spec_list_free(&removes);
    return status;
}
