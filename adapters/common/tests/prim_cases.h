/* SPDX-License-Identifier: MIT */
/*
 * prim_cases.h - every band primitive's asynchronous operation, driven the same way, for
 * the adapters' tests.
 *
 * An adapter bridges a band_waiter and knows no primitive. These cases prove that on
 * each primitive: a case creates the primitive, prepares the primitive's own op and hands
 * out its waiter (to bind), makes the _async call, and later completes it (from any
 * thread), closes the primitive, and checks afterwards that the result arrived in the
 * primitive's op (status 0) or that nothing was delivered or taken (any other status).
 * The adapter tests run the same scenarios (grant from another thread, deadline, adapter
 * cancel, token cancel, close of the primitive, ...) over every case.
 */
#ifndef BAND_PRIM_CASES_H
#define BAND_PRIM_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "band/band.h"

struct pcase;

struct pcase_ops {
    const char *name;
    /* Create the primitive. @ready: the submission will complete at once. 0 or -1. */
    int (*setup)(struct pcase *c, int ready);
    /* Initialise the primitive's op; return its waiter, for the adapter to bind. */
    band_waiter *(*prepare)(struct pcase *c);
    /* The primitive's _async call on that op: its answer. */
    int (*submit)(struct pcase *c);
    /* Complete the pending submission (callable from any thread). 0 or -1. */
    int (*complete)(struct pcase *c);
    /* Close the primitive so that the pending submission ends with @close_status; NULL
     * when the primitive has no close. 0 or -1. */
    int (*close)(struct pcase *c);
    int close_status;
    /* Operations queued on the primitive now. */
    uint64_t (*waiting)(struct pcase *c);
    /* After status 0: the result is in the primitive's op; check it and give it back. */
    int (*check_granted)(struct pcase *c);
    /* After any other status: nothing was delivered, nothing is held. 0 or -1. */
    int (*check_nothing)(struct pcase *c);
    void (*teardown)(struct pcase *c);
};

#define PCASE_VALUE    UINT64_C(42)         /* what completes a case */
#define PCASE_FILLER   UINT64_C(7)          /* what fills a channel or ring */
#define PCASE_SENTINEL UINT64_C(0xdeadbeef) /* an output buffer nothing wrote to */

struct pcase {
    const struct pcase_ops *ops;
    int ready;
    char err[200]; /* why a check failed */

    band_sem *sem, *sem2;
    band_budget *budget;
    band_chan *chan;
    band_oneshot *oneshot;
    band_watch *watch;
    band_watch_rx wrx;
    band_broadcast *bc;
    band_broadcast_rx brx;
    band_group *group;
    band_latch *latch;
    band_shutdown *shutdown;
    band_fair *fair;

    band_waiter w;
    band_chan_send_op send;
    band_chan_reserve_op reserve;
    band_chan_recv_op recv;
    band_oneshot_recv_op os;
    band_watch_recv_op wc;
    band_broadcast_send_op bsend;
    band_broadcast_recv_op brecv;
    band_fair_acquire_op freq;
    band_admit_req areq;
    uint64_t val, out;
};

/* Every case: sem, budget, chan_send, chan_recv, chan_reserve, oneshot, watch,
 * broadcast_send, broadcast_recv, group, latch, shutdown_requested, shutdown_drained, fair,
 * admit. */
extern const struct pcase_ops *const pcase_all[];
extern const size_t pcase_count;

/* Start @c for @ops: zero it, set it up. Returns 0, or -1 with c->err set. */
int pcase_open(struct pcase *c, const struct pcase_ops *ops, int ready);

/* The case's checks as 0 / -1 with c->err set (prefixed with the case's name). */
int pcase_check(struct pcase *c, int status);

/* Tear the case down. */
void pcase_close(struct pcase *c);

#endif /* BAND_PRIM_CASES_H */
