/* SPDX-License-Identifier: MIT */
/*
 * relay_model.h - an op-sequence interpreter that drives a real band_relay single-threaded
 * and checks every result against a reference model: per waiter, idle, parked or done.
 *
 * Shared by tests/model/model_relay.c (random bytes from fixed seeds, then the fuzz corpus)
 * and fuzz/fuzz_relay.c (libFuzzer bytes). Operations: park, complete (every status, and a
 * positive one), cancel (every reason, invalid ones too), count, destroy (refused while a
 * waiter is parked, then recreate), and misuse (NULL arguments, a waiter without a wake, a
 * waiter parked on another relay). Some wakes park their waiter again from inside the wake.
 * After every operation it compares the returned code, every wake (exactly once, with its
 * status), every cancel hook call (once, with its reason, and never a wake after it), each
 * waiter's pending state and status, and band_relay_count() with the model.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * relay_model_error().
 */
#ifndef BAND_RELAY_MODEL_H
#define BAND_RELAY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct relay_model;

enum relay_model_op {
    RM_OP_PARK,
    RM_OP_COMPLETE,
    RM_OP_CANCEL,
    RM_OP_COUNT_Q,
    RM_OP_DESTROY,
    RM_OP_MISUSE,
    RM_OP_COUNT
};

struct relay_model_counts {
    uint64_t ops[RM_OP_COUNT];
    uint64_t wakes, hooks, reparks, ealready, ebusy, einval, relays;
};

struct relay_model *relay_model_new(void);
void relay_model_free(struct relay_model *m);
/* 0 when every result matched the model. */
int relay_model_run_bytes(struct relay_model *m, const uint8_t *data, size_t len);
int relay_model_run_seed(struct relay_model *m, uint64_t seed, uint64_t ops, band_time until);
const char *relay_model_error(const struct relay_model *m);
const struct relay_model_counts *relay_model_counts(const struct relay_model *m);

#endif
