/* SPDX-License-Identifier: MIT */
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
#include "model_driver.h"

#include "fair_model.h"

MODEL_DRIVER_UNTIMED(fair_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[FM_OP_COUNT] = {
        "try",     "acquire_past", "acquire_wait", "async",        "cancel",   "release",
        "key_set", "key_unset",    "close",        "destroy_busy", "recreate", "handle"};
    const struct fair_model_counts *t = totals;
    model_driver_check_ops(t->ops, names, FM_OP_COUNT);
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
    print_message("handles: tries %llu (lock-free grants %llu, locked %llu), releases %llu "
                  "(lock-free %llu)\n",
                  (unsigned long long)t->handle_tries, (unsigned long long)t->fast_grants,
                  (unsigned long long)t->slow_handle_tries, (unsigned long long)t->handle_releases,
                  (unsigned long long)t->fast_releases);
    assert_true(t->fast_grants > 0);
    assert_true(t->slow_handle_tries > 0);
    assert_true(t->fast_releases > 0);
    assert_true(t->handle_releases > t->fast_releases); /* some took the lock to hand off */
}

const struct model_driver model_driver = {
    .name = "model_fair",
    .seed_base = UINT64_C(0x66616972), /* "fair" */
    .ops = 25000,
    .seeds = 12,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(fair_model),
    .coverage = coverage,
};
