/* `kprewrite ctl PID COMMAND`: the control directory of a running probed
 * process, for people who prefer a command to echo and cat, and the one
 * way in where the directory is a socket (no FUSE: ctl-socket.c). */
#include "ctl.h"
#include "kprewrite/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char ctl_usage[] =
"Usage: kprewrite ctl PID list | profile\n"
"       kprewrite ctl PID enabled [0|1] | optimization [0|1]\n"
"       kprewrite ctl PID enable|disable|optimize|unoptimize SPEC...\n"
"       kprewrite ctl PID trace [--format=text|json|folded] | trace DEFINITION | untrace SPEC...\n"
"       kprewrite ctl PID hist [SPEC [of NAME] [by NAME]] | events | clear\n"
"       kprewrite ctl --static-pids     (the running static programs it can steer)\n"
"SPEC is SYM, SYM+OFF, 0xADDR; SYM may be a glob. DEFINITION is kprobe_events'\n"
"syntax: [p[:[GRP/]EVENT]|r[:[GRP/]EVENT]] SPEC [NAME=]FETCHARG[:TYPE]... [if FILTER]\n";


static int cat_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
            break;
    int rc = n < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* one write() per command: the runtime answers it before write returns */
static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int rc = n < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int target_read(const struct target *t, const char *file)
{
    char path[4300];
    if (t->socket)
        return ctl_socket_request(t->sock, "read", file, NULL, stdout);
    snprintf(path, sizeof path, "%s/%s", t->dir, file);
    return cat_file(path);
}

int target_write(const struct target *t, const char *file, const char *text)
{
    char path[4300];
    if (t->socket)
        return ctl_socket_request(t->sock, "write", file, text, NULL);
    snprintf(path, sizeof path, "%s/%s", t->dir, file);
    return write_file(path, text);
}

/* Which kind of directory PID has, or one line saying why it has none. */
static bool find_target(long pid, struct target *t)
{
    char base[4096], list[4300];
    kprewrite_ctl_base(base, sizeof base);
    t->pid = pid;
    snprintf(t->dir, sizeof t->dir, "%s/%ld", base, pid);
    snprintf(t->sock, sizeof t->sock, "%s/socket", t->dir);
    snprintf(list, sizeof list, "%s/list", t->dir);
    struct stat st;
    if (lstat(t->sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
        t->socket = true;
        return true;
    }
    if (stat(list, &st) == 0)
        return true;
    int err = errno;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        fprintf(stderr, "kprewrite: ctl %ld: no such process\n", pid);
    else if (err == ENOTCONN)
        fprintf(stderr, "kprewrite: ctl %ld: %s is a FUSE mount nobody serves (its process died or is dumping "
                "core)\n", pid, t->dir);
    else if (err == EACCES)
        fprintf(stderr, "kprewrite: ctl %ld: %s: %s\n", pid, t->dir, strerror(err));
    else if (lstat(t->dir, &st) < 0)
        fprintf(stderr, "kprewrite: ctl %ld: no control directory %s (not a probed process, just started, or it "
                "could neither mount one nor make its socket)\n", pid, t->dir);
    else
        fprintf(stderr, "kprewrite: ctl %ld: %s holds neither control files nor a control socket\n", pid, t->dir);
    return false;
}

static const char *why(int err)
{
    switch (err) {
    case ENOENT: return "no baked probe matches";
    case EOPNOTSUPP: return "the probes it names can only be int3 probes";
    case EBUSY: return "a thread stayed inside the displaced instructions; the probe stays unoptimized (int3)";
    case EINVAL: return "not a command the runtime knows";
    case EPERM: return "the probes it names hold the runtime's libc guard (a probed libc's __sigaction, "
                       "pthread_sigmask, _exit and execve): they stay enabled";
    default: return strerror(err);
    }
}

int ctl_main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--static-pids") == 0)
        return ctl_static_pids();
    if (argc < 3 || strcmp(argv[1], "--help") == 0) {
        fputs(ctl_usage, argc < 3 ? stderr : stdout);
        return argc < 3 ? 1 : 0;
    }
    char *end;
    long pid = strtol(argv[1], &end, 10);
    if (*end || pid <= 0) {
        fprintf(stderr, "kprewrite: ctl: '%s' is not a process id\n", argv[1]);
        return 1;
    }
    int st = ctl_static_main(pid, argc, argv);
    if (st >= 0)
        return st;
    struct target t = { .socket = false };   /* find_target sets socket only when it is one */
    if (!find_target(pid, &t))
        return 1;
    const char *cmd = argv[2];
    int rc = 0;
    if (!strcmp(cmd, "list") || !strcmp(cmd, "profile") ||
        ((!strcmp(cmd, "enabled") || !strcmp(cmd, "optimization")) && argc == 3)) {
        if ((rc = target_read(&t, cmd)) < 0 && t.socket)
            fprintf(stderr, "kprewrite: ctl %ld: %s: read %s: %s\n", pid, t.sock, cmd, strerror(-rc));
        else if (rc < 0)
            fprintf(stderr, "kprewrite: ctl %ld: %s/%s: %s\n", pid, t.dir, cmd, strerror(-rc));
        return rc < 0;
    }
    if (!strcmp(cmd, "enabled") || !strcmp(cmd, "optimization")) {
        if (argc != 4 || (strcmp(argv[3], "0") && strcmp(argv[3], "1"))) {
            fprintf(stderr, "kprewrite: ctl: %s takes 0 or 1\n", cmd);
            return 1;
        }
        if ((rc = target_write(&t, cmd, argv[3])) < 0)
            fprintf(stderr, "kprewrite: ctl %ld: %s %s: %s\n", pid, cmd, argv[3], why(-rc));
        return rc < 0;
    }
    if ((rc = ctl_trace_main(&t, argc, argv)) >= 0)
        return rc;
    if (strcmp(cmd, "enable") && strcmp(cmd, "disable") && strcmp(cmd, "optimize") && strcmp(cmd, "unoptimize")) {
        fprintf(stderr, "kprewrite: ctl: unknown command '%s'\n%s", cmd, ctl_usage);
        return 1;
    }
    if (argc < 4) {
        fprintf(stderr, "kprewrite: ctl: %s needs a SPEC\n", cmd);
        return 1;
    }
    bool failed = false;
    for (int i = 3; i < argc; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s %s\n", cmd, argv[i]);
        if ((rc = target_write(&t, "control", line)) < 0) {
            fprintf(stderr, "kprewrite: ctl %ld: %s %s: %s\n", pid, cmd, argv[i], why(-rc));
            failed = true;
        }
    }
    return failed;
}
