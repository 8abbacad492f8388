/* `kprewrite ctl`: talk to a running probed process's control directory. */
#ifndef KPREWRITE_CLI_CTL_H
#define KPREWRITE_CLI_CTL_H
int ctl_main(int argc, char **argv);   /* argv[0] = "ctl"; returns the exit status */
#endif
