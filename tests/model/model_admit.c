/* SPDX-License-Identifier: MIT */
/*
 * model_admit.c - runs the admission reference model (admit_model.c) over fixed seeds,
 * checks that the generated sequences reached every kind of operation and outcome, runs
 * directed cases for behaviour the random runs reach only rarely, and replays the fuzz
 * corpus given on the command line (one test per file, named corpus_<file>). Every case
 * is a test of its own, so that one can be run by name.
 *
 * Environment knobs: BAND_MODEL_SEEDS (how many seeds, default 16), BAND_MODEL_OPS
 * (operations per seed, default 20000; every seed also stops after BAND_MODEL_SECONDS,
 * default 0.6 s, so the test stays within a few seconds under sanitizers),
 * BAND_MODEL_FILTER (a cmocka test-name pattern, e.g. "model_seed_*" or
 * "corpus_regress_*"), ADMIT_MODEL_TRACE=1 (print every operation; 2 also dumps
 * the model's state after each), ADMIT_MODEL_RECORD=<file> (write the bytes a seeded run
 * consumed: a corpus file that replays the same operations; use with a filter that
 * selects one seed).
 */
#include "model_driver.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "admit_model.h"

#define MAX_FILES 512
/* The seeds, then the coverage check, five directed cases and the corpus files. */
_Static_assert(MODEL_DRIVER_MAX_TESTS >= MODEL_DRIVER_MAX_SEEDS + 6 + MAX_FILES,
               "room for every test of model_admit");

/* Every seed stops at its deadline (BAND_MODEL_SECONDS after its start). */
MODEL_DRIVER_ADAPTERS(admit_model,
                      (admit_model_set_deadline(m, until), admit_model_run_seed(m, seed, ops)))

static uint64_t ops_done(const void *m)
{
    return admit_model_ops_done(m);
}

static char g_files[MAX_FILES][1024];
static char g_names[MAX_FILES][96];

static void test_file(void **state)
{
    const char *path = *state;
    static uint8_t buf[1 << 20];
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    struct admit_model *m = admit_model_new();
    assert_non_null(m);
    int rc = admit_model_run_bytes(m, buf, n);
    if (rc != 0)
        print_error("%s: %s\n", path, admit_model_error(m));
    admit_model_free(m);
    assert_int_equal(rc, 0);
}

/* The generator must reach every operation and every interesting outcome (counted over
 * the seeds, which run first). */
static void coverage(const void *totals)
{
    static const char *const names[AM_OP_COUNT] = {
        "build",  "try",    "async",     "past",       "take",        "release",       "part",
        "adjust", "cancel", "plain_try", "plain_past", "plain_async", "plain_release", "drain",
        "grow",   "shrink", "close",     "destroy",    "create",      "busy",          "reset"};
    const struct admit_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, AM_OP_COUNT);
    print_message("pending %llu, wakes: grant %llu closed %llu e2big %llu plain %llu; "
                  "cancels %llu, ealready %llu, e2big at submit %llu, guaranteed %llu, "
                  "staged joins %llu, granted at submit %llu, wake releases %llu, "
                  "wake destroys %llu (%llu with a staged request), adjust from set-aside "
                  "%llu, branch points %llu, several candidates %llu, truncated %llu\n",
                  (unsigned long long)c->pending, (unsigned long long)c->grant_wakes,
                  (unsigned long long)c->closed_wakes, (unsigned long long)c->e2big_wakes,
                  (unsigned long long)c->plain_wakes, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->e2big_submit,
                  (unsigned long long)c->guaranteed, (unsigned long long)c->staged_joins,
                  (unsigned long long)c->submit_granted, (unsigned long long)c->hook_releases,
                  (unsigned long long)c->wake_destroys, (unsigned long long)c->destroy_staged,
                  (unsigned long long)c->adjust_front, (unsigned long long)c->branch_points,
                  (unsigned long long)c->multi_candidate, (unsigned long long)c->truncated);
    assert_true(c->pending > 0);
    assert_true(c->grant_wakes > 0);
    assert_true(c->closed_wakes > 0);
    assert_true(c->e2big_wakes > 0);
    assert_true(c->plain_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->e2big_submit > 0);
    assert_true(c->guaranteed > 0);
    assert_true(c->staged_joins > 0);
    assert_true(c->hook_releases > 0);
    assert_true(c->wake_destroys > 0);
    assert_true(c->adjust_front > 0);
    print_message("lock-free admissions with a word moved before the CAS: taken %llu, "
                  "given back %llu\n",
                  (unsigned long long)c->race_moved_ok, (unsigned long long)c->race_gave_back);
    assert_true(c->race_moved_ok > 0);
    assert_true(c->race_gave_back > 0);
}

/* ---------------------------------------------------------------------------------- */
/* directed cases                                                                     */

struct dwake {
    band_waiter w; /* first */
    int count, status;
    band_sem *destroy_sem; /* destroyed inside the wake when set */
    band_budget *destroy_budget;
    int destroy_rc;
};

/* The recorder is the waiter's owner pointer when it has one (an admission request's
 * waiter lives in the request), else the struct the waiter starts. */
static void dwake_fn(band_waiter *w)
{
    struct dwake *d = w->data != NULL ? w->data : (struct dwake *)(void *)w;
    d->count++;
    d->status = band_waiter_status(w);
    if (d->destroy_budget != NULL)
        d->destroy_rc = band_budget_destroy(d->destroy_budget);
    else if (d->destroy_sem != NULL)
        d->destroy_rc = band_sem_destroy(d->destroy_sem);
}

static band_sem_stats stats_of(band_sem *s)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    return st;
}

/*
 * A pending request cancelled with a reason other than BAND_ETIMEDOUT counts in "cancels"
 * of each of its budgets, whatever the code (sem.h: closed_fails counts acquisitions
 * "failed by close", cancels those "cancelled for any other reason"), as a plain waiter's
 * cancel does.
 */
static void test_cancel_reason_counts(void **state)
{
    (void)state;
    band_budget *a, *b;
    assert_int_equal(band_budget_create(&a, 2, NULL), 0);
    assert_int_equal(band_budget_create(&b, 2, NULL), 0);
    band_sem *sa = band_budget_sem(a), *sb = band_budget_sem(b);
    assert_int_equal(band_sem_try_acquire(sb, 2), 0);
    /* A cancel takes BAND_ECANCELED or BAND_ETIMEDOUT; any other code is refused and the
     * operation stays queued, for a plain waiter and a request alike. */
    static const int refused[] = {BAND_ECLOSED, BAND_E2BIG, BAND_EAGAIN};
    static const int reasons[] = {BAND_ECANCELED, BAND_ETIMEDOUT};
    for (unsigned i = 0; i < TEST_COUNTOF(reasons); i++) {
        struct dwake plain = {0};
        band_waiter_init(&plain.w, dwake_fn, &plain);
        assert_int_equal(band_sem_acquire_async(sb, 1, &plain.w), BAND_PENDING);
        band_admit_req r;
        band_admit_req_init(&r, dwake_fn, NULL);
        assert_int_equal(band_admit_req_add(&r, sa, 1), 0);
        assert_int_equal(band_admit_req_add(&r, sb, 1), 0);
        assert_int_equal(band_admit_acquire_async(&r), BAND_PENDING);
        for (unsigned j = 0; j < TEST_COUNTOF(refused); j++) {
            assert_int_equal(band_waiter_cancel(&plain.w, refused[j]), BAND_EINVAL);
            assert_int_equal(band_waiter_cancel(&r.w, refused[j]), BAND_EINVAL);
        }
        assert_true(band_waiter_is_pending(&plain.w));
        assert_true(band_waiter_is_pending(&r.w));
        assert_int_equal(band_waiter_cancel(&plain.w, reasons[i]), 0);
        assert_int_equal(band_waiter_cancel(&r.w, reasons[i]), 0);
        assert_int_equal(band_waiter_status(&r.w), reasons[i]);
        /* b: the plain waiter and the request; a: the request */
        uint64_t want_c = reasons[i] == BAND_ECANCELED ? 1 : 0;
        uint64_t want_t = 1 - want_c;
        assert_u64_equal(stats_of(sb).cancels, 2 * want_c + (i > 0 ? 2 : 0));
        assert_u64_equal(stats_of(sb).timeouts, 2 * want_t);
        assert_u64_equal(stats_of(sa).cancels, want_c + (i > 0 ? 1 : 0));
        assert_u64_equal(stats_of(sa).timeouts, want_t);
        assert_u64_equal(stats_of(sa).closed_fails, 0);
        assert_u64_equal(stats_of(sb).closed_fails, 0);
        assert_u64_equal(stats_of(sa).too_big, 0);
        assert_u64_equal(stats_of(sb).too_big, 0);
        assert_u64_equal(band_sem_available(sa), 2);
    }
    assert_int_equal(band_sem_release(sb, 2), 0);
    assert_int_equal(band_budget_destroy(a), 0);
    assert_int_equal(band_budget_destroy(b), 0);
}

/*
 * A wake destroys the idle budget whose close woke it, while a tree request waits at its
 * leaf elsewhere (so the close has tree requests to sweep). Destroying an idle budget from
 * inside a wake is allowed (core.h: the wake may call band; band_budget_destroy: 0 when
 * nobody waits); nothing may touch the budget afterwards. Under ASan a use after free
 * fails this test.
 */
static void test_destroy_in_wake_while_staged(void **state)
{
    (void)state;
    band_cap_tree *root, *leaf;
    assert_int_equal(band_cap_tree_create(&root, NULL, 4, 0), 0);
    assert_int_equal(band_cap_tree_create(&leaf, root, 2, 0), 0);
    band_admit_req held, staged;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    band_admit_req_init(&held, NULL, NULL);
    assert_int_equal(band_admit_req_add_tree(&held, leaf, 2), 0);
    assert_int_equal(band_admit_try_acquire(&held, &g), 0);
    struct dwake sw = {0};
    band_admit_req_init(&staged, dwake_fn, &sw);
    assert_int_equal(band_admit_req_add_tree(&staged, leaf, 1), 0);
    assert_int_equal(band_admit_acquire_async(&staged), BAND_PENDING); /* waits at the leaf */
    assert_u64_equal(stats_of(band_cap_tree_sem(root)).waiters, 0);

    band_budget *x;
    assert_int_equal(band_budget_create(&x, 1, NULL), 0);
    assert_int_equal(band_budget_try_acquire(x, 1), 0);
    struct dwake pw = {0};
    band_waiter_init(&pw.w, dwake_fn, &pw);
    assert_int_equal(band_budget_acquire_async(x, 1, &pw.w), BAND_PENDING);
    pw.destroy_budget = x; /* the wake of the close destroys x, now idle */
    assert_int_equal(band_budget_close(x), 0);
    assert_int_equal(pw.count, 1);
    assert_int_equal(pw.status, BAND_ECLOSED);
    assert_int_equal(pw.destroy_rc, 0);

    /* the tree is untouched */
    assert_int_equal(sw.count, 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(sw.count, 1);
    assert_int_equal(sw.status, 0);
    assert_int_equal(band_admit_req_grant(&staged, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_cap_tree_destroy(leaf), 0);
    assert_int_equal(band_cap_tree_destroy(root), 0);
}

/* The same with a shrink that fails the plain waiter with BAND_E2BIG. */
static void test_destroy_in_wake_of_shrink_while_staged(void **state)
{
    (void)state;
    band_cap_tree *root, *leaf;
    assert_int_equal(band_cap_tree_create(&root, NULL, 4, 0), 0);
    assert_int_equal(band_cap_tree_create(&leaf, root, 2, 0), 0);
    band_admit_req held, staged;
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    band_admit_req_init(&held, NULL, NULL);
    assert_int_equal(band_admit_req_add_tree(&held, leaf, 2), 0);
    assert_int_equal(band_admit_try_acquire(&held, &g), 0);
    struct dwake sw = {0};
    band_admit_req_init(&staged, dwake_fn, &sw);
    assert_int_equal(band_admit_req_add_tree(&staged, leaf, 1), 0);
    assert_int_equal(band_admit_acquire_async(&staged), BAND_PENDING);

    band_budget *x;
    assert_int_equal(band_budget_create(&x, 3, NULL), 0);
    assert_int_equal(band_budget_try_acquire(x, 1), 0);
    struct dwake pw = {0};
    band_waiter_init(&pw.w, dwake_fn, &pw);
    assert_int_equal(band_budget_acquire_async(x, 3, &pw.w), BAND_PENDING);
    pw.destroy_budget = x;
    assert_int_equal(band_budget_shrink(x, 1), 0); /* capacity 2 < 3: E2BIG */
    assert_int_equal(pw.count, 1);
    assert_int_equal(pw.status, BAND_E2BIG);
    assert_int_equal(pw.destroy_rc, 0);

    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(sw.status, 0);
    assert_int_equal(band_admit_req_grant(&staged, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    assert_int_equal(band_cap_tree_destroy(leaf), 0);
    assert_int_equal(band_cap_tree_destroy(root), 0);
}

/*
 * Units set aside for a waiting request are free units (admit.h); a shrink that finds all
 * free units set aside leaves them there and owes the rest. Returning units that are held
 * must still succeed: budget.h refuses a release with BAND_EOVERFLOW only for units that
 * were never acquired. Here the release only repays debt.
 */
static void test_release_after_shrink_below_set_aside(void **state)
{
    (void)state;
    band_budget *a, *b;
    assert_int_equal(band_budget_create(&a, 5, NULL), 0);
    assert_int_equal(band_budget_create(&b, 1, NULL), 0);
    band_sem *sa = band_budget_sem(a), *sb = band_budget_sem(b);
    assert_int_equal(band_sem_try_acquire(sa, 1), 0); /* held */
    assert_int_equal(band_sem_try_acquire(sb, 1), 0);
    struct dwake rw = {0};
    band_admit_req r;
    band_admit_req_init(&r, dwake_fn, &rw);
    assert_int_equal(band_admit_req_add(&r, sa, 1), 0);
    assert_int_equal(band_admit_req_add(&r, sb, 1), 0);
    assert_int_equal(band_admit_acquire_async(&r), BAND_PENDING);
    assert_u64_equal(stats_of(sa).head_granted, 4); /* a's free units, set aside for r */
    assert_int_equal(band_budget_shrink(a, 4), 0);  /* capacity 1, owes 4 */
    band_sem_stats st = stats_of(sa);
    assert_u64_equal(st.capacity, 1);
    assert_u64_equal(st.in_use, 1);
    assert_int_equal(rw.count, 0);

    assert_int_equal(band_sem_release(sa, 1), 0); /* the held unit comes back */
    assert_u64_equal(stats_of(sa).in_use, 0);
    assert_int_equal(band_sem_release(sb, 1), 0); /* r is admitted */
    assert_int_equal(rw.count, 1);
    assert_int_equal(rw.status, 0);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    assert_int_equal(band_admit_req_grant(&r, &g), 0);
    assert_int_equal(band_admit_release(&g), 0);
    st = stats_of(sa);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_int_equal(band_budget_destroy(a), 0);
    assert_int_equal(band_budget_destroy(b), 0);
}

/*
 * The reservations of a node's children may total at most the node's capacity (admit.h):
 * after the parent shrank below what its children reserve, a new child with a
 * reservation is refused with BAND_EINVAL.
 */
static void test_tree_reserve_past_shrunk_cap(void **state)
{
    (void)state;
    band_cap_tree *root, *t1, *t2, *t3 = NULL;
    assert_int_equal(band_cap_tree_create(&root, NULL, 10, 0), 0);
    assert_int_equal(band_cap_tree_create(&t1, root, 10, 4), 0);
    assert_int_equal(band_cap_tree_create(&t2, root, 10, 4), 0);
    assert_int_equal(band_cap_tree_create(&t3, root, 5, 3), BAND_EINVAL); /* 8 + 3 > 10 */
    assert_int_equal(band_sem_reduce(band_cap_tree_sem(root), 7), 0);     /* capacity 3 < 8 */
    assert_int_equal(band_cap_tree_create(&t3, root, 5, 1), BAND_EINVAL); /* 8 + 1 > 3 */
    if (t3 != NULL) {
        assert_int_equal(band_cap_tree_destroy(t3), 0);
        t3 = NULL;
    }
    assert_int_equal(band_cap_tree_destroy(t2), 0);
    assert_int_equal(band_cap_tree_destroy(t1), 0);
    assert_int_equal(band_cap_tree_destroy(root), 0);
}

/* ---------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* After the seeds: the coverage check, the directed cases and every corpus file. */
static int add_tests(int argc, char **argv, struct CMUnitTest *tests, size_t *np, size_t cap)
{
    (void)cap; /* enough: see the assertion below */
    size_t n = *np;
    /* every file of the corpus directories, in name order, one test each */
    unsigned nfiles = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (d == NULL) {
            fprintf(stderr, "cannot open corpus directory %s\n", argv[a]);
            return 1;
        }
        unsigned first = nfiles;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && nfiles < MAX_FILES) {
            if (e->d_name[0] == '.')
                continue;
            size_t len = strlen(e->d_name);
            if (len + 8 > sizeof(g_names[nfiles])) {
                fprintf(stderr, "corpus file name too long: %s\n", e->d_name);
                closedir(d);
                return 1;
            }
            memcpy(g_names[nfiles], "corpus_", 7);
            memcpy(g_names[nfiles] + 7, e->d_name, len + 1);
            nfiles++;
        }
        closedir(d);
        qsort(g_names[first], nfiles - first, sizeof(g_names[0]), cmp_str);
        for (unsigned i = first; i < nfiles; i++)
            snprintf(g_files[i], sizeof(g_files[i]), "%s/%s", argv[a], g_names[i] + 7);
    }
    tests[n++] = model_driver_coverage_test();
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cancel_reason_counts);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_release_after_shrink_below_set_aside);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_tree_reserve_past_shrunk_cap);
    for (unsigned i = 0; i < nfiles; i++) {
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_file, g_files[i]);
        tests[n++].name = g_names[i];
    }
    /* Last: a use after free aborts an ASan build at once, and the report should show
     * every other result first. */
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_destroy_in_wake_while_staged);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_destroy_in_wake_of_shrink_while_staged);
    *np = n;
    return 0;
}

const struct model_driver model_driver = {
    .name = "model_admit",
    .seed_base = UINT64_C(0x61646d74), /* "admt" */
    .ops = 20000,
    .seeds = 16,
    .seconds_each = 0.6,
    .filter = 1,
    .model = MODEL_DRIVER_MODEL(admit_model),
    .ops_done = ops_done,
    .coverage = coverage,
    .tests = add_tests,
};
