/* SPDX-License-Identifier: MIT */
/*
 * model_keyrate.c - runs the keyed rate budgets' reference model (keyrate_model.c) over
 * fixed seeds, then replays the fuzz corpus given on the command line, and finally checks
 * that the generated sequences reached every kind of operation and outcome.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 24)
 * and BAND_MODEL_OPS (operations per seed, default 100000).
 */
#include "model_driver.h"

#include "keyrate_model.h"

MODEL_DRIVER_UNTIMED(keyrate_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[KM_OP_COUNT] = {"try",      "available", "forget",  "advance",
                                                   "to_retry", "step_back", "jump",    "set",
                                                   "stats",    "close",     "recreate"};
    const struct keyrate_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, KM_OP_COUNT);
    print_message("granted %llu (at the exact retry-after %llu), eagain %llu, e2big %llu, "
                  "enospc %llu, eclosed %llu, einval %llu, enoent %llu, eoverflow %llu, "
                  "evicted busy %llu, forgotten %llu, sets %llu, stale clock reads %llu, "
                  "tables %llu (sharded %llu)\n",
                  (unsigned long long)c->granted, (unsigned long long)c->retry_exact,
                  (unsigned long long)c->eagain, (unsigned long long)c->e2big,
                  (unsigned long long)c->enospc, (unsigned long long)c->eclosed,
                  (unsigned long long)c->einval, (unsigned long long)c->enoent,
                  (unsigned long long)c->eoverflow, (unsigned long long)c->evicted_busy,
                  (unsigned long long)c->forgotten, (unsigned long long)c->sets_ok,
                  (unsigned long long)c->stale_clock, (unsigned long long)c->tables,
                  (unsigned long long)c->sharded_tables);
    assert_true(c->granted > 0);
    assert_true(c->retry_exact > 0);
    assert_true(c->eagain > 0);
    assert_true(c->e2big > 0);
    assert_true(c->enospc > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->einval > 0);
    assert_true(c->enoent > 0);
    assert_true(c->eoverflow > 0);
    assert_true(c->evicted_busy > 0);
    assert_true(c->forgotten > 0);
    assert_true(c->sets_ok > 0);
    assert_true(c->stale_clock > 0);
    assert_true(c->sharded_tables > 0);
    assert_true(c->tables > c->sharded_tables);
}

const struct model_driver model_driver = {
    .name = "model_keyrate",
    .seed_base = UINT64_C(0x6b657972), /* "keyr" */
    .ops = 100000,
    .seeds = 24,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(keyrate_model),
    .coverage = coverage,
};
