/* `kprewrite ctl PID trace | untrace | hist | events`: the events of a
 * running probed process (doc/tracing.md). */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* argv[from..] joined by spaces, then a newline, after "VERB " */
static char *joined(const char *verb, int argc, char **argv, int from)
{
    size_t n = strlen(verb) + 2;
    for (int i = from; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = malloc(n);
    if (!s)
        return NULL;
    strcpy(s, verb);
    for (int i = from; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    strcat(s, "\n");
    return s;
}

static const char *why(int err, const char *verb)
{
    switch (err) {
    case ENOENT: return strcmp(verb, "trace") == 0 ? "no baked probe point matches its spec (a return event needs SYM%return baked)"
                                                   : "no event matches";
    case EINVAL: return "malformed (the process's stderr says where)";
    case ENOSPC: return "too many events in the process";
    default: return strerror(err);
    }
}

static int command(const struct target *t, const char *verb, int argc, char **argv, int from)
{
    char *line = joined(verb, argc, argv, from);
    int rc = line ? target_write(t, "control", line) : -ENOMEM;
    if (rc < 0)
        fprintf(stderr, "kprewrite: ctl %ld: %.*s: %s\n", t->pid, line ? (int)strlen(line) - 1 : 0, line ? line : "",
                why(-rc, verb));
    free(line);
    return rc;
}

static volatile sig_atomic_t stop;
/* A signal that comes between the loop's look at stop and the read it
 * then starts cannot interrupt that read, which waits for events that may
 * never come: so the stop also starts an alarm, every second until the
 * process ends, each one interrupting a read under way (no SA_RESTART). */
static void on_alarm(int sig) { (void)sig; alarm(1); }
static void on_stop(int sig) { (void)sig; stop = 1; alarm(1); }

static void catch(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);   /* no SA_RESTART: a read is interrupted */
}

/* KPREWRITE_TEST_STOP_BEFORE_READ=1 (tests): the stop signal comes just
 * before the read starts, in the window above */
static bool stop_before_read(void)
{
    const char *e = getenv("KPREWRITE_TEST_STOP_BEFORE_READ");
    return e && *e == '1';
}

/* Follow trace_pipe until interrupted (or the process ends). A FUSE
 * directory's trace_pipe waits for events itself; a socket answers at
 * once, so it is asked again every 100 ms. */
static int follow(const struct target *t)
{
    catch(SIGINT, on_stop);
    catch(SIGTERM, on_stop);
    catch(SIGPIPE, on_stop);
    catch(SIGALRM, on_alarm);
    bool test_stop = stop_before_read();
    if (!t->socket) {
        char path[4300];
        snprintf(path, sizeof path, "%s/trace_pipe", t->dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        char buf[65536];
        ssize_t n;
        while (!stop && (!test_stop || raise(SIGINT) == 0) && (n = read(fd, buf, sizeof buf)) != 0) {
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n || fflush(stdout))
                break;
        }
        close(fd);
        return 0;
    }
    while (!stop) {
        int rc = target_read(t, "trace_pipe");
        fflush(stdout);
        if (rc < 0)
            return kill((pid_t)t->pid, 0) < 0 ? 0 : rc;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

int ctl_trace_main(const struct target *t, int argc, char **argv)
{
    const char *cmd = argv[2];
    int rc;
    if (!strcmp(cmd, "events"))
        rc = target_read(t, "events");
    else if (!strcmp(cmd, "untrace") || (!strcmp(cmd, "trace") && argc > 3 && strncmp(argv[3], "--format", 8))) {
        if (argc < 4) {
            fprintf(stderr, "kprewrite: ctl: %s needs a %s\n", cmd, *cmd == 'u' ? "SPEC" : "DEFINITION");
            return 1;
        }
        /* untrace takes several specs; trace one definition, its words joined */
        if (*cmd == 'u') {
            bool failed = false;
            for (int i = 3; i < argc; i++)
                failed |= command(t, cmd, i + 1, argv, i) < 0;
            return failed;
        }
        return command(t, cmd, argc, argv, 3) < 0;
    } else if (!strcmp(cmd, "trace")) {
        const char *fmt = argc > 3 ? argv[3] + 8 : "";
        if (*fmt == '=')
            fmt++;
        else if (argc > 4 && !*fmt)
            fmt = argv[4];
        if (argc == 3 || !strcmp(fmt, "text"))
            rc = follow(t);
        else if (!strcmp(fmt, "json"))
            rc = target_read(t, "trace.json");
        else if (!strcmp(fmt, "folded"))
            rc = target_read(t, "trace.folded");
        else {
            fprintf(stderr, "kprewrite: ctl: --format is text, json or folded, not '%s'\n", fmt);
            return 1;
        }
    } else if (!strcmp(cmd, "hist")) {
        if (argc > 3 && command(t, "hist", argc, argv, 3) < 0)
            return 1;
        rc = target_read(t, "hist");
    } else if (!strcmp(cmd, "clear") && argc == 3) {
        rc = target_write(t, "trace", "\n");   /* `echo > trace`: the buffers emptied */
    } else
        return -1;
    if (rc < 0)
        fprintf(stderr, "kprewrite: ctl %ld: %s: %s\n", t->pid, cmd, strerror(-rc));
    return rc < 0;
}
