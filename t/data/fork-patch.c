/*
 * A child's probe changes stay in the child (t/fork-patch.t). The parent
 * has changed code before it forks (so the runtime has opened what it
 * writes code through); then the child
 *   - disables the kprobe it inherited on `fa` (its only one: the point is
 *     disarmed, its original bytes written back) and, while it is so, the
 *     parent looks at its own `fa` and calls it; then enables it again;
 *   - registers a kprobe with a post_handler on `fb` (the point becomes
 *     int3) and, while it is so, the parent looks at its own `fb`.
 * Each line printed says whether the code was what it should be (compared
 * with the bytes the process saw before), how many times the handlers ran
 * and how many hits the point counted over 10 calls.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kprewrite/kprobes.h>

#define N 10
#define SITE 5   /* a jmp rel32: what each jump-optimized site holds */

__attribute__((noinline)) int fa(int x) { asm volatile(""); return x + 1; }
__attribute__((noinline)) int fb(int x) { asm volatile(""); return x + 2; }

static int pre_calls, post_calls;
static int pre(struct kprobe *p, struct pt_regs *r) { (void)p, (void)r; pre_calls++; return 0; }
static void post(struct kprobe *p, struct pt_regs *r, unsigned long f) { (void)p, (void)r, (void)f; post_calls++; }

static struct kprobe ka = { .symbol_name = "fa", .pre_handler = pre };
static unsigned char fa_armed[SITE], fb_armed[SITE];

static unsigned long hits(const char *sym)
{
    struct kprewrite_point_stats st;
    return kprewrite_point_stats(sym, 0, &st) == 0 ? st.hits : (unsigned long)-1;
}

/* N calls of fn: "handler H, hits C" (and post P when asked) */
static void calls(char *out, size_t len, int (*fn)(int), const char *sym, int with_post)
{
    unsigned long h0 = hits(sym);
    pre_calls = post_calls = 0;
    for (int i = 0; i < N; i++)
        fn(i);
    int n = snprintf(out, len, "handler %d, hits %lu", pre_calls, hits(sym) - h0);
    if (with_post)
        snprintf(out + n, len - (size_t)n, ", post %d", post_calls);
}

static const char *same(const void *code, const unsigned char *was)
{
    return memcmp(code, was, SITE) == 0 ? "yes" : "no";
}

static void say(int fd, char c) { (void)!write(fd, &c, 1); }
static void hear(int fd) { char c; (void)!read(fd, &c, 1); }

static int child(int to_parent, int from_parent)
{
    char a[96], b[96], c[96];
    alarm(60);   /* a hang ends the child (the parent then reads EOF) */
    if (disable_kprobe(&ka) < 0)
        return 1;
    const char *changed = memcmp((const void *)fa, fa_armed, SITE) ? "yes" : "no";
    calls(a, sizeof a, fa, "fa", 0);
    say(to_parent, 'a');   /* the parent looks at its fa */
    hear(from_parent);
    if (enable_kprobe(&ka) < 0)
        return 1;
    calls(b, sizeof b, fa, "fa", 0);
    printf("child fa: disabled: code changed %s, %s; enabled: code as armed %s, %s\n", changed, a,
           same((const void *)fa, fa_armed), b);

    struct kprobe kb = { .symbol_name = "fb", .pre_handler = pre, .post_handler = post };
    if (register_kprobe(&kb) < 0)
        return 1;
    changed = memcmp((const void *)fb, fb_armed, SITE) ? "yes" : "no";
    calls(c, sizeof c, fb, "fb", 1);
    printf("child fb: post_handler registered: code changed %s, %s\n", changed, c);
    fflush(stdout);
    say(to_parent, 'b');   /* the parent looks at its fb */
    hear(from_parent);
    unregister_kprobe(&kb);
    return 0;
}

int main(void)
{
    char a[96], b[96];
    /* the parent changes code first: disarm and arm fa again */
    if (register_kprobe(&ka) < 0 || disable_kprobe(&ka) < 0 || enable_kprobe(&ka) < 0) {
        fprintf(stderr, "fork-patch: registration failed\n");
        return 1;
    }
    memcpy(fa_armed, (const void *)fa, SITE);
    memcpy(fb_armed, (const void *)fb, SITE);
    int up[2], down[2];
    if (pipe(up) < 0 || pipe(down) < 0)
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]), close(down[1]);
        _exit(child(up[1], down[0]));
    }
    close(up[1]), close(down[0]);
    char got;
    if (read(up[0], &got, 1) == 1) {
        const char *as = same((const void *)fa, fa_armed);
        calls(a, sizeof a, fa, "fa", 0);
        printf("parent fa: while the child's was disabled: code as armed %s, %s\n", as, a);
        say(down[1], 'a');
    }
    if (read(up[0], &got, 1) == 1) {
        const char *as = same((const void *)fb, fb_armed);
        calls(b, sizeof b, fb, "fb", 1);
        printf("parent fb: while the child's had a post_handler: code as armed %s, %s\n", as, b);
        say(down[1], 'b');
    }
    int st;
    waitpid(pid, &st, 0);
    calls(a, sizeof a, fa, "fa", 0);
    printf("parent fa: after the child: code as armed %s, %s\n", same((const void *)fa, fa_armed), a);
    calls(b, sizeof b, fb, "fb", 1);
    printf("parent fb: after the child: code as armed %s, %s\n", same((const void *)fb, fb_armed), b);
    printf("child: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}
