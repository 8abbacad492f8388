/* Folded stacks from return events (folded.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"

struct node {
    const char *fn;
    uint64_t self;                     /* exclusive ns */
    uint64_t calls;
    struct node *kids, *next;          /* children, merged by function */
};

/* A finished call waiting for the call that contains it. */
struct waiting {
    uint64_t entry, ret;
    struct node *n;
};

struct thread {
    uint32_t tid;
    struct waiting *w;
    size_t n, cap;
    struct thread *next;
};

struct folded {
    struct thread *threads;
};

struct folded *folded_new(void) { return calloc(1, sizeof(struct folded)); }

static void node_free(struct node *n)
{
    while (n) {
        struct node *next = n->next;
        node_free(n->kids);
        free(n);
        n = next;
    }
}

void folded_free(struct folded *f)
{
    if (!f)
        return;
    for (struct thread *t = f->threads, *next; t; t = next) {
        next = t->next;
        for (size_t i = 0; i < t->n; i++)
            node_free(t->w[i].n);
        free(t->w);
        free(t);
    }
    free(f);
}

/* Merge subtree s (taken over) into the child list *kids. */
static void merge(struct node **kids, struct node *s)
{
    while (s) {
        struct node *next = s->next, *k = *kids;
        while (k && k->fn != s->fn && strcmp(k->fn, s->fn) != 0)
            k = k->next;
        if (!k) {
            s->next = *kids;
            *kids = s;
        } else {
            k->self += s->self;
            k->calls += s->calls;
            merge(&k->kids, s->kids);
            free(s);
        }
        s = next;
    }
}

static struct thread *thread_of(struct folded *f, uint32_t tid)
{
    for (struct thread *t = f->threads; t; t = t->next)
        if (t->tid == tid)
            return t;
    struct thread *t = calloc(1, sizeof *t);
    if (t) {
        t->tid = tid;
        t->next = f->threads;
        f->threads = t;
    }
    return t;
}

void folded_add(struct folded *f, uint32_t tid, const char *fn, uint64_t entry, uint64_t ret)
{
    struct thread *t = thread_of(f, tid);
    struct node *n = calloc(1, sizeof *n);
    if (!t || !n || ret < entry) {
        free(n);
        return;
    }
    n->fn = fn;
    n->calls = 1;
    uint64_t inner = 0;
    /* the waiting calls inside [entry, ret] are at the end: adopt them */
    while (t->n && t->w[t->n - 1].entry >= entry && t->w[t->n - 1].ret <= ret) {
        struct waiting *c = &t->w[--t->n];
        inner += c->ret - c->entry;
        c->n->next = NULL;
        merge(&n->kids, c->n);
    }
    n->self = ret - entry >= inner ? ret - entry - inner : 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct waiting *w = realloc(t->w, cap * sizeof *w);
        if (!w) {
            node_free(n);
            return;
        }
        t->w = w;
        t->cap = cap;
    }
    t->w[t->n++] = (struct waiting){ entry, ret, n };
}

/* ---- output: one line a path, merged over threads and sorted ---- */

struct line {
    char *path;
    uint64_t value;
};

struct lines {
    struct line *v;
    size_t n, cap;
};

/* (equal paths, of other threads or other root calls, are summed once
 * the lines are sorted) */
static void emit(struct lines *l, const char *path, uint64_t value)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct line *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    char *p = strdup(path);
    if (p)
        l->v[l->n++] = (struct line){ p, value };
}

static void walk(struct lines *l, const struct node *n, char *path, size_t len, size_t cap)
{
    for (; n; n = n->next) {
        size_t fl = strlen(n->fn), at = len;
        if (at + (at != 0) + fl + 1 > cap)
            continue;   /* a path deeper than the buffer: left out */
        if (at)
            path[at++] = ';';
        memcpy(path + at, n->fn, fl + 1);
        if (n->self)
            emit(l, path, n->self);
        walk(l, n->kids, path, at + fl, cap);
        path[len] = 0;
    }
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->path, ((const struct line *)b)->path);
}

char *folded_text(struct folded *f, size_t *len)
{
    struct lines l = { 0 };
    size_t cap = 65536;
    char *path = malloc(cap);
    for (struct thread *t = f->threads; t && path; t = t->next)
        for (size_t i = 0; i < t->n; i++) {
            struct node *save = t->w[i].n->next;
            t->w[i].n->next = NULL;
            path[0] = 0;
            walk(&l, t->w[i].n, path, 0, cap);
            t->w[i].n->next = save;
        }
    free(path);
    qsort(l.v, l.n, sizeof *l.v, by_path);
    size_t total = 1;
    for (size_t i = 0; i < l.n; i++)
        total += strlen(l.v[i].path) + 24;
    char *out = malloc(total), *p = out;
    for (size_t i = 0; i < l.n; i++) {
        uint64_t v = l.v[i].value;
        while (i + 1 < l.n && !strcmp(l.v[i].path, l.v[i + 1].path)) {
            free(l.v[i].path);
            v += l.v[++i].value;
        }
        if (out)
            p += sprintf(p, "%s %llu\n", l.v[i].path, (unsigned long long)v);
        free(l.v[i].path);
    }
    free(l.v);
    if (out)
        *p = 0;
    *len = out ? (size_t)(p - out) : 0;
    return out;
}

