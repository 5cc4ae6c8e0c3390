/*
 * model_coord.c - runs the wait group / latch / shutdown scope reference model
 * (coord_model.c) over fixed seeds, then replays the fuzz corpus given on the command line
 * (every file in the directories passed as arguments), and finally checks that the
 * generated sequences reached every kind of operation and outcome.
 *
 * Bounded twice: BAND_MODEL_OPS operations per seed (default 30000) and BAND_MODEL_SECONDS
 * of wall time for all seeds together (default 6; a seed that runs out of time stops
 * early, with success). BAND_MODEL_SEEDS sets how many seeds (default 8).
 * COORD_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "coord_model.h"

#define MAX_SEEDS 256

static uint64_t g_ops = 30000;
static unsigned g_nseeds = 8;
static uint64_t g_seconds = 6;
static band_time g_start;
static uint64_t g_seeds[MAX_SEEDS];
static struct coord_model_counts g_total;
static int g_argc;
static char **g_argv;

static void add_counts(const struct coord_model_counts *c)
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
    struct coord_model *m = coord_model_new();
    assert_non_null(m);
    int rc = coord_model_run_seed(m, seed, g_ops, until);
    if (rc != 0)
        print_error("seed %llu: %s\n", (unsigned long long)seed, coord_model_error(m));
    add_counts(coord_model_counts(m));
    coord_model_free(m);
    assert_int_equal(rc, 0);
}

static int replay_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)ctx;
    struct coord_model *m = coord_model_new();
    if (m == NULL)
        return 1;
    int rc = coord_model_run_bytes(m, data, len);
    if (rc != 0)
        print_error("%s: %s\n", path, coord_model_error(m));
    add_counts(coord_model_counts(m));
    coord_model_free(m);
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

#define REQUIRE(field)                                                                             \
    do {                                                                                           \
        if (g_total.field == 0)                                                                    \
            print_error("never happened: " #field "\n");                                           \
        assert_true(g_total.field > 0);                                                            \
    } while (0)

/* The generator must reach every operation and every interesting outcome. */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[CM_OP_COUNT] = {"group_add",
                                                   "group_done",
                                                   "group_try_wait",
                                                   "group_wait",
                                                   "group_wait_async",
                                                   "latch_count_down",
                                                   "latch_try_wait",
                                                   "latch_wait",
                                                   "latch_wait_async",
                                                   "latch_arrive_and_wait",
                                                   "request",
                                                   "join",
                                                   "leave",
                                                   "shutdown_wait",
                                                   "shutdown_wait_async",
                                                   "watch",
                                                   "unwatch",
                                                   "sem_acquire_async",
                                                   "sem_release",
                                                   "sem_close",
                                                   "cancel",
                                                   "token",
                                                   "destroy(busy)",
                                                   "recreate",
                                                   "misuse"};
    for (int i = 0; i < CM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    const struct coord_model_counts *c = &g_total;
    print_message(
        "objects %llu, nested ops %llu; wakes %llu (released %llu, granted %llu, closed %llu, "
        "fired %llu); pending %llu, at once %llu, cancels %llu; links fired %llu won / %llu "
        "lost, handoffs %llu; requests %llu, drains %llu, zeroes %llu, opens %llu; blocking: "
        "timed %llu, cancelled %llu, expired %llu; unwatch %llu ok / %llu fired; wake checks "
        "%llu, unwatches %llu, resubmits %llu, pokes %llu; busy alone: waits %llu, parts %llu, "
        "links %llu, child %llu; ebusy %llu, einval %llu, ealready "
        "%llu, eagain %llu, eoverflow %llu, reasons %llu\n",
        (unsigned long long)c->objects, (unsigned long long)c->nested_ops,
        (unsigned long long)c->wakes, (unsigned long long)c->wakes_released,
        (unsigned long long)c->wakes_granted, (unsigned long long)c->wakes_closed,
        (unsigned long long)c->wakes_fired, (unsigned long long)c->pending,
        (unsigned long long)c->at_once, (unsigned long long)c->cancels_ok,
        (unsigned long long)c->fired_won, (unsigned long long)c->fired_lost,
        (unsigned long long)c->handoffs, (unsigned long long)c->requests,
        (unsigned long long)c->drains, (unsigned long long)c->zeroes, (unsigned long long)c->opens,
        (unsigned long long)c->timed_queued, (unsigned long long)c->canceled_waits,
        (unsigned long long)c->expired_waits, (unsigned long long)c->unwatched_ok,
        (unsigned long long)c->unwatched_fired, (unsigned long long)c->wake_checks,
        (unsigned long long)c->wake_unwatches, (unsigned long long)c->wake_resubmits,
        (unsigned long long)c->wake_pokes, (unsigned long long)c->busy_waits,
        (unsigned long long)c->busy_parts, (unsigned long long)c->busy_links,
        (unsigned long long)c->busy_child, (unsigned long long)c->ebusy,
        (unsigned long long)c->einval, (unsigned long long)c->ealready,
        (unsigned long long)c->eagain, (unsigned long long)c->eoverflow,
        (unsigned long long)c->reasons);
    REQUIRE(nested_ops);
    REQUIRE(wakes_released);
    REQUIRE(wakes_granted);
    REQUIRE(wakes_closed);
    REQUIRE(wakes_fired);
    REQUIRE(pending);
    REQUIRE(at_once);
    REQUIRE(cancels_ok);
    REQUIRE(fired_won);
    REQUIRE(fired_lost);
    REQUIRE(handoffs);
    REQUIRE(requests);
    REQUIRE(drains);
    REQUIRE(zeroes);
    REQUIRE(opens);
    REQUIRE(timed_queued);
    REQUIRE(canceled_waits);
    REQUIRE(expired_waits);
    REQUIRE(unwatched_ok);
    REQUIRE(unwatched_fired);
    REQUIRE(wake_checks);
    REQUIRE(wake_unwatches);
    REQUIRE(wake_resubmits);
    REQUIRE(wake_pokes);
    REQUIRE(busy_waits);
    REQUIRE(busy_parts);
    REQUIRE(busy_links);
    REQUIRE(busy_child);
    REQUIRE(ebusy);
    REQUIRE(einval);
    REQUIRE(ealready);
    REQUIRE(eagain);
    REQUIRE(eoverflow);
    REQUIRE(ecanceled);
    REQUIRE(etimedout);
    REQUIRE(reasons);
    assert_true(c->objects > 7);
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
        g_seeds[i] = UINT64_C(0x636f6f72) * (i + 1) + i; /* fixed: "coor" * k */
        snprintf(names[i], sizeof(names[i]), "model_seed_%llu", (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = names[i];
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    return _cmocka_run_group_tests("model_coord", tests, n, NULL, NULL);
}
