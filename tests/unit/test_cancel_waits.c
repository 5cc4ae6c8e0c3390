/* SPDX-License-Identifier: MIT */
/*
 * test_cancel_waits.c - every blocking call in band honours a cancellation token.
 *
 * Each test makes calls that must wait (nothing available, nothing sent) on the main
 * thread, while a helper thread requests the token a little later. Whether the request
 * lands before the call queues or while it is parked, the outcome is the same and exact:
 * BAND_ECANCELED, nothing taken, nothing lost (a refused element stays with the caller,
 * counts are as before). A call with a token requested before it returns at once ("do not
 * wait"), and one that can complete at once still does.
 */
#include "test.h"

#include <string.h>
#include <time.h>

struct later {
    band_cancel *c;
    struct test_thread t;
};

static int request_later(void *arg)
{
    struct later *l = arg;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL); /* a moment, so that the call usually parks first */
    return band_cancel_request(l->c);
}

/* A fresh token, requested by another thread in about 10 ms. */
static band_cancel *cancel_soon(struct later *l)
{
    assert_int_equal(band_cancel_create(&l->c, NULL), 0);
    assert_int_equal(test_thread_start(&l->t, request_later, l), 0);
    return l->c;
}

static void finish(struct later *l)
{
    assert_int_equal(test_thread_join(&l->t), 0);
    assert_int_equal(band_cancel_destroy(l->c), 0); /* no hook left behind */
}

/* A token requested already. */
static band_cancel *requested(void)
{
    band_cancel *c;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    assert_int_equal(band_cancel_request(c), 0);
    return c;
}

static void test_sem_permit(void **state)
{
    (void)state;
    band_sem *s;
    assert_int_equal(band_sem_create(&s, 2, NULL), 0);
    struct later l;
    assert_int_equal(band_sem_acquire(s, 5, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_sem_available(s), 2); /* the partial grant went back */

    band_cancel *done = requested();
    assert_int_equal(band_sem_acquire(s, 3, BAND_FOREVER, done), BAND_ECANCELED);
    assert_int_equal(band_sem_acquire(s, 2, BAND_FOREVER, done), 0); /* free now: taken */
    assert_int_equal(band_sem_release(s, 2), 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_acquire(&p, s, 3, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_null(p.sem);
    assert_u64_equal(band_sem_available(s), 2);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band_cancel_destroy(done), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

static void test_budget(void **state)
{
    (void)state;
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 100, NULL), 0);
    assert_int_equal(band_budget_acquire(b, 60, BAND_FOREVER, NULL), 0);
    struct later l;
    assert_int_equal(band_budget_acquire(b, 50, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    void *buf = (void *)1;
    assert_int_equal(band_budget_alloc(b, 50, &buf, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_ptr_equal(buf, (void *)1); /* untouched */
    assert_int_equal(band_budget_alloc(b, 30, &buf, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_budget_realloc(&buf, 45, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_budget_available(b), 10); /* 100 - 60 - 30 */
    band_budget_free(buf);
    assert_int_equal(band_budget_release(b, 60), 0);
    assert_u64_equal(band_budget_available(b), 100);
    assert_int_equal(band_budget_destroy(b), 0);
}

static void test_chan(void **state)
{
    (void)state;
    band_chan *c;
    assert_int_equal(band_chan_create(&c, sizeof(int), 1, NULL), 0);
    int v = 1, out = 0;
    uint64_t bytes = 0;
    struct later l;
    /* Empty: receives wait. */
    assert_int_equal(band_chan_recv(c, &out, &bytes, BAND_FOREVER, cancel_soon(&l)),
                     BAND_ECANCELED);
    finish(&l);
    size_t n = 7;
    int many[4];
    assert_int_equal(band_chan_recv_many(c, 4, many, NULL, &n, BAND_FOREVER, cancel_soon(&l)),
                     BAND_ECANCELED);
    finish(&l);
    assert_int_equal(n, 0);
    /* Full: sends and reservations wait. */
    assert_int_equal(band_chan_send(c, &v, 0, BAND_FOREVER, NULL), 0);
    int w = 2;
    assert_int_equal(band_chan_send(c, &w, 0, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_reserve(c, 0, &slot, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_null(slot.chan);
    /* Exactly the one element that was accepted. */
    band_cancel *done = requested();
    assert_int_equal(band_chan_recv(c, &out, NULL, BAND_FOREVER, done), 0);
    assert_int_equal(out, 1);
    assert_int_equal(band_chan_recv(c, &out, NULL, BAND_FOREVER, done), BAND_ECANCELED);
    assert_int_equal(band_chan_send(c, &w, 0, BAND_FOREVER, done), 0); /* room now */
    assert_int_equal(band_chan_send(c, &w, 0, BAND_FOREVER, done), BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(done), 0);
    band_chan_close(c);
    assert_int_equal(band_chan_destroy(c), 0);
}

static void test_admit(void **state)
{
    (void)state;
    band_sem *a, *b;
    assert_int_equal(band_sem_create(&a, 4, NULL), 0);
    assert_int_equal(band_sem_create(&b, 1, NULL), 0);
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    assert_int_equal(band_admit_req_add(&r, a, 2), 0);
    assert_int_equal(band_admit_req_add(&r, b, 2), 0);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    struct later l;
    assert_int_equal(band_admit_acquire(&r, &g, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_sem_available(a), 4); /* all or none */
    assert_u64_equal(band_sem_available(b), 1);
    /* A grant that needs more waits for the shortfall; cancelled, it keeps what it had. */
    band_admit_req r1;
    band_admit_req_init(&r1, NULL, NULL);
    assert_int_equal(band_admit_req_add(&r1, a, 1), 0);
    assert_int_equal(band_admit_req_add(&r1, b, 1), 0);
    assert_int_equal(band_admit_acquire(&r1, &g, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_admit_adjust(&g, b, 2, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_admit_held(&g, b), 1);
    assert_u64_equal(band_admit_held(&g, a), 1);
    assert_int_equal(band_admit_release(&g), 0);
    assert_u64_equal(band_sem_available(a), 4);
    assert_u64_equal(band_sem_available(b), 1);
    assert_int_equal(band_sem_destroy(a), 0);
    assert_int_equal(band_sem_destroy(b), 0);
}

static void test_fair(void **state)
{
    (void)state;
    band_fair *f;
    assert_int_equal(band_fair_create(&f, 2, NULL), 0);
    assert_int_equal(band_fair_acquire(f, 1, 0, 2, BAND_FOREVER, NULL), 0);
    struct later l;
    assert_int_equal(band_fair_acquire(f, 2, 0, 1, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_fair_release(f, 1, 2), 0);
    assert_int_equal(band_fair_try_acquire(f, 2, 0, 2), 0); /* everything is back */
    assert_int_equal(band_fair_release(f, 2, 2), 0);
    assert_int_equal(band_fair_destroy(f), 0);
}

static void test_oneshot_watch_broadcast(void **state)
{
    (void)state;
    struct later l;
    band_oneshot *o;
    assert_int_equal(band_oneshot_create(&o, sizeof(int)), 0);
    int out = 0;
    assert_int_equal(band_oneshot_recv(o, &out, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    int v = 42;
    assert_int_equal(band_oneshot_send(o, &v), 0); /* the value still arrives */
    assert_int_equal(band_oneshot_recv(o, &out, BAND_FOREVER, NULL), 0);
    assert_int_equal(out, 42);
    assert_int_equal(band_oneshot_destroy(o), 0);

    band_watch *wt;
    int zero = 0;
    assert_int_equal(band_watch_create(&wt, sizeof(int), &zero), 0);
    band_watch_rx rx;
    assert_int_equal(band_watch_rx_init(&rx, wt), 0);
    assert_int_equal(band_watch_mark_seen(&rx), 0);
    assert_int_equal(band_watch_recv(&rx, &out, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_watch_send(wt, &v), 0);
    assert_int_equal(band_watch_recv(&rx, &out, BAND_FOREVER, NULL), 0);
    assert_int_equal(out, 42);
    assert_int_equal(band_watch_destroy(wt), 0);

    band_broadcast *b;
    assert_int_equal(band_broadcast_create(&b, sizeof(int), 1, BAND_BROADCAST_LOSSLESS), 0);
    band_broadcast_rx brx;
    band_broadcast_rx_init(&brx);
    assert_int_equal(band_broadcast_subscribe(b, &brx), 0);
    assert_int_equal(band_broadcast_recv(&brx, &out, BAND_FOREVER, cancel_soon(&l)),
                     BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_broadcast_send(b, &v, BAND_FOREVER, NULL), 0);
    int w = 7;
    assert_int_equal(band_broadcast_send(b, &w, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_broadcast_recv(&brx, &out, BAND_FOREVER, NULL), 0);
    assert_int_equal(out, 42);
    band_cancel *done = requested();
    assert_int_equal(band_broadcast_recv(&brx, &out, BAND_FOREVER, done), BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(done), 0);
    assert_int_equal(band_broadcast_unsubscribe(&brx), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

static void test_group_latch_token(void **state)
{
    (void)state;
    struct later l;
    band_group *g;
    assert_int_equal(band_group_create(&g), 0);
    assert_int_equal(band_group_add(g, 1), 0);
    assert_int_equal(band_group_wait(g, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_group_count(g), 1);
    assert_int_equal(band_group_done(g), 0);
    assert_int_equal(band_group_destroy(g), 0);

    band_latch *lt;
    assert_int_equal(band_latch_create(&lt, 2), 0);
    assert_int_equal(band_latch_wait(lt, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_latch_arrive_and_wait(lt, 1, BAND_FOREVER, cancel_soon(&l)),
                     BAND_ECANCELED);
    finish(&l);
    assert_u64_equal(band_latch_count(lt), 1); /* the arrival counted */
    assert_int_equal(band_latch_destroy(lt), 0);

    band_shutdown *t;
    assert_int_equal(band_shutdown_create(&t), 0);
    assert_int_equal(band_shutdown_wait_requested(t, BAND_FOREVER, cancel_soon(&l)),
                     BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_shutdown_join(t), 0);
    assert_int_equal(band_shutdown_request(t, BAND_ECANCELED), 0);
    assert_int_equal(band_shutdown_wait_drained(t, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_shutdown_leave(t), 0);
    assert_int_equal(band_shutdown_wait_drained(t, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_shutdown_destroy(t), 0);
}

static void test_rate(void **state)
{
    (void)state;
    band_rate *r;
    assert_int_equal(band_rate_create(&r, 1, BAND_SEC, 1, NULL), 0); /* one token a second */
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), 0);
    struct later l;
    band_time start = band_now();
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_true(band_now() - start < 900 * BAND_MSEC); /* did not sleep out the slot */
    band_rate_stats st;
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    assert_u64_equal(st.granted, 1); /* the cancelled booking was returned */
    band_cancel *done = requested();
    band_time retry = 0;
    assert_int_equal(band_rate_acquire(r, 1, &retry, BAND_FOREVER, done), BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(done), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_limit(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.initial = 1;
    o.min = 1;
    o.max = 4;
    band_limit *lim;
    assert_int_equal(band_limit_create(&lim, &o), 0);
    assert_int_equal(band_limit_acquire(lim, BAND_FOREVER, NULL), 0);
    struct later l;
    assert_int_equal(band_limit_acquire(lim, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    band_time t0 = band_now();
    assert_int_equal(band_limit_on_done(lim, t0, t0, BAND_LIMIT_OK), 0);
    assert_int_equal(band_limit_destroy(lim), 0);
}

static band_sem *gate; /* the running job waits here, so the worker stays busy */
static atomic_int job_ran;

static void job_fn(band_job *job)
{
    (void)job;
    if (band_sem_acquire(gate, 1, BAND_FOREVER, NULL) == 0)
        (void)band_sem_release(gate, 1);
    atomic_fetch_add(&job_ran, 1);
}

static bool exec_queue_full(void *arg)
{
    band_exec_stats st;
    return band_exec_get_stats(arg, &st) == 0 && st.running == 1 && st.queued == 1;
}

static void test_exec_door(void **state)
{
    (void)state;
    struct later l;
    assert_int_equal(band_sem_create(&gate, 0, NULL), 0);
    band_exec *ex;
    assert_int_equal(band_exec_create(&ex, 1, 1, NULL), 0);
    band_job running, queued, refused;
    band_job_init(&running, job_fn, NULL);
    band_job_init(&queued, job_fn, NULL);
    band_job_init(&refused, job_fn, NULL);
    assert_int_equal(band_exec_run(ex, &running, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_exec_run(ex, &queued, BAND_FOREVER, NULL), 0);
    assert_true(test_wait_until(exec_queue_full, ex, 10 * BAND_SEC));
    assert_int_equal(band_exec_run(ex, &refused, BAND_FOREVER, cancel_soon(&l)), BAND_ECANCELED);
    finish(&l);
    assert_int_equal(band_job_state(&refused), BAND_JOB_IDLE); /* still the caller's */
    assert_int_equal(band_sem_release(gate, 1), 0);
    assert_int_equal(band_exec_shutdown(ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(ex), 0);
    assert_int_equal(atomic_load(&job_ran), 2);
    assert_int_equal(band_exec_destroy(ex), 0);
    assert_int_equal(band_sem_destroy(gate), 0);

    band_sem *s;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_front_door_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.sem = s;
    dopt.classes = 1;
    dopt.wait = 10 * BAND_SEC;
    band_front_door *d;
    assert_int_equal(band_front_door_create(&d, &dopt), 0);
    band_permit held = BAND_PERMIT_INIT, p = BAND_PERMIT_INIT;
    band_answer ans;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &held, &ans, BAND_FOREVER, NULL), 0);
    assert_int_equal(ans.kind, BAND_ANSWER_ACCEPT);
    (void)band_front_door_admit(d, 0, 1, NULL, &p, &ans, BAND_FOREVER, cancel_soon(&l));
    finish(&l);
    assert_int_equal(ans.kind, BAND_ANSWER_GONE);
    assert_int_equal(ans.reason, BAND_ECANCELED);
    assert_null(p.sem);
    assert_int_equal(band_front_door_done(d, &held, 0), 0);
    assert_u64_equal(band_sem_available(s), 1);
    band_front_door_destroy(d);
    assert_int_equal(band_sem_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sem_permit),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_chan),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_fair),
        cmocka_unit_test(test_oneshot_watch_broadcast),
        cmocka_unit_test(test_group_latch_token),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_exec_door),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
