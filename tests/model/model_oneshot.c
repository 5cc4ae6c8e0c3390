/* SPDX-License-Identifier: MIT */
/*
 * model_oneshot.c - runs the oneshot reference model (oneshot_model.c) over fixed seeds,
 * then replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and outcome.
 *
 * Bounded twice: BAND_MODEL_OPS operations per seed (default 40000) and BAND_MODEL_SECONDS
 * of wall time for all seeds together (default 6; a seed that runs out of time stops
 * early, with success). BAND_MODEL_SEEDS sets how many seeds (default 10).
 * ONESHOT_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "model_driver.h"

#include "oneshot_model.h"

MODEL_DRIVER_TIMED(oneshot_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[OM_OP_COUNT] = {
        "send",   "close",         "try_recv",      "recv",   "recv_async",
        "cancel", "receiver_drop", "destroy(busy)", "misuse", "recreate"};
    const struct oneshot_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, OM_OP_COUNT);
    print_message("oneshots %llu, wakes %llu (ok %llu, closed %llu, canceled %llu), pending "
                  "%llu, cancels %llu, values %llu, dropped with the oneshot %llu, timed waits "
                  "%llu, reentrant %llu (resubmits %llu, destroys %llu); ealready %llu, ebusy "
                  "%llu, eagain %llu, eclosed %llu, einval %llu\n",
                  (unsigned long long)c->oneshots, (unsigned long long)c->wakes,
                  (unsigned long long)c->wakes_ok, (unsigned long long)c->wakes_closed,
                  (unsigned long long)c->wakes_canceled, (unsigned long long)c->pending,
                  (unsigned long long)c->cancels_ok, (unsigned long long)c->values,
                  (unsigned long long)c->dropped_values, (unsigned long long)c->timed_queued,
                  (unsigned long long)c->reentrant, (unsigned long long)c->resubmits,
                  (unsigned long long)c->wake_destroys, (unsigned long long)c->ealready,
                  (unsigned long long)c->ebusy, (unsigned long long)c->eagain,
                  (unsigned long long)c->eclosed, (unsigned long long)c->einval);
    assert_true(c->wakes_ok > 0);
    assert_true(c->wakes_closed > 0);
    assert_true(c->wakes_canceled > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->values > 0);
    assert_true(c->dropped_values > 0);
    assert_true(c->timed_queued > 0);
    assert_true(c->resubmits > 0);
    assert_true(c->wake_destroys > 0);
    assert_true(c->ealready > 0);
    assert_true(c->ebusy > 0);
    assert_true(c->eagain > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->einval > 0);
    assert_true(c->oneshots > 1);
}

const struct model_driver model_driver = {
    .name = "model_oneshot",
    .seed_base = UINT64_C(0x6f6e6573), /* "ones" */
    .ops = 40000,
    .seeds = 10,
    .seconds_all = 6,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(oneshot_model),
    .coverage = coverage,
};
