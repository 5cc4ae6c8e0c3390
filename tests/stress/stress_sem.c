/* SPDX-License-Identifier: MIT */
/*
 * stress_sem.c - many threads on one semaphore (and on one budget): blocking acquires
 * with short random deadlines, async acquires that other threads cancel at random,
 * try_acquire, reduce/release (budget: shrink/grow) pairs and drains, with random weights.
 *
 * Each scenario runs 8 threads from fixed seeds, bounded by an iteration count AND a wall
 * time (a few seconds; the CI machine has 2 cores and runs this under TSan and ASan too).
 * Workers never assert: they count what they saw and record the first inconsistency; the
 * main thread checks after join that, at quiescence,
 *   - every permit came back (available == initial, capacity == initial), no waiter is
 *     left, no debt is owed, no partial grant is held;
 *   - every queued async acquisition ended exactly once: PENDING submissions == wakes +
 *     successful cancels, and no submission saw two wakes or a wake and a cancel;
 *   - the counters agree: queued == grants + timeouts + cancels (+ shrink E2BIG fails),
 *     cancels == successful ECANCELED cancels, timeouts within the bounds the threads saw.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "prim/sem_internal.h"

#define NTHREADS        8
#define CAPACITY        256 /* the semaphore's permits */
#define BUDGET_CAPACITY 96  /* small enough that shrinks make 64-unit requests too big */
#define MAX_WEIGHT      64
#define MAX_ITERS       200000

/* An async acquisition owned by one thread, cancellable by every other thread. */
struct op {
    band_waiter w; /* first member */
    struct scenario *sc;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken;        /* under mu: the wake ran */
    int cancelled;    /* under mu: some thread's cancel returned 0 */
    int status;       /* under mu: status seen by the wake */
    int wakes;        /* under mu: wakes for the current submission */
    atomic_int claim; /* 0 free, 1: a thread (owner or canceller) may cancel w right now */
    atomic_int armed; /* 1 from PENDING until the owner has seen the end and disarmed */
    uint64_t n;
};

struct counters {
    uint64_t iters;
    uint64_t blocking_ok, blocking_timeout, blocking_e2big;
    uint64_t async_at_once, async_pending, async_e2big;
    uint64_t wakes_ok, wakes_e2big;
    uint64_t cancel_ok_canceled, cancel_ok_timedout, cancel_ealready, cancel_einval;
    uint64_t try_ok, try_eagain, try_e2big;
    uint64_t reduces, shrinks, shrink_refused, drained;
};

struct scenario {
    const char *name;
    int budget_mode;
    uint64_t seed;
    uint64_t capacity;
    band_sem *sem;
    band_budget *budget;
    struct op ops[NTHREADS];
    struct counters cnt[NTHREADS];
    band_time stop_at;
    atomic_int errors;
    pthread_mutex_t err_mu;
    char err[512];
};

struct worker {
    struct scenario *sc;
    int idx;
    uint64_t rng;
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
record_error(struct scenario *sc, const char *fmt, ...)
{
    if (atomic_fetch_add(&sc->errors, 1) == 0) {
        pthread_mutex_lock(&sc->err_mu);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sc->err, sizeof(sc->err), fmt, ap);
        va_end(ap);
        pthread_mutex_unlock(&sc->err_mu);
    }
}

static void op_wake(band_waiter *w)
{
    struct op *op = (struct op *)(void *)w;
    int st = band_waiter_status(w);
    pthread_mutex_lock(&op->mu);
    op->status = st;
    op->wakes++;
    op->woken = 1;
    pthread_cond_signal(&op->cv);
    pthread_mutex_unlock(&op->mu);
}

static void claim_spin(struct op *op)
{
    int expected = 0;
    while (!atomic_compare_exchange_weak(&op->claim, &expected, 1)) {
        expected = 0;
        sched_yield();
    }
}

/* Cancel @op (not necessarily ours) if it is armed. The caller holds its claim. */
static void cancel_claimed(struct worker *wk, struct op *op, int reason)
{
    struct counters *c = &wk->sc->cnt[wk->idx];
    if (!atomic_load(&op->armed))
        return;
    int rc = band_waiter_cancel(&op->w, reason);
    if (rc == 0) {
        if (reason == BAND_ETIMEDOUT)
            c->cancel_ok_timedout++;
        else
            c->cancel_ok_canceled++;
        pthread_mutex_lock(&op->mu);
        if (op->cancelled || op->woken)
            record_error(wk->sc, "cancel returned 0 after the op had ended (woken %d)", op->woken);
        op->cancelled = 1;
        pthread_cond_signal(&op->cv);
        pthread_mutex_unlock(&op->mu);
    } else if (rc == BAND_EALREADY) {
        c->cancel_ealready++;
    } else if (rc == BAND_EINVAL) {
        /* Only possible when an earlier cancel already withdrew it. */
        pthread_mutex_lock(&op->mu);
        int ok = op->cancelled;
        pthread_mutex_unlock(&op->mu);
        if (!ok)
            record_error(wk->sc, "cancel of an armed op returned EINVAL");
        c->cancel_einval++;
    } else {
        record_error(wk->sc, "cancel returned %d", rc);
    }
}

static uint64_t rnd(struct worker *wk, uint64_t lo, uint64_t hi)
{
    return test_rng_range(&wk->rng, lo, hi);
}

static int give_back(struct worker *wk, uint64_t n)
{
    int rc = wk->sc->budget_mode && (n & 1) ? band_budget_release(wk->sc->budget, n)
                                            : band_sem_release(wk->sc->sem, n);
    if (rc != 0)
        record_error(wk->sc, "release(%llu) returned %d", (unsigned long long)n, rc);
    return rc;
}

/* Hold the permits for a moment (no sleeping: a few yields at most). */
static void hold(struct worker *wk)
{
    unsigned k = (unsigned)rnd(wk, 0, 3);
    while (k-- > 0)
        sched_yield();
}

static void do_blocking(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    struct counters *c = &sc->cnt[wk->idx];
    uint64_t n = rnd(wk, 1, MAX_WEIGHT);
    band_time deadline = band_deadline_after((band_time)rnd(wk, 0, 2000) * BAND_USEC);
    int rc = sc->budget_mode ? band_budget_acquire(sc->budget, n, deadline, NULL)
                             : band_sem_acquire(sc->sem, n, deadline, NULL);
    if (rc == 0) {
        c->blocking_ok++;
        hold(wk);
        give_back(wk, n);
    } else if (rc == BAND_ETIMEDOUT) {
        c->blocking_timeout++;
    } else if (rc == BAND_E2BIG && sc->budget_mode) {
        c->blocking_e2big++;
    } else {
        record_error(sc, "acquire(%llu) returned %d", (unsigned long long)n, rc);
    }
}

static void do_async(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    struct counters *c = &sc->cnt[wk->idx];
    struct op *op = &sc->ops[wk->idx];
    uint64_t n = rnd(wk, 1, MAX_WEIGHT);

    pthread_mutex_lock(&op->mu);
    op->woken = op->cancelled = op->wakes = 0;
    op->status = 12345;
    pthread_mutex_unlock(&op->mu);
    op->n = n;

    int rc = sc->budget_mode ? band_budget_acquire_async(sc->budget, n, &op->w)
                             : band_sem_acquire_async(sc->sem, n, &op->w);
    if (rc == 0) {
        c->async_at_once++;
        hold(wk);
        give_back(wk, n);
        return;
    }
    if (rc == BAND_E2BIG && sc->budget_mode) {
        c->async_e2big++;
        return;
    }
    if (rc != BAND_PENDING) {
        record_error(sc, "acquire_async(%llu) returned %d", (unsigned long long)n, rc);
        return;
    }
    c->async_pending++;
    atomic_store(&op->armed, 1); /* other threads may cancel it from now on */

    /* Wait for the wake or someone's cancel, up to a short random deadline; then cancel it
     * ourselves (a timeout) and, if that finds it completed, wait for the wake. */
    band_time deadline = band_deadline_after((band_time)rnd(wk, 0, 3000) * BAND_USEC);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the condvar uses the default clock */
    band_time left = deadline - band_now();
    int64_t ns = (int64_t)ts.tv_nsec + (left > 0 ? left : 0);
    ts.tv_sec += (time_t)(ns / BAND_SEC);
    ts.tv_nsec = (long)(ns % BAND_SEC);
    pthread_mutex_lock(&op->mu);
    while (!op->woken && !op->cancelled) {
        if (pthread_cond_timedwait(&op->cv, &op->mu, &ts) != 0)
            break;
    }
    int ended = op->woken || op->cancelled;
    pthread_mutex_unlock(&op->mu);
    if (!ended) {
        claim_spin(op);
        cancel_claimed(wk, op, BAND_ETIMEDOUT);
        atomic_store(&op->claim, 0);
        pthread_mutex_lock(&op->mu);
        while (!op->woken && !op->cancelled) /* EALREADY: the wake is imminent */
            pthread_cond_wait(&op->cv, &op->mu);
        pthread_mutex_unlock(&op->mu);
    }
    /* Disarm under the claim: no canceller can be between its check and its cancel. */
    claim_spin(op);
    atomic_store(&op->armed, 0);
    atomic_store(&op->claim, 0);

    pthread_mutex_lock(&op->mu);
    int woken = op->woken, cancelled = op->cancelled, wakes = op->wakes, st = op->status;
    pthread_mutex_unlock(&op->mu);
    if (woken + cancelled != 1 || wakes != woken)
        record_error(sc, "op ended woken=%d cancelled=%d wakes=%d", woken, cancelled, wakes);
    if (woken) {
        if (st == 0) {
            c->wakes_ok++;
            hold(wk);
            give_back(wk, n);
        } else if (st == BAND_E2BIG && sc->budget_mode) {
            c->wakes_e2big++;
        } else {
            record_error(sc, "wake status %d", st);
        }
    }
    if (band_waiter_is_pending(&op->w))
        record_error(sc, "waiter still pending after its end");
}

static void do_try(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    struct counters *c = &sc->cnt[wk->idx];
    uint64_t n = rnd(wk, 1, MAX_WEIGHT);
    int rc =
        sc->budget_mode ? band_budget_try_acquire(sc->budget, n) : band_sem_try_acquire(sc->sem, n);
    if (rc == 0) {
        c->try_ok++;
        hold(wk);
        give_back(wk, n);
    } else if (rc == BAND_EAGAIN) {
        c->try_eagain++;
    } else if (rc == BAND_E2BIG && sc->budget_mode) {
        c->try_e2big++;
    } else {
        record_error(sc, "try_acquire returned %d", rc);
    }
}

static void do_adjust(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    struct counters *c = &sc->cnt[wk->idx];
    uint64_t k = rnd(wk, 1, sc->budget_mode ? 48 : 32);
    if (!sc->budget_mode) {
        int rc = band_sem_reduce(sc->sem, k);
        if (rc != 0) {
            record_error(sc, "reduce(%llu) returned %d", (unsigned long long)k, rc);
            return;
        }
        c->reduces++;
        hold(wk);
        give_back(wk, k);
        return;
    }
    int rc = band_budget_shrink(sc->budget, k);
    if (rc == BAND_EINVAL) { /* other shrinks took the capacity down to k or less */
        c->shrink_refused++;
        return;
    }
    if (rc != 0) {
        record_error(sc, "shrink(%llu) returned %d", (unsigned long long)k, rc);
        return;
    }
    c->shrinks++;
    hold(wk);
    rc = band_budget_grow(sc->budget, k);
    if (rc != 0)
        record_error(sc, "grow(%llu) returned %d", (unsigned long long)k, rc);
}

static void do_drain(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    uint64_t got = band_sem_drain(sc->sem, rnd(wk, 1, MAX_WEIGHT));
    sc->cnt[wk->idx].drained += got;
    if (got > 0) {
        hold(wk);
        give_back(wk, got);
    }
}

static void do_cancel_other(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    int j = (int)rnd(wk, 0, NTHREADS - 2);
    if (j >= wk->idx)
        j++;
    struct op *op = &sc->ops[j];
    int expected = 0;
    if (!atomic_compare_exchange_strong(&op->claim, &expected, 1))
        return; /* someone else is at it */
    cancel_claimed(wk, op, (wk->rng & 1) ? BAND_ECANCELED : BAND_ETIMEDOUT);
    atomic_store(&op->claim, 0);
}

static int worker_main(void *arg)
{
    struct worker *wk = arg;
    struct scenario *sc = wk->sc;
    struct counters *c = &sc->cnt[wk->idx];
    for (uint64_t i = 0; i < MAX_ITERS; i++) {
        if ((i & 15) == 0 && band_now() >= sc->stop_at)
            break;
        if (atomic_load(&sc->errors) != 0)
            break;
        c->iters++;
        uint64_t r = rnd(wk, 0, 99);
        if (r < 25)
            do_blocking(wk);
        else if (r < 55)
            do_async(wk);
        else if (r < 70)
            do_try(wk);
        else if (r < 78)
            do_adjust(wk);
        else if (r < 83)
            do_drain(wk);
        else
            do_cancel_other(wk);
    }
    return 0;
}

static void sum_counters(const struct scenario *sc, struct counters *t)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < NTHREADS; i++) {
        const struct counters *c = &sc->cnt[i];
        const uint64_t *src = (const uint64_t *)(const void *)c;
        uint64_t *dst = (uint64_t *)(void *)t;
        for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
            dst[k] += src[k];
    }
}

static void run_scenario(const char *name, int budget_mode, uint64_t seed, band_time seconds)
{
    struct scenario *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    sc->name = name;
    sc->budget_mode = budget_mode;
    sc->seed = seed;
    atomic_init(&sc->errors, 0);
    pthread_mutex_init(&sc->err_mu, NULL);
    if (budget_mode) {
        sc->capacity = BUDGET_CAPACITY;
        assert_int_equal(band_budget_create(&sc->budget, sc->capacity, NULL), 0);
        sc->sem = band_budget_sem(sc->budget);
    } else {
        sc->capacity = CAPACITY;
        assert_int_equal(band_sem_create(&sc->sem, sc->capacity, NULL), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        struct op *op = &sc->ops[i];
        band_waiter_init(&op->w, op_wake, op);
        op->sc = sc;
        pthread_mutex_init(&op->mu, NULL);
        pthread_cond_init(&op->cv, NULL);
        atomic_init(&op->claim, 0);
        atomic_init(&op->armed, 0);
    }

    struct worker wk[NTHREADS];
    struct test_thread th[NTHREADS];
    band_time t0 = band_now();
    sc->stop_at = t0 + seconds;
    for (int i = 0; i < NTHREADS; i++) {
        wk[i].sc = sc;
        wk[i].idx = i;
        wk[i].rng = seed * 1000003u + (uint64_t)i;
        assert_int_equal(test_thread_start(&th[i], worker_main, &wk[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        test_thread_join(&th[i]);
    band_time elapsed = band_now() - t0;

    struct counters t;
    sum_counters(sc, &t);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(sc->sem, &st), 0);
    print_message("%s: %.2f s, %llu iterations; blocking ok %llu timeout %llu e2big %llu; "
                  "async now %llu pending %llu e2big %llu, wakes ok %llu e2big %llu; "
                  "cancels ok %llu+%llu ealready %llu; try ok %llu eagain %llu e2big %llu; "
                  "reduce %llu shrink %llu (refused %llu); drained %llu; "
                  "stats queued %llu grants %llu timeouts %llu cancels %llu max wait %.3f ms\n",
                  name, (double)elapsed / 1e9, (unsigned long long)t.iters,
                  (unsigned long long)t.blocking_ok, (unsigned long long)t.blocking_timeout,
                  (unsigned long long)t.blocking_e2big, (unsigned long long)t.async_at_once,
                  (unsigned long long)t.async_pending, (unsigned long long)t.async_e2big,
                  (unsigned long long)t.wakes_ok, (unsigned long long)t.wakes_e2big,
                  (unsigned long long)t.cancel_ok_canceled,
                  (unsigned long long)t.cancel_ok_timedout, (unsigned long long)t.cancel_ealready,
                  (unsigned long long)t.try_ok, (unsigned long long)t.try_eagain,
                  (unsigned long long)t.try_e2big, (unsigned long long)t.reduces,
                  (unsigned long long)t.shrinks, (unsigned long long)t.shrink_refused,
                  (unsigned long long)t.drained, (unsigned long long)st.queued,
                  (unsigned long long)st.grants, (unsigned long long)st.timeouts,
                  (unsigned long long)st.cancels, (double)st.wait_ns_max / 1e6);
    int errors = atomic_load(&sc->errors);
    if (errors != 0)
        print_error("%s: %d error(s), first: %s\n", name, errors, sc->err);
    int check = band__sem_check(sc->sem);
    uint64_t avail_now = band_sem_available(sc->sem);
    uint64_t capacity = sc->capacity;

    /* Free everything before asserting, so a failure does not add leak reports. Close
     * first in case a waiter was left queued (its wake still has its op to write to). */
    (void)band_sem_close(sc->sem);
    int destroy_rc = budget_mode ? band_budget_destroy(sc->budget) : band_sem_destroy(sc->sem);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_mutex_destroy(&sc->ops[i].mu);
        pthread_cond_destroy(&sc->ops[i].cv);
    }
    pthread_mutex_destroy(&sc->err_mu);
    free(sc);

    assert_int_equal(errors, 0);
    assert_int_equal(destroy_rc, 0);

    /* Quiescence: everything came back. */
    assert_int_equal(check, 0);
    assert_u64_equal(st.available, capacity);
    assert_u64_equal(avail_now, capacity);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.waiting_units, 0);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_int_equal(st.closed, 0);
    if (budget_mode) {
        assert_u64_equal(st.capacity, capacity);
        assert_u64_equal(st.in_use, 0);
    }

    /* Exactly once: every PENDING submission ended by one wake or one successful cancel. */
    uint64_t cancels_ok = t.cancel_ok_canceled + t.cancel_ok_timedout;
    assert_u64_equal(t.async_pending, t.wakes_ok + t.wakes_e2big + cancels_ok);

    /* The counters agree with what the threads saw. */
    assert_u64_equal(st.closed_fails, 0);
    assert_u64_equal(st.cancels, t.cancel_ok_canceled);
    assert_true(st.timeouts >= t.cancel_ok_timedout);
    assert_true(st.timeouts <= t.cancel_ok_timedout + t.blocking_timeout);
    /* Queued acquisitions end granted, timed out, cancelled or (budgets) failed by a shrink
     * with E2BIG: async ones through their wake, blocking ones among blocking_e2big (which
     * also counts the requests refused at once, so only a bound is known for those). */
    uint64_t ended = st.grants + st.timeouts + st.cancels + t.wakes_e2big;
    if (budget_mode) {
        assert_true(st.queued >= ended);
        assert_true(st.queued <= ended + t.blocking_e2big);
    } else {
        assert_u64_equal(st.queued, ended);
    }
    assert_true(st.grants >= t.wakes_ok);
    assert_true(st.grants <= t.wakes_ok + t.blocking_ok);
    assert_true(st.try_refusals >= t.try_eagain);
    if (!budget_mode) {
        assert_u64_equal(st.too_big, 0);
        assert_u64_equal(st.try_refusals, t.try_eagain);
    } else {
        assert_true(st.too_big >= t.blocking_e2big + t.async_e2big + t.try_e2big + t.wakes_e2big);
    }
    assert_true(st.wait_ns_total >= st.wait_ns_max);

    /* The run did real work: waiters queued, were granted, and were cancelled. */
    assert_true(t.async_pending > 0);
    assert_true(t.wakes_ok > 0);
    assert_true(cancels_ok > 0);
    assert_true(t.blocking_ok > 0);
}

/* Seconds per scenario: short enough for CI under TSan (the whole file stays well under
 * 20 s), overridable with BAND_STRESS_SECONDS for longer local runs. */
static band_time scenario_time(void)
{
    const char *v = getenv("BAND_STRESS_SECONDS");
    if (v != NULL && *v != '\0')
        return (band_time)(strtod(v, NULL) * 1e9);
    return 3 * BAND_SEC;
}

static void test_stress_sem_seed1(void **state)
{
    (void)state;
    run_scenario("sem seed 1", 0, 1, scenario_time());
}

static void test_stress_sem_seed2(void **state)
{
    (void)state;
    run_scenario("sem seed 2", 0, 2, scenario_time() / 2);
}

static void test_stress_budget_seed1(void **state)
{
    (void)state;
    run_scenario("budget seed 1", 1, 1, scenario_time());
}

static void test_stress_budget_seed2(void **state)
{
    (void)state;
    run_scenario("budget seed 2", 1, 2, scenario_time() / 2);
}

/*
 * Releases of held units racing with capacity changes. A budget's release must succeed
 * whenever the caller returns units it holds, whatever shrink and grow do meanwhile (the
 * units it holds are part of the balance both keep). Three threads take one unit and
 * return it; one thread shrinks the capacity by 90% and grows it back.
 */
struct race_ctx {
    band_budget *b;
    band_time stop_at;
    atomic_ullong releases, spurious_overflow, other_errors, shrinks;
};

static int race_releaser(void *arg)
{
    struct race_ctx *c = arg;
    for (uint64_t i = 0; i < 50u * MAX_ITERS; i++) {
        if ((i & 255) == 0 && band_now() >= c->stop_at)
            break;
        int rc = band_budget_try_acquire(c->b, 1);
        if (rc == BAND_EAGAIN)
            continue;
        if (rc != 0) {
            atomic_fetch_add(&c->other_errors, 1);
            continue;
        }
        rc = band_budget_release(c->b, 1);
        if (rc == BAND_EOVERFLOW)
            atomic_fetch_add(&c->spurious_overflow, 1);
        else if (rc != 0)
            atomic_fetch_add(&c->other_errors, 1);
        else
            atomic_fetch_add(&c->releases, 1);
    }
    return 0;
}

static int race_adjuster(void *arg)
{
    struct race_ctx *c = arg;
    for (uint64_t i = 0; i < 50u * MAX_ITERS; i++) {
        if ((i & 63) == 0 && band_now() >= c->stop_at)
            break;
        int rc = band_budget_shrink(c->b, 900);
        if (rc == 0) {
            atomic_fetch_add(&c->shrinks, 1);
            rc = band_budget_grow(c->b, 900);
        }
        if (rc != 0)
            atomic_fetch_add(&c->other_errors, 1);
    }
    return 0;
}

static void test_stress_budget_release_vs_shrink(void **state)
{
    (void)state;
    struct race_ctx c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(band_budget_create(&c.b, 1000, NULL), 0);
    band_time seconds = scenario_time() / 3;
    c.stop_at = band_now() + (seconds > BAND_SEC ? seconds : BAND_SEC);
    struct test_thread th[4];
    assert_int_equal(test_thread_start(&th[0], race_adjuster, &c), 0);
    for (int i = 1; i < 4; i++)
        assert_int_equal(test_thread_start(&th[i], race_releaser, &c), 0);
    for (int i = 0; i < 4; i++)
        test_thread_join(&th[i]);
    band_budget_stats st;
    assert_int_equal(band_budget_get_stats(c.b, &st), 0);
    print_message(
        "budget release vs shrink: %llu releases, %llu shrink/grow pairs, "
        "%llu spurious EOVERFLOW; capacity %llu available %llu in_use %llu\n",
        (unsigned long long)atomic_load(&c.releases), (unsigned long long)atomic_load(&c.shrinks),
        (unsigned long long)atomic_load(&c.spurious_overflow), (unsigned long long)st.capacity,
        (unsigned long long)st.available, (unsigned long long)st.in_use);
    assert_int_equal(band_budget_destroy(c.b), 0);
    assert_u64_equal(atomic_load(&c.other_errors), 0);
    assert_u64_equal(atomic_load(&c.spurious_overflow), 0);
    assert_true(atomic_load(&c.releases) > 0);
    assert_true(atomic_load(&c.shrinks) > 0);
    assert_u64_equal(st.capacity, 1000);
    assert_u64_equal(st.available, 1000);
    assert_u64_equal(st.in_use, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_sem_seed1),
        cmocka_unit_test(test_stress_budget_seed1),
        cmocka_unit_test(test_stress_sem_seed2),
        cmocka_unit_test(test_stress_budget_seed2),
        cmocka_unit_test(test_stress_budget_release_vs_shrink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
