/* Probe spec parser: accepted forms and exact error columns. */
#include "spec.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void good(const char *text, const char *sym, unsigned long long off, unsigned long long addr,
                 bool ret, bool glob)
{
    struct probe_spec s;
    size_t col = 0;
    char err[200] = "";
    int rc = spec_parse(text, &s, &col, err, sizeof err);
    ok(rc == 0, "'%s' parses%s%s", text, rc ? ": " : "", rc ? err : "");
    if (rc)
        return;
    is_string(sym, s.sym, "'%s' symbol", text);
    ok(s.off == off && s.addr == addr && s.is_return == ret && s.is_glob == glob,
       "'%s' off=%llu addr=%#llx return=%d glob=%d", text, off, addr, ret, glob);
    free(s.sym);
    free(s.text);
}

static void bad(const char *text, size_t want_col, const char *want_msg)
{
    struct probe_spec s;
    size_t col = 0;
    char err[200] = "";
    int rc = spec_parse(text, &s, &col, err, sizeof err);
    ok(rc == -1 && col == want_col && strstr(err, want_msg) != NULL,
       "'%s' rejected at column %zu (%s)", text, want_col, want_msg);
    if (rc == -1 && (col != want_col || !strstr(err, want_msg)))
        diag("got column %zu: %s", col, err);
}

int main(void)
{
    good("vfs_read", "vfs_read", 0, 0, false, false);
    good("vfs_read+0", "vfs_read", 0, 0, false, false);
    good("main+4", "main", 4, 0, false, false);
    good("main+0x1f", "main", 0x1f, 0, false, false);
    good("0xffffffff81000000", NULL, 0, 0xffffffff81000000ull, false, false);
    good("do_sys_open%return", "do_sys_open", 0, 0, true, false);
    good("vfs_*", "vfs_*", 0, 0, false, true);
    good("*", "*", 0, 0, false, true);
    good("foo.cold", "foo.cold", 0, 0, false, false);
    good("fde@0x1040", "fde@0x1040", 0, 0, false, false);
    good("_ZN3foo3barEv+8", "_ZN3foo3barEv", 8, 0, false, false);

    bad("", 1, "empty");
    bad("main+", 6, "missing offset");
    bad("main+0x", 8, "bad offset");
    bad("main+12z", 8, "bad offset");
    bad("main-4", 5, "negative");
    bad("+4", 1, "missing symbol");
    bad("0xzz", 3, "hexadecimal");
    bad("main%ret", 5, "%return");
    bad("main+4%return", 6, "function entry");
    good("0x1000%return", NULL, 0, 0x1000, true, false);   /* the entry at that address */
    bad("ma in", 3, "unexpected character");
    bad("vfs_*+4", 6, "glob");
    bad("4main", 1, "cannot start with a digit");
    bad("main+99999999999999999999", 25, "bad offset");

    /* event definitions: the point is the spec's, the text kept; errors at
     * the column of the whole definition */
    struct probe_spec d;
    size_t dcol = 0;
    char derr[200] = "";
    ok(spec_parse("r:ev work+0 ret=$retval:s32 if ret < 0", &d, &dcol, derr, sizeof derr) == 0 && d.def &&
           strcmp(d.sym, "work") == 0 && d.is_return && d.has_off && d.off == 0,
       "a return event's definition: point work, a return probe, the definition kept (%s)", derr);
    if (d.def && strcmp(d.def, "r:ev work+0 ret=$retval:s32 if ret < 0") != 0)
        diag("def: %s", d.def);
    free(d.sym);
    free(d.text);
    ok(spec_parse("p:ev 0x1040 a=%di", &d, &dcol, derr, sizeof derr) == 0 && !d.sym && d.addr == 0x1040 &&
           !d.is_return, "an entry event on an address");
    free(d.text);
    bad("p:ev work a=%zz", 14, "unknown register");
    bad("p:ev work+0x a=%di", 13, "bad offset");
    bad("p:e-v work a=%di", 3, "event name");
    bad("p work s=+0(%si):string if s ~", 31, "");

    /* --probe-file: FILE:LINE:COLUMN for a bad line, comments and blanks skipped */
    char path[] = "/tmp/kp-spec-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# probes\nmain\n\n   foo+0x10   # trailing comment\n  p:e work s=+0(%%si):string if s == \"#x\"  # c\n"
               "bar+0xq\n");
    fclose(f);
    struct spec_list l = { 0 };
    char err[400] = "";
    int rc = spec_read_file(&l, path, err, sizeof err);
    char want[512];
    snprintf(want, sizeof want, "%s:6:7: bad offset", path);
    ok(rc == -1 && strncmp(err, want, strlen(want)) == 0, "probe file error names file:line:column");
    if (strncmp(err, want, strlen(want)) != 0)
        diag("got '%s', wanted '%s'", err, want);
    is_int(3, (long long)l.n, "three good lines were read before the bad one");
    if (l.n >= 2) {
        is_string("foo", l.v[1].sym, "indented spec with trailing comment");
        is_int(0x10, (long long)l.v[1].off, "its offset");
        char origin[400];
        snprintf(origin, sizeof origin, "%s:4", path);
        is_string(origin, l.v[1].origin, "origin is file:line");
    }
    if (l.n == 3)
        is_string("p:e work s=+0(%si):string if s == \"#x\"", l.v[2].def,
                  "a definition a line, its '#' in a string kept, its comment cut");
    spec_list_free(&l);
    unlink(path);
    return tap_done();
}
