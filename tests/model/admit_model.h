/* SPDX-License-Identifier: MIT */
/*
 * admit_model.h - an op-sequence interpreter that drives real multi-budget admission
 * (band/admit.h) single-threaded and checks every result against a small reference model.
 *
 * The world: two to four flat budgets (band_budget or plain band_sem) and a capacity tree
 * (a root, two tenants, two leaves, with reservations), eight admission requests and six
 * plain async waiters. The interpreter reads bytes as operations: building requests over
 * several budgets and tree paths (amounts from 0 to past the capacity and past
 * BAND_MAX_UNITS), admitting them with try, async and a blocking call with a past
 * deadline, taking grants, releasing them whole or in part, adjusting them (past deadline
 * only), cancelling pending requests and plain waiters, plain try/acquire/async/release/
 * drain on the same budgets, growing, shrinking and reducing capacity, closing, recycling
 * (cancel and release everything on a budget, destroy it and create a new one), destroying
 * while busy, and wakes that release their grant and destroy an idle semaphore or tree
 * node from inside the wake. Only the public API is used.
 *
 * After every operation it compares the returned code, the wakes that ran (each slot at
 * most once, with its status), every waiter's state, every budget's band_sem_stats and
 * the conservation of units (available + set aside + held == capacity + debt) with the
 * model. Where the headers leave the order of internal steps open (which of two budgets
 * refuses first, how a cascade of grants interleaves with tree requests joining their next
 * level), the model explores every order the headers allow and accepts any of them.
 *
 * Nothing here asserts: a mismatch stops the run and is reported through
 * admit_model_error(), so cmocka tests can assert on the main thread and the fuzz target
 * can abort.
 */
#ifndef BAND_ADMIT_MODEL_H
#define BAND_ADMIT_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct admit_model;

/* Operation kinds, for coverage counters. */
enum admit_model_op {
    AM_OP_BUILD,       /* band_admit_req_init + req_add / req_add_tree */
    AM_OP_TRY,         /* band_admit_try */
    AM_OP_ASYNC,       /* band_admit_acquire_async */
    AM_OP_PAST,        /* band_admit with a past deadline */
    AM_OP_TAKE,        /* band_admit_req_grant */
    AM_OP_RELEASE,     /* band_admit_release */
    AM_OP_PART,        /* band_admit_release_part */
    AM_OP_ADJUST,      /* band_admit_adjust, past deadline */
    AM_OP_CANCEL,      /* band_waiter_cancel on a request or a plain waiter */
    AM_OP_PLAIN_TRY,   /* band_sem_try_acquire */
    AM_OP_PLAIN_PAST,  /* band_sem_acquire with a past deadline */
    AM_OP_PLAIN_ASYNC, /* band_sem_acquire_async */
    AM_OP_PLAIN_REL,   /* band_sem_release of held units */
    AM_OP_DRAIN,       /* band_sem_drain */
    AM_OP_GROW,        /* band_budget_grow, or a release of extra units to a semaphore */
    AM_OP_SHRINK,      /* band_sem_reduce: a budget's or tree node's shrink, a sem's debt */
    AM_OP_CLOSE,       /* band_sem_close */
    AM_OP_DESTROY,     /* destroy an idle primitive (recycling) */
    AM_OP_CREATE,      /* create a flat budget or a tree node */
    AM_OP_BUSY,        /* destroy while waiters are queued: BAND_EBUSY */
    AM_OP_RESET,       /* forget an idle request or waiter */
    AM_OP_COUNT
};

/* What a run did, for checking that the generator reaches every path. */
struct admit_model_counts {
    uint64_t ops[AM_OP_COUNT];
    uint64_t pending;         /* submissions that returned BAND_PENDING */
    uint64_t grant_wakes;     /* request wakes with status 0 */
    uint64_t closed_wakes;    /* request wakes with BAND_ECLOSED */
    uint64_t e2big_wakes;     /* request wakes with BAND_E2BIG */
    uint64_t plain_wakes;     /* plain waiter wakes */
    uint64_t cancels_ok;      /* cancels that returned 0 */
    uint64_t ealready;        /* cancels that returned BAND_EALREADY */
    uint64_t e2big_submit;    /* submissions refused with BAND_E2BIG */
    uint64_t guaranteed;      /* requests queued in the guaranteed class */
    uint64_t staged_joins;    /* tree requests joining a later level */
    uint64_t submit_granted;  /* async admitted at once by jumping the queue (guaranteed) */
    uint64_t hook_releases;   /* wakes that released their grant */
    uint64_t wake_destroys;   /* wakes that destroyed an idle primitive */
    uint64_t destroy_staged;  /* ... of which while a tree request was staged */
    uint64_t adjust_front;    /* adjusts that took units set aside for a head */
    uint64_t branch_points;   /* states where several orders were explored */
    uint64_t multi_candidate; /* operations after which several model states matched */
    uint64_t truncated;       /* explorations cut short (the model then followed one order) */
    /* The lock-free admission with a budget's word moved just before its CAS (try and
     * past only, no bytes read, the outcome kept; admit_model.c, race_admit()): */
    uint64_t race_moved_ok;  /* ... and the CAS taken again */
    uint64_t race_gave_back; /* ... refused there: the earlier budgets given back */
};

/* A new interpreter with nothing created yet; NULL on allocation failure. */
struct admit_model *admit_model_new(void);

/* Destroy whatever the interpreter holds and free it. NULL is ignored. */
void admit_model_free(struct admit_model *m);

/*
 * Run the operations encoded in @data[0..@len). The first bytes choose the budgets and
 * the tree. Returns 0 when every result matched, -1 otherwise (see admit_model_error()).
 * Ends by cancelling and releasing everything, checking that every budget is whole, and
 * destroying it all.
 */
int admit_model_run_bytes(struct admit_model *m, const uint8_t *data, size_t len);

/* Run @ops operations from a deterministic generator seeded with @seed; as above. */
int admit_model_run_seed(struct admit_model *m, uint64_t seed, uint64_t ops);

/* Stop later runs of @m (after the operation in progress) once band_now() passes
 * @deadline; BAND_FOREVER (the default) never stops early. */
void admit_model_set_deadline(struct admit_model *m, int64_t deadline);

/* How many operations the last run executed. */
uint64_t admit_model_ops_done(const struct admit_model *m);

/* The first mismatch, with the op number and the expected and actual values. */
const char *admit_model_error(const struct admit_model *m);

/* Coverage counters accumulated over every run of @m. */
const struct admit_model_counts *admit_model_counts(const struct admit_model *m);

#endif /* BAND_ADMIT_MODEL_H */
