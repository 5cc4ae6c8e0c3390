/* SPDX-License-Identifier: MIT */
/*
 * coord_model.h - an op-sequence interpreter that drives two band_group, two band_latch and
 * two band_shutdown objects (plus one band_sem whose waiters the scopes watch, and a few
 * band_cancel tokens) single-threaded, and checks every result against a small reference
 * model written from group.h, latch.h, shutdown.h, cancel.h and core.h.
 *
 * Shared by tests/model/model_coord.c (random bytes from fixed seeds, then the fuzz corpus)
 * and fuzz/fuzz_coord.c (libFuzzer bytes). Operations: group add, done, done_n, try_wait,
 * blocking wait (past, short and unbounded deadlines, with or without a token, requested or
 * not) and wait_async; latch count_down, try_wait, wait, wait_async and arrive_and_wait;
 * shutdown request (every kind of reason, invalid ones too), join, leave, wait_requested,
 * wait_drained and their _async forms, watch of a pending waiter of any of these objects or
 * of the semaphore, unwatch; semaphore acquire_async, release, drain and close; cancel of a
 * waiter (every reason); token requests (a scope's own token, a child of it, an independent
 * one), child and token recreation; destroy while busy; clean destroy and recreate of any
 * object; NULL arguments. Wakes may call back in: they compare the whole state, unwatch
 * their link, resubmit their waiter, or run a nested operation (a request, a done, a
 * release ...). After every operation it compares every returned code, every wake (exactly
 * once, its order and status), every waiter's pending state and status, every token and
 * every counter with the model.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * coord_model_error().
 */
#ifndef BAND_COORD_MODEL_H
#define BAND_COORD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct coord_model;

enum coord_model_op {
    CM_OP_G_ADD,
    CM_OP_G_DONE,
    CM_OP_G_TRY,
    CM_OP_G_WAIT,
    CM_OP_G_ASYNC,
    CM_OP_L_DOWN,
    CM_OP_L_TRY,
    CM_OP_L_WAIT,
    CM_OP_L_ASYNC,
    CM_OP_L_ARRIVE,
    CM_OP_S_REQUEST,
    CM_OP_S_JOIN,
    CM_OP_S_LEAVE,
    CM_OP_S_WAIT,
    CM_OP_S_ASYNC,
    CM_OP_S_WATCH,
    CM_OP_S_UNWATCH,
    CM_OP_SEM_ASYNC,
    CM_OP_SEM_RELEASE,
    CM_OP_SEM_CLOSE,
    CM_OP_CANCEL,
    CM_OP_TOKEN,
    CM_OP_DESTROY_BUSY,
    CM_OP_RECREATE,
    CM_OP_MISUSE,
    CM_OP_COUNT
};

struct coord_model_counts {
    uint64_t ops[CM_OP_COUNT];
    uint64_t nested_ops;      /* operations run from inside a wake */
    uint64_t wakes;           /* wakes that ran */
    uint64_t wakes_released;  /* status 0 from a group, latch or scope */
    uint64_t wakes_granted;   /* status 0 from the semaphore */
    uint64_t wakes_closed;    /* BAND_ECLOSED from the semaphore's close */
    uint64_t wakes_fired;     /* called by a scope whose cancel won, status = its reason */
    uint64_t pending;         /* submissions that queued */
    uint64_t at_once;         /* submissions that completed at once */
    uint64_t cancels_ok;      /* band_waiter_cancel() that withdrew a wait */
    uint64_t fired_won;       /* links fired whose cancel won */
    uint64_t fired_lost;      /* links fired whose waiter had already ended */
    uint64_t handoffs;        /* semaphore grants made by a scope's cancel of the head */
    uint64_t requests;        /* first requests */
    uint64_t drains;          /* scopes drained with drain waits queued */
    uint64_t zeroes;          /* group counts brought to 0 with waits queued */
    uint64_t opens;           /* latches opened with waits queued */
    uint64_t timed_queued;    /* blocking waits that queued and timed out */
    uint64_t canceled_waits;  /* blocking waits refused by a requested token */
    uint64_t expired_waits;   /* blocking waits refused by a past deadline */
    uint64_t unwatched_ok;    /* unwatch before the link fired (0) */
    uint64_t unwatched_fired; /* unwatch after it fired (BAND_EALREADY) */
    uint64_t wake_checks, wake_unwatches, wake_resubmits, wake_pokes;
    uint64_t busy_waits, busy_parts, busy_links, busy_child; /* destroy refused for that alone */
    uint64_t ebusy, einval, ealready, eagain, eoverflow, ecanceled, etimedout, reasons;
    uint64_t objects; /* objects created */
};

struct coord_model *coord_model_new(void);
void coord_model_free(struct coord_model *m);

/* Run the operations encoded in @data[0..@len); the first bytes choose the latches' counts
 * and the semaphore's permits. Returns 0 when every result matched, -1 otherwise (see
 * coord_model_error()). */
int coord_model_run_bytes(struct coord_model *m, const uint8_t *data, size_t len);

/* Run up to @ops operations from a generator seeded with @seed, stopping early (with
 * success) once band_now() passes @until (0: no time limit). */
int coord_model_run_seed(struct coord_model *m, uint64_t seed, uint64_t ops, band_time until);

const char *coord_model_error(const struct coord_model *m);
const struct coord_model_counts *coord_model_counts(const struct coord_model *m);

#endif /* BAND_COORD_MODEL_H */
