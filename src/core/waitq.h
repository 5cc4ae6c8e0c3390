/* SPDX-License-Identifier: MIT */
/*
 * waitq.h - the FIFO of pending waiters, the wake list, and waiter state.
 *
 * A primitive owns one lock and one or more wait queues under it. It moves waiters it
 * completes onto a local wake list while it holds the lock, and calls their wakes after it
 * has unlocked (band__wakelist_run). band_waiter_cancel() finds the queue through the
 * waiter and asks the primitive, through the queue's ops, to withdraw the waiter.
 */
#ifndef BAND_CORE_WAITQ_H
#define BAND_CORE_WAITQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/list.h"

/* Waiter states, kept in the low two bits of band_waiter._qstate. */
enum band__wstate {
    BAND__W_IDLE = 0,   /* never submitted, completed at once, or cancelled */
    BAND__W_QUEUED = 1, /* on a queue; the queue pointer is in the high bits */
    BAND__W_DONE = 2,   /* completed by the primitive; its wake has run or is running */
};
#define BAND__W_STATE_MASK ((uintptr_t)3)

struct band__waitq;
struct band__wakelist;

struct band__waitq_ops {
    /*
     * Withdraw queued waiter @w from @q with the queue's lock held: unlink it, give back
     * what it was partially granted, and move any waiters that this completes onto @wl.
     * @reason is the status @w ends with (its state and status are set by the caller).
     */
    void (*cancel_locked)(struct band__waitq *q, band_waiter *w, int reason,
                          struct band__wakelist *wl);
};

struct band__waitq {
    struct band__node head;            /* sentinel; waiters in arrival order */
    uint64_t len;                      /* waiters on the list */
    pthread_mutex_t *lock;             /* the owning primitive's lock; guards all fields */
    const struct band__waitq_ops *ops; /* how the owner withdraws a waiter */
};

/*
 * Waiters completed under a lock, woken after it is released. @post, when set, runs once
 * after the wakes, with no band lock held, for follow-up work that needs other locks. It
 * takes no argument on purpose: a wake may destroy the primitive whose operation filled
 * this list (the operation may have ended its last waiter), so the follow-up may not
 * refer to the primitive. Whatever it needs it finds through objects its owner keeps
 * alive (smart nodes' owners, below). Every setter of @post in one list sets the same
 * function.
 */
struct band__wakelist {
    struct band__node *first;
    struct band__node **tail;
    void (*post)(void);
};

/*
 * Smart nodes: the seam for layers built over a primitive's queue.
 *
 * A queue may hold, beside plain waiters, nodes that belong to a layer over the primitive
 * (a request that waits in several queues at once, for example). A smart node is a
 * band_waiter whose wake is band__smart_wake (a mark: it is never called) and whose data
 * points at its owner's `const struct band__smart_ops *` field; the owner recovers itself
 * from that address (container_of). The primitive never completes a smart node. It tells
 * the owner, with the primitive's lock held, through the ops below; the owner then takes
 * the node out itself, with that lock held again, when it has decided. An owner whose
 * decision needs other locks records the work in its own objects and sets the wake list's
 * post. What a primitive offers smart nodes (which units it sets aside for them, when it
 * calls each op) is part of that primitive's internal interface (sem_priv.h for the
 * semaphore).
 */
struct band__smart_ops {
    /* @w is at the head of its queue, and what the primitive sets aside for the head now
     * covers what @w asked for. Called once per such crossing. Lock held. */
    void (*ready)(band_waiter *w, struct band__wakelist *wl);
    /* The primitive closed, or its capacity fell below what @w asks for; @w is queued or
     * watching (sem_priv.h). Lock held. */
    void (*changed)(band_waiter *w, struct band__wakelist *wl);
};

/* The wake of every smart node: its mark. Never called. */
void band__smart_wake(band_waiter *w);

static inline int band__waiter_is_smart(const band_waiter *w)
{
    return w->wake == band__smart_wake;
}

/* The ops of smart node @w. */
static inline const struct band__smart_ops *band__smart_ops_of(const band_waiter *w)
{
    return *(const struct band__smart_ops *const *)w->data;
}

/* Make @w a smart node of the owner whose ops field is *@ops. */
static inline void band__smart_init(band_waiter *w, const struct band__smart_ops **ops)
{
    band_waiter_init(w, band__smart_wake, (void *)ops);
}

void band__waitq_init(struct band__waitq *q, pthread_mutex_t *lock,
                      const struct band__waitq_ops *ops);

static inline void band__wakelist_init(struct band__wakelist *wl)
{
    wl->first = NULL;
    wl->tail = &wl->first;
    wl->post = NULL;
}

/* Move every waiter of @src to the end of @dst (@src's post is left alone). */
static inline void band__wakelist_splice(struct band__wakelist *dst, struct band__wakelist *src)
{
    if (src->first == NULL)
        return;
    *dst->tail = src->first;
    dst->tail = src->tail;
    src->first = NULL;
    src->tail = &src->first;
}

static inline band_waiter *band__waiter_of(struct band__node *n)
{
    return band__container_of(n, band_waiter, _link);
}

/* The state bits of @w, read atomically (cancel may race with completion). */
static inline enum band__wstate band__waiter_state(const band_waiter *w)
{
    return (enum band__wstate)(__atomic_load_n(&w->_qstate, __ATOMIC_ACQUIRE) & BAND__W_STATE_MASK);
}

static inline void band__waiter_set(band_waiter *w, struct band__waitq *q, enum band__wstate st)
{
    __atomic_store_n(&w->_qstate, (uintptr_t)q | (uintptr_t)st, __ATOMIC_RELEASE);
}

/* The head of @q, or NULL. Lock held. */
static inline band_waiter *band__waitq_first(const struct band__waitq *q)
{
    struct band__node *n = band__list_first(&q->head);
    return n == NULL ? NULL : band__waiter_of(n);
}

/* Queue @w at the tail of @q, wanting @want units, queued since @now. Lock held. */
void band__waitq_push_locked(struct band__waitq *q, band_waiter *w, uint64_t want, band_time now);

/* Queue @w at the head of @q (ahead of every waiter), as band__waitq_push_locked(). */
void band__waitq_push_front_locked(struct band__waitq *q, band_waiter *w, uint64_t want,
                                   band_time now);

/* Queue @w in @q just before @before (a queued node of @q, or &q->head for the tail). */
void band__waitq_insert_locked(struct band__waitq *q, band_waiter *w, struct band__node *before,
                               uint64_t want, band_time now);

/* Unlink @w from @q without changing its state. Lock held. */
void band__waitq_unlink_locked(struct band__waitq *q, band_waiter *w);

/*
 * Mark @w (already unlinked) completed with @status and put it on @wl; its wake runs when
 * the owner of the lock calls band__wakelist_run() after unlocking. Lock held.
 */
void band__waiter_complete_locked(band_waiter *w, int status, struct band__wakelist *wl);

/* Call every wake on @wl, in order, then its post hook. No band lock may be held. */
void band__wakelist_run(struct band__wakelist *wl);

/*
 * Check that @w may be submitted: non-NULL, has a wake function, not pending.
 * Returns 0 or BAND_EINVAL. Called by every _async entry point.
 */
int band__waiter_check_submit(const band_waiter *w);

/*
 * band_waiter_cancel() with any negative @reason, for band's own callers that end watched
 * operations with a reason of their owner's choosing (a shutdown scope's). The primitive
 * counts it as a timeout for BAND_ETIMEDOUT and as a cancel otherwise. Same answers.
 */
int band__waiter_cancel_as(band_waiter *w, int reason);

/* Mark @w as completed at once with @status (no wake follows). */
static inline void band__waiter_finish_now(band_waiter *w, int status)
{
    w->_u.status = status;
    band__waiter_set(w, NULL, BAND__W_IDLE);
}

#endif /* BAND_CORE_WAITQ_H */
