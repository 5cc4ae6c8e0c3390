/* SPDX-License-Identifier: MIT */
/*
 * admit_internal.h - shared by the admit*.c files (never installed).
 *
 * Admission is a layer over the semaphore's smart nodes (core/waitq.h, sem_priv.h). Each
 * entry of a pending request is a smart node of the request: queued in its budget's wait
 * queue, or, for a tree level the request has not joined yet, watching that budget. The
 * semaphore calls the nodes' ops under its own lock; they put the request in the
 * admission's inbox and set the wake list's post, which evaluates the inbox after the
 * semaphore's operation has unlocked and run its wakes. Nothing the admission keeps lives
 * in the semaphore, and the post never refers to one.
 *
 * Lock order: the admission mutex (band__admit_mu), then semaphore locks in ascending
 * address order; the inbox is lock-free. A semaphore operation holds only its own lock
 * and never waits for the admission mutex.
 */
#ifndef BAND_ADMIT_INTERNAL_H
#define BAND_ADMIT_INTERNAL_H

#include "band/admit.h"
#include "prim/sem_priv.h"

/* Request flags (_flags), written under band__admit_mu. */
#define BAND__ADMIT_GUARANTEED 1u /* queued ahead of non-guaranteed waiters */
#define BAND__ADMIT_GRANTED    2u /* granted and not yet moved into a grant */

/* A hierarchy node: a budget with a parent and a reservation. */
struct band_cap_tree {
    band_sem sem; /* first, cache-line aligned: the node's cap is its capacity */
    band_cap_tree *parent;
    uint64_t reserve;       /* guaranteed reservation (0 = none); constant */
    uint64_t child_reserve; /* reservations of the children, in total (admit mutex) */
    uint64_t children;      /* live children (admit mutex) */
    uint64_t g_pending;     /* units of queued guaranteed requests (admit mutex) */
};

/* The one admission mutex: guards every multi-budget evaluation, request flags while
 * pending, and the tree's bookkeeping. */
extern pthread_mutex_t band__admit_mu;

/* The pseudo-queue that pending requests' waiters point at; its lock is band__admit_mu, so
 * band_waiter_cancel() on a request takes the admission mutex first. */
extern struct band__waitq band__admit_q;

/* The ops of every request's nodes (admit_eval.c). */
extern const struct band__smart_ops band__admit_node_ops;

/* The request that owns smart node @node. */
static inline band_admit_req *band__admit_owner(const band_waiter *node)
{
    return band__container_of(node->data, band_admit_req, _ops);
}

/* Is @w a node of some request (not a plain waiter, not another layer's node)? */
static inline int band__admit_is_node(const band_waiter *w)
{
    return band__waiter_is_smart(w) && band__smart_ops_of(w) == &band__admit_node_ops;
}

/* Lock / unlock every semaphore of @r in address order. */
void band__admit_lock_all(band_admit_req *r);
void band__admit_unlock_all(band_admit_req *r);

/* Refusals that need @r's locks: 0, BAND_ECLOSED, BAND_E2BIG. @submit: at submission,
 * where every entry counts (a zero amount still refuses a closed budget) and a refusal
 * for size is counted in too_big; otherwise entries of 0 units are skipped. */
int band__admit_refusal_locked(band_admit_req *r, int submit);

/* Take every node of @r out of its queue or watch (all of @r's locks held): @granted, each
 * takes its amount from the set-aside; otherwise each ends with @status. */
void band__admit_leave_locked(band_admit_req *r, int granted, int status,
                              struct band__wakelist *wl);

/* After band__admit_leave_locked() and before @r's waiter ends (admit mutex held, no
 * semaphore lock needed): undo its guaranteed-class claim and take it out of the inbox. */
void band__admit_finish_locked(band_admit_req *r);

/* Evaluate the requests in the inbox until it is empty, completing them onto @wl (admit
 * mutex held, no semaphore lock held). Clears @wl's post: nothing is left for it. */
void band__admit_drain_locked(struct band__wakelist *wl);

/* Add @amount of @s to @r as an entry of queueing stage @stage (merging keeps the lower
 * stage). Codes of band_admit_req_add(). */
int band__admit_req_add_staged(band_admit_req *r, band_sem *s, uint64_t amount, unsigned stage);

/* Give @r its ticket and stage count just before it first queues, and let its entries of
 * later stages watch their budgets (admit mutex and all of its locks held). */
void band__admit_start_locked(band_admit_req *r);

/*
 * Move @r on with all of its locks held: while every queue of the stages it joined has it
 * at the head with enough set aside, join the next stage. Returns 1 when every stage is
 * joined and ready (the caller takes it out, granted), 0 while it waits, BAND_EOVERFLOW
 * when a queue to join would pass 2^64 - 1 units (nothing joined).
 */
int band__admit_advance_locked(band_admit_req *r);

/* Undo @r's guaranteed-class bookkeeping when it leaves the queues (admit mutex held). */
void band__admit_tree_leave_locked(band_admit_req *r);

/* Decide @r's class just before it queues (admit mutex and all of @r's locks held). */
void band__admit_tree_classify_locked(band_admit_req *r);

#ifdef BAND_TESTING
/* Called, when set, just before each CAS of the lock-free admission (admit.c) with the
 * budget it is about to take from: a test changes that budget there, as another thread
 * could between the admission's check of the word and its CAS. Single-threaded tests
 * only; the fuzz and model drivers set it around one call. */
extern void (*band__admit_fast_hook)(band_sem *s, void *arg);
extern void *band__admit_fast_hook_arg;
/* How often a word moved between the check and the CAS (any thread), and how often the
 * admission gave back what it had taken of other budgets: after such a move, or when a
 * budget refused after a blocking admission took its gate. */
extern _Atomic uint64_t band__admit_fast_moved, band__admit_fast_gave_back;
#endif

#endif /* BAND_ADMIT_INTERNAL_H */
