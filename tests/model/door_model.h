/* SPDX-License-Identifier: MIT */
/*
 * door_model.h - an op-sequence interpreter that drives a real band_front_door (over a plain
 * semaphore or a budget, a rate budget on a fake clock and a backlog channel, each
 * optional) single-threaded, together with other users of the same bounds, and checks
 * every answer against a small reference model.
 *
 * Shared by tests/model/model_door.c (random bytes from fixed seeds, then the fuzz corpus)
 * and fuzz/fuzz_door.c (libFuzzer bytes). After every operation it compares the returned
 * code, the answer (kind, HTTP status, reason, Retry-After), the permit handed over, the
 * job queued for later, the wakes of the other users' waiters, and the counters of the
 * door, the semaphore, the rate budget and the channel with the model, and checks the
 * invariants: tokens spent by the door == units it admitted, permits counted in flight ==
 * admitted - given back through band_front_door_done(), every unit of the semaphore accounted
 * for, and no answer other than the documented ones.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * door_model_error().
 */
#ifndef BAND_FRONT_DOOR_MODEL_H
#define BAND_FRONT_DOOR_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct door_model;

enum door_model_op {
    DM_OP_ADMIT,    /* band_front_door_admit() */
    DM_OP_DONE,     /* band_front_door_done(), valid or not */
    DM_OP_TAKE,     /* another user takes permits with band_permit_try_acquire() */
    DM_OP_RELEASE,  /* a held permit released past the door (band_permit_release()) */
    DM_OP_ASYNC,    /* another user queues for permits (band_sem_acquire_async()) */
    DM_OP_CANCEL,   /* ... and cancels */
    DM_OP_WRELEASE, /* ... or releases what its wake granted */
    DM_OP_RATE,     /* another user takes tokens (band_rate_try_acquire()) */
    DM_OP_TICK,     /* the fake clock advances */
    DM_OP_RECV,     /* a worker takes a job from the backlog */
    DM_OP_CLOSE,    /* the door, the semaphore, the rate budget or the backlog closes */
    DM_OP_RECREATE, /* everything is given back and a new door is built */
    DM_OP_COUNT
};

#define DM_ANSWER_KINDS 7

struct door_model_counts {
    uint64_t ops[DM_OP_COUNT];
    uint64_t answers[DM_ANSWER_KINDS]; /* admit answers by kind */
    uint64_t admit_einval, done_ok, done_einval;
    uint64_t waited_path;      /* admissions that tried the wait for permits (and failed) */
    uint64_t peek_over_quota;  /* OVER_QUOTA found before a wait, nothing taken */
    uint64_t rate_gave_back;   /* rate refusals after the permits were taken */
    uint64_t too_big_sem;      /* TOO_BIG: more than a semaphore or budget holds */
    uint64_t too_big_headroom; /* TOO_BIG: more than a budget leaves after the headroom */
    uint64_t too_big_rate;     /* TOO_BIG: more tokens than the burst */
    uint64_t measured_busy;    /* BUSY or SHED with a measured Retry-After */
    uint64_t wakes;
    uint64_t doors;
};

struct door_model *door_model_new(void);
void door_model_free(struct door_model *m);

/* Run the operations encoded in @data[0..@len); the first bytes choose the door.
 * Returns 0 when every result matched, -1 otherwise (see door_model_error()). */
int door_model_run_bytes(struct door_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a deterministic generator seeded with @seed. */
int door_model_run_seed(struct door_model *m, uint64_t seed, uint64_t ops);

const char *door_model_error(const struct door_model *m);
const struct door_model_counts *door_model_counts(const struct door_model *m);

#endif /* BAND_FRONT_DOOR_MODEL_H */
