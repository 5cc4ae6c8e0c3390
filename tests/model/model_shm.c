/* SPDX-License-Identifier: MIT */
/*
 * model_shm.c - runs the two-process shm reference model (shm_model.c) over fixed seeds:
 * the semaphore model's kinds of operation sequences, each operation run by this process
 * or by a forked child on the same named segment, every result checked against the
 * model. Then it replays the op-sequence corpus of fuzz_shm given on the command line,
 * and checks that the seeds reached every operation and outcome.
 *
 * Bounded by operations (BAND_MODEL_OPS, default 8000 per seed; BAND_MODEL_SEEDS,
 * default 12) and by wall time (BAND_MODEL_SECONDS, default 40 for all seeds together).
 * SHM_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "model_driver.h"

#include "shm_model.h"

MODEL_DRIVER_TIMED(shm_model)

static uint64_t ops_done(const void *m)
{
    return shm_model_ops_done(m);
}

static void coverage(const void *totals)
{
    static const char *const names[SHM_OP_COUNT] = {
        "try",   "acquire_past", "acquire_short", "async", "release_held", "release_any",  "reduce",
        "drain", "cancel",       "stats",         "close", "recreate",     "destroy_busy", "grow"};
    const struct shm_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, SHM_OP_COUNT);
    print_message("remote ops %llu, wakes %llu (grants %llu, by the other process %llu, "
                  "closed %llu, e2big %llu), pending %llu, cancels %llu, ealready %llu, "
                  "overflows %llu, busy %llu, debt %llu, segments %llu\n",
                  (unsigned long long)c->remote, (unsigned long long)c->wakes,
                  (unsigned long long)c->grants, (unsigned long long)c->cross,
                  (unsigned long long)c->closed, (unsigned long long)c->e2big_wakes,
                  (unsigned long long)c->pending, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->overflows,
                  (unsigned long long)c->busy, (unsigned long long)c->debt_ops,
                  (unsigned long long)c->segments);
    assert_true(c->remote > 0);
    assert_true(c->grants > 0);
    assert_true(c->cross > 0);
    assert_true(c->closed > 0);
    assert_true(c->e2big_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->overflows > 0);
    assert_true(c->busy > 0);
    assert_true(c->debt_ops > 0);
}

const struct model_driver model_driver = {
    .name = "model_shm",
    .seed_base = UINT64_C(0x62616e64), /* "band", as model_sem */
    .ops = 8000,
    .seeds = 12,
    .seconds_all = 40,
    .model = MODEL_DRIVER_MODEL(shm_model),
    .ops_done = ops_done,
    .coverage = coverage,
};
