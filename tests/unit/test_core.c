/* SPDX-License-Identifier: MIT */
/*
 * test_core.c - the core: waiter life cycle and the wake/cancel contract (core.h rules
 * 1-4), result codes and their names, version, monotonic time and deadlines.
 *
 * The waiter contract needs a primitive to queue on; these tests use a semaphore and
 * check only what core.h promises for every primitive.
 */
#include "test.h"

#include <string.h>

#include "prim/sem_internal.h"

struct fixture {
    band_sem *sem;
    struct wake_log log;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_sem_create(&f->sem, 0, NULL) != 0) {
        free(f);
        return -1;
    }
    wake_log_init(&f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    /* Tests leave no waiter queued; close first anyway so destroy cannot refuse. */
    band_sem_close(f->sem);
    int rc = band_sem_destroy(f->sem);
    free(f);
    return rc == 0 ? 0 : -1;
}

/* Every result code with its name and message (test_error_names_and_messages). */
struct code_row {
    int code;
    const char *name;
    const char *msg;
};

static const struct code_row code_rows[] = {
#define ROW(name, val, msg) {BAND_##name, "BAND_" #name, msg},
    BAND_ERRNO_MAP(ROW)
#undef ROW
};

/* ---------------------------------------------------------------------------------- */
/* band_waiter                                                                         */

static void dummy_wake(band_waiter *w)
{
    (void)w;
}

static void test_waiter_size(void **state)
{
    (void)state;
    if (sizeof(void *) == 8 && sizeof(long) == 8)
        assert_int_equal(sizeof(band_waiter), 64);
    else
        assert_true(sizeof(band_waiter) <= 64);
}

static void test_waiter_init(void **state)
{
    (void)state;
    band_waiter w;
    memset(&w, 0xa5, sizeof(w));
    int data;
    band_waiter_init(&w, dummy_wake, &data);
    assert_ptr_equal(w.wake, dummy_wake);
    assert_ptr_equal(w.data, &data);
    assert_true(w.deadline == BAND_FOREVER);
    assert_int_equal(band_waiter_status(&w), 0);
    assert_int_equal(band_waiter_is_pending(&w), 0);
    assert_int_equal(band_waiter_is_pending(NULL), 0);
}

static void test_waiter_status_lifecycle(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, &f->log);

    assert_int_equal(band_sem_acquire_async(f->sem, 2, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_status(&r.w), BAND_PENDING);
    assert_int_equal(band_waiter_is_pending(&r.w), 1);

    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_waiter_status(&r.w), BAND_PENDING); /* partial grant only */
    assert_int_equal(atomic_load(&r.count), 0);

    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(atomic_load(&r.status), 0);     /* status visible inside the wake */
    assert_int_equal(atomic_load(&r.pending_in), 0); /* no longer pending inside the wake */
    assert_int_equal(band_waiter_status(&r.w), 0);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);
    assert_u64_equal(band_sem_available(f->sem), 0); /* the owner holds both permits */
}

struct release_arg {
    band_sem *sem;
    uint64_t n;
};

static int release_thread(void *p)
{
    struct release_arg *a = p;
    return band_sem_release(a->sem, a->n);
}

static int cancel_thread(void *p)
{
    return band_waiter_cancel(p, BAND_ECANCELED);
}

/* A wake runs on the thread that completed the operation: a release, or a cancel whose
 * returned permits completed another waiter. */
static void test_wake_runs_on_completing_thread(void **state)
{
    struct fixture *f = *state;
    struct wake_rec a, b;
    wake_rec_init(&a, 1, &f->log);
    wake_rec_init(&b, 2, &f->log);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &a.w), BAND_PENDING);
    struct release_arg ra = {f->sem, 1};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, release_thread, &ra), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(atomic_load(&a.count), 1);
    assert_true(pthread_equal(a.thread, t.tid));

    /* a (head) holds 1 of 3 when cancelled from a thread: b is completed by that cancel. */
    wake_rec_init(&a, 1, &f->log);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &a.w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &b.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(test_thread_start(&t, cancel_thread, &a.w), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(atomic_load(&a.count), 0);
    assert_int_equal(atomic_load(&b.count), 1);
    assert_true(pthread_equal(b.thread, t.tid));
    assert_int_equal(band__sem_check(f->sem), 0);
}

static void test_submit_never_calls_wake(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    /* Completed at once: 0, no wake. */
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &r.w), 0);
    assert_int_equal(band_waiter_status(&r.w), 0);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);
    assert_int_equal(atomic_load(&r.count), 0);

    /* n == 0 completes at once too. */
    assert_int_equal(band_sem_acquire_async(f->sem, 0, &r.w), 0);
    assert_int_equal(atomic_load(&r.count), 0);

    /* Failed submission: no wake. */
    assert_int_equal(band_sem_acquire_async(f->sem, BAND_MAX_UNITS + 1, &r.w), BAND_EINVAL);
    assert_int_equal(atomic_load(&r.count), 0);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);

    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_ECLOSED);
    assert_int_equal(atomic_load(&r.count), 0);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);
}

static void test_submit_invalid_waiter(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_sem_acquire_async(f->sem, 1, NULL), BAND_EINVAL);

    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &nowake), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&nowake), 0);

    /* A pending waiter cannot be submitted again (to the same or another primitive). */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_EINVAL);
    band_sem *other;
    assert_int_equal(band_sem_create(&other, 5, NULL), 0);
    assert_int_equal(band_sem_acquire_async(other, 1, &r.w), BAND_EINVAL);
    assert_u64_equal(band_sem_available(other), 5);
    assert_int_equal(band_sem_destroy(other), 0);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.queued, 1);
    assert_int_equal(band_waiter_is_pending(&r.w), 1);

    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_status(&r.w), 0);
}

static void test_cancel_queued(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_sem_acquire_async(f->sem, 4, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&r.w), BAND_ECANCELED);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);

    /* No wake follows, even when permits arrive later. */
    assert_int_equal(band_sem_release(f->sem, 10), 0);
    assert_int_equal(atomic_load(&r.count), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);

    /* Cancelling again: not pending. */
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_status(&r.w), BAND_ECANCELED);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band__sem_check(f->sem), 0);
}

static void test_cancel_reason_is_status(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&r.w), BAND_ETIMEDOUT);

    /* The other reason is BAND_ECANCELED, counted as a cancel. */
    wake_rec_init(&r, 1, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&r.w), BAND_ECANCELED);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.closed_fails, 0);
    assert_int_equal(atomic_load(&r.count), 0);
}

static void test_cancel_invalid(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_waiter_cancel(NULL, BAND_ECANCELED), BAND_EINVAL);
    /* Never submitted. */
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), BAND_EINVAL);

    /* Completed at once. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), 0);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_status(&r.w), 0);

    /* A reason that is not a negative code is refused and the waiter stays queued. */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&r.w, 0), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_PENDING), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&r.w, 22), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&r.w), 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_status(&r.w), 0);
}

/*
 * A reason is BAND_ECANCELED or BAND_ETIMEDOUT, nothing else: every other negative code
 * (BAND_ECLOSED would pass for a close that did not happen, BAND_E2BIG for a shrink) is
 * refused with BAND_EINVAL, and the queued operation, its partial grant and the counters
 * stay as they were.
 */
static void test_cancel_reason_must_be_cancel_or_timeout(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* a partial grant of 1 */

    static const int bad[] = {-1, -4000, INT32_MIN};
    size_t nbad = TEST_COUNTOF(code_rows) + TEST_COUNTOF(bad);
    for (size_t i = 0; i < nbad; i++) {
        int reason =
            i < TEST_COUNTOF(code_rows) ? code_rows[i].code : bad[i - TEST_COUNTOF(code_rows)];
        if (reason == BAND_ECANCELED || reason == BAND_ETIMEDOUT)
            continue;
        if (band_waiter_cancel(&r.w, reason) != BAND_EINVAL)
            fail_msg("cancel with %s (%d) was not refused", band_err_name(reason), reason);
        assert_int_equal(band_waiter_is_pending(&r.w), 1);
        assert_int_equal(band_waiter_status(&r.w), BAND_PENDING);
    }
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.waiting_units, 3);
    assert_u64_equal(st.head_granted, 1);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_int_equal(atomic_load(&r.count), 0);
    assert_int_equal(band__sem_check(f->sem), 0);

    /* Still queued, and granted as if nothing had happened. */
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_status(&r.w), 0);
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_u64_equal(band_sem_available(f->sem), 3);
}

/*
 * A shutdown scope ends the operations it watches with its own reason, which may be any
 * negative code: a request with BAND_ECLOSED still withdraws a watched acquisition and
 * wakes it once with that status, although band_waiter_cancel() refuses that reason.
 */
static void test_shutdown_reason_is_not_limited(void **state)
{
    struct fixture *f = *state;
    band_shutdown *t;
    assert_int_equal(band_shutdown_create(&t), 0);
    band_shutdown_link link;
    band_shutdown_link_init(&link);
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* a partial grant of 1 */
    assert_int_equal(band_shutdown_watch(t, &link, &r.w), 0);
    assert_int_equal(band_shutdown_request(t, BAND_ECLOSED), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(atomic_load(&r.status), BAND_ECLOSED);
    assert_int_equal(band_waiter_is_pending(&r.w), 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.available, 1); /* the partial grant came back */
    assert_int_equal(band_shutdown_unwatch(&link), BAND_EALREADY);
    assert_int_equal(band_shutdown_destroy(t), 0);
    assert_int_equal(band__sem_check(f->sem), 0);
}

static void test_cancel_after_wake_is_ealready(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_sem_acquire_async(f->sem, 2, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ETIMEDOUT), BAND_EALREADY);
    /* The grant stands: the owner holds 2, the counters saw one grant and no cancel. */
    assert_int_equal(band_waiter_status(&r.w), 0);
    assert_u64_equal(band_sem_available(f->sem), 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.grants, 1);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_int_equal(atomic_load(&r.count), 1);
}

static void test_cancel_after_close_is_ealready(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    assert_int_equal(band_sem_acquire_async(f->sem, 2, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_status(&r.w), BAND_ECLOSED);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), BAND_EALREADY);
}

/* A waiter may be resubmitted once its previous operation ended, in every way it can end. */
static void test_waiter_reuse(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 1, NULL);

    /* 1. ended by a wake */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    /* 2. ended by a cancel */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&r.w, BAND_ECANCELED), 0);
    /* 3. completed at once */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), 0);
    /* and queued again */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&r.count), 2);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.queued, 3);
    assert_u64_equal(st.grants, 2);
    assert_u64_equal(st.cancels, 1);
}

/* A wake that frees its waiter: the wake is band's last access (run under ASan). */
static void free_self_wake(band_waiter *w)
{
    int *count = w->data;
    (*count)++;
    free(w);
}

static void test_wake_may_free_waiter(void **state)
{
    struct fixture *f = *state;
    int count = 0;
    for (int i = 0; i < 4; i++) {
        band_waiter *w = malloc(sizeof(*w));
        assert_non_null(w);
        band_waiter_init(w, free_self_wake, &count);
        assert_int_equal(band_sem_acquire_async(f->sem, 1, w), BAND_PENDING);
    }
    assert_int_equal(band_sem_release(f->sem, 4), 0);
    assert_int_equal(count, 4);
    assert_u64_equal(band_sem_available(f->sem), 0);
}

/* A wake that resubmits its own waiter: runs again on the next release, exactly once each. */
struct resubmit_ctx {
    band_sem *sem;
    int wakes;
    int resubmit_rc[4];
};

static void resubmit_wake(band_waiter *w)
{
    struct resubmit_ctx *c = w->data;
    int i = c->wakes++;
    if (i < 3)
        c->resubmit_rc[i] = band_sem_acquire_async(c->sem, 1, w);
}

static void test_wake_may_resubmit(void **state)
{
    struct fixture *f = *state;
    struct resubmit_ctx c = {f->sem, 0, {0, 0, 0, 0}};
    band_waiter w;
    band_waiter_init(&w, resubmit_wake, &c);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &w), BAND_PENDING);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        assert_int_equal(c.wakes, i + 1);
    }
    assert_int_equal(c.resubmit_rc[0], BAND_PENDING);
    assert_int_equal(c.resubmit_rc[1], BAND_PENDING);
    assert_int_equal(c.resubmit_rc[2], BAND_PENDING);
    assert_int_equal(band_waiter_is_pending(&w), 0);
    assert_int_equal(band__sem_check(f->sem), 0);
}

/* ---------------------------------------------------------------------------------- */
/* Result codes                                                                        */

static void test_error_names_and_messages(void **state)
{
    (void)state;
    assert_true(TEST_COUNTOF(code_rows) >= 11);
    for (size_t i = 0; i < TEST_COUNTOF(code_rows); i++) {
        assert_true(code_rows[i].code < 0);
        assert_string_equal(band_err_name(code_rows[i].code), code_rows[i].name);
        assert_string_equal(band_strerror(code_rows[i].code), code_rows[i].msg);
        /* Codes are distinct. */
        for (size_t j = 0; j < i; j++)
            assert_int_not_equal(code_rows[i].code, code_rows[j].code);
    }
    assert_string_equal(band_err_name(0), "BAND_OK");
    assert_string_equal(band_err_name(BAND_PENDING), "BAND_PENDING");
    assert_non_null(band_strerror(0));
    assert_non_null(band_strerror(BAND_PENDING));
    assert_string_not_equal(band_strerror(0), "unknown error");
    assert_string_not_equal(band_strerror(BAND_PENDING), "unknown error");
    assert_string_not_equal(band_strerror(0), band_strerror(BAND_PENDING));
}

static void test_error_values(void **state)
{
    (void)state;
    /* Documented: errno counterparts are the negated Linux errno values. */
    assert_int_equal(BAND_OK, 0);
    assert_int_equal(BAND_PENDING, 1);
    assert_int_equal(BAND_EAGAIN, -11);
    assert_int_equal(BAND_ETIMEDOUT, -110);
    assert_int_equal(BAND_ECANCELED, -125);
    assert_int_equal(BAND_E2BIG, -7);
    assert_int_equal(BAND_EOVERFLOW, -75);
    assert_int_equal(BAND_EINVAL, -22);
    assert_int_equal(BAND_ENOMEM, -12);
    assert_int_equal(BAND_EALREADY, -114);
    assert_int_equal(BAND_EBUSY, -16);
    assert_true(BAND_ECLOSED <= -4000);
    assert_true(BAND_ELAGGED <= -4000);
}

static void test_error_unknown(void **state)
{
    (void)state;
    static const int unknown[] = {2, 7, -1, -4000, -4999, 1000, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < TEST_COUNTOF(unknown); i++) {
        assert_string_equal(band_strerror(unknown[i]), "unknown error");
        assert_string_equal(band_err_name(unknown[i]), "BAND_EUNKNOWN");
    }
}

/* ---------------------------------------------------------------------------------- */
/* Version and time                                                                    */

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(band_version(), BAND_VERSION_STRING);
    assert_int_equal(band_version_number(), BAND_VERSION_NUMBER);
    assert_int_equal(BAND_VERSION_NUMBER,
                     BAND_VERSION_MAJOR * 10000 + BAND_VERSION_MINOR * 100 + BAND_VERSION_PATCH);
}

static void test_now_monotonic(void **state)
{
    (void)state;
    band_time prev = band_now();
    assert_true(prev > 0);
    for (int i = 0; i < 10000; i++) {
        band_time t = band_now();
        assert_true(t >= prev);
        prev = t;
    }
    assert_true(prev < BAND_FOREVER);
}

static void test_deadline_after(void **state)
{
    (void)state;
    band_time before = band_now();
    band_time d = band_deadline_after(BAND_SEC);
    band_time after = band_now();
    assert_true(d >= before + BAND_SEC);
    assert_true(d <= after + BAND_SEC);

    d = band_deadline_after(0);
    assert_true(d >= before);
    assert_true(d <= band_now());

    /* Negative: a deadline in the past. */
    d = band_deadline_after(-BAND_MSEC);
    assert_true(d < band_now());

    /* Saturation. */
    assert_true(band_deadline_after(BAND_FOREVER) == BAND_FOREVER);
    assert_true(band_deadline_after(BAND_FOREVER - 1) == BAND_FOREVER);
    assert_true(band_deadline_after(BAND_FOREVER - band_now() + BAND_SEC) == BAND_FOREVER);
    assert_true(BAND_MSEC == 1000 * BAND_USEC);
    assert_true(BAND_SEC == 1000 * BAND_MSEC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiter_size),
        cmocka_unit_test(test_waiter_init),
        cmocka_unit_test_setup_teardown(test_waiter_status_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_runs_on_completing_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_never_calls_wake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_invalid_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_reason_is_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_reason_must_be_cancel_or_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_reason_is_not_limited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_after_wake_is_ealready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_after_close_is_ealready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiter_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_may_free_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_may_resubmit, setup, teardown),
        cmocka_unit_test(test_error_names_and_messages),
        cmocka_unit_test(test_error_values),
        cmocka_unit_test(test_error_unknown),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_now_monotonic),
        cmocka_unit_test(test_deadline_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
