/*
 * model_chan.c - runs the channel reference model (chan_model.c) over fixed seeds, 10^5
 * operations each, then replays the fuzz corpus given on the command line (every file in
 * the directories passed as arguments), and finally checks that the generated sequences
 * reached every kind of operation and outcome.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 12)
 * and BAND_MODEL_OPS (operations per seed, default 100000). CHAN_MODEL_TRACE=1 prints every
 * operation and the model's state.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "chan_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 100000;
static unsigned g_nseeds = 12;
static uint64_t g_seeds[MAX_SEEDS];
static struct chan_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct chan_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
}

static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct chan_model *m = chan_model_new();
    assert_non_null(m);
    int rc = chan_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, chan_model_error(m));
    add_counts(chan_model_counts(m));
    chan_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct chan_model *m = chan_model_new();
    if (m == NULL)
        return 1;
    int rc = chan_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, chan_model_error(m));
    add_counts(chan_model_counts(m));
    chan_model_free(m);
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
    static const char *const names[CM_OP_COUNT] = {
        "try_send",     "send_past", "send_async",   "reserve_async", "try_reserve",
        "reserve_past", "slot_send", "slot_release", "try_recv",      "recv_past",
        "recv_async",   "recv_many", "cancel_send",  "cancel_recv",   "offer",
        "join",         "leave",     "close",        "destroy_busy",  "recreate"};
    for (int i = 0; i < CM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    print_message("wakes %llu (send ok %llu, recv ok %llu, closed %llu), pending %llu, "
                  "cancels %llu, ealready %llu, hand-offs %llu, taken from waiting senders "
                  "%llu, drops %llu, e2big %llu, eagain %llu, eclosed %llu, reentrant %llu, "
                  "channels %llu, both waiting %llu\n",
                  (unsigned long long)g_total.wakes, (unsigned long long)g_total.send_wakes_ok,
                  (unsigned long long)g_total.recv_wakes_ok,
                  (unsigned long long)g_total.closed_wakes, (unsigned long long)g_total.pending,
                  (unsigned long long)g_total.cancels_ok, (unsigned long long)g_total.ealready,
                  (unsigned long long)g_total.handoffs, (unsigned long long)g_total.taken_waiting,
                  (unsigned long long)g_total.drops, (unsigned long long)g_total.e2big,
                  (unsigned long long)g_total.eagain, (unsigned long long)g_total.eclosed,
                  (unsigned long long)g_total.reentrant, (unsigned long long)g_total.channels,
                  (unsigned long long)g_total.both_waiting);
    assert_true(g_total.send_wakes_ok > 0);
    assert_true(g_total.recv_wakes_ok > 0);
    assert_true(g_total.closed_wakes > 0);
    assert_true(g_total.cancels_ok > 0);
    assert_true(g_total.ealready > 0);
    assert_true(g_total.handoffs > 0);
    assert_true(g_total.taken_waiting > 0);
    assert_true(g_total.drops > 0);
    assert_true(g_total.e2big > 0);
    assert_true(g_total.eagain > 0);
    assert_true(g_total.eclosed > 0);
    assert_true(g_total.reentrant > 0);
    assert_true(g_total.channels > 1);
    assert_true(g_total.both_waiting > 0);
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
        g_seeds[i] = UINT64_C(0x6368616e) * (i + 1) + i; /* fixed: "chan" * k */
        static char names[MAX_SEEDS][40];
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_chan", tests, n, NULL, NULL);
}
