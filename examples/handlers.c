/* kprobe handlers for the example: linked into wordfreq, registered at
 * start-up, reporting at exit. Built with `pkg-config --variable=handler_cflags
 * kprewrite-rt` (-mgeneral-regs-only): detours do not save vector registers. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <kprewrite/kprobes.h>

static unsigned long t_words, long_words;

/* count_word(const char *s): the argument is in %rdi */
static int on_count_word(struct kprobe *kp, struct pt_regs *regs)
{
    (void)kp;
    const char *s = (const char *)regs->di;
    unsigned n = 0;
    if (s[0] == 't' || s[0] == 'T')
        t_words++;
    while (s[n])
        n++;
    if (n > 4)
        long_words++;
    return 0;
}

static struct kprobe kp_count_word = { .symbol_name = "count_word", .pre_handler = on_count_word };

/* A return probe on count_word: the entry handler notes the time in the
 * call's instance data, the return handler prints the call's latency.
 * KPROBE_FLAG_FPU: these handlers call into libc (printf may use vector
 * registers), so the runtime saves the vector state around them. */
static unsigned long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static int count_word_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)regs;
    *(unsigned long *)ri->data = now_ns();
    return 0;
}

static int count_word_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
    (void)regs;
    static unsigned calls;
    printf("count_word call %2u: %5lu ns\n", ++calls, now_ns() - *(unsigned long *)ri->data);
    return 0;
}

static struct kretprobe rp_count_word = {
    .kp = { .symbol_name = "count_word", .flags = KPROBE_FLAG_FPU },
    .entry_handler = count_word_entry,
    .handler = count_word_return,
    .data_size = sizeof(unsigned long),
};

static void report(void)
{
    struct kprewrite_point_stats st;
    static const char *const points[] = { "count_word", "word_hash", "classify_char" };
    printf("== probe hits\n");
    for (unsigned i = 0; i < sizeof points / sizeof points[0]; i++)
        if (kprewrite_point_stats(points[i], 0, &st) == 0)
            printf("%-14s %6lu hits\n", points[i], st.hits);
        else
            printf("%-14s not baked\n", points[i]);
    printf("count_word handler: %lu words start with 't', %lu are longer than 4 letters\n", t_words, long_words);
    printf("count_word%%return: %d calls missed (no free instance)\n", rp_count_word.nmissed);
}

__attribute__((constructor)) static void setup(void)
{
    int rc = register_kprobe(&kp_count_word);
    if (rc < 0)
        fprintf(stderr, "handlers: register_kprobe(count_word) = %d (not baked yet?)\n", rc);
    rc = register_kretprobe(&rp_count_word);
    if (rc < 0)
        fprintf(stderr, "handlers: register_kretprobe(count_word) = %d (not baked yet?)\n", rc);
    atexit(report);
}
