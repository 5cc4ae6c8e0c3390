/* SPDX-License-Identifier: MIT */
/*
 * watch_model.h - an op-sequence interpreter that drives a real band_watch single-threaded
 * with a few cursors and async waits, and checks every result against a small reference
 * model (the value, the version, each cursor's seen version, the queue of waits).
 *
 * Shared by tests/model/model_watch.c (random bytes from fixed seeds, then the fuzz
 * corpus) and fuzz/fuzz_watch.c (libFuzzer bytes). Operations: send (also with a NULL
 * value, and next to UINT64_MAX for BAND_EOVERFLOW), close, read, rx_init, rx_read and
 * mark_seen, try_recv, blocking recv (past, short and unbounded deadlines),
 * recv_async on one of a few ops bound to a cursor, cancel of an op (every reason,
 * invalid ones too), destroy while a receiver waits, NULL and out-of-range arguments, and
 * recreate (destroy, then a new watch of another value size). After every operation it
 * compares the returned code, the bytes and versions copied out (and that nothing was
 * copied on a failure), every wake (exactly once, in queue order, its status, version and
 * value), every op's state, each cursor's seen version, band_watch_version(),
 * band_watch_is_closed() and band_watch_get_stats() with the model. Some wakes call back
 * into the watch: they read the counters or the value, poll their cursor, wait again,
 * send or close.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * watch_model_error().
 */
#ifndef BAND_WATCH_MODEL_H
#define BAND_WATCH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "band/core.h"

struct watch_model;

enum watch_model_op {
    WM_OP_SEND,
    WM_OP_CLOSE,
    WM_OP_READ,
    WM_OP_RX_INIT,
    WM_OP_RX_READ,
    WM_OP_TRY_RECV,
    WM_OP_RECV,
    WM_OP_RECV_ASYNC,
    WM_OP_CANCEL,
    WM_OP_DESTROY_BUSY,
    WM_OP_MISUSE,
    WM_OP_RECREATE,
    WM_OP_COUNT
};

struct watch_model_counts {
    uint64_t ops[WM_OP_COUNT];
    uint64_t wakes, wakes_ok, wakes_closed;
    uint64_t multi_wakes; /* sends or closes that woke more than one waiter */
    uint64_t pending, cancels_ok, ealready, ebusy, eagain, eclosed, einval, eoverflow;
    uint64_t skipped;      /* versions a cursor skipped (it saw a later one) */
    uint64_t timed_queued; /* blocking waits that queued and timed out */
    uint64_t reentrant;    /* wakes that called back into the watch */
    uint64_t resubmits;    /* wakes that waited again */
    uint64_t wake_sends;   /* wakes that sent */
    uint64_t watches;      /* watches created */
};

struct watch_model *watch_model_new(void);
void watch_model_free(struct watch_model *m);

/* Run the operations encoded in @data[0..@len); the first byte chooses the value size,
 * the initial value and the initial version. Returns 0 when every result matched, -1
 * otherwise (see watch_model_error()). */
int watch_model_run_bytes(struct watch_model *m, const uint8_t *data, size_t len);

/* Run up to @ops operations from a generator seeded with @seed, stopping early (with
 * success) once band_now() passes @until (0: no time limit). */
int watch_model_run_seed(struct watch_model *m, uint64_t seed, uint64_t ops, band_time until);

const char *watch_model_error(const struct watch_model *m);
const struct watch_model_counts *watch_model_counts(const struct watch_model *m);

#endif /* BAND_WATCH_MODEL_H */
