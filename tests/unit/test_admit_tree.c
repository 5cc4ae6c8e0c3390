/* SPDX-License-Identifier: MIT */
/*
 * test_admit_tree.c - capacity hierarchies (band/cap_tree.h): creation rules, one
 * admission charging a leaf and all its ancestors, caps at every level, work-conserving
 * borrowing of unused reservations, guaranteed requests served before borrowers with the
 * next freed capacity (nothing revoked), the guaranteed budget counting queued requests,
 * plain acquisitions ranking as borrowers, and paths too long for one request.
 *
 * Fixture: root (cap 10) with tenants t1 (cap 10, reserve 4) and t2 (cap 10, reserve 4);
 * t1 has a leaf p1 (cap 6, no reservation of its own). Deterministic, single-threaded.
 */
#include "test.h"

#include <string.h>

#include "prim/sem_internal.h"

struct areq {
    band_admit_req r;
    int id;
    atomic_int count;
    atomic_int status;
    struct wake_log *log;
};

static void areq_wake(band_waiter *w)
{
    struct areq *q = (struct areq *)(void *)w;
    int st = band_waiter_status(w);
    atomic_store(&q->status, st);
    unsigned i = atomic_fetch_add(&q->log->len, 1u);
    if (i < WAKE_LOG_MAX) {
        q->log->ids[i] = q->id;
        q->log->statuses[i] = st;
    }
    atomic_fetch_add(&q->count, 1);
}

struct fixture {
    band_cap_tree *root, *t1, *t2, *p1;
    struct wake_log log;
    struct areq q[6];
    band_admit_grant g[6];
    struct wake_rec rec;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_cap_tree_create(&f->root, NULL, 10, 0) != 0 ||
        band_cap_tree_create(&f->t1, f->root, 10, 4) != 0 ||
        band_cap_tree_create(&f->t2, f->root, 10, 4) != 0 ||
        band_cap_tree_create(&f->p1, f->t1, 6, 0) != 0)
        return -1;
    wake_log_init(&f->log);
    for (int i = 0; i < 6; i++) {
        band_admit_req_init(&f->q[i].r, areq_wake, &f->q[i]);
        f->q[i].id = i;
        atomic_init(&f->q[i].count, 0);
        atomic_init(&f->q[i].status, 12345);
        f->q[i].log = &f->log;
        memset(&f->g[i], 0, sizeof(f->g[i]));
    }
    wake_rec_init(&f->rec, 100, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int bad = 0;
    bad |= band_cap_tree_destroy(f->p1) != 0;
    bad |= band_cap_tree_destroy(f->t1) != 0;
    bad |= band_cap_tree_destroy(f->t2) != 0;
    bad |= band_cap_tree_destroy(f->root) != 0;
    free(f);
    return bad ? -1 : 0;
}

static uint64_t in_use(band_cap_tree *t)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(band_cap_tree_sem(t), &st), 0);
    return st.in_use;
}

static uint64_t waiters(band_cap_tree *t)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(band_cap_tree_sem(t), &st), 0);
    return st.waiters;
}

#define CHECK(f)                                                                                   \
    do {                                                                                           \
        assert_int_equal(band__sem_check(band_cap_tree_sem((f)->root)), 0);                        \
        assert_int_equal(band__sem_check(band_cap_tree_sem((f)->t1)), 0);                          \
        assert_int_equal(band__sem_check(band_cap_tree_sem((f)->t2)), 0);                          \
        assert_int_equal(band__sem_check(band_cap_tree_sem((f)->p1)), 0);                          \
    } while (0)

static void assert_log(struct wake_log *log, const int *ids, unsigned n)
{
    assert_int_equal(atomic_load(&log->len), n);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(log->ids[i], ids[i]);
}

/* Request @amount at @leaf for q[@i], async; returns the submission's answer. */
static int submit(struct fixture *f, int i, band_cap_tree *leaf, uint64_t amount)
{
    assert_int_equal(band_admit_req_add_tree(&f->q[i].r, leaf, amount), 0);
    return band_admit_acquire_async(&f->q[i].r);
}

static void take(struct fixture *f, int i)
{
    assert_int_equal(band_admit_req_grant(&f->q[i].r, &f->g[i]), 0);
}

static void give_back(struct fixture *f, int i)
{
    assert_int_equal(band_admit_release(&f->g[i]), 0);
}

/* ---------------------------------------------------------------------------------- */

static void test_create_rules(void **state)
{
    struct fixture *f = *state;
    band_cap_tree *t = (band_cap_tree *)(uintptr_t)0x1;
    assert_int_equal(band_cap_tree_create(NULL, NULL, 1, 0), BAND_EINVAL);
    assert_int_equal(band_cap_tree_create(&t, NULL, 0, 0), BAND_EINVAL);
    assert_int_equal(band_cap_tree_create(&t, NULL, BAND_MAX_UNITS + 1, 0), BAND_EINVAL);
    assert_int_equal(band_cap_tree_create(&t, NULL, 4, 5), BAND_EINVAL); /* reserve > cap */
    /* root's children already reserve 8 of its 10 */
    assert_int_equal(band_cap_tree_create(&t, f->root, 10, 3), BAND_EINVAL);
    assert_ptr_equal(t, (band_cap_tree *)(uintptr_t)0x1);
    assert_int_equal(band_cap_tree_create(&t, f->root, 10, 2), 0);
    assert_ptr_equal(band_cap_tree_parent(t), f->root);
    assert_ptr_equal(band_cap_tree_parent(f->root), NULL);
    assert_ptr_equal(band_cap_tree_parent(NULL), NULL);
    assert_ptr_equal(band_cap_tree_sem(NULL), NULL);
    assert_int_equal(band_cap_tree_destroy(t), 0);
    assert_int_equal(band_cap_tree_create(&t, f->root, 10, 2), 0); /* its reservation came back */
    assert_int_equal(band_cap_tree_destroy(t), 0);
    assert_int_equal(band_cap_tree_destroy(f->root), BAND_EBUSY); /* has children */
    assert_int_equal(band_cap_tree_destroy(NULL), 0);
    /* the node's semaphore is a budget: destroyed only through the tree */
    assert_int_equal(band_sem_destroy(band_cap_tree_sem(f->t1)), BAND_EINVAL);
}

static void test_charges_whole_path(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(submit(f, 0, f->p1, 3), 0);
    assert_int_equal(f->q[0].r.n, 3); /* p1, t1, root */
    take(f, 0);
    assert_u64_equal(in_use(f->p1), 3);
    assert_u64_equal(in_use(f->t1), 3);
    assert_u64_equal(in_use(f->root), 3);
    assert_u64_equal(in_use(f->t2), 0);
    give_back(f, 0);
    assert_u64_equal(in_use(f->p1), 0);
    assert_u64_equal(in_use(f->t1), 0);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_caps_at_every_level(void **state)
{
    struct fixture *f = *state;
    /* p1's cap (6) binds before its ancestors' */
    assert_int_equal(submit(f, 0, f->p1, 7), BAND_E2BIG);
    assert_int_equal(submit(f, 1, f->p1, 5), 0);
    take(f, 1);
    assert_int_equal(submit(f, 2, f->p1, 2), BAND_PENDING); /* p1 full; root has 5 */
    assert_u64_equal(waiters(f->p1), 1);
    /* a request at t2 is unaffected: root still has room */
    assert_int_equal(submit(f, 3, f->t2, 5), 0);
    take(f, 3);
    give_back(f, 1);
    assert_int_equal(atomic_load(&f->q[2].status), 0);
    take(f, 2);
    give_back(f, 2);
    give_back(f, 3);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_work_conserving(void **state)
{
    struct fixture *f = *state;
    /* t2 may use all of root, t1's unused reservation included */
    assert_int_equal(submit(f, 0, f->t2, 10), 0);
    take(f, 0);
    assert_u64_equal(in_use(f->root), 10);
    give_back(f, 0);
    CHECK(f);
}

static void test_guaranteed_gets_next_capacity(void **state)
{
    struct fixture *f = *state;
    band_sem *root = band_cap_tree_sem(f->root);
    assert_int_equal(submit(f, 0, f->t2, 6), 0); /* t2 borrows beyond its reservation */
    take(f, 0);
    assert_int_equal(band_sem_try_acquire(root, 4), 0);     /* root full */
    assert_int_equal(submit(f, 1, f->t2, 2), BAND_PENDING); /* t2 over its reservation */
    assert_int_equal(submit(f, 2, f->p1, 3), BAND_PENDING); /* t1 within: guaranteed */
    assert_u64_equal(waiters(f->root), 2);
    CHECK(f);

    /* Nothing is revoked: t2 keeps its 6. The next freed capacity goes to q2 first,
     * although q1 queued earlier. */
    assert_int_equal(band_sem_release(root, 2), 0);
    assert_int_equal(atomic_load(&f->log.len), 0); /* 2 set aside for q2, which needs 3 */
    assert_int_equal(band_sem_release(root, 1), 0);
    int one[] = {2};
    assert_log(&f->log, one, 1);
    take(f, 2);
    assert_u64_equal(in_use(f->t1), 3);
    assert_int_equal(band_sem_release(root, 1), 0); /* 1 set aside for q1 (needs 2) */
    assert_int_equal(atomic_load(&f->log.len), 1);
    give_back(f, 0);
    int two[] = {2, 1};
    assert_log(&f->log, two, 2);
    take(f, 1);
    give_back(f, 1);
    give_back(f, 2);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_capped_tenant_does_not_block_others(void **state)
{
    struct fixture *f = *state;
    /* p1 (cap 6) is full; its waiter queues at p1 only, so root's free capacity stays
     * usable by t2 (work-conserving), and the waiter joins root once p1 has room. */
    assert_int_equal(submit(f, 0, f->p1, 6), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->p1, 2), BAND_PENDING);
    assert_u64_equal(waiters(f->p1), 1);
    assert_u64_equal(waiters(f->t1), 0);
    assert_u64_equal(waiters(f->root), 0);
    assert_int_equal(submit(f, 2, f->t2, 4), 0); /* root: 6 + 4 */
    take(f, 2);
    assert_u64_equal(in_use(f->root), 10);
    give_back(f, 0); /* p1 and root free 6: q1 takes 2 through every level */
    int one[] = {1};
    assert_log(&f->log, one, 1);
    take(f, 1);
    assert_u64_equal(in_use(f->root), 6);
    give_back(f, 1);
    give_back(f, 2);
    CHECK(f);
}

static void test_staged_join_keeps_global_order(void **state)
{
    struct fixture *f = *state;
    band_sem *root = band_cap_tree_sem(f->root);
    /* q1 (older) waits at its full leaf; q2 (newer) queues at root. When q1 reaches root
     * it is placed ahead of q2 by its ticket: the order of requests is one global order. */
    assert_int_equal(submit(f, 0, f->p1, 6), 0);
    take(f, 0);
    assert_int_equal(band_sem_try_acquire(root, 4), 0); /* root full */
    assert_int_equal(submit(f, 1, f->p1, 1), BAND_PENDING);
    assert_int_equal(submit(f, 2, f->t2, 5), BAND_PENDING); /* borrower, at root */
    assert_u64_equal(waiters(f->root), 1);
    assert_int_equal(band_admit_release_part(&f->g[0], band_cap_tree_sem(f->p1), 1), 0);
    assert_u64_equal(waiters(f->root), 2); /* q1 joined, ahead of q2 */
    assert_int_equal(band_sem_release(root, 1), 0);
    int one[] = {1};
    assert_log(&f->log, one, 1);
    take(f, 1);
    give_back(f, 1);
    assert_int_equal(band_sem_release(root, 3), 0); /* 1 + 3 + ... q2 needs 5 */
    assert_int_equal(atomic_load(&f->log.len), 1);
    give_back(f, 0); /* p1 5, t1 6, root 6 */
    int two[] = {1, 2};
    assert_log(&f->log, two, 2);
    take(f, 2);
    give_back(f, 2);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_beyond_reservation_is_fifo(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(submit(f, 0, f->t2, 10), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->t2, 1), BAND_PENDING); /* borrower */
    assert_int_equal(submit(f, 2, f->t1, 3), BAND_PENDING); /* guaranteed (0 + 3 <= 4) */
    assert_int_equal(submit(f, 3, f->t1, 3), BAND_PENDING); /* 3 queued + 3 > 4: borrower */
    give_back(f, 0);
    /* q2 first (guaranteed), then q1 and q3 in arrival order */
    int order[] = {2, 1, 3};
    assert_log(&f->log, order, 3);
    for (int i = 1; i <= 3; i++) {
        take(f, i);
        give_back(f, i);
    }
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_guaranteed_in_arrival_order(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(submit(f, 0, f->t2, 10), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->t1, 2), BAND_PENDING);
    assert_int_equal(submit(f, 2, f->t2, 9), BAND_PENDING); /* borrower */
    assert_int_equal(submit(f, 3, f->p1, 2), BAND_PENDING); /* guaranteed, after q1 */
    give_back(f, 0);
    int order[] = {1, 3};
    assert_log(&f->log, order, 2); /* q2 (9) waits for 6 more */
    take(f, 1);
    give_back(f, 1);
    assert_int_equal(atomic_load(&f->log.len), 2);
    take(f, 3);
    give_back(f, 3);
    int all[] = {1, 3, 2};
    assert_log(&f->log, all, 3);
    take(f, 2);
    give_back(f, 2);
    CHECK(f);
}

static void test_plain_acquire_is_borrower(void **state)
{
    struct fixture *f = *state;
    band_sem *root = band_cap_tree_sem(f->root);
    assert_int_equal(band_sem_try_acquire(root, 10), 0);
    assert_int_equal(band_sem_acquire_async(root, 1, &f->rec.w), BAND_PENDING);
    assert_int_equal(submit(f, 0, f->t1, 1), BAND_PENDING); /* guaranteed: ahead of rec */
    assert_int_equal(band_sem_release(root, 1), 0);
    int one[] = {0};
    assert_log(&f->log, one, 1);
    assert_int_equal(band_sem_release(root, 1), 0);
    int two[] = {0, 100};
    assert_log(&f->log, two, 2);
    take(f, 0);
    give_back(f, 0);
    assert_int_equal(band_sem_release(root, 9), 0);
    assert_u64_equal(band_sem_available(root), 10);
    CHECK(f);
}

static void test_cancel_guaranteed_releases_claim(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(submit(f, 0, f->t2, 10), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->t1, 4), BAND_PENDING); /* guaranteed, claims all 4 */
    assert_int_equal(band_waiter_cancel(&f->q[1].r.w, BAND_ECANCELED), 0);
    assert_int_equal(submit(f, 2, f->t2, 1), BAND_PENDING); /* borrower */
    assert_int_equal(submit(f, 3, f->t1, 4), BAND_PENDING); /* guaranteed again */
    give_back(f, 0);
    int order[] = {3, 2};
    assert_log(&f->log, order, 2);
    take(f, 2);
    take(f, 3);
    give_back(f, 2);
    give_back(f, 3);
    CHECK(f);
}

static void test_close_unreached_ancestor(void **state)
{
    struct fixture *f = *state;
    /* q1 waits at its full leaf, not yet in root's queue: closing root fails it at once. */
    assert_int_equal(submit(f, 0, f->p1, 6), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->p1, 2), BAND_PENDING);
    assert_u64_equal(waiters(f->root), 0);
    assert_int_equal(band_sem_close(band_cap_tree_sem(f->root)), 0);
    assert_int_equal(atomic_load(&f->q[1].count), 1);
    assert_int_equal(atomic_load(&f->q[1].status), BAND_ECLOSED);
    assert_u64_equal(waiters(f->p1), 0);
    give_back(f, 0); /* held units still return */
    assert_u64_equal(in_use(f->root), 0);
    assert_u64_equal(in_use(f->p1), 0);
    CHECK(f);
}

static void test_shrink_unreached_ancestor(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(submit(f, 0, f->p1, 6), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->p1, 3), BAND_PENDING); /* at p1 only */
    assert_int_equal(submit(f, 2, f->p1, 1), BAND_PENDING);
    /* root's capacity 10 -> 2: q1's 3 can never fit there, q2's 1 can */
    assert_int_equal(band_sem_reduce(band_cap_tree_sem(f->root), 8), 0);
    assert_int_equal(atomic_load(&f->q[1].status), BAND_E2BIG);
    assert_int_equal(atomic_load(&f->q[2].count), 0);
    give_back(f, 0); /* repays root's debt of 4; p1 and root have room for q2 */
    assert_int_equal(atomic_load(&f->q[2].status), 0);
    take(f, 2);
    give_back(f, 2);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

/* The wake of a waiter on a semaphore or budget of its own destroys it: allowed, since the
 * operation that ran the wake has failed its last waiter. */
static void destroy_sem_hook(struct wake_rec *r)
{
    r->hook_rc = band_sem_destroy((band_sem *)r->ctx);
}

static void destroy_budget_hook(struct wake_rec *r)
{
    r->hook_rc = band_budget_destroy((band_budget *)r->ctx);
}

/* q1 waits at its full leaf p1 with t1 and root still to join (a staged request). */
static void stage_one(struct fixture *f)
{
    assert_int_equal(submit(f, 0, f->p1, 6), 0);
    take(f, 0);
    assert_int_equal(submit(f, 1, f->p1, 2), BAND_PENDING);
    assert_u64_equal(waiters(f->p1), 1);
    assert_u64_equal(waiters(f->root), 0);
}

static void unstage_one(struct fixture *f)
{
    assert_int_equal(atomic_load(&f->q[1].count), 0); /* untouched by the other budget */
    give_back(f, 0);
    assert_int_equal(atomic_load(&f->q[1].status), 0);
    take(f, 1);
    give_back(f, 1);
    assert_u64_equal(in_use(f->root), 0);
    CHECK(f);
}

static void test_wake_destroys_unrelated_sem_on_close(void **state)
{
    struct fixture *f = *state;
    stage_one(f);
    /* An unrelated semaphore: closing it fails its waiter, whose wake destroys it. Nothing
     * may touch the semaphore after that wake (AddressSanitizer would report it). */
    band_sem *s;
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    f->rec.hook = destroy_sem_hook;
    f->rec.ctx = s;
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec.w), BAND_PENDING);
    assert_int_equal(band_sem_close(s), 0);
    assert_int_equal(atomic_load(&f->rec.count), 1);
    assert_int_equal(atomic_load(&f->rec.status), BAND_ECLOSED);
    assert_int_equal(f->rec.hook_rc, 0);
    unstage_one(f);
}

static void test_wake_destroys_unrelated_budget_on_shrink(void **state)
{
    struct fixture *f = *state;
    stage_one(f);
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 4, NULL), 0);
    assert_int_equal(band_budget_try_acquire(b, 1), 0);
    f->rec.hook = destroy_budget_hook;
    f->rec.ctx = b;
    assert_int_equal(band_budget_acquire_async(b, 4, &f->rec.w), BAND_PENDING);
    assert_int_equal(band_budget_shrink(b, 1), 0); /* 4 no longer fits: BAND_E2BIG */
    assert_int_equal(atomic_load(&f->rec.count), 1);
    assert_int_equal(atomic_load(&f->rec.status), BAND_E2BIG);
    assert_int_equal(f->rec.hook_rc, 0);
    unstage_one(f);
}

static void test_wake_destroys_unrelated_budget_on_forget(void **state)
{
    struct fixture *f = *state;
    stage_one(f);
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 4, NULL), 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, band_budget_sem(b), 2), 0);
    f->rec.hook = destroy_budget_hook;
    f->rec.ctx = b;
    assert_int_equal(band_budget_acquire_async(b, 3, &f->rec.w), BAND_PENDING);
    assert_u64_equal(band_permit_forget(&p), 2); /* capacity 2: the 3 can never fit */
    assert_int_equal(atomic_load(&f->rec.count), 1);
    assert_int_equal(atomic_load(&f->rec.status), BAND_E2BIG);
    assert_int_equal(f->rec.hook_rc, 0);
    unstage_one(f);
}

static void test_path_too_long(void **state)
{
    (void)state;
    band_cap_tree *chain[BAND_ADMIT_MAX + 1];
    band_cap_tree *parent = NULL;
    for (int i = 0; i <= BAND_ADMIT_MAX; i++) {
        assert_int_equal(band_cap_tree_create(&chain[i], parent, 5, 0), 0);
        parent = chain[i];
    }
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    assert_int_equal(band_admit_req_add_tree(&r, chain[BAND_ADMIT_MAX], 1), BAND_EINVAL);
    assert_int_equal(r.n, 0); /* nothing added */
    assert_int_equal(band_admit_req_add_tree(&r, chain[BAND_ADMIT_MAX - 1], 1), 0);
    assert_int_equal(r.n, BAND_ADMIT_MAX);
    assert_int_equal(band_admit_req_add_tree(&r, chain[1], 1), 0); /* merges */
    assert_u64_equal(r.e[0].amount + r.e[r.n - 1].amount, 3);
    assert_int_equal(band_admit_req_add_tree(NULL, chain[0], 1), BAND_EINVAL);
    assert_int_equal(band_admit_req_add_tree(&r, NULL, 1), BAND_EINVAL);
    for (int i = BAND_ADMIT_MAX; i >= 0; i--)
        assert_int_equal(band_cap_tree_destroy(chain[i]), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_rules),
        T(test_charges_whole_path),
        T(test_caps_at_every_level),
        T(test_work_conserving),
        T(test_guaranteed_gets_next_capacity),
        T(test_capped_tenant_does_not_block_others),
        T(test_staged_join_keeps_global_order),
        T(test_beyond_reservation_is_fifo),
        T(test_guaranteed_in_arrival_order),
        T(test_plain_acquire_is_borrower),
        T(test_cancel_guaranteed_releases_claim),
        T(test_close_unreached_ancestor),
        T(test_shrink_unreached_ancestor),
        T(test_wake_destroys_unrelated_sem_on_close),
        T(test_wake_destroys_unrelated_budget_on_shrink),
        T(test_wake_destroys_unrelated_budget_on_forget),
        cmocka_unit_test(test_path_too_long),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
