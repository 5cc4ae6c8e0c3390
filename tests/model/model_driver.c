/* SPDX-License-Identifier: MIT */
/*
 * model_driver.c - main() of every model test: runs the test that its model_<name>.c
 * describes in `model_driver` (see model_driver.h).
 */
#include "model_driver.h"

#include <stdio.h>
#include <stdlib.h>

static const struct model_driver *g_d;
static int g_argc;
static char **g_argv;
static uint64_t g_ops;
static unsigned g_nseeds;
static uint64_t g_seconds_all;
static double g_seconds_each;
static band_time g_start;
static unsigned g_runs; /* seeded runs that reached their end (matched or not) */
static uint64_t g_seeds[MODEL_DRIVER_MAX_SEEDS];
static uint64_t *g_total; /* the counts struct, g_d->model.counts_size bytes */

static void add_counts(const void *counts)
{
    const uint64_t *src = counts;
    for (size_t k = 0; k < g_d->model.counts_size / sizeof(uint64_t); k++)
        g_total[k] += src[k];
}

/* When seed k must stop (see BAND_MODEL_SECONDS in model_driver.h). */
static band_time seed_deadline(unsigned k)
{
    if (g_d->seconds_all != 0)
        return g_start +
               (band_time)(g_seconds_all * (uint64_t)BAND_SEC / g_nseeds) * (band_time)(k + 1);
    if (g_d->seconds_each != 0)
        return band_now() + (band_time)(g_seconds_each * (double)BAND_SEC);
    return MODEL_DRIVER_NO_DEADLINE;
}

static void test_seed(void **state)
{
    const struct model_driver_model *mo = &g_d->model;
    uint64_t seed = *(uint64_t *)*state;
    band_time until = seed_deadline((unsigned)((uint64_t *)*state - g_seeds));
    void *m = mo->create();
    assert_non_null(m);
    int rc = mo->run_seed(m, seed, g_ops, until);
    if (rc != 0 && g_d->ops_done != NULL)
        print_error("seed %llu (op %llu): %s\n", (unsigned long long)seed,
                    (unsigned long long)g_d->ops_done(m), mo->error(m));
    else if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, mo->error(m));
    add_counts(mo->counts(m));
    g_runs++;
    mo->destroy(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    const struct model_driver_model *mo = &g_d->model;
    void *m = mo->create();
    if (m == NULL)
        return 1;
    int rc = mo->run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, mo->error(m));
    add_counts(mo->counts(m));
    mo->destroy(m);
    return rc != 0;
}

/* Replays every file of the directories given as arguments (the fuzz corpus). */
static void test_corpus(void **state)
{
    (void)state;
    unsigned files = 0;
    unsigned failures = test_replay_corpus(g_argv + 1, g_argc - 1, replay_one, NULL, &files);
    print_message("replayed %u corpus file(s)\n", files);
    assert_int_equal(failures, 0);
    if (g_d->corpus_required)
        assert_true(g_argc < 2 || files > 0);
}

/* The generator must reach every operation and every interesting outcome. */
static void test_coverage(void **state)
{
    (void)state;
    if (g_d->filter && g_runs < g_nseeds) {
        print_message("seeds filtered out: coverage not checked\n");
        return;
    }
    g_d->coverage(g_total);
}

struct CMUnitTest model_driver_coverage_test(void)
{
    return (struct CMUnitTest)cmocka_unit_test(test_coverage);
}

void model_driver_check_ops(const uint64_t *ops, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(ops[i] > 0);
    }
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return strtoull(v, NULL, 10);
}

static double env_double(const char *name, double dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return strtod(v, NULL);
}

int main(int argc, char **argv)
{
    const struct model_driver *d = &model_driver;
    g_d = d;
    g_argc = argc;
    g_argv = argv;
    g_ops = env_u64("BAND_MODEL_OPS", d->ops);
    uint64_t ns = env_u64("BAND_MODEL_SEEDS", d->seeds);
    /* A time shared by the seeds is divided by their number: at least one. */
    uint64_t min_seeds = d->seconds_all != 0 ? 1 : 0;
    g_nseeds = (unsigned)(ns > MODEL_DRIVER_MAX_SEEDS ? MODEL_DRIVER_MAX_SEEDS
                          : ns < min_seeds            ? min_seeds
                                                      : ns);
    if (d->seconds_all != 0)
        g_seconds_all = env_u64("BAND_MODEL_SECONDS", d->seconds_all);
    else if (d->seconds_each != 0)
        g_seconds_each = env_double("BAND_MODEL_SECONDS", d->seconds_each);
    if (d->filter) {
        const char *filter = getenv("BAND_MODEL_FILTER");
        if (filter != NULL && *filter != '\0')
            cmocka_set_test_filter(filter);
    }
    g_total = calloc(1, d->model.counts_size);
    if (g_total == NULL) {
        fprintf(stderr, "%s: out of memory\n", d->name);
        return 1;
    }

    static struct CMUnitTest tests[MODEL_DRIVER_MAX_TESTS];
    static char names[MODEL_DRIVER_MAX_SEEDS][40];
    size_t n = 0;
    for (unsigned i = 0; i < g_nseeds; i++) {
        g_seeds[i] = d->seed_base * (i + 1) + i;
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    int rc = 0;
    if (d->tests != NULL) {
        rc = d->tests(argc, argv, tests, &n, MODEL_DRIVER_MAX_TESTS);
    } else {
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    }
    if (rc == 0) {
        g_start = band_now();
        rc = _cmocka_run_group_tests(d->name, tests, n, NULL, NULL);
    }
    free(g_total);
    return rc;
}
