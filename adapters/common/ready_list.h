/* SPDX-License-Identifier: MIT */
/*
 * ready_list.h - the lock-free hand-over list every band adapter uses (internal).
 *
 * A wake function runs on whichever thread completed the operation; an adapter must move
 * the finished operation to its own loop without a lock and without allocating. Wakes push
 * intrusive nodes onto a Treiber stack (any number of threads); the loop takes the whole
 * stack with one exchange and reverses it, so completions are delivered in the order they
 * were pushed. band__ready_push() reports whether the list was empty before, so the pusher
 * signals the loop (uv_async_send, an eventfd write) only on the empty-to-non-empty edge:
 * a later push finds the list non-empty, and the consumer, which has not taken it yet,
 * will see that node too. Nothing is lost when signals coalesce.
 */
#ifndef BAND_ADAPTERS_READY_LIST_H
#define BAND_ADAPTERS_READY_LIST_H

#include <stdatomic.h>
#include <stddef.h>

#include "band/adapter_nodes.h" /* struct band__ready_node */

struct band__ready_list {
    _Atomic(struct band__ready_node *) head;
};

static inline void band__ready_init(struct band__ready_list *l)
{
    atomic_init(&l->head, NULL);
}

/* Push @n (any thread). Returns 1 when the list was empty, so the caller must signal. */
static inline int band__ready_push(struct band__ready_list *l, struct band__ready_node *n)
{
    struct band__ready_node *old = atomic_load_explicit(&l->head, memory_order_relaxed);
    do {
        n->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&l->head, &old, n, memory_order_release,
                                                    memory_order_relaxed));
    return old == NULL;
}

/* Take every node pushed so far, oldest first (the consumer's thread only). */
static inline struct band__ready_node *band__ready_take(struct band__ready_list *l)
{
    struct band__ready_node *n = atomic_exchange_explicit(&l->head, NULL, memory_order_acquire);
    struct band__ready_node *fifo = NULL;
    while (n != NULL) {
        struct band__ready_node *next = n->next;
        n->next = fifo;
        fifo = n;
        n = next;
    }
    return fifo;
}

#endif /* BAND_ADAPTERS_READY_LIST_H */
