/* The bundled example: a small word-frequency counter to put probes in. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 64

struct word { char text[32]; unsigned count; struct word *next; };
static struct word *table[BUCKETS];

enum kind { LETTER, DIGIT, SPACE, PUNCT, OTHER };

__attribute__((noinline)) int classify_char(int c)
{
    switch (c) {
    case 'a' ... 'z': case 'A' ... 'Z': return LETTER;
    case '0' ... '9': return DIGIT;
    case ' ': case '\t': case '\n': case '\r': return SPACE;
    case '.': case ',': case ';': case ':': case '!': case '?': return PUNCT;
    default: return OTHER;
    }
}

__attribute__((noinline)) unsigned word_hash(const char *s)
{
    unsigned h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)tolower((unsigned char)*s++);
    return h % BUCKETS;
}

void count_word(const char *s)
{
    unsigned h = word_hash(s);
    for (struct word *w = table[h]; w; w = w->next)
        if (strcasecmp(w->text, s) == 0) {
            w->count++;
            return;
        }
    struct word *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    snprintf(w->text, sizeof w->text, "%s", s);
    w->count = 1;
    w->next = table[h];
    table[h] = w;
}

unsigned count_words(const char *text)
{
    char buf[32];
    size_t n = 0;
    unsigned words = 0;
    for (const char *p = text;; p++) {
        if (*p && classify_char((unsigned char)*p) == LETTER) {
            if (n < sizeof buf - 1)
                buf[n++] = *p;
            continue;
        }
        if (n) {
            buf[n] = 0;
            count_word(buf);
            words++;
            n = 0;
        }
        if (!*p)
            return words;
    }
}

int main(int argc, char **argv)
{
    const char *text = argc > 1 ? argv[1] : "the quick brown fox jumps over the lazy dog. The dog sleeps.";
    unsigned words = 0;
    if (strcmp(text, "-") == 0) {   /* lines from stdin, as they come */
        char line[4096];
        while (fgets(line, sizeof line, stdin))
            words += count_words(line);
    } else {
        words = count_words(text);
    }
    printf("%u words\n", words);
    for (int b = 0; b < BUCKETS; b++)
        for (struct word *w = table[b]; w; w = w->next)
            if (w->count > 1)
                printf("%s %u\n", w->text, w->count);
    return 0;
}
