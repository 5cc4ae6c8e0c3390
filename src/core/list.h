/* SPDX-License-Identifier: MIT */
/*
 * list.h - the intrusive circular doubly linked list behind every wait queue.
 *
 * The list head is a sentinel node. A node that is on no list is self-linked
 * (band__list_del_init), so "is it queued?" is one comparison and a double removal is
 * harmless instead of corrupting its neighbours (the kernel's list_del_init habit).
 */
#ifndef BAND_CORE_LIST_H
#define BAND_CORE_LIST_H

#include <stdbool.h>

#include "band/core.h"

static inline void band__list_init(struct band__node *n)
{
    n->next = n;
    n->prev = n;
}

static inline bool band__list_empty(const struct band__node *head)
{
    return head->next == head;
}

/* Append @n before the sentinel @head, i.e. at the tail. */
static inline void band__list_add_tail(struct band__node *head, struct band__node *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static inline void band__list_del_init(struct band__node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    band__list_init(n);
}

/* The first node, or NULL when the list is empty. */
static inline struct band__node *band__list_first(const struct band__node *head)
{
    return band__list_empty(head) ? NULL : head->next;
}

#define band__list_foreach(pos, head)                                                              \
    for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif /* BAND_CORE_LIST_H */
