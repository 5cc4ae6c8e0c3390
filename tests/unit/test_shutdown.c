/* SPDX-License-Identifier: MIT */
/*
 * test_shutdown.c - the shutdown scope (shutdown.h): request (first reason wins), the
 * polled flag, waits for the request and for the drain (async, blocking, deadlines, cancel
 * with both outcomes), join/leave and their misuse codes, join refused after the request,
 * destroy refusals, wakes that call back into the scope, the scope's cancellation token
 * (requested by the request: a thread blocked in band_chan_recv() under it returns
 * BAND_ECANCELED; a child token keeps the scope alive), and watch links that cancel a
 * semaphore acquisition (the scope wins / the grant wins / unwatched before / watched
 * after the request / unwatch from inside wakes).
 */
#include "test.h"

#include <string.h>

#include "band/shutdown.h"

struct fixture {
    band_shutdown *t;
    band_sem *sem;
    struct wake_log log;
    struct wake_rec rec[8];
    band_shutdown_link link[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_shutdown_create(&f->t) != 0 || band_sem_create(&f->sem, 0, NULL) != 0) {
        free(f);
        return -1;
    }
    wake_log_init(&f->log);
    for (int i = 0; i < 8; i++) {
        wake_rec_init(&f->rec[i], i, &f->log);
        band_shutdown_link_init(&f->link[i]);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    band_sem_close(f->sem);
    int rc = band_shutdown_destroy(f->t);
    int rc2 = band_sem_destroy(f->sem);
    free(f);
    return rc == 0 && rc2 == 0 ? 0 : -1;
}

static band_shutdown_stats stats_of(const band_shutdown *t)
{
    band_shutdown_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_shutdown_get_stats(t, &st), 0);
    return st;
}

static int count_of(struct wake_rec *r)
{
    return atomic_load(&r->count);
}

/* ---------------------------------------------------------------------------------- */

static void test_create_destroy_args(void **state)
{
    (void)state;
    band_shutdown *t;
    assert_int_equal(band_shutdown_create(NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_create(&t), 0);
    band_shutdown_stats st = stats_of(t);
    assert_int_equal(st.requested, 0);
    assert_int_equal(st.reason, 0);
    assert_u64_equal(st.participants, 0);
    assert_u64_equal(st.waiting_requested, 0);
    assert_u64_equal(st.waiting_drained, 0);
    assert_u64_equal(st.watched, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.released, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.join_refusals, 0);
    assert_u64_equal(st.fired, 0);
    assert_u64_equal(st.fired_cancelled, 0);
    assert_int_equal(band_shutdown_destroy(t), 0);
    assert_int_equal(band_shutdown_destroy(NULL), 0);
}

static void test_null_args(void **state)
{
    struct fixture *f = *state;
    band_shutdown_stats st;
    assert_int_equal(band_shutdown_request(NULL, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_shutdown_is_requested(NULL), 0);
    assert_int_equal(band_shutdown_reason(NULL), 0);
    assert_int_equal(band_shutdown_wait_requested(NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_requested_async(NULL, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_drained(NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_drained_async(NULL, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_join(NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_leave(NULL), BAND_EINVAL);
    assert_u64_equal(band_shutdown_participants(NULL), 0);
    assert_int_equal(band_shutdown_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_shutdown_get_stats(f->t, NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_watch(NULL, &f->link[0], &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_shutdown_watch(f->t, NULL, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], NULL), BAND_EINVAL);
    assert_int_equal(band_shutdown_unwatch(NULL), BAND_EINVAL);
    band_shutdown_link_init(NULL); /* harmless */
    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &nowake), BAND_EINVAL);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &nowake), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&nowake), 0);
}

static void test_request_first_reason_wins(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_request(f->t, 0), BAND_EINVAL);
    assert_int_equal(band_shutdown_request(f->t, 5), BAND_EINVAL);
    assert_int_equal(band_shutdown_is_requested(f->t), 0);
    assert_int_equal(band_shutdown_reason(f->t), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_shutdown_is_requested(f->t), 1);
    assert_int_equal(band_shutdown_reason(f->t), BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_shutdown_request(f->t, 0), BAND_EINVAL);
    assert_int_equal(band_shutdown_reason(f->t), BAND_ETIMEDOUT);
    band_shutdown_stats st = stats_of(f->t);
    assert_int_equal(st.requested, 1);
    assert_int_equal(st.reason, BAND_ETIMEDOUT);
}

static void test_wait_requested_async(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[i].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 1);
    assert_u64_equal(stats_of(f->t).waiting_requested, 3);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(atomic_load(&f->log.len), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f->log.ids[i], i);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(count_of(&f->rec[i]), 1);
        assert_true(pthread_equal(f->rec[i].thread, pthread_self()));
    }
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), BAND_EALREADY);
    for (int i = 0; i < 3; i++)
        assert_int_equal(count_of(&f->rec[i]), 1);
    /* After the request: at once, no wake. */
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[4].w), 0);
    assert_int_equal(band_waiter_status(&f->rec[4].w), 0);
    assert_int_equal(count_of(&f->rec[4]), 0);
    assert_int_equal(band_shutdown_wait_requested(f->t, 0, NULL), 0);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.queued, 3);
    assert_u64_equal(st.released, 3);
    assert_u64_equal(st.waiting_requested, 0);
}

static void test_join_leave(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_leave(f->t), BAND_EINVAL);
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_u64_equal(band_shutdown_participants(f->t), 2);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    assert_int_equal(band_shutdown_leave(f->t), BAND_EINVAL);
    assert_u64_equal(band_shutdown_participants(f->t), 0);
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECLOSED), 0);
    /* No new work after the request: join reports the reason. */
    assert_int_equal(band_shutdown_join(f->t), BAND_ECLOSED);
    assert_int_equal(band_shutdown_join(f->t), BAND_ECLOSED);
    assert_u64_equal(band_shutdown_participants(f->t), 1);
    assert_int_equal(band_shutdown_leave(f->t), 0); /* joined before: may still leave */
    assert_int_equal(band_shutdown_leave(f->t), BAND_EINVAL);
    assert_u64_equal(stats_of(f->t).join_refusals, 2);
}

/* Drained means requested AND nobody joined: neither alone is enough. */
static void test_drain_needs_request_and_leaves(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_wait_drained(f->t, 0, NULL), BAND_ETIMEDOUT); /* not requested */
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 0); /* one participant left */
    assert_int_equal(band_shutdown_wait_drained(f->t, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_leave(f->t), 0); /* the last: releases, on this thread */
    assert_int_equal(atomic_load(&f->log.len), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->log.ids[i], i);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(count_of(&f->rec[i]), 1);
        assert_true(pthread_equal(f->rec[i].thread, pthread_self()));
    }
    assert_int_equal(band_shutdown_wait_drained(f->t, 0, NULL), 0);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[2].w), 0);
    assert_int_equal(count_of(&f->rec[2]), 0);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.released, 2);
    assert_u64_equal(st.waiting_drained, 0);
}

static void test_request_without_participants_drains(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(count_of(&f->rec[1]), 1);
    /* The request waits are released first, then the drain waits. */
    assert_int_equal(f->log.ids[0], 1);
    assert_int_equal(f->log.ids[1], 0);
}

static void test_cancel_both_outcomes(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[3].w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[2].w, BAND_ETIMEDOUT), 0);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.waiting_requested, 1);
    assert_u64_equal(st.waiting_drained, 1);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 0);
    assert_int_equal(count_of(&f->rec[1]), 1);
    assert_int_equal(count_of(&f->rec[2]), 0);
    assert_int_equal(count_of(&f->rec[3]), 1);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_cancel(&f->rec[3].w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_ECANCELED);
    assert_int_equal(band_waiter_status(&f->rec[2].w), BAND_ETIMEDOUT);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    /* queued wait */
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_destroy(f->t), BAND_EBUSY);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    /* participant */
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_destroy(f->t), BAND_EBUSY);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    /* watched link */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[1], &f->rec[1].w), 0);
    assert_int_equal(band_shutdown_destroy(f->t), BAND_EBUSY);
    assert_int_equal(band_shutdown_unwatch(&f->link[1]), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), 0);
    /* teardown destroys it */
}

static void test_deadlines(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_shutdown_wait_requested(f->t, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_wait_drained(f->t, band_now(), NULL), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(f->t).queued, 0);
    band_time t0 = band_now();
    assert_int_equal(band_shutdown_wait_requested(f->t, t0 + 10 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_wait_drained(f->t, band_now() + 10 * BAND_MSEC, NULL),
                     BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.queued, 2);
    assert_u64_equal(st.timeouts, 2);
    assert_u64_equal(st.waiting_requested + st.waiting_drained, 0);
}

struct thread_arg {
    band_shutdown *t;
    int which; /* 0: wait_requested, 1: wait_drained */
};

static int blocking_waiter(void *arg)
{
    struct thread_arg *a = arg;
    band_time dl = band_deadline_after(60 * BAND_SEC);
    return a->which == 0 ? band_shutdown_wait_requested(a->t, dl, NULL)
                         : band_shutdown_wait_drained(a->t, BAND_FOREVER, NULL);
}

static bool cond_two_waiting(void *arg)
{
    band_shutdown_stats st;
    return band_shutdown_get_stats(arg, &st) == 0 && st.waiting_requested == 1 &&
           st.waiting_drained == 1;
}

static void test_blocking_waits_released(void **state)
{
    struct fixture *f = *state;
    struct thread_arg a = {f->t, 0}, b = {f->t, 1};
    struct test_thread ta, tb;
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(test_thread_start(&ta, blocking_waiter, &a), 0);
    assert_int_equal(test_thread_start(&tb, blocking_waiter, &b), 0);
    assert_true(test_wait_until(cond_two_waiting, f->t, 10 * BAND_SEC));
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(test_thread_join(&ta), 0);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    assert_int_equal(test_thread_join(&tb), 0);
}

/* --- the cancellation token --- */

static void test_cancel_token(void **state)
{
    struct fixture *f = *state;
    assert_null(band_shutdown_cancel(NULL));
    band_cancel *c = band_shutdown_cancel(f->t);
    assert_non_null(c);
    assert_ptr_equal(band_shutdown_cancel(f->t), c); /* one token for the scope's life */
    assert_int_equal(band_cancel_is_requested(c), 0);
    /* Not requested yet: a blocking call under it waits, until its deadline here. */
    assert_int_equal(band_sem_acquire(f->sem, 1, band_deadline_after(BAND_MSEC), c),
                     BAND_ETIMEDOUT);
    /* The request requests it, whatever the reason; later requests change nothing. */
    assert_int_equal(band_shutdown_request(f->t, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_cancel_is_requested(c), 1);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_cancel_is_requested(c), 1);
    /* A requested token means "do not wait": calls that can complete still do. */
    assert_int_equal(band_sem_acquire(f->sem, 1, BAND_FOREVER, c), BAND_ECANCELED);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_acquire(f->sem, 1, BAND_FOREVER, c), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    /* The scope's own waits are satisfied, so its token does not stop them. */
    assert_int_equal(band_shutdown_wait_requested(f->t, BAND_FOREVER, c), 0);
    assert_int_equal(band_shutdown_wait_drained(f->t, BAND_FOREVER, c), 0);
}

/* Requesting the token directly stops waits under it, but is not a shutdown request. */
static void test_cancel_token_requested_directly(void **state)
{
    struct fixture *f = *state;
    band_cancel *c = band_shutdown_cancel(f->t);
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(band_shutdown_is_requested(f->t), 0);
    assert_int_equal(band_shutdown_reason(f->t), 0);
    assert_int_equal(band_shutdown_join(f->t), 0); /* joins still work */
    assert_int_equal(band_shutdown_wait_requested(f->t, BAND_FOREVER, c), BAND_ECANCELED);
    assert_int_equal(band_shutdown_leave(f->t), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0); /* the first request */
    assert_int_equal(band_shutdown_is_requested(f->t), 1);
    assert_int_equal(band_shutdown_join(f->t), BAND_ECANCELED);
}

struct chan_arg {
    band_chan *c;
    band_cancel *cancel;
    int out;
};

static int chan_receiver(void *arg)
{
    struct chan_arg *a = arg;
    return band_chan_recv(a->c, &a->out, NULL, BAND_FOREVER, a->cancel);
}

static bool cond_chan_receiver_waits(void *arg)
{
    band_chan_stats st;
    return band_chan_get_stats(arg, &st) == 0 && st.waiting_receivers == 1;
}

/* A thread blocked in band_chan_recv() under the scope's token returns BAND_ECANCELED as
 * soon as shutdown is requested (with any reason), holding nothing: a later element goes
 * to the next receiver. */
static void test_cancel_token_stops_chan_recv(void **state)
{
    struct fixture *f = *state;
    band_chan *c;
    assert_int_equal(band_chan_create(&c, sizeof(int), 4, 0), 0);
    struct chan_arg a = {c, band_shutdown_cancel(f->t), -1};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, chan_receiver, &a), 0);
    assert_true(test_wait_until(cond_chan_receiver_waits, c, 10 * BAND_SEC));
    assert_int_equal(band_shutdown_request(f->t, BAND_ETIMEDOUT), 0);
    assert_int_equal(test_thread_join(&th), BAND_ECANCELED);
    assert_int_equal(a.out, -1); /* nothing was copied */
    band_chan_stats st;
    assert_int_equal(band_chan_get_stats(c, &st), 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.received, 0);
    int v = 42, got = 0;
    assert_int_equal(band_chan_try_send(c, &v, 0), 0);
    /* The token stays requested: "do not wait", but an element that is there is taken. */
    assert_int_equal(band_chan_recv(c, &got, NULL, BAND_FOREVER, band_shutdown_cancel(f->t)), 0);
    assert_int_equal(got, 42);
    assert_int_equal(band_chan_recv(c, &got, NULL, BAND_FOREVER, band_shutdown_cancel(f->t)),
                     BAND_ECANCELED);
    assert_int_equal(band_chan_destroy(c), 0);
}

static int drained_under_own_token(void *arg)
{
    band_shutdown *t = arg;
    return band_shutdown_wait_drained(t, BAND_FOREVER, band_shutdown_cancel(t));
}

static int requested_under_own_token(void *arg)
{
    band_shutdown *t = arg;
    return band_shutdown_wait_requested(t, BAND_FOREVER, band_shutdown_cancel(t));
}

/* Under the scope's own token a blocked wait_requested is released (0) by the request,
 * while a wait_drained that a participant still holds up is stopped (BAND_ECANCELED). */
static void test_own_token_on_own_waits(void **state)
{
    struct fixture *f = *state;
    struct test_thread ta, tb;
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(test_thread_start(&ta, requested_under_own_token, f->t), 0);
    assert_int_equal(test_thread_start(&tb, drained_under_own_token, f->t), 0);
    assert_true(test_wait_until(cond_two_waiting, f->t, 10 * BAND_SEC));
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(test_thread_join(&ta), 0);
    assert_int_equal(test_thread_join(&tb), BAND_ECANCELED);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.waiting_requested, 0);
    assert_u64_equal(st.waiting_drained, 0);
    assert_u64_equal(st.released, 1);
    assert_u64_equal(st.cancels, 1);
    assert_int_equal(band_shutdown_leave(f->t), 0);
}

/* A child token created under the scope's token keeps the scope from being destroyed;
 * the refusal frees nothing, and the child is requested with the scope. */
static void test_destroy_refused_while_child_token(void **state)
{
    struct fixture *f = *state;
    band_shutdown *t;
    assert_int_equal(band_shutdown_create(&t), 0);
    band_cancel *child;
    band_cancel_opts o = {.parent = band_shutdown_cancel(t)};
    assert_int_equal(band_cancel_create(&child, &o), 0);
    assert_int_equal(band_shutdown_destroy(t), BAND_EBUSY);
    /* Still whole: the request reaches the child through the scope's token. */
    assert_int_equal(band_cancel_is_requested(child), 0);
    assert_int_equal(band_shutdown_request(t, BAND_ECANCELED), 0);
    assert_int_equal(band_cancel_is_requested(child), 1);
    assert_int_equal(band_sem_acquire(f->sem, 1, BAND_FOREVER, child), BAND_ECANCELED);
    assert_int_equal(band_shutdown_destroy(t), BAND_EBUSY);
    assert_int_equal(band_cancel_destroy(child), 0);
    assert_int_equal(band_shutdown_destroy(t), 0);
}

/* --- wakes calling back into the scope --- */

static void hook_request_join_leave(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    int a = band_shutdown_request(f->t, BAND_ECANCELED); /* EALREADY */
    int b = band_shutdown_join(f->t);                    /* reason */
    int c = band_shutdown_leave(f->t);                   /* the last participant: drains */
    r->hook_rc = (a == BAND_EALREADY && b == BAND_ETIMEDOUT && c == 0) ? 0 : -1;
}

static void test_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_request_join_leave;
    f->rec[0].ctx = f;
    assert_int_equal(band_shutdown_join(f->t), 0);
    assert_int_equal(band_shutdown_wait_requested_async(f->t, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_wait_drained_async(f->t, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_request(f->t, BAND_ETIMEDOUT), 0);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_int_equal(count_of(&f->rec[1]), 1); /* drained by the leave inside the wake */
    assert_u64_equal(band_shutdown_participants(f->t), 0);
}

/* --- watch links --- */

/* The scope's cancel wins: the scope calls the wake once, with status = reason. */
static void test_watch_cancel_wins(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), BAND_EINVAL);
    assert_u64_equal(stats_of(f->t).watched, 1);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECANCELED);
    assert_int_equal(atomic_load(&f->rec[0].pending_in), 0);
    assert_true(pthread_equal(f->rec[0].thread, pthread_self()));
    band_sem_stats ss;
    assert_int_equal(band_sem_get_stats(f->sem, &ss), 0);
    assert_u64_equal(ss.waiters, 0);
    assert_u64_equal(ss.cancels, 1);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.fired, 1);
    assert_u64_equal(st.fired_cancelled, 1);
    assert_u64_equal(st.watched, 1); /* until unwatched */
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), BAND_EALREADY);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), BAND_EINVAL);
    assert_u64_equal(stats_of(f->t).watched, 0);
    /* The release finds nobody waiting: no second wake. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
}

/* The grant wins: the primitive's wake reports 0, the scope's cancel sees EALREADY. */
static void test_watch_grant_wins(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 1); /* no second wake */
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.fired, 1);
    assert_u64_equal(st.fired_cancelled, 0);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), BAND_EALREADY);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* the owner's permit */
    assert_u64_equal(band_sem_available(f->sem), 1);
}

static void test_unwatch_before_request(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 1); /* untouched */
    assert_u64_equal(stats_of(f->t).fired, 0);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
}

static void test_watch_after_request_and_misuse(void **state)
{
    struct fixture *f = *state;
    /* Never submitted: EINVAL. Completed: EALREADY. Neither links anything. */
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), BAND_EALREADY);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), BAND_EINVAL);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, 1), 0); /* keep the sem at 0 */
    /* After the request: the reason comes back, nothing is linked, w is untouched. */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_shutdown_request(f->t, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[1], &f->rec[1].w), BAND_ETIMEDOUT);
    assert_int_equal(band_waiter_is_pending(&f->rec[1].w), 1);
    assert_int_equal(band_shutdown_unwatch(&f->link[1]), BAND_EINVAL);
    assert_u64_equal(stats_of(f->t).watched, 0);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), 0);
}

static void hook_unwatch_own(struct wake_rec *r)
{
    band_shutdown_link *link = r->ctx;
    r->hook_rc = band_shutdown_unwatch(link);
}

/* The watched waiter's own wake (called by the scope) unwatches: no deadlock. */
static void test_wake_unwatches_own_link(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_unwatch_own;
    f->rec[0].ctx = &f->link[0];
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(f->rec[0].hook_rc, BAND_EALREADY);
    assert_u64_equal(stats_of(f->t).watched, 0);
}

/*
 * Cancelling a partially granted head passes its permits on; the next waiter's wake runs
 * on the requesting thread inside the scope's cancel and unwatches its own link, which
 * has not fired yet: 0, and the scope never fires it.
 */
static void test_wake_inside_fire_unwatches_pending_link(void **state)
{
    struct fixture *f = *state;
    f->rec[1].hook = hook_unwatch_own;
    f->rec[1].ctx = &f->link[1];
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0); /* head holds 1 of 2 */
    assert_int_equal(band_shutdown_watch(f->t, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_shutdown_watch(f->t, &f->link[1], &f->rec[1].w), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECANCELED), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECANCELED);
    assert_int_equal(count_of(&f->rec[1]), 1);
    assert_int_equal(atomic_load(&f->rec[1].status), 0); /* granted the passed permit */
    assert_int_equal(f->rec[1].hook_rc, 0);
    /* Order: rec 1's grant (inside the cancel), then the scope's wake of rec 0. */
    assert_int_equal(f->log.ids[0], 1);
    assert_int_equal(f->log.ids[1], 0);
    band_shutdown_stats st = stats_of(f->t);
    assert_u64_equal(st.fired, 1);
    assert_u64_equal(st.fired_cancelled, 1);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), BAND_EALREADY);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
}

/* Many links fire in watch order, each exactly once. */
static void test_watch_many(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[i].w), BAND_PENDING);
        assert_int_equal(band_shutdown_watch(f->t, &f->link[i], &f->rec[i].w), 0);
    }
    assert_int_equal(band_shutdown_unwatch(&f->link[2]), 0);
    assert_int_equal(band_shutdown_request(f->t, BAND_ECLOSED), 0);
    int ids[] = {0, 1, 3, 4, 5};
    assert_int_equal(atomic_load(&f->log.len), 5);
    for (unsigned i = 0; i < TEST_COUNTOF(ids); i++) {
        assert_int_equal(f->log.ids[i], ids[i]);
        assert_int_equal(f->log.statuses[i], BAND_ECLOSED);
    }
    for (int i = 0; i < 6; i++) {
        if (i == 2)
            continue;
        assert_int_equal(count_of(&f->rec[i]), 1);
        assert_int_equal(band_shutdown_unwatch(&f->link[i]), BAND_EALREADY);
    }
    assert_int_equal(band_waiter_is_pending(&f->rec[2].w), 1);
    assert_int_equal(band_waiter_cancel(&f->rec[2].w, BAND_ECANCELED), 0);
    /* A link is reusable once unwatched. */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    band_shutdown *t2;
    assert_int_equal(band_shutdown_create(&t2), 0);
    assert_int_equal(band_shutdown_watch(t2, &f->link[0], &f->rec[0].w), 0);
    assert_int_equal(band_shutdown_unwatch(&f->link[0]), 0);
    assert_int_equal(band_shutdown_destroy(t2), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_destroy_args),
        T(test_null_args),
        T(test_request_first_reason_wins),
        T(test_wait_requested_async),
        T(test_join_leave),
        T(test_drain_needs_request_and_leaves),
        T(test_request_without_participants_drains),
        T(test_cancel_both_outcomes),
        T(test_destroy_busy),
        T(test_deadlines),
        T(test_blocking_waits_released),
        T(test_cancel_token),
        T(test_cancel_token_requested_directly),
        T(test_cancel_token_stops_chan_recv),
        T(test_own_token_on_own_waits),
        T(test_destroy_refused_while_child_token),
        T(test_wake_calls_back),
        T(test_watch_cancel_wins),
        T(test_watch_grant_wins),
        T(test_unwatch_before_request),
        T(test_watch_after_request_and_misuse),
        T(test_wake_unwatches_own_link),
        T(test_wake_inside_fire_unwatches_pending_link),
        T(test_watch_many),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
