/* `kprewrite ctl`: talk to a running probed process's control directory. */
#ifndef KPREWRITE_CLI_CTL_H
#define KPREWRITE_CLI_CTL_H
#include <stdio.h>
int ctl_main(int argc, char **argv);   /* argv[0] = "ctl"; returns the exit status */
/* One request to a control socket: VERB "read" (the text to out) or
 * "write" (data); 0, or the -errno of the write or of the connection. */
int ctl_socket_request(const char *path, const char *verb, const char *file, const char *data, FILE *out);
#endif
