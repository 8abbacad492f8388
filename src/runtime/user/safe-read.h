/*
 * Reads of the program's memory that cannot fault it (safe-read-x86.S):
 * an event's dereferences and strings. A fault inside one of their loads
 * resumes at that read's fixup, which makes it return short (fault.c's
 * signal handler asks rt_safe_read_fixup).
 */
#ifndef KPREWRITE_SAFE_READ_H
#define KPREWRITE_SAFE_READ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the bytes copied before a fault (n: all) */
size_t rt_safe_read(void *dst, uintptr_t src, size_t n);
/* the string's length with its NUL (truncated to max - 1 and terminated),
 * or 0 on a fault */
size_t rt_safe_read_str(char *dst, uintptr_t src, size_t max);
/* the 8 bytes at src into *dst: true, or false on a fault */
bool rt_safe_read_word(uint64_t *dst, uintptr_t src);

extern char rt_safe_read_begin[], rt_safe_read_end[], rt_safe_read_fault[];
extern char rt_safe_str_begin[], rt_safe_str_end[], rt_safe_str_fault[];
extern char rt_safe_strw_begin[], rt_safe_strw_end[];
extern char rt_safe_word_begin[], rt_safe_word_end[], rt_safe_word_fault[];

/* Where a fault at ip resumes: a read's fixup, or 0 (not in a read). */
static inline uintptr_t rt_safe_read_fixup(uintptr_t ip)
{
    const struct { const char *begin, *end, *fixup; } reads[] = {
        { rt_safe_read_begin, rt_safe_read_end, rt_safe_read_fault },
        { rt_safe_str_begin, rt_safe_str_end, rt_safe_str_fault },
        { rt_safe_strw_begin, rt_safe_strw_end, rt_safe_str_fault },
        { rt_safe_word_begin, rt_safe_word_end, rt_safe_word_fault },
    };
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        if (ip >= (uintptr_t)reads[i].begin && ip < (uintptr_t)reads[i].end)
            return (uintptr_t)reads[i].fixup;
    return 0;
}
#endif
