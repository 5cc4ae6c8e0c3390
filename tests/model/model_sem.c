/*
 * model_sem.c - runs the semaphore reference model (sem_model.c) over fixed seeds, 10^5
 * operations each, then replays the fuzz corpus given on the command line (every file in
 * the directories passed as arguments), and finally checks that the generated sequences
 * reached every kind of operation and outcome.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 20)
 * and BAND_MODEL_OPS (operations per seed, default 100000).
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "sem_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 100000;
static unsigned g_nseeds = 20;
static uint64_t g_seeds[MAX_SEEDS];
static struct sem_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct sem_model_counts *c)
{
    for (int i = 0; i < SM_OP_COUNT; i++)
        g_total.ops[i] += c->ops[i];
    g_total.wakes += c->wakes;
    g_total.grants += c->grants;
    g_total.closed += c->closed;
    g_total.e2big_wakes += c->e2big_wakes;
    g_total.cancels_ok += c->cancels_ok;
    g_total.ealready += c->ealready;
    g_total.pending += c->pending;
    g_total.overflows += c->overflows;
    g_total.partial_heads += c->partial_heads;
    g_total.debt_ops += c->debt_ops;
    g_total.reentrant += c->reentrant;
    g_total.budgets += c->budgets;
    g_total.sems += c->sems;
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct sem_model *m = sem_model_new();
    assert_non_null(m);
    int rc = sem_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, sem_model_error(m));
    add_counts(sem_model_counts(m));
    sem_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct sem_model *m = sem_model_new();
    if (m == NULL)
        return 1;
    int rc = sem_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, sem_model_error(m));
    add_counts(sem_model_counts(m));
    sem_model_free(m);
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
}

/* The generator must reach every operation and every interesting outcome. */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[SM_OP_COUNT] = {
        "try",    "acquire_past", "async", "release_held", "release_any",  "reduce", "drain",
        "cancel", "stats",        "close", "recreate",     "destroy_busy", "grow",   "shrink"};
    for (int i = 0; i < SM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    print_message("wakes %llu (grants %llu, closed %llu, e2big %llu), pending %llu, "
                  "cancels %llu, ealready %llu, overflows %llu, partial heads %llu, "
                  "debt %llu, reentrant %llu, sems %llu, budgets %llu\n",
                  (unsigned long long)g_total.wakes, (unsigned long long)g_total.grants,
                  (unsigned long long)g_total.closed, (unsigned long long)g_total.e2big_wakes,
                  (unsigned long long)g_total.pending, (unsigned long long)g_total.cancels_ok,
                  (unsigned long long)g_total.ealready, (unsigned long long)g_total.overflows,
                  (unsigned long long)g_total.partial_heads, (unsigned long long)g_total.debt_ops,
                  (unsigned long long)g_total.reentrant, (unsigned long long)g_total.sems,
                  (unsigned long long)g_total.budgets);
    assert_true(g_total.grants > 0);
    assert_true(g_total.closed > 0);
    assert_true(g_total.e2big_wakes > 0);
    assert_true(g_total.cancels_ok > 0);
    assert_true(g_total.ealready > 0);
    assert_true(g_total.overflows > 0);
    assert_true(g_total.partial_heads > 0);
    assert_true(g_total.debt_ops > 0);
    assert_true(g_total.reentrant > 0);
    assert_true(g_total.sems > 0);
    assert_true(g_total.budgets > 0);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return strtoull(v, NULL, 10);
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    g_ops = env_u64("BAND_MODEL_OPS", g_ops);
    uint64_t ns = env_u64("BAND_MODEL_SEEDS", g_nseeds);
    g_nseeds = (unsigned)(ns > MAX_SEEDS ? MAX_SEEDS : ns);

    struct CMUnitTest tests[MAX_SEEDS + 2];
    size_t n = 0;
    for (unsigned i = 0; i < g_nseeds; i++) {
        g_seeds[i] = UINT64_C(0x62616e64) * (i + 1) + i; /* fixed: "band" * k */
        static char names[MAX_SEEDS][40];
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_sem", tests, n, NULL, NULL);
}
