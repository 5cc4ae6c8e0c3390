/* SPDX-License-Identifier: MIT */
/*
 * test_relay.c - the relay (relay.h): argument checks, park then complete, cancel with the
 * hook told and no wake, complete after cancel and cancel after complete, destroy while
 * parked, a wake that frees its waiter, a complete of a waiter cancelled and freed, and
 * completes and cancels racing each other on six threads (more than cores), every waiter
 * ended exactly once.
 */
#include "test.h"

struct hook_log {
    atomic_int calls;
    int last_reason;
    band_waiter *last_w;
    atomic_int bad; /* a hook saw a status other than its reason */
};

static void on_cancel(band_relay *r, band_waiter *w, int reason, void *data)
{
    (void)r;
    struct hook_log *h = data;
    h->last_reason = reason;
    h->last_w = w;
    /* The status is final when the hook runs (recorded: this may be a worker thread). */
    if (band_waiter_status(w) != reason)
        atomic_store(&h->bad, 1);
    atomic_fetch_add(&h->calls, 1);
}

static void test_args(void **state)
{
    (void)state;
    band_relay *r = NULL;
    assert_int_equal(band_relay_create(NULL, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_relay_create(&r, NULL, NULL), 0);
    band_waiter w;
    band_waiter_init(&w, NULL, NULL);
    assert_int_equal(band_relay_park(r, &w), BAND_EINVAL); /* no wake */
    assert_int_equal(band_relay_park(NULL, &w), BAND_EINVAL);
    assert_int_equal(band_relay_park(r, NULL), BAND_EINVAL);
    struct wake_rec rec;
    wake_rec_init(&rec, 1, NULL);
    assert_int_equal(band_relay_park(r, &rec.w), 0);
    assert_int_equal(band_relay_park(r, &rec.w), BAND_EINVAL); /* already pending */
    assert_int_equal(band_relay_complete(r, &rec.w, 1), BAND_EINVAL);
    assert_int_equal(band_relay_complete(NULL, &rec.w, 0), BAND_EINVAL);
    assert_int_equal(band_relay_complete(r, NULL, 0), BAND_EINVAL);
    assert_int_equal(band_waiter_status(&rec.w), BAND_PENDING);
    assert_int_equal(band_relay_complete(r, &rec.w, 0), 0);
    assert_int_equal(band_relay_count(NULL), 0);
    assert_int_equal(band_relay_destroy(r), 0);
    assert_int_equal(band_relay_destroy(NULL), 0);
}

static void test_park_complete(void **state)
{
    (void)state;
    band_relay *r;
    assert_int_equal(band_relay_create(&r, NULL, NULL), 0);
    struct wake_log log;
    wake_log_init(&log);
    struct wake_rec a, b;
    wake_rec_init(&a, 1, &log);
    wake_rec_init(&b, 2, &log);
    assert_int_equal(band_relay_park(r, &a.w), 0);
    assert_int_equal(band_relay_park(r, &b.w), 0);
    assert_int_equal(band_relay_count(r), 2);
    assert_int_equal(band_waiter_is_pending(&a.w), 1);
    assert_int_equal(band_relay_destroy(r), BAND_EBUSY);
    /* Completion order is the source's, not the parking order. */
    assert_int_equal(band_relay_complete(r, &b.w, BAND_ECLOSED), 0);
    assert_int_equal(band_relay_complete(r, &a.w, 0), 0);
    assert_int_equal(atomic_load(&log.len), 2);
    assert_int_equal(log.ids[0], 2);
    assert_int_equal(log.statuses[0], BAND_ECLOSED);
    assert_int_equal(log.ids[1], 1);
    assert_int_equal(log.statuses[1], 0);
    assert_int_equal(atomic_load(&a.pending_in), 0);
    assert_int_equal(band_waiter_status(&a.w), 0);
    /* A second completion is refused: the waiter ended once. */
    assert_int_equal(band_relay_complete(r, &a.w, 0), BAND_EALREADY);
    assert_int_equal(band_waiter_cancel(&a.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(atomic_load(&a.count), 1);
    assert_int_equal(band_relay_count(r), 0);
    assert_int_equal(band_relay_destroy(r), 0);
}

static void test_cancel(void **state)
{
    (void)state;
    struct hook_log h = {0};
    band_relay *r;
    assert_int_equal(band_relay_create(&r, on_cancel, &h), 0);
    struct wake_rec a;
    wake_rec_init(&a, 1, NULL);
    assert_int_equal(band_relay_park(r, &a.w), 0);
    assert_int_equal(band_waiter_cancel(&a.w, BAND_EAGAIN), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&a.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(atomic_load(&h.calls), 1);
    assert_int_equal(h.last_reason, BAND_ETIMEDOUT);
    assert_ptr_equal(h.last_w, &a.w);
    assert_int_equal(atomic_load(&h.bad), 0);
    assert_int_equal(band_waiter_status(&a.w), BAND_ETIMEDOUT);
    assert_int_equal(atomic_load(&a.count), 0);
    assert_int_equal(band_relay_complete(r, &a.w, 0), BAND_EALREADY);
    assert_int_equal(atomic_load(&a.count), 0);
    assert_int_equal(band_relay_count(r), 0);
    /* The waiter can be parked again once its operation ended. */
    assert_int_equal(band_relay_park(r, &a.w), 0);
    assert_int_equal(band_relay_complete(r, &a.w, 0), 0);
    assert_int_equal(band_waiter_cancel(&a.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(atomic_load(&h.calls), 1);
    assert_int_equal(band_relay_destroy(r), 0);
}

static void free_wake(band_waiter *w)
{
    free(w);
}

static void test_wake_frees(void **state)
{
    (void)state;
    band_relay *r;
    assert_int_equal(band_relay_create(&r, NULL, NULL), 0);
    band_waiter *w = malloc(sizeof(*w));
    assert_non_null(w);
    band_waiter_init(w, free_wake, NULL);
    assert_int_equal(band_relay_park(r, w), 0);
    assert_int_equal(band_relay_complete(r, w, 0), 0); /* ASan catches a later access */
    assert_int_equal(band_relay_destroy(r), 0);
}

/* A source may complete a waiter that a cancel already handed back and its owner freed:
 * the relay never reads it (ASan would report the read). */
static void test_complete_after_free(void **state)
{
    (void)state;
    struct hook_log h = {0};
    band_relay *r;
    assert_int_equal(band_relay_create(&r, on_cancel, &h), 0);
    struct wake_rec keep;
    wake_rec_init(&keep, 1, NULL);
    assert_int_equal(band_relay_park(r, &keep.w), 0);
    band_waiter *w = malloc(sizeof(*w));
    assert_non_null(w);
    band_waiter_init(w, free_wake, NULL);
    assert_int_equal(band_relay_park(r, w), 0);
    assert_int_equal(band_waiter_cancel(w, BAND_ECANCELED), 0);
    volatile uintptr_t addr = (uintptr_t)w; /* what a source still holds once it is freed */
    free(w);
    assert_int_equal(band_relay_complete(r, (band_waiter *)addr, 0), BAND_EALREADY);
    assert_int_equal(band_relay_count(r), 1);
    assert_int_equal(band_relay_complete(r, &keep.w, 0), 0);
    assert_int_equal(atomic_load(&keep.count), 1);
    assert_int_equal(band_relay_destroy(r), 0);
}

/* Racing completes and cancels: each waiter ends exactly once, by its wake or by a cancel
 * that returned 0 (and told the hook), never both and never neither. */
#define RACE_N 2000
struct race {
    band_relay *r;
    struct wake_rec rec[RACE_N];
    atomic_int cancelled[RACE_N];
    atomic_int completed[RACE_N];
    atomic_int go;
};

static int race_completer(void *arg)
{
    struct race *x = arg;
    while (!atomic_load(&x->go))
        ;
    for (int i = 0; i < RACE_N; i++)
        if (band_relay_complete(x->r, &x->rec[i].w, 0) == 0)
            atomic_fetch_add(&x->completed[i], 1);
    return 0;
}

static int race_canceller(void *arg)
{
    struct race *x = arg;
    while (!atomic_load(&x->go))
        ;
    for (int i = RACE_N - 1; i >= 0; i--) {
        int rc = band_waiter_cancel(&x->rec[i].w, BAND_ECANCELED);
        if (rc == 0)
            atomic_fetch_add(&x->cancelled[i], 1);
        else if (rc != BAND_EALREADY && rc != BAND_EINVAL) /* EINVAL: another cancel won */
            return rc;
    }
    return 0;
}

static void test_race(void **state)
{
    (void)state;
    struct race *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    struct hook_log h = {0};
    assert_int_equal(band_relay_create(&x->r, on_cancel, &h), 0);
    for (int i = 0; i < RACE_N; i++) {
        wake_rec_init(&x->rec[i], i, NULL);
        assert_int_equal(band_relay_park(x->r, &x->rec[i].w), 0);
    }
    /* Three of each: more threads than cores, and completes racing each other too. */
    struct test_thread t[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(test_thread_start(&t[i], i % 2 ? race_canceller : race_completer, x), 0);
    atomic_store(&x->go, 1);
    for (int i = 0; i < 6; i++)
        assert_int_equal(test_thread_join(&t[i]), 0);
    int cancels = 0;
    for (int i = 0; i < RACE_N; i++) {
        int wakes = atomic_load(&x->rec[i].count);
        assert_int_equal(wakes, atomic_load(&x->completed[i]));
        assert_int_equal(wakes + atomic_load(&x->cancelled[i]), 1);
        cancels += atomic_load(&x->cancelled[i]);
    }
    assert_int_equal(atomic_load(&h.calls), cancels);
    assert_int_equal(atomic_load(&h.bad), 0);
    assert_int_equal(band_relay_count(x->r), 0);
    assert_int_equal(band_relay_destroy(x->r), 0);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_park_complete),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_wake_frees),
        cmocka_unit_test(test_complete_after_free),
        cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
