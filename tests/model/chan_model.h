/* SPDX-License-Identifier: MIT */
/*
 * chan_model.h - an op-sequence interpreter that drives a real band_chan single-threaded
 * with asynchronous send, reserve and receive ops, and checks every result against a small
 * reference model (plain arrays: the queue, the held reservations, the two wait queues).
 *
 * Shared by tests/model/model_chan.c (random bytes from fixed seeds) and fuzz/fuzz_chan.c
 * (libFuzzer bytes). After every operation it compares the returned code, the values and
 * bytes received, the wakes that ran (per kind in order, with their status and, for
 * receives, the element), every op's pending state and status, and band_chan_get_stats()
 * with the model. Some wakes call back into the channel (get_stats) to prove no lock is
 * held.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * chan_model_error().
 */
#ifndef BAND_CHAN_MODEL_H
#define BAND_CHAN_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct chan_model;

enum chan_model_op {
    CM_OP_TRY_SEND,
    CM_OP_SEND_PAST,
    CM_OP_SEND_ASYNC,
    CM_OP_RESERVE_ASYNC,
    CM_OP_TRY_RESERVE,
    CM_OP_RESERVE_PAST,
    CM_OP_SLOT_SEND,
    CM_OP_SLOT_RELEASE,
    CM_OP_TRY_RECV,
    CM_OP_RECV_PAST,
    CM_OP_RECV_ASYNC,
    CM_OP_RECV_MANY,
    CM_OP_CANCEL_SEND,
    CM_OP_CANCEL_RECV,
    CM_OP_OFFER,
    CM_OP_JOIN,
    CM_OP_LEAVE,
    CM_OP_CLOSE,
    CM_OP_DESTROY_BUSY,
    CM_OP_RECREATE,
    CM_OP_COUNT
};

struct chan_model_counts {
    uint64_t ops[CM_OP_COUNT];
    uint64_t wakes, send_wakes_ok, recv_wakes_ok, closed_wakes;
    uint64_t pending, cancels_ok, ealready;
    uint64_t handoffs;      /* elements handed straight to a waiting receiver */
    uint64_t taken_waiting; /* receives that took a waiting sender's element */
    uint64_t drops;         /* elements handed back by an overflow policy */
    uint64_t e2big, eagain, eclosed;
    uint64_t reentrant;
    uint64_t channels;
    uint64_t both_waiting; /* ops after which senders and receivers both waited */
};

struct chan_model *chan_model_new(void);
void chan_model_free(struct chan_model *m);

/* Run the operations encoded in @data[0..@len); the first bytes choose the channel.
 * Returns 0 when every result matched, -1 otherwise (see chan_model_error()). */
int chan_model_run_bytes(struct chan_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a deterministic generator seeded with @seed. */
int chan_model_run_seed(struct chan_model *m, uint64_t seed, uint64_t ops);

const char *chan_model_error(const struct chan_model *m);
const struct chan_model_counts *chan_model_counts(const struct chan_model *m);

#endif /* BAND_CHAN_MODEL_H */
