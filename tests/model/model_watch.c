/*
 * model_watch.c - runs the watch reference model (watch_model.c) over fixed seeds, then
 * replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and outcome.
 *
 * Bounded twice: BAND_MODEL_OPS operations per seed (default 40000) and BAND_MODEL_SECONDS
 * of wall time for all seeds together (default 6; a seed that runs out of time stops
 * early, with success). BAND_MODEL_SEEDS sets how many seeds (default 10).
 * WATCH_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "watch_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 40000;
static unsigned g_nseeds = 10;
static uint64_t g_seconds = 6;
static band_time g_start;
static uint64_t g_seeds[MAX_SEEDS];
static struct watch_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct watch_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    unsigned k = (unsigned)((uint64_t *)*state - g_seeds);
    /* Seed k may run until its share of the budget has passed since the start. */
    band_time until =
        g_start + (band_time)(g_seconds * (uint64_t)BAND_SEC / g_nseeds) * (band_time)(k + 1);
    struct watch_model *m = watch_model_new();
    assert_non_null(m);
    int rc = watch_model_run_seed(m, seed, g_ops, until);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, watch_model_error(m));
    add_counts(watch_model_counts(m));
    watch_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct watch_model *m = watch_model_new();
    if (m == NULL)
        return 1;
    int rc = watch_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, watch_model_error(m));
    add_counts(watch_model_counts(m));
    watch_model_free(m);
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
    static const char *const names[WM_OP_COUNT] = {
        "send", "close",      "read",   "rx_init",       "rx_read", "try_recv",
        "recv", "recv_async", "cancel", "destroy(busy)", "misuse",  "recreate"};
    for (int i = 0; i < WM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    const struct watch_model_counts *c = &g_total;
    print_message("watches %llu, wakes %llu (ok %llu, closed %llu; %llu sends or closes woke "
                  "several), pending %llu, cancels %llu, versions skipped %llu, timed waits "
                  "%llu, reentrant %llu (waits again %llu, sends %llu); ealready %llu, ebusy "
                  "%llu, eagain %llu, eclosed %llu, einval %llu, eoverflow %llu\n",
                  (unsigned long long)c->watches, (unsigned long long)c->wakes,
                  (unsigned long long)c->wakes_ok, (unsigned long long)c->wakes_closed,
                  (unsigned long long)c->multi_wakes, (unsigned long long)c->pending,
                  (unsigned long long)c->cancels_ok, (unsigned long long)c->skipped,
                  (unsigned long long)c->timed_queued, (unsigned long long)c->reentrant,
                  (unsigned long long)c->resubmits, (unsigned long long)c->wake_sends,
                  (unsigned long long)c->ealready, (unsigned long long)c->ebusy,
                  (unsigned long long)c->eagain, (unsigned long long)c->eclosed,
                  (unsigned long long)c->einval, (unsigned long long)c->eoverflow);
    assert_true(c->wakes_ok > 0);
    assert_true(c->wakes_closed > 0);
    assert_true(c->multi_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->skipped > 0);
    assert_true(c->timed_queued > 0);
    assert_true(c->resubmits > 0);
    assert_true(c->wake_sends > 0);
    assert_true(c->ealready > 0);
    assert_true(c->ebusy > 0);
    assert_true(c->eagain > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->einval > 0);
    assert_true(c->eoverflow > 0);
    assert_true(c->watches > 1);
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
    g_seconds = env_u64("BAND_MODEL_SECONDS", g_seconds);
    uint64_t ns = env_u64("BAND_MODEL_SEEDS", g_nseeds);
    g_nseeds = (unsigned)(ns > MAX_SEEDS ? MAX_SEEDS : ns == 0 ? 1 : ns);
    g_start = band_now();

    struct CMUnitTest tests[MAX_SEEDS + 2];
    size_t n = 0;
    static char names[MAX_SEEDS][40];
    for (unsigned i = 0; i < g_nseeds; i++) {
        g_seeds[i] = UINT64_C(0x77617463) * (i + 1) + i; /* fixed: "watc" * k */
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_watch", tests, n, NULL, NULL);
}
