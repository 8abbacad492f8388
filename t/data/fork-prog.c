/*
 * fork() in a threaded probed program (t/fork.t). The child has only the
 * thread that forked; what the other threads held at that moment must not
 * hang it or be lost to it:
 *   - a thread inside a pre_handler of `sit` (jump-optimized) and one inside
 *     a pre_handler of `sit_trap` (the int3 path: it has a post_handler):
 *     the child unregisters both kprobes (waiting for those handlers would
 *     never end);
 *   - a thread inside `held`, whose kretprobe has maxactive 1: the child's
 *     call of held finds that instance free and its return handler runs;
 *   - two threads registering and unregistering kprobes on `fa` (the
 *     runtime's lock held often): forks in a loop, each child registers a
 *     kprobe of its own and counts its hits exactly.
 * Prints one line for the first child, one for the parent, one for the
 * loop (argv[1] forks), with the /dev/fuse and control descriptors each
 * process has open (the parent's control directory, FUSE or socket, and
 * its watcher's pipe).
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kprewrite/kprobes.h>

__attribute__((noinline)) int fa(int x) { asm volatile(""); return x + 1; }
__attribute__((noinline)) int fb(int x) { asm volatile(""); return x + 2; }
__attribute__((noinline)) int sit(int x) { asm volatile(""); return x + 3; }
__attribute__((noinline)) int sit_trap(int x) { asm volatile(""); return x + 4; }

static sem_t inside, release;
__attribute__((noinline)) int held(int x)
{
    if (x) {   /* the thread that stays inside across the fork */
        sem_post(&inside);
        sem_wait(&release);
    }
    return x + 5;
}

static _Atomic int fb_hits, held_returns;
static int count_fb(struct kprobe *p, struct pt_regs *r) { (void)p; (void)r; fb_hits++; return 0; }
static int wait_here(struct kprobe *p, struct pt_regs *r)
{
    (void)p;
    if (r->di) {   /* sit(1), sit_trap(1): stay until released */
        sem_post(&inside);
        sem_wait(&release);
    }
    return 0;
}
static void post(struct kprobe *p, struct pt_regs *r, unsigned long flags) { (void)p; (void)r; (void)flags; }
static int on_return(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri; (void)r; held_returns++; return 0; }

static struct kprobe k_sit = { .symbol_name = "sit", .pre_handler = wait_here };
static struct kprobe k_trap = { .symbol_name = "sit_trap", .pre_handler = wait_here, .post_handler = post };
static struct kretprobe r_held = { .kp = { .symbol_name = "held" }, .handler = on_return, .maxactive = 1 };

static void *call(void *fn) { ((int (*)(int))fn)(1); return NULL; }

static volatile int stop;
static void *churn(void *arg)
{
    struct kprobe *kp = arg;
    while (!stop) {
        memset(kp, 0, sizeof *kp);
        kp->symbol_name = "fa";
        kp->pre_handler = count_fb;   /* never runs on fb: only registered */
        if (register_kprobe(kp) == 0)
            unregister_kprobe(kp);
        fa(1);
    }
    return NULL;
}

/* the child's own kprobe on fb, hit n times: 0 when every hit counted */
static int own_kprobe(int n)
{
    struct kprobe k = { .symbol_name = "fb", .pre_handler = count_fb };
    if (register_kprobe(&k) < 0)
        return 1;
    for (int i = 0; i < n; i++)
        fb(i);
    unregister_kprobe(&k);
    return fb_hits == n ? 0 : 2;
}

/* open file descriptors on /dev/fuse: the control directory's connection */
static int fuse_fds(void)
{
    int fuse = 0;
    char path[64], target[64];
    for (int fd = 0; fd < 256; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0 && (target[n] = 0, strcmp(target, "/dev/fuse") == 0))
            fuse++;
    }
    return fuse;
}

/* close-on-exec fds on /dev/fuse, a socket or a pipe: the runtime's
 * control directory (a FUSE connection or a listening socket) and its
 * watcher's pipe; this program opens none of those itself */
static int control_fds(void)
{
    int n = 0;
    char path[64], target[64];
    for (int fd = 0; fd < 256; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k <= 0 || fcntl(fd, F_GETFD) <= 0)
            continue;
        target[k] = 0;
        n += !strcmp(target, "/dev/fuse") || !strncmp(target, "socket:", 7) || !strncmp(target, "pipe:", 5);
    }
    return n;
}

static int child(void)
{
    alarm(20);   /* a hang becomes SIGALRM */
    int own = own_kprobe(1000);
    unregister_kprobe(&k_sit);
    unregister_kprobe(&k_trap);
    held(0);
    printf("child: own kprobe %s, unregistered both, held returns %d nmissed %d, /dev/fuse fds %d, "
           "control fds %d\n", own ? "wrong" : "exact", held_returns, r_held.nmissed, fuse_fds(), control_fds());
    fflush(stdout);   /* the caller ends with _exit */
    return own;
}

int main(int argc, char **argv)
{
    int loops = argc > 1 ? atoi(argv[1]) : 100;
    sem_init(&inside, 0, 0);
    sem_init(&release, 0, 0);
    if (register_kprobe(&k_sit) < 0 || register_kprobe(&k_trap) < 0 || register_kretprobe(&r_held) < 0) {
        fprintf(stderr, "registration failed\n");
        return 1;
    }
    pthread_t t[3];
    void *fns[3] = { (void *)sit, (void *)sit_trap, (void *)held };
    for (int i = 0; i < 3; i++) {
        pthread_create(&t[i], NULL, call, fns[i]);
        sem_wait(&inside);
    }
    int fuse = fuse_fds(), control = control_fds();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child());
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st))
        printf("child: killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    for (int i = 0; i < 3; i++)
        sem_post(&release);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("parent: held returns %d nmissed %d, /dev/fuse fds %d, control fds %d\n", held_returns,
           r_held.nmissed, fuse, control);

    /* forks while two threads take and release the runtime's lock */
    static struct kprobe kps[2];
    pthread_t c[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&c[i], NULL, churn, &kps[i]);
    int hung = 0, wrong = 0;
    for (int i = 0; i < loops; i++) {
        fflush(stdout);
        if ((pid = fork()) == 0) {
            alarm(10);
            fb_hits = 0;
            _exit(own_kprobe(10));
        }
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
            hung++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st))
            wrong++;
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    printf("loop: %d forks, %d hung, %d wrong\n", loops, hung, wrong);
    return 0;
}
