/* SPDX-License-Identifier: MIT */
/*
 * sem.c - the weighted FIFO semaphore.
 *
 * Design notes
 * ------------
 * State. One atomic word holds the available permits (high 62 bits) and two flags:
 * CLOSED, and SLOW, which is set exactly while a waiter is queued or a debt is owed.
 * Everything else (the queue, the debt, the head's partial grant, the counters) is
 * guarded by the lock.
 *
 * Invariant: SLOW set => nothing is available, except what fast releases in flight have
 * just added. A release with waiters queued hands everything to the head waiter (a partial
 * grant accumulates in head_got until the head has all it asked for), and a debt is repaid
 * before anything becomes available. The fast paths rely on it:
 *   - try_acquire is a CAS that needs !SLOW and avail >= n, so it never barges past a
 *     waiter or takes what a debt is owed; drain also refuses while SLOW is set;
 *   - release on a plain semaphore is one atomic add, with no load before it (on x86 a
 *     load in front of a locked instruction costs about as much as the instruction).
 *     The old value it returns is checked after the fact: without SLOW and below the
 *     maximum, done. Otherwise the releaser takes the lock and fixes up: it sweeps
 *     whatever is available into the grant loop while waiters or debt remain (its own
 *     permits, and those of any other release that landed meanwhile - the sweep is
 *     idempotent), or takes its permits back on overflow. Until then SLOW keeps every
 *     fast taker away from the permits it added.
 *   - release on a budget keeps a CAS loop, so that it can refuse a release past the
 *     capacity before changing anything. Its check pairs the word with the limit, two
 *     loads; capacity changes run in a sequence lock (cap_seq) that the release reads
 *     before and after, and a release that a change overlapped is redone under the lock.
 * Slow-path writers change the word with CAS loops that preserve what fast releases
 * added, so a fast path that races with them retries or falls into the slow path.
 * BAND_MAX_UNITS is 2^61 - 1 while the field holds 62 bits: releases past the
 * maximum that are in flight at once cannot wrap the word.
 *
 * Hand-off. The grant loop pops completed waiters from the head, O(1) each, whatever the
 * queue length. Completed waiters go on a local wake list and are woken after unlocking.
 *
 * Only the head can hold a partial grant, so it lives in the semaphore (head_got), not in
 * every waiter: that keeps band_waiter at 64 bytes.
 *
 * Smart nodes. A layer over the semaphore (multi-budget admission) queues smart nodes
 * (core/waitq.h) beside plain waiters. The grant loop sets units aside for a smart head and
 * calls its ops when they cover it; close and capacity changes call them too. All of that
 * happens under the lock, and the semaphore never learns what the layer does: a layer
 * that needs other locks defers its work to the wake list's post, which cannot name the
 * semaphore, because a wake may destroy it. Plain fast paths never look at smart nodes.
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "band/histo.h"
#include "core/block.h"
#include "core/name.h"
#include "prim/sem_internal.h"
#include "prim/sem_priv.h"

#define SLOW   BAND__SEM_SLOW
#define CLOSED BAND__SEM_CLOSED
#define SHIFT  BAND__SEM_SHIFT
#define AVAIL  BAND__SEM_AVAIL

/* The inline fast paths of band/sem.h read the start of the struct as its public prefix:
 * the layout and the encoding must be exactly the ones it states. */
_Static_assert(offsetof(struct band_sem, state) == offsetof(struct band_sem_prefix, state),
               "state word offset");
_Static_assert(offsetof(struct band_sem, fast_flags) == offsetof(struct band_sem_prefix, flags),
               "flags offset");
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "state word size");
_Static_assert(SLOW == BAND_SEM_PREFIX_SLOW && CLOSED == BAND_SEM_PREFIX_CLOSED &&
                   SHIFT == BAND_SEM_PREFIX_SHIFT,
               "state word encoding");

/* Slow paths live out of line, so that the fast paths compile to leaf code that saves no
 * registers: a store before a locked instruction delays it. */
#if defined(__GNUC__) || defined(__clang__)
#define SEM_COLD     __attribute__((noinline, cold))
#define SEM_NOINLINE __attribute__((noinline))
#else
#define SEM_COLD
#define SEM_NOINLINE
#endif

static void sem_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                              struct band__wakelist *wl);

static const struct band__waitq_ops sem_waitq_ops = {sem_cancel_locked};

/* Releases up to this size take the add-first path. 2^29 of them in flight at once past
 * the maximum would be needed to reach the top of the 62-bit field. */
#define ADD_RELEASE_MAX BAND_SEM_PREFIX_ADD_MAX

/* ---------------------------------------------------------------- lifecycle */

int band__sem_init(band_sem *s, uint64_t permits, int is_budget)
{
    if (pthread_mutex_init(&s->lock, NULL) != 0)
        return BAND_ENOMEM;
    atomic_init(&s->state, permits << SHIFT);
    atomic_init(&s->try_refusals, 0);
    atomic_init(&s->too_big, 0);
    atomic_init(&s->base, is_budget ? 0 : permits);
    atomic_init(&s->limit, is_budget ? permits : BAND_MAX_UNITS);
    atomic_init(&s->cap_seq, 0);
    s->fast_flags = is_budget ? BAND_SEM_PREFIX_F_OUTOFLINE : 0;
    atomic_init(&s->spin_ns, 0);
    band__waitq_init(&s->q, &s->lock, &sem_waitq_ops);
    s->debt = 0;
    s->head_got = 0;
    s->q_units = 0;
    s->is_budget = is_budget;
    s->queued = s->grants = s->timeouts = s->cancels = s->closed_fails = 0;
    s->wait_ns_total = s->wait_ns_max = 0;
    s->wait_histo = NULL;
    s->deadline_aware = 0;
    s->last_grant = 0;
    s->ns_per_unit = 0;
    s->refused_deadline = 0;
    s->nsmart = 0;
    band__list_init(&s->watch);
    s->name[0] = '\0';
    return 0;
}

void band__sem_fini(band_sem *s)
{
    pthread_mutex_destroy(&s->lock);
}

/* 0, or BAND_EINVAL for options out of range (NULL means the defaults). */
int band__sem_check_opts(int deadline_aware)
{
    return deadline_aware == 0 || deadline_aware == 1 ? 0 : BAND_EINVAL;
}

void band__sem_apply_opts(band_sem *s, int deadline_aware, struct band_histo *wait_histo)
{
    s->deadline_aware = deadline_aware;
    s->wait_histo = wait_histo;
}

int band_sem_create(band_sem **out, uint64_t permits, const band_sem_opts *opts)
{
    band_sem_opts o = {0};
    if (opts != NULL)
        o = *opts;
    if (out == NULL || permits > BAND_MAX_UNITS || band__sem_check_opts(o.deadline_aware) != 0)
        return BAND_EINVAL;
    band_sem *s = aligned_alloc(BAND__CACHELINE, sizeof(*s));
    if (s == NULL)
        return BAND_ENOMEM;
    int rc = band__sem_init(s, permits, 0);
    if (rc != 0) {
        free(s);
        return rc;
    }
    band__sem_apply_opts(s, o.deadline_aware, o.wait_histo);
    *out = s;
    return 0;
}

int band__sem_busy(band_sem *s)
{
    pthread_mutex_lock(&s->lock);
    int busy = s->q.len > 0 || !band__list_empty(&s->watch);
    pthread_mutex_unlock(&s->lock);
    return busy ? BAND_EBUSY : 0;
}

/* 0, or BAND_EBUSY while waiters are queued or smart nodes watch. */
static int sem_fini_if_idle(band_sem *s)
{
    int rc = band__sem_busy(s);
    if (rc == 0)
        band__sem_fini(s);
    return rc;
}

int band_sem_destroy(band_sem *s)
{
    if (s == NULL)
        return 0;
    if (s->is_budget)
        return BAND_EINVAL; /* a budget is destroyed with band_budget_destroy() */
    int rc = sem_fini_if_idle(s);
    if (rc == 0)
        free(s);
    return rc;
}

int band_sem_set_name(band_sem *s, const char *name)
{
    if (s == NULL)
        return BAND_EINVAL;
    return band__set_name(s->name, name, &s->lock);
}

/* ---------------------------------------------------------------- helpers (lock held) */

/* Record how long @w waited; *@now caches one clock read per critical section. */
static void sem_account_wait_locked(band_sem *s, const band_waiter *w, band_time *now)
{
    if (*now == 0)
        *now = band_now();
    band_time waited = *now - w->_since;
    uint64_t ns = waited > 0 ? (uint64_t)waited : 0;
    s->wait_ns_total += ns;
    if (ns > s->wait_ns_max)
        s->wait_ns_max = ns;
    if (s->wait_histo != NULL)
        band_histo_record(s->wait_histo, ns);
}

/* Take @w off the queue and out of the unit total; its wait is recorded. */
void band__sem_dequeue_locked(band_sem *s, band_waiter *w, band_time *now)
{
    sem_account_wait_locked(s, w, now);
    s->q_units -= w->_u.want;
    if (band__unlikely(band__waiter_is_smart(w)))
        s->nsmart--;
    band__waitq_unlink_locked(&s->q, w);
}

/* The pace of grants to queued waiters: time per granted unit, a moving average (1/8) of
 * the gaps between grants while the queue stayed non-empty. */
static void sem_note_grant_locked(band_sem *s, band_time now, uint64_t units)
{
    if (s->last_grant != 0 && now > s->last_grant && units > 0) {
        int64_t sample = (now - s->last_grant) / (int64_t)band__min_u64(units, INT64_MAX);
        if (sample < 1)
            sample = 1;
        s->ns_per_unit =
            s->ns_per_unit == 0 ? sample : s->ns_per_unit + (sample - s->ns_per_unit) / 8;
    }
    s->last_grant = s->q.len > 0 ? now : 0; /* idle time is not service time */
}

/* Deadline-aware: would @units more units, queued behind @ahead units, miss @deadline? */
static int sem_predicted_to_miss_locked(const band_sem *s, uint64_t ahead, band_time deadline)
{
    if (!s->deadline_aware || deadline == BAND_FOREVER || s->ns_per_unit <= 0)
        return 0;
    if (ahead > (uint64_t)(INT64_MAX / s->ns_per_unit))
        return 1;
    band_time now = band_now();
    return now > deadline || (band_time)ahead * s->ns_per_unit > deadline - now;
}

/*
 * Hand out @pool released permits: the debt first, then the queued waiters in arrival
 * order, the head accumulating a partial grant when the pool runs short. Completed waiters
 * move to @wl. Returns what is left for the available count (0 while waiters remain).
 * A smart node at the head is never granted here: the pool is set aside for it in
 * head_got, and its ops->ready is called once that first covers its want.
 */
uint64_t band__sem_grant_locked(band_sem *s, uint64_t pool, struct band__wakelist *wl)
{
    uint64_t pay = band__min_u64(pool, s->debt);
    s->debt -= pay;
    pool -= pay;

    band_time now = 0;
    band_waiter *w;
    while (pool > 0 && (w = band__waitq_first(&s->q)) != NULL) {
        if (band__unlikely(band__waiter_is_smart(w))) {
            /* Tell the owner once, when the set-aside first covers the node: if it was
             * covered already, the owner has been told (or found it so when it queued
             * the node) and only an event elsewhere can change its decision. */
            uint64_t before = s->head_got;
            s->head_got += pool;
            if (before < w->_u.want && s->head_got >= w->_u.want)
                band__smart_ops_of(w)->ready(w, wl);
            return 0;
        }
        uint64_t need = w->_u.want - s->head_got;
        if (pool < need) {
            s->head_got += pool;
            return 0;
        }
        pool -= need;
        s->head_got = 0;
        uint64_t want = w->_u.want; /* the union holds the status once it completes */
        band__sem_dequeue_locked(s, w, &now);
        s->grants++;
        sem_note_grant_locked(s, now, want);
        band__waiter_complete_locked(w, 0, wl);
    }
    return pool;
}

/* Add @add to the available count and set SLOW from the queue and the debt. */
void band__sem_publish_locked(band_sem *s, uint64_t add)
{
    uint64_t slow = (s->q.len > 0 || s->debt > 0) ? SLOW : 0;
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    if (add == 0 && (st & SLOW) == slow)
        return; /* the common hand-off: waiters remain, nothing to publish */
    uint64_t nst;
    do {
        nst = ((AVAIL(st) + add) << SHIFT) | (st & CLOSED) | slow;
    } while (!atomic_compare_exchange_weak_explicit(&s->state, &st, nst, memory_order_acq_rel,
                                                    memory_order_relaxed));
}

/* Add @n to the available count unless that would pass @limit. Used when nobody waits
 * and nothing is owed; fast paths may race, hence the CAS loop. */
static int sem_add_available(band_sem *s, uint64_t n, uint64_t limit)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        uint64_t avail = AVAIL(st);
        if (avail > limit || n > limit - avail)
            return BAND_EOVERFLOW;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st + (n << SHIFT),
                                                  memory_order_release, memory_order_relaxed))
            return 0;
    }
}

/* Release @n permits with the lock held. 0 or BAND_EOVERFLOW (nothing changed). */
static int sem_release_locked(band_sem *s, uint64_t n, struct band__wakelist *wl)
{
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    if (s->q.len == 0 && s->debt == 0)
        return sem_add_available(s, n, limit);
    /* SLOW is set, so nothing is available and no fast path can add any: the permits
     * left over after the debt and the waiters are exactly what becomes available. */
    uint64_t rest = n - band__min_u64(n, s->debt);
    if (s->is_budget || band__unlikely(s->nsmart > 0)) {
        /* A budget's units are conserved: capacity + debt = available + head_got + held.
         * The head's partial grant is not held by any caller, so a release may return at
         * most capacity + debt - head_got (nothing is available while SLOW is set): what
         * the debt takes, plus what still fits beside head_got. Counting only what is left
         * after the waiters took their share would accept units never acquired, and the
         * waiters' own releases would be refused later.
         * On a semaphore the units may stop at a smart node and stay free there: free units
         * (head_got while waiters queue) may not pass the limit either, which is the same
         * bound once the debt is repaid first. A shrink may leave more set aside than the
         * new capacity: the debt then covers it, and held units still go back. */
        uint64_t total = limit + s->debt; /* both at most BAND_MAX_UNITS: no wrap */
        if (s->head_got > total || n > total - s->head_got)
            return BAND_EOVERFLOW;
    } else {
        uint64_t need = s->q_units - s->head_got;
        uint64_t left = rest - band__min_u64(rest, need);
        if (left > limit)
            return BAND_EOVERFLOW;
    }
    band__sem_publish_locked(s, band__sem_grant_locked(s, n, wl));
    return 0;
}

/* Remove @n from the logical balance: available first, the rest as debt. */
static int sem_reduce_locked(band_sem *s, uint64_t n)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        uint64_t avail = AVAIL(st);
        uint64_t take = band__min_u64(avail, n);
        uint64_t rest = n - take;
        if (rest > BAND_MAX_UNITS - s->debt)
            return BAND_EOVERFLOW;
        uint64_t slow = (rest > 0 || s->q.len > 0 || s->debt > 0) ? SLOW : 0;
        uint64_t nst = ((avail - take) << SHIFT) | (st & CLOSED) | slow;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, nst, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            s->debt += rest;
            return 0;
        }
    }
}

/* Withdraw @w (queue op, called by band_waiter_cancel() with the lock held). */
static void sem_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                              struct band__wakelist *wl)
{
    band_sem *s = band__container_of(q, band_sem, q);
    band_time now = 0;
    uint64_t pool = 0;
    if (q->head.next == &w->_link) {
        pool = s->head_got; /* goes to the debt, then to the waiters behind */
        s->head_got = 0;
    }
    band__sem_dequeue_locked(s, w, &now);
    if (reason == BAND_ETIMEDOUT)
        s->timeouts++;
    else
        s->cancels++;
    band__sem_publish_locked(s, band__sem_grant_locked(s, pool, wl));
}

/* ---------------------------------------------------------------- acquire */

/* The checks every acquisition shares: BAND_EINVAL, BAND_E2BIG or 0. */
static int sem_check_request(band_sem *s, uint64_t n)
{
    if (n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (n > atomic_load_explicit(&s->limit, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
        return BAND_E2BIG;
    }
    return 0;
}

/* The lock-free attempt: 0, BAND_EAGAIN or BAND_ECLOSED. */
static int sem_try_take(band_sem *s, uint64_t n)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        if (band__unlikely(st & CLOSED))
            return BAND_ECLOSED;
        if (n == 0)
            return 0;
        if ((st & SLOW) || AVAIL(st) < n)
            return BAND_EAGAIN;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return 0;
    }
}

/* Everything but the uncontended success of band_sem_try_acquire(). */
static SEM_COLD int sem_try_acquire_slow(band_sem *s, uint64_t n)
{
    if (s == NULL || n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    /* Success needs n <= available <= capacity, so the capacity is only read to classify
     * a refusal; E2BIG still takes precedence over the other answers. */
    int rc = sem_try_take(s, n);
    if (band__likely(rc == 0))
        return 0;
    int check = sem_check_request(s, n);
    if (check != 0)
        return check;
    if (rc == BAND_EAGAIN)
        atomic_fetch_add_explicit(&s->try_refusals, 1, memory_order_relaxed);
    return rc;
}

/* The inline path of band/sem.h is this same test; both fall back to the slow path. */
int band_sem_try_acquire(band_sem *s, uint64_t n)
{
    if (band__likely(s != NULL && n - 1 < BAND_MAX_UNITS)) { /* 1 <= n <= max */
        uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (band__likely(!(st & (SLOW | CLOSED)) && AVAIL(st) >= n) &&
            atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return 0;
    }
    return sem_try_acquire_slow(s, n);
}

/*
 * Take @n now or queue @w for it, under the lock. Returns 0 (granted, no wake),
 * BAND_PENDING, BAND_ECLOSED, BAND_E2BIG (a shrink got there first) or BAND_EOVERFLOW
 * (the queued requests would total more than 2^64 - 1 units).
 */
static int sem_enqueue(band_sem *s, uint64_t n, band_waiter *w)
{
    int rc = BAND_PENDING;
    pthread_mutex_lock(&s->lock);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        if (st & CLOSED) {
            rc = BAND_ECLOSED;
            break;
        }
        if (n > atomic_load_explicit(&s->limit, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
            rc = BAND_E2BIG;
            break;
        }
        if (n > UINT64_MAX - s->q_units) {
            rc = BAND_EOVERFLOW;
            break;
        }
        if (s->q.len > 0 || s->debt > 0) {
            /* Nothing is available: join the tail, unless the pace says it is hopeless. */
            uint64_t queued = s->q_units > s->head_got ? s->q_units - s->head_got : 0;
            if (sem_predicted_to_miss_locked(s, s->debt + queued + n, w->deadline)) {
                s->refused_deadline++;
                rc = BAND_ETIMEDOUT;
            }
            break;
        }
        uint64_t avail = AVAIL(st);
        if (avail < n && sem_predicted_to_miss_locked(s, n - avail, w->deadline)) {
            s->refused_deadline++;
            rc = BAND_ETIMEDOUT;
            break;
        }
        if (avail >= n) {
            if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                      memory_order_acquire, memory_order_relaxed)) {
                rc = 0;
                break;
            }
            continue;
        }
        /* Become the head, holding what is available as a partial grant. */
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, (st & CLOSED) | SLOW,
                                                  memory_order_acq_rel, memory_order_relaxed)) {
            s->head_got = avail;
            break;
        }
    }
    if (rc == BAND_PENDING) {
        band__waitq_push_locked(&s->q, w, n, band_now());
        s->q_units += n;
        s->queued++;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(w, rc);
    return rc;
}

int band_sem_acquire_async(band_sem *s, uint64_t n, band_waiter *w)
{
    if (s == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(w);
    if (rc != 0)
        return rc; /* @w may be someone's pending operation: leave it alone */
    rc = sem_check_request(s, n);
    if (rc != 0) {
        if (rc != BAND_EINVAL)
            band__waiter_finish_now(w, rc);
        return rc;
    }
    rc = sem_try_take(s, n);
    if (rc != BAND_EAGAIN) {
        band__waiter_finish_now(w, rc);
        return rc;
    }
    return sem_enqueue(s, n, w);
}

/*
 * Before a blocking acquisition queues, it retries the lock-free take while nobody is
 * queued: a holder on another core usually releases soon, and queueing would turn every
 * later acquisition into a hand-off to a sleeping thread (a convoy). While SLOW is set a
 * waiter is queued or a debt owed, and the spin takes nothing (sem_try_take() refuses):
 * it waits outside the queue instead, so the spin never takes permits past a waiter, and
 * a convoy that formed drains, because the threads it releases spin rather than queue
 * behind it again.
 *
 * How long it spins adapts per semaphore (spin_ns, between SPIN_MIN_NS and SPIN_MAX_NS):
 *   - an acquisition that queued anyway and was granted after W ns shows that a spin of
 *     W would have done, without the hand-off: when W is within SPIN_MAX_NS the budget
 *     grows to 2W. This is what ends a convoy: once one thread has waited for a woken
 *     thread to run (the cost of a park/unpark hand-off, tens of microseconds on a
 *     virtual machine), the next acquisitions spin that long, the woken holder releases
 *     while they spin, and nobody queues again;
 *   - a spin that ran out with the permits still held, or a queued wait longer than
 *     SPIN_MAX_NS, shows that holders keep their permits long: the budget halves.
 * Past SPIN_YIELD_NS of spinning the loop yields the processor between checks, so that a
 * holder preempted on this core (more threads than cores) gets to run and release. A gap
 * between two checks counts for at most SPIN_GAP_NS against the budget, however long it
 * was: a long gap is time off the processor, and a spinner that was preempted learnt
 * nothing about the holders. A spin also ends at the deadline or on a requested
 * cancellation, without learning anything.
 */
#define SPIN_MIN_NS   ((uint32_t)BAND_USEC)
#define SPIN_MAX_NS   ((uint32_t)(1000 * BAND_USEC))
#define SPIN_YIELD_NS ((band_time)(2 * BAND_USEC))
#define SPIN_CHECK    16 /* pauses between clock reads */
#define SPIN_GAP_NS   ((band_time)(20 * BAND_USEC))

static uint32_t sem_spin_budget(const band_sem *s)
{
    uint32_t ns = atomic_load_explicit(&((band_sem *)s)->spin_ns, memory_order_relaxed);
    return ns < SPIN_MIN_NS ? SPIN_MIN_NS : ns;
}

/* Set the spin budget to @ns (clamped); written only when it changes. */
static void sem_spin_set(band_sem *s, uint64_t ns)
{
    uint32_t v = (uint32_t)band__min_u64(ns, SPIN_MAX_NS);
    if (v < SPIN_MIN_NS)
        v = SPIN_MIN_NS;
    if (atomic_load_explicit(&s->spin_ns, memory_order_relaxed) != v)
        atomic_store_explicit(&s->spin_ns, v, memory_order_relaxed);
}

/* A queued acquisition was granted after waiting @waited ns. */
static void sem_spin_learn(band_sem *s, band_time waited)
{
    uint32_t cur = sem_spin_budget(s);
    if (waited >= 0 && waited <= (band_time)SPIN_MAX_NS) {
        if ((uint64_t)waited * 2 > cur)
            sem_spin_set(s, (uint64_t)waited * 2);
    } else {
        sem_spin_set(s, cur / 2);
    }
}

static int sem_try_spin(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel)
{
    int rc = sem_try_take(s, n);
    if (rc != BAND_EAGAIN)
        return rc;
    band_time last = band_now();
    /* A past deadline means "only if free now", a requested token "do not wait". */
    if (deadline <= last || (cancel != NULL && band_cancel_is_requested(cancel)))
        return BAND_EAGAIN;
    uint32_t budget = sem_spin_budget(s);
    band_time spun = 0;
    for (;;) {
        for (int i = 0; i < SPIN_CHECK; i++) {
            band__cpu_relax();
            rc = sem_try_take(s, n); /* refuses while SLOW: never past a waiter */
            if (rc != BAND_EAGAIN)
                return rc;
        }
        band_time now = band_now();
        band_time step = now - last;
        last = now;
        /* A gap far longer than a round of checks means this thread was off the processor
         * (preempted, or yielded to a thread that ran), which says nothing about how long
         * holders keep their permits: it counts as SPIN_GAP_NS only. */
        spun += step < SPIN_GAP_NS ? step : SPIN_GAP_NS;
        if (now >= deadline || (cancel != NULL && band_cancel_is_requested(cancel)))
            return BAND_EAGAIN; /* out of time, not a sign of long holds: nothing learnt */
        if (spun >= (band_time)budget)
            break;
        if (spun >= SPIN_YIELD_NS)
            (void)sched_yield();
    }
    sem_spin_set(s, budget / 2); /* held longer than the whole spin */
    return BAND_EAGAIN;
}

int band_sem_acquire(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel)
{
    if (s == NULL)
        return BAND_EINVAL;
    int rc = sem_check_request(s, n);
    if (rc != 0)
        return rc;
    rc = sem_try_spin(s, n, deadline, cancel);
    if (rc != BAND_EAGAIN)
        return rc;
    rc = band__wait_refusal(deadline, cancel);
    if (rc != 0)
        return rc;

    struct band__blocker b;
    band__blocker_init(&b);
    b.w.deadline = deadline;
    band_time queued_at = band_now();
    rc = sem_enqueue(s, n, &b.w);
    if (rc != BAND_PENDING) {
        band__blocker_done(&b);
        return rc;
    }
    rc = band__blocker_wait_cancel(&b, deadline, cancel);
    if (rc == 0)
        sem_spin_learn(s, band_now() - queued_at);
    return rc;
}

/* ---------------------------------------------------------------- release, reduce, drain */

static int sem_release_slow(band_sem *s, uint64_t n)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    int rc = sem_release_locked(s, n, &wl);
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* Take every available permit (lock held, so only fast paths race). */
uint64_t band__sem_take_available_locked(band_sem *s)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->state, &st, st & (SLOW | CLOSED),
                                                  memory_order_acq_rel, memory_order_relaxed))
        ;
    return AVAIL(st);
}

/*
 * The add-first release of @n found SLOW or an overflow in @old, the word as it was just
 * before its add. Returns 0, or BAND_EOVERFLOW after taking the permits back.
 */
static SEM_COLD int sem_release_fixup(band_sem *s, uint64_t n, uint64_t old)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (AVAIL(old) > BAND_MAX_UNITS - n) {
        /* Past the maximum at the moment of the add: undo it. A taker that raced in and
         * used the excess is charged as debt, so the balance is as before the call. */
        uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
        uint64_t back;
        do {
            back = band__min_u64(AVAIL(st), n);
        } while (!atomic_compare_exchange_weak_explicit(
            &s->state, &st, st - (back << SHIFT), memory_order_acq_rel, memory_order_relaxed));
        if (back < n)
            (void)sem_reduce_locked(s, n - back);
        rc = BAND_EOVERFLOW;
    } else if (s->q.len > 0 || s->debt > 0) {
        /* Waiters or debt: what was added belongs to them. If SLOW was cleared meanwhile,
         * the permits were already published as available and there is nothing to do. */
        uint64_t pool = band__sem_take_available_locked(s);
        band__sem_publish_locked(s, band__sem_grant_locked(s, pool, &wl));
    }
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return rc;
}

/*
 * A budget's fast release of @n landed while its capacity changed, so the limit it was
 * checked against may not be the one in force when it landed. Take the units back, as if
 * the release had not happened - available ones first, the rest as debt, owed by whoever
 * took them meanwhile (an acquisition, or a head waiter's partial grant) - and release
 * them again under the lock, where the check is exact. A release of units that callers
 * hold is accepted either way. Returns 0, or BAND_EOVERFLOW with the balance as before the
 * release. The one thing this cannot undo: if units were taken meanwhile, the check counts
 * them as held, so a release of units never acquired can pass when a capacity change
 * landed between its loads and its CAS (and the word came back to the value it loaded,
 * or the CAS would have failed).
 */
static int sem_release_recheck(band_sem *s, uint64_t n)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    uint64_t back;
    do {
        back = band__min_u64(AVAIL(st), n);
    } while (!atomic_compare_exchange_weak_explicit(&s->state, &st, st - (back << SHIFT),
                                                    memory_order_acq_rel, memory_order_relaxed));
    if (back < n) {
        s->debt += n - back;
        band__sem_publish_locked(s, 0); /* owed: SLOW */
    }
    int rc = sem_release_locked(s, n, &wl);
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band_sem_release_finish(band_sem *s, uint64_t n, uint64_t old)
{
    if (s == NULL || n - 1 >= ADD_RELEASE_MAX || (s->fast_flags & BAND_SEM_PREFIX_F_OUTOFLINE))
        return BAND_EINVAL;
    if (!(old & SLOW) && AVAIL(old) <= BAND_MAX_UNITS - n)
        return 0; /* nothing to finish */
    return sem_release_fixup(s, n, old);
}

/* Releases that may not add first: NULL, n == 0, very large @n, and every budget. */
static SEM_NOINLINE int sem_release_other(band_sem *s, uint64_t n)
{
    if (s == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    /*
     * A budget (or a release above ADD_RELEASE_MAX): a CAS on the word, checked against
     * the limit. The word and the limit are
     * two loads, so the pair can be torn by a capacity change, and a CAS on the word alone
     * cannot tell: a shrink and a grow can put the word back to the very value the
     * release loaded, under a limit it never saw. Capacity changes therefore run inside a
     * sequence lock (cap_seq, odd while one is under way), read before the word and again
     * after the CAS: unchanged, no change overlapped and the pair was exact; moved, the
     * release is redone under the lock (sem_release_recheck()). Capacity changes also
     * order their writes so that most overlaps are exact anyway: a shrink stores the lower
     * limit before it takes units from the word, a grow adds the units before it raises
     * the limit. A pair that looks like an overflow falls back to the lock, which tells.
     * Only loads are added to the one RMW.
     */
    uint64_t seq = atomic_load_explicit(&s->cap_seq, memory_order_acquire);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    while (!(st & SLOW) && !(seq & 1)) {
        uint64_t limit = atomic_load_explicit(&s->limit, memory_order_acquire);
        uint64_t avail = AVAIL(st);
        if (avail > limit || n > limit - avail)
            break;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st + (n << SHIFT),
                                                  memory_order_acq_rel, memory_order_acquire)) {
            if (band__likely(atomic_load_explicit(&s->cap_seq, memory_order_acquire) == seq))
                return 0;
            return sem_release_recheck(s, n);
        }
    }
    return sem_release_slow(s, n);
}

/* The inline path of band/sem.h is this same add; both finish in sem_release_fixup(). */
int band_sem_release(band_sem *s, uint64_t n)
{
    if (band__likely(s != NULL && n - 1 < ADD_RELEASE_MAX &&
                     !(s->fast_flags & BAND_SEM_PREFIX_F_OUTOFLINE))) {
        uint64_t old = atomic_fetch_add_explicit(&s->state, n << SHIFT, memory_order_release);
        if (band__likely(!(old & SLOW) && AVAIL(old) <= BAND_MAX_UNITS - n))
            return 0;
        return sem_release_fixup(s, n, old);
    }
    return sem_release_other(s, n);
}

/* A semaphore's reported capacity loses @n (saturating: releases of permits that were
 * never acquired may have gone unseen). Called after the permits left the state word, so a
 * snapshot between the two sees more in use, never a release beyond the capacity. */
static void sem_base_sub(band_sem *s, uint64_t n)
{
    uint64_t b = atomic_load_explicit(&s->base, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->base, &b, b - band__min_u64(b, n),
                                                  memory_order_release, memory_order_relaxed)) {
    }
}

void band__sem_base_add(band_sem *s, uint64_t n)
{
    if (!s->is_budget)
        atomic_fetch_add_explicit(&s->base, n, memory_order_relaxed);
}

int band_sem_reduce(band_sem *s, uint64_t n)
{
    if (s == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    if (s->is_budget)
        return band__sem_shrink(s, n); /* a budget's balance is its capacity */
    if (n > BAND_MAX_UNITS)
        return BAND_EOVERFLOW;
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    while (!(st & SLOW) && AVAIL(st) >= n) {
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed)) {
            sem_base_sub(s, n);
            return 0;
        }
    }
    pthread_mutex_lock(&s->lock);
    int rc = sem_reduce_locked(s, n);
    pthread_mutex_unlock(&s->lock);
    if (rc == 0)
        sem_base_sub(s, n);
    return rc;
}

int band__sem_charge(band_sem *s, uint64_t n)
{
    if (n == 0)
        return 0;
    if (n > BAND_MAX_UNITS)
        return BAND_EOVERFLOW;
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    while (!(st & SLOW) && AVAIL(st) >= n) {
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return 0;
    }
    /* The capacity stays: the units are held, and their release repays the debt. */
    pthread_mutex_lock(&s->lock);
    int rc = sem_reduce_locked(s, n);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

uint64_t band_sem_drain(band_sem *s, uint64_t up_to)
{
    if (s == NULL)
        return 0;
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        uint64_t take = band__min_u64(AVAIL(st), up_to);
        if (take == 0 || (st & SLOW))
            return 0;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (take << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return take; /* the caller holds them: in use, not gone */
    }
}

uint64_t band_sem_available(const band_sem *s)
{
    if (s == NULL)
        return 0;
    return AVAIL(atomic_load_explicit(&((band_sem *)s)->state, memory_order_acquire));
}

/* ---------------------------------------------------------------- close */

int band_sem_close(band_sem *s)
{
    if (s == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    if (!(atomic_fetch_or_explicit(&s->state, CLOSED, memory_order_acq_rel) & CLOSED)) {
        uint64_t pool = s->head_got;
        s->head_got = 0;
        band_time now = 0;
        struct band__node *node = s->q.head.next;
        while (node != &s->q.head) {
            struct band__node *next = node->next;
            band_waiter *w = band__waiter_of(node);
            if (band__waiter_is_smart(w)) {
                band__smart_ops_of(w)->changed(w, &wl);
            } else {
                band__sem_dequeue_locked(s, w, &now);
                s->closed_fails++;
                band__waiter_complete_locked(w, BAND_ECLOSED, &wl);
            }
            node = next;
        }
        band__list_foreach (node, &s->watch) {
            band_waiter *w = band__waiter_of(node);
            band__smart_ops_of(w)->changed(w, &wl);
        }
        if (s->nsmart > 0) {
            /* Smart nodes leave only when their owners take them out; until then the
             * pool stays set aside for whichever of them is now the head. */
            s->head_got = pool;
            pool = 0;
        }
        band__sem_publish_locked(s, band__sem_grant_locked(s, pool, &wl));
    }
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_sem_is_closed(const band_sem *s)
{
    if (s == NULL)
        return 0;
    return (atomic_load_explicit(&((band_sem *)s)->state, memory_order_acquire) & CLOSED) != 0;
}

/* ---------------------------------------------------------------- capacity (budgets) */

/*
 * Every change of a budget's limit is bracketed by these (lock held, so one writer at a
 * time), as a sequence lock: cap_seq is odd from before the change's first write to
 * after its last one. A fast release reads cap_seq before it loads the word and again
 * after its CAS; if it moved, some change overlapped the release, which is then redone
 * under the lock (band_sem_release()).
 */
static void sem_cap_change_begin(band_sem *s)
{
    uint64_t seq = atomic_load_explicit(&s->cap_seq, memory_order_relaxed);
    atomic_store_explicit(&s->cap_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* odd before any write of the change */
}

static void sem_cap_change_end(band_sem *s)
{
    uint64_t seq = atomic_load_explicit(&s->cap_seq, memory_order_relaxed);
    atomic_store_explicit(&s->cap_seq, seq + 1, memory_order_release);
}

int band__sem_grow(band_sem *s, uint64_t n)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    sem_cap_change_begin(s);
    uint64_t cap = atomic_load_explicit(&s->limit, memory_order_relaxed);
    int rc = BAND_EOVERFLOW;
    if (n > BAND_MAX_UNITS - cap) {
        /* refused, nothing changes */
    } else if (s->q.len == 0 && s->debt == 0) {
        /* Fast releases race here. The units join the word before the limit rises, so a
         * release can never pair the word from before the grow with the higher limit: the
         * limit's store is a release and the fast path loads it with acquire after the
         * word, so a release that reads the higher limit sees the added units, and its CAS
         * on the older word fails. The add cannot pass the new limit: available is at
         * most the old capacity. */
        atomic_fetch_add_explicit(&s->state, n << SHIFT, memory_order_release);
        atomic_store_explicit(&s->limit, cap + n, memory_order_release);
        rc = 0;
    } else {
        /* SLOW is set, so every release takes the lock: the order does not matter. */
        atomic_store_explicit(&s->limit, cap + n, memory_order_release);
        rc = sem_release_locked(s, n, &wl);
        if (rc != 0)
            atomic_store_explicit(&s->limit, cap, memory_order_release);
    }
    sem_cap_change_end(s);
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* Set a budget's capacity to @newcap and refuse queued requests that can no longer fit:
 * they would wait forever. */
static void sem_set_capacity_locked(band_sem *s, uint64_t newcap, struct band__wakelist *wl)
{
    atomic_store_explicit(&s->limit, newcap, memory_order_relaxed);
    uint64_t pool = 0;
    band_time now = 0;
    struct band__node *node = s->q.head.next;
    while (node != &s->q.head) {
        struct band__node *next = node->next;
        band_waiter *w = band__waiter_of(node);
        if (w->_u.want > newcap && band__waiter_is_smart(w)) {
            band__smart_ops_of(w)->changed(w, wl); /* its owner fails it */
        } else if (w->_u.want > newcap) {
            if (band__waitq_first(&s->q) == w) {
                pool += s->head_got;
                s->head_got = 0;
            }
            band__sem_dequeue_locked(s, w, &now);
            atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
            band__waiter_complete_locked(w, BAND_E2BIG, wl);
        }
        node = next;
    }
    band__list_foreach (node, &s->watch) {
        band_waiter *w = band__waiter_of(node);
        if (w->_u.want > newcap)
            band__smart_ops_of(w)->changed(w, wl);
    }
    band__sem_publish_locked(s, band__sem_grant_locked(s, pool, wl));
}

int band__sem_shrink(band_sem *s, uint64_t n)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    uint64_t cap = atomic_load_explicit(&s->limit, memory_order_relaxed);
    int rc = n >= cap ? BAND_EINVAL : 0;
    if (rc == 0 && n > 0) {
        sem_cap_change_begin(s);
        /* The limit drops before the units leave the state word, which a fast release
         * reads first (acquire): one that sees the word after the reduce also sees the
         * lower limit, and one that sees it before can only meet a limit lower than the
         * one it would be valid under, and falls back to the lock. */
        atomic_store_explicit(&s->limit, cap - n, memory_order_release);
        rc = sem_reduce_locked(s, n);
        if (rc == 0)
            sem_set_capacity_locked(s, cap - n, &wl);
        else
            atomic_store_explicit(&s->limit, cap, memory_order_release);
        sem_cap_change_end(s);
    }
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band__sem_check_holdable(band_sem *s, uint64_t n)
{
    if (!s->is_budget)
        return 0;
    /* Units held across a shrink may exceed the new capacity, never capacity + debt. */
    pthread_mutex_lock(&s->lock);
    uint64_t holdable = atomic_load_explicit(&s->limit, memory_order_relaxed) + s->debt;
    pthread_mutex_unlock(&s->lock);
    if (n <= holdable)
        return 0;
    atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
    return BAND_E2BIG;
}

void band__sem_forget(band_sem *s, uint64_t n)
{
    if (n == 0)
        return;
    if (!s->is_budget) {
        sem_base_sub(s, n); /* held permits that never come back */
        return;
    }
    /* Held units that will never come back: the capacity they stood for is gone. */
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&s->lock);
    /* Units owed by a shrink were to be repaid by exactly these returns: they settle the
     * debt first, and only the rest takes capacity with it. */
    uint64_t pay = band__min_u64(s->debt, n);
    s->debt -= pay;
    uint64_t cap = atomic_load_explicit(&s->limit, memory_order_relaxed);
    sem_cap_change_begin(s);
    sem_set_capacity_locked(s, cap - band__min_u64(cap, n - pay), &wl);
    sem_cap_change_end(s);
    pthread_mutex_unlock(&s->lock);
    band__wakelist_run(&wl);
}

/* ---------------------------------------------------------------- smart nodes, layers */

void band__sem_smart_push_locked(band_sem *s, band_waiter *w, band_waiter *before, uint64_t want,
                                 band_time now)
{
    if (s->q.len == 0) {
        /* The first waiter: what is available is set aside for it, as for any head. */
        s->head_got = band__sem_become_slow_locked(s);
        band__waitq_push_locked(&s->q, w, want, now);
    } else {
        band__waitq_insert_locked(&s->q, w, before == NULL ? &s->q.head : &before->_link, want,
                                  now);
    }
    s->q_units += want;
    s->nsmart++;
    s->queued++;
}

int band__sem_smart_covered_locked(const band_sem *s, const band_waiter *w)
{
    return band__waiter_state(w) == BAND__W_QUEUED && s->q.head.next == &w->_link &&
           s->head_got >= w->_u.want;
}

void band__sem_smart_leave_locked(band_sem *s, band_waiter *w, int granted, int status,
                                  struct band__wakelist *wl)
{
    uint64_t pool = 0;
    if (s->q.head.next == &w->_link) { /* the head */
        pool = s->head_got;
        s->head_got = 0;
        if (granted)
            pool -= w->_u.want;
    }
    band_time now = 0;
    band__sem_dequeue_locked(s, w, &now);
    band__waiter_set(w, NULL, BAND__W_IDLE);
    if (granted)
        s->grants++;
    else if (status == BAND_ETIMEDOUT)
        s->timeouts++;
    else if (status == BAND_ECLOSED)
        s->closed_fails++;
    else if (status == BAND_E2BIG)
        atomic_fetch_add_explicit(&s->too_big, 1, memory_order_relaxed);
    else
        s->cancels++;
    band__sem_publish_locked(s, band__sem_grant_locked(s, pool, wl));
}

void band__sem_watch_locked(band_sem *s, band_waiter *w, uint64_t want)
{
    w->_u.want = want;
    band__list_add_tail(&s->watch, &w->_link);
}

void band__sem_unwatch_locked(band_sem *s, band_waiter *w)
{
    (void)s;
    band__list_del_init(&w->_link);
}

/* Take @n available permits with the lock held (only fast paths race): 0 or BAND_EAGAIN. */
int band__sem_take_locked(band_sem *s, uint64_t n)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        if (AVAIL(st) < n)
            return BAND_EAGAIN;
        if (atomic_compare_exchange_weak_explicit(&s->state, &st, st - (n << SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return 0;
    }
}

uint64_t band__sem_become_slow_locked(band_sem *s)
{
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->state, &st, (st & CLOSED) | SLOW,
                                                  memory_order_acq_rel, memory_order_relaxed))
        ;
    return AVAIL(st);
}

/* Units held by callers: capacity + debt - free (a budget's in_use; lock held). */
uint64_t band__sem_in_use_locked(const band_sem *s)
{
    uint64_t st = atomic_load_explicit(&((band_sem *)s)->state, memory_order_relaxed);
    uint64_t cap = atomic_load_explicit(&((band_sem *)s)->limit, memory_order_relaxed);
    uint64_t free_units = AVAIL(st) + s->head_got;
    uint64_t total = cap + s->debt;
    return total > free_units ? total - free_units : 0;
}

const char band__sem_front_tag = 0;

int band__sem_acquire_front(band_sem *s, uint64_t n, band_time deadline, band_cancel *cancel)
{
    struct band__blocker b;
    int rc = BAND_PENDING;
    pthread_mutex_lock(&s->lock);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    if (st & CLOSED) {
        rc = BAND_ECLOSED;
    } else if (n == 0 || (s->q.len == 0 && s->debt == 0 && band__sem_take_locked(s, n) == 0)) {
        rc = 0;
    } else if (s->q.len > 0 && s->head_got >= n) {
        /* The free units set aside for the head: this caller ranks before the head. */
        s->head_got -= n;
        rc = 0;
    } else if (band__wait_refusal(deadline, cancel) != 0) {
        rc = band__wait_refusal(deadline, cancel);
    } else if (n > UINT64_MAX - s->q_units) {
        rc = BAND_EOVERFLOW;
    } else {
        band__blocker_init(&b);
        b.w.deadline = deadline;
        b.w.data = (void *)(uintptr_t)&band__sem_front_tag;
        if (s->q.len == 0) {
            s->head_got = band__sem_become_slow_locked(s);
            band__waitq_push_locked(&s->q, &b.w, n, band_now());
        } else {
            band__waitq_push_front_locked(&s->q, &b.w, n, band_now());
        }
        s->q_units += n;
        s->queued++;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != BAND_PENDING)
        return rc;
    return band__blocker_wait_cancel(&b, deadline, cancel);
}

/* ---------------------------------------------------------------- observability */

int band_sem_get_stats(const band_sem *cs, band_sem_stats *out)
{
    if (cs == NULL || out == NULL)
        return BAND_EINVAL;
    band_sem *s = (band_sem *)cs; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->lock);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    memcpy(out->name, s->name, sizeof(out->name));
    out->closed = (st & CLOSED) != 0;
    out->is_budget = s->is_budget;
    out->available = AVAIL(st);
    out->debt = s->debt;
    out->waiters = s->q.len;
    out->waiting_units = s->q_units;
    out->head_granted = s->head_got;
    out->queued = s->queued;
    out->grants = s->grants;
    out->timeouts = s->timeouts;
    out->cancels = s->cancels;
    out->closed_fails = s->closed_fails;
    out->wait_ns_total = s->wait_ns_total;
    out->wait_ns_max = s->wait_ns_max;
    out->refused_deadline = s->refused_deadline;
    out->grant_pace_ns = (uint64_t)s->ns_per_unit;
    if (s->is_budget) {
        out->capacity = atomic_load_explicit(&s->limit, memory_order_relaxed);
        /* capacity = available + held + head's partial - debt */
        uint64_t free_units = out->available + s->head_got;
        uint64_t total = out->capacity + s->debt;
        out->in_use = total > free_units ? total - free_units : 0;
    } else {
        /* capacity + debt = free + held. More free than that: permits were released that
         * were never acquired, and the semaphore grew by them. The capacity and the free
         * permits change apart (a reduce takes the permits, then lowers the capacity; the
         * limit raises the capacity, then releases), so they are read capacity, state,
         * capacity, until the capacity held still: then the state read lies between the
         * two halves of no change, and more free than capacity + debt is real growth. */
        uint64_t cap, again;
        int tries = 0;
        do {
            cap = atomic_load_explicit(&s->base, memory_order_acquire);
            out->available = AVAIL(atomic_load_explicit(&s->state, memory_order_acquire));
            again = atomic_load_explicit(&s->base, memory_order_acquire);
        } while (cap != again && ++tries < 16);
        uint64_t free_units = out->available + s->head_got;
        if (cap == again && free_units > cap + s->debt) {
            atomic_fetch_add_explicit(&s->base, free_units - s->debt - cap, memory_order_relaxed);
            cap = free_units - s->debt;
        }
        out->capacity = cap;
        out->in_use = cap + s->debt > free_units ? cap + s->debt - free_units : 0;
    }
    pthread_mutex_unlock(&s->lock);
    out->try_refusals = atomic_load_explicit(&s->try_refusals, memory_order_relaxed);
    out->too_big = atomic_load_explicit(&s->too_big, memory_order_relaxed);
    return 0;
}

uint32_t band__sem_spin_budget_ns(const band_sem *s)
{
    return sem_spin_budget(s);
}

void band__sem_spin_learn(band_sem *s, band_time waited)
{
    sem_spin_learn(s, waited);
}

void band__sem_spin_ran_out(band_sem *s, uint32_t budget)
{
    sem_spin_set(s, budget / 2);
}

#ifdef BAND_TESTING

int band__sem_check(const band_sem *cs)
{
    band_sem *s = (band_sem *)cs;
    int bad = 0;
    pthread_mutex_lock(&s->lock);
    uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    uint64_t avail = AVAIL(st);
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    uint64_t n = 0, units = 0, smart = 0;
    struct band__node *node;
    band__list_foreach (node, &s->q.head) {
        band_waiter *w = band__waiter_of(node);
        n++;
        units += w->_u.want;
        smart += band__waiter_is_smart(w) ? 1 : 0;
        if (band__waiter_state(w) != BAND__W_QUEUED && bad == 0)
            bad = -__LINE__;
    }
    int bad_watch = 0;
    band__list_foreach (node, &s->watch) {
        band_waiter *w = band__waiter_of(node);
        if (!band__waiter_is_smart(w) || band__waiter_state(w) == BAND__W_QUEUED)
            bad_watch = -__LINE__;
    }
    band_waiter *head = band__waitq_first(&s->q);
    if (bad_watch != 0)
        bad = bad_watch;
    else if (n != s->q.len)
        bad = -__LINE__;
    else if (units != s->q_units)
        bad = -__LINE__;
    else if (smart != s->nsmart)
        bad = -__LINE__;
    else if ((s->q.len > 0 || s->debt > 0) != ((st & SLOW) != 0))
        bad = -__LINE__;
    else if ((st & SLOW) && avail != 0)
        bad = -__LINE__;
    else if (head == NULL && s->head_got != 0)
        bad = -__LINE__;
    else if (head != NULL && !band__waiter_is_smart(head) && s->head_got >= head->_u.want)
        bad = -__LINE__;
    else if (avail > limit)
        bad = -__LINE__;
    else if (s->debt > BAND_MAX_UNITS)
        bad = -__LINE__;
    pthread_mutex_unlock(&s->lock);
    return bad;
}
#endif /* BAND_TESTING */
