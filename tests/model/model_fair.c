/*
 * model_fair.c - runs the fair-share reference model (fair_model.c) over fixed seeds, then
 * replays the fuzz corpus given on the command line (every file in the directories passed
 * as arguments), and finally checks that the generated sequences reached every kind of
 * operation and outcome.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 12)
 * and BAND_MODEL_OPS (operations per seed, default 25000). FAIR_MODEL_TRACE=1 prints every
 * operation and the model's state.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "fair_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 25000;
static unsigned g_nseeds = 12;
static uint64_t g_seeds[MAX_SEEDS];
static struct fair_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct fair_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct fair_model *m = fair_model_new();
    assert_non_null(m);
    int rc = fair_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, fair_model_error(m));
    add_counts(fair_model_counts(m));
    fair_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct fair_model *m = fair_model_new();
    if (m == NULL)
        return 1;
    int rc = fair_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, fair_model_error(m));
    add_counts(fair_model_counts(m));
    fair_model_free(m);
    return rc != 0;
}

/* Replays every file of the directories given as arguments (the fuzz corpus). */
static void test_corpus(void **state)
{
    (void)state;
    unsigned files = 0;
    unsigned failures = test_replay_corpus(g_argv + 1, g_argc - 1, replay_one, NULL, &files);
    print_message("replayed %u corpus file(s)\n", files);
    assert_true(files > 0 || g_argc < 2);
    assert_int_equal(failures, 0);
}

/* The generator must reach every operation and every interesting outcome. */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[FM_OP_COUNT] = {
        "try",     "acquire_past", "acquire_wait", "async",        "cancel",  "release",
        "key_set", "key_unset",    "close",        "destroy_busy", "recreate"};
    for (int i = 0; i < FM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    const struct fair_model_counts *t = &g_total;
    print_message("wakes %llu (grants %llu, closed %llu, e2big %llu), pending %llu, granted at "
                  "once %llu, cancels %llu, ealready %llu, timeouts %llu, eagain %llu, e2big "
                  "%llu, enomem %llu, overflows %llu, stalls %llu, set aside %llu, back %llu, "
                  "caught up %llu, reservation grants %llu, later rounds %llu, multi-grant ops "
                  "%llu, reentrant %llu, fairs %llu (giant %llu, rebased %llu)\n",
                  (unsigned long long)t->wakes, (unsigned long long)t->grants,
                  (unsigned long long)t->closed, (unsigned long long)t->e2big_wakes,
                  (unsigned long long)t->pending, (unsigned long long)t->granted_now,
                  (unsigned long long)t->cancels_ok, (unsigned long long)t->ealready,
                  (unsigned long long)t->timeouts, (unsigned long long)t->eagain,
                  (unsigned long long)t->e2big, (unsigned long long)t->enomem,
                  (unsigned long long)t->overflows, (unsigned long long)t->stalls,
                  (unsigned long long)t->parked, (unsigned long long)t->unparked,
                  (unsigned long long)t->caught_up, (unsigned long long)t->reserved_grants,
                  (unsigned long long)t->later_rounds, (unsigned long long)t->multi_grants,
                  (unsigned long long)t->reentrant, (unsigned long long)t->fairs,
                  (unsigned long long)t->giants, (unsigned long long)t->rebases);
    assert_true(t->grants > 0);
    assert_true(t->closed > 0);
    assert_true(t->e2big_wakes > 0);
    assert_true(t->pending > 0);
    assert_true(t->granted_now > 0);
    assert_true(t->cancels_ok > 0);
    assert_true(t->ealready > 0);
    assert_true(t->timeouts > 0);
    assert_true(t->eagain > 0);
    assert_true(t->e2big > 0);
    assert_true(t->enomem > 0);
    assert_true(t->stalls > 0);
    assert_true(t->parked > 0);
    assert_true(t->unparked > 0);
    assert_true(t->caught_up > 0);
    assert_true(t->reserved_grants > 0);
    assert_true(t->later_rounds > 0);
    assert_true(t->multi_grants > 0);
    assert_true(t->reentrant > 0);
    assert_true(t->fairs > 1);
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
        g_seeds[i] = UINT64_C(0x66616972) * (i + 1) + i; /* fixed: "fair" * k */
        static char names[MAX_SEEDS][40];
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_fair", tests, n, NULL, NULL);
}
