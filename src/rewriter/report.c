/* Text (kprobes-list style) and JSON reports. */
#include "report.h"
#include "../arch/x86/decode.h"

#include <string.h>

static const char *const note_names[] = {
    "after-endbr64", "after-fentry", "call-kept", "rip-relative", "branch-reencoded", "flags-saved",
    "padding", "retarget", "short-jump", "one-instruction", "after-pad-nop", "kaslr-relocation-moved", "table-site-moved",
};

static const char *note_text(unsigned bit)
{
    switch (bit) {
    case NOTE_AFTER_ENDBR: return "after endbr64";
    case NOTE_AFTER_FENTRY: return "after ftrace's fentry call, which ftrace keeps: the jump is past it";
    case NOTE_CALL_KEPT: return "call at the end of the DCR returns to the original code";
    case NOTE_RIPREL: return "RIP-relative operand re-pointed";
    case NOTE_BRANCH_REENC: return "relative branch re-encoded as rel32";
    case NOTE_FLAGS_SAVED: return "flags live: saved";
    case NOTE_PADDING: return "the jump ends in the padding after the function";
    case NOTE_RETARGET: return "branches or jump-table entries into the DCR re-pointed to its copy";
    case NOTE_JUMP8: return "a jmp rel8 to a trampoline: the function is shorter than a jmp rel32";
    case NOTE_ONE_INSN: return "one instruction: the function's unproven indirect jump cannot land inside it";
    case NOTE_RELOC_MOVED: return "KASLR relocation moved to the copy";
    case NOTE_SITE_MOVED: return "boot-patched site moved to the copy, its table entry re-pointed";
    case NOTE_AFTER_PAD_NOP: return "after the nop of a landing-pad piece: it is entered at its landing pad";
    }
    return "";
}

static void print_site(FILE *out, const struct probe *p)
{
    fprintf(out, "%016llx  %c  ", (unsigned long long)p->addr, p->is_return ? 'r' : 'k');
    if (p->sym)
        fprintf(out, "%s+0x%llx", p->sym, (unsigned long long)p->off);
    else
        fprintf(out, "0x%llx", (unsigned long long)p->addr);
}

void report_text(FILE *out, const struct probe_list *probes)
{
    char rb[64];
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        print_site(out, p);
        switch (p->verdict) {
        case V_OPTIMIZED: fprintf(out, "  [OPTIMIZED]"); break;
        case V_INT3: fprintf(out, "  [INT3] %s", probe_reason(p, rb, sizeof rb)); break;
        case V_REFUSED: fprintf(out, "  refused: %s", probe_reason(p, rb, sizeof rb)); break;
        }
        if (p->detail[0])
            fprintf(out, " (%s)", p->detail);
        if (p->dcr_len && p->verdict != V_REFUSED)
            fprintf(out, "  dcr %u: %s", p->dcr_len, p->dcr_text);
        for (unsigned b = 0; b < sizeof note_names / sizeof note_names[0]; b++)
            if (p->notes & (1u << b))
                fprintf(out, "  [%s]", note_text(1u << b));
        fputc('\n', out);
    }
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* How many probes are on found functions (fn@). */
static size_t probes_on_found(const struct symbols *sy, const struct probe_list *probes)
{
    size_t n = 0;
    for (size_t i = 0; i < probes->n; i++)
        n += probes->v[i].func != SIZE_MAX && sy->funcs[probes->v[i].func].origin == FO_FOUND;
    return n;
}

/* The summary's "found_functions": the functions found without symbols
 * or CFI (funcfind.h), how, and the candidates left out by reason. */
static void json_found(FILE *out, const struct symbols *sy, const struct probe_list *probes)
{
    const struct funcfind *ff = &sy->found;
    fprintf(out, ", \"found_functions\": {\"found\": %zu, \"probes\": %zu, \"by\": {", ff->n,
            probes_on_found(sy, probes));
    for (int b = 0; b < FF_BY__COUNT; b++)
        fprintf(out, "%s\"%s\": %zu", b ? ", " : "", funcfind_by_name((enum ff_by)b), ff->by[b]);
    fprintf(out, "}, \"left_out\": {");
    for (int r = 0, k = 0; r < FF_R__COUNT; r++)
        if (ff->rejected[r])
            fprintf(out, "%s\"%s\": %zu", k++ ? ", " : "", funcfind_reason_name((enum ff_reason)r), ff->rejected[r]);
    fprintf(out, "}, \"code_bytes_outside_named\": %zu, \"code_bytes_in_no_function\": %zu, \"rounds\": %u}",
            ff->gap_bytes, ff->unexplained_bytes, ff->rounds);
}

struct counts {
    size_t verdict[3];
    size_t reason[3][KP_R__COUNT];
    size_t padding;   /* optimized by the padding tactic (the rest: a plain jump) */
    size_t jump8, retarget, one_insn, retargets, plain;
};

static void count(const struct probe_list *probes, struct counts *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < probes->n; i++) {
        c->verdict[probes->v[i].verdict]++;
        c->reason[probes->v[i].verdict][probes->v[i].reason]++;
        const struct probe *p = &probes->v[i];
        if (p->verdict != V_OPTIMIZED)
            continue;
        c->padding += (p->notes & NOTE_PADDING) != 0;
        c->jump8 += (p->notes & NOTE_JUMP8) != 0;
        c->retarget += (p->notes & NOTE_RETARGET) != 0;
        c->retargets += p->nretargets;
        c->one_insn += (p->notes & NOTE_ONE_INSN) != 0;
        c->plain += !(p->notes & (NOTE_PADDING | NOTE_JUMP8 | NOTE_RETARGET));
    }
}

void report_json(FILE *out, const struct image *img, const struct symbols *sy,
                 const struct probe_list *probes, const struct analysis_stats *st)
{
    char rb[64];
    struct counts c;

    fprintf(out, "{\n  \"image\": ");
    json_str(out, img->path);
    fprintf(out, ",\n  \"kind\": \"%s\",\n  \"ibt\": %s,\n  \"functions\": %zu,\n  \"probes\": [",
            image_kind_name(img->kind), img->ibt ? "true" : "false", sy->nfuncs);
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        fprintf(out, "%s\n    {\"spec\": ", i ? "," : "");
        json_str(out, p->spec ? p->spec->text : "");
        fprintf(out, ", \"origin\": ");
        json_str(out, p->spec ? p->spec->origin : "");
        fprintf(out, ", \"address\": \"0x%llx\", \"type\": \"%c\", \"symbol\": ",
                (unsigned long long)p->addr, p->is_return ? 'r' : 'k');
        if (p->sym)
            json_str(out, p->sym);
        else
            fprintf(out, "null");
        fprintf(out, ", \"offset\": %llu, \"verdict\": \"%s\", \"reason\": ",
                (unsigned long long)p->off, verdict_name(p->verdict));
        if (p->verdict == V_OPTIMIZED)
            fprintf(out, "null");
        else
            json_str(out, probe_reason(p, rb, sizeof rb));
        fprintf(out, ", \"detail\": ");
        json_str(out, p->detail);
        if (p->dcr_len && p->verdict != V_REFUSED) {
            fprintf(out, ", \"dcr\": {\"length\": %u, \"instructions\": [", p->dcr_len);
            /* dcr_text holds "a; b; c" */
            const char *s = p->dcr_text;
            for (int k = 0; *s; k++) {
                const char *e = strstr(s, "; ");
                size_t len = e ? (size_t)(e - s) : strlen(s);
                char one[128];
                snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), s);
                fprintf(out, "%s", k ? ", " : "");
                json_str(out, one);
                s += len + (e ? 2 : 0);
            }
            fprintf(out, "]}");
        } else {
            fprintf(out, ", \"dcr\": null");
        }
        fprintf(out, ", \"notes\": [");
        for (unsigned b = 0, k = 0; b < sizeof note_names / sizeof note_names[0]; b++)
            if (p->notes & (1u << b))
                fprintf(out, "%s\"%s\"", k++ ? ", " : "", note_names[b]);
        fprintf(out, "]}");
    }
    count(probes, &c);
    fprintf(out, "\n  ],\n  \"summary\": {\"probes\": %zu, \"optimized\": %zu, \"int3\": %zu, \"refused\": %zu",
            probes->n, c.verdict[V_OPTIMIZED], c.verdict[V_INT3], c.verdict[V_REFUSED]);
    for (int v = V_INT3; v <= V_REFUSED; v++) {
        fprintf(out, ", \"%s_reasons\": {", verdict_name((enum verdict)v));
        for (int r = 0, k = 0; r < KP_R__COUNT; r++)
            if (c.reason[v][r])
                fprintf(out, "%s\"%s\": %zu", k++ ? ", " : "", reason_name((enum kp_reason)r), c.reason[v][r]);
        fprintf(out, "}");
    }
    fprintf(out, ", \"tactics\": {\"jump\": %zu, \"padding\": %zu, \"short_jump\": %zu, \"retarget\": %zu, "
            "\"retargeted\": %zu, \"one_instruction\": %zu, \"evicted_windows\": %zu}", c.plain, c.padding, c.jump8,
            c.retarget, c.retargets, c.one_insn, st->evictions);
    fprintf(out, ", \"jump_tables\": %zu, \"indirect_jumps_loaded\": %zu, \"indirect_jumps_tail\": %zu, "
            "\"indirect_jumps_outside\": %zu, \"indirect_jumps_unproven\": %zu, \"landing_pads\": %zu",
            st->jump_tables, st->ijmp_load, st->ijmp_tail, st->ijmp_outside, st->ijmp_unknown, st->landing_pads);
    json_found(out, sy, probes);
    fprintf(out, "}\n}\n");
}

/* Go's functions (gopclntab.h): how many its table names, how many of
 * them an ELF symbol names too, and the probes on them by verdict. */
static void go_summary(FILE *out, const struct symbols *sy, const struct probe_list *probes)
{
    size_t named = 0, both = 0, v[3] = { 0, 0, 0 };
    for (size_t i = 0; i < sy->nfuncs; i++)
        if (sy->funcs[i].go_name) {
            named++;
            both += sy->funcs[i].origin != FO_GO;
        }
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        if (p->func < sy->nfuncs && sy->funcs[p->func].go_name)
            v[p->verdict]++;
    }
    fprintf(out, "summary: %zu Go functions (.gopclntab, Go %u.%u layout; %zu of them named by ELF symbols too): "
            "%zu probes on them, %zu optimized, %zu int3, %zu refused\n", named, sy->go_version / 100,
            sy->go_version % 100, both, v[V_OPTIMIZED] + v[V_INT3] + v[V_REFUSED], v[V_OPTIMIZED], v[V_INT3],
            v[V_REFUSED]);
}

/* The functions found without symbols or CFI (funcfind.h), and the
 * candidates left out. */
static void found_summary(FILE *out, const struct symbols *sy, const struct probe_list *probes)
{
    const struct funcfind *ff = &sy->found;
    size_t left = ff->candidates - ff->n;
    fprintf(out, "summary: %zu functions found without symbols or CFI (fn@0xADDR):", ff->n);
    for (int b = 0; b < FF_BY__COUNT; b++)
        fprintf(out, "%s %zu %s", b ? "," : "", ff->by[b], funcfind_by_name((enum ff_by)b));
    fprintf(out, "; %zu probes on them\n", probes_on_found(sy, probes));
    fprintf(out, "summary: %zu candidates left out", left);
    for (int r = 0, k = 0; r < FF_R__COUNT; r++)
        if (ff->rejected[r])
            fprintf(out, "%s %s %zu", k++ ? "," : ":", funcfind_reason_name((enum ff_reason)r), ff->rejected[r]);
    fprintf(out, "; %zu of the %zu bytes of code outside named functions are in no found function\n",
            ff->unexplained_bytes, ff->gap_bytes);
}

void report_summary(FILE *out, const struct symbols *sy, const struct probe_list *probes,
                    const struct analysis_stats *st)
{
    struct counts c;
    count(probes, &c);
    fprintf(out, "summary: %zu probes: %zu optimized, %zu int3, %zu refused\n", probes->n,
            c.verdict[V_OPTIMIZED], c.verdict[V_INT3], c.verdict[V_REFUSED]);
    for (int v = V_INT3; v <= V_REFUSED; v++)
        for (int r = 0; r < KP_R__COUNT; r++)
            if (c.reason[v][r])
                fprintf(out, "summary: %-8s %-26s %zu\n", verdict_name((enum verdict)v),
                        reason_name((enum kp_reason)r), c.reason[v][r]);
    fprintf(out, "summary: tactics: %zu plain jump, %zu jump into the padding after the function, %zu short jump "
            "to a trampoline, %zu with %zu branches or table entries re-pointed to the copy; %zu one-instruction "
            "DCRs despite an unproven indirect jump; %zu windows of instructions evicted for trampolines\n", c.plain,
            c.padding, c.jump8, c.retarget, c.retargets, c.one_insn, st->evictions);
    fprintf(out, "summary: %zu functions decoded, %zu instructions, %zu jump tables recovered, "
            "%zu indirect jumps through loaded pointers, %zu tail calls (frame at entry), "
            "%zu onto taken addresses, %zu unproven, %zu landing pads\n",
            st->funcs_decoded, st->insns_decoded, st->jump_tables, st->ijmp_load, st->ijmp_tail,
            st->ijmp_outside, st->ijmp_unknown, st->landing_pads);
    if (sy->ngo)
        go_summary(out, sy, probes);
    if (sy->found.candidates || sy->found.gap_bytes)
        found_summary(out, sy, probes);
}

enum exit_status report_exit_status(const struct probe_list *probes)
{
    struct counts c;
    count(probes, &c);
    if (c.verdict[V_REFUSED])
        return EXIT_SOME_REFUSED;
    if (c.verdict[V_INT3])
        return EXIT_SOME_INT3;
    return EXIT_ALL_OPTIMIZED;
}

void report_disasm(FILE *out, const struct image *img, const struct symbols *sy,
                   const struct probe_list *probes)
{
    char text[128];
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < probes->n; i++) {
        size_t f = probes->v[i].func;
        if (f == SIZE_MAX || f == last)
            continue;
        last = f;
        const struct func *fn = &sy->funcs[f];
        fprintf(out, "%016llx <%s>: %llu bytes\n", (unsigned long long)fn->start, fn->name,
                (unsigned long long)(fn->end - fn->start));
        for (uint64_t a = fn->start; a < fn->end;) {
            size_t avail = 0;
            struct x86_insn in;
            const uint8_t *p = image_read(img, a, &avail);
            if (avail > fn->end - a)
                avail = (size_t)(fn->end - a);
            if (!p || !x86_decode(p, avail, a, &in)) {
                fprintf(out, "%16llx  (bad)\n", (unsigned long long)a);
                break;
            }
            fprintf(out, "%16llx  %2u  %s\n", (unsigned long long)a, in.len, x86_format(p, avail, a, text, sizeof text));
            a += in.len;
        }
    }
}

void report_refusals(FILE *msg, const char *path, const struct probe_list *probes)
{
    char rb[64];
    size_t globbed = 0, globbed_refused = 0;
    for (size_t i = 0; i < probes->n; i++) {
        const struct probe *p = &probes->v[i];
        bool glob = p->spec && p->spec->is_glob;
        globbed += glob;
        if (p->verdict != V_REFUSED)
            continue;
        if (glob) {
            globbed_refused++;
            continue;
        }
        fprintf(msg, "kprewrite: %s: %s+0x%llx (0x%llx): refused: %s", path, p->sym ? p->sym : "?",
                (unsigned long long)p->off, (unsigned long long)p->addr, probe_reason(p, rb, sizeof rb));
        if (p->detail[0])
            fprintf(msg, " (%s)", p->detail);
        fputc('\n', msg);
    }
    if (globbed_refused)
        fprintf(msg, "kprewrite: %s: %zu of the %zu points globs matched were refused (reasons in the report; "
                "--summary counts them)\n", path, globbed_refused, globbed);
}
