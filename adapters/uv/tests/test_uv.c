/* SPDX-License-Identifier: MIT */
/*
 * test_uv.c - libband-uv on a real uv loop: completions delivered asynchronously on the
 * loop thread (also for grants made on other threads), deadlines that never fire early and
 * return partial grants, cancel before and after completion, cancellation tokens (also
 * requested from a signal handler), close with pending operations, sends and receives
 * across threads, rate bookings completed at their due time, argument checks, no
 * allocation per operation, and 10^4 grants from another thread in bursts whose async
 * signals coalesce. test_uv_prims.c runs the same bridge over every primitive.
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

#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <string.h>

#include "uv_internal.h" /* band/uv.h, and the adapter's fields for one test */

#define GUARD_MS 20000 /* a test whose loop runs this long has hung */

struct fixture;

/* One operation (the adapter's op and the primitive's) and what its callback saw. */
struct rec {
    band_uv_op op;
    band_waiter w;                 /* acquisitions */
    struct band_chan_send_op send; /* sends */
    struct band_chan_recv_op recv; /* receives */
    band_sem *sem;                 /* acquisitions: where the permits come from */
    uint64_t n;
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
    void *ctx;                   /* for then() */
    int aux;                     /* what then() saw */
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
    band_uv *dying;         /* the adapter being closed: on_closed destroys it */
    int destroy_rc;         /* what band_uv_destroy() answered in on_closed */
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
    if (band_uv_create(&f->u, &f->loop) != 0)
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
    if (f->dying != NULL) {
        /* The close has completed: the adapter may be freed from here. */
        f->destroy_rc = band_uv_is_closed(f->dying) == 1 ? band_uv_destroy(f->dying) : -1;
        f->dying = NULL;
    }
}

/* Close @u with on_closed, which destroys it once the close completed. */
static int close_uv(struct fixture *f, band_uv *u)
{
    f->dying = u;
    return band_uv_close(u, on_closed, f);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int ok = 1;
    if (f->u != NULL) {
        ok &= close_uv(f, f->u) == 0;
        uv_run(&f->loop, UV_RUN_DEFAULT);
        ok &= f->closed_calls == 1;
    }
    ok &= f->dying == NULL && f->destroy_rc == 0;
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

/* The wake of waiters the adapter does not own; never expected to run. */
static void rec_wake_unused(band_waiter *w)
{
    (void)w;
    fail_msg("a waiter outside the adapter was woken");
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

/* One non-blocking turn of the loop. */
static void run_once_nowait(struct fixture *f)
{
    (void)uv_run(&f->loop, UV_RUN_NOWAIT);
}

static void assert_once(const struct rec *r, int status)
{
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->status, status);
    assert_true(r->thread_ok);
}

/* The three steps of every operation: bind the primitive's waiter, submit, start. */

static int acquire_tok(band_uv *u, struct rec *r, band_sem *s, uint64_t n, band_time deadline,
                       band_cancel *token)
{
    int rc = band_uv_bind(u, &r->op, &r->w, rec_cb, deadline, token);
    if (rc != 0)
        return rc;
    r->sem = s;
    r->n = n;
    return band_uv_start(&r->op, band_sem_acquire_async(s, n, &r->w));
}

static int acquire(band_uv *u, struct rec *r, band_sem *s, uint64_t n, band_time deadline)
{
    return acquire_tok(u, r, s, n, deadline, NULL);
}

static int send_elem(band_uv *u, struct rec *r, band_chan *c, const void *elem, uint64_t bytes,
                     band_time deadline)
{
    int rc = band_uv_bind(u, &r->op, &r->send.w, rec_cb, deadline, NULL);
    if (rc != 0)
        return rc;
    return band_uv_start(&r->op, band_chan_send_async(c, elem, bytes, &r->send));
}

static int recv_elem(band_uv *u, struct rec *r, band_chan *c, void *out, band_time deadline)
{
    int rc = band_uv_bind(u, &r->op, &r->recv.w, rec_cb, deadline, NULL);
    if (rc != 0)
        return rc;
    return band_uv_start(&r->op, band_chan_recv_async(c, out, &r->recv));
}

/* The permits of an acquisition that reported 0 are the caller's: wrap them. */
static int take_permit(const struct rec *r, band_permit *p)
{
    return band_permit_adopt(p, r->sem, r->n);
}

/* ---------------------------------------------------------------------------------- */
/* create, close, argument checks                                                      */

static void test_create_close(void **state)
{
    struct fixture *f = *state;
    band_uv *u = (band_uv *)(uintptr_t)0x1234;
    assert_int_equal(band_uv_create(&u, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_create(NULL, &f->loop), BAND_EINVAL);
    assert_ptr_equal(u, (band_uv *)(uintptr_t)0x1234);
    assert_int_equal(band_uv_close(NULL, NULL, NULL), BAND_EINVAL);

    /* An idle adapter does not keep the loop alive. */
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);

    /* A second adapter on the same loop, closed without a callback, destroyed once the
     * loop returned. Destroy never closes for you: it refuses until the close completed. */
    assert_int_equal(band_uv_destroy(NULL), 0);
    assert_int_equal(band_uv_is_closed(NULL), 0);
    assert_int_equal(band_uv_create(&u, &f->loop), 0);
    assert_int_equal(band_uv_is_closed(u), 0);
    assert_int_equal(band_uv_destroy(u), BAND_EBUSY); /* open: its handles are on the loop */
    assert_int_equal(band_uv_close(u, NULL, NULL), 0);
    assert_int_equal(band_uv_is_closed(u), 1);
    assert_int_equal(band_uv_close(u, NULL, NULL), BAND_ECLOSED); /* still closing */
    assert_int_equal(band_uv_destroy(u), BAND_EBUSY);             /* handles still closing */
    run(f);
    assert_int_equal(band_uv_is_closed(u), 1);
    assert_int_equal(band_uv_destroy(u), 0);

    assert_int_equal(close_uv(f, f->u), 0);
    assert_int_equal(f->closed_calls, 0); /* never from inside close */
    f->u = NULL;
    run(f);
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(f->destroy_rc, 0); /* destroyed inside on_closed */
}

static void test_bad_input(void **state)
{
    struct fixture *f = *state;
    struct rec r, q;
    rec_init(&r, f, 0);
    rec_init(&q, f, 1);
    band_uv *u = f->u;
    band_uv_op *op = &r.op;
    band_waiter *w = &r.w;

    assert_int_equal(band_uv_bind(NULL, op, w, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_bind(u, NULL, w, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_bind(u, op, NULL, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_bind(u, op, w, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_at(NULL, op, rec_cb, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_at(u, NULL, rec_cb, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_at(u, op, NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_start(NULL, 0), BAND_EINVAL);
    assert_int_equal(band_uv_start(op, 0), BAND_EINVAL); /* never bound */
    assert_int_equal(band_uv_cancel(NULL), BAND_EINVAL);
    assert_int_equal(band_uv_cancel(op), BAND_EINVAL); /* never bound */

    /* A waiter already pending on a primitive cannot be bound (its wake is in use). */
    band_waiter other;
    band_waiter_init(&other, rec_wake_unused, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &other), BAND_PENDING);
    assert_int_equal(band_uv_bind(u, op, &other, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&other, BAND_ECANCELED), 0);

    /* Bound but not started: not cancellable, not bindable again, keeps the loop alive. */
    assert_int_equal(band_uv_bind(u, op, w, rec_cb, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_uv_cancel(op), BAND_EINVAL);
    assert_int_equal(band_uv_bind(u, op, &q.w, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_at(u, op, rec_cb, 0, NULL), BAND_EINVAL);
    /* A positive answer that is not BAND_PENDING is no band result: refused, op idle. */
    assert_int_equal(band_uv_start(op, BAND_PENDING + 1), BAND_EINVAL);
    assert_int_equal(band_uv_start(op, BAND_PENDING), BAND_EINVAL); /* idle again */

    /* A waiter initialised again after the bind lost the adapter's wake: refused. */
    assert_int_equal(band_uv_bind(u, op, w, rec_cb, BAND_FOREVER, NULL), 0);
    band_waiter_init(w, rec_wake_unused, NULL);
    assert_int_equal(band_uv_start(op, 0), BAND_EINVAL);

    /* The primitive's own refusals, BAND_EINVAL included, come through the callback. */
    assert_int_equal(acquire(u, &r, f->sem, BAND_MAX_UNITS + 1, BAND_FOREVER), 0);
    band_chan *drop;
    band_chan_opts o = {.overflow = BAND_CHAN_DROP_OLDEST};
    assert_int_equal(band_chan_create(&drop, 8, 2, &o), 0);
    uint64_t v = 7;
    assert_int_equal(send_elem(u, &q, drop, &v, 8, BAND_FOREVER), 0); /* a drop policy */
    assert_int_equal(r.calls + q.calls, 0);
    run(f);
    assert_once(&r, BAND_EINVAL);
    assert_once(&q, BAND_EINVAL);
    assert_int_equal(band_chan_destroy(drop), 0);

    /* A pending op cannot be bound again, in any form. */
    rec_init(&r, f, 0);
    assert_int_equal(acquire(u, &r, f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_uv_bind(u, op, &q.w, rec_cb, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_at(u, op, rec_cb, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_start(op, 0), BAND_EINVAL);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 1); /* still the one acquisition */

    /* None of the refused calls ever calls back. */
    assert_int_equal(uv_run(&f->loop, UV_RUN_NOWAIT), 1); /* the pending op keeps it alive */
    assert_int_equal(r.calls, 0);

    /* A closing adapter refuses new work with BAND_ECLOSED. */
    assert_int_equal(close_uv(f, u), 0);
    f->u = NULL;
    rec_init(&q, f, 1);
    assert_int_equal(band_uv_bind(u, &q.op, &q.w, rec_cb, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_uv_at(u, &q.op, rec_cb, 0, NULL), BAND_ECLOSED);
    assert_int_equal(band_uv_start(&q.op, 0), BAND_EINVAL); /* not bound */
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 3, BAND_FOREVER), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);
    r[1].val = 42;
    assert_int_equal(send_elem(f->u, &r[1], f->chan, &r[1].val, 8, BAND_FOREVER), 0);
    assert_int_equal(recv_elem(f->u, &r[2], f->chan, &r[2].val, BAND_FOREVER), 0);
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EALREADY); /* completed, not delivered */
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].calls, 0);

    run(f);
    for (int i = 0; i < 3; i++) {
        assert_once(&r[i], 0);
        assert_int_equal(r[i].order, i); /* in completion order */
    }
    assert_u64_equal(r[2].val, 42);
    assert_u64_equal(r[2].recv.bytes, 8);

    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(take_permit(&r[0], &p), 0);
    assert_ptr_equal(p.sem, f->sem);
    assert_u64_equal(p.count, 3);
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 2, BAND_FOREVER), 0);
    assert_int_equal(acquire(f->u, &r[1], f->sem, 1, BAND_FOREVER), 0);

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
    assert_int_equal(take_permit(&r[0], &p), 0);
    assert_int_equal(take_permit(&r[1], &q), 0);
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
    assert_int_equal(acquire(f->u, &r, f->sem, 5, deadline), 0);
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
    assert_u64_equal(st.in_use, 0); /* nothing held */
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
        assert_int_equal(acquire(f->u, &r[i], f->sem, 1, dl), 0);
    }
    /* A receive with a deadline on an empty channel, and a send on a full one. */
    rec_init(&r[N], f, N);
    band_time rdl = t0 + 5 * BAND_MSEC;
    assert_int_equal(recv_elem(f->u, &r[N], f->chan, &r[N].bytes, rdl), 0);
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
    assert_int_equal(send_elem(f->u, &r, f->chan, &r.val, 1, deadline), 0);
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 1, past), 0);
    assert_int_equal(r[0].calls, 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    /* Available: granted. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(acquire(f->u, &r[1], f->sem, 1, past), 0);
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 5, BAND_FOREVER), 0);
    assert_int_equal(acquire(f->u, &r[1], f->sem, 4, BAND_FOREVER), 0);
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
    assert_int_equal(acquire(f->u, &r, f->sem, 2, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 2), 0); /* the wake runs here, pushes r */
    assert_int_equal(band_uv_cancel(&r.op), BAND_EALREADY);
    assert_int_equal(band_uv_cancel(&r.op), BAND_EALREADY);
    assert_int_equal(r.calls, 0);
    run(f);
    assert_once(&r, 0); /* the real result */
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(take_permit(&r, &p), 0);
    assert_u64_equal(p.count, 2);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);

    /* A receive whose element arrived before the cancel keeps it. */
    struct rec q;
    rec_init(&q, f, 1);
    assert_int_equal(recv_elem(f->u, &q, f->chan, &q.val, BAND_FOREVER), 0);
    uint64_t v = 5;
    assert_int_equal(band_chan_try_send(f->chan, &v, 77), 0); /* handed to q */
    assert_int_equal(band_uv_cancel(&q.op), BAND_EALREADY);
    run(f);
    assert_once(&q, 0);
    assert_u64_equal(q.val, 5);
    assert_u64_equal(q.recv.bytes, 77);
}

static void test_cancel_recv_and_send(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    r[0].val = 1234;
    assert_int_equal(recv_elem(f->u, &r[0], f->chan, &r[0].val, BAND_FOREVER), 0);
    assert_int_equal(band_uv_cancel(&r[0].op), 0);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(band_chan_try_send(f->chan, &i, 1), 0); /* the cancelled recv got none */
    r[1].val = 50;
    assert_int_equal(send_elem(f->u, &r[1], f->chan, &r[1].val, 1, BAND_FOREVER), 0);
    assert_int_equal(band_uv_cancel(&r[1].op), 0);
    run(f);
    assert_once(&r[0], BAND_ECANCELED);
    assert_u64_equal(r[0].val, 1234);
    assert_u64_equal(r[0].recv.bytes, 0); /* nothing was received */
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
    assert_int_equal(acquire(f->u, &r[0], band_budget_sem(b), 11, BAND_FOREVER), 0);
    /* Queued, then the semaphore closes: ECLOSED. */
    assert_int_equal(acquire(f->u, &r[1], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(recv_elem(f->u, &r[2], f->chan, &r[2].val, BAND_FOREVER), 0);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_chan_close(f->chan), 0);
    /* Already closed: ECLOSED too. */
    assert_int_equal(acquire(f->u, &r[3], f->sem, 1, BAND_FOREVER), 0);
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 2, BAND_FOREVER), 0);
    assert_int_equal(acquire(f->u, &r[1], f->sem, 2, later), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* partial grant to r[0] */
    assert_int_equal(recv_elem(f->u, &r[2], f->chan, &r[2].val, later), 0);
    band_chan *full;
    assert_int_equal(band_chan_create(&full, sizeof(uint64_t), 1, NULL), 0);
    uint64_t v = 1;
    assert_int_equal(band_chan_try_send(full, &v, 0), 0);
    r[3].val = 2;
    assert_int_equal(send_elem(f->u, &r[3], full, &r[3].val, 0, BAND_FOREVER), 0);
    /* One op cancelled before the close, one completed and not yet delivered. */
    assert_int_equal(acquire(f->u, &r[4], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_uv_cancel(&r[4].op), 0);
    band_sem *s2;
    assert_int_equal(band_sem_create(&s2, 1, NULL), 0);
    assert_int_equal(acquire(f->u, &r[5], s2, 1, BAND_FOREVER), 0);

    assert_int_equal(close_uv(f, f->u), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(r[i].calls, 0); /* never from inside close */
    assert_int_equal(band_uv_cancel(&r[0].op), BAND_EALREADY);
    assert_int_equal(band_uv_destroy(f->u), BAND_EBUSY); /* callbacks still due */
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
    assert_int_equal(take_permit(&r[5], &p), 0);
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
    assert_int_equal(close_uv(r->f, r->f->u), 0);
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
    assert_int_equal(acquire(f->u, &r[0], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(acquire(f->u, &r[1], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(acquire(f->u, &r[2], f->sem, 1, band_now() + BAND_SEC), 0);
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
        assert_int_equal(acquire(f->u, &r[i], f->sem, 1, BAND_FOREVER), 0);
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
    assert_int_equal(close_uv(f, f->u), 0);
    f->u = NULL;
    run(f);
    assert_int_equal(test_thread_join(&t), 0);
    uint64_t granted = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_true(r[i].status == 0 || r[i].status == BAND_ECANCELED);
        if (r[i].status == 0) {
            band_permit p = BAND_PERMIT_INIT;
            assert_int_equal(take_permit(&r[i], &p), 0);
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
    assert_int_equal(acquire(u, &r, f->sem, 1, BAND_FOREVER), 0);
    atomic_fetch_add(&u->wakers, 1); /* as band_uv__wake() does before its push */
    assert_int_equal(close_uv(f, u), 0);
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
    if (r->status != 0 || take_permit(r, &p) != 0)
        return;
    band_permit_release(&p);
    if (c->left-- > 0)
        acquire(r->f->u, r, r->f->sem, 1, BAND_FOREVER); /* reuse */
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
    assert_int_equal(acquire(f->u, &c.r, f->sem, 1, BAND_FOREVER), 0);
    struct rec *heap = malloc(sizeof(*heap));
    assert_non_null(heap);
    rec_init(heap, f, 1);
    heap->then = free_then; /* freed inside its callback (ASan checks no later access) */
    assert_int_equal(recv_elem(f->u, heap, f->chan, &heap->val, band_now() + 5 * BAND_MSEC), 0);
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
    if (r->val != x->next || r->recv.bytes != x->next)
        x->bad = 1;
    if (++x->next < XFER) {
        r->calls = 0;
        recv_elem(r->f->u, r, x->chan, &r->val, BAND_FOREVER);
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
        send_elem(r->f->u, r, x->chan, &r->val, x->next + 1, BAND_FOREVER);
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
    assert_int_equal(recv_elem(f->u, &in->r, in->chan, &in->r.val, BAND_FOREVER), 0);
    rec_init(&out->r, f, 1);
    out->r.then = send_then;
    out->r.val = 0;
    assert_int_equal(send_elem(f->u, &out->r, out->chan, &out->r.val, 1, BAND_FOREVER), 0);

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
        assert_int_equal(acquire(f->u, &r[i], f->sem, 1, BAND_FOREVER), 0);
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
        assert_int_equal(take_permit(&r[i], &p), 0);
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

/* ---------------------------------------------------------------------------------- */
/* cancellation tokens                                                                 */

/* One token over many operations: a request cancels every one still waiting, leaves the
 * completed ones alone, and gives the partial grant back. Ops bound under the requested
 * token afterwards do not wait; ops under another token are untouched. */
static void test_token_cancels_many(void **state)
{
    struct fixture *f = *state;
    enum { N = 8 };
    band_cancel *tok, *other;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    assert_int_equal(band_cancel_create(&other, NULL), 0);
    struct rec r[N + 2];
    for (int i = 0; i < N + 2; i++)
        rec_init(&r[i], f, i);
    for (int i = 0; i < N; i++)
        assert_int_equal(acquire_tok(f->u, &r[i], f->sem, 2, BAND_FOREVER, tok), 0);
    assert_int_equal(acquire_tok(f->u, &r[N], f->sem, 2, BAND_FOREVER, other), 0);
    assert_int_equal(band_sem_release(f->sem, 5), 0);       /* r[0], r[1] granted, r[2] holds 1 */
    assert_int_equal(band_cancel_destroy(tok), BAND_EBUSY); /* the waiting ops' hooks */
    assert_int_equal(band_cancel_request(tok), 0);          /* the hooks only signal the loop */
    assert_int_equal(r[2].calls, 0);
    run_once_nowait(f);
    /* Bound under the requested token: withdrawn inside start, reported on the loop. */
    assert_int_equal(acquire_tok(f->u, &r[N + 1], f->sem, 1, BAND_FOREVER, tok), 0);
    assert_int_equal(band_uv_cancel(&r[N].op), 0);
    run(f);
    assert_once(&r[0], 0);
    assert_once(&r[1], 0);
    for (int i = 2; i < N; i++)
        assert_once(&r[i], BAND_ECANCELED);
    assert_once(&r[N], BAND_ECANCELED); /* by band_uv_cancel, not by the token */
    assert_once(&r[N + 1], BAND_ECANCELED);
    /* r[2]'s partial grant passed down the cancelled ops to r[N], which gave it back. */
    assert_u64_equal(band_sem_available(f->sem), 1);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.cancels, N - 2 + 1 + 1);
    assert_int_equal(band_sem_release(f->sem, 4), 0); /* r[0] and r[1] */
    assert_int_equal(band_cancel_destroy(tok), 0);
    assert_int_equal(band_cancel_destroy(other), 0);
}

static band_cancel *signal_token;

static void request_on_signal(int sig)
{
    (void)sig;
    (void)band_cancel_request(signal_token); /* async-signal-safe */
}

static void raise_cb(uv_timer_t *t)
{
    (void)t;
    raise(SIGUSR1); /* the handler runs here, on the loop thread, inside uv_run() */
}

static int kill_main(void *arg)
{
    pthread_t *target = arg;
    return pthread_kill(*target, SIGUSR1);
}

static int self_kill_main(void *arg)
{
    (void)arg;
    return raise(SIGUSR1); /* the handler runs on this worker thread */
}

/* A token requested from a signal handler cancels the loop's operations: the hook only
 * does async-signal-safe things (an atomic store, uv_async_send), the loop cancels. The
 * handler runs once on the loop thread itself, once on another thread. */
static void test_token_from_signal_handler(void **state)
{
    struct fixture *f = *state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = request_on_signal;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);

    for (int round = 0; round < 3; round++) {
        assert_int_equal(band_cancel_create(&signal_token, NULL), 0);
        struct rec r[3];
        for (int i = 0; i < 3; i++) {
            rec_init(&r[i], f, i);
            assert_int_equal(acquire_tok(f->u, &r[i], f->sem, 1, BAND_FOREVER, signal_token), 0);
        }
        uv_timer_t t;
        struct test_thread th;
        pthread_t self = pthread_self();
        if (round == 0) {
            uv_timer_init(&f->loop, &t);
            uv_timer_start(&t, raise_cb, 2, 0);
        } else {
            assert_int_equal(test_thread_start(&th, round == 1 ? self_kill_main : kill_main, &self),
                             0);
        }
        run(f);
        if (round == 0)
            uv_close((uv_handle_t *)&t, NULL);
        else
            assert_int_equal(test_thread_join(&th), 0);
        run(f);
        for (int i = 0; i < 3; i++)
            assert_once(&r[i], BAND_ECANCELED);
        assert_int_equal(band_cancel_destroy(signal_token), 0);
    }
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.cancels, 9);
}

/* band_shutdown_watch() cancels a waiter and then calls its wake itself: through the bridge
 * that is one callback with the token's reason, and the adapter's own cancel (timer,
 * band_uv_cancel) loses cleanly. */
static void test_shutdown_watch(void **state)
{
    struct fixture *f = *state;
    band_shutdown *t;
    assert_int_equal(band_shutdown_create(&t), 0);
    struct rec r;
    rec_init(&r, f, 0);
    band_shutdown_link link;
    band_shutdown_link_init(&link);
    assert_int_equal(acquire(f->u, &r, f->sem, 1, band_now() + 60 * BAND_SEC), 0);
    assert_int_equal(band_shutdown_watch(t, &link, &r.w), 0);
    assert_int_equal(band_shutdown_request(t, BAND_ETIMEDOUT), 0); /* cancels and wakes */
    assert_int_equal(band_uv_cancel(&r.op), BAND_EALREADY);
    run(f);
    assert_once(&r, BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_unwatch(&link), BAND_EALREADY);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band_shutdown_destroy(t), 0);
}

/* ---------------------------------------------------------------------------------- */
/* close between bind and start                                                        */

static void test_close_between_bind_and_start(void **state)
{
    struct fixture *f = *state;
    struct rec r[2];
    rec_init(&r[0], f, 0);
    rec_init(&r[1], f, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_uv_bind(f->u, &r[0].op, &r[0].w, rec_cb, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_uv_bind(f->u, &r[1].op, &r[1].w, rec_cb, BAND_FOREVER, NULL), 0);
    assert_int_equal(close_uv(f, f->u), 0); /* waits for both */
    f->u = NULL;
    r[0].sem = r[1].sem = f->sem;
    r[0].n = r[1].n = 1;
    assert_int_equal(band_uv_start(&r[0].op, band_sem_acquire_async(f->sem, 1, &r[0].w)), 0);
    assert_int_equal(band_uv_start(&r[1].op, band_sem_acquire_async(f->sem, 1, &r[1].w)), 0);
    run(f);
    assert_once(&r[0], 0);              /* granted at once: its real result */
    assert_once(&r[1], BAND_ECANCELED); /* queued: the close withdraws it */
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(f->delivered_at_close, 2);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(f->sem, &st), 0);
    assert_u64_equal(st.waiters, 0);
}

/* ---------------------------------------------------------------------------------- */
/* rate bookings: complete at a time                                                    */

static int book(band_uv *u, struct rec *r, band_rate *rate, band_rate_ticket *t, band_cancel *token)
{
    *t = (band_rate_ticket)BAND_RATE_TICKET_INIT;
    int rc = band_rate_reserve(rate, 1, t, NULL, BAND_FOREVER);
    if (rc != 0)
        return rc;
    r->val = (uint64_t)t->at;
    r->ctx = t;
    return band_uv_at(u, &r->op, rec_cb, t->at, token);
}

/* A booking cancelled on the loop gives its tokens back to the bucket, in its callback. */
static void ticket_back(struct rec *r)
{
    if (r->status == BAND_ECANCELED)
        r->aux = band_rate_ticket_cancel(r->ctx);
}

static void test_rate_bookings(void **state)
{
    struct fixture *f = *state;
    band_rate *rate;
    assert_int_equal(band_rate_create(&rate, 200, BAND_SEC, 1, NULL), 0); /* one every 5 ms */
    enum { N = 6 };
    struct rec r[N];
    band_rate_ticket t[N];
    band_cancel *tok;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], f, i);
        r[i].then = ticket_back;
        r[i].aux = 12345;
        assert_int_equal(book(f->u, &r[i], rate, &t[i], i == 4 ? tok : NULL), 0);
    }
    assert_true(t[0].at <= band_now()); /* the first is due at once */
    for (int i = 1; i < N; i++)
        assert_true(t[i].at > t[i - 1].at);
    assert_int_equal(r[0].calls, 0); /* never inside band_uv_at() */
    /* The fourth is given back before it is due, the fifth through its token. */
    assert_int_equal(band_uv_cancel(&r[3].op), 0);
    assert_int_equal(band_uv_cancel(&r[3].op), BAND_EALREADY);
    assert_int_equal(band_cancel_request(tok), 0);
    run(f);
    for (int i = 0; i < N; i++) {
        int want = i == 3 || i == 4 ? BAND_ECANCELED : 0;
        assert_once(&r[i], want);
        if (want == 0) {
            assert_true(r[i].at >= (band_time)r[i].val); /* never before its time */
            assert_int_equal(r[i].aux, 12345);
        } else {
            assert_int_equal(r[i].aux, 0); /* not due yet: the tokens went back */
        }
        if (i > 0 && want == 0 && r[i - 1].status == 0)
            assert_true(r[i].order > r[i - 1].order); /* in time order */
    }
    band_rate_stats rs;
    assert_int_equal(band_rate_get_stats(rate, &rs), 0);
    assert_u64_equal(rs.cancelled, 2);
    assert_int_equal(band_cancel_destroy(tok), 0);

    /* A booking pending at close is cancelled with the rest. */
    struct rec late;
    rec_init(&late, f, 9);
    late.then = ticket_back;
    late.aux = 12345;
    band_rate_ticket first = BAND_RATE_TICKET_INIT, lt;
    assert_int_equal(band_rate_set(rate, 1, 60 * BAND_SEC, 1), 0);
    assert_int_equal(band_rate_reserve(rate, 1, &first, NULL, BAND_FOREVER), 0);
    assert_int_equal(book(f->u, &late, rate, &lt, NULL), 0);
    assert_true(lt.at > band_now() + 30 * BAND_SEC);
    assert_int_equal(band_uv_at(f->u, &late.op, rec_cb, lt.at, NULL), BAND_EINVAL); /* pending */
    assert_int_equal(close_uv(f, f->u), 0);
    f->u = NULL;
    run(f);
    assert_once(&late, BAND_ECANCELED);
    assert_int_equal(late.aux, 0);
    assert_int_equal(f->closed_calls, 1);
    assert_int_equal(band_rate_destroy(rate), 0);
}

/* Closing a rate budget refuses new bookings but keeps the ones made: they still fall due
 * on the loop. A slot past a booking's deadline is refused by the budget itself. */
static void test_rate_close_keeps_bookings(void **state)
{
    struct fixture *f = *state;
    band_rate *rate;
    assert_int_equal(band_rate_create(&rate, 100, BAND_SEC, 1, NULL), 0); /* one every 10 ms */
    struct rec r[2];
    band_rate_ticket t[2];
    for (int i = 0; i < 2; i++) {
        rec_init(&r[i], f, i);
        assert_int_equal(book(f->u, &r[i], rate, &t[i], NULL), 0);
    }
    band_rate_ticket x = BAND_RATE_TICKET_INIT;
    band_time retry = 0;
    assert_int_equal(band_rate_reserve(rate, 1, &x, &retry, band_now() + BAND_MSEC),
                     BAND_ETIMEDOUT); /* its slot would be 20 ms away: nothing booked */
    assert_true(retry > BAND_MSEC);
    assert_int_equal(band_rate_close(rate), 0);
    assert_int_equal(band_rate_reserve(rate, 1, &x, NULL, BAND_FOREVER), BAND_ECLOSED);
    run(f);
    for (int i = 0; i < 2; i++) {
        assert_once(&r[i], 0);
        assert_true(r[i].at >= (band_time)r[i].val);
    }
    assert_int_equal(band_rate_destroy(rate), 0);
}

/* A deadline and a due time share the one timer and the one heap, in time order. */
static void test_deadlines_and_due_times_interleave(void **state)
{
    struct fixture *f = *state;
    struct rec r[4];
    band_time t0 = band_now();
    static const int ms[] = {12, 4, 8, 2};
    for (int i = 0; i < 4; i++) {
        rec_init(&r[i], f, i);
        band_time at = t0 + ms[i] * BAND_MSEC;
        r[i].val = (uint64_t)at;
        if (i % 2 == 0)
            assert_int_equal(acquire(f->u, &r[i], f->sem, 1, at), 0);
        else
            assert_int_equal(band_uv_at(f->u, &r[i].op, rec_cb, at, NULL), 0);
    }
    run(f);
    for (int i = 0; i < 4; i++) {
        assert_once(&r[i], i % 2 == 0 ? BAND_ETIMEDOUT : 0);
        assert_true(r[i].at >= (band_time)r[i].val);
    }
    assert_true(r[3].order < r[1].order && r[1].order < r[2].order && r[2].order < r[0].order);
}

/* ---------------------------------------------------------------------------------- */
/* memory                                                                               */

static void test_op_layout(void **state)
{
    (void)state;
    if (sizeof(void *) == 8)
        assert_int_equal(sizeof(band_uv_op), 160);
}

/* No allocation per operation: glibc's counters do not move over bind, submit, start,
 * completion, timeout, cancel and delivery. */
static void test_no_allocation_per_op(void **state)
{
    struct fixture *f = *state;
    band_cancel *tok;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    struct rec r[4];
    uint64_t v = 1;
    struct mallinfo2 before;
    memset(&before, 0, sizeof(before));
    for (int round = -1; round < 300; round++) {
        if (round == 0)
            before = mallinfo2();
        for (int i = 0; i < 4; i++)
            rec_init(&r[i], f, i);
        assert_int_equal(acquire_tok(f->u, &r[0], f->sem, 1, band_now() + BAND_SEC, tok), 0);
        assert_int_equal(recv_elem(f->u, &r[1], f->chan, &r[1].val, BAND_FOREVER), 0);
        assert_int_equal(send_elem(f->u, &r[2], f->chan, &v, 1, BAND_FOREVER), 0);
        assert_int_equal(band_uv_at(f->u, &r[3].op, rec_cb, band_now(), tok), 0);
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        run(f);
        for (int i = 0; i < 4; i++)
            assert_once(&r[i], 0); /* r[0] keeps its permit: every round starts with none */
        if (round == 299) {
            struct mallinfo2 after = mallinfo2();
            assert_u64_equal(after.uordblks, before.uordblks);
            assert_u64_equal(after.hblks, before.hblks);
        }
    }
    assert_int_equal(band_cancel_destroy(tok), 0);
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
        T(test_token_cancels_many),
        T(test_token_from_signal_handler),
        T(test_shutdown_watch),
        T(test_close_between_bind_and_start),
        T(test_rate_bookings),
        T(test_rate_close_keeps_bookings),
        T(test_deadlines_and_due_times_interleave),
        T(test_op_layout),
        T(test_no_allocation_per_op),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
