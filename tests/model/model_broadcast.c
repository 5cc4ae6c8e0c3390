/* SPDX-License-Identifier: MIT */
/*
 * model_broadcast.c - runs the broadcast reference model (broadcast_model.c) over fixed seeds,
 * then replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and outcome.
 *
 * Bounded twice: BAND_MODEL_OPS operations per seed (default 40000) and BAND_MODEL_SECONDS
 * of wall time for all seeds together (default 6; a seed that runs out of time stops
 * early, with success). BAND_MODEL_SEEDS sets how many seeds (default 10).
 * BROADCAST_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "model_driver.h"

#include "broadcast_model.h"

MODEL_DRIVER_TIMED(broadcast_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[BM_OP_COUNT] = {
        "try_send",   "send",          "send_async",   "try_recv",  "recv",
        "recv_async", "cancel(send)",  "cancel(recv)", "subscribe", "unsubscribe",
        "close",      "destroy(busy)", "misuse",       "recreate"};
    const struct broadcast_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, BM_OP_COUNT);
    print_message("broadcasts %llu lossy, %llu lossless; wakes %llu (send ok %llu, recv ok "
                  "%llu, closed %llu), pending %llu, cancels %llu, received %llu, lags %llu "
                  "(async %llu), overwritten %llu, unheard %llu, sends let in %llu, shared "
                  "receivers %llu, both waiting %llu, timed waits %llu, reentrant %llu "
                  "(replies %llu, resubmits %llu); ealready %llu, eagain %llu, eclosed %llu, "
                  "einval %llu\n",
                  (unsigned long long)c->lossy, (unsigned long long)c->lossless,
                  (unsigned long long)c->wakes, (unsigned long long)c->send_wakes_ok,
                  (unsigned long long)c->recv_wakes_ok, (unsigned long long)c->closed_wakes,
                  (unsigned long long)c->pending, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->received, (unsigned long long)c->lags,
                  (unsigned long long)c->async_lags, (unsigned long long)c->overwritten,
                  (unsigned long long)c->unheard, (unsigned long long)c->pumped,
                  (unsigned long long)c->shared, (unsigned long long)c->both_waiting,
                  (unsigned long long)c->timed_queued, (unsigned long long)c->reentrant,
                  (unsigned long long)c->replies, (unsigned long long)c->resubmits,
                  (unsigned long long)c->ealready, (unsigned long long)c->eagain,
                  (unsigned long long)c->eclosed, (unsigned long long)c->einval);
    assert_true(c->lossy > 1);
    assert_true(c->lossless > 1);
    assert_true(c->send_wakes_ok > 0);
    assert_true(c->recv_wakes_ok > 0);
    assert_true(c->closed_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->lags > 0);
    assert_true(c->async_lags > 0);
    assert_true(c->overwritten > 0);
    assert_true(c->unheard > 0);
    assert_true(c->pumped > 0);
    assert_true(c->shared > 0);
    assert_true(c->both_waiting > 0);
    assert_true(c->timed_queued > 0);
    assert_true(c->replies > 0);
    assert_true(c->resubmits > 0);
    assert_true(c->eagain > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->einval > 0);
}

const struct model_driver model_driver = {
    .name = "model_broadcast",
    .seed_base = UINT64_C(0x62636173), /* "bcas" */
    .ops = 40000,
    .seeds = 10,
    .seconds_all = 6,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(broadcast_model),
    .coverage = coverage,
};
