/* SPDX-License-Identifier: MIT */
/*
 * fair_model.h - an op-sequence interpreter that drives a real band_fair single-threaded
 * and checks every result against a reference model written out in the test.
 *
 * Shared by tests/model/model_fair.c (bytes from fixed seeds, and the fuzz corpus) and
 * fuzz/fuzz_fair.c (libFuzzer's bytes). The first bytes of an input choose the fair's
 * configuration (capacity, classes and their headroom, base quantum, default weight and
 * cap, max_keys); then every operation is an op byte, a byte that decides whether the wakes
 * of this operation call back into the fair, and the operation's arguments. Operations:
 * try_acquire, blocking acquire with a past deadline, blocking acquire with a short
 * deadline (granted at once, or queued and timed out), key handles (get and put; try and
 * release then go through the handle, lock-free or not), acquire_async on one of the request
 * slots, cancel (either reason, another negative code, or an invalid one), release (of held
 * units, and more than held), key_set (valid and invalid), key_unset, close, destroy while
 * busy, and recreate with a new configuration. Keys come from a small pool, plus, with a
 * small max_keys, fresh ids that run into the key table's bound. fuzz/make_corpus_fair.py
 * documents the byte format by example (it writes the seed corpus).
 *
 * After every operation it compares the returned code, the wakes that ran (order and
 * status; for close, the set), every slot's state and status, band_fair_get_stats() (every
 * counter but the wait times), band_fair_key_get_stats() of every key the model knows,
 * band_fair_list_keys(), and band__fair_check().
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * fair_model_error(), so the cmocka test can assert on the main thread and the fuzz target
 * can abort. FAIR_MODEL_TRACE=1 in the environment prints every operation.
 */
#ifndef BAND_FAIR_MODEL_H
#define BAND_FAIR_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct fair_model;

/* Operation kinds, for coverage counters. */
enum fair_model_op {
    FM_OP_TRY,
    FM_OP_ACQUIRE_PAST,
    FM_OP_ACQUIRE_WAIT,
    FM_OP_ASYNC,
    FM_OP_CANCEL,
    FM_OP_RELEASE,
    FM_OP_KEY_SET,
    FM_OP_KEY_UNSET,
    FM_OP_CLOSE,
    FM_OP_DESTROY_BUSY,
    FM_OP_RECREATE,
    FM_OP_HANDLE, /* get or put a key handle; try and release then go through it */
    FM_OP_COUNT
};

/* What the runs did, for checking that the generator reaches every path. */
struct fair_model_counts {
    uint64_t ops[FM_OP_COUNT];
    uint64_t wakes;             /* wakes observed */
    uint64_t grants;            /* wakes with status 0 */
    uint64_t closed;            /* wakes with BAND_ECLOSED */
    uint64_t e2big_wakes;       /* wakes with BAND_E2BIG (a lowered cap) */
    uint64_t pending;           /* submissions that returned BAND_PENDING */
    uint64_t granted_now;       /* submissions granted at once */
    uint64_t cancels_ok;        /* cancels that returned 0 */
    uint64_t ealready;          /* cancels that returned BAND_EALREADY */
    uint64_t timeouts;          /* blocking acquires that queued and timed out */
    uint64_t eagain;            /* try refusals */
    uint64_t e2big;             /* submissions refused with BAND_E2BIG */
    uint64_t enomem;            /* key table full */
    uint64_t overflows;         /* BAND_EOVERFLOW */
    uint64_t stalls;            /* ops after which some class was stalled */
    uint64_t parked;            /* ops after which some flow was set aside at its cap */
    uint64_t unparked;          /* flows that came back from their cap */
    uint64_t caught_up;         /* flows put back that were more than the lag behind */
    uint64_t reserved_grants;   /* grants of the reservation pass */
    uint64_t later_rounds;      /* grants of requests due more than one round ahead */
    uint64_t multi_grants;      /* ops that granted more than one request */
    uint64_t reentrant;         /* wakes that called back into the fair */
    uint64_t fairs;             /* fairs created */
    uint64_t giants;            /* fairs with the largest capacity */
    uint64_t rebases;           /* the real fair's rounds were rebased (seen from outside) */
    uint64_t handle_tries;      /* try_acquire through a handle */
    uint64_t handle_releases;   /* release through a handle */
    uint64_t fast_grants;       /* of those, grants of the lock-free path */
    uint64_t fast_releases;     /* releases that stayed lock-free */
    uint64_t slow_handle_tries; /* handle tries the lock decided */
};

/* A new interpreter with no fair yet; NULL on allocation failure. */
struct fair_model *fair_model_new(void);

/* Close and destroy whatever the interpreter holds and free it. NULL is ignored. */
void fair_model_free(struct fair_model *m);

/*
 * Run the operations encoded in @data[0..@len). Returns 0 when every result matched, -1
 * otherwise (see fair_model_error()). Ends by closing the fair and checking that every
 * queued request ended exactly once and every unit can be released.
 */
int fair_model_run_bytes(struct fair_model *m, const uint8_t *data, size_t len);

/* Run @ops operations whose bytes come from a generator seeded with @seed. */
int fair_model_run_seed(struct fair_model *m, uint64_t seed, uint64_t ops);

/* The first mismatch, with the op number and the expected and actual values. */
const char *fair_model_error(const struct fair_model *m);

/* Coverage counters accumulated over every run of @m. */
const struct fair_model_counts *fair_model_counts(const struct fair_model *m);

#endif /* BAND_FAIR_MODEL_H */
