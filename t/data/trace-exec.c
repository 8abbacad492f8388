/* t/trace-exec.t: calls work() N times, then execs by the way argv[1]
 * names; the exec'd program ("/bin/sh -c 'echo after'") is not probed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
volatile int sink;
__attribute__((noinline)) int work(int x) { sink = x; return x * 2; }

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++)
        work(i);
    fflush(stdout);
    char *args[] = { "sh", "-c", "echo after", NULL };
    const char *how = argv[1];
    if (!strcmp(how, "execve")) execve("/bin/sh", args, environ);
    else if (!strcmp(how, "execv")) execv("/bin/sh", args);
    else if (!strcmp(how, "execvp")) execvp("sh", args);
    else if (!strcmp(how, "execvpe")) execvpe("sh", args, environ);
    else if (!strcmp(how, "execl")) execl("/bin/sh", "sh", "-c", "echo after", (char *)NULL);
    else if (!strcmp(how, "execlp")) execlp("sh", "sh", "-c", "echo after", (char *)NULL);
    else if (!strcmp(how, "execle")) execle("/bin/sh", "sh", "-c", "echo after", (char *)NULL, environ);
    else if (!strcmp(how, "fail")) {
        /* an exec that fails: tracing goes on */
        execv("/nonexistent/prog", args);
        for (int i = 0; i < n; i++)
            work(i);
        puts("failed exec, went on");
        return 0;
    }
    return 3;
}
