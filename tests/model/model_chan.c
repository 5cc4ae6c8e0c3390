/* SPDX-License-Identifier: MIT */
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
#include "model_driver.h"

#include "chan_model.h"

MODEL_DRIVER_UNTIMED(chan_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[CM_OP_COUNT] = {
        "try_send",     "send_past", "send_async",   "reserve_async", "try_reserve",
        "reserve_past", "slot_send", "slot_release", "try_recv",      "recv_past",
        "recv_async",   "recv_many", "cancel_send",  "cancel_recv",   "offer",
        "join",         "leave",     "close",        "destroy_busy",  "recreate"};
    const struct chan_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, CM_OP_COUNT);
    print_message("wakes %llu (send ok %llu, recv ok %llu, closed %llu), pending %llu, "
                  "cancels %llu, ealready %llu, hand-offs %llu, taken from waiting senders "
                  "%llu, drops %llu, e2big %llu, eagain %llu, eclosed %llu, reentrant %llu, "
                  "channels %llu, both waiting %llu\n",
                  (unsigned long long)c->wakes, (unsigned long long)c->send_wakes_ok,
                  (unsigned long long)c->recv_wakes_ok, (unsigned long long)c->closed_wakes,
                  (unsigned long long)c->pending, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->handoffs,
                  (unsigned long long)c->taken_waiting, (unsigned long long)c->drops,
                  (unsigned long long)c->e2big, (unsigned long long)c->eagain,
                  (unsigned long long)c->eclosed, (unsigned long long)c->reentrant,
                  (unsigned long long)c->channels, (unsigned long long)c->both_waiting);
    assert_true(c->send_wakes_ok > 0);
    assert_true(c->recv_wakes_ok > 0);
    assert_true(c->closed_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->handoffs > 0);
    assert_true(c->taken_waiting > 0);
    assert_true(c->drops > 0);
    assert_true(c->e2big > 0);
    assert_true(c->eagain > 0);
    assert_true(c->eclosed > 0);
    assert_true(c->reentrant > 0);
    assert_true(c->channels > 1);
    assert_true(c->both_waiting > 0);
}

const struct model_driver model_driver = {
    .name = "model_chan",
    .seed_base = UINT64_C(0x6368616e), /* "chan" */
    .ops = 100000,
    .seeds = 12,
    .model = MODEL_DRIVER_MODEL(chan_model),
    .coverage = coverage,
};
