/* SPDX-License-Identifier: MIT */
/*
 * admit.c - building and submitting multi-budget requests: try, async, blocking.
 *
 * The try path is lock-free (each budget's own fast path, given back on refusal). A
 * request that must wait takes the admission mutex and all of its budgets' locks in
 * address order, then either takes every amount (all idle) or joins every queue of its
 * first stage at once; admit_eval.c decides it from then on. Its design notes explain why
 * this is FIFO and deadlock-free.
 */
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "admit/admit_internal.h"
#include "core/block.h"

#if defined(__GNUC__) || defined(__clang__)
#define ADMIT_COLD     __attribute__((noinline, cold))
#define ADMIT_INLINE   inline __attribute__((always_inline))
#define ADMIT_NOINLINE __attribute__((noinline))
#else
#define ADMIT_COLD
#define ADMIT_INLINE inline
#define ADMIT_NOINLINE
#endif

/* The inline fast path of band/admit.h reads a request's waiter state with this encoding. */
_Static_assert(BAND_ADMIT_W_STATE_MASK == BAND__W_STATE_MASK, "admit.h: waiter state mask");
_Static_assert(BAND_ADMIT_W_QUEUED == (uintptr_t)BAND__W_QUEUED, "admit.h: queued state");
_Static_assert(offsetof(band_admit_req, w) == 0, "admit.h: the waiter comes first");

#ifdef BAND_TESTING
void (*band__admit_fast_hook)(band_sem *s, void *arg);
void *band__admit_fast_hook_arg;
_Atomic uint64_t band__admit_fast_moved, band__admit_fast_gave_back;
#define ADMIT_FAST_COUNT(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)
#else
#define ADMIT_FAST_COUNT(c) ((void)0)
#endif
#ifdef BAND_TESTING
/* Just before the lock-free admission's CAS on @s: where another thread may change it. */
#define ADMIT_FAST_HOOK(s)                                                                         \
    do {                                                                                           \
        if (band__admit_fast_hook != NULL)                                                         \
            band__admit_fast_hook((s), band__admit_fast_hook_arg);                                 \
    } while (0)
#else
#define ADMIT_FAST_HOOK(s) ((void)0)
#endif

void band_admit_req_init(band_admit_req *r, band_wake_fn *wake, void *data)
{
    if (r == NULL)
        return;
    memset(r, 0, sizeof(*r));
    band_waiter_init(&r->w, wake, data);
    r->_ops = &band__admit_node_ops;
    for (unsigned i = 0; i < BAND_ADMIT_MAX; i++)
        band__smart_init(&r->e[i]._node, &r->_ops);
}

/* Sort the entries by semaphore address: the lock order. */
static void admit_sort(band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        r->_order[i] = (uint8_t)i;
    for (uint32_t i = 1; i < r->n; i++) {
        uint8_t v = r->_order[i];
        uintptr_t key = (uintptr_t)r->e[v].sem;
        uint32_t j = i;
        while (j > 0 && (uintptr_t)r->e[r->_order[j - 1]].sem > key) {
            r->_order[j] = r->_order[j - 1];
            j--;
        }
        r->_order[j] = v;
    }
}

int band__admit_req_add_staged(band_admit_req *r, band_sem *s, uint64_t amount, unsigned stage)
{
    if (r == NULL || s == NULL || amount > BAND_MAX_UNITS || band_waiter_is_pending(&r->w) ||
        r->n > BAND_ADMIT_MAX)
        return BAND_EINVAL;
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].sem == s) {
            if (amount > BAND_MAX_UNITS - r->e[i].amount)
                return BAND_EOVERFLOW;
            r->e[i].amount += amount;
            if (stage < r->_stage[i])
                r->_stage[i] = (uint8_t)stage;
            return 0;
        }
    }
    if (r->n == BAND_ADMIT_MAX)
        return BAND_EINVAL;
    r->e[r->n].sem = s;
    r->e[r->n].amount = amount;
    r->_stage[r->n] = (uint8_t)stage;
    r->n++;
    admit_sort(r);
    return 0;
}

int band_admit_req_add(band_admit_req *r, band_sem *s, uint64_t amount)
{
    return band__admit_req_add_staged(r, s, amount, 0);
}

static int grant_is_empty(const band_admit_grant *g)
{
    return g->n == 0;
}

static void grant_fill(band_admit_grant *g, const band_admit_req *r)
{
    g->n = r->n; /* entries past n are never read */
    for (uint32_t i = 0; i < r->n; i++) {
        g->p[i].sem = r->e[i].sem;
        g->p[i].count = r->e[i].amount;
    }
}

/* BAND_E2BIG when some amount exceeds its budget's capacity, else 0. */
static int admit_check_size(const band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        band_sem *s = r->e[i].sem;
        if (r->e[i].amount > band__sem_limit(s)) {
            band__sem_count_too_big(s);
            return BAND_E2BIG;
        }
    }
    return 0;
}

/*
 * The lock-free admission: every amount taken with one CAS on its budget's state word, or
 * nothing kept. It goes through the entries from the last to the first. A grant releases
 * them from the first to the last, so the last entry's word is the last one a holder gives
 * back and the first one an admission takes: to admissions of the same budgets named in
 * the same order it is a gate. While the gate is held, a take stops at it and reads no
 * other word (their holder is writing them); a take that finds it free finds the others
 * given back already, unless somebody else holds them.
 *
 * Without the gate (try, async): every word is read and checked first: open, SLOW clear
 * (nobody queued, no debt owed) and enough available. Only when all of them pass are the
 * amounts taken, last entry first. So the request never takes a unit while it is refused
 * elsewhere already, and never takes one that a queued waiter is owed: a SLOW word is
 * refused, as band_sem_try_acquire() refuses it.
 *
 * With the gate (a blocking admission, which waits for the budgets anyway): the gate's
 * amount (the last entry with a nonzero amount) is taken as soon as its word passes the
 * check, before the other words are read; if one of them refuses then, the gate's units go
 * back through band_sem_release(). Two blocking admissions of the same budgets that arrive
 * together thus decide on one word which of them goes on: the other has touched nothing
 * else and waits at the gate, instead of both taking part of the set, giving it back and
 * pulling every word between their cores.
 *
 * A word that changes between its check and its CAS is checked again. If it refuses now,
 * what was taken of the later entries goes back through band_sem_release(), the gate last.
 * Such a moment, and the gate's give-back, is not hidden: a concurrent try on one of those
 * budgets may be refused, or a concurrent acquisition may queue, because of units that are
 * about to come back. It is harmless, because each budget sees exactly the history of a
 * plain acquisition and release by this thread: a release of held units (accepted whatever
 * the capacity did meanwhile), which hands them to the head waiter first if one queued,
 * and which never waits, so the request never waits holding anything.
 *
 * Returns 0, BAND_EAGAIN or BAND_ECLOSED, the answer of the first refusing entry in the
 * order of the take (*@at: its index; *@why: its word as it was refused).
 * An amount above the capacity always refuses (available <= capacity): the callers
 * classify refusals (BAND_E2BIG first).
 */
static int admit_word_refuses(uint64_t st, uint64_t amount)
{
    if (band__unlikely(st & BAND__SEM_CLOSED))
        return BAND_ECLOSED;
    return amount > 0 && ((st & BAND__SEM_SLOW) || BAND__SEM_AVAIL(st) < amount) ? BAND_EAGAIN : 0;
}

/* Give back the amounts of entries @from .. n - 1 (taken), in entry order: the gate last. */
static ADMIT_COLD void admit_give_back(const band_admit_req *r, uint32_t from)
{
    int gave = 0;
    for (uint32_t j = from; j < r->n; j++) {
        if (r->e[j].amount > 0) {
            (void)band_sem_release(r->e[j].sem, r->e[j].amount);
            gave = 1;
        }
    }
    if (gave)
        ADMIT_FAST_COUNT(band__admit_fast_gave_back);
}

/* Entry @i's word moved between its check and its CAS (*@st: the value now): take it if
 * it still passes, else give back entries @i + 1 .. n - 1. 0 or the refusal. */
/* NOLINTNEXTLINE(readability-non-const-parameter): the CAS stores the word it found in *st */
static ADMIT_COLD int admit_fast_moved(const band_admit_req *r, uint32_t i, uint64_t *st)
{
    uint64_t amount = r->e[i].amount;
    _Atomic uint64_t *word = &r->e[i].sem->state;
    ADMIT_FAST_COUNT(band__admit_fast_moved);
    for (;;) {
        int rc = admit_word_refuses(*st, amount);
        if (rc != 0) {
            admit_give_back(r, i + 1);
            return rc;
        }
        if (atomic_compare_exchange_weak_explicit(word, st, *st - (amount << BAND__SEM_SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            return 0;
    }
}

/* One budget: one CAS is the whole admission. */
static ADMIT_INLINE int admit_take_one(const band_admit_entry *e, uint64_t *why)
{
    _Atomic uint64_t *word = &e->sem->state;
    uint64_t amount = e->amount;
    uint64_t st = atomic_load_explicit(word, memory_order_relaxed);
    for (;;) {
        int rc = admit_word_refuses(st, amount);
        if (band__unlikely(rc != 0)) {
            *why = st;
            return rc;
        }
        if (amount == 0)
            return 0;
        ADMIT_FAST_HOOK(e->sem);
        if (band__likely(
                atomic_compare_exchange_weak_explicit(word, &st, st - (amount << BAND__SEM_SHIFT),
                                                      memory_order_acquire, memory_order_relaxed)))
            return 0;
    }
}

/* One entry's CAS (its word checked as *@st): 0, or the refusal with entries @i + 1 ..
 * n - 1 given back. */
static ADMIT_INLINE int admit_take_entry(const band_admit_req *r, uint32_t i, uint64_t *st)
{
    uint64_t amount = r->e[i].amount;
    ADMIT_FAST_HOOK(r->e[i].sem);
    if (band__likely(atomic_compare_exchange_strong_explicit(
            &r->e[i].sem->state, st, *st - (amount << BAND__SEM_SHIFT), memory_order_acquire,
            memory_order_relaxed)))
        return 0;
    return admit_fast_moved(r, i, st);
}

/* Several budgets, the last entry first: check every word, then one CAS each; with
 * @gate, the gate's CAS right after its check. */
static ADMIT_INLINE int admit_take_many(const band_admit_req *r, uint32_t *at, uint64_t *why,
                                        int gate)
{
    uint64_t st[BAND_ADMIT_MAX];
    const band_admit_entry *e = r->e;
    const uint32_t n = r->n;
    uint32_t i = n, top = n; /* entries top .. n - 1 are taken: the gate */
    int rc;
    if (gate) {
        /* Up to the gate; the entries after it have nothing to take. */
        while (i-- > 0) {
            st[i] = atomic_load_explicit(&e[i].sem->state, memory_order_relaxed);
            rc = admit_word_refuses(st[i], e[i].amount);
            if (band__unlikely(rc != 0))
                goto out;
            if (e[i].amount > 0) {
                rc = admit_take_entry(r, i, &st[i]);
                if (band__unlikely(rc != 0))
                    goto out;
                top = i;
                break;
            }
        }
    }
    for (i = top; i-- > 0;) {
        st[i] = atomic_load_explicit(&e[i].sem->state, memory_order_relaxed);
        rc = admit_word_refuses(st[i], e[i].amount);
        if (band__unlikely(rc != 0))
            goto refused;
    }
    for (i = top; i-- > 0;) {
        if (e[i].amount == 0)
            continue;
        rc = admit_take_entry(r, i, &st[i]);
        if (band__unlikely(rc != 0))
            goto out; /* the later entries, the gate among them, went back */
    }
    return 0;
refused:
    if (top != n)
        admit_give_back(r, top);
out:
    *at = i;
    *why = st[i];
    return rc;
}

static ADMIT_INLINE int admit_fast_take(const band_admit_req *r, uint32_t *at, uint64_t *why,
                                        int gate)
{
    if (band__likely(r->n == 1)) {
        *at = 0;
        return admit_take_one(&r->e[0], why);
    }
    return admit_take_many(r, at, why, gate);
}

/* A refusal of admit_fast_take() at entry @at, classified as the budgets' own try does:
 * BAND_E2BIG first (counted in too_big), else @rc; a BAND_EAGAIN is counted in the
 * refusing budget's try_refusals when @count. */
static ADMIT_COLD int admit_refused(const band_admit_req *r, int rc, uint32_t at, int count)
{
    int size = admit_check_size(r);
    if (size != 0)
        return size;
    if (rc == BAND_EAGAIN && count)
        atomic_fetch_add_explicit(&r->e[at].sem->try_refusals, 1, memory_order_relaxed);
    return rc;
}

/* Take every amount lock-free, or nothing: 0, BAND_EAGAIN, BAND_ECLOSED or BAND_E2BIG
 * (*@at: the refusing entry), without the gate. A BAND_EAGAIN counts in try_refusals
 * when @count: for band_admit_try_acquire() only, as a plain semaphore counts only its
 * try_acquire calls (the async path would otherwise write that shared counter on every
 * contended admission). */
static ADMIT_INLINE int admit_try_take(const band_admit_req *r, uint32_t *at, int count)
{
    uint64_t why;
    int rc = admit_fast_take(r, at, &why, 0);
    if (band__likely(rc == 0))
        return 0;
    return admit_refused(r, rc, *at, count);
}

/*
 * Before a blocking admission queues, it retries the lock-free take while the refusal is
 * for units that holders still have, as band_sem_acquire() spins: a holder on another
 * core usually releases soon, and queueing would turn every later admission into a
 * hand-off to a sleeping thread. It takes through the gate (above), and watches the word
 * that refused last, starting with @at, the refusal of the first take. While a word is SLOW (a
 * queued waiter or a debt) the take refuses, so the spin never takes units past a waiter; it keeps
 * waiting outside the queue instead, so that a convoy drains rather than reforms.
 *
 * It shares the budgets' adaptive spin (sem.c): it spins as long as the longest spin
 * budget of the budgets it names (1 us to 1 ms of spinning; a gap off the processor counts
 * as ADMIT_SPIN_GAP_NS only),
 * yields the processor between checks after
 * ADMIT_SPIN_YIELD_NS, and teaches the budgets what it saw: a spin that ran out halves
 * the budget of the one that refused last (its holders keep their units long), and an
 * admission that queued and was granted after W ns lets each named budget grow to 2W
 * (admit_acquire_slow()). It stops at the clock checks when @deadline passes or @cancel
 * is requested (the caller then answers with that).
 *
 * Returns 0, or BAND_EAGAIN, BAND_ECLOSED or BAND_E2BIG classified as the first take's.
 */
#define ADMIT_SPIN_YIELD_NS ((band_time)(2 * BAND_USEC))
#define ADMIT_SPIN_CHECK    16 /* pauses between clock reads */
#define ADMIT_SPIN_GAP_NS   ((band_time)(20 * BAND_USEC))

/* The longest spin budget of @r's budgets (ns). */
static uint32_t admit_spin_budget(const band_admit_req *r)
{
    uint32_t ns = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].amount > 0) {
            uint32_t b = band__sem_spin_budget_ns(r->e[i].sem);
            ns = b > ns ? b : ns;
        }
    }
    return ns;
}

static int admit_spin(const band_admit_req *r, uint32_t at, band_time deadline, band_cancel *cancel)
{
    uint32_t budget = admit_spin_budget(r);
    uint64_t why;
    band_time last = band_now(), spun = 0;
    for (;;) {
        for (int i = 0; i < ADMIT_SPIN_CHECK; i++) {
            band__cpu_relax();
            /* Watch only the word that refused last, as a plain acquisition watches its
             * one word: reading every budget's word while the holder releases them would
             * pull each line away from it just before its write. While a holder of the
             * same budgets gives them back, that is the gate, which it gives back last. */
            uint64_t st = atomic_load_explicit(&r->e[at].sem->state, memory_order_relaxed);
            if (admit_word_refuses(st, r->e[at].amount) == BAND_EAGAIN)
                continue;
            int rc = admit_fast_take(r, &at, &why, 1); /* refuses while SLOW: no barging */
            if (rc == 0)
                return 0;
            if (rc != BAND_EAGAIN) /* closed: classified as the first take was */
                return admit_refused(r, rc, at, 0);
            /* Held, or somebody queued: wait outside the queue. An amount that a shrink
             * made too big meanwhile keeps refusing until the spin ends; queueing then
             * answers BAND_E2BIG. */
        }
        band_time now = band_now();
        band_time step = now - last;
        last = now;
        /* Only time on the processor counts (sem.c says why). */
        spun += step < ADMIT_SPIN_GAP_NS ? step : ADMIT_SPIN_GAP_NS;
        if (deadline <= now || band_cancel_is_requested(cancel))
            return BAND_EAGAIN; /* the caller answers with the deadline or the cancel */
        if (spun >= (band_time)budget)
            break;
        if (spun >= ADMIT_SPIN_YIELD_NS)
            (void)sched_yield();
    }
    band__sem_spin_ran_out(r->e[at].sem, band__sem_spin_budget_ns(r->e[at].sem));
    return BAND_EAGAIN;
}

/* A queued admission was granted after waiting @waited ns: each named budget learns it. */
static void admit_spin_learn(const band_admit_req *r, band_time waited)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].amount > 0)
            band__sem_spin_learn(r->e[i].sem, waited);
    }
}

/* band_admit_try_acquire() over several budgets, out of line so that the single budget's
 * path keeps no frame. */
static ADMIT_NOINLINE int admit_try_many(const band_admit_req *r, band_admit_grant *g)
{
    uint32_t at;
    int rc = admit_try_take(r, &at, 1);
    if (rc == 0)
        grant_fill(g, r);
    return rc;
}

int band_admit_try_acquire(band_admit_req *r, band_admit_grant *g)
{
    if (r == NULL || g == NULL || r->n == 0 || !grant_is_empty(g) ||
        band__waiter_state(&r->w) == BAND__W_QUEUED)
        return BAND_EINVAL;
    uint64_t why;
    uint32_t n = r->n;
    if (band__likely(n == 1)) { /* the single budget: its one CAS, its one grant entry */
        const band_admit_entry *e = &r->e[0];
        int rc = admit_take_one(e, &why);
        if (band__unlikely(rc != 0))
            return admit_refused(r, rc, 0, 1);
        g->p[0].sem = e->sem;
        g->p[0].count = e->amount;
        g->n = 1;
        return 0;
    }
    return admit_try_many(r, g);
}

/* Can @r take everything now (all its locks held)? Idle queues, no debt, enough. */
static int admit_idle_locked(const band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].amount > 0 && !band__sem_idle_for_locked(r->e[i].sem, r->e[i].amount))
            return 0;
    }
    return 1;
}

/* Take every amount with all locks held, or nothing (a racing fast taker may win). */
static int admit_take_locked(const band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (band__sem_take_locked(r->e[i].sem, r->e[i].amount) != 0) {
            while (i-- > 0)
                band__sem_publish_locked(r->e[i].sem, r->e[i].amount);
            return BAND_EAGAIN;
        }
    }
    return 0;
}

/* Refusals that need the locks: 0, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW. */
static int admit_check_locked(band_admit_req *r)
{
    int rc = band__admit_refusal_locked(r, 1);
    for (uint32_t i = 0; rc == 0 && i < r->n; i++) {
        if (!band__sem_room_locked(r->e[i].sem, r->e[i].amount))
            rc = BAND_EOVERFLOW;
    }
    return rc;
}

/* Take everything now or join the queues of the first stage at once. BAND_PENDING, 0
 * (granted at once), or a refusal; never wakes @r. Completions of other waiters run
 * before it returns. */
static int admit_enqueue(band_admit_req *r)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&band__admit_mu);
    band__admit_lock_all(r);
    int rc = admit_check_locked(r);
    if (rc == 0 && !(admit_idle_locked(r) && admit_take_locked(r) == 0)) {
        r->_flags = 0;
        __atomic_store_n(&r->_inbox, 0, __ATOMIC_RELAXED); /* out of the inbox */
        band__admit_tree_classify_locked(r);
        band__admit_start_locked(r);
        /* Joins the first stage (every queue, without a tree); all was checked above,
         * so it is either waiting or, for a guaranteed request that finds free units
         * set aside already, granted. */
        int adv = band__admit_advance_locked(r);
        if (adv != 0) {
            band__admit_leave_locked(r, adv == 1, adv, &wl);
            band__admit_finish_locked(r);
        }
        rc = adv == 1 ? 0 : adv == 0 ? BAND_PENDING : adv;
    }
    if (rc == BAND_PENDING)
        band__waiter_set(&r->w, &band__admit_q, BAND__W_QUEUED);
    else
        band__waiter_finish_now(&r->w, rc);
    if (rc == 0)
        r->_flags |= BAND__ADMIT_GRANTED;
    band__admit_unlock_all(r);
    band__admit_drain_locked(&wl);
    pthread_mutex_unlock(&band__admit_mu);
    band__wakelist_run(&wl);
    return rc;
}

int band_admit_acquire_async(band_admit_req *r)
{
    if (r == NULL || r->n == 0)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&r->w);
    if (rc != 0)
        return rc;
    r->_flags = 0;
    uint32_t at;
    rc = admit_try_take(r, &at, 0);
    if (rc != BAND_EAGAIN) {
        if (rc == 0)
            r->_flags = BAND__ADMIT_GRANTED;
        band__waiter_finish_now(&r->w, rc);
        return rc;
    }
    return admit_enqueue(r);
}

int band_admit_req_grant(band_admit_req *r, band_admit_grant *g)
{
    if (r == NULL || g == NULL || !grant_is_empty(g) || band_waiter_is_pending(&r->w) ||
        !(r->_flags & BAND__ADMIT_GRANTED) || band_waiter_status(&r->w) != 0)
        return BAND_EINVAL;
    grant_fill(g, r);
    r->_flags &= ~BAND__ADMIT_GRANTED;
    return 0;
}

static void admit_block_wake(band_waiter *w)
{
    band__parker_unpark(w->data);
}

/* band_admit_acquire() past a refused lock-free take (@rc, at entry @at): spin, queue and
 * block. Out of line so that the successes keep no frame. */
static ADMIT_NOINLINE int admit_acquire_slow(band_admit_req *r, band_admit_grant *g,
                                             band_time deadline, band_cancel *cancel, int rc,
                                             uint32_t at)
{
    rc = admit_refused(r, rc, at, 0);
    if (rc == BAND_EAGAIN) {
        /* Spin only when it may wait: a past deadline or a cancel asks for an answer now. */
        int refusal = band__wait_refusal(deadline, cancel);
        rc = refusal != 0 ? refusal : admit_spin(r, at, deadline, cancel);
        if (rc == BAND_EAGAIN && (refusal = band__wait_refusal(deadline, cancel)) != 0)
            rc = refusal;
    }
    if (rc == BAND_EAGAIN) {
        band_wake_fn *wake = r->w.wake;
        void *data = r->w.data;
        band_time saved_deadline = r->w.deadline;
        struct band__parker p;
        band__parker_init(&p);
        r->w.wake = admit_block_wake;
        r->w.data = &p;
        r->w.deadline = deadline;
        band_time queued_at = band_now();
        rc = admit_enqueue(r);
        if (rc == BAND_PENDING) {
            rc = band__block(&r->w, &p, deadline, cancel);
            if (rc == 0)
                admit_spin_learn(r, band_now() - queued_at);
        }
        band__parker_destroy(&p);
        r->w.wake = wake;
        r->w.data = data;
        r->w.deadline = saved_deadline;
        r->_flags &= ~BAND__ADMIT_GRANTED;
    }
    if (rc == 0)
        grant_fill(g, r);
    return rc;
}

/* band_admit_acquire() over several budgets: the lock-free take through the gate, out of
 * line so that the single budget's path keeps no frame, and without the slow path's. */
static ADMIT_NOINLINE int admit_acquire_many(band_admit_req *r, band_admit_grant *g,
                                             band_time deadline, band_cancel *cancel)
{
    uint32_t at;
    uint64_t why;
    int rc = admit_take_many(r, &at, &why, 1);
    if (band__likely(rc == 0)) {
        grant_fill(g, r);
        return 0;
    }
    return admit_acquire_slow(r, g, deadline, cancel, rc, at);
}

int band_admit_acquire(band_admit_req *r, band_admit_grant *g, band_time deadline,
                       band_cancel *cancel)
{
    if (r == NULL || g == NULL || r->n == 0 || !grant_is_empty(g) ||
        band__waiter_state(&r->w) == BAND__W_QUEUED)
        return BAND_EINVAL;
    if (band__likely(r->n == 1)) {
        const band_admit_entry *e = &r->e[0];
        uint64_t why;
        int rc = admit_take_one(e, &why);
        if (band__likely(rc == 0)) {
            g->p[0].sem = e->sem;
            g->p[0].count = e->amount;
            g->n = 1;
            return 0;
        }
        return admit_acquire_slow(r, g, deadline, cancel, rc, 0);
    }
    return admit_acquire_many(r, g, deadline, cancel);
}
