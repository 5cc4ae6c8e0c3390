/* SPDX-License-Identifier: MIT */
/*
 * test_watch.c - the watch (watch.h): argument checks, versions and values, cursors,
 * skipping of intermediate versions, every waiting receiver woken by a send, close (the last
 * version first, then BAND_ECLOSED), one pending wait per cursor, cancel with both outcomes,
 * deadlines, blocking waits woken by another thread, wakes that call back into the watch,
 * version overflow, and the counters.
 *
 * Every test gets a fresh watch of a struct val with initial value {100, ~100} (setup).
 */
#include "test.h"

#include <string.h>

#include "band/watch.h"
#include "prim/sync_internal.h"

/* Tests-only hook in src/watch.c (BAND_TESTING). */
void band__watch_set_version(band_watch *w, uint64_t v);

struct val {
    uint64_t a, b; /* b == ~a in every value this test sends: a torn copy would show */
};

static struct val mk(uint64_t a)
{
    struct val v = {a, ~a};
    return v;
}

struct op_rec {
    band_watch_recv_op op; /* submitted; its wake is wake_rec_fn on rec */
    struct wake_rec rec;
};

struct fixture {
    band_watch *w;
    struct wake_log log;
    band_watch_rx rx[4];
    struct op_rec ops[4];
};

static void op_rec_init(struct op_rec *r, int id, struct wake_log *log)
{
    wake_rec_init(&r->rec, id, log);
    memset(&r->op, 0, sizeof(r->op));
    band_waiter_init(&r->op.w, wake_rec_fn, &r->rec);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    struct val init = mk(100);
    if (band_watch_create(&f->w, sizeof(struct val), &init) != 0) {
        free(f);
        return -1;
    }
    wake_log_init(&f->log);
    for (int i = 0; i < 4; i++) {
        op_rec_init(&f->ops[i], i, &f->log);
        if (band_watch_rx_init(&f->rx[i], f->w) != 0)
            return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    band_watch_close(f->w);
    int rc = band_watch_destroy(f->w);
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_watch_stats stats_of(const band_watch *w)
{
    band_watch_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_watch_get_stats(w, &st), 0);
    return st;
}

static void send_val(band_watch *w, uint64_t a)
{
    struct val v = mk(a);
    assert_int_equal(band_watch_send(w, &v), 0);
}

#define WAKES(r) atomic_load(&(r)->rec.count)

/* ---------------------------------------------------------------------------------- */
/* create, destroy, arguments                                                          */

static void test_create_args(void **state)
{
    (void)state;
    band_watch *w = (band_watch *)(uintptr_t)0x1234;
    assert_int_equal(band_watch_create(NULL, 8, NULL), BAND_EINVAL);
    assert_int_equal(band_watch_create(&w, SIZE_MAX, NULL), BAND_ENOMEM);
    assert_ptr_equal(w, (band_watch *)(uintptr_t)0x1234); /* unchanged on failure */

    /* NULL initial: zero bytes. */
    assert_int_equal(band_watch_create(&w, sizeof(struct val), NULL), 0);
    struct val v = mk(5);
    uint64_t ver = 99;
    assert_int_equal(band_watch_read(w, &v, &ver), 0);
    assert_u64_equal(v.a, 0);
    assert_u64_equal(v.b, 0);
    assert_u64_equal(ver, 0);
    band_watch_stats st = stats_of(w);
    assert_u64_equal(st.value_size, sizeof(struct val));
    assert_int_equal(st.closed, 0);
    assert_u64_equal(st.version, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.sends, 0);
    assert_u64_equal(st.refused, 0);
    assert_u64_equal(st.delivered, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.closed_fails, 0);
    assert_int_equal(band_watch_destroy(w), 0);

    /* A watch of versions only. */
    assert_int_equal(band_watch_create(&w, 0, NULL), 0);
    band_watch_rx rx;
    assert_int_equal(band_watch_rx_init(&rx, w), 0);
    assert_int_equal(band_watch_send(w, NULL), 0);
    assert_int_equal(band_watch_try_recv(&rx, NULL), 0);
    assert_u64_equal(band_watch_rx_seen(&rx), 1);
    assert_int_equal(band_watch_destroy(w), 0);
    assert_int_equal(band_watch_destroy(NULL), 0);
}

static void test_null_and_misuse(void **state)
{
    struct fixture *f = *state;
    struct val v = mk(1);
    uint64_t ver;
    band_watch_stats st;
    band_watch_rx zero_rx;
    memset(&zero_rx, 0, sizeof(zero_rx)); /* never initialised */
    band_watch_recv_op nowake;
    band_waiter_init(&nowake.w, NULL, NULL);

    assert_int_equal(band_watch_send(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_watch_send(f->w, NULL), BAND_EINVAL);
    assert_int_equal(band_watch_read(NULL, &v, &ver), BAND_EINVAL);
    assert_u64_equal(band_watch_version(NULL), 0);
    assert_int_equal(band_watch_close(NULL), BAND_EINVAL);
    assert_int_equal(band_watch_is_closed(NULL), 0);
    assert_int_equal(band_watch_rx_init(NULL, f->w), BAND_EINVAL);
    assert_int_equal(band_watch_rx_init(&zero_rx, NULL), BAND_EINVAL);
    assert_u64_equal(band_watch_rx_seen(NULL), 0);
    assert_int_equal(band_watch_rx_read(NULL, &v, &ver), BAND_EINVAL);
    assert_int_equal(band_watch_rx_read(&zero_rx, &v, &ver), BAND_EINVAL);
    assert_int_equal(band_watch_mark_seen(NULL), BAND_EINVAL);
    assert_int_equal(band_watch_mark_seen(&zero_rx), BAND_EINVAL);
    assert_int_equal(band_watch_try_recv(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_watch_try_recv(&zero_rx, &v), BAND_EINVAL);
    assert_int_equal(band_watch_recv(NULL, &v, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_watch_recv(&zero_rx, &v, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_watch_recv_async(NULL, &v, &f->ops[0].op), BAND_EINVAL);
    assert_int_equal(band_watch_recv_async(&zero_rx, &v, &f->ops[0].op), BAND_EINVAL);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &v, NULL), BAND_EINVAL);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &v, &nowake), BAND_EINVAL);
    assert_int_equal(band_watch_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_watch_get_stats(f->w, NULL), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->ops[0].op.w), 0);

    /* A pending op cannot be submitted again (even on another cursor): EINVAL, untouched. */
    struct val out = mk(0);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    assert_int_equal(band_watch_recv_async(&f->rx[1], &out, &f->ops[0].op), BAND_EINVAL);
    assert_ptr_equal(f->ops[0].op.rx, &f->rx[0]);
    assert_int_equal(band_waiter_is_pending(&f->ops[0].op.w), 1);
    st = stats_of(f->w);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.version, 0);
    send_val(f->w, 7);
    assert_int_equal(WAKES(&f->ops[0]), 1);
    assert_u64_equal(out.a, 7);
}

/* ---------------------------------------------------------------------------------- */
/* versions, values, cursors                                                           */

static void test_send_read_version(void **state)
{
    struct fixture *f = *state;
    struct val v;
    uint64_t ver = 99;
    assert_int_equal(band_watch_read(f->w, &v, &ver), 0);
    assert_u64_equal(v.a, 100);
    assert_u64_equal(ver, 0);
    assert_u64_equal(band_watch_version(f->w), 0);
    send_val(f->w, 1);
    send_val(f->w, 2);
    assert_u64_equal(band_watch_version(f->w), 2);
    assert_int_equal(band_watch_read(f->w, &v, NULL), 0);
    assert_u64_equal(v.a, 2);
    assert_u64_equal(v.b, ~UINT64_C(2));
    assert_int_equal(band_watch_read(f->w, NULL, &ver), 0);
    assert_u64_equal(ver, 2);
    /* read marks nothing seen */
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 0);
    band_watch_stats st = stats_of(f->w);
    assert_u64_equal(st.sends, 2);
    assert_u64_equal(st.version, 2);
    assert_u64_equal(st.delivered, 0);
}

static void test_try_recv_and_skipping(void **state)
{
    struct fixture *f = *state;
    struct val v = mk(0);
    /* rx_init marked the initial version seen: nothing new yet. */
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), BAND_EAGAIN);
    assert_u64_equal(v.a, 0); /* untouched */
    send_val(f->w, 1);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), 0);
    assert_u64_equal(v.a, 1);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 1);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), BAND_EAGAIN);
    /* A slow receiver skips intermediate versions: it sees the newest one only. */
    send_val(f->w, 2);
    send_val(f->w, 3);
    send_val(f->w, 4);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), 0);
    assert_u64_equal(v.a, 4);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 4);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), BAND_EAGAIN);
    /* Another cursor, not read since creation, also jumps to the newest. */
    assert_int_equal(band_watch_recv(&f->rx[1], &v, 0, NULL), 0);
    assert_u64_equal(v.a, 4);
    assert_u64_equal(band_watch_rx_seen(&f->rx[1]), 4);
    /* out may be NULL: the change is only marked seen. */
    send_val(f->w, 5);
    assert_int_equal(band_watch_try_recv(&f->rx[0], NULL), 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 5);
    assert_u64_equal(stats_of(f->w).delivered, 4);
}

static void test_rx_read_and_mark_seen(void **state)
{
    struct fixture *f = *state;
    struct val v = mk(0);
    uint64_t ver = 99;
    /* rx_read reads and marks, changed or not. */
    assert_int_equal(band_watch_rx_read(&f->rx[0], &v, &ver), 0);
    assert_u64_equal(v.a, 100);
    assert_u64_equal(ver, 0);
    send_val(f->w, 1);
    send_val(f->w, 2);
    assert_int_equal(band_watch_rx_read(&f->rx[0], &v, &ver), 0);
    assert_u64_equal(v.a, 2);
    assert_u64_equal(ver, 2);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 2);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &v), BAND_EAGAIN);
    /* mark_seen skips to the current version without copying. */
    send_val(f->w, 3);
    assert_int_equal(band_watch_mark_seen(&f->rx[1]), 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[1]), 3);
    assert_int_equal(band_watch_try_recv(&f->rx[1], &v), BAND_EAGAIN);
    /* A cursor initialised now starts at the current version. */
    band_watch_rx late;
    assert_int_equal(band_watch_rx_init(&late, f->w), 0);
    assert_u64_equal(band_watch_rx_seen(&late), 3);
    assert_int_equal(band_watch_try_recv(&late, &v), BAND_EAGAIN);
}

/* ---------------------------------------------------------------------------------- */
/* waiting receivers                                                                   */

static void test_send_wakes_every_waiter(void **state)
{
    struct fixture *f = *state;
    struct val out[3];
    memset(out, 0, sizeof(out));
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_watch_recv_async(&f->rx[i], &out[i], &f->ops[i].op), BAND_PENDING);
    band_watch_stats st = stats_of(f->w);
    assert_u64_equal(st.waiters, 3);
    assert_u64_equal(st.queued, 3);
    assert_int_equal(atomic_load(&f->log.len), 0);

    send_val(f->w, 1);
    /* Every waiter woken exactly once, in the order they queued, on this thread, with the
     * value copied and the cursor advanced before its wake. */
    assert_int_equal(atomic_load(&f->log.len), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f->log.ids[i], i);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(WAKES(&f->ops[i]), 1);
        assert_int_equal(atomic_load(&f->ops[i].rec.pending_in), 0);
        assert_true(pthread_equal(f->ops[i].rec.thread, pthread_self()));
        assert_u64_equal(out[i].a, 1);
        assert_u64_equal(out[i].b, ~UINT64_C(1));
        assert_u64_equal(f->ops[i].op.version, 1);
        assert_u64_equal(band_watch_rx_seen(&f->rx[i]), 1);
    }
    st = stats_of(f->w);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.delivered, 3);
    /* The next send wakes nobody (nobody waits) and the cursors see it on their own. */
    send_val(f->w, 2);
    assert_int_equal(atomic_load(&f->log.len), 3);
    assert_int_equal(band_waiter_cancel(&f->ops[0].op.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(WAKES(&f->ops[0]), 1);
}

static void test_recv_async_at_once(void **state)
{
    struct fixture *f = *state;
    struct val out = mk(0);
    send_val(f->w, 1);
    send_val(f->w, 2);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), 0);
    assert_u64_equal(out.a, 2);
    assert_u64_equal(f->ops[0].op.version, 2);
    assert_int_equal(band_waiter_status(&f->ops[0].op.w), 0);
    assert_int_equal(band_waiter_is_pending(&f->ops[0].op.w), 0);
    assert_int_equal(WAKES(&f->ops[0]), 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 2);
    assert_u64_equal(stats_of(f->w).queued, 0);
}

static void test_one_wait_per_cursor(void **state)
{
    struct fixture *f = *state;
    struct val out = mk(0), out2 = mk(0);
    uint64_t ver = 99;
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    send_val(f->w, 1); /* completes it */
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    /* While rx[0] has a pending wait, everything else on it answers EBUSY, changing nothing. */
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out2, &f->ops[1].op), BAND_EBUSY);
    assert_int_equal(band_waiter_status(&f->ops[1].op.w), BAND_EBUSY);
    assert_int_equal(band_waiter_is_pending(&f->ops[1].op.w), 0);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &out2), BAND_EBUSY);
    assert_int_equal(band_watch_recv(&f->rx[0], &out2, BAND_FOREVER, NULL), BAND_EBUSY);
    assert_int_equal(band_watch_rx_read(&f->rx[0], &out2, &ver), BAND_EBUSY);
    assert_int_equal(band_watch_mark_seen(&f->rx[0]), BAND_EBUSY);
    assert_u64_equal(ver, 99);
    assert_u64_equal(out2.a, 0);
    assert_int_equal(band_watch_destroy(f->w), BAND_EBUSY);
    assert_u64_equal(stats_of(f->w).waiters, 1);
    send_val(f->w, 2);
    assert_int_equal(WAKES(&f->ops[0]), 2);
    assert_int_equal(WAKES(&f->ops[1]), 0);
    assert_u64_equal(out.a, 2);
    /* Free again. */
    assert_int_equal(band_watch_try_recv(&f->rx[0], &out2), BAND_EAGAIN);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                               */

static void test_close(void **state)
{
    struct fixture *f = *state;
    struct val out[2];
    memset(out, 0, sizeof(out));
    send_val(f->w, 1);
    assert_int_equal(band_watch_mark_seen(&f->rx[0]), 0);
    assert_int_equal(band_watch_mark_seen(&f->rx[1]), 0);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out[0], &f->ops[0].op), BAND_PENDING);
    assert_int_equal(band_watch_recv_async(&f->rx[1], &out[1], &f->ops[1].op), BAND_PENDING);
    send_val(f->w, 2);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out[0], &f->ops[0].op), BAND_PENDING);

    assert_int_equal(band_watch_close(f->w), 0);
    assert_int_equal(band_watch_is_closed(f->w), 1);
    /* The waiter had seen version 2: it ends with ECLOSED, on this thread. */
    assert_int_equal(WAKES(&f->ops[0]), 2);
    assert_int_equal(atomic_load(&f->ops[0].rec.status), BAND_ECLOSED);
    assert_true(pthread_equal(f->ops[0].rec.thread, pthread_self()));
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 2);
    band_watch_stats st = stats_of(f->w);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.closed_fails, 1);

    /* Sends are refused; the value stays with the caller and the watch keeps its own. */
    struct val v = mk(3);
    assert_int_equal(band_watch_send(f->w, &v), BAND_ECLOSED);
    assert_u64_equal(v.a, 3);
    assert_u64_equal(band_watch_version(f->w), 2);
    assert_u64_equal(stats_of(f->w).refused, 1);

    /* A cursor behind (rx[2] saw version 0) still gets the last version, then ECLOSED. */
    struct val got = mk(0);
    assert_int_equal(band_watch_recv(&f->rx[2], &got, BAND_FOREVER, NULL), 0);
    assert_u64_equal(got.a, 2);
    assert_int_equal(band_watch_recv(&f->rx[2], &got, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_watch_try_recv(&f->rx[2], &got), BAND_ECLOSED);
    assert_int_equal(band_watch_recv_async(&f->rx[3], &got, &f->ops[3].op), 0);
    assert_int_equal(band_watch_recv_async(&f->rx[3], &got, &f->ops[3].op), BAND_ECLOSED);
    assert_int_equal(band_waiter_status(&f->ops[3].op.w), BAND_ECLOSED);
    assert_int_equal(WAKES(&f->ops[3]), 0);
    /* Reads still work; close is idempotent and wakes nobody twice. */
    uint64_t ver;
    assert_int_equal(band_watch_read(f->w, &got, &ver), 0);
    assert_u64_equal(got.a, 2);
    assert_u64_equal(ver, 2);
    assert_int_equal(band_watch_close(f->w), 0);
    assert_int_equal(WAKES(&f->ops[0]), 2);
    assert_int_equal(WAKES(&f->ops[1]), 1);
}

/* ---------------------------------------------------------------------------------- */
/* cancel                                                                              */

static void test_cancel_both_outcomes(void **state)
{
    struct fixture *f = *state;
    struct val out = mk(0);
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->ops[0].op.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->ops[0].op.w), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&f->ops[0].op.w, BAND_ECANCELED), BAND_EINVAL);
    band_watch_stats st = stats_of(f->w);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.cancels, 1);
    /* The cursor is unchanged and free; the next send does not touch the op. */
    send_val(f->w, 1);
    assert_int_equal(WAKES(&f->ops[0]), 0);
    assert_u64_equal(out.a, 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 0);
    assert_int_equal(band_watch_try_recv(&f->rx[0], &out), 0);
    assert_u64_equal(out.a, 1);

    /* Losing outcome: the send completed it first. */
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    send_val(f->w, 2);
    assert_int_equal(band_waiter_cancel(&f->ops[0].op.w, BAND_ETIMEDOUT), BAND_EALREADY);
    assert_int_equal(WAKES(&f->ops[0]), 1);
    assert_int_equal(band_waiter_status(&f->ops[0].op.w), 0);
    assert_u64_equal(out.a, 2);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 2);
    assert_u64_equal(stats_of(f->w).timeouts, 0);

    /* Cancel with the timeout reason counts as a timeout. */
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out, &f->ops[0].op), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->ops[0].op.w, BAND_ETIMEDOUT), 0);
    assert_u64_equal(stats_of(f->w).timeouts, 1);
}

/* ---------------------------------------------------------------------------------- */
/* deadlines                                                                           */

static void test_deadlines(void **state)
{
    struct fixture *f = *state;
    struct val out = mk(0);
    assert_int_equal(band_watch_recv(&f->rx[0], &out, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_watch_recv(&f->rx[0], &out, band_now(), NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_watch_recv(&f->rx[0], &out, INT64_MIN, NULL), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(f->w).queued, 0); /* never queued */

    band_time t0 = band_now();
    assert_int_equal(band_watch_recv(&f->rx[0], &out, t0 + 20 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    band_watch_stats st = stats_of(f->w);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 0);
    assert_u64_equal(out.a, 0);
    /* A change present before the deadline is returned even with a past deadline. */
    send_val(f->w, 1);
    assert_int_equal(band_watch_recv(&f->rx[0], &out, 0, NULL), 0);
    assert_u64_equal(out.a, 1);
}

/* ---------------------------------------------------------------------------------- */
/* blocking waits woken by another thread                                              */

struct wait_arg {
    band_watch_rx *rx;
    struct val out;
    band_time deadline;
};

static int wait_thread(void *arg)
{
    struct wait_arg *a = arg;
    return band_watch_recv(a->rx, &a->out, a->deadline, NULL);
}

struct waiters_cond {
    band_watch *w;
    uint64_t n;
};

static bool cond_waiters(void *arg)
{
    struct waiters_cond *c = arg;
    band_watch_stats st;
    return band_watch_get_stats(c->w, &st) == 0 && st.waiters >= c->n;
}

static void test_blocking_woken_by_send_and_close(void **state)
{
    struct fixture *f = *state;
    struct test_thread t[2];
    struct wait_arg a[2];
    for (int i = 0; i < 2; i++) {
        a[i].rx = &f->rx[i];
        a[i].out = mk(0);
        a[i].deadline = BAND_FOREVER;
        assert_int_equal(test_thread_start(&t[i], wait_thread, &a[i]), 0);
    }
    struct waiters_cond c = {f->w, 2};
    assert_true(test_wait_until(cond_waiters, &c, 10 * BAND_SEC));
    send_val(f->w, 77);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(test_thread_join(&t[i]), 0);
        assert_u64_equal(a[i].out.a, 77);
        assert_u64_equal(a[i].out.b, ~UINT64_C(77));
        assert_u64_equal(band_watch_rx_seen(&f->rx[i]), 1);
    }
    /* Again, ended by close this time. */
    a[0].out = mk(0);
    assert_int_equal(test_thread_start(&t[0], wait_thread, &a[0]), 0);
    c.n = 1;
    assert_true(test_wait_until(cond_waiters, &c, 10 * BAND_SEC));
    assert_int_equal(band_watch_close(f->w), 0);
    assert_int_equal(test_thread_join(&t[0]), BAND_ECLOSED);
    assert_u64_equal(a[0].out.a, 0);
}

static void test_blocking_with_deadline_gets_change(void **state)
{
    struct fixture *f = *state;
    struct test_thread t;
    struct wait_arg a = {&f->rx[0], {0, 0}, 0};
    a.deadline = band_deadline_after(10 * BAND_SEC);
    assert_int_equal(test_thread_start(&t, wait_thread, &a), 0);
    struct waiters_cond c = {f->w, 1};
    assert_true(test_wait_until(cond_waiters, &c, 10 * BAND_SEC));
    send_val(f->w, 5);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(a.out.a, 5);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back into the watch                                                 */

struct rearm_ctx {
    band_watch *w;
    struct op_rec *r;
    struct val out;
    int sends_left;
    int rc_send, rc_rearm, rc_read;
};

/* Re-arms the same op on the same cursor, reads, and (a few times) sends from the wake. */
static void hook_rearm(struct wake_rec *rec)
{
    struct rearm_ctx *c = rec->ctx;
    if (atomic_load(&rec->status) != 0)
        return;
    struct val v;
    c->rc_read = band_watch_read(c->w, &v, NULL);
    c->rc_rearm = band_watch_recv_async(c->r->op.rx, &c->out, &c->r->op);
    if (c->sends_left > 0) {
        c->sends_left--;
        struct val nv = mk(v.a + 1);
        c->rc_send = band_watch_send(c->w, &nv); /* completes the op just re-armed */
    }
}

static void test_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    struct rearm_ctx c = {f->w, &f->ops[0], {0, 0}, 2, 12345, 12345, 12345};
    f->ops[0].rec.hook = hook_rearm;
    f->ops[0].rec.ctx = &c;
    assert_int_equal(band_watch_recv_async(&f->rx[0], &c.out, &f->ops[0].op), BAND_PENDING);
    send_val(f->w, 10);
    /* send(10) woke it; the wake re-armed and sent 11, which woke it again; that wake
     * re-armed and sent 12; the third wake re-armed and stopped sending. */
    assert_int_equal(WAKES(&f->ops[0]), 3);
    assert_int_equal(c.rc_send, 0);
    assert_int_equal(c.rc_read, 0);
    assert_int_equal(c.rc_rearm, BAND_PENDING);
    assert_u64_equal(band_watch_version(f->w), 3);
    assert_u64_equal(c.out.a, 12);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 3);
    assert_int_equal(band_waiter_is_pending(&f->ops[0].op.w), 1);
    assert_int_equal(band_watch_close(f->w), 0); /* ends the last re-arm */
    assert_int_equal(WAKES(&f->ops[0]), 4);
    assert_int_equal(atomic_load(&f->ops[0].rec.status), BAND_ECLOSED);
}

/* A wake may close and destroy... here: close from inside a wake of a send. */
static void hook_close(struct wake_rec *rec)
{
    rec->hook_rc = band_watch_close(rec->ctx);
}

static void test_wake_closes(void **state)
{
    struct fixture *f = *state;
    struct val out[2];
    f->ops[0].rec.hook = hook_close;
    f->ops[0].rec.ctx = f->w;
    assert_int_equal(band_watch_recv_async(&f->rx[0], &out[0], &f->ops[0].op), BAND_PENDING);
    assert_int_equal(band_watch_recv_async(&f->rx[1], &out[1], &f->ops[1].op), BAND_PENDING);
    send_val(f->w, 1);
    assert_int_equal(f->ops[0].rec.hook_rc, 0);
    assert_int_equal(WAKES(&f->ops[0]), 1);
    assert_int_equal(WAKES(&f->ops[1]), 1); /* woken by the send, not by the close */
    assert_int_equal(atomic_load(&f->ops[1].rec.status), 0);
    assert_u64_equal(out[1].a, 1);
    assert_int_equal(band_watch_is_closed(f->w), 1);
}

/* ---------------------------------------------------------------------------------- */
/* overflow                                                                            */

static void test_version_overflow(void **state)
{
    struct fixture *f = *state;
    band__watch_set_version(f->w, UINT64_MAX - 1);
    assert_int_equal(band_watch_rx_init(&f->rx[0], f->w), 0);
    send_val(f->w, 1);
    assert_u64_equal(band_watch_version(f->w), UINT64_MAX);
    struct val v = mk(2);
    assert_int_equal(band_watch_send(f->w, &v), BAND_EOVERFLOW);
    assert_u64_equal(band_watch_version(f->w), UINT64_MAX);
    struct val got;
    assert_int_equal(band_watch_read(f->w, &got, NULL), 0);
    assert_u64_equal(got.a, 1); /* nothing changed */
    assert_int_equal(band_watch_try_recv(&f->rx[0], &got), 0);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), UINT64_MAX);
}

/* ---------------------------------------------------------------------------------- */
/* the non-waiting operations never take the lock                                     */

struct nolock_arg {
    band_watch *w;
    band_watch_rx *rx;
    atomic_int done;
    int rc[8];
    struct val out[3];
    uint64_t ver[3];
};

static int nolock_thread(void *p)
{
    struct nolock_arg *a = p;
    struct val v = mk(5);
    a->rc[0] = band_watch_try_recv(a->rx, &a->out[0]); /* nothing new */
    a->rc[1] = band_watch_send(a->w, &v);
    a->rc[2] = band_watch_try_recv(a->rx, &a->out[0]);
    a->rc[3] = band_watch_try_recv(a->rx, &a->out[1]); /* seen */
    v = mk(6);
    a->rc[4] = band_watch_send(a->w, &v);
    a->rc[5] = band_watch_read(a->w, &a->out[1], &a->ver[0]);
    a->rc[6] = band_watch_rx_read(a->rx, &a->out[2], &a->ver[1]);
    a->rc[7] = band_watch_mark_seen(a->rx);
    a->ver[2] = band_watch_version(a->w);
    atomic_store(&a->done, 1);
    return 0;
}

static bool nolock_done(void *p)
{
    return atomic_load(&((struct nolock_arg *)p)->done) != 0;
}

/* Another thread holds the watch's internal lock: sends with nobody waiting, try_recv,
 * read, rx_read and mark_seen still complete, with their usual answers. (With a lock on
 * those paths the worker blocks until the lock is released and the wait below fails.) */
static void test_try_paths_take_no_lock(void **state)
{
    struct fixture *f = *state;
    struct nolock_arg a;
    memset(&a, 0, sizeof(a));
    a.w = f->w;
    a.rx = &f->rx[0];
    assert_int_equal(pthread_mutex_lock(band__watch_lock(f->w)), 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, nolock_thread, &a), 0);
    bool done = test_wait_until(nolock_done, &a, 10 * BAND_SEC);
    assert_int_equal(pthread_mutex_unlock(band__watch_lock(f->w)), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_true(done);
    const int want[8] = {BAND_EAGAIN, 0, 0, BAND_EAGAIN, 0, 0, 0, 0};
    for (int i = 0; i < 8; i++)
        assert_int_equal(a.rc[i], want[i]);
    assert_u64_equal(a.out[0].a, 5);
    assert_u64_equal(a.out[0].b, ~UINT64_C(5));
    assert_u64_equal(a.out[1].a, 6);
    assert_u64_equal(a.out[2].a, 6);
    assert_u64_equal(a.ver[0], 2);
    assert_u64_equal(a.ver[1], 2);
    assert_u64_equal(a.ver[2], 2);
    assert_u64_equal(band_watch_rx_seen(&f->rx[0]), 2);
    band_watch_stats st;
    assert_int_equal(band_watch_get_stats(f->w, &st), 0);
    assert_u64_equal(st.sends, 2);
    assert_u64_equal(st.delivered, 1);
    assert_u64_equal(st.version, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test_setup_teardown(test_null_and_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_read_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_recv_and_skipping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_read_and_mark_seen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_wakes_every_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_async_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_wait_per_cursor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_both_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_woken_by_send_and_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_with_deadline_gets_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_calls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_paths_take_no_lock, setup, teardown),
    };
    return cmocka_run_group_tests_name("watch", tests, NULL, NULL);
}
