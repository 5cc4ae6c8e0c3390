/* SPDX-License-Identifier: MIT */
/*
 * stress_group.c - threads on wait groups, latches and shutdown scopes.
 *
 * Scenarios (each bounded by an iteration count AND about two seconds of wall time; CI has
 * 2 cores and runs this under TSan and ASan):
 *   group_churn   4 threads on one group: add/done bursts, blocking waits with tiny
 *                 deadlines, async waits cancelled by their owner as the count reaches 0.
 *                 At quiescence: count 0, nobody queued, queued == released + timeouts +
 *                 cancels, every PENDING wait ended exactly once (one wake or one cancel).
 *   group_rounds  a coordinator adds N per round, N workers write a slot and call done;
 *                 the coordinator's wait (blocking or async, alternating) must see every
 *                 slot of the round written (no early release, writes published).
 *   latch_rounds  a fresh latch per round; N workers arrive_and_wait and must all have
 *                 arrived when they pass; an async wait submitted before the round is
 *                 woken exactly once.
 *   shutdown_rounds
 *                 a fresh scope and semaphore per round; workers join, queue a semaphore
 *                 acquisition watched by the scope, wait for its one wake, unwatch, leave,
 *                 until a join is refused; the coordinator releases a few permits, requests
 *                 shutdown, waits for the drain and checks no participant is active, no
 *                 join succeeded after the request returned, every watched acquisition
 *                 ended with exactly one wake, and the scope can be destroyed.
 *   shutdown_cancel_rounds
 *                 the same rounds, with workers blocked in band_sem_acquire() under the
 *                 scope's cancellation token: each acquisition is granted or ends with
 *                 BAND_ECANCELED, the latter only once shutdown was requested, and the
 *                 drain, the counters and the destroy are checked as above.
 * Workers never assert: they record the first inconsistency; the main thread checks.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "band/group.h"
#include "band/latch.h"
#include "band/shutdown.h"
#include "core/internal.h"

#define NW          4
#define MAX_ITERS   50000
#define MAX_ROUNDS  20000
#define SCENARIO_NS (2 * BAND_SEC)
#define HANG_NS     (20 * BAND_SEC)

static atomic_int errors;
static char err_msg[256];
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;

static void record_fail(const char *what, long a, long b)
{
    if (atomic_fetch_add(&errors, 1) == 0) {
        pthread_mutex_lock(&err_mu);
        (void)snprintf(err_msg, sizeof(err_msg), "%s (%ld, %ld)", what, a, b);
        pthread_mutex_unlock(&err_mu);
    }
}

#define EXPECT(cond, a, b)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            record_fail(#cond, (long)(a), (long)(b));                                              \
    } while (0)

/* An async operation: counts its wakes. */
struct op {
    band_waiter w; /* first member */
    atomic_int wakes;
    atomic_int status;
};

static void op_wake(band_waiter *w)
{
    struct op *op = (struct op *)(void *)w;
    atomic_store(&op->status, band_waiter_status(w));
    atomic_fetch_add_explicit(&op->wakes, 1, memory_order_release);
}

static void op_init(struct op *op)
{
    band_waiter_init(&op->w, op_wake, op);
    atomic_init(&op->wakes, 0);
    atomic_init(&op->status, 12345);
}

/* Wait (bounded) until @op has had @n wakes. */
static void op_wait_wakes(struct op *op, int n)
{
    band_time give_up = band_deadline_after(HANG_NS);
    while (atomic_load_explicit(&op->wakes, memory_order_acquire) < n) {
        if (band_now() > give_up) {
            record_fail("wake never came", n, atomic_load(&op->wakes));
            return;
        }
        sched_yield();
    }
}

static bool time_left(band_time stop_at)
{
    return band_now() < stop_at && atomic_load(&errors) == 0;
}

/* ------------------------------------------------------------------ group_churn */

struct churn {
    band_group *g;
    band_time stop_at;
    atomic_uint_least64_t pending, ended_by_cancel, waits_ok, waits_timeout;
};

struct churn_worker {
    struct churn *c;
    uint64_t rng;
    struct op op;
};

static int churn_main(void *arg)
{
    struct churn_worker *wk = arg;
    struct churn *c = wk->c;
    int submitted = 0; /* wakes expected on wk->op so far */
    for (int i = 0; i < MAX_ITERS && time_left(c->stop_at); i++) {
        switch (test_rng_next(&wk->rng) % 3) {
        case 0: {
            uint64_t k = test_rng_range(&wk->rng, 1, 4);
            EXPECT(band_group_add(c->g, k) == 0, k, 0);
            for (uint64_t j = 0; j < k; j++) {
                int rc = band_group_done(c->g);
                EXPECT(rc == 0, rc, j);
            }
            break;
        }
        case 1: {
            band_time dl = band_now() + (band_time)test_rng_range(&wk->rng, 0, 50000);
            int rc = band_group_wait(c->g, dl, NULL);
            EXPECT(rc == 0 || rc == BAND_ETIMEDOUT, rc, 0);
            atomic_fetch_add(rc == 0 ? &c->waits_ok : &c->waits_timeout, 1);
            break;
        }
        default: {
            /* Hold a count so the wait queues, then race the done with a cancel. */
            EXPECT(band_group_add(c->g, 1) == 0, 0, 0);
            int rc = band_group_wait_async(c->g, &wk->op.w);
            EXPECT(rc == BAND_PENDING, rc, 0);
            atomic_fetch_add(&c->pending, 1);
            submitted++;
            /* Half of the time the cancel comes first (it must win), else it races the
             * done that releases the wait. */
            int cancel_first = (int)(test_rng_next(&wk->rng) & 1);
            if (cancel_first) {
                rc = band_waiter_cancel(&wk->op.w, BAND_ECANCELED);
                EXPECT(rc == 0, rc, 0);
            }
            EXPECT(band_group_done(c->g) == 0, 0, 0);
            for (uint64_t s = test_rng_range(&wk->rng, 0, 64); s > 0; s--)
                band__cpu_relax();
            if (!cancel_first)
                rc = band_waiter_cancel(&wk->op.w, BAND_ECANCELED);
            if (rc == 0) {
                atomic_fetch_add(&c->ended_by_cancel, 1);
                submitted--;
            } else {
                EXPECT(rc == BAND_EALREADY, rc, 0);
                op_wait_wakes(&wk->op, submitted);
                EXPECT(atomic_load(&wk->op.status) == 0, atomic_load(&wk->op.status), 0);
            }
            EXPECT(atomic_load(&wk->op.wakes) == submitted, atomic_load(&wk->op.wakes), submitted);
            break;
        }
        }
    }
    return 0;
}

static void test_group_churn(void **state)
{
    (void)state;
    struct churn c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(band_group_create(&c.g), 0);
    c.stop_at = band_deadline_after(SCENARIO_NS);
    struct churn_worker wk[NW];
    struct test_thread th[NW];
    for (int i = 0; i < NW; i++) {
        wk[i].c = &c;
        wk[i].rng = 0x1234u + (uint64_t)i;
        op_init(&wk[i].op);
        assert_int_equal(test_thread_start(&th[i], churn_main, &wk[i]), 0);
    }
    for (int i = 0; i < NW; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    if (atomic_load(&errors) != 0)
        fail_msg("group_churn: %s", err_msg);
    band_group_stats st;
    assert_int_equal(band_group_get_stats(c.g, &st), 0);
    assert_u64_equal(st.count, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.misuse, 0);
    assert_u64_equal(st.queued, st.released + st.timeouts + st.cancels);
    assert_u64_equal(st.cancels, atomic_load(&c.ended_by_cancel));
    uint64_t wakes = 0;
    for (int i = 0; i < NW; i++)
        wakes += (uint64_t)atomic_load(&wk[i].op.wakes);
    assert_u64_equal(atomic_load(&c.pending), wakes + atomic_load(&c.ended_by_cancel));
    assert_true(st.timeouts <= atomic_load(&c.waits_timeout));
    printf("group_churn: %llu async waits (%llu cancelled), %llu blocking ok, %llu timed out\n",
           (unsigned long long)atomic_load(&c.pending),
           (unsigned long long)atomic_load(&c.ended_by_cancel),
           (unsigned long long)atomic_load(&c.waits_ok),
           (unsigned long long)atomic_load(&c.waits_timeout));
    assert_int_equal(band_group_destroy(c.g), 0);
}

/* ------------------------------------------------------------------ rounds harness */

/* A coordinator publishes round numbers; workers run one step per round. */
struct rounds {
    atomic_int round;    /* published round; -1 = stop */
    atomic_int finished; /* workers finished with the current round */
    band_group *g;
    band_latch *latch;
    band_shutdown *scope;
    band_sem *sem;
    atomic_int slots[NW];
    atomic_int arrived;
    atomic_int active; /* scope participants between join and leave */
    atomic_int request_returned;
    atomic_uint_least64_t joins_after, watched_ops, scope_wakes;
    atomic_uint_least64_t blocked_ops, blocked_granted, blocked_stopped;
};

struct round_worker {
    struct rounds *r;
    int idx;
    uint64_t rng;
    void (*step)(struct round_worker *wk, int round);
    struct op op;
    band_shutdown_link link;
};

static int round_worker_main(void *arg)
{
    struct round_worker *wk = arg;
    int seen = 0;
    band_time give_up = band_deadline_after(HANG_NS);
    for (;;) {
        int r = atomic_load_explicit(&wk->r->round, memory_order_acquire);
        if (r < 0)
            return 0;
        if (r == seen) {
            if (band_now() > give_up) {
                record_fail("round never published", seen, 0);
                return 0;
            }
            sched_yield();
            continue;
        }
        seen = r;
        give_up = band_deadline_after(HANG_NS);
        wk->step(wk, r);
        atomic_fetch_add_explicit(&wk->r->finished, 1, memory_order_acq_rel);
    }
}

static void wait_finished(struct rounds *r)
{
    band_time give_up = band_deadline_after(HANG_NS);
    while (atomic_load_explicit(&r->finished, memory_order_acquire) < NW) {
        if (band_now() > give_up) {
            record_fail("workers never finished", atomic_load(&r->finished), NW);
            return;
        }
        sched_yield();
    }
}

static void run_rounds(struct rounds *r, void (*step)(struct round_worker *, int),
                       void (*coordinate)(struct rounds *, int, uint64_t *), const char *name)
{
    struct round_worker wk[NW];
    struct test_thread th[NW];
    atomic_init(&r->round, 0);
    atomic_init(&r->finished, 0);
    for (int i = 0; i < NW; i++) {
        wk[i].r = r;
        wk[i].idx = i;
        wk[i].rng = 0xabcdu + (uint64_t)i;
        wk[i].step = step;
        op_init(&wk[i].op);
        band_shutdown_link_init(&wk[i].link);
        assert_int_equal(test_thread_start(&th[i], round_worker_main, &wk[i]), 0);
    }
    band_time stop_at = band_deadline_after(SCENARIO_NS);
    uint64_t rng = 0x5eed;
    int rounds = 0;
    for (int n = 1; n <= MAX_ROUNDS && time_left(stop_at); n++) {
        atomic_store(&r->finished, 0);
        coordinate(r, n, &rng); /* publishes round n, waits for its workers */
        rounds = n;
    }
    atomic_store_explicit(&r->round, -1, memory_order_release);
    for (int i = 0; i < NW; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    if (atomic_load(&errors) != 0)
        fail_msg("%s: %s", name, err_msg);
    printf("%s: %d rounds\n", name, rounds);
}

/* ------------------------------------------------------------------ group_rounds */

static void group_step(struct round_worker *wk, int round)
{
    atomic_store_explicit(&wk->r->slots[wk->idx], round, memory_order_relaxed);
    int rc = band_group_done(wk->r->g);
    EXPECT(rc == 0, rc, round);
}

static void group_coordinate(struct rounds *r, int n, uint64_t *rng)
{
    EXPECT(band_group_add(r->g, NW) == 0, n, 0);
    struct op op;
    op_init(&op);
    int use_async = (int)(test_rng_next(rng) & 1);
    int rc = use_async ? band_group_wait_async(r->g, &op.w) : 0;
    EXPECT(rc == BAND_PENDING || !use_async, rc, n);
    atomic_store_explicit(&r->round, n, memory_order_release);
    if (use_async) {
        op_wait_wakes(&op, 1);
        EXPECT(atomic_load(&op.status) == 0, atomic_load(&op.status), n);
    } else {
        rc = band_group_wait(r->g, band_deadline_after(HANG_NS), NULL);
        EXPECT(rc == 0, rc, n);
    }
    for (int i = 0; i < NW; i++) {
        int s = atomic_load_explicit(&r->slots[i], memory_order_relaxed);
        EXPECT(s == n, s, n); /* released only after every done of the round */
    }
    wait_finished(r);
    EXPECT(atomic_load(&op.wakes) == use_async, atomic_load(&op.wakes), n);
}

static void test_group_rounds(void **state)
{
    (void)state;
    struct rounds r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(band_group_create(&r.g), 0);
    run_rounds(&r, group_step, group_coordinate, "group_rounds");
    band_group_stats st;
    assert_int_equal(band_group_get_stats(r.g, &st), 0);
    assert_u64_equal(st.count, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.queued, st.released);
    assert_int_equal(band_group_destroy(r.g), 0);
}

/* ------------------------------------------------------------------ latch_rounds */

static void latch_step(struct round_worker *wk, int round)
{
    atomic_fetch_add(&wk->r->arrived, 1);
    int rc = band_latch_arrive_and_wait(wk->r->latch, 1, band_deadline_after(HANG_NS), NULL);
    EXPECT(rc == 0, rc, round);
    int a = atomic_load(&wk->r->arrived);
    EXPECT(a == NW, a, round);
    EXPECT(band_latch_try_wait(wk->r->latch) == 0, round, 0);
}

static void latch_coordinate(struct rounds *r, int n, uint64_t *rng)
{
    (void)rng;
    EXPECT(band_latch_create(&r->latch, NW) == 0, n, 0);
    atomic_store(&r->arrived, 0);
    struct op op;
    op_init(&op);
    int rc = band_latch_wait_async(r->latch, &op.w);
    EXPECT(rc == BAND_PENDING, rc, n);
    atomic_store_explicit(&r->round, n, memory_order_release);
    wait_finished(r);
    op_wait_wakes(&op, 1);
    EXPECT(atomic_load(&op.wakes) == 1, atomic_load(&op.wakes), n);
    rc = band_latch_destroy(r->latch);
    EXPECT(rc == 0, rc, n);
}

static void test_latch_rounds(void **state)
{
    (void)state;
    struct rounds r;
    memset(&r, 0, sizeof(r));
    run_rounds(&r, latch_step, latch_coordinate, "latch_rounds");
}

/* ------------------------------------------------------------------ shutdown_rounds */

static void shutdown_step(struct round_worker *wk, int round)
{
    struct rounds *r = wk->r;
    int expected = 0; /* wakes expected on wk->op */
    for (int iter = 0; iter < MAX_ITERS; iter++) {
        int returned_before = atomic_load(&r->request_returned);
        int rc = band_shutdown_join(r->scope);
        if (rc != 0) {
            EXPECT(rc == BAND_ECANCELED, rc, round);
            break;
        }
        EXPECT(!returned_before, round, iter); /* no join after the request returned */
        if (returned_before)
            atomic_fetch_add(&r->joins_after, 1);
        atomic_fetch_add(&r->active, 1);

        op_init(&wk->op);
        expected = 0;
        rc = band_sem_acquire_async(r->sem, 1, &wk->op.w);
        if (rc == 0) {
            EXPECT(band_sem_release(r->sem, 1) == 0, round, 0);
        } else {
            EXPECT(rc == BAND_PENDING, rc, round);
            atomic_fetch_add(&r->watched_ops, 1);
            rc = band_shutdown_watch(r->scope, &wk->link, &wk->op.w);
            if (rc == 0) {
                expected = 1; /* the grant or the scope wakes it, once */
            } else if (rc == BAND_EALREADY) {
                expected = 1; /* granted already */
            } else {
                EXPECT(rc == BAND_ECANCELED, rc, round);
                rc = band_waiter_cancel(&wk->op.w, BAND_ECANCELED);
                EXPECT(rc == 0 || rc == BAND_EALREADY, rc, round);
                expected = rc == 0 ? 0 : 1;
            }
            if (expected) {
                op_wait_wakes(&wk->op, 1);
                if (atomic_load(&wk->op.status) == 0)
                    EXPECT(band_sem_release(r->sem, 1) == 0, round, 0);
                else
                    EXPECT(atomic_load(&wk->op.status) == BAND_ECANCELED,
                           atomic_load(&wk->op.status), round);
            }
            int u = band_shutdown_unwatch(&wk->link);
            EXPECT(u == 0 || u == BAND_EALREADY || u == BAND_EINVAL, u, round);
            /* After unwatch nothing else touches the op: exactly the expected wakes. */
            EXPECT(atomic_load(&wk->op.wakes) == expected, atomic_load(&wk->op.wakes), expected);
        }
        atomic_fetch_sub(&r->active, 1);
        EXPECT(band_shutdown_leave(r->scope) == 0, round, 0);
    }
}

/* Join, block in band_sem_acquire() under the scope's token, leave; until a join is
 * refused. The acquisition is granted (the permit is kept, so the few the coordinator
 * releases are not passed around and every worker ends up blocked), or stopped by the
 * request - never before it: the flag is set before the token is requested. */
static void shutdown_block_step(struct round_worker *wk, int round)
{
    struct rounds *r = wk->r;
    band_cancel *stop = band_shutdown_cancel(r->scope);
    for (int iter = 0; iter < MAX_ITERS; iter++) {
        int rc = band_shutdown_join(r->scope);
        if (rc != 0) {
            EXPECT(rc == BAND_ECANCELED, rc, round);
            break;
        }
        atomic_fetch_add(&r->active, 1);
        atomic_fetch_add(&r->blocked_ops, 1);
        rc = band_sem_acquire(r->sem, 1, BAND_FOREVER, stop);
        if (rc == 0) {
            atomic_fetch_add(&r->blocked_granted, 1);
        } else {
            EXPECT(rc == BAND_ECANCELED, rc, round);
            EXPECT(band_shutdown_is_requested(r->scope), rc, round);
            atomic_fetch_add(&r->blocked_stopped, 1);
        }
        atomic_fetch_sub(&r->active, 1);
        EXPECT(band_shutdown_leave(r->scope) == 0, round, 0);
    }
}

static bool cond_sem_has_waiters(void *arg)
{
    band_sem_stats st;
    return band_sem_get_stats(arg, &st) == 0 && st.waiters > 0;
}

static void shutdown_coordinate(struct rounds *r, int n, uint64_t *rng)
{
    EXPECT(band_shutdown_create(&r->scope) == 0, n, 0);
    EXPECT(band_sem_create(&r->sem, 0, NULL) == 0, n, 0);
    atomic_store(&r->request_returned, 0);
    struct op req, drained;
    op_init(&req);
    op_init(&drained);
    EXPECT(band_shutdown_wait_requested_async(r->scope, &req.w) == BAND_PENDING, n, 0);
    EXPECT(band_shutdown_wait_drained_async(r->scope, &drained.w) == BAND_PENDING, n, 0);
    atomic_store_explicit(&r->round, n, memory_order_release);

    for (uint64_t k = test_rng_range(rng, 0, 3); k > 0; k--) {
        (void)test_wait_until(cond_sem_has_waiters, r->sem, 10 * BAND_MSEC);
        EXPECT(band_sem_release(r->sem, 1) == 0, n, 0);
    }
    for (uint64_t s = test_rng_range(rng, 0, 2000); s > 0; s--)
        band__cpu_relax();
    int rc = band_shutdown_request(r->scope, BAND_ECANCELED);
    EXPECT(rc == 0, rc, n);
    atomic_store(&r->request_returned, 1);
    EXPECT(atomic_load(&req.wakes) == 1, atomic_load(&req.wakes), n);
    rc = band_shutdown_wait_drained(r->scope, band_deadline_after(HANG_NS), NULL);
    EXPECT(rc == 0, rc, n);
    EXPECT(atomic_load(&r->active) == 0, atomic_load(&r->active), n);
    op_wait_wakes(&drained, 1);
    wait_finished(r);
    EXPECT(atomic_load(&drained.wakes) == 1, atomic_load(&drained.wakes), n);
    band_shutdown_stats st;
    EXPECT(band_shutdown_get_stats(r->scope, &st) == 0, n, 0);
    EXPECT(st.watched == 0 && st.participants == 0, st.watched, st.participants);
    atomic_fetch_add(&r->scope_wakes, st.fired_cancelled);
    rc = band_shutdown_destroy(r->scope);
    EXPECT(rc == 0, rc, n);
    EXPECT(band_sem_close(r->sem) == 0, n, 0);
    rc = band_sem_destroy(r->sem);
    EXPECT(rc == 0, rc, n);
}

static void test_shutdown_rounds(void **state)
{
    (void)state;
    struct rounds r;
    memset(&r, 0, sizeof(r));
    run_rounds(&r, shutdown_step, shutdown_coordinate, "shutdown_rounds");
    assert_u64_equal(atomic_load(&r.joins_after), 0);
    printf("shutdown_rounds: %llu watched acquisitions, %llu ended by the scope's cancel\n",
           (unsigned long long)atomic_load(&r.watched_ops),
           (unsigned long long)atomic_load(&r.scope_wakes));
}

static void test_shutdown_cancel_rounds(void **state)
{
    (void)state;
    struct rounds r;
    memset(&r, 0, sizeof(r));
    run_rounds(&r, shutdown_block_step, shutdown_coordinate, "shutdown_cancel_rounds");
    printf("shutdown_cancel_rounds: %llu blocking acquisitions under the scope's token, %llu "
           "granted, %llu stopped by the request\n",
           (unsigned long long)atomic_load(&r.blocked_ops),
           (unsigned long long)atomic_load(&r.blocked_granted),
           (unsigned long long)atomic_load(&r.blocked_stopped));
    assert_u64_equal(atomic_load(&r.blocked_ops),
                     atomic_load(&r.blocked_granted) + atomic_load(&r.blocked_stopped));
    assert_true(atomic_load(&r.blocked_stopped) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_churn),
        cmocka_unit_test(test_group_rounds),
        cmocka_unit_test(test_latch_rounds),
        cmocka_unit_test(test_shutdown_rounds),
        cmocka_unit_test(test_shutdown_cancel_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
