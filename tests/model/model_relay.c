/* SPDX-License-Identifier: MIT */
/*
 * model_relay.c - runs the relay reference model (relay_model.c) over fixed seeds, then
 * replays the fuzz corpus given on the command line, and checks that the generated
 * sequences reached every operation and outcome.
 *
 * Bounded by BAND_MODEL_OPS operations per seed (default 40000) and BAND_MODEL_SECONDS of
 * wall time for all seeds together (default 4). BAND_MODEL_SEEDS sets how many seeds
 * (default 8).
 */
#include "model_driver.h"

#include "relay_model.h"

MODEL_DRIVER_TIMED(relay_model)

static void coverage(const void *totals)
{
    static const char *const names[RM_OP_COUNT] = {"park",  "complete", "cancel",
                                                   "count", "destroy",  "misuse"};
    const struct relay_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, RM_OP_COUNT);
    print_message("relays %llu, wakes %llu, hooks %llu, reparks %llu, ealready %llu, ebusy "
                  "%llu, einval %llu\n",
                  (unsigned long long)c->relays, (unsigned long long)c->wakes,
                  (unsigned long long)c->hooks, (unsigned long long)c->reparks,
                  (unsigned long long)c->ealready, (unsigned long long)c->ebusy,
                  (unsigned long long)c->einval);
    assert_true(c->wakes > 0);
    assert_true(c->hooks > 0);
    assert_true(c->reparks > 0);
    assert_true(c->ealready > 0);
    assert_true(c->ebusy > 0);
    assert_true(c->einval > 0);
    assert_true(c->relays > 1);
}

const struct model_driver model_driver = {
    .name = "model_relay",
    .seed_base = UINT64_C(0x72656c61), /* "rela" */
    .ops = 40000,
    .seeds = 8,
    .seconds_all = 4,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(relay_model),
    .coverage = coverage,
};
