/* SPDX-License-Identifier: MIT */
/*
 * test_oneshot.c - the oneshot (oneshot.h): argument checks, send/receive in both orders,
 * the sender's close and the receiver's drop (the value's owner on every path), a second receive
 * while one is pending, cancel with both outcomes, deadlines, blocking receives woken by another
 * thread, wakes that call back into (and destroy) the oneshot, and the state snapshot.
 *
 * Every test gets a fresh oneshot of a uint64_t (setup); teardown destroys it.
 */
#include "test.h"

#include <string.h>

#include "band/oneshot.h"
#include "prim/sync_internal.h"

struct rx_rec {
    band_oneshot_recv_op op; /* submitted; its wake is wake_rec_fn on rec */
    struct wake_rec rec;
};

struct fixture {
    band_oneshot *o;
    int destroyed; /* a test destroyed o itself */
    struct wake_log log;
    struct rx_rec rx[4];
};

static void rx_rec_init(struct rx_rec *r, int id, struct wake_log *log)
{
    wake_rec_init(&r->rec, id, log);
    band_waiter_init(&r->op.w, wake_rec_fn, &r->rec);
    r->op.out = NULL;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_oneshot_create(&f->o, sizeof(uint64_t)) != 0) {
        free(f);
        return -1;
    }
    wake_log_init(&f->log);
    for (int i = 0; i < 4; i++)
        rx_rec_init(&f->rx[i], i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int rc = 0;
    if (!f->destroyed) {
        band_oneshot_close(f->o); /* ends any receive a failed test left queued */
        rc = band_oneshot_destroy(f->o);
    }
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_oneshot_stats stats_of(const band_oneshot *o)
{
    band_oneshot_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_oneshot_get_stats(o, &st), 0);
    return st;
}

#define WAKES(r) atomic_load(&(r)->rec.count)

/* ---------------------------------------------------------------------------------- */
/* create, destroy, arguments                                                          */

static void test_create_args(void **state)
{
    (void)state;
    band_oneshot *o = (band_oneshot *)(uintptr_t)0x1234;
    assert_int_equal(band_oneshot_create(NULL, 8), BAND_EINVAL);
    assert_int_equal(band_oneshot_create(&o, SIZE_MAX), BAND_ENOMEM);
    assert_ptr_equal(o, (band_oneshot *)(uintptr_t)0x1234); /* unchanged on failure */
    assert_int_equal(band_oneshot_create(&o, 0), 0);
    band_oneshot_stats st = stats_of(o);
    assert_u64_equal(st.value_size, 0);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.received, 0);
    assert_int_equal(st.closed, 0);
    assert_int_equal(band_oneshot_is_closed(o), 0);
    assert_int_equal(st.receiver_dropped, 0);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(st.holds_value, 0);
    assert_u64_equal(st.refused, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.cancels, 0);
    /* A zero-size oneshot carries only the fact of the send: NULL pointers are fine. */
    assert_int_equal(band_oneshot_try_recv(o, NULL), BAND_EAGAIN);
    assert_int_equal(band_oneshot_send(o, NULL), 0);
    assert_int_equal(band_oneshot_try_recv(o, NULL), 0);
    assert_int_equal(band_oneshot_destroy(o), 0);
    assert_int_equal(band_oneshot_destroy(NULL), 0);
}

static void test_null_and_misuse(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 7;
    band_oneshot_stats st;
    band_oneshot_recv_op nowake;
    band_waiter_init(&nowake.w, NULL, NULL);

    assert_int_equal(band_oneshot_send(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_oneshot_send(f->o, NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_close(NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_is_closed(NULL), 0);
    assert_int_equal(band_oneshot_receiver_drop(NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_try_recv(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_oneshot_try_recv(f->o, NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv(NULL, &v, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv(f->o, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv_async(NULL, &v, &f->rx[0].op), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv_async(f->o, &v, NULL), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv_async(f->o, NULL, &f->rx[0].op), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv_async(f->o, &v, &nowake), BAND_EINVAL);
    assert_int_equal(band_oneshot_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_oneshot_get_stats(f->o, NULL), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rx[0].op.w), 0);

    /* A pending op cannot be submitted again, even to another oneshot: EINVAL, untouched. */
    uint64_t out = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    band_oneshot *o2;
    assert_int_equal(band_oneshot_create(&o2, sizeof(uint64_t)), 0);
    assert_int_equal(band_oneshot_recv_async(o2, &out, &f->rx[0].op), BAND_EINVAL);
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rx[0].op.w), 1);
    assert_int_equal(band_oneshot_destroy(o2), 0);

    /* Nothing above changed the state. */
    st = stats_of(f->o);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.waiting, 1);
    assert_u64_equal(st.queued, 1);
    assert_int_equal(WAKES(&f->rx[0]), 0);
    v = 99;
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_u64_equal(out, 99);
}

/* ---------------------------------------------------------------------------------- */
/* send and receive                                                                    */

static void test_send_then_try_recv(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 0xfeedfacecafebeefULL, out = 0;
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_EAGAIN);
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.holds_value, 1);
    assert_int_equal(st.received, 0);
    v = 1; /* the oneshot kept its own copy */
    assert_int_equal(band_oneshot_try_recv(f->o, &out), 0);
    assert_u64_equal(out, 0xfeedfacecafebeefULL);
    st = stats_of(f->o);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.holds_value, 0);
    /* One value: a second receive says it was already received, and out is untouched. */
    out = 5;
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_EALREADY);
    assert_int_equal(band_oneshot_recv(f->o, &out, BAND_FOREVER, NULL), BAND_EALREADY);
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_EALREADY);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), BAND_EALREADY);
    assert_u64_equal(out, 5);
    /* And the sender cannot send twice. */
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_EALREADY);
    assert_u64_equal(stats_of(f->o).refused, 1);
    assert_int_equal(WAKES(&f->rx[0]), 0);
}

static void test_recv_async_then_send(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 42, out = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_ptr_equal(f->rx[0].op.out, &out);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), BAND_PENDING);
    assert_int_equal(stats_of(f->o).waiting, 1);
    assert_int_equal(WAKES(&f->rx[0]), 0);

    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    /* The value was copied before the wake, which ran once, on this thread, not pending. */
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(atomic_load(&f->rx[0].rec.status), 0);
    assert_int_equal(atomic_load(&f->rx[0].rec.pending_in), 0);
    assert_true(pthread_equal(f->rx[0].rec.thread, pthread_self()));
    assert_u64_equal(out, 42);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(st.holds_value, 0);
    assert_u64_equal(st.queued, 1);
    /* The value went to the receiver, not the slot. */
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_EALREADY);
    /* Cancel after completion: EALREADY, and no second wake. */
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), 0);
}

static void test_recv_async_at_once(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 3, out = 0;
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), 0);
    assert_u64_equal(out, 3);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), 0);
    assert_int_equal(band_waiter_is_pending(&f->rx[0].op.w), 0);
    assert_int_equal(WAKES(&f->rx[0]), 0); /* completed at once: no wake */
    assert_u64_equal(stats_of(f->o).queued, 0);
    /* A waiter that completed at once is not pending: cancel says EINVAL. */
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ECANCELED), BAND_EINVAL);
}

static void test_large_value(void **state)
{
    (void)state;
    enum { N = 4096 };
    static unsigned char in[N], out[N], out2[N];
    for (size_t i = 0; i < N; i++)
        in[i] = (unsigned char)(i * 7 + 1);
    band_oneshot *o;
    assert_int_equal(band_oneshot_create(&o, N), 0);
    assert_u64_equal(stats_of(o).value_size, N);
    struct rx_rec r;
    rx_rec_init(&r, 0, NULL);
    assert_int_equal(band_oneshot_recv_async(o, out, &r.op), BAND_PENDING);
    assert_int_equal(band_oneshot_send(o, in), 0);
    assert_int_equal(WAKES(&r), 1);
    assert_memory_equal(in, out, N);
    assert_int_equal(band_oneshot_destroy(o), 0);
    /* Stored, then received. */
    assert_int_equal(band_oneshot_create(&o, N), 0);
    assert_int_equal(band_oneshot_send(o, in), 0);
    assert_int_equal(band_oneshot_recv(o, out2, 0, NULL), 0);
    assert_memory_equal(in, out2, N);
    assert_int_equal(band_oneshot_destroy(o), 0);
}

/* ---------------------------------------------------------------------------------- */
/* the sender gives up                                                                 */

static void test_close_wakes_receiver(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 1, out = 77;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_is_closed(f->o), 0);
    assert_int_equal(band_oneshot_close(f->o), 0);
    assert_int_equal(band_oneshot_is_closed(f->o), 1);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(atomic_load(&f->rx[0].rec.status), BAND_ECLOSED);
    assert_true(pthread_equal(f->rx[0].rec.thread, pthread_self()));
    assert_u64_equal(out, 77); /* nothing was written */
    /* Every later receive learns it too; close is idempotent; a late send is refused and
     * the value stays with the caller. */
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_ECLOSED);
    assert_int_equal(band_oneshot_recv(f->o, &out, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[1].op), BAND_ECLOSED);
    assert_int_equal(band_waiter_status(&f->rx[1].op.w), BAND_ECLOSED);
    assert_int_equal(band_oneshot_close(f->o), 0);
    assert_int_equal(band_oneshot_is_closed(f->o), 1);
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_EALREADY);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(WAKES(&f->rx[1]), 0);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.closed, 1);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.holds_value, 0);
    assert_u64_equal(st.refused, 1);
}

static void test_close_after_send_keeps_value(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 11, out = 0;
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(band_oneshot_close(f->o), 0); /* the sender is simply done */
    assert_int_equal(band_oneshot_is_closed(f->o), 1);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.closed, 1);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.holds_value, 1);
    assert_int_equal(band_oneshot_recv(f->o, &out, BAND_FOREVER, NULL), 0);
    assert_u64_equal(out, 11);
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_EALREADY); /* not ECLOSED */
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_EALREADY);
}

/* ---------------------------------------------------------------------------------- */
/* the receiver leaves                                                                 */

static void test_receiver_drop_refuses_send(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 5, out = 0;
    assert_int_equal(band_oneshot_receiver_drop(f->o), 0);
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_ECLOSED); /* value stays with us */
    assert_u64_equal(v, 5);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.receiver_dropped, 1);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.holds_value, 0);
    assert_u64_equal(st.refused, 1);
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_ECLOSED);
    assert_int_equal(band_oneshot_receiver_drop(f->o), 0); /* idempotent */
    /* The sender may still close (it is done); nothing changes. */
    assert_int_equal(band_oneshot_close(f->o), 0);
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_ECLOSED);
}

static void test_receiver_drop_cancels_pending(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 5, out = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_receiver_drop(f->o), 0);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(atomic_load(&f->rx[0].rec.status), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_ECLOSED);
    assert_u64_equal(out, 0);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.waiting, 0);
    assert_u64_equal(st.cancels, 1);
}

/* A value that arrived before the receiver left is not lost: it can still be taken. */
static void test_receiver_drop_after_send_value_retrievable(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 123, out = 0;
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(band_oneshot_receiver_drop(f->o), 0);
    assert_int_equal(stats_of(f->o).holds_value, 1);
    assert_int_equal(band_oneshot_try_recv(f->o, &out), 0);
    assert_u64_equal(out, 123);
    assert_int_equal(band_oneshot_try_recv(f->o, &out), BAND_EALREADY);
    assert_int_equal(stats_of(f->o).holds_value, 0);
}

/* ---------------------------------------------------------------------------------- */
/* one receive at a time                                                               */

static void test_second_receive_is_busy(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 9, out = 0, out2 = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_try_recv(f->o, &out2), BAND_EBUSY);
    assert_int_equal(band_oneshot_recv(f->o, &out2, BAND_FOREVER, NULL), BAND_EBUSY);
    assert_int_equal(band_oneshot_recv(f->o, &out2, 0, NULL), BAND_EBUSY);
    assert_int_equal(band_oneshot_recv_async(f->o, &out2, &f->rx[1].op), BAND_EBUSY);
    assert_int_equal(band_waiter_status(&f->rx[1].op.w), BAND_EBUSY);
    assert_int_equal(band_waiter_is_pending(&f->rx[1].op.w), 0);
    assert_int_equal(band_oneshot_destroy(f->o), BAND_EBUSY); /* a receive is pending */
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(WAKES(&f->rx[1]), 0);
    assert_u64_equal(out, 9);
    assert_u64_equal(out2, 0);
    assert_u64_equal(stats_of(f->o).queued, 1);
}

/* ---------------------------------------------------------------------------------- */
/* cancel                                                                              */

static void test_cancel_pending_then_value_stays(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 31, out = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ECANCELED), BAND_EINVAL);
    band_oneshot_stats st = stats_of(f->o);
    assert_int_equal(st.waiting, 0);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.timeouts, 0);
    /* The value sent afterwards is stored, not written to the cancelled op's buffer. */
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(WAKES(&f->rx[0]), 0);
    assert_u64_equal(out, 0);
    assert_int_equal(stats_of(f->o).holds_value, 1);
    /* The op can be reused for a new receive, which completes at once. */
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), 0);
    assert_u64_equal(out, 31);
    assert_int_equal(WAKES(&f->rx[0]), 0);
}

static void test_cancel_with_timeout_reason_counts_timeout(void **state)
{
    struct fixture *f = *state;
    uint64_t out = 0;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rx[0].op.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&f->rx[0].op.w), BAND_ETIMEDOUT);
    band_oneshot_stats st = stats_of(f->o);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.cancels, 0);
    assert_int_equal(WAKES(&f->rx[0]), 0);
}

/* ---------------------------------------------------------------------------------- */
/* deadlines                                                                           */

static void test_past_deadline_does_not_wait(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 8, out = 0;
    assert_int_equal(band_oneshot_recv(f->o, &out, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_oneshot_recv(f->o, &out, band_now(), NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_oneshot_recv(f->o, &out, INT64_MIN, NULL), BAND_ETIMEDOUT);
    band_oneshot_stats st = stats_of(f->o);
    assert_u64_equal(st.queued, 0); /* never queued */
    assert_u64_equal(st.timeouts, 0);
    /* With the value there, a past deadline still receives it. */
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(band_oneshot_recv(f->o, &out, 0, NULL), 0);
    assert_u64_equal(out, 8);
}

static void test_deadline_expires_then_value_stays(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 65, out = 0;
    band_time t0 = band_now();
    assert_int_equal(band_oneshot_recv(f->o, &out, t0 + 20 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    band_oneshot_stats st = stats_of(f->o);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_u64_equal(out, 0);
    assert_int_equal(band_oneshot_recv(f->o, &out, 0, NULL), 0);
    assert_u64_equal(out, 65);
}

/* ---------------------------------------------------------------------------------- */
/* blocking receives woken by another thread                                           */

struct recv_arg {
    band_oneshot *o;
    uint64_t out;
    band_time deadline;
};

static int recv_thread(void *arg)
{
    struct recv_arg *a = arg;
    return band_oneshot_recv(a->o, &a->out, a->deadline, NULL);
}

static bool cond_waiting(void *arg)
{
    band_oneshot_stats st;
    return band_oneshot_get_stats(arg, &st) == 0 && st.waiting == 1;
}

/* Start a blocking receive on another thread and wait until it is queued. */
static void start_blocked_recv(struct fixture *f, struct test_thread *t, struct recv_arg *a)
{
    a->o = f->o;
    a->out = 0;
    a->deadline = BAND_FOREVER;
    assert_int_equal(test_thread_start(t, recv_thread, a), 0);
    assert_true(test_wait_until(cond_waiting, f->o, 10 * BAND_SEC));
}

static void test_blocking_recv_woken_by_send(void **state)
{
    struct fixture *f = *state;
    struct test_thread t;
    struct recv_arg a;
    start_blocked_recv(f, &t, &a);
    uint64_t v = 2024;
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(a.out, 2024);
    assert_int_equal(stats_of(f->o).received, 1);
}

static void test_blocking_recv_woken_by_close(void **state)
{
    struct fixture *f = *state;
    struct test_thread t;
    struct recv_arg a;
    start_blocked_recv(f, &t, &a);
    assert_int_equal(band_oneshot_close(f->o), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECLOSED);
    assert_u64_equal(a.out, 0);
}

static void test_blocking_recv_woken_by_receiver_drop(void **state)
{
    struct fixture *f = *state;
    struct test_thread t;
    struct recv_arg a;
    start_blocked_recv(f, &t, &a);
    assert_int_equal(band_oneshot_receiver_drop(f->o), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECANCELED);
    uint64_t v = 1;
    assert_int_equal(band_oneshot_send(f->o, &v), BAND_ECLOSED);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back into the oneshot                                               */

static void hook_calls_back(struct wake_rec *r)
{
    band_oneshot *o = r->ctx;
    uint64_t v = 1, out = 0;
    /* No band lock is held: these must not deadlock. */
    int a = band_oneshot_try_recv(o, &out);
    int b = band_oneshot_send(o, &v);
    int c = band_oneshot_close(o);
    band_oneshot_stats st;
    int d = band_oneshot_get_stats(o, &st);
    r->hook_rc = (a == BAND_EALREADY && b == BAND_EALREADY && c == 0 && d == 0) ? 0 : -1;
}

static void test_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 4, out = 0;
    f->rx[0].rec.hook = hook_calls_back;
    f->rx[0].rec.ctx = f->o;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_send(f->o, &v), 0);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(f->rx[0].rec.hook_rc, 0);
    assert_u64_equal(out, 4);
}

/* The documented ownership rule: once its wake runs, the receiver may destroy the oneshot. */
static void hook_destroys(struct wake_rec *r)
{
    r->hook_rc = band_oneshot_destroy(r->ctx);
}

static void test_wake_destroys_oneshot(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 4, out = 0;
    f->rx[0].rec.hook = hook_destroys;
    f->rx[0].rec.ctx = f->o;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_send(f->o, &v), 0); /* must not touch o after the wake */
    f->destroyed = 1;
    assert_int_equal(WAKES(&f->rx[0]), 1);
    assert_int_equal(f->rx[0].rec.hook_rc, 0);
    assert_u64_equal(out, 4);

    /* Same through the sender giving up. */
    assert_int_equal(band_oneshot_create(&f->o, sizeof(uint64_t)), 0);
    f->destroyed = 0;
    rx_rec_init(&f->rx[1], 1, NULL);
    f->rx[1].rec.hook = hook_destroys;
    f->rx[1].rec.ctx = f->o;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[1].op), BAND_PENDING);
    assert_int_equal(band_oneshot_close(f->o), 0);
    f->destroyed = 1;
    assert_int_equal(WAKES(&f->rx[1]), 1);
    assert_int_equal(atomic_load(&f->rx[1].rec.status), BAND_ECLOSED);
    assert_int_equal(f->rx[1].rec.hook_rc, 0);
}

/* A wake that resubmits its own op: the op is free for reuse inside its wake. */
static void hook_resubmits(struct wake_rec *r)
{
    struct rx_rec *rr = r->ctx;
    static uint64_t sink;
    r->hook_rc = band_oneshot_recv_async((band_oneshot *)(uintptr_t)r->hook_u64, &sink, &rr->op);
}

static void test_wake_resubmits(void **state)
{
    struct fixture *f = *state;
    uint64_t out = 0;
    f->rx[0].rec.hook = hook_resubmits;
    f->rx[0].rec.ctx = &f->rx[0];
    f->rx[0].rec.hook_u64 = (uint64_t)(uintptr_t)f->o;
    assert_int_equal(band_oneshot_recv_async(f->o, &out, &f->rx[0].op), BAND_PENDING);
    assert_int_equal(band_oneshot_close(f->o), 0);
    assert_int_equal(WAKES(&f->rx[0]), 1);
    /* The resubmission learned the same final answer at once. */
    assert_int_equal(f->rx[0].rec.hook_rc, BAND_ECLOSED);
    assert_int_equal(band_waiter_is_pending(&f->rx[0].op.w), 0);
}

/* ---------------------------------------------------------------------------------- */
/* the non-waiting operations never take the lock                                     */

struct nolock_arg {
    band_oneshot *o[3];
    atomic_int done;
    int rc[12];
    uint64_t out;
};

static int nolock_thread(void *p)
{
    struct nolock_arg *a = p;
    uint64_t v = 9;
    a->rc[0] = band_oneshot_try_recv(a->o[0], &a->out); /* nothing yet */
    a->rc[1] = band_oneshot_send(a->o[0], &v);
    a->rc[2] = band_oneshot_send(a->o[0], &v);          /* second send */
    a->rc[3] = band_oneshot_try_recv(a->o[0], &a->out); /* the value */
    a->rc[4] = band_oneshot_try_recv(a->o[0], &a->out); /* taken */
    a->rc[5] = band_oneshot_close(a->o[0]);
    a->rc[6] = band_oneshot_receiver_drop(a->o[1]);
    a->rc[7] = band_oneshot_send(a->o[1], &v); /* receiver left */
    a->rc[8] = band_oneshot_try_recv(a->o[1], &v);
    a->rc[9] = band_oneshot_close(a->o[2]);
    a->rc[10] = band_oneshot_try_recv(a->o[2], &v); /* sender gave up */
    a->rc[11] = band_oneshot_is_closed(a->o[2]);
    atomic_store(&a->done, 1);
    return 0;
}

static bool nolock_done(void *p)
{
    return atomic_load(&((struct nolock_arg *)p)->done) != 0;
}

/* Another thread holds each oneshot's internal lock: sends, try_recv, close and drop with
 * nobody waiting still complete, with their usual answers. (With a lock on those paths
 * the worker blocks until the lock is released and the wait below fails.) */
static void test_try_paths_take_no_lock(void **state)
{
    struct fixture *f = *state;
    struct nolock_arg a = {{f->o, NULL, NULL}, 0, {0}, 0};
    assert_int_equal(band_oneshot_create(&a.o[1], sizeof(uint64_t)), 0);
    assert_int_equal(band_oneshot_create(&a.o[2], sizeof(uint64_t)), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_mutex_lock(band__oneshot_lock(a.o[i])), 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, nolock_thread, &a), 0);
    bool done = test_wait_until(nolock_done, &a, 10 * BAND_SEC);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_mutex_unlock(band__oneshot_lock(a.o[i])), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_true(done);
    const int want[12] = {BAND_EAGAIN,  0, BAND_EALREADY, 0, BAND_EALREADY, 0, 0, BAND_ECLOSED,
                          BAND_ECLOSED, 0, BAND_ECLOSED,  1};
    for (int i = 0; i < 12; i++)
        assert_int_equal(a.rc[i], want[i]);
    assert_u64_equal(a.out, 9);
    band_oneshot_stats st;
    assert_int_equal(band_oneshot_get_stats(a.o[1], &st), 0);
    assert_u64_equal(st.refused, 1);
    assert_int_equal(band_oneshot_get_stats(f->o, &st), 0);
    assert_u64_equal(st.refused, 1);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.holds_value, 0);
    assert_int_equal(band_oneshot_destroy(a.o[1]), 0);
    assert_int_equal(band_oneshot_destroy(a.o[2]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test_setup_teardown(test_null_and_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_then_try_recv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_paths_take_no_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_async_then_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_async_at_once, setup, teardown),
        cmocka_unit_test(test_large_value),
        cmocka_unit_test_setup_teardown(test_close_wakes_receiver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_after_send_keeps_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_receiver_drop_refuses_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_receiver_drop_cancels_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_receiver_drop_after_send_value_retrievable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_second_receive_is_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_pending_then_value_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_with_timeout_reason_counts_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_past_deadline_does_not_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_expires_then_value_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_recv_woken_by_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_recv_woken_by_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_recv_woken_by_receiver_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_calls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_destroys_oneshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_resubmits, setup, teardown),
    };
    return cmocka_run_group_tests_name("oneshot", tests, NULL, NULL);
}
