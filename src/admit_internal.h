/*
 * admit_internal.h - shared by the admit*.c files (never installed).
 *
 * Lock order: the global admission mutex (band__admit_mu), then semaphore locks in
 * ascending address order. A semaphore operation holds only its own lock and never takes
 * the admission mutex while holding it: it asks for an evaluation through its wake list's
 * post hook (band__admit_kick), which runs after it has unlocked.
 */
#ifndef BAND_ADMIT_INTERNAL_H
#define BAND_ADMIT_INTERNAL_H

#include "band/admit.h"
#include "sem_priv.h"

/* Request flags (_flags), written under band__admit_mu. */
#define BAND__ADMIT_GUARANTEED 1u /* queued ahead of non-guaranteed waiters */
#define BAND__ADMIT_GRANTED    2u /* granted and not yet moved into a grant */
#define BAND__ADMIT_STAGED     4u /* on the staged list (stages not all joined yet) */

/* A hierarchy node: a budget with a parent and a reservation. */
struct band_tree {
    band_sem sem; /* first, cache-line aligned: the node's cap is its capacity */
    band_tree *parent;
    uint64_t reserve;       /* guaranteed reservation (0 = none); constant */
    uint64_t child_reserve; /* reservations of the children, in total (admit mutex) */
    uint64_t children;      /* live children (admit mutex) */
    uint64_t g_pending;     /* units of queued guaranteed requests (admit mutex) */
};

/* The one admission mutex: guards every multi-budget evaluation, the dirty list, request
 * flags while pending, and the tree's bookkeeping. */
extern pthread_mutex_t band__admit_mu;

/* The pseudo-queue that pending requests' waiters point at; its lock is band__admit_mu, so
 * band_waiter_cancel() on a request takes the admission mutex first. */
extern struct band__waitq band__admit_q;

/* Lock / unlock every semaphore of @r in address order. */
void band__admit_lock_all(band_admit_req *r);
void band__admit_unlock_all(band_admit_req *r);

/* Mark @s for evaluation (admit mutex held). */
void band__admit_mark_dirty(band_sem *s);

/* Evaluate every dirty semaphore until none is left, completing requests onto @wl
 * (admit mutex held, no semaphore lock held). */
void band__admit_process_locked(struct band__wakelist *wl);

/*
 * Take @r's node out of @s's queue (both locks held): @granted says whether @r takes its
 * amount from the head's free units; otherwise @status is recorded in @s's counters. The
 * free units left go on to the waiters behind; an evaluation they call for is marked dirty
 * and their wakes join @wl.
 */
void band__admit_remove_locked(band_admit_req *r, unsigned i, int granted, int status,
                               struct band__wakelist *wl);

/* Fail pending @r with @status: all of its nodes leave their queues (admit mutex held, no
 * semaphore lock held); its wake joins @wl. */
void band__admit_fail_locked(band_admit_req *r, int status, struct band__wakelist *wl);

/* Add @amount of @s to @r as an entry of queueing stage @stage (merging keeps the lower
 * stage). Codes of band_admit_req_add(). */
int band__admit_req_add_staged(band_admit_req *r, band_sem *s, uint64_t amount, unsigned stage);

/* Give @r its ticket and stage count, just before it first queues (admit mutex and all of
 * its locks held). */
void band__admit_start_locked(band_admit_req *r);

/*
 * Move @r on with all of its locks held: while every queue of the stages it joined has it
 * at the head with enough free units, join the next stage; when all are joined and ready,
 * take every amount and leave every queue. Returns 1 (granted; nodes removed), 0 (waits),
 * or a negative code when a stage to join is closed or too small (nothing removed).
 */
int band__admit_advance_locked(band_admit_req *r, struct band__wakelist *wl);

/* Undo @r's guaranteed-class bookkeeping and take it off the staged list when it leaves
 * the queues, before its waiter completes (admit mutex held). */
void band__admit_tree_leave_locked(band_admit_req *r);

/* Put pending @r, which has stages left to join, on the staged list (admit mutex). Its
 * waiter's _link, unused while it is pending, is the list node. */
void band__admit_staged_add_locked(band_admit_req *r);

/* Fail the staged requests that have not joined @s yet but name it and can no longer be
 * admitted by it (@s closed, or an amount above its capacity). Admit mutex held, no
 * semaphore lock held. */
void band__admit_staged_sweep_locked(band_sem *s, struct band__wakelist *wl);

/* Decide @r's class just before it queues (admit mutex and all of @r's locks held). */
void band__admit_tree_classify_locked(band_admit_req *r);

#endif /* BAND_ADMIT_INTERNAL_H */
