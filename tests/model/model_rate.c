/* SPDX-License-Identifier: MIT */
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
#include "model_driver.h"

#include "rate_model.h"

MODEL_DRIVER_UNTIMED(rate_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[RM_OP_COUNT] = {"try",       "reserve",   "wait",  "cancel",
                                                   "advance",   "step_back", "jump",  "set",
                                                   "available", "stats",     "close", "recreate"};
    const struct rate_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, RM_OP_COUNT);
    print_message("granted %llu (delayed %llu, past deadline %llu), eagain %llu, etimedout "
                  "%llu, e2big %llu, eclosed %llu, einval %llu, eoverflow %llu, cancels %llu, "
                  "ealready %llu, sets %llu (clamped %llu, owing %llu), stale clock reads "
                  "%llu, sleeps %llu, buckets %llu (extreme %llu), raced tries %llu\n",
                  (unsigned long long)c->granted, (unsigned long long)c->delayed,
                  (unsigned long long)c->past_deadline, (unsigned long long)c->eagain,
                  (unsigned long long)c->etimedout, (unsigned long long)c->e2big,
                  (unsigned long long)c->eclosed, (unsigned long long)c->einval,
                  (unsigned long long)c->eoverflow, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->sets_ok,
                  (unsigned long long)c->sets_clamped, (unsigned long long)c->sets_owing,
                  (unsigned long long)c->stale_clock, (unsigned long long)c->sleeps,
                  (unsigned long long)c->buckets, (unsigned long long)c->extreme_runs,
                  (unsigned long long)c->raced);
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
    assert_true(c->raced > 0);
    assert_true(c->buckets > c->extreme_runs);
}

const struct model_driver model_driver = {
    .name = "model_rate",
    .seed_base = UINT64_C(0x72617465), /* "rate" */
    .ops = 100000,
    .seeds = 24,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(rate_model),
    .coverage = coverage,
};
