/* kprobe handlers for the example: linked into wordfreq, registered at
 * start-up, reporting at exit. Built with `pkg-config --variable=handler_cflags
 * kprewrite-rt` (-mgeneral-regs-only): detours do not save vector registers. */
#include <stdio.h>
#include <stdlib.h>
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
}

__attribute__((constructor)) static void setup(void)
{
    int rc = register_kprobe(&kp_count_word);
    if (rc < 0)
        fprintf(stderr, "handlers: register_kprobe(count_word) = %d (not baked yet?)\n", rc);
    atexit(report);
}
