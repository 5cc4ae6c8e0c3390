/* SPDX-License-Identifier: MIT */
/*
 * sem_priv.h - the semaphore's layout, shared by sem.c and budget.c (never installed).
 */
#ifndef BAND_SEM_PRIV_H
#define BAND_SEM_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "band/budget.h"
#include "core/waitq.h"

/*
 * The state word: available permits in the high 62 bits, two flags in the low bits.
 * SLOW is set exactly while a waiter is queued or a debt is owed. Then nothing is
 * available but what fast releases in flight have just added, and each of those takes
 * the lock and hands it on (sem.c explains).
 */
#define BAND__SEM_SLOW      ((uint64_t)1)
#define BAND__SEM_CLOSED    ((uint64_t)2)
#define BAND__SEM_SHIFT     2
#define BAND__SEM_AVAIL(st) ((st) >> BAND__SEM_SHIFT)

/*
 * The first two cache lines are the public prefix of band/sem.h (struct band_sem_prefix,
 * inline ABI BAND_SEM_INLINE_ABI): the state word at offset 0, alone on its line, and the
 * constant fast-path flags at offset 64. sem.c checks the offsets and the encoding
 * against the public header at compile time; neither may change within an ABI version.
 */
struct band_sem {
    /* Fast path: one word on its own cache line (written by every acquire and release). */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t state;

    /* Read-mostly: constant, or written only by capacity changes. */
    _Alignas(BAND__CACHELINE) uint32_t fast_flags; /* constant: BAND_SEM_PREFIX_F_* */
    /* A budget's capacity (the release limit); BAND_MAX_UNITS for a semaphore.
     * Written under the lock, read anywhere. */
    _Atomic uint64_t limit;
    /* Odd while a capacity change is under way, bumped by each (lock): a budget's fast
     * release that sees it move knows its limit may have been stale (sem.c). */
    _Atomic uint64_t cap_seq;

    /* Counted outside the lock, on refusals only. */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t try_refusals;
    _Atomic uint64_t too_big;
    /* A semaphore's capacity as its stats report it (budgets use limit): the permits it was
     * created with, less what reduce and forget took away for good, plus growth
     * declared with band__sem_base_add() and releases seen to exceed it (sem.c). Written
     * only off the fast paths. */
    _Atomic uint64_t base;
    /* How long a blocking acquisition spins before it queues (ns), adapted by the
     * outcome of each spin (sem.c, sem_spin_budget()); written rarely, relaxed. */
    _Atomic uint32_t spin_ns;

    /* Slow path: everything below is guarded by lock. */
    _Alignas(BAND__CACHELINE) pthread_mutex_t lock;
    struct band__waitq q; /* acquisitions in arrival order */
    uint64_t debt;        /* owed by releases before any waiter is served */
    uint64_t head_got;    /* partial grant held by the head waiter */
    uint64_t q_units;     /* units the queued waiters asked for, in total */
    int is_budget;
    uint64_t queued, grants, timeouts, cancels, closed_fails;
    uint64_t wait_ns_total, wait_ns_max;
    /* Deadline-aware refusal: the pace at which queued units are granted. */
    int deadline_aware;   /* constant from creation */
    band_time last_grant; /* when a queued waiter was last granted; 0: queue emptied since */
    int64_t ns_per_unit;  /* moving average (1/8) of the time per granted queued unit */
    uint64_t refused_deadline;
    /* Smart nodes (core/waitq.h, below): how many are queued, and those watching. */
    uint64_t nsmart;
    struct band__node watch;
    struct band_histo *wait_histo; /* optional, the caller's; constant from creation */
    char name[BAND_NAME_MAX];
};

int band__sem_init(band_sem *s, uint64_t permits, int is_budget);
/* The options a semaphore or budget is created with: band__sem_check_opts() returns 0 or
 * BAND_EINVAL (deadline_aware neither 0 nor 1); band__sem_apply_opts() sets them on a
 * semaphore nobody else sees yet (they never change afterwards). */
int band__sem_check_opts(int deadline_aware);
void band__sem_apply_opts(band_sem *s, int deadline_aware, struct band_histo *wait_histo);
void band__sem_fini(band_sem *s);

/* Change a budget's capacity (lock taken inside). */
int band__sem_grow(band_sem *s, uint64_t n);
int band__sem_shrink(band_sem *s, uint64_t n);

/* @n held permits of @s leave for good; a budget's capacity drops by as much. */
void band__sem_forget(band_sem *s, uint64_t n);

/* A semaphore is about to receive @n permits that were never acquired (a release that
 * grows it): its reported capacity rises by as much. Any thread; no effect on a budget. */
void band__sem_base_add(band_sem *s, uint64_t n);

/* The adaptive spin of a blocking acquisition before it queues (sem.c), shared with the
 * admission's: the budget (ns of processor time, 1 us to 1 ms), the update after a queued
 * acquisition was granted having waited @waited ns, and the update after a spin of @budget ns ran
 * out. */
uint32_t band__sem_spin_budget_ns(const band_sem *s);
void band__sem_spin_learn(band_sem *s, band_time waited);
void band__sem_spin_ran_out(band_sem *s, uint32_t budget);

/* For a budget, BAND_E2BIG (counted in too_big) when @n exceeds what its callers can
 * hold, capacity + debt; 0 otherwise, and always 0 for a semaphore. Lock taken inside. */
int band__sem_check_holdable(band_sem *s, uint64_t n);

/*
 * Charge @n units to a holder that has already used them (reconcile): they are taken
 * from the available units first and the rest becomes debt, which later releases repay
 * before any waiter, as band_sem_reduce() does on a semaphore; a budget's capacity does
 * not change. Never waits, refuses nothing for size or close. Returns 0, or
 * BAND_EOVERFLOW when the debt would pass BAND_MAX_UNITS (nothing changed). Lock
 * taken inside; no waiter completes, so no wake runs.
 */
int band__sem_charge(band_sem *s, uint64_t n);

/*
 * Smart nodes in a semaphore (the seam for layers such as multi-budget admission).
 *
 * The semaphore never grants a smart node. When one is the head of the queue, released
 * units collect in head_got as for any head; they may then exceed its want (they are free
 * units that FIFO sets aside for the head and that no later waiter may take), and when
 * head_got first covers the want, the grant loop calls the node's ops->ready. Close fails
 * the plain waiters only (the pool stays set aside for the head while smart nodes remain)
 * and calls ops->changed on every smart node, queued or watching; a capacity change calls
 * it on those that ask for more than the new capacity. The owner takes its nodes out with
 * band__sem_smart_leave_locked() or band__sem_unwatch_locked(), with the lock held. The
 * semaphore knows nothing else about them: not who owns them, not what they wait for
 * elsewhere. Every function below needs @s's lock held unless it says otherwise.
 */

/* Queue smart node @w wanting @want just before @before (a queued node, or NULL for the
 * tail). The first waiter takes what is available as its set-aside; a node put at the
 * head inherits the old head's. Never calls ops->ready: the owner asks
 * band__sem_smart_covered_locked() itself. The caller checked band__sem_room_locked(). */
void band__sem_smart_push_locked(band_sem *s, band_waiter *w, band_waiter *before, uint64_t want,
                                 band_time now);

/* Is smart node @w queued at the head of @s with its want covered by the set-aside? */
int band__sem_smart_covered_locked(const band_sem *s, const band_waiter *w);

/*
 * Take queued smart node @w out of @s. @granted: it takes its want from the set-aside
 * (band__sem_smart_covered_locked() held) and counts as a grant; otherwise it ends with
 * @status, counted as a timeout, close, E2BIG or cancel. What is left of the set-aside
 * goes on as a release would send it (debt, next waiters); their wakes, and the ops calls
 * of smart nodes that this makes ready, go to @wl.
 */
void band__sem_smart_leave_locked(band_sem *s, band_waiter *w, int granted, int status,
                                  struct band__wakelist *wl);

/* Let smart node @w watch @s without queuing (it holds no place, asks for nothing now):
 * it hears of close, and of a capacity below @want, through ops->changed. A watched
 * semaphore is busy: destroying it fails with BAND_EBUSY. */
void band__sem_watch_locked(band_sem *s, band_waiter *w, uint64_t want);
void band__sem_unwatch_locked(band_sem *s, band_waiter *w);

static inline void band__sem_lock(band_sem *s)
{
    pthread_mutex_lock(&s->lock);
}

static inline void band__sem_unlock(band_sem *s)
{
    pthread_mutex_unlock(&s->lock);
}

/* The queue, for owners that place their nodes (read it only). */
static inline struct band__waitq *band__sem_queue(band_sem *s)
{
    return &s->q;
}

static inline int band__sem_closed(const band_sem *s)
{
    return (atomic_load_explicit(&((band_sem *)s)->state, memory_order_relaxed) &
            BAND__SEM_CLOSED) != 0;
}

/* The capacity of a budget (BAND_MAX_UNITS for a semaphore). Any thread. */
static inline uint64_t band__sem_limit(const band_sem *s)
{
    return atomic_load_explicit(&((band_sem *)s)->limit, memory_order_relaxed);
}

/* Count a request refused for being larger than the capacity. Any thread. */
static inline void band__sem_count_too_big(band_sem *s)
{
    atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
}

/* Can @want more units join the queue without its unit total passing 2^64 - 1? */
static inline int band__sem_room_locked(const band_sem *s, uint64_t want)
{
    return want <= UINT64_MAX - s->q_units;
}

/* Could @n be taken now: nobody queued, no debt, enough available? */
static inline int band__sem_idle_for_locked(const band_sem *s, uint64_t n)
{
    uint64_t st = atomic_load_explicit(&((band_sem *)s)->state, memory_order_relaxed);
    return s->q.len == 0 && s->debt == 0 && BAND__SEM_AVAIL(st) >= n;
}

/* Helpers for layers and budgets; @s's lock held. See sem.c. */
uint64_t band__sem_grant_locked(band_sem *s, uint64_t pool, struct band__wakelist *wl);
void band__sem_publish_locked(band_sem *s, uint64_t add);
void band__sem_dequeue_locked(band_sem *s, band_waiter *w, band_time *now);
uint64_t band__sem_take_available_locked(band_sem *s);
int band__sem_take_locked(band_sem *s, uint64_t n);
/* Set SLOW and take everything available in one step (a first waiter is about to queue);
 * returns what was taken, to become the head's head_got. */
uint64_t band__sem_become_slow_locked(band_sem *s);
uint64_t band__sem_in_use_locked(const band_sem *s);
/* BAND_EBUSY while waiters are queued or smart nodes watch @s, else 0 (lock taken inside). */
int band__sem_busy(band_sem *s);

/*
 * Take @n permits of @s ahead of every queued waiter (band_admit_adjust(): a granted
 * request keeps its place). Waits at the head of the queue until @deadline. Returns 0,
 * BAND_ETIMEDOUT (a past @deadline means "only if free now"), BAND_ECLOSED.
 */
int band__sem_acquire_front(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel);

/* The data pointer of waiters queued by band__sem_acquire_front(), so that a layer that
 * places its nodes ahead of others (admit_queue.c) can keep behind them. */
extern const char band__sem_front_tag;

#endif /* BAND_SEM_PRIV_H */
