/* SPDX-License-Identifier: MIT */
/*
 * sem_model.h - an op-sequence interpreter that drives a real band_sem (or band_budget)
 * single-threaded with async waiters and checks every result against a small reference
 * model (a plain array queue).
 *
 * Shared by tests/model/model_sem.c (random bytes from fixed seeds) and fuzz/fuzz_sem.c
 * (libFuzzer bytes). The interpreter reads bytes as operations: try_acquire, blocking
 * acquire with a past deadline, acquire_async (n from 0 to beyond the maximum), release
 * (of held permits, and arbitrary amounts including overflow attempts), reduce, drain,
 * cancel (either reason, and invalid ones), close (rare; the semaphore is then recreated),
 * destroy while busy, stats comparison, and for budgets grow and shrink. After every
 * operation it compares the returned code, the wakes that ran (order and status), the
 * waiters' states, band_sem_get_stats() and band__sem_check() with the model.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * sem_model_error(), so cmocka tests can assert on the main thread and the fuzz target
 * can abort.
 */
#ifndef BAND_SEM_MODEL_H
#define BAND_SEM_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct sem_model;

/* Operation kinds, for coverage counters. */
enum sem_model_op {
    SM_OP_TRY,
    SM_OP_ACQUIRE_PAST,
    SM_OP_ASYNC,
    SM_OP_RELEASE_HELD,
    SM_OP_RELEASE_ANY,
    SM_OP_REDUCE,
    SM_OP_DRAIN,
    SM_OP_CANCEL,
    SM_OP_STATS,
    SM_OP_CLOSE,
    SM_OP_RECREATE,
    SM_OP_DESTROY_BUSY,
    SM_OP_GROW,
    SM_OP_SHRINK,
    SM_OP_COUNT
};

/* What a run did, for checking that the generator reaches every path. */
struct sem_model_counts {
    uint64_t ops[SM_OP_COUNT];
    uint64_t wakes;         /* wakes observed */
    uint64_t grants;        /* wakes with status 0 */
    uint64_t closed;        /* wakes with BAND_ECLOSED */
    uint64_t e2big_wakes;   /* wakes with BAND_E2BIG (shrink) */
    uint64_t cancels_ok;    /* cancels that returned 0 */
    uint64_t ealready;      /* cancels that returned BAND_EALREADY */
    uint64_t pending;       /* submissions that returned BAND_PENDING */
    uint64_t overflows;     /* BAND_EOVERFLOW results */
    uint64_t partial_heads; /* ops after which the head held a partial grant */
    uint64_t debt_ops;      /* ops after which a debt was owed */
    uint64_t reentrant;     /* wakes that called back into the semaphore */
    uint64_t budgets;       /* budgets created */
    uint64_t sems;          /* semaphores created */
};

/* A new interpreter with no semaphore yet; NULL on allocation failure. */
struct sem_model *sem_model_new(void);

/* Close and destroy whatever the interpreter holds and free it. NULL is ignored. */
void sem_model_free(struct sem_model *m);

/*
 * Run the operations encoded in @data[0..@len). The first bytes choose the primitive and
 * its initial permits. Returns 0 when every result matched, -1 otherwise (see
 * sem_model_error()). Ends by closing the primitive and checking the final state.
 */
int sem_model_run_bytes(struct sem_model *m, const uint8_t *data, size_t len);

/*
 * Run @ops operations whose bytes come from a deterministic generator seeded with @seed.
 * Returns 0 or -1 as sem_model_run_bytes().
 */
int sem_model_run_seed(struct sem_model *m, uint64_t seed, uint64_t ops);

/* The first mismatch, with the op number and the expected and actual values. */
const char *sem_model_error(const struct sem_model *m);

/* Coverage counters accumulated over every run of @m. */
const struct sem_model_counts *sem_model_counts(const struct sem_model *m);

#endif /* BAND_SEM_MODEL_H */
