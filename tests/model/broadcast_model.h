/* SPDX-License-Identifier: MIT */
/*
 * broadcast_model.h - an op-sequence interpreter that drives a real band_broadcast (lossy
 * or lossless) single-threaded with a few receivers and async sends and receives, and
 * checks every result against a small reference model (the sequence window, each
 * receiver's cursor, the two wait queues).
 *
 * Shared by tests/model/model_broadcast.c (random bytes from fixed seeds, then the fuzz
 * corpus) and fuzz/fuzz_broadcast.c (libFuzzer bytes). Operations: try_send, blocking
 * send (past, short and unbounded deadlines), send_async, try_recv, blocking recv,
 * recv_async (several may wait on one receiver), cancel of a send or a receive (every
 * reason, invalid ones too), subscribe, unsubscribe, close, destroy while busy, NULL and
 * out-of-range arguments, and recreate (destroy, then a new broadcast of another mode,
 * capacity and element size). After every operation it compares the returned code, the
 * message bytes copied out (and that nothing was copied on a failure), the lag counts,
 * every wake (exactly once, per kind in order, its status and message), every op's state,
 * each receiver's band_broadcast_rx_lagged() and band_broadcast_rx_backlog(),
 * band_broadcast_get_stats() and band__broadcast_check() with the model. Some wakes call
 * back into the broadcast: they read the counters, send a reply, submit their op again,
 * poll, unsubscribe or close.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * broadcast_model_error().
 */
#ifndef BAND_BROADCAST_MODEL_H
#define BAND_BROADCAST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct broadcast_model;

enum broadcast_model_op {
    BM_OP_TRY_SEND,
    BM_OP_SEND,
    BM_OP_SEND_ASYNC,
    BM_OP_TRY_RECV,
    BM_OP_RECV,
    BM_OP_RECV_ASYNC,
    BM_OP_CANCEL_SEND,
    BM_OP_CANCEL_RECV,
    BM_OP_SUBSCRIBE,
    BM_OP_UNSUBSCRIBE,
    BM_OP_CLOSE,
    BM_OP_DESTROY_BUSY,
    BM_OP_MISUSE,
    BM_OP_RECREATE,
    BM_OP_COUNT
};

struct broadcast_model_counts {
    uint64_t ops[BM_OP_COUNT];
    uint64_t wakes, send_wakes_ok, recv_wakes_ok, closed_wakes;
    uint64_t pending, cancels_ok, ealready, eagain, eclosed, einval;
    uint64_t received;        /* messages copied out */
    uint64_t lags;            /* BAND_ELAGGED answers */
    uint64_t async_lags;      /* of which from recv_async */
    uint64_t overwritten;     /* lossy: messages overwritten */
    uint64_t unheard;         /* messages sent with nobody subscribed */
    uint64_t pumped;          /* queued sends that a receive or unsubscribe let in */
    uint64_t shared;          /* ops after which two receives waited on one receiver */
    uint64_t both_waiting;    /* ops after which sends and receives both waited */
    uint64_t timed_queued;    /* blocking calls that queued and timed out */
    uint64_t reentrant;       /* wakes that called back into the broadcast */
    uint64_t replies;         /* wakes that sent */
    uint64_t resubmits;       /* wakes that submitted their op again */
    uint64_t lossy, lossless; /* broadcasts created, per mode */
};

struct broadcast_model *broadcast_model_new(void);
void broadcast_model_free(struct broadcast_model *m);

/* Run the operations encoded in @data[0..@len); the first byte chooses the mode, the
 * capacity and the element size. Returns 0 when every result matched, -1 otherwise (see
 * broadcast_model_error()). */
int broadcast_model_run_bytes(struct broadcast_model *m, const uint8_t *data, size_t len);

/* Run up to @ops operations from a generator seeded with @seed, stopping early (with
 * success) once band_now() passes @until (0: no time limit). */
int broadcast_model_run_seed(struct broadcast_model *m, uint64_t seed, uint64_t ops,
                             band_time until);

const char *broadcast_model_error(const struct broadcast_model *m);
const struct broadcast_model_counts *broadcast_model_counts(const struct broadcast_model *m);

#endif /* BAND_BROADCAST_MODEL_H */
