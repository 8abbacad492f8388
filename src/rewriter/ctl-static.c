/*
 * `kprewrite ctl PID ...` on a static program (one with the static runtime,
 * src/runtime/static): it has no thread to serve a control directory or a
 * socket -- a static program may count on staying single-threaded (fork,
 * vfork, signals) -- so ctl does the work from outside, through
 * /proc/PID/mem (ptrace access: the same user or root). It finds the
 * runtime's head from the executable's .kprewrite.rt section and the load
 * bias (AT_ENTRY in /proc/PID/auxv is the start routine's address), reads
 * the probe table and the runtime's point records, and writes single bytes
 * the runtime reads on each hit:
 *   enable, disable   the record's disabled byte (the hit is not counted;
 *                     the site keeps its jump or int3)
 *   unoptimize        int3 over the first byte of the site's jump (the
 *                     runtime's SIGTRAP handler resumes at the copy of the
 *                     displaced instructions in the detour, counting; the
 *                     runtime publishes the byte: ctl knows no opcode)
 *   optimize          the jump's first byte back (the runtime kept it)
 * A one-byte store is the whole change each time, so that a thread running
 * the site sees either the old or the new instruction, never a mix.
 */
#include "ctl.h"
#include "ctl-static.h"
#include "../runtime/core/kprw-core.h"
#include "../runtime/static/blob.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sproc_rd(const struct sproc *s, uint64_t at, void *buf, size_t n)
{
    return pread(s->mem, buf, n, (off_t)at) == (ssize_t)n ? 0 : -1;
}

/* The address of the executable's .kprewrite.rt and its e_entry; 0: none. */
static uint64_t rt_section(int fd, uint64_t *entry)
{
    Elf64_Ehdr eh;
    Elf64_Shdr str, sh;
    char name[sizeof KPRS_SEC_RT];
    if (pread(fd, &eh, sizeof eh, 0) != sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof sh || eh.e_shstrndx >= eh.e_shnum ||
        pread(fd, &str, sizeof str, (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof sh)) != sizeof str)
        return 0;
    *entry = eh.e_entry;
    for (unsigned i = 1; i < eh.e_shnum; i++)
        if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + i * sizeof sh)) == sizeof sh && sh.sh_name < str.sh_size &&
            pread(fd, name, sizeof name, (off_t)(str.sh_offset + sh.sh_name)) == sizeof name &&
            memcmp(name, KPRS_SEC_RT, sizeof name) == 0)
            return sh.sh_addr;
    return 0;
}

/* The process's AT_ENTRY: the static runtime's start routine as loaded. */
static uint64_t at_entry(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/auxv", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint64_t av[2], v = 0;
    while (fd >= 0 && read(fd, av, sizeof av) == sizeof av && av[0] != AT_NULL)
        if (av[0] == AT_ENTRY)
            v = av[1];
    if (fd >= 0)
        close(fd);
    return v;
}

/* The table, the records and the strings, read once. */
static int read_state(struct sproc *s)
{
    size_t n = s->t.nentries;
    s->e = calloc(n + 1, sizeof *s->e);
    s->pt = calloc(n + 1, sizeof *s->pt);
    s->sorted = calloc(n + 1, sizeof *s->sorted);
    s->strings = calloc(1, (size_t)s->t.strings_size + 1);
    if (!s->e || !s->pt || !s->sorted || !s->strings)
        return -1;
    uint64_t pts = s->area + sizeof(struct kprs_area);
    return sproc_rd(s, s->table + sizeof s->t, s->e, n * sizeof *s->e) < 0 ||
                   sproc_rd(s, pts, s->pt, n * sizeof *s->pt) < 0 ||
                   sproc_rd(s, pts + n * sizeof *s->pt, s->sorted, n * sizeof *s->sorted) < 0 ||
                   sproc_rd(s, s->table + s->t.strings_off, s->strings, s->t.strings_size) < 0
               ? -1 : 0;
}

/* 1: PID runs the static runtime (s filled); 0: it does not; -1: it
 * does, but cannot be read (said on stderr). */
static int sproc_open(long pid, struct sproc *s)
{
    char path[64];
    uint64_t entry = 0;
    memset(s, 0, sizeof *s);
    s->pid = pid;
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint64_t rt = fd >= 0 ? rt_section(fd, &entry) : 0;
    if (fd >= 0)
        close(fd);
    if (!rt)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/mem", pid);
    s->mem = open(path, O_RDWR | O_CLOEXEC);
    if (s->mem < 0) {
        fprintf(stderr, "kprewrite: ctl %ld: a static program: %s: %s (ctl needs ptrace access to it: the same user, "
                "or root)\n", pid, path, strerror(errno));
        return -1;
    }
    uint64_t start = at_entry(pid);
    s->head = rt + (start - entry);   /* the load bias: 0 unless a static-pie */
    if (!start || sproc_rd(s, s->head, &s->h, sizeof s->h) < 0 || s->h.magic != KPRS_HEAD_MAGIC ||
        s->h.start_off != entry - rt) {
        fprintf(stderr, "kprewrite: ctl %ld: a static program, but its static runtime is not where its executable "
                "says\n", pid);
        return -1;
    }
    if (s->h.version != KPRS_VERSION) {   /* its area is laid out another way */
        fprintf(stderr, "kprewrite: ctl %ld: a static program baked by another kprewrite (its static runtime's "
                "version %u; this kprewrite reads version %u): use that kprewrite's ctl\n", pid, s->h.version,
                KPRS_VERSION);
        return -1;
    }
    s->table = s->head + (uint64_t)s->h.table_rel;
    s->area = s->head + (uint64_t)s->h.area_rel;
    if (sproc_rd(s, s->area, &s->a, sizeof s->a) < 0 || s->a.magic != KPRS_AREA_MAGIC ||
        sproc_rd(s, s->table, &s->t, sizeof s->t) < 0 || s->t.nentries != s->a.nentries) {
        fprintf(stderr, "kprewrite: ctl %ld: a static program whose runtime has not set itself up (just started, or "
                "its probe table was refused: see its stderr)\n", pid);
        return -1;
    }
    if (read_state(s) < 0) {
        fprintf(stderr, "kprewrite: ctl %ld: cannot read its probe table\n", pid);
        return -1;
    }
    return 1;
}

static void sproc_close(struct sproc *s)
{
    free(s->e);
    free(s->pt);
    free(s->sorted);
    free(s->strings);
    close(s->mem);
}

/* Entry i's name, as the runtime spells it. */
void sproc_name(const struct sproc *s, uint32_t i, char *buf, size_t size)
{
    const struct kprw_entry *e = &s->e[i];
    if (KPRW_NAME_BY_ADDR(e->name_off)) {
        snprintf(buf, size, "%s%llx", e->name_off == KPRW_NAME_FDE ? KPRW_FDE_PREFIX : KPRW_FOUND_PREFIX,
                 (unsigned long long)(s->t.link_addr + (uint64_t)(int64_t)e->site_rel - e->offset));
    } else if (e->name_off & KPRW_NAME_DYN) {
        uint64_t at = s->table + (uint64_t)(int64_t)s->t.dynstr_rel + (e->name_off & ~KPRW_NAME_DYN);
        buf[0] = 0;
        if (pread(s->mem, buf, size - 1, (off_t)at) <= 0)
            snprintf(buf, size, "?");
        buf[size - 1] = 0;
    } else if (e->name_off < s->t.strings_size) {
        snprintf(buf, size, "%s", s->strings + e->name_off);
    } else {
        snprintf(buf, size, "?");
    }
}

uint64_t sproc_site(const struct sproc *s, uint32_t i)
{
    return s->table + (uint64_t)(int64_t)s->e[i].site_rel;
}

/* As the dynamic runtime's list (and /sys/kernel/debug/kprobes/list),
 * in address order, the counts after it. */
static int static_list(const struct sproc *s)
{
    char name[512];
    for (uint32_t k = 0; k < s->t.nentries; k++) {
        uint32_t i = s->sorted[k];
        if (i >= s->t.nentries)
            continue;
        const struct kprs_point *pt = &s->pt[i];
        sproc_name(s, i, name, sizeof name);
        printf("%016llx  %c  %s+0x%x  %s%s  hits %llu  nmissed %llu", (unsigned long long)sproc_site(s, i),
               s->e[i].kind, name, s->e[i].offset, pt->disabled ? "[DISABLED]" : "",
               s->e[i].verdict == KPRW_OPTIMIZED && !pt->unoptimized ? "[OPTIMIZED]" : "",
               (unsigned long long)pt->hits, (unsigned long long)pt->missed);
        if (pt->dropped)   /* as the runtime library's list: the events a full ring lost */
            printf("  dropped %llu", (unsigned long long)pt->dropped);
        putchar('\n');
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int wr(const struct sproc *s, uint64_t at, uint8_t byte)
{
    return pwrite(s->mem, &byte, 1, (off_t)at) == 1 ? 0 : -1;
}

/* One point's change; -1 on a write that failed. */
static int apply(const struct sproc *s, uint32_t i, enum kprw_op op)
{
    uint64_t rec = s->area + sizeof(struct kprs_area) + i * sizeof(struct kprs_point);
    switch (op) {
    case KPRW_OP_ENABLE:
    case KPRW_OP_DISABLE:
        return wr(s, rec + offsetof(struct kprs_point, disabled), op == KPRW_OP_DISABLE);
    case KPRW_OP_UNOPTIMIZE:   /* the record first: the handler resumes at the copy either way */
        return wr(s, rec + offsetof(struct kprs_point, unoptimized), 1) < 0 ||
                       wr(s, sproc_site(s, i), s->a.trap_byte) < 0 ? -1 : 0;
    case KPRW_OP_OPTIMIZE:     /* the jump's first byte, as the runtime found it at start-up */
        return wr(s, sproc_site(s, i), s->pt[i].site0) < 0 ||
                       wr(s, rec + offsetof(struct kprs_point, unoptimized), 0) < 0 ? -1 : 0;
    }
    return -1;
}

/* VERB SPEC on every point SPEC names. */
static int static_control(const struct sproc *s, const char *verb, const char *spec)
{
    char line[1100], name[512];
    enum kprw_op op;
    const char *sp;
    size_t splen, matched = 0, can_jump = 0, guards = 0, lost = 0;
    snprintf(line, sizeof line, "%s %s", verb, spec);
    if (!kprw_ctl_parse(line, strlen(line), &op, &sp, &splen)) {
        fprintf(stderr, "kprewrite: ctl %ld: %s %s: not a command the runtime knows\n", s->pid, verb, spec);
        return 1;
    }
    for (uint32_t i = 0; i < s->t.nentries; i++) {
        const struct kprw_entry *e = &s->e[i];
        sproc_name(s, i, name, sizeof name);
        uint32_t skipped = e->flags & KPRW_F_AFTER_ENDBR ? e->offset : 0;
        if (!kprw_spec_matches_entry(sp, splen, name, e->offset, sproc_site(s, i), skipped))
            continue;
        if (s->pt[i].guard && op == KPRW_OP_DISABLE) {   /* the report is printed there */
            guards++;
            continue;
        }
        matched++;
        bool jumps = e->verdict == KPRW_OPTIMIZED;
        can_jump += jumps;
        if ((op == KPRW_OP_OPTIMIZE || op == KPRW_OP_UNOPTIMIZE) && !jumps)
            continue;
        if ((op == KPRW_OP_UNOPTIMIZE || (op == KPRW_OP_ENABLE && !jumps)) && s->a.trap_taken) {
            lost++;   /* the program has a SIGTRAP handler of its own: no int3 of the runtime's is left */
            continue;
        }
        if (apply(s, i, op) < 0) {
            fprintf(stderr, "kprewrite: ctl %ld: %s %s: writing %s's state: %s\n", s->pid, verb, spec, name,
                    strerror(errno));
            return 1;
        }
    }
    enum kprw_ctl_result r = kprw_ctl_result(op, matched, can_jump);
    if (r == KPRW_CTL_OK && lost) {
        fprintf(stderr, "kprewrite: ctl %ld: %s %s: %zu of the points it names need an int3, and the program has a "
                "SIGTRAP handler of its own (a Go program's runtime has): the static runtime has no int3 there (the rest "
                "done)\n", s->pid, verb,
                spec, lost);
        return 1;
    }
    if (r == KPRW_CTL_OK)
        return 0;
    fprintf(stderr, "kprewrite: ctl %ld: %s %s: %s\n", s->pid, verb, spec,
            r == KPRW_CTL_CANNOT_JUMP ? "the probes it names can only be int3 probes"
            : guards ? "the probes it names are the static runtime's guards (_exit: its report; __libc_sigaction: "
                       "its SIGTRAP; _Unwind_*: hooked calls' return addresses given back before an "
                       "unwind): they stay enabled"
                     : "no baked probe matches");
    return 1;
}

int ctl_static_main(long pid, int argc, char **argv)
{
    struct sproc s;
    int found = sproc_open(pid, &s);
    if (found <= 0)
        return found < 0 ? 1 : -1;
    const char *cmd = argv[2];
    int rc = 0;
    if (!strcmp(cmd, "list")) {
        if (s.a.pid != pid)   /* a fork's child that did not exec: the area is its parent's copy */
            fprintf(stderr, "kprewrite: ctl %ld: forked by %d, no exec since: its counts include %d's from before "
                    "the fork\n", pid, (int)s.a.pid, (int)s.a.pid);
        rc = static_list(&s);
    } else if (!strcmp(cmd, "trace") && (argc == 3 || (argc == 4 && (!strcmp(argv[3], "--format=text") ||
                                                                      !strcmp(argv[3], "--format=json"))))) {
        rc = sproc_trace(&s, argc == 4 && !strcmp(argv[3], "--format=json"));
    } else if (!strcmp(cmd, "events") && argc == 3) {
        rc = sproc_events(&s);
    } else if (!strcmp(cmd, "untrace") && argc > 3) {
        for (int i = 3; i < argc; i++)
            rc |= sproc_untrace(&s, argv[i]);
    } else if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable") || !strcmp(cmd, "optimize") ||
               !strcmp(cmd, "unoptimize")) {
        if (argc < 4) {
            fprintf(stderr, "kprewrite: ctl: %s needs a SPEC\n", cmd);
            rc = 1;
        }
        for (int i = 3; i < argc; i++)
            rc |= static_control(&s, cmd, argv[i]);
    } else {
        fprintf(stderr, "kprewrite: ctl %ld: %s: a static program's runtime (the static runtime) has list, enable, "
                "disable, optimize, unoptimize, trace (text or json), events and untrace only\n", pid, cmd);
        rc = 1;
    }
    sproc_close(&s);
    return rc;
}

/* kprewrite ctl --static-pids: the running static programs with the static
 * runtime whose executables this user may read (bash completion). */
int ctl_static_pids(void)
{
    DIR *d = opendir("/proc");
    if (!d) {
        fprintf(stderr, "kprewrite: ctl: /proc: %s\n", strerror(errno));
        return 1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *end, path[300];
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/exe", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        uint64_t entry = 0;
        if (fd >= 0 && rt_section(fd, &entry))
            printf("%ld\n", pid);
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    return fflush(stdout) == 0 ? 0 : 1;
}
