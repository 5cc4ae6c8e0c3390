/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_families.c - the exact Prometheus text of every primitive's families
 * (band/metrics.h): one registry per primitive, in a state reached without timed waits,
 * so every value is known.
 */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "band/metrics.h"
#include "metrics_expected.h"

static char *render(const band_metrics *m)
{
    size_t need = 0;
    assert_int_equal(band_metrics_write(m, NULL, 0, &need), BAND_E2BIG);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    size_t len = 0;
    assert_int_equal(band_metrics_write(m, buf, need + 1, &len), 0);
    assert_int_equal(len, need);
    return buf;
}

/* The whole text of @m is the lines of @want. BAND_METRICS_GOLDEN=dir writes what it got
 * there instead of comparing. */
static void expect_text(const band_metrics *m, const char *what, const char *const *want)
{
    char *got = render(m);
    const char *dir = getenv("BAND_METRICS_GOLDEN");
    if (dir != NULL) {
        char path[512];
        (void)snprintf(path, sizeof(path), "%s/%s.txt", dir, what);
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            (void)fputs(got, f);
            (void)fclose(f);
        }
        free(got);
        return;
    }
    const char *p = got;
    size_t n = 0;
    for (; want[n] != NULL; n++) {
        size_t len = strlen(want[n]);
        if (strncmp(p, want[n], len) != 0 || p[len] != '\n')
            fail_msg("%s: line %zu differs\n--- want:\n%s\n--- got:\n%.*s", what, n + 1, want[n],
                     (int)strcspn(p, "\n"), p);
        p += len + 1;
    }
    if (*p != '\0')
        fail_msg("%s: more than the %zu lines expected:\n%.200s", what, n, p);
    free(got);
}

static band_metrics *registry(void)
{
    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 4), 0);
    return m;
}

static void test_budget(void **state)
{
    (void)state;
    band_budget *b = NULL;
    assert_int_equal(band_budget_create(&b, 100, NULL), 0);
    assert_int_equal(band_budget_try_acquire(b, 30), 0);
    assert_int_equal(band_budget_try_acquire(b, 80), BAND_EAGAIN);
    assert_int_equal(band_budget_try_acquire(b, 200), BAND_E2BIG);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_budget(m, "mem", b, NULL), 0);
    expect_text(m, "budget", expect_budget);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_budget_release(b, 30), 0);
    assert_int_equal(band_budget_destroy(b), 0);
}

static void test_chan(void **state)
{
    (void)state;
    band_chan *c = NULL;
    band_chan_opts o = {.byte_capacity = 64};
    assert_int_equal(band_chan_create(&c, sizeof(uint64_t), 4, &o), 0);
    uint64_t v = 7;
    assert_int_equal(band_chan_try_send(c, &v, 40), 0);
    assert_int_equal(band_chan_try_send(c, &v, 40), BAND_EAGAIN); /* over the bytes */
    assert_int_equal(band_chan_try_send(c, &v, 100), BAND_E2BIG);
    assert_int_equal(band_chan_try_send(c, &v, 8), 0);
    assert_int_equal(band_chan_try_recv(c, &v, NULL), 0);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_chan(m, "stage", c, NULL), 0);
    expect_text(m, "chan", expect_chan);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_chan_try_recv(c, &v, NULL), 0);
    assert_int_equal(band_chan_destroy(c), 0);
}

static void test_rate(void **state)
{
    (void)state;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, 10, BAND_SEC, 5, NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 5, NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 5, NULL), BAND_EAGAIN);
    assert_int_equal(band_rate_try_acquire(r, 6, NULL), BAND_E2BIG);
    assert_int_equal(band_rate_close(r), 0);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_rate(m, "quota", r), 0);
    char *t = render(m);
    /* Every line but band_rate_available, which refills with time. */
    static const char *const lines[] = {
        "band_rate_tokens{name=\"quota\"} 10",
        "band_rate_period_seconds{name=\"quota\"} 1.000000000",
        "band_rate_burst{name=\"quota\"} 5",
        "band_rate_closed{name=\"quota\"} 1",
        "band_rate_granted_total{name=\"quota\"} 1",
        "band_rate_granted_tokens_total{name=\"quota\"} 5",
        "band_rate_delayed_total{name=\"quota\"} 0",
        "band_rate_cancelled_total{name=\"quota\"} 0",
        "band_rate_refusals_total{name=\"quota\",reason=\"rate\"} 1",
        "band_rate_refusals_total{name=\"quota\",reason=\"deadline\"} 0",
        "band_rate_refusals_total{name=\"quota\",reason=\"too_big\"} 1",
        "band_rate_refusals_total{name=\"quota\",reason=\"closed\"} 0",
        "# HELP band_rate_available Whole tokens in the bucket.",
        "# TYPE band_rate_available gauge",
        "# TYPE band_rate_refusals_total counter",
    };
    size_t nlines = 0;
    for (const char *p = t; *p != '\0'; p++)
        nlines += *p == '\n';
    assert_int_equal(nlines, 9 * 3 + 2 + 4); /* 9 families of one series, one of four */
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        const char *p = strstr(t, lines[i]);
        if (p == NULL || (p != t && p[-1] != '\n') || p[strlen(lines[i])] != '\n')
            fail_msg("missing line: %s\n--- in:\n%s", lines[i], t);
    }
    free(t);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_front_door(void **state)
{
    (void)state;
    band_budget *s = NULL; /* a budget knows its capacity: 9 can never fit */
    assert_int_equal(band_budget_create(&s, 4, NULL), 0);
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.sem = band_budget_sem(s);
    o.classes = 3;
    band_front_door *d = NULL;
    assert_int_equal(band_front_door_create(&d, &o), 0);
    band_permit p = BAND_PERMIT_INIT, q = BAND_PERMIT_INIT;
    band_answer a;
    assert_int_equal(band_front_door_admit(d, 1, 4, NULL, &p, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_ACCEPT);
    assert_int_equal(band_front_door_admit(d, 2, 1, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_BUSY);
    assert_int_equal(band_front_door_admit(d, 0, 9, NULL, &q, &a, BAND_FOREVER, NULL), 0);
    assert_int_equal(a.kind, BAND_ANSWER_TOO_BIG);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_front_door(m, "front", d, NULL), 0);
    expect_text(m, "front_door", expect_front_door);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_front_door_done(d, &p, 0), 0);
    assert_int_equal(band_front_door_destroy(d), 0);
    assert_int_equal(band_budget_destroy(s), 0);
}

static void test_fair(void **state)
{
    (void)state;
    band_fair_opts o;
    memset(&o, 0, sizeof(o));
    o.classes = 2;
    o.headroom[1] = 2;
    band_fair *f = NULL;
    assert_int_equal(band_fair_create(&f, 10, &o), 0);
    band_fair_key_opts k = {.weight = 3, .cap = 6, .reserve = 1};
    assert_int_equal(band_fair_key_set(f, 7, &k), 0);
    assert_int_equal(band_fair_try_acquire(f, 7, 0, 4), 0);
    assert_int_equal(band_fair_try_acquire(f, 7, 1, 3), BAND_EAGAIN); /* over its cap */
    assert_int_equal(band_fair_try_acquire(f, 9, 1, 2), 0);
    assert_int_equal(band_fair_release(f, 9, 2), 0); /* idle: key 9 is evicted */
    assert_int_equal(band_fair_try_acquire(f, 9, 0, 11), BAND_E2BIG);
    band_fair_stats st;
    assert_int_equal(band_fair_get_stats(f, &st), 0);
    assert_int_equal(st.keys_evicted, 1);
    assert_int_equal(st.evicted_granted, 1);
    assert_int_equal(st.evicted_granted_units, 2);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_fair(m, "tenants", f, 8), 0);
    expect_text(m, "fair", expect_fair);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_fair_release(f, 7, 4), 0);
    assert_int_equal(band_fair_destroy(f), 0);
}

static void test_admit_and_tree(void **state)
{
    (void)state;
    band_budget *cpu = NULL, *mem = NULL;
    assert_int_equal(band_budget_create(&cpu, 8, NULL), 0);
    assert_int_equal(band_budget_create(&mem, 1024, NULL), 0);
    assert_int_equal(band_budget_set_name(cpu, "cpu"), 0);
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    assert_int_equal(band_admit_req_add(&r, band_budget_sem(cpu), 2), 0);
    assert_int_equal(band_admit_req_add(&r, band_budget_sem(mem), 512), 0);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_try_acquire(&r, &g), 0);

    band_cap_tree *root = NULL, *leaf = NULL;
    assert_int_equal(band_cap_tree_create(&root, NULL, 10, 0), 0);
    assert_int_equal(band_cap_tree_create(&leaf, root, 6, 4), 0);
    band_admit_req tr;
    band_admit_req_init(&tr, NULL, NULL);
    assert_int_equal(band_admit_req_add_tree(&tr, leaf, 5), 0);
    band_admit_grant tg = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_try_acquire(&tr, &tg), 0);
    band_cap_tree_stats ts;
    assert_int_equal(band_cap_tree_get_stats(NULL, &ts), BAND_EINVAL);
    assert_int_equal(band_cap_tree_get_stats(root, NULL), BAND_EINVAL);
    assert_int_equal(band_cap_tree_get_stats(root, &ts), 0);
    assert_int_equal(ts.capacity, 10);
    assert_int_equal(ts.in_use, 5);
    assert_int_equal(ts.children, 1);
    assert_int_equal(ts.child_reserve, 4);

    band_metrics *m = registry();
    const band_sem *set[] = {band_budget_sem(cpu), band_budget_sem(mem)};
    assert_int_equal(band_metrics_add_admit(m, "jobs", set, 0), BAND_EINVAL);
    assert_int_equal(band_metrics_add_admit(m, "jobs", NULL, 1), BAND_EINVAL);
    assert_int_equal(band_metrics_add_admit(m, "jobs", set, 2), 0);
    expect_text(m, "admit", expect_admit);
    assert_int_equal(band_metrics_destroy(m), 0);
    m = registry();
    assert_int_equal(band_metrics_add_cap_tree(m, "cluster", root), 0);
    assert_int_equal(band_metrics_add_cap_tree(m, "team", leaf), 0);
    expect_text(m, "cap_tree", expect_cap_tree);
    assert_int_equal(band_metrics_destroy(m), 0);

    assert_int_equal(band_admit_release(&tg), 0);
    assert_int_equal(band_cap_tree_destroy(leaf), 0);
    assert_int_equal(band_cap_tree_destroy(root), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_budget_destroy(cpu), 0);
    assert_int_equal(band_budget_destroy(mem), 0);
}

static void test_limit(void **state)
{
    (void)state;
    band_limit_opts o;
    memset(&o, 0, sizeof(o));
    o.initial = 4;
    o.min = 2;
    o.max = 16;
    band_limit *l = NULL;
    assert_int_equal(band_limit_create(&l, &o), 0);
    assert_int_equal(band_limit_try_acquire(l), 0);
    assert_int_equal(band_limit_try_acquire(l), 0);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_limit(m, "backend", l), 0);
    expect_text(m, "limit", expect_limit);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_limit_on_done(l, 0, 0, BAND_LIMIT_IGNORE), 0);
    assert_int_equal(band_limit_on_done(l, 0, 0, BAND_LIMIT_IGNORE), 0);
    assert_int_equal(band_limit_destroy(l), 0);
}

static void test_exec(void **state)
{
    (void)state;
    band_exec *ex = NULL;
    assert_int_equal(band_exec_create(&ex, 1, 8, NULL), 0);
    assert_int_equal(band_exec_shutdown(ex, BAND_EXEC_DRAIN), 0);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_exec(m, "workers", ex), 0);
    expect_text(m, "exec", expect_exec);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_exec_join(ex), 0);
    assert_int_equal(band_exec_destroy(ex), 0);
}

static void test_sync(void **state)
{
    (void)state;
    band_oneshot *os = NULL;
    assert_int_equal(band_oneshot_create(&os, sizeof(int)), 0);
    int x = 1;
    assert_int_equal(band_oneshot_send(os, &x), 0);
    assert_int_equal(band_oneshot_send(os, &x), BAND_EALREADY);
    band_watch *w = NULL;
    assert_int_equal(band_watch_create(&w, sizeof(int), &x), 0);
    assert_int_equal(band_watch_send(w, &x), 0);
    assert_int_equal(band_watch_send(w, &x), 0);
    band_broadcast *b = NULL;
    assert_int_equal(band_broadcast_create(&b, sizeof(int), 2, BAND_BROADCAST_LOSSY), 0);
    band_broadcast_rx rx;
    band_broadcast_rx_init(&rx);
    assert_int_equal(band_broadcast_try_send(b, &x), 0); /* unheard */
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_broadcast_try_send(b, &i), 0); /* one overwritten */
    band_group *g = NULL;
    assert_int_equal(band_group_create(&g), 0);
    assert_int_equal(band_group_add(g, 3), 0);
    assert_int_equal(band_group_done(g), 0);
    band_latch *l = NULL;
    assert_int_equal(band_latch_create(&l, 2), 0);
    assert_int_equal(band_latch_count_down(l, 3), BAND_EINVAL);

    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 5), 0);
    assert_int_equal(band_metrics_add_oneshot(m, "reply", os), 0);
    assert_int_equal(band_metrics_add_watch(m, "config", w), 0);
    assert_int_equal(band_metrics_add_broadcast(m, "events", b), 0);
    assert_int_equal(band_metrics_add_group(m, "tasks", g), 0);
    assert_int_equal(band_metrics_add_latch(m, "start", l), 0);
    expect_text(m, "sync", expect_sync);
    assert_int_equal(band_metrics_destroy(m), 0);

    assert_int_equal(band_latch_count_down(l, 2), 0);
    assert_int_equal(band_latch_destroy(l), 0);
    assert_int_equal(band_group_done_n(g, 2), 0);
    assert_int_equal(band_group_destroy(g), 0);
    assert_int_equal(band_broadcast_unsubscribe(&rx), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
    assert_int_equal(band_watch_destroy(w), 0);
    assert_int_equal(band_oneshot_try_recv(os, &x), 0);
    assert_int_equal(band_oneshot_destroy(os), 0);
}

/* A fair lists at most max_keys keys per write, however many it holds. */
static void test_fair_bounded(void **state)
{
    (void)state;
    band_fair *f = NULL;
    assert_int_equal(band_fair_create(&f, 10, NULL), 0);
    for (uint64_t k = 1; k <= 3; k++)
        assert_int_equal(band_fair_try_acquire(f, k, 0, 1), 0);
    band_metrics *m = registry();
    assert_int_equal(band_metrics_add_fair(m, "t", f, 1), 0);
    assert_int_equal(band_metrics_add_fair(m, "none", f, 0), 0);
    char *t = render(m);
    size_t held = 0;
    for (const char *p = t; (p = strstr(p, "\nband_fair_key_held{")) != NULL; p++)
        held++;
    assert_int_equal(held, 1); /* one key of "t", none of "none" */
    assert_non_null(strstr(t, "\nband_fair_keys{name=\"t\"} 3\n"));
    assert_non_null(strstr(t, "\nband_fair_key_granted_total{name=\"none\",key=\"evicted\"} 0\n"));
    free(t);
    assert_int_equal(band_metrics_destroy(m), 0);
    for (uint64_t k = 1; k <= 3; k++)
        assert_int_equal(band_fair_release(f, k, 1), 0);
    assert_int_equal(band_fair_destroy(f), 0);
}

/* Bad arguments of the registration calls. */
static void test_add_args(void **state)
{
    (void)state;
    band_metrics *m = registry();
    band_fair *f = NULL;
    assert_int_equal(band_fair_create(&f, 4, NULL), 0);
    assert_int_equal(band_metrics_add_fair(m, "f", f, BAND_METRICS_MAX_KEYS + 1), BAND_EINVAL);
    assert_int_equal(band_metrics_add_fair(m, "f", NULL, 4), BAND_EINVAL);
    assert_int_equal(band_metrics_add_fair(NULL, "f", f, 4), BAND_EINVAL);
    assert_int_equal(band_metrics_add_fair(m, "", f, 4), BAND_EINVAL);
    assert_int_equal(band_metrics_add_budget(m, "b", NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_cap_tree(m, "t", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_limit(m, "l", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_exec(m, "x", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_oneshot(m, "o", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_watch(m, "w", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_broadcast(m, "b", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_group(m, "g", NULL), BAND_EINVAL);
    assert_int_equal(band_metrics_add_latch(m, "l", NULL), BAND_EINVAL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(band_metrics_add_fair(m, "f", f, 4), 0);
    assert_int_equal(band_metrics_add_fair(m, "f", f, 4), BAND_E2BIG); /* full, nothing leaks */
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_fair_destroy(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget),         cmocka_unit_test(test_chan),
        cmocka_unit_test(test_rate),           cmocka_unit_test(test_front_door),
        cmocka_unit_test(test_fair),           cmocka_unit_test(test_fair_bounded),
        cmocka_unit_test(test_admit_and_tree), cmocka_unit_test(test_limit),
        cmocka_unit_test(test_exec),           cmocka_unit_test(test_sync),
        cmocka_unit_test(test_add_args),
    };
    return cmocka_run_group_tests_name("test_metrics_families", tests, NULL, NULL);
}
