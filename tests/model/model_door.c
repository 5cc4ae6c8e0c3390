/*
 * model_door.c - runs the front door's reference model (door_model.c) over fixed seeds,
 * then replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and every answer.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 12)
 * and BAND_MODEL_OPS (operations per seed, default 50000). DOOR_MODEL_TRACE=1 prints every
 * operation.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "door_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 50000;
static unsigned g_nseeds = 12;
static uint64_t g_seeds[MAX_SEEDS];
static struct door_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct door_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct door_model *m = door_model_new();
    assert_non_null(m);
    int rc = door_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, door_model_error(m));
    add_counts(door_model_counts(m));
    door_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct door_model *m = door_model_new();
    if (m == NULL)
        return 1;
    int rc = door_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, door_model_error(m));
    add_counts(door_model_counts(m));
    door_model_free(m);
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

/* The generator must reach every operation, every answer and the interesting paths. */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[DM_OP_COUNT] = {"admit", "done",   "take",     "release",
                                                   "async", "cancel", "wrelease", "rate",
                                                   "tick",  "recv",   "close",    "recreate"};
    for (int i = 0; i < DM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    for (int k = 0; k < DM_ANSWER_KINDS; k++) {
        print_message("%-10s %llu\n", band_answer_name(k), (unsigned long long)g_total.answers[k]);
        assert_true(g_total.answers[k] > 0);
    }
    print_message(
        "admit EINVAL %llu, done ok %llu, done EINVAL %llu, waits %llu, over quota "
        "before a wait %llu, permits given back on a rate refusal %llu, too big "
        "(semaphore %llu, headroom %llu, rate %llu), measured retry %llu, wakes %llu, "
        "doors %llu\n",
        (unsigned long long)g_total.admit_einval, (unsigned long long)g_total.done_ok,
        (unsigned long long)g_total.done_einval, (unsigned long long)g_total.waited_path,
        (unsigned long long)g_total.peek_over_quota, (unsigned long long)g_total.rate_gave_back,
        (unsigned long long)g_total.too_big_sem, (unsigned long long)g_total.too_big_headroom,
        (unsigned long long)g_total.too_big_rate, (unsigned long long)g_total.measured_busy,
        (unsigned long long)g_total.wakes, (unsigned long long)g_total.doors);
    assert_true(g_total.admit_einval > 0);
    assert_true(g_total.done_ok > 0);
    assert_true(g_total.done_einval > 0);
    assert_true(g_total.waited_path > 0);
    assert_true(g_total.peek_over_quota > 0);
    assert_true(g_total.rate_gave_back > 0);
    assert_true(g_total.too_big_sem > 0);
    assert_true(g_total.too_big_headroom > 0);
    assert_true(g_total.too_big_rate > 0);
    assert_true(g_total.measured_busy > 0);
    assert_true(g_total.wakes > 0);
    assert_true(g_total.doors > 1);
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
        g_seeds[i] = UINT64_C(0x646f6f72) * (i + 1) + i; /* fixed: "door" * k */
        static char names[MAX_SEEDS][40];
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_door", tests, n, NULL, NULL);
}
