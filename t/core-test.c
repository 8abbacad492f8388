/* The runtime core both runtimes share (src/runtime/core): globs and the
 * specs of control commands checked against fnmatch(3), which the user
 * runtime used before; the commands' parsing; the wanted code state; the
 * table checks. */
#include "runtime/core/kprw-core.h"
#include "tap.h"

#include <fnmatch.h>
#include <string.h>

static bool glob(const char *pat, const char *s) { return kprw_glob(pat, strlen(pat), s); }

static bool spec(const char *spec, const char *name, uint32_t off, uint64_t addr)
{
    return kprw_spec_matches(spec, strlen(spec), name, off, addr);
}

static void parses(const char *line, enum kprw_op want_op, const char *want_spec)
{
    enum kprw_op op;
    const char *sp = NULL;
    size_t n = 0;
    bool r = kprw_ctl_parse(line, strlen(line), &op, &sp, &n);
    ok(r && op == want_op && n == strlen(want_spec) && memcmp(sp, want_spec, n) == 0,
       "'%s' parses to op %d, spec '%s'", line, want_op, want_spec);
}

static void refused(const char *line)
{
    enum kprw_op op;
    const char *sp;
    size_t n;
    ok(!kprw_ctl_parse(line, strlen(line), &op, &sp, &n), "'%s' is refused", line);
}

int main(void)
{
    plan_lazy();

    /* globs: the same answer as fnmatch (no escapes in either's use here) */
    static const char *const pats[] = { "*", "vfs_*", "*_read", "vfs_?ead", "v*s*r*d", "[abv]fs_read", "[!x]fs_read",
                                        "[^v]fs_read", "[a-z]fs_read", "vfs_read", "vfs_rea", "*a*a*", "a[]]b",
                                        "**", "?*?", "fde@0x1*", "x[!]]y" };
    static const char *const names[] = { "vfs_read", "vfs_write", "fde@0x1210", "a]b", "a[b-", "aaa", "", "[",
                                         "x]y", "xay", "main", "ksys_read" };
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
            bool want = fnmatch(pats[i], names[j], 0) == 0, got = glob(pats[i], names[j]);
            if (want != got || (i + j) % 7 == 0)
                ok(want == got, "glob '%s' on '%s': %d, as fnmatch", pats[i], names[j], want);
        }
    ok(glob("*read", "vfs_read") && !glob("*read", "vfs_reader"), "a trailing literal after * must end the name");
    /* (glibc's fnmatch matches nothing with an unterminated set; POSIX and
     * the kernel's glob take its '[' literally, as this one does) */
    ok(glob("a[b-", "a[b-") && glob("[", "[") && !glob("[", "a") && glob("x[]", "x[]"),
       "a '[' with no closing ']' is a literal '['");

    /* specs */
    ok(spec("0x401000", "f", 0, 0x401000), "0xADDR names the point at that address");
    ok(!spec("0x401000", "f", 0, 0x401001), "and no other");
    ok(!spec("0x40z000", "f", 0, 0x40), "a malformed address names nothing");
    ok(spec("vfs_read+0x4", "vfs_read", 4, 1) && spec("vfs_read+4", "vfs_read", 4, 1) &&
       spec("vfs_read+04", "vfs_read", 4, 1), "SYM+OFF in hex, decimal and octal");
    ok(!spec("vfs_read+0x4", "vfs_read", 0, 1), "SYM+OFF: another offset does not match");
    ok(spec("vfs_*+0", "vfs_write", 0, 1) && !spec("vfs_*+0", "ksys_write", 0, 1), "a glob with +OFF");
    ok(spec("vfs_*", "vfs_read", 0x1c, 1), "a glob alone matches every offset");
    ok(!spec("vfs_read+", "vfs_read", 0, 1) && !spec("vfs_read+x", "vfs_read", 0, 1) &&
       !spec("vfs_read+0x", "vfs_read", 0, 1), "an empty or malformed offset names nothing");
    ok(!spec("f+99999999999999999999", "f", 0, 1), "an offset that overflows names nothing");

    /* commands */
    parses("enable vfs_read", KPRW_OP_ENABLE, "vfs_read");
    parses("  disable\tvfs_*+0x4 \n", KPRW_OP_DISABLE, "vfs_*+0x4");
    parses("optimize 0x1000", KPRW_OP_OPTIMIZE, "0x1000");
    parses("unoptimize f", KPRW_OP_UNOPTIMIZE, "f");
    refused("enable");
    refused("frobnicate f");
    refused("enable f g");
    refused("");
    refused("enabled f");
    bool d = false, u = false;
    kprw_ctl_apply(KPRW_OP_DISABLE, &d, &u);
    kprw_ctl_apply(KPRW_OP_UNOPTIMIZE, &d, &u);
    ok(d && u, "disable and unoptimize set the point's flags");
    kprw_ctl_apply(KPRW_OP_ENABLE, &d, &u);
    kprw_ctl_apply(KPRW_OP_OPTIMIZE, &d, &u);
    ok(!d && !u, "enable and optimize clear them");
    is_int(KPRW_CTL_NO_MATCH, kprw_ctl_result(KPRW_OP_ENABLE, 0, 0), "a spec that matches nothing");
    is_int(KPRW_CTL_CANNOT_JUMP, kprw_ctl_result(KPRW_OP_OPTIMIZE, 3, 0), "optimize on int3-only points");
    is_int(KPRW_CTL_OK, kprw_ctl_result(KPRW_OP_UNOPTIMIZE, 3, 0), "unoptimize on int3-only points is fine");

    /* the wanted state */
    is_int(CODE_OPTIMIZED, kprw_wanted(true, true, false, false, true), "everything on: the jump");
    is_int(CODE_INT3, kprw_wanted(true, true, false, false, false), "no jump possible: int3");
    is_int(CODE_INT3, kprw_wanted(true, false, false, false, true), "optimization off: int3");
    is_int(CODE_INT3, kprw_wanted(true, true, false, true, true), "unoptimized: int3");
    is_int(CODE_DISABLED, kprw_wanted(false, true, false, false, true), "enabled off: the original bytes");
    is_int(CODE_DISABLED, kprw_wanted(true, true, true, false, true), "disabled: the original bytes");

    /* the table's header and an entry's fields */
    struct kprw_table t = { .magic = KPRW_MAGIC, .version = KPRW_VERSION, .entry_size = sizeof(struct kprw_entry) };
    is_int(KPRW_TF_NONE, kprw_table_fault(&t, 0), "a good header");
    t.flags = KPRW_T_ADDED_POOL;
    is_int(KPRW_TF_FLAGS, kprw_table_fault(&t, 0), "a flag the reader does not know");
    is_int(KPRW_TF_NONE, kprw_table_fault(&t, KPRW_T_KNOWN), "a flag it knows");
    t.version = KPRW_VERSION_MIN - 1;
    is_int(KPRW_TF_VERSION, kprw_table_fault(&t, KPRW_T_KNOWN), "a version too old");
    t.version = KPRW_VERSION;
    t.entry_size = 1;
    is_int(KPRW_TF_ENTRY_SIZE, kprw_table_fault(&t, KPRW_T_KNOWN), "another entry size");
    t.magic = 0;
    is_int(KPRW_TF_MAGIC, kprw_table_fault(&t, KPRW_T_KNOWN), "no magic");
    struct kprw_entry e = { .kind = KPRW_KIND_K, .verdict = KPRW_OPTIMIZED, .dcr_len = 5, .name_off = 0,
                            .orig_off = 0 };
    is_int(0, kprw_entry_faults(&e, 16, 0, true), "a good entry");
    e.dcr_len = 4;
    is_string("site length out of range", kprw_entry_fault_names[__builtin_ctz(kprw_entry_faults(&e, 16, 0, true))],
              "an optimized entry shorter than a jmp");
    e.flags = KPRW_F_JUMP8;
    is_int(0, kprw_entry_faults(&e, 16, 0, true), "unless it jumps short");
    e.orig_off = 14;
    is_string("original bytes outside the string table",
              kprw_entry_fault_names[__builtin_ctz(kprw_entry_faults(&e, 16, 0, true))], "original bytes past the strings");
    e.flags |= KPRW_F_ORIG_AT_COPY;
    is_int(0, kprw_entry_faults(&e, 16, 0, true), "unless they are kept in the copy");
    e.name_off = KPRW_NAME_DYN | 40;
    ok(kprw_entry_faults(&e, 16, 40, false) != 0 && kprw_entry_faults(&e, 16, 41, false) == 0,
       "a dynamic name must start within the dynamic string table");
    e.kind = 'x';
    is_string("unknown kind", kprw_entry_fault_names[__builtin_ctz(kprw_entry_faults(&e, 16, 41, true))], "a bad kind");
    return tap_done();
}
