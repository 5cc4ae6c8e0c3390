/* SPDX-License-Identifier: MIT */
/*
 * test_admit.c - multi-budget admission (admit.h): building requests, all-or-nothing try,
 * async grant when the last budget frees up, FIFO across requests and plain acquisitions,
 * order independence, holding nothing while waiting, cancel, close, E2BIG, the grant value
 * (release, release part, adjust with its place kept, reconcile, scoped), blocking with
 * deadlines, wakes that call back into band, counters, and no access to a semaphore
 * after a wake that may have destroyed it.
 *
 * Fixture: budgets A (cap 4), B (cap 4), C (cap 8) and a plain semaphore S (2 permits).
 * Every step checks band__sem_check() on all four.
 */
#include "test.h"

#include <string.h>

#include "admit/admit_internal.h"
#include "prim/sem_internal.h"

struct areq {
    band_admit_req r; /* first: the request's waiter is the first member */
    int id;
    atomic_int count;
    atomic_int status;
    struct wake_log *log;
    void (*hook)(struct areq *q);
    void *ctx;
};

static void areq_wake(band_waiter *w)
{
    struct areq *q = (struct areq *)(void *)w;
    int st = band_waiter_status(w);
    atomic_store(&q->status, st);
    if (q->log != NULL) {
        unsigned i = atomic_fetch_add(&q->log->len, 1u);
        if (i < WAKE_LOG_MAX) {
            q->log->ids[i] = q->id;
            q->log->statuses[i] = st;
        }
    }
    if (q->hook != NULL)
        q->hook(q);
    atomic_fetch_add(&q->count, 1);
}

static void areq_init(struct areq *q, int id, struct wake_log *log)
{
    memset(q, 0, sizeof(*q));
    band_admit_req_init(&q->r, areq_wake, q);
    q->id = id;
    atomic_init(&q->count, 0);
    atomic_init(&q->status, 12345);
    q->log = log;
}

struct fixture {
    band_budget *ba, *bb, *bc;
    band_sem *a, *b, *c, *s;
    struct wake_log log;
    struct areq q[6];
    struct wake_rec rec[4];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_budget_create(&f->ba, 4, NULL) != 0 || band_budget_create(&f->bb, 4, NULL) != 0 ||
        band_budget_create(&f->bc, 8, NULL) != 0 || band_sem_create(&f->s, 2, NULL) != 0)
        return -1;
    f->a = band_budget_sem(f->ba);
    f->b = band_budget_sem(f->bb);
    f->c = band_budget_sem(f->bc);
    wake_log_init(&f->log);
    for (int i = 0; i < 6; i++)
        areq_init(&f->q[i], i, &f->log);
    for (int i = 0; i < 4; i++)
        wake_rec_init(&f->rec[i], 100 + i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int bad = 0;
    bad |= band_budget_destroy(f->ba) != 0;
    bad |= band_budget_destroy(f->bb) != 0;
    bad |= band_budget_destroy(f->bc) != 0;
    bad |= band_sem_destroy(f->s) != 0;
    free(f);
    return bad ? -1 : 0;
}

static band_sem_stats stats_of(const band_sem *s)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    return st;
}

#define CHECK(f)                                                                                   \
    do {                                                                                           \
        assert_int_equal(band__sem_check((f)->a), 0);                                              \
        assert_int_equal(band__sem_check((f)->b), 0);                                              \
        assert_int_equal(band__sem_check((f)->c), 0);                                              \
        assert_int_equal(band__sem_check((f)->s), 0);                                              \
    } while (0)

static void assert_log(struct wake_log *log, const int *ids, unsigned n)
{
    assert_int_equal(atomic_load(&log->len), n);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(log->ids[i], ids[i]);
}

/* Add (sem, amount) pairs to @q; a NULL sem ends the list. */
static void add2(struct areq *q, band_sem *s1, uint64_t n1, band_sem *s2, uint64_t n2)
{
    assert_int_equal(band_admit_req_add(&q->r, s1, n1), 0);
    if (s2 != NULL)
        assert_int_equal(band_admit_req_add(&q->r, s2, n2), 0);
}

/* ---------------------------------------------------------------------------------- */
/* building requests                                                                  */

static void test_req_add_args(void **state)
{
    struct fixture *f = *state;
    struct areq *q = &f->q[0];
    assert_int_equal(band_admit_req_add(NULL, f->a, 1), BAND_EINVAL);
    assert_int_equal(band_admit_req_add(&q->r, NULL, 1), BAND_EINVAL);
    assert_int_equal(band_admit_req_add(&q->r, f->s, BAND_MAX_UNITS + 1), BAND_EINVAL);
    assert_int_equal(q->r.n, 0);

    /* A budget named twice is merged: charged once, with the sum. */
    assert_int_equal(band_admit_req_add(&q->r, f->a, 1), 0);
    assert_int_equal(band_admit_req_add(&q->r, f->a, 2), 0);
    assert_int_equal(q->r.n, 1);
    assert_u64_equal(q->r.e[0].amount, 3);
    assert_int_equal(band_admit_req_add(&q->r, f->s, BAND_MAX_UNITS), 0);
    assert_int_equal(band_admit_req_add(&q->r, f->s, 1), BAND_EOVERFLOW);
    assert_u64_equal(q->r.e[1].amount, BAND_MAX_UNITS); /* unchanged */

    /* At most BAND_ADMIT_MAX budgets. */
    band_sem *extra[BAND_ADMIT_MAX];
    for (int i = 0; i < BAND_ADMIT_MAX; i++)
        assert_int_equal(band_sem_create(&extra[i], 1, NULL), 0);
    for (int i = 0; i < BAND_ADMIT_MAX - 2; i++)
        assert_int_equal(band_admit_req_add(&q->r, extra[i], 1), 0);
    assert_int_equal(q->r.n, BAND_ADMIT_MAX);
    assert_int_equal(band_admit_req_add(&q->r, extra[BAND_ADMIT_MAX - 1], 1), BAND_EINVAL);
    assert_int_equal(band_admit_req_add(&q->r, f->a, 1), 0); /* merging still works */
    for (int i = 0; i < BAND_ADMIT_MAX; i++)
        assert_int_equal(band_sem_destroy(extra[i]), 0);
}

static void test_submit_args(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    assert_int_equal(band_admit_try_acquire(NULL, &g), BAND_EINVAL);
    assert_int_equal(band_admit_try_acquire(&q->r, NULL), BAND_EINVAL);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_EINVAL); /* no budgets */
    assert_int_equal(band_admit_acquire_async(&q->r), BAND_EINVAL);
    assert_int_equal(band_admit_acquire(&q->r, &g, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_admit_acquire_async(NULL), BAND_EINVAL);

    add2(q, f->a, 1, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), 0);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_EINVAL); /* g not empty */
    assert_int_equal(band_admit_release(&g), 0);

    band_admit_req nowake;
    band_admit_req_init(&nowake, NULL, NULL);
    assert_int_equal(band_admit_req_add(&nowake, f->a, 1), 0);
    assert_int_equal(band_admit_acquire_async(&nowake), BAND_EINVAL); /* no wake function */
    assert_int_equal(band_admit_try_acquire(&nowake, &g), 0);         /* try needs none */
    assert_int_equal(band_admit_release(&g), 0);

    /* A pending request cannot be changed or submitted again. */
    struct areq *p = &f->q[1];
    add2(p, f->a, 4, NULL, 0);
    assert_int_equal(band_sem_try_acquire(f->a, 1), 0);
    assert_int_equal(band_admit_acquire_async(&p->r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&p->r), BAND_EINVAL);
    assert_int_equal(band_admit_req_add(&p->r, f->b, 1), BAND_EINVAL);
    assert_int_equal(band_admit_try_acquire(&p->r, &g), BAND_EINVAL);
    assert_int_equal(band_admit_req_grant(&p->r, &g), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&p->r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* try                                                                                */

static void test_try_all_or_nothing(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->a, 2, f->b, 3);
    assert_int_equal(band_sem_try_acquire(f->b, 2), 0); /* B has 2 of 3 */
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_EAGAIN);
    assert_u64_equal(band_sem_available(f->a), 4); /* nothing kept */
    assert_u64_equal(band_sem_available(f->b), 2);
    assert_int_equal(g.n, 0);
    assert_int_equal(band_sem_release(f->b, 2), 0);

    assert_int_equal(band_admit_try_acquire(&q->r, &g), 0);
    assert_u64_equal(band_sem_available(f->a), 2);
    assert_u64_equal(band_sem_available(f->b), 1);
    assert_u64_equal(band_admit_held(&g, f->a), 2);
    assert_u64_equal(band_admit_held(&g, f->b), 3);
    assert_u64_equal(band_admit_held(&g, f->c), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_admit_release(&g), 0); /* idempotent */
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_try_never_overtakes(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    /* A plain waiter on A: A's free units are its, try refuses even though 3 are free. */
    assert_int_equal(band_sem_try_acquire(f->a, 1), 0);
    assert_int_equal(band_sem_acquire_async(f->a, 4, &f->rec[0].w), BAND_PENDING);
    add2(&f->q[0], f->a, 1, f->b, 1);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), BAND_EAGAIN);
    assert_u64_equal(band_sem_available(f->b), 4);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_sem_release(f->a, 4), 0);
    CHECK(f);
}

static void test_e2big_first(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    /* B is busy and A is too small: E2BIG wins, at once, on every path. */
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(q, f->b, 1, f->a, 5);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_E2BIG);
    assert_int_equal(band_admit_acquire(&q->r, &g, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_int_equal(band_admit_acquire_async(&q->r), BAND_E2BIG);
    assert_int_equal(band_waiter_status(&q->r.w), BAND_E2BIG);
    assert_int_equal(atomic_load(&q->count), 0);
    assert_u64_equal(stats_of(f->a).too_big, 3);
    assert_u64_equal(stats_of(f->a).waiters, 0);
    assert_u64_equal(stats_of(f->b).waiters, 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

static void test_closed(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->a, 1, f->b, 1);
    assert_int_equal(band_budget_close(f->bb), 0);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_ECLOSED);
    assert_int_equal(band_admit_acquire(&q->r, &g, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_admit_acquire_async(&q->r), BAND_ECLOSED);
    assert_int_equal(band_waiter_status(&q->r.w), BAND_ECLOSED);
    assert_u64_equal(band_sem_available(f->a), 4); /* nothing kept */
    CHECK(f);
}

static void test_zero_amount(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    /* An amount of 0 charges nothing and never waits, but a closed budget still refuses. */
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 1, f->b, 0);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), 0);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), 0);
    assert_u64_equal(band_admit_held(&g, f->b), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    assert_int_equal(band_budget_close(f->bb), 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), BAND_ECLOSED);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_ECLOSED);
    assert_u64_equal(band_sem_available(f->a), 4);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* async                                                                              */

static void test_async_at_once(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->a, 1, f->c, 8);
    assert_int_equal(band_admit_acquire_async(&q->r), 0);
    assert_int_equal(band_waiter_status(&q->r.w), 0);
    assert_int_equal(atomic_load(&q->count), 0); /* no wake */
    assert_int_equal(band_admit_req_grant(&q->r, &g), 0);
    assert_int_equal(band_admit_req_grant(&q->r, &g), BAND_EINVAL); /* once */
    assert_u64_equal(band_admit_held(&g, f->c), 8);
    assert_u64_equal(band_sem_available(f->c), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

static void test_async_granted_when_last_frees(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    assert_int_equal(band_sem_try_acquire(f->a, 3), 0);
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(q, f->a, 2, f->b, 2);
    assert_int_equal(band_admit_acquire_async(&q->r), BAND_PENDING);
    assert_int_equal(band_waiter_status(&q->r.w), BAND_PENDING);
    CHECK(f);

    /* It holds nothing while it waits: A's free unit is only set aside for the head. */
    band_sem_stats sa = stats_of(f->a);
    assert_u64_equal(sa.in_use, 3);
    assert_u64_equal(sa.head_granted, 1);
    assert_u64_equal(sa.waiters, 1);
    assert_u64_equal(sa.waiting_units, 2);

    assert_int_equal(band_sem_release(f->a, 3), 0); /* A now has enough; B does not */
    assert_int_equal(atomic_load(&q->count), 0);
    assert_u64_equal(stats_of(f->a).head_granted, 4);
    assert_int_equal(band_sem_release(f->b, 1), 0);
    assert_int_equal(atomic_load(&q->count), 0);
    assert_int_equal(band_sem_release(f->b, 1), 0); /* now both: granted on this thread */
    assert_int_equal(atomic_load(&q->count), 1);
    assert_int_equal(atomic_load(&q->status), 0);
    CHECK(f);
    assert_int_equal(band_admit_req_grant(&q->r, &g), 0);
    assert_u64_equal(band_sem_available(f->a), 2);
    assert_u64_equal(band_sem_available(f->b), 0);
    assert_u64_equal(stats_of(f->a).grants, 1);
    assert_u64_equal(stats_of(f->b).grants, 1);
    assert_u64_equal(stats_of(f->a).queued, 1);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->b, 2), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_fifo_across_requests(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g[3] = {BAND_ADMIT_GRANT_INIT, BAND_ADMIT_GRANT_INIT, BAND_ADMIT_GRANT_INIT};
    /* q0 needs A and B (B busy); q1 needs only A (A has room for it); q2 needs C only. */
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 3, f->b, 1);
    add2(&f->q[1], f->a, 1, NULL, 0);
    add2(&f->q[2], f->c, 1, NULL, 0);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING); /* not past q0 on A */
    assert_int_equal(band_admit_acquire_async(&f->q[2].r), 0);            /* C is unrelated */
    assert_int_equal(band_admit_req_grant(&f->q[2].r, &g[2]), 0);
    /* plain acquisitions of A queue behind too */
    assert_int_equal(band_sem_try_acquire(f->a, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_acquire_async(f->a, 1, &f->rec[0].w), BAND_PENDING);
    CHECK(f);

    assert_int_equal(band_sem_release(f->b, 1), 0); /* q0, then q1 from A's rest */
    int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g[0]), 0);
    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g[1]), 0);
    assert_u64_equal(band_sem_available(f->a), 0);
    assert_int_equal(band_admit_release(&g[0]), 0); /* then the plain waiter */
    int order2[] = {0, 1, 100};
    assert_log(&f->log, order2, 3);
    for (int i = 1; i < 3; i++)
        assert_int_equal(band_admit_release(&g[i]), 0);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    assert_int_equal(band_sem_release(f->b, 3), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_plain_waiter_ahead_is_served_first(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_sem_try_acquire(f->a, 4), 0);
    assert_int_equal(band_sem_acquire_async(f->a, 3, &f->rec[0].w), BAND_PENDING);
    add2(&f->q[0], f->a, 1, f->b, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->a, 2), 0); /* partial for rec0 */
    assert_int_equal(atomic_load(&f->log.len), 0);
    assert_int_equal(band_sem_release(f->a, 2), 0); /* rec0 (3), then q0 gets the last */
    int order[] = {100, 0};
    assert_log(&f->log, order, 2);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->a, 3), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_order_independent(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    /* The classic lock-order deadlock: q0 names A then B, q1 names B then A, both full.
     * Neither holds anything while waiting; q0 (older) gets both, then q1. */
    assert_int_equal(band_sem_try_acquire(f->a, 4), 0);
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 4, f->b, 4);
    add2(&f->q[1], f->b, 4, f->a, 4);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
    assert_int_equal(band_sem_release(f->a, 4), 0);
    int one[] = {0};
    assert_log(&f->log, one, 1);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0); /* q1 next */
    int two[] = {0, 1};
    assert_log(&f->log, two, 2);
    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_cascade(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g[3] = {BAND_ADMIT_GRANT_INIT, BAND_ADMIT_GRANT_INIT, BAND_ADMIT_GRANT_INIT};
    assert_int_equal(band_sem_try_acquire(f->c, 8), 0);
    add2(&f->q[0], f->c, 3, f->a, 1);
    add2(&f->q[1], f->c, 3, f->b, 1);
    add2(&f->q[2], f->c, 2, f->a, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_admit_acquire_async(&f->q[i].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->c, 8), 0); /* one release admits all three */
    int order[] = {0, 1, 2};
    assert_log(&f->log, order, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(band_admit_req_grant(&f->q[i].r, &g[i]), 0);
        assert_int_equal(band_admit_release(&g[i]), 0);
    }
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* cancel, close, shrink                                                              */

static void test_cancel(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_sem_try_acquire(f->a, 2), 0);
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 4, f->b, 1); /* head of A with 2 set aside, waits for B */
    add2(&f->q[1], f->a, 2, NULL, 0);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->b, 1, &f->rec[0].w), BAND_PENDING);

    /* Cancelling q0 frees A's head place: q1 is granted on this thread, inside the cancel;
     * q0's node leaves B's queue too (rec0 is now B's head). */
    assert_int_equal(band_waiter_cancel(&f->q[0].r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->q[0].r.w), BAND_ECANCELED);
    assert_int_equal(atomic_load(&f->q[0].count), 0);
    assert_int_equal(atomic_load(&f->q[1].count), 1);
    assert_int_equal(band_waiter_cancel(&f->q[0].r.w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&f->q[1].r.w, BAND_ECANCELED), BAND_EALREADY);
    assert_u64_equal(stats_of(f->a).cancels, 1);
    assert_u64_equal(stats_of(f->b).cancels, 1);
    assert_u64_equal(stats_of(f->b).waiters, 1);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), BAND_EINVAL);
    CHECK(f);

    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->b, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_sem_release(f->a, 2), 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);

    /* A cancelled request can be resubmitted. */
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), 0);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    CHECK(f);
}

static void test_timeout_cancel_counts(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 1, f->b, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->q[0].r.w, BAND_ETIMEDOUT), 0);
    assert_u64_equal(stats_of(f->a).timeouts, 1);
    assert_u64_equal(stats_of(f->b).timeouts, 1);
    assert_u64_equal(band_sem_available(f->a), 4); /* set-aside units went back */
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

static void test_close_fails_request(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    assert_int_equal(band_sem_try_acquire(f->a, 4), 0);
    assert_int_equal(band_sem_acquire_async(f->a, 1, &f->rec[0].w), BAND_PENDING);
    add2(&f->q[0], f->a, 1, f->b, 1);
    add2(&f->q[1], f->a, 1, NULL, 0);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->a, 1), 0); /* rec0 */

    /* Closing B fails q0 (its wake runs inside the close); A's queue moves on to q1. */
    assert_int_equal(band_budget_close(f->bb), 0);
    assert_int_equal(atomic_load(&f->q[0].count), 1);
    assert_int_equal(atomic_load(&f->q[0].status), BAND_ECLOSED);
    assert_u64_equal(stats_of(f->a).waiters, 1);
    assert_u64_equal(stats_of(f->b).waiters, 0);
    assert_u64_equal(stats_of(f->b).closed_fails, 1);
    CHECK(f);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    assert_int_equal(atomic_load(&f->q[1].count), 1);
    assert_int_equal(atomic_load(&f->q[1].status), 0);
    assert_int_equal(band_sem_release(f->a, 1), 0); /* q1's unit (taken from its req) */
    assert_int_equal(band_sem_release(f->a, 3), 0);
    assert_int_equal(band_sem_release(f->b, 4), 0); /* held units return after close */
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

static void test_close_head_with_set_aside(void **state)
{
    struct fixture *f = *state;
    /* q0 is A's head with units set aside; closing A fails it and the units stay. */
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 2, f->b, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_u64_equal(stats_of(f->a).head_granted, 4);
    assert_int_equal(band_budget_close(f->ba), 0);
    assert_int_equal(atomic_load(&f->q[0].status), BAND_ECLOSED);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(stats_of(f->b).waiters, 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

static void test_shrink_fails_too_big(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_try_acquire(f->c, 8), 0);
    add2(&f->q[0], f->c, 6, f->a, 1);
    add2(&f->q[1], f->c, 2, f->a, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_int_equal(band_budget_shrink(f->bc, 3), 0); /* capacity 5: q0 can never fit */
    assert_int_equal(atomic_load(&f->q[0].count), 1);
    assert_int_equal(atomic_load(&f->q[0].status), BAND_E2BIG);
    assert_int_equal(atomic_load(&f->q[1].count), 0);
    assert_u64_equal(stats_of(f->a).head_granted, 4); /* set aside for q1, A's head now */
    assert_u64_equal(stats_of(f->c).waiters, 1);
    CHECK(f);
    assert_int_equal(band_sem_release(f->c, 8), 0); /* repays the debt of 3, q1 gets 2 */
    assert_int_equal(atomic_load(&f->q[1].status), 0);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->c), 5);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* the grant                                                                          */

static void test_release_part(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->a, 3, f->c, 5);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_release_part(&g, f->a, 4), BAND_EINVAL);
    assert_int_equal(band_admit_release_part(&g, f->b, 1), BAND_EINVAL);
    assert_int_equal(band_admit_release_part(NULL, f->a, 1), BAND_EINVAL);
    assert_int_equal(band_admit_release_part(&g, f->a, 3), 0); /* all of A, early */
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_admit_held(&g, f->a), 0);
    assert_int_equal(band_admit_release_part(&g, f->c, 2), 0);
    assert_u64_equal(band_sem_available(f->c), 5);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    assert_int_equal(g.n, 0);
    CHECK(f);
}

static void test_adjust_down_and_up(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->a, 1, f->c, 6); /* estimate 6 of C */
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_sem_acquire_async(f->c, 3, &f->rec[0].w), BAND_PENDING);

    /* Surplus returned at once: the waiter gets it. */
    assert_int_equal(band_admit_adjust(&g, f->c, 5, 0, NULL), 0); /* 2 set aside + 1 */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_admit_adjust(&g, f->c, 4, 0, NULL), 0);
    assert_u64_equal(band_sem_available(f->c), 1);
    assert_u64_equal(band_admit_held(&g, f->c), 4);

    assert_int_equal(band_admit_adjust(&g, f->c, 9, 0, NULL), BAND_E2BIG);
    assert_int_equal(band_admit_adjust(&g, f->b, 1, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_admit_adjust(&g, f->c, 6, 0, NULL), BAND_ETIMEDOUT); /* 1 free, 2 short */
    assert_u64_equal(band_admit_held(&g, f->c), 4);
    assert_int_equal(band_admit_adjust(&g, f->c, 5, 0, NULL), 0); /* shortfall of 1, free now */
    assert_u64_equal(band_sem_available(f->c), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->c, 3), 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

static void test_adjust_keeps_place(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->c, 4, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    /* Later requests queue on C: a plain waiter (partially served) and a request. */
    assert_int_equal(band_sem_try_acquire(f->c, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->c, 3, &f->rec[0].w), BAND_PENDING);
    add2(&f->q[1], f->c, 1, NULL, 0);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_u64_equal(stats_of(f->c).head_granted, 1);

    /* Adjusting up by 1 takes the unit set aside for the head: the grant ranks first. */
    assert_int_equal(band_admit_adjust(&g, f->c, 5, 0, NULL), 0);
    assert_u64_equal(stats_of(f->c).head_granted, 0);
    /* Surplus back: the waiters proceed in order. */
    assert_int_equal(band_sem_release(f->c, 3), 0);
    int order[] = {100};
    assert_log(&f->log, order, 1);
    assert_int_equal(band_admit_release(&g), 0);
    int order2[] = {100, 1};
    assert_log(&f->log, order2, 2);
    band_admit_grant g1 = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g1), 0);
    assert_int_equal(band_admit_release(&g1), 0);
    assert_int_equal(band_sem_release(f->c, 3), 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

struct adj_arg {
    band_admit_grant *g;
    band_sem *s;
    uint64_t amount;
};

static int adjust_thread(void *arg)
{
    struct adj_arg *a = arg;
    return band_admit_adjust(a->g, a->s, a->amount, band_deadline_after(10 * BAND_SEC), NULL);
}

static void test_adjust_waits_at_front(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->c, 2, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_sem_try_acquire(f->c, 6), 0);
    assert_int_equal(band_sem_acquire_async(f->c, 1, &f->rec[0].w), BAND_PENDING);

    struct adj_arg a = {&g, f->c, 4};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, adjust_thread, &a), 0);
    struct sem_waiters_cond cond = {f->c, 2};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    /* The shortfall of 2 is served before rec0, which queued first. */
    assert_int_equal(band_sem_release(f->c, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_sem_release(f->c, 1), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_u64_equal(band_admit_held(&g, f->c), 4);
    assert_int_equal(band_sem_release(f->c, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->c, 3), 0); /* the rest of the 6 */
    assert_int_equal(band_sem_release(f->c, 1), 0); /* rec0's */
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

static void test_adjust_closed(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->a, 2, f->b, 1);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_budget_close(f->ba), 0);
    assert_int_equal(band_admit_adjust(&g, f->a, 3, 0, NULL), BAND_ECLOSED); /* no new units */
    assert_int_equal(band_admit_adjust(&g, f->a, 1, 0, NULL), 0); /* returns still work */
    assert_u64_equal(band_admit_held(&g, f->a), 1);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* reconcile: estimate, then charge what was used                                     */

static void test_reconcile_surplus(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->a, 3, f->c, 5);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_sem_acquire_async(f->c, 4, &f->rec[0].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->c).head_granted, 3);
    /* The work used 4 of the 5: the surplus goes to the waiter at once. */
    assert_int_equal(band_admit_reconcile(&g, f->c, 4), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_u64_equal(band_admit_held(&g, f->c), 4);
    assert_u64_equal(band_sem_available(f->c), 0);
    assert_int_equal(band_admit_reconcile(&g, f->c, 4), 0); /* no change */
    assert_u64_equal(band_admit_held(&g, f->c), 4);
    /* Used none of A: all returned, A stays named with count 0. */
    assert_int_equal(band_admit_reconcile(&g, f->a, 0), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_admit_held(&g, f->a), 0);
    assert_int_equal(g.n, 2);
    /* ... and can be charged again from 0. */
    assert_int_equal(band_admit_reconcile(&g, f->a, 2), 0);
    assert_u64_equal(band_sem_available(f->a), 2);
    assert_u64_equal(stats_of(f->a).debt, 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_int_equal(band_sem_release(f->c, 4), 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

static void test_reconcile_shortfall_is_debt(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->a, 2, f->c, 1);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    /* The work used 7 of A (capacity 4): the 2 available are taken, 3 are owed. */
    assert_int_equal(band_admit_reconcile(&g, f->a, 7), 0);
    assert_u64_equal(band_admit_held(&g, f->a), 7);
    band_sem_stats st = stats_of(f->a);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.in_use, 7);
    assert_u64_equal(st.capacity, 4);
    assert_int_equal(band_sem_try_acquire(f->a, 1), BAND_EAGAIN);
    /* Later requests wait until the debt is repaid, in order. */
    add2(&f->q[1], f->a, 1, f->c, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[1].r), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->a, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_admit_release_part(&g, f->a, 3), 0); /* repays the debt only */
    assert_u64_equal(stats_of(f->a).debt, 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
    assert_int_equal(band_admit_release_part(&g, f->a, 1), 0);
    int one[] = {1};
    assert_log(&f->log, one, 1);
    assert_int_equal(band_admit_release_part(&g, f->a, 1), 0);
    int two[] = {1, 100};
    assert_log(&f->log, two, 2);
    assert_int_equal(band_admit_release(&g), 0); /* the last 2 */
    assert_u64_equal(band_sem_available(f->a), 2);
    band_admit_grant g1 = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_req_grant(&f->q[1].r, &g1), 0);
    assert_int_equal(band_admit_release(&g1), 0);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    st = stats_of(f->a);
    assert_u64_equal(st.available, 4);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(band_sem_available(f->c), 8);
    CHECK(f);
}

static void test_reconcile_never_waits(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->b, 2, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_sem_try_acquire(f->b, 2), 0);
    assert_int_equal(band_sem_acquire_async(f->b, 3, &f->rec[0].w), BAND_PENDING);
    /* A waiter is queued and nothing is available: the shortfall is all debt, at once. */
    band_time t0 = band_now();
    assert_int_equal(band_admit_reconcile(&g, f->b, 4), 0);
    assert_true(band_now() - t0 < 5 * BAND_SEC);
    band_sem_stats st = stats_of(f->b);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    /* A closed budget still records what was used. */
    assert_int_equal(band_budget_close(f->bb), 0);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECLOSED);
    assert_int_equal(band_admit_reconcile(&g, f->b, 6), 0);
    assert_u64_equal(stats_of(f->b).debt, 4);
    assert_int_equal(band_admit_release(&g), 0); /* 6: the debt of 4, then 2 available */
    assert_u64_equal(band_sem_available(f->b), 2);
    assert_int_equal(band_sem_release(f->b, 2), 0);
    st = stats_of(f->b);
    assert_u64_equal(st.available, 4);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

static void test_reconcile_args(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    add2(&f->q[0], f->s, 1, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_reconcile(NULL, f->s, 1), BAND_EINVAL);
    assert_int_equal(band_admit_reconcile(&g, NULL, 1), BAND_EINVAL);
    assert_int_equal(band_admit_reconcile(&g, f->a, 1), BAND_EINVAL); /* not named */
    assert_int_equal(band_admit_reconcile(&g, f->s, BAND_MAX_UNITS + 1), BAND_EINVAL);
    assert_u64_equal(band_admit_held(&g, f->s), 1);
    assert_u64_equal(band_sem_available(f->s), 1);
    /* The debt may not pass the maximum: S owes all but one unit of it. */
    assert_int_equal(band_sem_reduce(f->s, BAND_MAX_UNITS), 0);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS - 1);
    assert_int_equal(band_admit_reconcile(&g, f->s, 3), BAND_EOVERFLOW);
    assert_u64_equal(band_admit_held(&g, f->s), 1);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS - 1);
    assert_int_equal(band_admit_reconcile(&g, f->s, 2), 0);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS - 2);
    CHECK(f);
}

static int scoped_user(struct fixture *f, int fail)
{
    BAND_SCOPED_ADMIT band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    if (band_admit_try_acquire(&f->q[0].r, &g) != 0)
        return -1;
    if (band_sem_available(f->a) != 2)
        return -2;
    if (fail)
        return 1; /* released here */
    return 0;     /* and here */
}

static void test_scoped(void **state)
{
    struct fixture *f = *state;
    add2(&f->q[0], f->a, 2, f->s, 2);
    assert_int_equal(scoped_user(f, 1), 1);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->s), 2);
    assert_int_equal(scoped_user(f, 0), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->s), 2);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* blocking                                                                           */

static void test_blocking_deadline(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 1, f->b, 1);
    assert_int_equal(band_admit_acquire(&f->q[0].r, &g, 0, NULL),
                     BAND_ETIMEDOUT); /* past: no wait */
    assert_u64_equal(stats_of(f->a).queued, 0);
    band_time t0 = band_now();
    assert_int_equal(band_admit_acquire(&f->q[0].r, &g, band_deadline_after(20 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    assert_int_equal(g.n, 0);
    assert_u64_equal(stats_of(f->a).timeouts, 1);
    assert_u64_equal(band_sem_available(f->a), 4);
    /* the request's own wake and data are intact */
    assert_ptr_equal(f->q[0].r.w.wake, areq_wake);
    assert_ptr_equal(f->q[0].r.w.data, &f->q[0]);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    assert_int_equal(band_admit_acquire(&f->q[0].r, &g, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_admit_release(&g), 0);
    CHECK(f);
}

/* The blocking spin shares its budgets' adaptive spin: a spin that runs out with the units
 * still held halves the budget of the semaphore that refused, and only that one. */
static void test_blocking_spin_learns(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_sem_try_acquire(f->s, 2), 0);
    band__sem_spin_learn(f->s, 20 * BAND_USEC); /* f->s spins 40 us, f->a 1 us (the floor) */
    assert_int_equal(band__sem_spin_budget_ns(f->s), 40000);
    assert_int_equal(band__sem_spin_budget_ns(f->a), 1000);
    add2(&f->q[0], f->a, 1, f->s, 1);
    /* a past deadline does not spin, so it teaches nothing */
    assert_int_equal(band_admit_acquire(&f->q[0].r, &g, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band__sem_spin_budget_ns(f->s), 40000);
    /* the spin runs out (the deadline is far beyond 40 us), then the wait times out */
    assert_int_equal(band_admit_acquire(&f->q[0].r, &g, band_deadline_after(200 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_int_equal(g.n, 0);
    assert_int_equal(band__sem_spin_budget_ns(f->s), 20000);
    assert_int_equal(band__sem_spin_budget_ns(f->a), 1000);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_int_equal(band_sem_release(f->s, 2), 0);
    CHECK(f);
}

/* band_admit_try_acquire() and band_admit_release() over one budget are inline (admit.h):
 * every case outside the plain uncontended one answers as the exported functions do. */
static void test_inline_single_budget(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT, other = BAND_ADMIT_GRANT_INIT;
#if defined(__GNUC__) || defined(__clang__)
    assert_int_equal(BAND_ADMIT_HAVE_INLINE, 1);
#endif
    add2(&f->q[0], f->s, 1, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), 0);
    assert_int_equal(g.n, 1);
    assert_ptr_equal(g.p[0].sem, f->s);
    assert_u64_equal(g.p[0].count, 1);
    assert_u64_equal(band_sem_available(f->s), 1);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), BAND_EINVAL); /* g not empty */
    assert_int_equal(band_admit_try_acquire(NULL, &other), BAND_EINVAL);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, NULL), BAND_EINVAL);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(g.n, 0);
    assert_ptr_equal(g.p[0].sem, NULL);
    assert_u64_equal(g.p[0].count, 0);
    assert_u64_equal(band_sem_available(f->s), 2);
    assert_int_equal(band_admit_release(&g), 0); /* empty: idempotent */
    assert_int_equal(band_admit_release(NULL), BAND_EINVAL);

    /* refused: counted once in try_refusals, by the exported function */
    assert_int_equal(band_sem_try_acquire(f->s, 2), 0);
    uint64_t refusals = stats_of(f->s).try_refusals;
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), BAND_EAGAIN);
    assert_u64_equal(stats_of(f->s).try_refusals, refusals + 1);
    assert_int_equal(g.n, 0);

    /* pending: refused as the exported function refuses it, nothing taken */
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_admit_try_acquire(&f->q[0].r, &g), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&f->q[0].r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_sem_release(f->s, 2), 0);

    /* a budget's release checks its capacity out of line: same outcome */
    struct areq *q = &f->q[1];
    add2(q, f->a, 3, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), 0);
    assert_u64_equal(band_sem_available(f->a), 1);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_int_equal(g.n, 0);

    /* too big for the budget: BAND_E2BIG from the exported function */
    struct areq *big = &f->q[2];
    add2(big, f->a, 5, NULL, 0);
    assert_int_equal(band_admit_try_acquire(&big->r, &g), BAND_E2BIG);

    /* taking the address yields the exported functions, with the same answers */
    int (*try_fn)(band_admit_req *, band_admit_grant *) = band_admit_try_acquire;
    int (*release_fn)(band_admit_grant *) = band_admit_release;
    assert_int_equal(try_fn(&q->r, &g), 0);
    assert_u64_equal(band_sem_available(f->a), 1);
    assert_int_equal(release_fn(&g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    CHECK(f);
}

struct admit_arg {
    band_admit_req *r;
    band_admit_grant g;
};

static int admit_thread(void *arg)
{
    struct admit_arg *a = arg;
    return band_admit_acquire(a->r, &a->g, band_deadline_after(10 * BAND_SEC), NULL);
}

static void test_blocking_granted(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->b, 2, f->a, 3);
    struct admit_arg a = {&f->q[0].r, BAND_ADMIT_GRANT_INIT};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, admit_thread, &a), 0);
    struct sem_waiters_cond cond = {f->b, 1};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    assert_int_equal(band_sem_release(f->b, 4), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(band_admit_held(&a.g, f->a), 3);
    assert_u64_equal(band_admit_held(&a.g, f->b), 2);
    assert_int_equal(band_admit_release(&a.g), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back                                                               */

static void release_in_wake(struct areq *q)
{
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    if (band_admit_req_grant(&q->r, &g) == 0)
        (void)band_admit_release(&g); /* admits the next request from inside a wake */
}

static void test_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_try_acquire(f->a, 4), 0);
    for (int i = 0; i < 3; i++) {
        add2(&f->q[i], f->a, 4, f->b, 4);
        f->q[i].hook = release_in_wake;
        assert_int_equal(band_admit_acquire_async(&f->q[i].r), BAND_PENDING);
    }
    assert_int_equal(band_sem_release(f->a, 4), 0);
    int order[] = {0, 1, 2};
    assert_log(&f->log, order, 3);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* plain semaphore and debt                                                           */

static void test_plain_sem_and_debt(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    /* A debt on S is repaid before the request. */
    assert_int_equal(band_sem_reduce(f->s, 3), 0); /* 2 available taken, owes 1 */
    add2(&f->q[0], f->s, 1, f->a, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->s, 1), 0);
    assert_int_equal(atomic_load(&f->q[0].count), 0);
    assert_int_equal(band_sem_release(f->s, 1), 0);
    assert_int_equal(atomic_load(&f->q[0].count), 1);
    assert_int_equal(band_admit_req_grant(&f->q[0].r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(f->s), 1);
    CHECK(f);
}

static void test_release_overflow_with_request(void **state)
{
    struct fixture *f = *state;
    /* A budget refuses releases of units nobody held, also while a request waits. */
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], f->a, 1, f->b, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_int_equal(band_sem_release(f->a, 1), BAND_EOVERFLOW);
    assert_u64_equal(stats_of(f->a).head_granted, 4);
    assert_int_equal(band_waiter_cancel(&f->q[0].r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* nothing touches a semaphore after the wakes                                        */

struct cancel_destroy {
    band_sem *x;
    band_admit_req *r;
    int cancel_rc, destroy_rc;
};

static void cancel_then_destroy(struct wake_rec *rec)
{
    struct cancel_destroy *cd = rec->ctx;
    cd->cancel_rc = band_waiter_cancel(&cd->r->w, BAND_ECANCELED);
    cd->destroy_rc = band_sem_destroy(cd->x);
}

static void test_wake_cancels_request_and_destroys_sem(void **state)
{
    struct fixture *f = *state;
    /* X's queue: a plain waiter, then q0's node (q0 also waits for B). A release of 2
     * grants the plain waiter and sets 1 aside for q0, which covers it there. The plain
     * waiter's wake cancels q0 and destroys X, now idle: the release may not touch X
     * after that wake, not even to have q0 evaluated (AddressSanitizer checks). */
    band_sem *x;
    assert_int_equal(band_sem_create(&x, 0, NULL), 0);
    struct cancel_destroy cd = {x, &f->q[0].r, 12345, 12345};
    f->rec[0].hook = cancel_then_destroy;
    f->rec[0].ctx = &cd;
    assert_int_equal(band_sem_acquire_async(x, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    add2(&f->q[0], x, 1, f->b, 1);
    assert_int_equal(band_admit_acquire_async(&f->q[0].r), BAND_PENDING);
    assert_u64_equal(stats_of(x).waiters, 2);
    assert_int_equal(band_sem_release(x, 2), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_int_equal(cd.cancel_rc, 0);
    assert_int_equal(cd.destroy_rc, 0);
    assert_int_equal(atomic_load(&f->q[0].count), 0); /* cancelled: no wake */
    assert_int_equal(band_waiter_status(&f->q[0].r.w), BAND_ECANCELED);
    assert_u64_equal(stats_of(f->b).waiters, 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* the lock-free path: a budget's word that moves between the check and the CAS        */

enum race_act { RACE_TAKE, RACE_CLOSE, RACE_TRANSIENT };

struct race {
    band_sem *target; /* the hook acts when the admission is about to CAS this one */
    enum race_act act;
    uint64_t n;
    int fired;
    /* RACE_TRANSIENT: what the admission's partial take looks like from outside */
    band_sem *other;
    struct wake_rec *rec;
    int try_rc, async_rc;
};

static void race_hook(band_sem *s, void *arg)
{
    struct race *x = arg;
    if (s != x->target || x->fired)
        return;
    x->fired = 1;
    switch (x->act) {
    case RACE_TAKE:
        assert_int_equal(band_sem_try_acquire(s, x->n), 0);
        break;
    case RACE_CLOSE:
        assert_int_equal(band_sem_close(s), 0);
        break;
    case RACE_TRANSIENT:
        x->try_rc = band_sem_try_acquire(x->other, 3);
        x->async_rc = band_sem_acquire_async(x->other, 4, &x->rec->w);
        assert_int_equal(band_sem_try_acquire(s, x->n), 0);
        break;
    }
}

static int race_try(struct race *x, band_admit_req *r, band_admit_grant *g)
{
    band__admit_fast_hook = race_hook;
    band__admit_fast_hook_arg = x;
    int rc = (band_admit_try_acquire)(r, g); /* the exported path, where the hook sits */
    band__admit_fast_hook = NULL;
    band__admit_fast_hook_arg = NULL;
    assert_int_equal(x->fired, 1);
    return rc;
}

static void test_fast_word_moves(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->b, 3, f->a, 2); /* the take goes from the last entry to the first: A, then B */

    /* A was taken, B no longer has 3: A goes back, B's refusal is counted, nothing held. */
    struct race x = {f->b, RACE_TAKE, 2, 0, NULL, NULL, 0, 0};
    assert_int_equal(race_try(&x, &q->r, &g), BAND_EAGAIN);
    assert_int_equal(g.n, 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 2);
    assert_u64_equal(stats_of(f->a).try_refusals, 0);
    assert_u64_equal(stats_of(f->b).try_refusals, 1);
    assert_int_equal(band_sem_release(f->b, 2), 0);
    CHECK(f);

    /* B moved but still has enough: the CAS is retried and the admission succeeds. */
    struct race y = {f->b, RACE_TAKE, 1, 0, NULL, NULL, 0, 0};
    assert_int_equal(race_try(&y, &q->r, &g), 0);
    assert_u64_equal(band_admit_held(&g, f->a), 2);
    assert_u64_equal(band_admit_held(&g, f->b), 3);
    assert_u64_equal(band_sem_available(f->b), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->b, 1), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(band_sem_available(f->b), 4);
    CHECK(f);

    /* B closed in between: BAND_ECLOSED, A given back. */
    struct race z = {f->b, RACE_CLOSE, 0, 0, NULL, NULL, 0, 0};
    assert_int_equal(race_try(&z, &q->r, &g), BAND_ECLOSED);
    assert_int_equal(g.n, 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    assert_u64_equal(stats_of(f->a).try_refusals, 0);
    CHECK(f);
}

static void test_fast_word_moves_one_budget(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->a, 3, NULL, 0);
    struct race x = {f->a, RACE_TAKE, 2, 0, NULL, NULL, 0, 0};
    assert_int_equal(race_try(&x, &q->r, &g), BAND_EAGAIN);
    assert_u64_equal(band_sem_available(f->a), 2);
    assert_u64_equal(stats_of(f->a).try_refusals, 1);
    assert_int_equal(band_sem_release(f->a, 2), 0);
    struct race y = {f->a, RACE_TAKE, 1, 0, NULL, NULL, 0, 0};
    assert_int_equal(race_try(&y, &q->r, &g), 0);
    assert_u64_equal(band_sem_available(f->a), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_sem_release(f->a, 1), 0);
    assert_u64_equal(band_sem_available(f->a), 4);
    CHECK(f);
}

/* Records the budgets the lock-free admission is about to CAS, and what each had then. */
struct cas_log {
    int n;
    band_sem *sem[4];
    uint64_t avail[4];
};

static void cas_log_hook(band_sem *s, void *arg)
{
    struct cas_log *l = arg;
    if (l->n < 4) {
        l->sem[l->n] = s;
        l->avail[l->n] = band_sem_available(s);
    }
    l->n++;
}

/*
 * The take goes from the last entry to the first, and a blocking admission takes the
 * last entry (its gate) as soon as that word passes, before it reads the others: when one
 * of them refuses, the gate's units go back (a release), and nothing is kept. A try reads
 * every word first and takes nothing at all when one refuses.
 */
static void test_blocking_takes_gate_first(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->b, 3, f->a, 2);                          /* A is the gate */
    assert_int_equal(band_sem_try_acquire(f->b, 2), 0); /* B has 2 of the 3 */
    struct cas_log l = {0};
    band__admit_fast_hook = cas_log_hook;
    band__admit_fast_hook_arg = &l;
    uint64_t gave = atomic_load(&band__admit_fast_gave_back);
    assert_int_equal((band_admit_try_acquire)(&q->r, &g), BAND_EAGAIN);
    assert_int_equal(l.n, 0); /* refused at B's check: no CAS */
    assert_u64_equal(atomic_load(&band__admit_fast_gave_back), gave);
    assert_int_equal(band_admit_acquire(&q->r, &g, band_now() - 1, NULL), BAND_ETIMEDOUT);
    band__admit_fast_hook = NULL;
    band__admit_fast_hook_arg = NULL;
    assert_int_equal(l.n, 1); /* the gate's CAS only: B refused after it */
    assert_ptr_equal(l.sem[0], f->a);
    assert_u64_equal(l.avail[0], 4);
    assert_u64_equal(atomic_load(&band__admit_fast_gave_back), gave + 1);
    assert_int_equal(g.n, 0);
    assert_u64_equal(band_sem_available(f->a), 4); /* given back */
    assert_u64_equal(band_sem_available(f->b), 2);
    assert_u64_equal(stats_of(f->a).try_refusals, 0);
    assert_u64_equal(stats_of(f->b).try_refusals, 1); /* the try's */
    assert_int_equal(band_sem_release(f->b, 2), 0);
    /* with B free again, the blocking admission takes A, then B */
    l.n = 0;
    band__admit_fast_hook = cas_log_hook;
    band__admit_fast_hook_arg = &l;
    assert_int_equal(band_admit_acquire(&q->r, &g, band_now() - 1, NULL), 0);
    band__admit_fast_hook = NULL;
    band__admit_fast_hook_arg = NULL;
    assert_int_equal(l.n, 2);
    assert_ptr_equal(l.sem[0], f->a);
    assert_ptr_equal(l.sem[1], f->b);
    assert_u64_equal(band_admit_held(&g, f->a), 2);
    assert_u64_equal(band_admit_held(&g, f->b), 3);
    assert_int_equal(band_admit_release(&g), 0);
    CHECK(f);
}

/* Only a try counts its refusal in try_refusals, as a plain semaphore counts only its
 * try_acquire calls: async and blocking admissions that find a budget busy count nothing. */
static void test_only_try_counts_refusals(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->a, 1, f->b, 1);
    assert_int_equal(band_sem_try_acquire(f->b, 4), 0);
    assert_int_equal(band_admit_acquire(&q->r, &g, band_now() - 1, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_admit_acquire(&q->r, &g, band_deadline_after(BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_int_equal(band_admit_acquire_async(&q->r), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&q->r.w, BAND_ECANCELED), 0);
    assert_u64_equal(stats_of(f->b).try_refusals, 0);
    assert_int_equal(band_admit_try_acquire(&q->r, &g), BAND_EAGAIN);
    assert_u64_equal(stats_of(f->b).try_refusals, 1);
    assert_u64_equal(stats_of(f->a).try_refusals, 0);
    assert_int_equal(band_sem_release(f->b, 4), 0);
    CHECK(f);
}

/*
 * What a partial take looks like from outside, while the admission is about to give it
 * back: a plain try on A is refused and a plain acquisition queues, as if this thread had
 * acquired and released A. The give-back is a release, so it goes to that waiter at once.
 */
static void test_fast_partial_take_is_a_release(void **state)
{
    struct fixture *f = *state;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct areq *q = &f->q[0];
    add2(q, f->b, 3, f->a, 2); /* A is taken first */
    struct race x = {f->b, RACE_TRANSIENT, 2, 0, f->a, &f->rec[0], 0, 0};
    assert_int_equal(race_try(&x, &q->r, &g), BAND_EAGAIN);
    assert_int_equal(x.try_rc, BAND_EAGAIN);            /* 2 of A's 4 were out for a moment */
    assert_int_equal(x.async_rc, BAND_PENDING);         /* ... so this queued */
    assert_int_equal(atomic_load(&f->rec[0].count), 1); /* the give-back granted it */
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_int_equal(g.n, 0);
    assert_u64_equal(band_sem_available(f->a), 0);
    assert_u64_equal(stats_of(f->a).waiters, 0);
    assert_u64_equal(stats_of(f->a).in_use, 4);
    assert_int_equal(band_sem_release(f->a, 4), 0);
    assert_int_equal(band_sem_release(f->b, 2), 0);
    CHECK(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_req_add_args),
        T(test_submit_args),
        T(test_try_all_or_nothing),
        T(test_try_never_overtakes),
        T(test_fast_word_moves),
        T(test_fast_word_moves_one_budget),
        T(test_fast_partial_take_is_a_release),
        T(test_blocking_takes_gate_first),
        T(test_only_try_counts_refusals),
        T(test_e2big_first),
        T(test_closed),
        T(test_zero_amount),
        T(test_async_at_once),
        T(test_async_granted_when_last_frees),
        T(test_fifo_across_requests),
        T(test_plain_waiter_ahead_is_served_first),
        T(test_order_independent),
        T(test_cascade),
        T(test_cancel),
        T(test_timeout_cancel_counts),
        T(test_close_fails_request),
        T(test_close_head_with_set_aside),
        T(test_shrink_fails_too_big),
        T(test_release_part),
        T(test_adjust_down_and_up),
        T(test_adjust_keeps_place),
        T(test_adjust_waits_at_front),
        T(test_adjust_closed),
        T(test_reconcile_surplus),
        T(test_reconcile_shortfall_is_debt),
        T(test_reconcile_never_waits),
        T(test_reconcile_args),
        T(test_scoped),
        T(test_blocking_deadline),
        T(test_blocking_granted),
        T(test_blocking_spin_learns),
        T(test_inline_single_budget),
        T(test_wake_calls_back),
        T(test_plain_sem_and_debt),
        T(test_release_overflow_with_request),
        T(test_wake_cancels_request_and_destroys_sem),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
