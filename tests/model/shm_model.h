/* SPDX-License-Identifier: MIT */
/*
 * shm_model.h - an op-sequence interpreter that drives one bound of a shared segment from
 * two processes and checks every result against a small reference model (a FIFO array).
 *
 * The operations are those of the in-process semaphore's model (sem_model.h): try,
 * blocking acquire with a past deadline (and with a 1 ms one, which queues and times
 * out), async acquire, release of held units and of arbitrary amounts (overflow
 * attempts included), reduce, drain, cancel (either reason, and invalid ones), close
 * (rare; the segment is then recreated), destroy while an async wait is pending, stats
 * comparison, grow. Each operation is run by one of two processes: this one, or a forked
 * child that has its own handle on the same named segment and executes what it is sent
 * over a pipe. After every operation the interpreter waits (bounded) for the wakes the
 * model expects in either process, then compares the returned code, every waiter's wake
 * count and status, and band_shm_get_stats(), band_shm_list_waiters() and
 * band_shm_list_holders() with the model.
 *
 * Shared by tests/model/model_shm.c (fixed seeds) and fuzz/fuzz_shm.c (libFuzzer bytes).
 * Nothing here asserts: a mismatch stops the run and is reported by shm_model_error().
 */
#ifndef BAND_SHM_MODEL_H
#define BAND_SHM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct shm_model;

enum shm_model_op {
    SHM_OP_TRY,
    SHM_OP_ACQUIRE_PAST,
    SHM_OP_ACQUIRE_SHORT,
    SHM_OP_ASYNC,
    SHM_OP_RELEASE_HELD,
    SHM_OP_RELEASE_ANY,
    SHM_OP_REDUCE,
    SHM_OP_DRAIN,
    SHM_OP_CANCEL,
    SHM_OP_STATS,
    SHM_OP_CLOSE,
    SHM_OP_RECREATE,
    SHM_OP_DESTROY_BUSY,
    SHM_OP_GROW,
    SHM_OP_COUNT
};

struct shm_model_counts {
    uint64_t ops[SHM_OP_COUNT];
    uint64_t remote;      /* operations run by the other process */
    uint64_t wakes;       /* wakes observed */
    uint64_t grants;      /* wakes with status 0 */
    uint64_t cross;       /* grants caused by the other process */
    uint64_t closed;      /* wakes with BAND_ECLOSED */
    uint64_t e2big_wakes; /* wakes with BAND_E2BIG (reduce) */
    uint64_t cancels_ok;  /* cancels that returned 0 */
    uint64_t ealready;    /* cancels that returned BAND_EALREADY */
    uint64_t pending;     /* submissions that returned BAND_PENDING */
    uint64_t overflows;   /* BAND_EOVERFLOW results */
    uint64_t debt_ops;    /* operations after which a debt was owed */
    uint64_t busy;        /* BAND_EBUSY results (no waiter slot, destroy while pending) */
    uint64_t segments;    /* segments created */
};

/* A new interpreter (no segment or child yet); NULL when out of memory. */
struct shm_model *shm_model_new(void);

/* End the child, remove the segment and free @m. NULL is ignored. */
void shm_model_free(struct shm_model *m);

/* Run the operations of @data[0..@len): 0 when every result matched, -1 otherwise. */
int shm_model_run_bytes(struct shm_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a generator seeded with @seed, stopping early (with success)
 * at @until. */
int shm_model_run_seed(struct shm_model *m, uint64_t seed, uint64_t ops, band_time until);

/* The first mismatch. */
const char *shm_model_error(const struct shm_model *m);

/* Counters over every run of @m. */
const struct shm_model_counts *shm_model_counts(const struct shm_model *m);

/* Operations run by the failed (or last) run. */
uint64_t shm_model_ops_done(const struct shm_model *m);

#endif /* BAND_SHM_MODEL_H */
