/* SPDX-License-Identifier: MIT */
/*
 * deadline_heap.h - an intrusive min-heap of deadlines for the adapters (internal).
 *
 * The primitives never read the clock; an adapter that offers deadlines arms ONE timer of
 * its own for the earliest pending deadline and, when it fires, cancels every operation
 * whose deadline has passed with BAND_ETIMEDOUT. This is the heap behind that timer: a
 * pairing heap whose nodes live in the caller's operation struct (no allocation), with
 * O(1) insert and min, and O(log n) amortized removal of the minimum or of any node (an
 * operation that completes or is cancelled before its deadline leaves the heap at once).
 * Single-threaded: only the adapter's own loop thread touches it.
 */
#ifndef BAND_ADAPTERS_DEADLINE_HEAP_H
#define BAND_ADAPTERS_DEADLINE_HEAP_H

#include <stddef.h>

#include "band/adapter_nodes.h" /* struct band__dl_node */
#include "band/core.h"

struct band__dl_heap {
    struct band__dl_node *root;
};

static inline void band__dl_init(struct band__dl_heap *h)
{
    h->root = NULL;
}

/* Links two roots; the later deadline becomes the first child of the earlier one. */
static inline struct band__dl_node *band__dl_meld(struct band__dl_node *a, struct band__dl_node *b)
{
    if (a == NULL) {
        return b;
    }
    if (b == NULL) {
        return a;
    }
    if (b->deadline < a->deadline) {
        struct band__dl_node *t = a;
        a = b;
        b = t;
    }
    b->prev = a;
    b->sibling = a->child;
    if (a->child != NULL) {
        a->child->prev = b;
    }
    a->child = b;
    a->sibling = NULL;
    a->prev = NULL;
    return a;
}

/* Two-pass pairing of a sibling list into one heap. */
static inline struct band__dl_node *band__dl_merge_pairs(struct band__dl_node *first)
{
    struct band__dl_node *paired = NULL; /* pass 1 results, linked through sibling */
    while (first != NULL) {
        struct band__dl_node *a = first;
        struct band__dl_node *b = a->sibling;
        first = b != NULL ? b->sibling : NULL;
        a->sibling = NULL;
        a->prev = NULL;
        if (b != NULL) {
            b->sibling = NULL;
            b->prev = NULL;
        }
        struct band__dl_node *m = band__dl_meld(a, b);
        m->sibling = paired;
        paired = m;
    }
    struct band__dl_node *root = NULL;
    while (paired != NULL) {
        struct band__dl_node *next = paired->sibling;
        paired->sibling = NULL;
        root = band__dl_meld(root, paired);
        paired = next;
    }
    return root;
}

static inline void band__dl_insert(struct band__dl_heap *h, struct band__dl_node *n,
                                   band_time deadline)
{
    n->deadline = deadline;
    n->child = NULL;
    n->sibling = NULL;
    n->prev = NULL;
    h->root = band__dl_meld(h->root, n);
}

/* The earliest node, or NULL when empty. */
static inline struct band__dl_node *band__dl_min(const struct band__dl_heap *h)
{
    return h->root;
}

/* Removes @n, which must be in @h. */
static inline void band__dl_remove(struct band__dl_heap *h, struct band__dl_node *n)
{
    if (n == h->root) {
        h->root = band__dl_merge_pairs(n->child);
    } else {
        /* Unlink n (and its subtree) from its sibling list, then meld its children back.
         * Every node of the heap but the root has a prev; one without is in no heap. */
        struct band__dl_node *p = n->prev;
        if (p == NULL)
            return;
        if (p->child == n) {
            p->child = n->sibling;
        } else {
            p->sibling = n->sibling;
        }
        if (n->sibling != NULL) {
            n->sibling->prev = p;
        }
        h->root = band__dl_meld(h->root, band__dl_merge_pairs(n->child));
    }
    n->child = NULL;
    n->sibling = NULL;
    n->prev = NULL;
}

#endif /* BAND_ADAPTERS_DEADLINE_HEAP_H */
