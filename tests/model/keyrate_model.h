/* SPDX-License-Identifier: MIT */
/*
 * keyrate_model.h - an op-sequence interpreter that drives a real band_keyrate on a fake
 * clock and checks every result against a simple per-key reference.
 *
 * Shared by tests/model/model_keyrate.c (random bytes from fixed seeds, then the fuzz
 * corpus) and fuzz/fuzz_keyrate.c (libFuzzer bytes). The reference keeps, for each of a
 * dozen keys (the empty key, keys with NUL bytes, a key of the longest length, one too
 * long), its theoretical arrival time in 1/tokens ns on an absolute clock, written apart
 * from the library's relative form; keys it never saw or that are full again are simply
 * "full". It knows nothing of the library's table beyond its contract:
 *  - a new key meets a full table exactly when max_keys other keys are short of full
 *    (tables of one shard, max_keys 1 to 6); then FULL_REFUSE answers BAND_ENOSPC and
 *    changes nothing, and FULL_EVICT drops the key short of full that is closest to full,
 *    ties to the one that left full first, which is full from then on;
 *  - tables of several shards get room for every key, so they never meet a full shard;
 *  - a clock that steps back is read as no time elapsed (only for one shard, since the
 *    shards keep their time apart).
 * Operations: try (any n, 0 and above the burst included), available, forget, the clock
 * forward, exactly by the last retry-after (or one ns short of it), back, to the ends of
 * the band_time range, band_keyrate_set() (valid, invalid, overflowing), stats (every
 * counter but evicted_idle, which depends on when the table sweeps), close, recreate.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * keyrate_model_error().
 */
#ifndef BAND_KEYRATE_MODEL_H
#define BAND_KEYRATE_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct keyrate_model;

enum keyrate_model_op {
    KM_OP_TRY,
    KM_OP_AVAILABLE,
    KM_OP_FORGET,
    KM_OP_ADVANCE,
    KM_OP_TO_RETRY,
    KM_OP_STEP_BACK,
    KM_OP_JUMP,
    KM_OP_SET,
    KM_OP_STATS,
    KM_OP_CLOSE,
    KM_OP_RECREATE,
    KM_OP_COUNT
};

/* What a run did, for checking that the generator reaches every path. */
struct keyrate_model_counts {
    uint64_t ops[KM_OP_COUNT];
    uint64_t granted, eagain, e2big, enospc, eclosed, einval, enoent, eoverflow;
    uint64_t retry_exact;  /* a try at exactly its retry-after that was granted */
    uint64_t evicted_busy; /* keys short of full dropped for a new key */
    uint64_t forgotten;    /* forget that removed a key short of full */
    uint64_t sets_ok;
    uint64_t stale_clock; /* library calls that read a clock behind the table's time */
    uint64_t tables, sharded_tables;
};

struct keyrate_model *keyrate_model_new(void);
void keyrate_model_free(struct keyrate_model *m);

/* Run the operations encoded in @data[0..@len); the first bytes choose the table.
 * Returns 0 when every result matched, -1 otherwise (see keyrate_model_error()). */
int keyrate_model_run_bytes(struct keyrate_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a deterministic generator seeded with @seed. */
int keyrate_model_run_seed(struct keyrate_model *m, uint64_t seed, uint64_t ops);

const char *keyrate_model_error(const struct keyrate_model *m);
const struct keyrate_model_counts *keyrate_model_counts(const struct keyrate_model *m);

#endif /* BAND_KEYRATE_MODEL_H */
