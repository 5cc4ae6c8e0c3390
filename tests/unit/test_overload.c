/* SPDX-License-Identifier: MIT */
/*
 * test_overload.c - overload answers (band/answer.h) and the front door that gives them
 * (band/front_door.h).
 */
#include "test.h"

#include <string.h>

#include "band/answer.h"
#include "band/budget.h"
#include "band/front_door.h"
#include "band/histo.h"

static void test_answer_from(void **state)
{
    (void)state;
    band_answer a = band_answer_from(0, BAND_ANSWER_FROM_CAPACITY, 5);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(a.http_status, 200);
    assert_int_equal(a.retry_after, 0);
    a = band_answer_from(BAND_EAGAIN, BAND_ANSWER_FROM_RATE, 1500 * BAND_MSEC);
    assert_int_equal(a.kind, BAND_ANSWER_OVER_QUOTA);
    assert_int_equal(a.http_status, 429);
    assert_int_equal(a.reason, BAND_EAGAIN);
    assert_int_equal(band_answer_retry_after_s(&a), 2);
    a = band_answer_from(BAND_ETIMEDOUT, BAND_ANSWER_FROM_CAPACITY, 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.http_status, 503);
    assert_int_equal(band_answer_retry_after_s(&a), 1); /* busy always suggests a retry */
    a = band_answer_from(BAND_EAGAIN, BAND_ANSWER_FROM_QUEUE, 3 * BAND_SEC);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(band_answer_retry_after_s(&a), 3);
    a = band_answer_from(BAND_E2BIG, BAND_ANSWER_FROM_CAPACITY, 7);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_int_equal(a.http_status, 413);
    assert_int_equal(band_answer_retry_after_s(&a), 0);
    a = band_answer_from(BAND_ECLOSED, BAND_ANSWER_FROM_QUEUE, 7);
    assert_int_equal(a.kind, BAND_ANSWER_GONE);
    assert_int_equal(a.http_status, 503);
    assert_int_equal(band_answer_retry_after_s(&a), 0);
    a = band_answer_from(BAND_ECANCELED, BAND_ANSWER_FROM_CAPACITY, 0);
    assert_int_equal(a.kind, BAND_ANSWER_GONE);
    a = band_answer_from(BAND_ENOMEM, BAND_ANSWER_FROM_CAPACITY, -4);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.reason, BAND_ENOMEM);
    assert_int_equal(a.retry_after, 0);
    assert_int_equal(band_answer_retry_after_s(NULL), 0);
    assert_string_equal(band_answer_name(BAND_ANSWER_ACCEPT), "accept");
    assert_string_equal(band_answer_name(BAND_ANSWER_LATER), "later");
    assert_string_equal(band_answer_name(BAND_ANSWER_SHED), "shed");
    assert_string_equal(band_answer_name(BAND_ANSWER_GONE), "gone");
    assert_string_equal(band_answer_name(99), "?");
    assert_string_equal(band_answer_name(-1), "?");
}

static band_front_door *door(band_sem *s, band_rate *r, band_chan *q, int classes,
                             const uint64_t *headroom, band_time wait)
{
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.sem = s;
    o.rate = r;
    o.backlog = q;
    o.classes = classes;
    for (int c = 0; c < classes && headroom != NULL; c++)
        o.headroom[c] = headroom[c];
    o.wait = wait;
    band_front_door *d = NULL;
    assert_int_equal(band_front_door_create(&d, &o), 0);
    return d;
}

static band_front_door_stats door_stats(const band_front_door *d)
{
    band_front_door_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_front_door_get_stats(d, &st), 0);
    return st;
}

static void test_door_args(void **state)
{
    (void)state;
    band_front_door *d = NULL;
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_front_door_create(NULL, &o), BAND_EINVAL);
    assert_int_equal(band_front_door_create(NULL, NULL), BAND_EINVAL);
    /* NULL options: a door with no bounds and one class. */
    assert_int_equal(band_front_door_create(&d, NULL), 0);
    band_answer a0;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, NULL, &a0, BAND_FOREVER, NULL), 0);
    assert_int_equal(a0.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 1, 1, NULL, NULL, &a0, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_destroy(d), 0);
    d = NULL;
    o.classes = BAND_FRONT_DOOR_CLASSES + 1;
    assert_int_equal(band_front_door_create(&d, &o), BAND_EINVAL);
    o.classes = 2;
    o.headroom[0] = 3; /* decreasing headroom */
    assert_int_equal(band_front_door_create(&d, &o), BAND_EINVAL);
    o.headroom[0] = 0;
    o.wait = -1;
    assert_int_equal(band_front_door_create(&d, &o), BAND_EINVAL);
    o.wait = 0;
    band_chan *q = NULL;
    assert_int_equal(band_chan_create(&q, 8, 1, NULL), 0);
    o.backlog = q; /* a backlog needs a semaphore to overflow from */
    assert_int_equal(band_front_door_create(&d, &o), BAND_EINVAL);
    assert_null(d);
    o.backlog = NULL;
    assert_int_equal(band_front_door_create(&d, &o), 0); /* no bounds: everything is accepted */
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, NULL, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 2, 1, NULL, NULL, &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_admit(d, 0, 0, NULL, NULL, &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, NULL, NULL, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_admit(NULL, 0, 1, NULL, NULL, &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_front_door_destroy(NULL), 0);
    assert_int_equal(band_chan_destroy(q), 0);
}

/* Permits, BUSY when there are none, and permits back through band_front_door_done(). */
static void test_door_capacity(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 2, NULL), 0);
    band_histo hold;
    band_histo_init(&hold);
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.sem = s;
    o.hold = &hold;
    band_front_door *d = NULL;
    assert_int_equal(band_front_door_create(&d, &o), 0);
    band_permit p[3] = {BAND_PERMIT_INIT, BAND_PERMIT_INIT, BAND_PERMIT_INIT};
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, NULL, &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_u64_equal(p[0].count, 1);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.http_status, 503);
    assert_int_equal(a.retry_after, BAND_SEC); /* nothing measured yet */
    assert_null(p[2].sem);
    /* A measured hold time of 100 ms becomes the estimate. */
    assert_int_equal(band_front_door_done(d, &p[0], band_now() - 100 * BAND_MSEC), 0);
    assert_null(p[0].sem);
    assert_u64_equal(band_sem_available(s), 1);
    band_front_door_stats st = door_stats(d);
    assert_true(st.mean_hold >= 100 * BAND_MSEC && st.mean_hold < 5 * BAND_SEC);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    /* (0 waiters + 1) / 2 in flight at most -> one round of the mean hold time. */
    assert_int_equal(a.retry_after, st.mean_hold);
    assert_int_equal(band_front_door_done(d, &p[0], 0), 0);
    assert_int_equal(band_front_door_done(d, &p[1], 0), 0);
    assert_int_equal(band_front_door_done(NULL, &p[1], 0), BAND_EINVAL);
    assert_u64_equal(band_sem_available(s), 2);
    band_histo_snapshot hs;
    assert_int_equal(band_histo_read(&hold, &hs), 0);
    assert_u64_equal(hs.count, 1); /* only the done() that measured */
    assert_true(hs.min >= 100 * BAND_MSEC);
    st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_ACCEPT], 3);
    assert_u64_equal(st.answers[BAND_ANSWER_BUSY], 2);
    assert_u64_equal(st.admitted[0], 3);
    assert_u64_equal(st.refused[0], 2);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* Lower classes are shed first: each keeps headroom for the classes above it. */
static void test_door_sheds_by_priority(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 10, NULL), 0);
    static const uint64_t headroom[3] = {0, 2, 5};
    band_front_door *d = door(s, NULL, NULL, 3, headroom, 0);
    band_permit p[6];
    for (int i = 0; i < 6; i++) {
        band_permit z = BAND_PERMIT_INIT;
        p[i] = z;
    }
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 2, 5, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT); /* leaves 5 */
    assert_int_equal(band_front_door_admit(d, 2, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_SHED); /* would leave 4 < 5 */
    assert_int_equal(a.http_status, 503);
    assert_int_equal(band_front_door_admit(d, 1, 3, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT); /* leaves 2 */
    assert_int_equal(band_front_door_admit(d, 1, 1, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_SHED);
    assert_int_equal(band_front_door_admit(d, 0, 2, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT); /* urgent work always finds the room */
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[3], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_SHED], 2);
    assert_u64_equal(st.admitted[0], 1);
    assert_u64_equal(st.admitted[1], 1);
    assert_u64_equal(st.admitted[2], 1);
    assert_u64_equal(st.refused[0], 1);
    assert_u64_equal(st.refused[1], 1);
    assert_u64_equal(st.refused[2], 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_front_door_done(d, &p[i], 0), 0);
    assert_u64_equal(band_sem_available(s), 10);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

struct fake_clock {
    band_time now;
};

static band_time fake_now(void *ctx)
{
    return ((struct fake_clock *)ctx)->now;
}

/* Permits and tokens are taken together or not at all; over quota is a 429. */
static void test_door_rate_and_capacity(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_rate_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.clock = fake_now;
    ro.clock_ctx = &fc;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, 1, 250 * BAND_MSEC, 2, &ro), 0);
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 5, NULL), 0);
    band_front_door *d = door(s, r, NULL, 1, NULL, 0);
    band_permit p[3] = {BAND_PERMIT_INIT, BAND_PERMIT_INIT, BAND_PERMIT_INIT};
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_OVER_QUOTA);
    assert_int_equal(a.http_status, 429);
    assert_int_equal(a.retry_after, 250 * BAND_MSEC); /* exact, from the bucket */
    assert_int_equal(band_answer_retry_after_s(&a), 1);
    assert_null(p[2].sem);
    assert_u64_equal(band_sem_available(s), 3); /* the permit went back */
    fc.now += 250 * BAND_MSEC;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[2], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 0, 3, NULL, &p[2], &a, BAND_FOREVER, NULL),
                     BAND_EINVAL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_front_door_done(d, &p[i], 0), 0);
    assert_u64_equal(band_sem_available(s), 5);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_OVER_QUOTA], 1);
    assert_u64_equal(st.answers[BAND_ANSWER_ACCEPT], 3);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* Accepted for later: the job goes to the backlog while it has room, then BUSY. */
static void test_door_backlog(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_chan *q = NULL;
    assert_int_equal(band_chan_create(&q, sizeof(uint64_t), 1, 0), 0);
    band_front_door *d = door(s, NULL, q, 1, NULL, 0);
    band_permit p[2] = {BAND_PERMIT_INIT, BAND_PERMIT_INIT};
    band_answer a;
    uint64_t job = 42;
    assert_int_equal(band_front_door_admit(d, 0, 1, &job, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 0, 1, &job, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_LATER);
    assert_int_equal(a.http_status, 202);
    assert_null(p[1].sem);
    job = 43;
    assert_int_equal(band_front_door_admit(d, 0, 1, &job, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY); /* the backlog is full too */
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY); /* no job: nothing to queue */
    uint64_t got = 0;
    assert_int_equal(band_chan_try_recv(q, &got, NULL), 0);
    assert_u64_equal(got, 42);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_LATER], 1);
    assert_u64_equal(st.answers[BAND_ANSWER_BUSY], 2);
    assert_u64_equal(st.refused[0], 2); /* LATER is not a refusal */
    assert_int_equal(band_front_door_done(d, &p[0], 0), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_chan_destroy(q), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

struct releaser {
    band_permit *p;
    band_front_door *d;
    band_sem *s;
};

/* Releases the door's permit once the other admission is queued for it, so that the
 * admission waits however the threads are scheduled. */
static int release_later(void *arg)
{
    struct releaser *rl = arg;
    struct sem_waiters_cond queued = {rl->s, 1};
    if (!test_wait_until(test_cond_sem_waiters, &queued, 10 * BAND_SEC))
        return -1;
    return band_front_door_done(rl->d, rl->p, 0);
}

/* A door with a wait queues for permits, up to its wait, never past the deadline. */
static void test_door_wait(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_front_door *d = door(s, NULL, NULL, 1, NULL, 10 * BAND_SEC); /* wide: a loaded machine */
    band_permit p[2] = {BAND_PERMIT_INIT, BAND_PERMIT_INIT};
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    struct releaser rl = {&p[0], d, s};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, release_later, &rl), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(test_thread_join(&th), 0);
    assert_u64_equal(door_stats(d).waited, 1);
    assert_int_equal(band_front_door_destroy(d), 0);
    /* Nobody releases now: BUSY after a 20 ms wait, and never early. */
    d = door(s, NULL, NULL, 1, NULL, 20 * BAND_MSEC);
    band_permit q = BAND_PERMIT_INIT;
    band_time t0 = band_now();
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.reason, BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    /* A deadline already past: no wait at all. */
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &q, &a, band_now() - 1, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    band_permit_release(&p[1]); /* admitted by the first door: a plain permit now */
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* TOO_BIG from a budget that can never hold the request; GONE once closed. */
static void test_door_too_big_and_closed(void **state)
{
    (void)state;
    band_budget *b = NULL;
    assert_int_equal(band_budget_create(&b, 4, NULL), 0);
    band_front_door *d = door(band_budget_sem(b), NULL, NULL, 1, NULL, 10 * BAND_MSEC);
    band_permit p = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 5, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_int_equal(a.http_status, 413);
    assert_int_equal(a.reason, BAND_E2BIG);
    assert_int_equal(band_front_door_is_closed(d), 0);
    assert_int_equal(door_stats(d).closed, 0);
    assert_int_equal(band_front_door_close(d), 0);
    assert_int_equal(band_front_door_is_closed(d), 1);
    assert_int_equal(band_front_door_close(d), 0); /* a second close changes nothing */
    assert_int_equal(band_front_door_close(NULL), BAND_EINVAL);
    assert_int_equal(band_front_door_is_closed(NULL), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_GONE);
    assert_null(p.sem);
    assert_int_equal(band_sem_is_closed(band_budget_sem(b)), 0); /* the bounds stay open */
    band_front_door_stats st = door_stats(d);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.answers[BAND_ANSWER_TOO_BIG], 1);
    assert_u64_equal(st.answers[BAND_ANSWER_GONE], 1);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_budget_destroy(b), 0);
}

/* A name is copied, reported by the stats, replaced and cleared; one that does not fit is
 * refused and changes nothing. */
static void test_door_set_name(void **state)
{
    (void)state;
    band_front_door *d = door(NULL, NULL, NULL, 1, NULL, 0);
    assert_string_equal(door_stats(d).name, "");
    char name[] = "ingress";
    assert_int_equal(band_front_door_set_name(d, name), 0);
    name[0] = 'X'; /* copied, not kept */
    assert_string_equal(door_stats(d).name, "ingress");
    char too_long[BAND_NAME_MAX + 1];
    memset(too_long, 'x', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = '\0';
    assert_int_equal(band_front_door_set_name(d, too_long), BAND_EINVAL);
    assert_string_equal(door_stats(d).name, "ingress");
    too_long[BAND_NAME_MAX - 1] = '\0'; /* the longest that fits */
    assert_int_equal(band_front_door_set_name(d, too_long), 0);
    assert_string_equal(door_stats(d).name, too_long);
    assert_int_equal(band_front_door_set_name(d, NULL), 0);
    assert_string_equal(door_stats(d).name, "");
    assert_int_equal(band_front_door_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(band_front_door_destroy(d), 0);
}

struct waiting_admit {
    band_front_door *door;
    band_permit permit;
    band_answer answer;
};

static int admit_and_wait(void *arg)
{
    struct waiting_admit *w = arg;
    return band_front_door_admit(w->door, 0, 1, NULL, &w->permit, &w->answer, BAND_FOREVER, NULL);
}

/* Destroy refuses, changing nothing, while an admission waits for permits inside the door;
 * once it has ended the door can go. */
static void test_door_destroy_busy_while_waiting(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_front_door *d = door(s, NULL, NULL, 1, NULL, 30 * BAND_SEC);
    band_permit p = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    struct waiting_admit w = {d, BAND_PERMIT_INIT, {0}};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, admit_and_wait, &w), 0);
    struct sem_waiters_cond cond = {s, 1};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    assert_int_equal(band_front_door_destroy(d), BAND_EBUSY);
    assert_int_equal(band_front_door_destroy(d), BAND_EBUSY);
    /* The door still works: the returned permit goes to the waiting admission. */
    assert_int_equal(band_front_door_done(d, &p, 0), 0);
    assert_int_equal(test_thread_join(&th), 0);
    assert_int_equal(w.answer.kind, BAND_ANSWER_ACCEPT);
    assert_ptr_equal(w.permit.sem, s);
    assert_u64_equal(door_stats(d).waited, 1);
    assert_int_equal(band_front_door_done(d, &w.permit, 0), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* A rate budget on a fake clock: @tokens per second, bucket @burst. */
static band_rate *fake_rate(struct fake_clock *fc, uint64_t tokens, uint64_t burst)
{
    band_rate_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.clock = fake_now;
    ro.clock_ctx = fc;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, tokens, BAND_SEC, burst, &ro), 0);
    return r;
}

struct closer {
    band_sem *sem;         /* wait until it has a queued waiter */
    band_sem *close;       /* then close this semaphore (or NULL) */
    band_front_door *door; /* and this door (or NULL) */
    band_permit *release;  /* then release this permit (or NULL) */
};

static int close_when_queued(void *arg)
{
    struct closer *c = arg;
    struct sem_waiters_cond cond = {c->sem, 1};
    if (!test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC))
        return -1;
    if (c->close != NULL && band_sem_close(c->close) != 0)
        return -2;
    if (c->door != NULL && band_front_door_close(c->door) != 0)
        return -3;
    if (c->release != NULL && band_permit_release(c->release) != 0)
        return -4;
    return 0;
}

/* Both or neither with a wait: a request that waits for permits and does not get them
 * (timeout, the semaphore closed, the door closed while it waited) spends no token. */
static void test_door_wait_spends_no_tokens(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_rate *r = fake_rate(&fc, 1, 3);
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_permit p[2] = {BAND_PERMIT_INIT, BAND_PERMIT_INIT};
    band_answer a;

    /* Timeout. */
    band_front_door *d = door(s, r, NULL, 1, NULL, 2 * BAND_MSEC);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_u64_equal(band_rate_available(r), 2);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.reason, BAND_ETIMEDOUT);
    assert_null(p[1].sem);
    assert_u64_equal(band_rate_available(r), 2); /* no token for a BUSY answer */
    /* A deadline already past: no wait, no token either. */
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, 0, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_u64_equal(band_rate_available(r), 2);
    assert_int_equal(band_front_door_destroy(d), 0);

    /* The door closes while the request waits: the permit it then gets goes back, GONE. */
    d = door(s, r, NULL, 1, NULL, 30 * BAND_SEC);
    struct closer c = {s, NULL, d, &p[0]};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, close_when_queued, &c), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(test_thread_join(&th), 0);
    assert_int_equal(a.kind, BAND_ANSWER_GONE);
    assert_int_equal(a.reason, BAND_ECLOSED);
    assert_null(p[1].sem);
    assert_u64_equal(band_sem_available(s), 1);
    assert_u64_equal(band_rate_available(r), 2);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_GONE], 1);
    assert_u64_equal(st.answers[BAND_ANSWER_ACCEPT], 0);
    assert_int_equal(band_front_door_destroy(d), 0);

    /* The semaphore closes while the request waits. */
    d = door(s, r, NULL, 1, NULL, 30 * BAND_SEC);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_u64_equal(band_rate_available(r), 1);
    struct closer c2 = {s, s, NULL, NULL};
    assert_int_equal(test_thread_start(&th, close_when_queued, &c2), 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(test_thread_join(&th), 0);
    assert_int_equal(a.kind, BAND_ANSWER_GONE);
    assert_null(p[1].sem);
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_front_door_done(d, &p[0], 0), 0);
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_front_door_destroy(d), 0);

    /* A wait whose tokens are gone: OVER_QUOTA at once (no wait, nothing taken), with the
     * bucket's retry-after. */
    band_sem *s2 = NULL;
    assert_int_equal(band_sem_create(&s2, 1, NULL), 0);
    d = door(s2, r, NULL, 1, NULL, 30 * BAND_SEC);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[0], &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_u64_equal(band_rate_available(r), 0);
    band_time t0 = band_now();
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p[1], &a, BAND_FOREVER, NULL), 0);
    assert_true(band_now() - t0 < 10 * BAND_SEC);
    assert_int_equal(a.kind, BAND_ANSWER_OVER_QUOTA);
    assert_int_equal(a.retry_after, BAND_SEC);
    assert_null(p[1].sem);
    assert_u64_equal(band_sem_available(s2), 0);
    assert_u64_equal(door_stats(d).waited, 0);
    assert_int_equal(band_front_door_done(d, &p[0], 0), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s2), 0);
    assert_int_equal(band_sem_destroy(s), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A request no configuration of the door can ever admit is TOO_BIG at once (413, no
 * Retry-After), never BUSY, SHED or LATER. */
static void test_door_never_fits(void **state)
{
    (void)state;
    band_answer a;
    uint64_t job = 7;
    /* More than any semaphore can hold. */
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_front_door *d = door(s, NULL, NULL, 1, NULL, 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(
        band_front_door_admit(d, 0, BAND_MAX_UNITS + 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_int_equal(a.reason, BAND_E2BIG);
    assert_int_equal(a.http_status, 413);
    assert_int_equal(a.retry_after, 0);
    assert_int_equal(band_front_door_admit(d, 0, UINT64_MAX, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_null(p.sem);
    assert_int_equal(band_front_door_destroy(d), 0);

    /* A budget, with a class that keeps headroom: the class can never take more than
     * capacity - headroom, and asking more is not "shed, retry later". */
    band_budget *b = NULL;
    assert_int_equal(band_budget_create(&b, 4, NULL), 0);
    static const uint64_t headroom[2] = {0, 1};
    d = door(band_budget_sem(b), NULL, NULL, 2, headroom, 0);
    assert_int_equal(band_front_door_admit(d, 1, 5, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_int_equal(a.reason, BAND_E2BIG);
    assert_int_equal(band_front_door_admit(d, 1, 4, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    assert_int_equal(band_front_door_admit(d, 0, 4, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT); /* class 0 keeps no headroom */
    assert_int_equal(band_front_door_admit(d, 1, 3, NULL, &p, &a, BAND_FOREVER, NULL), BAND_EINVAL);
    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_front_door_admit(d, 1, 3, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_SHED); /* fits one day: shed now */
    assert_int_equal(band_front_door_done(d, &p, 0), 0);
    assert_int_equal(band_front_door_admit(d, 1, 3, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_done(d, &q, 0), 0);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.answers[BAND_ANSWER_TOO_BIG], 2);
    assert_u64_equal(st.refused[1], 3);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_budget_destroy(b), 0);

    /* More than the rate budget's burst, while the permits are busy: TOO_BIG, and the job
     * is not queued for later (it could never be admitted). */
    struct fake_clock fc = {0};
    band_rate *r = fake_rate(&fc, 1, 2);
    band_chan *ch = NULL;
    assert_int_equal(band_chan_create(&ch, sizeof(job), 4, NULL), 0);
    for (int wait = 0; wait < 2; wait++) {
        d = door(s, r, ch, 1, NULL, wait ? 30 * BAND_SEC : 0);
        assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
        assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
        assert_int_equal(band_front_door_admit(d, 0, 3, &job, &q, &a, BAND_FOREVER, NULL), 0);
        assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
        assert_int_equal(a.reason, BAND_E2BIG);
        assert_int_equal(a.retry_after, 0);
        assert_null(q.sem);
        assert_int_equal(band_front_door_done(d, &p, 0), 0);
        /* and with the permits free it is TOO_BIG too, holding nothing */
        assert_int_equal(band_front_door_admit(d, 0, 3, &job, &q, &a, BAND_FOREVER, NULL), 0);
        assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
        assert_null(q.sem);
        assert_u64_equal(band_sem_available(s), 1);
        assert_int_equal(band_front_door_destroy(d), 0);
        fc.now += 10 * BAND_SEC;
    }
    band_chan_stats cs;
    assert_int_equal(band_chan_get_stats(ch, &cs), 0);
    assert_u64_equal(cs.len, 0);
    assert_int_equal(band_chan_destroy(ch), 0);
    assert_int_equal(band_rate_destroy(r), 0);
    assert_int_equal(band_sem_destroy(s), 0);

    /* Headroom above what any semaphore can hold is refused when the door is made. */
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.classes = 2;
    o.headroom[1] = BAND_MAX_UNITS + 1;
    assert_int_equal(band_front_door_create(&d, &o), BAND_EINVAL);
}

static void wake_none(band_waiter *w)
{
    (void)w;
}

/* The Retry-After estimate saturates instead of wrapping with huge queues. */
static void test_door_retry_after_saturates(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    band_front_door *d = door(s, NULL, NULL, 1, NULL, 0);
    band_permit p = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_front_door_done(d, &p, band_now() - BAND_MSEC), 0); /* measure a hold */
    assert_int_equal(band_sem_try_acquire(s, 1), 0);
    /* Eight waiters of the largest request: 2^64 - 8 units queued. */
    band_waiter w[8];
    for (int i = 0; i < 8; i++) {
        band_waiter_init(&w[i], wake_none, NULL);
        assert_int_equal(band_sem_acquire_async(s, BAND_MAX_UNITS, &w[i]), BAND_PENDING);
    }
    assert_int_equal(band_front_door_admit(d, 0, 16, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(a.retry_after, INT64_MAX);
    assert_int_equal(band_answer_retry_after_s(&a), UINT32_MAX);
    for (int i = 0; i < 8; i++)
        assert_int_equal(band_waiter_cancel(&w[i], BAND_ECANCELED), 0);
    assert_int_equal(band_sem_release(s, 1), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* band_front_door_done() takes back only what the door handed out, once, and refuses a
 * nonsense admission time; a refusal changes nothing. */
static void test_door_done_checks(void **state)
{
    (void)state;
    band_sem *s = NULL, *other = NULL;
    assert_int_equal(band_sem_create(&s, 4, NULL), 0);
    assert_int_equal(band_sem_create(&other, 4, NULL), 0);
    band_front_door *d = door(s, NULL, NULL, 1, NULL, 0);
    band_permit p = BAND_PERMIT_INIT, f = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    /* A permit of another semaphore. */
    assert_int_equal(band_permit_try_acquire(&f, other, 2), 0);
    assert_int_equal(band_front_door_done(d, &f, 0), BAND_EINVAL);
    assert_ptr_equal(f.sem, other);
    assert_u64_equal(f.count, 2);
    assert_u64_equal(band_sem_available(other), 2);
    assert_int_equal(band_permit_release(&f), 0);
    /* More permits than the door has handed out (taken past the door). */
    assert_int_equal(band_permit_try_acquire(&f, s, 2), 0);
    assert_int_equal(band_front_door_done(d, &f, 0), BAND_EINVAL);
    assert_u64_equal(f.count, 2);
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_permit_release(&f), 0);
    /* An admission time in the future or negative: nonsense, nothing released. */
    assert_int_equal(band_front_door_done(d, &p, band_now() + 3600 * BAND_SEC), BAND_EINVAL);
    assert_int_equal(band_front_door_done(d, &p, -5), BAND_EINVAL);
    assert_u64_equal(p.count, 1);
    assert_int_equal(door_stats(d).mean_hold, 0);
    assert_int_equal(band_front_door_done(d, &p, band_now() - BAND_MSEC), 0);
    assert_null(p.sem);
    assert_u64_equal(band_sem_available(s), 4);
    band_time mean = door_stats(d).mean_hold;
    assert_true(mean >= BAND_MSEC);
    /* Done twice: the second finds an empty permit, refused, no second measurement. */
    assert_int_equal(band_front_door_done(d, &p, 1), BAND_EINVAL);
    assert_int_equal(door_stats(d).mean_hold, mean);
    assert_u64_equal(band_sem_available(s), 4);
    assert_int_equal(band_front_door_done(d, NULL, 0), BAND_EINVAL);
    assert_int_equal(band_front_door_destroy(d), 0);

    /* A door without a semaphore hands out no permit: done() only measures. */
    d = door(NULL, NULL, NULL, 1, NULL, 0);
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, NULL, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_done(d, NULL, band_now() - BAND_MSEC), 0);
    assert_true(door_stats(d).mean_hold >= BAND_MSEC);
    assert_int_equal(band_front_door_done(d, &f, 0), 0); /* an empty permit is fine too */
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(other), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

struct flicker {
    band_sem *sem;
    atomic_int stop;
    uint64_t cycles;
};

/* Takes the whole semaphore and gives it back, over and over. */
static int flicker_run(void *arg)
{
    struct flicker *f = arg;
    while (!atomic_load(&f->stop)) {
        if (band_sem_try_acquire(f->sem, 2) == 0) {
            f->cycles++;
            if (band_sem_release(f->sem, 2) != 0)
                return -1;
        }
    }
    return 0;
}

/* A class that keeps headroom never queues for permits, even when the room vanishes
 * between its shed check and its try (a queued low-priority waiter would stand ahead of
 * urgent work, and try never barges): it is shed instead. Another thread takes and returns
 * the whole semaphore to open that window again and again. */
static void test_door_headroom_never_waits(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 2, NULL), 0);
    static const uint64_t headroom[2] = {0, 1};
    band_front_door *d = door(s, NULL, NULL, 2, headroom, 10 * BAND_SEC);
    struct flicker f;
    f.sem = s;
    atomic_init(&f.stop, 0);
    f.cycles = 0;
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, flicker_run, &f), 0);
    band_time until = band_now() + 500 * BAND_MSEC;
    uint64_t accepted = 0, shed_n = 0, other = 0;
    for (int i = 0; i < 200000 && band_now() < until; i++) {
        band_permit p = BAND_PERMIT_INIT;
        band_answer a;
        if (band_front_door_admit(d, 1, 1, NULL, &p, &a, BAND_FOREVER, NULL) != 0) {
            other++;
            break;
        }
        if (a.kind == BAND_ANSWER_ACCEPT) {
            accepted++;
            if (band_front_door_done(d, &p, 0) != 0) {
                other++;
                break;
            }
        } else if (a.kind == BAND_ANSWER_SHED) {
            shed_n++;
        } else {
            other++;
        }
    }
    atomic_store(&f.stop, 1);
    assert_int_equal(test_thread_join(&th), 0);
    print_message("headroom class: %llu accepted, %llu shed, flicker cycles %llu\n",
                  (unsigned long long)accepted, (unsigned long long)shed_n,
                  (unsigned long long)f.cycles);
    assert_u64_equal(other, 0);
    band_front_door_stats st = door_stats(d);
    assert_u64_equal(st.waited, 0);
    assert_u64_equal(st.answers[BAND_ANSWER_BUSY], 0);
    assert_u64_equal(band_sem_available(s), 2);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_from),
        cmocka_unit_test(test_door_args),
        cmocka_unit_test(test_door_capacity),
        cmocka_unit_test(test_door_sheds_by_priority),
        cmocka_unit_test(test_door_rate_and_capacity),
        cmocka_unit_test(test_door_backlog),
        cmocka_unit_test(test_door_wait),
        cmocka_unit_test(test_door_too_big_and_closed),
        cmocka_unit_test(test_door_set_name),
        cmocka_unit_test(test_door_destroy_busy_while_waiting),
        cmocka_unit_test(test_door_wait_spends_no_tokens),
        cmocka_unit_test(test_door_never_fits),
        cmocka_unit_test(test_door_retry_after_saturates),
        cmocka_unit_test(test_door_done_checks),
        cmocka_unit_test(test_door_headroom_never_waits),
    };
    return cmocka_run_group_tests_name("test_overload", tests, NULL, NULL);
}
