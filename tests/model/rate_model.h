/* SPDX-License-Identifier: MIT */
/*
 * rate_model.h - an op-sequence interpreter that drives a real band_rate on a fake clock
 * and checks every result against a reference token bucket.
 *
 * Shared by tests/model/model_rate.c (random bytes from fixed seeds, then the fuzz corpus)
 * and fuzz/fuzz_rate.c (libFuzzer bytes). The interpreter reads bytes as operations: try,
 * reserve (with deadlines in the future, at now, in the past, BAND_FOREVER and INT64_MIN),
 * wait (the fake sleep moves the clock to the slot), cancel of a booking, band_rate_set()
 * with valid and invalid settings, moving the fake clock forward, back (a clock that steps
 * back) and to the ends of the band_time range, available, stats, close, and recreating
 * the bucket.
 *
 * A try may also interleave another operation (try, reserve, cancel, set, close,
 * available) between the moment its lock-free fast path read the bucket's word and its
 * compare-and-swap, through a test hook: the CAS then fails as it would against a racing
 * thread, and the outcome must be that of the other operation first, then the try.
 *
 * The first byte picks one of two kinds of run:
 *  - exact: settings up to 2^20 tokens, 2^40 ns periods and 2^20 bursts, any clock value.
 *    The reference computes every outcome, retry-after, delay, slot, available count and
 *    counter exactly and each must agree;
 *  - extreme: settings at the ends of their ranges (INT64_MAX tokens or periods, bursts
 *    that fill the depth), where the reference cannot follow the arithmetic. It then checks
 *    the contract instead: each return code is one the header allows and the right one
 *    where it can be told (EINVAL, E2BIG, ECLOSED, EALREADY), try and reserve succeed at
 *    once exactly when band_rate_available() says the tokens are there, a slot is the
 *    bucket's time plus the delay and never after the deadline, a change of settings keeps
 *    the whole tokens held (clamped to the new burst), and every counter matches the
 *    outcomes seen. Under the sanitizers it is mostly a hunt for arithmetic overflow.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * rate_model_error().
 */
#ifndef BAND_RATE_MODEL_H
#define BAND_RATE_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct rate_model;

enum rate_model_op {
    RM_OP_TRY,
    RM_OP_RESERVE,
    RM_OP_WAIT,
    RM_OP_CANCEL,
    RM_OP_ADVANCE,
    RM_OP_STEP_BACK,
    RM_OP_JUMP,
    RM_OP_SET,
    RM_OP_AVAILABLE,
    RM_OP_STATS,
    RM_OP_CLOSE,
    RM_OP_RECREATE,
    RM_OP_COUNT
};

/* What a run did, for checking that the generator reaches every path. */
struct rate_model_counts {
    uint64_t ops[RM_OP_COUNT];
    uint64_t granted;       /* try, reserve or wait that took tokens */
    uint64_t delayed;       /* bookings with a delay > 0 */
    uint64_t eagain;        /* try refused */
    uint64_t etimedout;     /* reserve or wait refused by the deadline */
    uint64_t past_deadline; /* bookings granted at once with a deadline before now */
    uint64_t e2big, eclosed, einval, eoverflow;
    uint64_t cancels_ok, ealready;
    uint64_t sets_ok;      /* band_rate_set() that changed the settings */
    uint64_t sets_clamped; /* ... to a burst below what the bucket held */
    uint64_t sets_owing;   /* ... while bookings ran ahead of the bucket */
    uint64_t stale_clock;  /* library calls that read a clock behind the bucket's time */
    uint64_t sleeps;       /* waits that slept */
    uint64_t extreme_runs; /* buckets created with extreme settings */
    uint64_t buckets;      /* buckets created */
    uint64_t raced;        /* tries whose compare-and-swap met an interleaved operation */
};

struct rate_model *rate_model_new(void);
void rate_model_free(struct rate_model *m);

/* Run the operations encoded in @data[0..@len); the first bytes choose the bucket.
 * Returns 0 when every result matched, -1 otherwise (see rate_model_error()). */
int rate_model_run_bytes(struct rate_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a deterministic generator seeded with @seed. */
int rate_model_run_seed(struct rate_model *m, uint64_t seed, uint64_t ops);

const char *rate_model_error(const struct rate_model *m);
const struct rate_model_counts *rate_model_counts(const struct rate_model *m);

#endif /* BAND_RATE_MODEL_H */
