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

struct band_sem {
    /* Fast path: one word on its own cache line. */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t state;

    /* Counted outside the lock, on refusals only. */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t try_refusals;
    _Atomic uint64_t too_big;
    /* A budget's capacity (the release limit); BAND_SEM_MAX_PERMITS for a semaphore.
     * Written under the lock, read anywhere. */
    _Atomic uint64_t limit;
    /* Odd while a capacity change is under way, bumped by each (lock): a budget's fast
     * release that sees it move knows its limit may have been stale (sem.c). */
    _Atomic uint64_t cap_seq;
    int add_release; /* constant: release may add first and check after (not budgets) */

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
    int deadline_aware;
    band_time last_grant; /* when a queued waiter was last granted; 0: queue emptied since */
    int64_t ns_per_unit;  /* moving average (1/8) of the time per granted queued unit */
    uint64_t refused_deadline;
    /* Multi-budget admission (admit*.c). nproxy: queued nodes of band_admit requests
     * (lock). admit_sweep: set under the lock by close and capacity changes when some of
     * those must fail; cleared by the admission once it has failed them. admit_next and
     * admit_dirty: the admission's list of semaphores to evaluate, guarded by its global
     * mutex (never by lock). */
    uint64_t nproxy;
    uint64_t admit_max_ticket; /* the newest request ever queued here (lock) */
    int admit_sweep;
    int admit_dirty;
    band_sem *admit_next;
    struct band_histo *wait_histo; /* optional, the caller's (lock) */
    char name[BAND_NAME_MAX];
};

int band__sem_init(band_sem *s, uint64_t permits, int is_budget);
void band__sem_fini(band_sem *s);

/* Change a budget's capacity (lock taken inside). */
int band__sem_grow(band_sem *s, uint64_t n);
int band__sem_shrink(band_sem *s, uint64_t n);

/* @n held permits of @s leave for good; a budget's capacity drops by as much. */
void band__sem_forget(band_sem *s, uint64_t n);

/* For a budget, BAND_E2BIG (counted in too_big) when @n exceeds what its callers can
 * hold, capacity + debt; 0 otherwise, and always 0 for a semaphore. Lock taken inside. */
int band__sem_check_holdable(band_sem *s, uint64_t n);

/*
 * Multi-budget admission integration (admit_eval.c, docs/admit.md).
 *
 * A band_admit request waits on each of its semaphores through a proxy waiter: a private
 * band_waiter whose wake is band__admit_proxy_wake (never called) and whose data points to
 * the request. The semaphore never grants a proxy. When the head of its queue is a proxy,
 * released units accumulate in head_got (which may then exceed the proxy's want: they are
 * the free units that FIFO sets aside for the head) and, once head_got covers the proxy's
 * want, the operation sets its wake list's post hook to band__admit_kick(s), which (after
 * every semaphore lock is released) takes the admission mutex and evaluates the request
 * with all of its semaphores locked. Close and capacity changes leave failing proxies in
 * the queue, set admit_sweep and kick too.
 */
void band__admit_proxy_wake(band_waiter *w);

/* Requests queued with tree levels still to join (admit_tree.c): they name semaphores
 * without a node in their queues yet, so close and shrink kick the admission while any
 * exist. Changed under the admission mutex and the locks of the request's semaphores. */
extern _Atomic uint64_t band__admit_nstaged;
void band__admit_kick(void *sem);

static inline int band__is_proxy(const band_waiter *w)
{
    return w->wake == band__admit_proxy_wake;
}

/* Helpers for admit*.c; @s's lock held. See sem.c. */
uint64_t band__sem_grant_locked(band_sem *s, uint64_t pool, struct band__wakelist *wl);
void band__sem_publish_locked(band_sem *s, uint64_t add);
void band__sem_dequeue_locked(band_sem *s, band_waiter *w, band_time *now);
uint64_t band__sem_take_available_locked(band_sem *s);
int band__sem_take_locked(band_sem *s, uint64_t n);
/* Set SLOW and take everything available in one step (a first waiter is about to queue);
 * returns what was taken, to become the head's head_got. */
uint64_t band__sem_become_slow_locked(band_sem *s);
uint64_t band__sem_in_use_locked(const band_sem *s);

/*
 * Take @n permits of @s ahead of every queued waiter (band_admit_adjust(): a granted
 * request keeps its place). Waits at the head of the queue until @deadline. Returns 0,
 * BAND_ETIMEDOUT (a past @deadline means "only if free now"), BAND_ECLOSED.
 */
int band__sem_acquire_front(band_sem *s, uint64_t n, band_time deadline);

/* The data pointer of waiters queued by band__sem_acquire_front(), so that a guaranteed
 * admission (admit_tree.c) queues behind them, not ahead. */
extern const char band__sem_front_tag;

#endif /* BAND_SEM_PRIV_H */
