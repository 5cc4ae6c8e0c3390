/*
 * model_rate.c - runs the rate budget's reference model (rate_model.c) over fixed seeds,
 * then replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and outcome.
 *
 * The reference is a plain token bucket written independently of the library's GCRA, on
 * a fake clock that also steps back and jumps to the ends of the band_time range, with
 * rate and burst changes among the random operations (see rate_model.h).
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 24)
 * and BAND_MODEL_OPS (operations per seed, default 100000). RATE_MODEL_TRACE=1 prints every
 * operation and the model's state.
 */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 100000;
static unsigned g_nseeds = 24;
static uint64_t g_seeds[MAX_SEEDS];
static struct rate_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct rate_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct rate_model *m = rate_model_new();
    assert_non_null(m);
    int rc = rate_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, rate_model_error(m));
    add_counts(rate_model_counts(m));
    rate_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct rate_model *m = rate_model_new();
    if (m == NULL)
        return 1;
    int rc = rate_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, rate_model_error(m));
    add_counts(rate_model_counts(m));
    rate_model_free(m);
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
    assert_true(g_argc < 2 || files > 0);
}

/* The generator must reach every operation and every interesting outcome. */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[RM_OP_COUNT] = {"try",       "reserve",   "wait",  "cancel",
                                                   "advance",   "step_back", "jump",  "set",
                                                   "available", "stats",     "close", "recreate"};
    for (int i = 0; i < RM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    const struct rate_model_counts *c = &g_total;
    print_message("granted %llu (delayed %llu, past deadline %llu), eagain %llu, etimedout "
                  "%llu, e2big %llu, eclosed %llu, einval %llu, eoverflow %llu, cancels %llu, "
                  "ealready %llu, sets %llu (clamped %llu, owing %llu), stale clock reads "
                  "%llu, sleeps %llu, buckets %llu (extreme %llu)\n",
                  (unsigned long long)c->granted, (unsigned long long)c->delayed,
                  (unsigned long long)c->past_deadline, (unsigned long long)c->eagain,
                  (unsigned long long)c->etimedout, (unsigned long long)c->e2big,
                  (unsigned long long)c->eclosed, (unsigned long long)c->einval,
                  (unsigned long long)c->eoverflow, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->sets_ok,
                  (unsigned long long)c->sets_clamped, (unsigned long long)c->sets_owing,
                  (unsigned long long)c->stale_clock, (unsigned long long)c->sleeps,
                  (unsigned long long)c->buckets, (unsigned long long)c->extreme_runs);
    assert_true(c->granted > 0);
    assert_true(c->delayed > 0);
    assert_true(c->past_deadline > 0);
    assert_true(c->eagain > 0);
    assert_true(c->etimedout > 0);
    assert_true(c->e2big > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->einval > 0);
    assert_true(c->eoverflow > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->sets_ok > 0);
    assert_true(c->sets_clamped > 0);
    assert_true(c->sets_owing > 0);
    assert_true(c->stale_clock > 0);
    assert_true(c->sleeps > 0);
    assert_true(c->extreme_runs > 0);
    assert_true(c->buckets > c->extreme_runs);
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
        g_seeds[i] = UINT64_C(0x72617465) * (i + 1) + i; /* fixed: "rate" * k */
        static char names[MAX_SEEDS][40];
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_rate", tests, n, NULL, NULL);
}
