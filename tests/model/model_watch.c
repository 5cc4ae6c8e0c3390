/* SPDX-License-Identifier: MIT */
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
#include "model_driver.h"

#include "watch_model.h"

MODEL_DRIVER_TIMED(watch_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[WM_OP_COUNT] = {
        "send", "close",      "read",   "rx_init",       "rx_read", "try_recv",
        "recv", "recv_async", "cancel", "destroy(busy)", "misuse",  "recreate"};
    const struct watch_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, WM_OP_COUNT);
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

const struct model_driver model_driver = {
    .name = "model_watch",
    .seed_base = UINT64_C(0x77617463), /* "watc" */
    .ops = 40000,
    .seeds = 10,
    .seconds_all = 6,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(watch_model),
    .coverage = coverage,
};
