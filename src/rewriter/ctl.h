/* `kprewrite ctl`: talk to a running probed process's control directory. */
#ifndef KPREWRITE_CLI_CTL_H
#define KPREWRITE_CLI_CTL_H
#include <stdbool.h>
#include <stdio.h>

/* The process's control directory, served as files (FUSE) or through
 * its socket. */
struct target {
    long pid;
    char dir[4200], sock[4300];
    bool socket;
};
int target_read(const struct target *t, const char *file);   /* to stdout; 0 or -errno */
int target_write(const struct target *t, const char *file, const char *text);
/* trace | untrace | hist | events (ctl-trace.c): the exit status, or -1
 * when cmd is none of them */
int ctl_trace_main(const struct target *t, int argc, char **argv);
int ctl_main(int argc, char **argv);
/* ctl on a static program, through /proc/PID/mem (ctl-static.c): the
 * exit status, or -1 when PID does not run the static runtime */
int ctl_static_pids(void);   /* kprewrite ctl --static-pids; the exit status */
int ctl_static_main(long pid, int argc, char **argv);   /* argv[0] = "ctl"; returns the exit status */
/* One request to a control socket: VERB "read" (the text to out) or
 * "write" (data); 0, or the -errno of the write or of the connection. */
int ctl_socket_request(const char *path, const char *verb, const char *file, const char *data, FILE *out);
#endif
