/*
 * test_uv.c - libband-uv on a real uv loop: completions delivered asynchronously on the
 * loop thread (also for grants made on other threads), deadlines that never fire early and
 * return partial grants, cancel before and after completion, close with pending
 * operations, sends and receives across threads, argument checks, and 10^4 grants from
 * another thread in bursts whose async signals coalesce.
 *
 * One test reaches into the adapter (uv_internal.h) to hold close back the way a wake
 * still inside uv_async_send() does.
 *
 * Callbacks run on this (the test's main) thread inside uv_run(); they only record what
 * they saw, and the test asserts after uv_run() returns. Every fixture has an unreferenced
 * guard timer that stops a loop that would otherwise hang, and teardown checks that the
 * adapter closes completely: uv_loop_close() == 0.
 */
#include "test.h"

#include <sched.h>
#include <string.h>

#include "uv_internal.h" /* band/uv.h, and the adapter's fields for one test */

#define GUARD_MS 20000 /* a test whose loop runs this long has hung */

struct fixture;

/* One operation and what its callback saw. */
struct rec {
    band_uv_op op;
    struct fixture *f;
    int id;
    int calls;
    int status;
    int order;     /* delivery sequence number */
    int thread_ok; /* the callback ran on the loop thread */
    band_time at;  /* band_now() in the callback */
    uint64_t val;  /* send source / recv destination */
    uint64_t bytes;
    void (*then)(struct rec *r); /* optional: run by the callback after recording */
};

struct fixture {
    uv_loop_t loop;
    uv_timer_t guard;
    int hung;
    band_uv *u;
    pthread_t loop_thread;
    int delivered;
    int closed_calls;
    int delivered_at_close; /* callbacks run before on_closed */
    band_sem *sem;
    band_chan *chan;
};

static void guard_cb(uv_timer_t *t)
{
    struct fixture *f = t->data;
    f->hung = 1;
    uv_stop(&f->loop);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (uv_loop_init(&f->loop) != 0)
        return -1;
    uv_timer_init(&f->loop, &f->guard);
    f->guard.data = f;
    uv_timer_start(&f->guard, guard_cb, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&f->guard);
    f->loop_thread = pthread_self();
    if (band_uv_create(&f->loop, &f->u) != 0)
        return -1;
    if (band_sem_create(&f->sem, 0, NULL) != 0)
        return -1;
    if (band_chan_create(&f->chan, sizeof(uint64_t), 4, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static void on_closed(void *data)
{
    struct fixture *f = data;
    f->closed_calls++;
    f->delivered_at_close = f->delivered;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int ok = 1;
    if (f->u != NULL) {
        ok &= band_uv_close(f->u, on_closed, f) == 0;
        uv_run(&f->loop, UV_RUN_DEFAULT);
        ok &= f->closed_calls == 1;
    }
    uv_close((uv_handle_t *)&f->guard, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    ok &= uv_loop_close(&f->loop) == 0;
    ok &= !f->hung;
    band_sem_close(f->sem);
    ok &= band_sem_destroy(f->sem) == 0;
    band_chan_close(f->chan);
    ok &= band_chan_destroy(f->chan) == 0;
    free(f);
    return ok ? 0 : -1;
}

static void rec_cb(band_uv_op *op, int status)
{
    struct rec *r = op->data;
    r->calls++;
    r->status = status;
    r->order = r->f->delivered++;
    r->thread_ok = pthread_equal(pthread_self(), r->f->loop_thread);
    r->at = band_now();
    if (r->then != NULL)
        r->then(r);
}

static void rec_init(struct rec *r, struct fixture *f, int id)
{
    memset(r, 0, sizeof(*r));
    r->op.data = r;
    r->f = f;
    r->id = id;
    r->status = 12345;
    r->order = -1;
}

/* Runs the loop until it has nothing left to do (or the guard stops it). */
static void run(struct fixture *f)
{
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_false(f->hung);
}

static void assert_once(const struct rec *r, int status)
{
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->status, status);
    assert_true(r->thread_ok);
}

/* ---------------------------------------------------------------------------------- */
/* create, close, argument checks                                                      */

static void test_create_close(void **state)
{
    struct fixture *f = *state;
    band_uv *u = (band_uv *)(uintptr_t)0x1234;
    assert_int_equal(band_uv_create(NULL, &u), BAND_EINVAL);
    assert_int_equal(band_uv_create(&f->loop, NULL), BAND_EINVAL);
    assert_ptr_equal(u, (band_uv *)(uintptr_t)0x1234);
    assert_int_equal(band_uv_close(NULL, NULL, NULL), BAND_EINVAL);

    /* An idle adapter does not keep the loop alive. */
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);

    /* A second adapter on the same loop, closed without a callback. */
    assert_int_equal(band_uv_create(&f->loop, &u), 0);
    assert_int_equal(band_uv_close(u, NULL, NULL), 0);
    assert_int_equal(band_uv_close(u, NULL, NULL), BAND_ECLOSED); /* still closing */
    run(f);

    assert_int_equal(band_uv_close(f->u, on_closed, f), 0);
    assert_int_equal(f->closed_calls, 0); /* never from inside close */
    f->u = NULL;
    run(f);
    assert_int_equal(f->closed_calls, 1);
}

static void test_bad_input(void **state)
{
    struct fixture *f = *state;
    struct rec r, q;
    rec_init(&r, f, 0);
    rec_init(&q, f, 1);
    uint64_t v = 7, out = 0;
    band_uv *u = f->u;
    band_uv_op *op = &r.op;

    assert_int_equal(band_uv_acquire(NULL, op, f->sem, 1, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_acquire(u, NULL, f->sem, 1, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_acquire(u, op, NULL, 1, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_acquire(u, op, f->sem, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_acquire(u, op, f->sem, BAND_MAX_UNITS + 1, BAND_FOREVER, rec_cb),
                     BAND_EINVAL);
    assert_int_equal(band_uv_send(NULL, op, f->chan, &v, 8, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_send(u, op, NULL, &v, 8, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_send(u, op, f->chan, NULL, 8, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_send(u, op, f->chan, &v, 8, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(
        band_uv_send(u, op, f->chan, &v, BAND_MAX_UNITS + 1, BAND_FOREVER, rec_cb),
        BAND_EINVAL); /* the channel's own EINVAL is returned too */
    assert_int_equal(band_uv_recv(NULL, op, f->chan, &out, NULL, BAND_FOREVER, rec_cb),
                     BAND_EINVAL);
    assert_int_equal(band_uv_recv(u, op, NULL, &out, NULL, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_recv(u, op, f->chan, NULL, NULL, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_recv(u, op, f->chan, &out, NULL, BAND_FOREVER, NULL), BAND_EINVAL);

    /* A channel with a drop policy refuses sends (use band_chan_offer there). */
    band_chan *drop;
    band_chan_opts o = {.overflow = BAND_CHAN_DROP_OLDEST};
    assert_int_equal(band_chan_create(&drop, 8, 2, &o), 0);
    assert_int_equal(band_uv_send(u, op, drop, &v, 8, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_chan_destroy(drop), 0);

    /* Cancel and take_permit on ops that were never submitted. */
    assert_int_equal(band_uv_cancel(NULL), BAND_EINVAL);
    assert_int_equal(band_uv_cancel(op), BAND_EINVAL);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(NULL, &p), BAND_EINVAL);
    assert_int_equal(band_uv_op_take_permit(op, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_op_take_permit(op, &p), BAND_EINVAL);

    /* A pending op cannot be submitted again, in any form. */
    assert_int_equal(band_uv_acquire(u, op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(u, op, f->sem, 1, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_send(u, op, f->chan, &v, 8, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_recv(u, op, f->chan, &out, NULL, BAND_FOREVER, rec_cb), BAND_EINVAL);
    assert_int_equal(band_uv_op_take_permit(op, &p), BAND_EINVAL); /* not completed */
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 1); /* still the one acquisition */

    /* None of the refused submissions ever calls back. */
    assert_int_equal(uv_run(&f->loop, UV_RUN_NOWAIT), 1); /* the pending op keeps it alive */
    assert_int_equal(r.calls, 0);

    /* A closing adapter refuses new work with BAND_ECLOSED. */
    assert_int_equal(band_uv_close(u, on_closed, f), 0);
    f->u = NULL;
    assert_int_equal(band_uv_acquire(u, &q.op, f->sem, 1, BAND_FOREVER, rec_cb), BAND_ECLOSED);
    assert_int_equal(band_uv_send(u, &q.op, f->chan, &v, 8, BAND_FOREVER, rec_cb), BAND_ECLOSED);
    assert_int_equal(band_uv_recv(u, &q.op, f->chan, &out, NULL, BAND_FOREVER, rec_cb),
                     BAND_ECLOSED);
    run(f);
    assert_once(&r, BAND_ECANCELED);
    assert_int_equal(q.calls, 0);
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(band_uv_cancel(op), BAND_EINVAL); /* delivered: no longer pending */
}

/* ---------------------------------------------------------------------------------- */
/* completions                                                                          */

static void test_immediate_grant_async(void **state)
{
    struct fixture *f = *state;
    struct rec r[3];
    for (int i = 0; i < 3; i++)
        rec_init(&r[i], f, i);
    assert_int_equal(band_sem_release(f->sem, 5), 0);

    /* Acquire, send and recv that all complete during submission: no callback yet. */
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 3, BAND_FOREVER, rec_cb), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);
    r[1].val = 42;
    assert_int_equal(band_uv_send(f->u, &r[1].op, f->chan, &r[1].val, 8, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(
        band_uv_recv(f->u, &r[2].op, f->chan, &r[2].val, &r[2].bytes, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EALREADY); /* completed, not delivered */
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].calls, 0);

    run(f);
    for (int i = 0; i < 3; i++) {
        assert_once(&r[i], 0);
        assert_int_equal(r[i].order, i); /* in completion order */
    }
    assert_u64_equal(r[2].val, 42);
    assert_u64_equal(r[2].bytes, 8);

    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r[0].op, &p), 0);
    assert_ptr_equal(p.sem, f->sem);
    assert_u64_equal(p.count, 3);
    band_permit p2 = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r[0].op, &p2), BAND_EINVAL); /* taken */
    assert_int_equal(band_uv_op_take_permit(&r[1].op, &p2), BAND_EINVAL); /* a send */
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 5);
}

struct releaser {
    band_sem *sem;
    uint64_t wait_for; /* queued waiters to wait for */
    uint64_t n;        /* then release this many */
    int one_by_one;    /* in n releases of 1, yielding between them */
};

static int releaser_main(void *arg)
{
    struct releaser *rl = arg;
    struct sem_waiters_cond c = {rl->sem, rl->wait_for};
    if (!test_wait_until(test_cond_sem_waiters, &c, 10 * BAND_SEC))
        return -1;
    if (!rl->one_by_one)
        return band_sem_release(rl->sem, rl->n);
    for (uint64_t i = 0; i < rl->n; i++) {
        int rc = band_sem_release(rl->sem, 1);
        if (rc != 0)
            return rc;
        sched_yield();
    }
    return 0;
}

static void test_grant_from_thread(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 2, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);

    struct releaser rl = {f->sem, 2, 3, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, releaser_main, &rl), 0);
    run(f); /* stays in the loop until both callbacks ran */
    assert_int_equal(test_thread_join(&t), 0);

    assert_once(&r[0], 0); /* on the loop thread, not the releasing one */
    assert_once(&r[1], 0);
    assert_int_equal(r[0].order, 0); /* FIFO */
    assert_int_equal(r[1].order, 1);
    band_permit p = BAND_PERMIT_INIT, q = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r[0].op, &p), 0);
    assert_int_equal(band_uv_op_take_permit(&r[1].op, &q), 0);
    assert_int_equal(band_permit_merge(&p, &q), 0);
    assert_u64_equal(p.count, 3);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 3);
}

/* ---------------------------------------------------------------------------------- */
/* deadlines                                                                            */

static void test_timeout_returns_partial(void **state)
{
    struct fixture *f = *state;
    struct rec r;
    rec_init(&r, f, 0);
    band_time t0 = band_now();
    band_time deadline = t0 + 30 * BAND_MSEC;
    assert_int_equal(band_uv_acquire(f->u, &r.op, f->sem, 5, deadline, rec_cb), 0);
    assert_int_equal(band_sem_release(f->sem, 2), 0); /* a partial grant to the head */
    assert_u64_equal(band_sem_available(f->sem), 0);

    run(f);
    assert_once(&r, BAND_ETIMEDOUT);
    assert_true(r.at >= deadline);                   /* never early */
    assert_u64_equal(band_sem_available(f->sem), 2); /* the partial grant came back */
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r.op, &p), BAND_EINVAL); /* nothing held */
}

static void test_deadlines_in_order_never_early(void **state)
{
    struct fixture *f = *state;
    /* Deadlines 1..40 ms away, submitted out of order; one sub-millisecond. */
    static const int ms[] = {25, 3, 40, 1, 12, 7, 33, 18};
    enum { N = TEST_COUNTOF(ms) };
    struct rec r[N + 1];
    band_time t0 = band_now();
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], f, i);
        band_time dl = t0 + ms[i] * BAND_MSEC + (i == 3 ? 300 * BAND_USEC : 0);
        r[i].val = (uint64_t)dl;
        assert_int_equal(band_uv_acquire(f->u, &r[i].op, f->sem, 1, dl, rec_cb), 0);
    }
    /* A receive with a deadline on an empty channel, and a send on a full one. */
    rec_init(&r[N], f, N);
    band_time rdl = t0 + 5 * BAND_MSEC;
    assert_int_equal(band_uv_recv(f->u, &r[N].op, f->chan, &r[N].bytes, NULL, rdl, rec_cb), 0);
    run(f);

    for (int i = 0; i < N; i++) {
        assert_once(&r[i], BAND_ETIMEDOUT);
        assert_true(r[i].at >= (band_time)r[i].val);
        for (int j = 0; j < N; j++) /* earlier deadline, earlier callback */
            if (ms[j] < ms[i])
                assert_true(r[j].order < r[i].order);
    }
    assert_once(&r[N], BAND_ETIMEDOUT);
    assert_true(r[N].at >= rdl);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.timeouts, N);
}

static void test_send_timeout_keeps_element(void **state)
{
    struct fixture *f = *state;
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(band_chan_try_send(f->chan, &i, 1), 0); /* full */
    struct rec r;
    rec_init(&r, f, 0);
    r.val = 99;
    band_time deadline = band_now() + 10 * BAND_MSEC;
    assert_int_equal(band_uv_send(f->u, &r.op, f->chan, &r.val, 1, deadline, rec_cb), 0);
    run(f);
    assert_once(&r, BAND_ETIMEDOUT);
    assert_true(r.at >= deadline);
    band_chan_stats st;
    assert_int_equal(band_chan_get_stats(f->chan, &st), 0);
    assert_u64_equal(st.len, 4);
    assert_u64_equal(st.waiting_senders, 0);
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t x = 1000;
        assert_int_equal(band_chan_try_recv(f->chan, &x, NULL), 0);
        assert_u64_equal(x, i); /* 99 never entered */
    }
}

static void test_past_deadline(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    band_time past = band_now() - 1;
    /* Nothing available: times out without waiting, but still through the callback. */
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 1, past, rec_cb), 0);
    assert_int_equal(r[0].calls, 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    /* Available: granted. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 1, past, rec_cb), 0);
    run(f);
    assert_once(&r[0], BAND_ETIMEDOUT);
    assert_once(&r[1], 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
}

/* ---------------------------------------------------------------------------------- */
/* cancel                                                                               */

static void test_cancel_returns_partial(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 5, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 4, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_sem_release(f->sem, 3), 0); /* partial grant: 3 of 5 */

    assert_int_equal(band_uv_cancel(&r[0].op), 0);
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EALREADY); /* cancel already asked */
    assert_int_equal(r[0].calls, 0);                           /* never from inside cancel */
    /* The 3 permits went to the next waiter (3 of 4), nothing became available. */
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.head_granted, 3);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_uv_cancel(&r[1].op), 0);
    assert_u64_equal(band_sem_available(f->sem), 3); /* all back */

    run(f);
    assert_once(&r[0], BAND_ECANCELED);
    assert_once(&r[1], BAND_ECANCELED);
    assert_int_equal(r[0].order, 0);
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EINVAL); /* delivered */
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.cancels, 2);
}

static void test_cancel_after_completion(void **state)
{
    struct fixture *f = *state;
    struct rec r;
    rec_init(&r, f, 0);
    assert_int_equal(band_uv_acquire(f->u, &r.op, f->sem, 2, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_sem_release(f->sem, 2), 0); /* the wake runs here, pushes r */
    assert_int_equal(band_uv_cancel(&r.op), BAND_EALREADY);
    assert_int_equal(band_uv_cancel(&r.op), BAND_EALREADY);
    assert_int_equal(r.calls, 0);
    run(f);
    assert_once(&r, 0); /* the real result */
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r.op, &p), 0);
    assert_u64_equal(p.count, 2);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);

    /* A receive whose element arrived before the cancel keeps it. */
    struct rec q;
    rec_init(&q, f, 1);
    assert_int_equal(band_uv_recv(f->u, &q.op, f->chan, &q.val, &q.bytes, BAND_FOREVER, rec_cb), 0);
    uint64_t v = 5;
    assert_int_equal(band_chan_try_send(f->chan, &v, 77), 0); /* handed to q */
    assert_int_equal(band_uv_cancel(&q.op), BAND_EALREADY);
    run(f);
    assert_once(&q, 0);
    assert_u64_equal(q.val, 5);
    assert_u64_equal(q.bytes, 77);
}

static void test_cancel_recv_and_send(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    r[0].val = 1234;
    assert_int_equal(
        band_uv_recv(f->u, &r[0].op, f->chan, &r[0].val, &r[0].bytes, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_cancel(&r[0].op), 0);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(band_chan_try_send(f->chan, &i, 1), 0); /* the cancelled recv got none */
    r[1].val = 50;
    assert_int_equal(band_uv_send(f->u, &r[1].op, f->chan, &r[1].val, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_cancel(&r[1].op), 0);
    run(f);
    assert_once(&r[0], BAND_ECANCELED);
    assert_u64_equal(r[0].val, 1234);
    assert_u64_equal(r[0].bytes, 0); /* *bytes only written on success */
    assert_once(&r[1], BAND_ECANCELED);
    band_chan_stats st;
    assert_int_equal(band_chan_get_stats(f->chan, &st), 0);
    assert_u64_equal(st.len, 4);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    uint64_t x;
    for (int i = 0; i < 4; i++)
        assert_int_equal(band_chan_try_recv(f->chan, &x, NULL), 0);
}

/* ---------------------------------------------------------------------------------- */
/* primitive outcomes through the callback                                             */

static void test_primitive_refusals(void **state)
{
    struct fixture *f = *state;
    struct rec r[4];
    for (int i = 0; i < 4; i++)
        rec_init(&r[i], f, i);
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 10, NULL), 0);
    /* Too big for the budget: accepted, E2BIG through the callback. */
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, band_budget_sem(b), 11, BAND_FOREVER, rec_cb),
                     0);
    /* Queued, then the semaphore closes: ECLOSED. */
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_recv(f->u, &r[2].op, f->chan, &r[2].val, NULL, BAND_FOREVER, rec_cb),
                     0);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_chan_close(f->chan), 0);
    /* Already closed: ECLOSED too. */
    assert_int_equal(band_uv_acquire(f->u, &r[3].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    run(f);
    assert_once(&r[0], BAND_E2BIG);
    assert_once(&r[1], BAND_ECLOSED);
    assert_once(&r[2], BAND_ECLOSED);
    assert_once(&r[3], BAND_ECLOSED);
    assert_int_equal(band_budget_destroy(b), 0);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                                */

static void test_close_with_pending(void **state)
{
    struct fixture *f = *state;
    struct rec r[6];
    for (int i = 0; i < 6; i++)
        rec_init(&r[i], f, i);
    band_time later = band_now() + 60 * BAND_SEC;
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 2, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 2, later, rec_cb), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* partial grant to r[0] */
    assert_int_equal(band_uv_recv(f->u, &r[2].op, f->chan, &r[2].val, NULL, later, rec_cb), 0);
    band_chan *full;
    assert_int_equal(band_chan_create(&full, sizeof(uint64_t), 1, NULL), 0);
    uint64_t v = 1;
    assert_int_equal(band_chan_try_send(full, &v, 0), 0);
    r[3].val = 2;
    assert_int_equal(band_uv_send(f->u, &r[3].op, full, &r[3].val, 0, BAND_FOREVER, rec_cb), 0);
    /* One op cancelled before the close, one completed and not yet delivered. */
    assert_int_equal(band_uv_acquire(f->u, &r[4].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_cancel(&r[4].op), 0);
    band_sem *s2;
    assert_int_equal(band_sem_create(&s2, 1, NULL), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[5].op, s2, 1, BAND_FOREVER, rec_cb), 0);

    assert_int_equal(band_uv_close(f->u, on_closed, f), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(r[i].calls, 0); /* never from inside close */
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EALREADY);
    f->u = NULL;
    run(f);

    for (int i = 0; i < 5; i++)
        assert_once(&r[i], BAND_ECANCELED);
    assert_once(&r[5], 0); /* had completed: its real result */
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(f->delivered_at_close, 6);      /* on_closed after every callback */
    assert_u64_equal(band_sem_available(f->sem), 1); /* the partial grant came back */
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_uv_op_take_permit(&r[5].op, &p), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_int_equal(band_sem_destroy(s2), 0);
    band_chan_stats cs;
    assert_int_equal(band_chan_get_stats(full, &cs), 0);
    assert_u64_equal(cs.len, 1);
    assert_u64_equal(cs.waiting_senders, 0);
    assert_int_equal(band_chan_destroy(full), 0);
    /* teardown checks uv_loop_close() == 0 */
}

static void close_from_cb(struct rec *r)
{
    assert_int_equal(band_uv_close(r->f->u, on_closed, r->f), 0);
    r->f->u = NULL;
}

static void test_close_from_callback(void **state)
{
    struct fixture *f = *state;
    struct rec r[3];
    for (int i = 0; i < 3; i++)
        rec_init(&r[i], f, i);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    r[0].then = close_from_cb;
    assert_int_equal(band_uv_acquire(f->u, &r[0].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[1].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    assert_int_equal(band_uv_acquire(f->u, &r[2].op, f->sem, 1, band_now() + BAND_SEC, rec_cb), 0);
    run(f);
    assert_once(&r[0], 0);
    assert_once(&r[1], BAND_ECANCELED);
    assert_once(&r[2], BAND_ECANCELED);
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
}

/* The sem is released by another thread while the loop closes the adapter. */
static void test_close_racing_grant(void **state)
{
    struct fixture *f = *state;
    enum { N = 64 };
    struct rec *r = calloc(N, sizeof(*r));
    assert_non_null(r);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], f, i);
        assert_int_equal(band_uv_acquire(f->u, &r[i].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    }
    struct releaser rl = {f->sem, N, N, 1};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, releaser_main, &rl), 0);
    /* Let some grants through before closing. */
    while (band_sem_available(f->sem) == 0) {
        band_sem_stats st;
        assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
        if (st.grants > N / 2)
            break;
        sched_yield();
    }
    assert_int_equal(band_uv_close(f->u, on_closed, f), 0);
    f->u = NULL;
    run(f);
    assert_int_equal(test_thread_join(&t), 0);
    uint64_t granted = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_true(r[i].status == 0 || r[i].status == BAND_ECANCELED);
        if (r[i].status == 0) {
            band_permit p = BAND_PERMIT_INIT;
            assert_int_equal(band_uv_op_take_permit(&r[i].op, &p), 0);
            granted += p.count;
            assert_int_equal(band_permit_release(&p), 0);
        }
    }
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(f->delivered_at_close, N);
    assert_u64_equal(band_sem_available(f->sem), N); /* conservation */
    (void)granted;
    free(r);
}

/* A wake that pushed its op may still be inside uv_async_send() when the loop has
 * delivered that op: close must not free the adapter until the wake is out. */
static void test_close_waits_for_waker(void **state)
{
    struct fixture *f = *state;
    band_uv *u = f->u;
    struct rec r;
    rec_init(&r, f, 0);
    assert_int_equal(band_uv_acquire(u, &r.op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    atomic_fetch_add(&u->wakers, 1); /* as band_uv__wake() does before its push */
    assert_int_equal(band_uv_close(u, on_closed, f), 0);
    f->u = NULL;
    band_time until = band_now() + 20 * BAND_MSEC;
    while (band_now() < until)
        assert_int_not_equal(uv_run(&f->loop, UV_RUN_ONCE), 0); /* kept alive, re-checking */
    assert_once(&r, BAND_ECANCELED);
    assert_int_equal(f->closed_calls, 0); /* held back by the waker */
    atomic_fetch_sub(&u->wakers, 1);      /* the wake leaves */
    run(f);
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(f->delivered_at_close, 1);
}

/* ---------------------------------------------------------------------------------- */
/* callbacks that reuse or free their op                                               */

struct chain {
    struct rec r;
    int left; /* resubmissions still to do */
};

static void chain_then(struct rec *r)
{
    struct chain *c = (struct chain *)r;
    band_permit p = BAND_PERMIT_INIT;
    if (r->status != 0 || band_uv_op_take_permit(&r->op, &p) != 0)
        return;
    band_permit_release(&p);
    if (c->left-- > 0)
        band_uv_acquire(r->f->u, &r->op, r->f->sem, 1, BAND_FOREVER, rec_cb); /* reuse */
}

static void free_then(struct rec *r)
{
    free(r);
}

static void test_reuse_and_free_in_callback(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    struct chain c;
    rec_init(&c.r, f, 0);
    c.r.then = chain_then;
    c.left = 999;
    /* Each resubmission completes at once; the loop must still turn between them. */
    assert_int_equal(band_uv_acquire(f->u, &c.r.op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    struct rec *heap = malloc(sizeof(*heap));
    assert_non_null(heap);
    rec_init(heap, f, 1);
    heap->then = free_then; /* freed inside its callback (ASan checks no later access) */
    assert_int_equal(band_uv_recv(f->u, &heap->op, f->chan, &heap->val, NULL,
                                  band_now() + 5 * BAND_MSEC, rec_cb),
                     0);
    int turns = 0;
    while (uv_run(&f->loop, UV_RUN_ONCE) != 0 && turns < 100000)
        turns++;
    assert_int_equal(c.r.calls, 1000);
    assert_true(turns >= 999); /* one delivery batch per loop turn */
    assert_u64_equal(band_sem_available(f->sem), 1);
}

/* ---------------------------------------------------------------------------------- */
/* channels across threads                                                             */

enum { XFER = 2000 };

struct xfer {
    struct fixture *f;
    struct rec r;
    uint64_t next; /* loop side: next value expected / to send */
    int bad;       /* loop side: an out-of-order value */
    band_chan *chan;
    uint64_t seen[XFER]; /* thread side */
};

static int producer_main(void *arg)
{
    struct xfer *x = arg;
    for (uint64_t i = 0; i < XFER; i++)
        if (band_chan_send(x->chan, &i, i, band_deadline_after(10 * BAND_SEC), NULL) != 0)
            return -1;
    return 0;
}

static int consumer_main(void *arg)
{
    struct xfer *x = arg;
    for (uint64_t i = 0; i < XFER; i++) {
        uint64_t bytes = 0;
        if (band_chan_recv(x->chan, &x->seen[i], &bytes, band_deadline_after(10 * BAND_SEC),
                           NULL) != 0)
            return -1;
        if (bytes != x->seen[i] + 1)
            return -2;
    }
    return 0;
}

static void recv_then(struct rec *r)
{
    struct xfer *x = (struct xfer *)(void *)((char *)r - offsetof(struct xfer, r));
    if (r->status != 0)
        return;
    if (r->val != x->next || r->bytes != x->next)
        x->bad = 1;
    if (++x->next < XFER) {
        r->calls = 0;
        band_uv_recv(r->f->u, &r->op, x->chan, &r->val, &r->bytes, BAND_FOREVER, rec_cb);
    }
}

static void send_then(struct rec *r)
{
    struct xfer *x = (struct xfer *)(void *)((char *)r - offsetof(struct xfer, r));
    if (r->status != 0)
        return;
    if (++x->next < XFER) {
        r->calls = 0;
        r->val = x->next; /* the element stays valid until the callback */
        band_uv_send(r->f->u, &r->op, x->chan, &r->val, x->next + 1, BAND_FOREVER, rec_cb);
    }
}

static void test_send_recv_threads(void **state)
{
    struct fixture *f = *state;
    struct xfer *in = calloc(1, sizeof(*in)), *out = calloc(1, sizeof(*out));
    assert_non_null(in);
    assert_non_null(out);
    in->f = out->f = f;
    in->chan = f->chan;
    assert_int_equal(band_chan_create(&out->chan, sizeof(uint64_t), 2, NULL), 0);

    /* A thread sends into f->chan, the loop receives; the loop sends into out->chan, a
     * thread receives. Both at once, on one loop. */
    rec_init(&in->r, f, 0);
    in->r.then = recv_then;
    assert_int_equal(
        band_uv_recv(f->u, &in->r.op, in->chan, &in->r.val, &in->r.bytes, BAND_FOREVER, rec_cb), 0);
    rec_init(&out->r, f, 1);
    out->r.then = send_then;
    out->r.val = 0;
    assert_int_equal(
        band_uv_send(f->u, &out->r.op, out->chan, &out->r.val, 1, BAND_FOREVER, rec_cb), 0);

    struct test_thread prod, cons;
    assert_int_equal(test_thread_start(&prod, producer_main, in), 0);
    assert_int_equal(test_thread_start(&cons, consumer_main, out), 0);
    run(f);
    assert_int_equal(test_thread_join(&prod), 0);
    assert_int_equal(test_thread_join(&cons), 0);

    assert_int_equal(in->bad, 0);
    assert_u64_equal(in->next, XFER);
    assert_u64_equal(out->next, XFER);
    for (uint64_t i = 0; i < XFER; i++)
        assert_u64_equal(out->seen[i], i);
    assert_true(in->r.thread_ok && out->r.thread_ok);
    assert_int_equal(band_chan_destroy(out->chan), 0);
    free(in);
    free(out);
}

/* ---------------------------------------------------------------------------------- */
/* many operations, coalesced async signals                                            */

enum { MANY = 10000 };

struct burster {
    band_sem *sem;
    uint64_t seed;
};

static int burster_main(void *arg)
{
    struct burster *b = arg;
    struct sem_waiters_cond c = {b->sem, MANY};
    if (!test_wait_until(test_cond_sem_waiters, &c, 20 * BAND_SEC))
        return -1;
    uint64_t left = MANY;
    while (left > 0) {
        uint64_t n = test_rng_range(&b->seed, 1, 97);
        if (n > left)
            n = left;
        if (band_sem_release(b->sem, n) != 0)
            return -2;
        left -= n;
        if (test_rng_range(&b->seed, 0, 3) == 0)
            sched_yield();
    }
    return 0;
}

static void test_many_coalesced(void **state)
{
    struct fixture *f = *state;
    struct rec *r = calloc(MANY, sizeof(*r));
    assert_non_null(r);
    for (int i = 0; i < MANY; i++) {
        rec_init(&r[i], f, i);
        assert_int_equal(band_uv_acquire(f->u, &r[i].op, f->sem, 1, BAND_FOREVER, rec_cb), 0);
    }
    struct burster b = {f->sem, 12345};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, burster_main, &b), 0);
    int turns = 0;
    while (uv_run(&f->loop, UV_RUN_ONCE) != 0)
        turns++;
    assert_false(f->hung);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(f->delivered, MANY);
    uint64_t held = 0;
    for (int i = 0; i < MANY; i++) {
        if (r[i].calls != 1 || r[i].status != 0 || r[i].order != i || !r[i].thread_ok)
            fail_msg("op %d: calls %d status %d order %d", i, r[i].calls, r[i].status, r[i].order);
        band_permit p = BAND_PERMIT_INIT;
        assert_int_equal(band_uv_op_take_permit(&r[i].op, &p), 0);
        held += p.count;
        p = (band_permit)BAND_PERMIT_INIT; /* released in one go below */
    }
    assert_u64_equal(held, MANY);
    assert_u64_equal(band_sem_available(f->sem), 0);
    assert_int_equal(band_sem_release(f->sem, held), 0);
    print_message("%d callbacks in %d loop turns\n", MANY, turns);
    assert_true(turns < MANY); /* signals coalesced: far fewer turns than completions */
    free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_close),
        T(test_bad_input),
        T(test_immediate_grant_async),
        T(test_grant_from_thread),
        T(test_timeout_returns_partial),
        T(test_deadlines_in_order_never_early),
        T(test_send_timeout_keeps_element),
        T(test_past_deadline),
        T(test_cancel_returns_partial),
        T(test_cancel_after_completion),
        T(test_cancel_recv_and_send),
        T(test_primitive_refusals),
        T(test_close_with_pending),
        T(test_close_from_callback),
        T(test_close_racing_grant),
        T(test_close_waits_for_waker),
        T(test_reuse_and_free_in_callback),
        T(test_send_recv_threads),
        T(test_many_coalesced),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
