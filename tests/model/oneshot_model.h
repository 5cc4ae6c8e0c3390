/* SPDX-License-Identifier: MIT */
/*
 * oneshot_model.h - an op-sequence interpreter that drives a real band_oneshot
 * single-threaded and checks every result against a small reference model (a handful of
 * flags and the id of the value it holds).
 *
 * Shared by tests/model/model_oneshot.c (random bytes from fixed seeds, then the fuzz
 * corpus) and fuzz/fuzz_oneshot.c (libFuzzer bytes). Operations: send (also with a NULL
 * value), close, try_recv, blocking recv (past, short and unbounded deadlines),
 * recv_async on one of a few ops, cancel of an op (every reason, invalid ones too),
 * receiver_drop, destroy while a receive is pending, NULL and out-of-range arguments, and
 * recreate (destroy, then a new oneshot of another value size). After every operation it
 * compares the returned code, the bytes copied out (and that nothing was copied on a
 * failure), every wake (exactly once, its status and the value in its buffer), every op's
 * pending state and status, and band_oneshot_get_stats() with the model. Some wakes call
 * back into the oneshot: they read the counters, poll, resubmit their op, or destroy the
 * oneshot (the contract lets a receiver free it from its wake).
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * oneshot_model_error().
 */
#ifndef BAND_ONESHOT_MODEL_H
#define BAND_ONESHOT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct oneshot_model;

enum oneshot_model_op {
    OM_OP_SEND,
    OM_OP_CLOSE,
    OM_OP_TRY_RECV,
    OM_OP_RECV,
    OM_OP_RECV_ASYNC,
    OM_OP_CANCEL,
    OM_OP_RECEIVER_DROP,
    OM_OP_DESTROY_BUSY,
    OM_OP_MISUSE,
    OM_OP_RECREATE,
    OM_OP_COUNT
};

struct oneshot_model_counts {
    uint64_t ops[OM_OP_COUNT];
    uint64_t wakes, wakes_ok, wakes_closed, wakes_canceled;
    uint64_t pending, cancels_ok, ealready, ebusy, eagain, eclosed, einval;
    uint64_t values;         /* values that reached the receiver */
    uint64_t timed_queued;   /* blocking receives that queued and timed out */
    uint64_t reentrant;      /* wakes that called back into the oneshot */
    uint64_t resubmits;      /* wakes that resubmitted their op */
    uint64_t wake_destroys;  /* wakes that destroyed the oneshot */
    uint64_t dropped_values; /* values sent, never received, freed with the oneshot */
    uint64_t oneshots;       /* oneshots created */
};

struct oneshot_model *oneshot_model_new(void);
void oneshot_model_free(struct oneshot_model *m);

/* Run the operations encoded in @data[0..@len); the first byte chooses the value size.
 * Returns 0 when every result matched, -1 otherwise (see oneshot_model_error()). */
int oneshot_model_run_bytes(struct oneshot_model *m, const uint8_t *data, size_t len);

/* Run up to @ops operations from a generator seeded with @seed, stopping early (with
 * success) once band_now() passes @until (0: no time limit). */
int oneshot_model_run_seed(struct oneshot_model *m, uint64_t seed, uint64_t ops, band_time until);

const char *oneshot_model_error(const struct oneshot_model *m);
const struct oneshot_model_counts *oneshot_model_counts(const struct oneshot_model *m);

#endif /* BAND_ONESHOT_MODEL_H */
