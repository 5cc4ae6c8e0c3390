/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - the metrics registry and its Prometheus text (band/metrics.h).
 */
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/metrics.h"

static char *render(const band_metrics *m)
{
    size_t need = 0;
    assert_int_equal(band_metrics_write(m, NULL, 0, &need), BAND_E2BIG);
    assert_true(need > 0);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    size_t len = 0;
    assert_int_equal(band_metrics_write(m, buf, need + 1, &len), 0);
    assert_int_equal(len, need);
    assert_int_equal(strlen(buf), len);
    /* Nothing moves here, so the allocating form gives the same text. */
    char *again = (char *)1;
    size_t again_len = 0;
    assert_int_equal(band_metrics_render(m, &again, &again_len), 0);
    assert_non_null(again);
    assert_int_equal(again_len, len);
    assert_string_equal(again, buf);
    free(again);
    return buf;
}

static void expect_line(const char *text, const char *line)
{
    const char *p = strstr(text, line);
    if (p == NULL || (p != text && p[-1] != '\n') || p[strlen(line)] != '\n')
        fail_msg("missing line: %s\n--- in:\n%s", line, text);
}

static void test_args(void **state)
{
    (void)state;
    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(NULL, 4), BAND_EINVAL);
    assert_int_equal(band_metrics_create(&m, 0), BAND_EINVAL);
    assert_int_equal(band_metrics_create(&m, 1), 0);
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    assert_int_equal(band_metrics_add_sem(m, NULL, s, NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_sem(m, "", s, NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_sem(m, "x", NULL, NULL), BAND_EINVAL);
    char longname[BAND_NAME_MAX + 1];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(band_metrics_add_sem(m, longname, s, NULL), BAND_EINVAL);
    band_histo h;
    band_histo_init(&h);
    assert_int_equal(band_metrics_add_histo(m, "9bad", "x", NULL, &h), BAND_EINVAL);
    assert_int_equal(band_metrics_add_histo(m, "bad-name", "x", NULL, &h), BAND_EINVAL);
    assert_int_equal(band_metrics_add_histo(m, NULL, "x", NULL, &h), BAND_EINVAL);
    assert_int_equal(band_metrics_add_sem(m, "db", s, NULL), 0);
    assert_int_equal(band_metrics_add_sem(m, "db2", s, NULL), BAND_E2BIG); /* full */
    assert_int_equal(band_metrics_write(NULL, NULL, 0, NULL), BAND_EINVAL);
    char b[8];
    assert_int_equal(band_metrics_write(m, NULL, sizeof(b), NULL), BAND_EINVAL);
    size_t need = 0;
    assert_int_equal(band_metrics_write(m, b, sizeof(b), &need), BAND_E2BIG);
    assert_true(need > sizeof(b));
    assert_int_equal(strlen(b), sizeof(b) - 1); /* a truncated, terminated prefix */
    assert_int_equal(band_metrics_fprint(NULL, stdout), BAND_EINVAL);
    char *text = (char *)1;
    assert_int_equal(band_metrics_render(NULL, &text, NULL), BAND_EINVAL);
    assert_null(text); /* cleared on every error */
    assert_int_equal(band_metrics_render(m, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_render(m, &text, NULL), 0);
    assert_non_null(text);
    free(text);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_metrics_destroy(NULL), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* Every primitive's series, with exact values, one HELP/TYPE per family. */
static void test_render(void **state)
{
    (void)state;
    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 8), 0);

    band_sem *s = NULL;
    band_histo sw;
    band_histo_init(&sw);
    band_sem_opts so = {.wait_histo = &sw};
    assert_int_equal(band_sem_create(&s, 5, &so), 0);
    assert_int_equal(band_sem_try_acquire(s, 2), 0);
    assert_int_equal(band_sem_try_acquire(s, 4), BAND_EAGAIN);
    /* One queued acquisition that times out: one recorded wait. */
    assert_int_equal(band_sem_acquire(s, 4, band_now() + 5 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_metrics_add_sem(m, "db \"pool\"", s, &sw), 0);

    band_chan *c = NULL;
    band_histo cw;
    band_histo_init(&cw);
    band_chan_opts co = {.wait_histo = &cw};
    assert_int_equal(band_chan_create(&c, sizeof(uint64_t), 2, &co), 0);
    uint64_t v = 1;
    assert_int_equal(band_chan_try_send(c, &v, 10), 0);
    assert_int_equal(band_chan_try_send(c, &v, 20), 0);
    assert_int_equal(band_chan_try_send(c, &v, 1), BAND_EAGAIN);
    /* It queues (after a brief spin) and times out: one recorded wait. */
    assert_int_equal(band_chan_send(c, &v, 1, band_now() + 50 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_metrics_add_chan(m, "stage", c, &cw), 0);

    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, 1, BAND_SEC, 3, NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 2, NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 2, NULL), BAND_EAGAIN);
    assert_int_equal(band_metrics_add_rate(m, "quota", r), 0);

    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.sem = s;
    band_front_door *d = NULL;
    assert_int_equal(band_front_door_create(&d, &o), 0);
    band_permit p = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 0, 3, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_front_door_admit(d, 0, 1, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(band_metrics_add_front_door(m, "front", d, NULL), 0);

    band_histo h;
    band_histo_init(&h);
    band_histo_record(&h, 500);           /* 0.5 us */
    band_histo_record(&h, 2000000);       /* 2 ms */
    band_histo_record(&h, 3000000000ULL); /* 3 s */
    assert_int_equal(band_metrics_add_histo(m, "band_exec_queue", "pool", "Queue time.", &h), 0);
    assert_int_equal(band_metrics_add_histo(m, "band_exec_queue", "pool2", NULL, &h), 0);
    assert_int_equal(band_metrics_add_histo(m, "app_odd", "x", "Two\nlines, a \\ and \"q\".", &h),
                     0);

    char *t = render(m);
    expect_line(t, "# TYPE band_sem_available gauge");
    expect_line(t, "band_sem_available{name=\"db \\\"pool\\\"\"} 0"); /* 5 - 2 - 3 */
    expect_line(t, "band_sem_refusals_total{name=\"db \\\"pool\\\"\",reason=\"full\"} 2");
    expect_line(t, "band_chan_len{name=\"stage\"} 2");
    expect_line(t, "band_chan_bytes{name=\"stage\"} 30");
    expect_line(t, "band_chan_refusals_total{name=\"stage\",reason=\"full\"} 1");
    expect_line(t, "# TYPE band_chan_send_wait_seconds histogram");
    expect_line(t, "band_chan_send_wait_seconds_count{name=\"stage\"} 1");
    expect_line(t, "band_chan_send_wait_seconds_bucket{name=\"stage\",le=\"+Inf\"} 1");
    expect_line(t, "band_rate_granted_tokens_total{name=\"quota\"} 2");
    expect_line(t, "band_rate_refusals_total{name=\"quota\",reason=\"rate\"} 1");
    expect_line(t, "band_front_door_answers_total{name=\"front\",answer=\"accept\"} 1");
    expect_line(t, "band_front_door_answers_total{name=\"front\",answer=\"busy\"} 1");
    expect_line(t, "# HELP band_exec_queue_seconds Queue time.");
    expect_line(t, "# HELP app_odd_seconds Two\\nlines, a \\\\ and \"q\".");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"1e-06\"} 1");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"0.001\"} 1");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"0.01\"} 2");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"1\"} 2");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"10\"} 3");
    expect_line(t, "band_exec_queue_seconds_bucket{name=\"pool\",le=\"+Inf\"} 3");
    expect_line(t, "band_exec_queue_seconds_count{name=\"pool2\"} 3");
    /* One HELP per family, even with two entries. */
    const char *first = strstr(t, "# HELP band_exec_queue_seconds");
    assert_non_null(first);
    assert_null(strstr(first + 1, "# HELP band_exec_queue_seconds"));
    expect_line(t, "band_sem_wait_seconds_count{name=\"db \\\"pool\\\"\"} 1");
    expect_line(t, "band_sem_refusals_total{name=\"db \\\"pool\\\"\",reason=\"timeout\"} 1");
    free(t);

    assert_int_equal(band_metrics_fprint(m, stderr), 0);
    assert_int_equal(band_front_door_done(d, &p, 0), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_rate_destroy(r), 0);
    uint64_t out;
    assert_int_equal(band_chan_try_recv(c, &out, NULL), 0);
    assert_int_equal(band_chan_try_recv(c, &out, NULL), 0);
    assert_int_equal(band_chan_destroy(c), 0);
    assert_int_equal(band_sem_release(s, 2), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* A plain semaphore knows its capacity and what is in use: the permits it was created
 * with, less what reduce removed, plus releases beyond what was acquired. Drained permits
 * are held by the caller. */
static void test_sem_capacity(void **state)
{
    (void)state;
    band_sem *s = NULL;
    assert_int_equal(band_sem_create(&s, 5, NULL), 0);
    assert_int_equal(band_sem_try_acquire(s, 2), 0);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 5);
    assert_int_equal(st.in_use, 2);
    assert_int_equal(band_sem_reduce(s, 1), 0); /* from the free permits */
    assert_int_equal(band_sem_drain(s, 1), 1);  /* the caller holds it */
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 4);
    assert_int_equal(st.in_use, 3);
    assert_int_equal(band_sem_release(s, 1), 0); /* the drained permit comes back */
    assert_int_equal(band_sem_reduce(s, 3), 0);  /* 2 free, 1 owed by the holders */
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 1);
    assert_int_equal(st.debt, 1);
    assert_int_equal(st.in_use, 2);
    assert_int_equal(band_sem_release(s, 2), 0); /* repays the debt */
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 1);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(band_sem_release(s, 3), 0); /* grows it: never acquired */
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 4);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(band_sem_try_acquire(s, 4), 0);
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 4); /* the growth stays once seen */
    assert_int_equal(st.in_use, 4);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, s, 1), 0);
    assert_int_equal(band_permit_forget(&p), 1); /* leaves for good */
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    assert_int_equal(st.capacity, 3);
    assert_int_equal(st.in_use, 3);

    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 1), 0);
    assert_int_equal(band_metrics_add_sem(m, "pool", s, NULL), 0);
    char *t = render(m);
    expect_line(t, "band_sem_capacity{name=\"pool\"} 3");
    expect_line(t, "band_sem_in_use{name=\"pool\"} 3");
    expect_line(t, "band_sem_available{name=\"pool\"} 0");
    free(t);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_sem_release(s, 3), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

struct churn {
    band_sem *s;
    _Atomic int stop;
    _Atomic uint64_t started, done; /* reductions begun, and returned */
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    for (uint64_t i = 0; !atomic_load(&c->stop); i++) {
        if (band_sem_try_acquire(c->s, 1) == 0)
            assert_int_equal(band_sem_release(c->s, 1), 0);
        if (i % 512 == 511 && atomic_load(&c->started) < 48) {
            atomic_fetch_add(&c->started, 1);
            assert_int_equal(band_sem_reduce(c->s, 1), 0);
            atomic_fetch_add(&c->done, 1);
        }
    }
    return NULL;
}

/* Acquisitions, releases and reductions on another thread never make a snapshot see
 * growth: the capacity lies between 64 less the reductions begun and 64 less those
 * returned, and in use never passes it. */
static void test_sem_capacity_concurrent(void **state)
{
    (void)state;
    struct churn c = {.s = NULL};
    atomic_init(&c.stop, 0);
    atomic_init(&c.started, 0);
    atomic_init(&c.done, 0);
    assert_int_equal(band_sem_create(&c.s, 64, NULL), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, churn_thread, &c), 0);
    for (int i = 0; i < 20000; i++) {
        uint64_t done = atomic_load(&c.done);
        band_sem_stats st;
        assert_int_equal(band_sem_get_stats(c.s, &st), 0);
        uint64_t started = atomic_load(&c.started);
        if (st.capacity > 64 - done || st.capacity < 64 - started || st.in_use > st.capacity)
            fail_msg("round %d: capacity %llu, in use %llu; reductions %llu..%llu", i,
                     (unsigned long long)st.capacity, (unsigned long long)st.in_use,
                     (unsigned long long)done, (unsigned long long)started);
    }
    atomic_store(&c.stop, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    uint64_t cap = 64 - atomic_load(&c.done);
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(c.s, &st), 0);
    assert_int_equal(st.capacity, cap);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(band_sem_destroy(c.s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_sem_capacity),
        cmocka_unit_test(test_sem_capacity_concurrent),
    };
    return cmocka_run_group_tests_name("test_metrics", tests, NULL, NULL);
}
