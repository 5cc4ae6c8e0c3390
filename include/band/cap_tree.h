/* SPDX-License-Identifier: MIT */
/**
 * @file band/cap_tree.h
 * @brief Capacity trees: nested caps with guaranteed reservations.
 *
 * A band_cap_tree node is a budget (its cap) with a parent and an optional guaranteed
 * reservation: a tenant under a team under a cluster, each with its own cap. Requests do
 * not acquire a node directly: band_admit_req_add_tree() (band/admit.h) names a leaf and
 * every ancestor with the same amount, so one admission charges the whole path, all or
 * nothing. docs/admit.md has the long form. The rules:
 *
 *  - The reservations of a node's children may total at most the node's cap, and a
 *    reservation at most its own node's cap.
 *  - Caps: an amount over a node's cap fails with BAND_E2BIG.
 *  - Staged queueing: a request waits in its leaf's queue until the leaf has room for it,
 *    and only then joins its parent's queue, and so on up; so a tenant at its cap does not
 *    hold up its ancestors for everybody else. Later joins keep the request's original
 *    place in the global order (FIFO and deadlock freedom hold). Closing (or shrinking
 *    below the amount) an ancestor it has not reached yet still fails it at once.
 *  - Work-conserving: any request may use capacity that is free, including the unused
 *    reservation of a sibling.
 *  - A request is "guaranteed" when, for the reserving node on its path (the nearest node
 *    with a reservation, from the leaf up), the units in use there plus the units of its
 *    guaranteed requests still queued plus this request fit within the reservation. A
 *    guaranteed request that must wait is queued ahead of every non-guaranteed waiter
 *    (borrowers, and plain acquisitions of the nodes' semaphores) in every queue it joins,
 *    behind earlier guaranteed ones. Nothing is revoked: it gets the next freed capacity.
 *    The class is fixed when the request queues, the same in every queue, so the queues
 *    still agree with one global order and admission stays deadlock-free.
 *
 * Every function is MT-safe.
 */
#ifndef BAND_CAP_TREE_H
#define BAND_CAP_TREE_H

#include "band/core.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief A node of a capacity tree (opaque): a budget with a parent and an optional
 *        guaranteed reservation. Created with band_cap_tree_create(), freed with
 *        band_cap_tree_destroy().
 */
typedef struct band_cap_tree band_cap_tree;

/**
 * @brief Allocate a node under @p parent (NULL for a root) with capacity @p cap and
 *        guaranteed reservation @p reserve (0 = none).
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL (NULL @p out, @p cap 0 or above
 * BAND_MAX_UNITS, @p reserve above @p cap, or the reservations of @p parent's children
 * would exceed @p parent's capacity), or BAND_ENOMEM. *@p out is unchanged on failure and
 * nothing is allocated. Free with band_cap_tree_destroy(). MT-safe.
 *
 * @param[out] out  Receives the new node; must not be NULL. The caller owns the node.
 * @param parent    The parent node, or NULL for a root. It must outlive the new node
 *                  (band_cap_tree_destroy() refuses a node with children).
 * @param cap       The node's capacity, 1 to BAND_MAX_UNITS.
 * @param reserve   The guaranteed reservation, 0 (none) to @p cap; with the reservations
 *                  of @p parent's other children it may total at most @p parent's
 *                  capacity.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_cap_tree_create(band_cap_tree **out, band_cap_tree *parent, uint64_t cap,
                                  uint64_t reserve);

/**
 * @brief Free @p t.
 *
 * Returns 0, or BAND_EBUSY while it has children or waiters (nothing freed). NULL returns
 * 0. A freed node's reservation no longer counts against its parent's capacity. Units
 * still held of the node (grants that name its semaphore) are their holders' to return
 * first: nobody may use @p t or its semaphore after this call. MT-safe with the other
 * nodes of its tree; not MT-safe with other uses of @p t.
 *
 * @param t  The node, or NULL (a no-op).
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_cap_tree_destroy(band_cap_tree *t);

/**
 * @brief The node's budget as a semaphore (stats, direct acquisitions, close).
 *
 * The semaphore belongs to the node and lives as long as it does; it is not destroyed on
 * its own (band_sem_destroy() refuses it). MT-safe.
 *
 * @param t  The node, or NULL.
 * @return The node's semaphore, or NULL for NULL.
 */
BAND_API band_sem *band_cap_tree_sem(band_cap_tree *t);

/**
 * @brief The parent node.
 *
 * MT-safe.
 *
 * @param t  The node, or NULL.
 * @return The parent node, or NULL for a root or for NULL.
 */
BAND_API band_cap_tree *band_cap_tree_parent(const band_cap_tree *t);

/** @brief A snapshot of one node's counters (band_cap_tree_get_stats()). */
typedef struct band_cap_tree_stats {
    char name[BAND_NAME_MAX];          /**< the node's budget's name; "" when unnamed */
    int closed;                        /**< 1 once the node's budget was closed */
    uint64_t capacity;                 /**< the node's cap */
    uint64_t in_use;                   /**< units held at this node (its whole subtree's) */
    uint64_t available;                /**< units free now */
    uint64_t debt;                     /**< units a shrink left owed by returns */
    uint64_t reserve;                  /**< the node's guaranteed reservation (0: none) */
    uint64_t children;                 /**< live child nodes */
    uint64_t child_reserve;            /**< the children's reservations, summed */
    uint64_t waiters;                  /**< requests queued at this node */
    uint64_t waiting_units;            /**< units they ask for */
    uint64_t guaranteed_waiting_units; /**< units of queued guaranteed requests (a node
                                            with a reservation) */
    uint64_t queued;                   /**< requests that had to queue here */
    uint64_t grants;                   /**< queued requests granted here */
    uint64_t timeouts;                 /**< queued requests ended by their deadline */
    uint64_t cancels;                  /**< queued requests cancelled for another reason */
    uint64_t closed_fails;             /**< queued requests failed by close */
    uint64_t try_refusals;             /**< tries refused because the node was full */
    uint64_t too_big;                  /**< requests refused with BAND_E2BIG here */
} band_cap_tree_stats;

/**
 * @brief Copy the counters of node @p t into @p out.
 *
 * Reads the node's budget (its lock) and then the tree's bookkeeping (the admission
 * mutex), one after the other: each part is exact, the whole is close to one instant.
 * MT-safe.
 *
 * @param t       The node.
 * @param[out] out The snapshot.
 * @return 0, or BAND_EINVAL when @p t or @p out is NULL.
 */
BAND_API int band_cap_tree_get_stats(const band_cap_tree *t, band_cap_tree_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_CAP_TREE_H */
