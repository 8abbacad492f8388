/* Minimal TAP producer: see tap.h. */
#include "tap.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int testnum, failed, planned = -1;
static bool lazy;

void plan(int n) { planned = n; printf("1..%d\n", n); fflush(stdout); }
void plan_lazy(void) { lazy = true; }

void skip_all(const char *fmt, ...)
{
    va_list ap;
    printf("1..0 # SKIP ");
    va_start(ap, fmt); vprintf(fmt, ap); va_end(ap);
    printf("\n");
    exit(0);
}

static bool report(bool cond, const char *fmt, va_list ap)
{
    printf("%sok %d - ", cond ? "" : "not ", ++testnum);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    if (!cond)
        failed++;
    return cond;
}

bool ok(bool cond, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    bool r = report(cond, fmt, ap);
    va_end(ap);
    return r;
}

bool is_int(long long want, long long seen, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    bool r = report(want == seen, fmt, ap);
    va_end(ap);
    if (!r)
        diag("wanted %lld, seen %lld", want, seen);
    return r;
}

bool is_hex(unsigned long long want, unsigned long long seen, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    bool r = report(want == seen, fmt, ap);
    va_end(ap);
    if (!r)
        diag("wanted %#llx, seen %#llx", want, seen);
    return r;
}

bool is_string(const char *want, const char *seen, const char *fmt, ...)
{
    bool same = (want == NULL || seen == NULL) ? want == seen : strcmp(want, seen) == 0;
    va_list ap; va_start(ap, fmt);
    bool r = report(same, fmt, ap);
    va_end(ap);
    if (!r)
        diag("wanted '%s', seen '%s'", want ? want : "(null)", seen ? seen : "(null)");
    return r;
}

void skip(const char *fmt, ...)
{
    va_list ap;
    printf("ok %d # SKIP ", ++testnum);
    va_start(ap, fmt); vprintf(fmt, ap); va_end(ap);
    printf("\n");
}

void diag(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "# ");
    va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
    fprintf(stderr, "\n");
}

void bail(const char *fmt, ...)
{
    va_list ap;
    printf("Bail out! ");
    va_start(ap, fmt); vprintf(fmt, ap); va_end(ap);
    printf("\n");
    exit(255);
}

const char *test_build_path(const char *rel)
{
    static char buf[4096];
    const char *dir = getenv("KP_BUILDDIR");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : ".", rel);
    return buf;
}

int tap_done(void)
{
    if (lazy || planned < 0)
        printf("1..%d\n", testnum);
    else if (planned != testnum) {
        diag("planned %d tests but ran %d", planned, testnum);
        return 1;
    }
    return failed ? 1 : 0;
}
