/* `kprewrite ctl PID COMMAND`: the control directory of a running probed
 * process, for people who prefer a command to echo and cat. */
#include "ctl.h"
#include "kprewrite/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char ctl_usage[] =
"Usage: kprewrite ctl PID list | profile\n"
"       kprewrite ctl PID enabled [0|1] | optimization [0|1]\n"
"       kprewrite ctl PID enable|disable|optimize|unoptimize SPEC...\n"
"SPEC is SYM, SYM+OFF, 0xADDR; SYM may be a glob.\n";

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

static const char *why(int err)
{
    switch (err) {
    case ENOENT: return "no baked probe matches";
    case EOPNOTSUPP: return "the probes it names can only be int3 probes";
    case EBUSY: return "a thread stayed inside the displaced instructions; the probe stays unoptimized (int3)";
    case EINVAL: return "not a command the runtime knows";
    default: return strerror(err);
    }
}

int ctl_main(int argc, char **argv)
{
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
    char base[4096], dir[4200], path[4300];
    kprewrite_ctl_base(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/%ld", base, pid);
    if (access(dir, F_OK) < 0) {
        fprintf(stderr, "kprewrite: ctl %ld: no control directory %s (not a probed process, or it could not "
                "make one)\n", pid, dir);
        return 1;
    }
    const char *cmd = argv[2];
    int rc = 0;
    if (!strcmp(cmd, "list") || !strcmp(cmd, "profile") ||
        ((!strcmp(cmd, "enabled") || !strcmp(cmd, "optimization")) && argc == 3)) {
        snprintf(path, sizeof path, "%s/%s", dir, cmd);
        if ((rc = cat_file(path)) < 0)
            fprintf(stderr, "kprewrite: ctl %ld: %s: %s\n", pid, path, strerror(-rc));
        return rc < 0;
    }
    if (!strcmp(cmd, "enabled") || !strcmp(cmd, "optimization")) {
        if (argc != 4 || (strcmp(argv[3], "0") && strcmp(argv[3], "1"))) {
            fprintf(stderr, "kprewrite: ctl: %s takes 0 or 1\n", cmd);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s", dir, cmd);
        if ((rc = write_file(path, argv[3])) < 0)
            fprintf(stderr, "kprewrite: ctl %ld: %s %s: %s\n", pid, cmd, argv[3], why(-rc));
        return rc < 0;
    }
    if (strcmp(cmd, "enable") && strcmp(cmd, "disable") && strcmp(cmd, "optimize") && strcmp(cmd, "unoptimize")) {
        fprintf(stderr, "kprewrite: ctl: unknown command '%s'\n%s", cmd, ctl_usage);
        return 1;
    }
    if (argc < 4) {
        fprintf(stderr, "kprewrite: ctl: %s needs a SPEC\n", cmd);
        return 1;
    }
    snprintf(path, sizeof path, "%s/control", dir);
    bool failed = false;
    for (int i = 3; i < argc; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s %s\n", cmd, argv[i]);
        if ((rc = write_file(path, line)) < 0) {
            fprintf(stderr, "kprewrite: ctl %ld: %s %s: %s\n", pid, cmd, argv[i], why(-rc));
            failed = true;
        }
    }
    return failed;
}
