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
    char name[BAND_NAME_MAX];
};

int band__sem_init(band_sem *s, uint64_t permits, int is_budget);
void band__sem_fini(band_sem *s);

/* Change a budget's capacity (lock taken inside). */
int band__sem_grow(band_sem *s, uint64_t n);
int band__sem_shrink(band_sem *s, uint64_t n);

/* @n held permits of @s leave for good; a budget's capacity drops by as much. */
void band__sem_forget(band_sem *s, uint64_t n);

#endif /* BAND_SEM_PRIV_H */
