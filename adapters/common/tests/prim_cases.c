/* SPDX-License-Identifier: MIT */
/*
 * prim_cases.c - the cases behind prim_cases.h, one per primitive's _async operation.
 *
 * Every case starts with its primitive in a state where the submission has to wait (or,
 * with @ready, completes at once); complete() is the one event that lets it through.
 */
#include "prim_cases.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
static int fail(struct pcase *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif

static int fail(struct pcase *c, const char *fmt, ...)
{
    if (c->err[0] != '\0')
        return -1;
    int n = snprintf(c->err, sizeof(c->err), "%s: ", c->ops->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, sizeof(c->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

#define EXPECT(c, cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return fail((c), "%s (line %d)", #cond, __LINE__);                                     \
    } while (0)

static band_sem_stats sem_stats(const band_sem *s)
{
    band_sem_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_sem_get_stats(s, &st);
    return st;
}

static band_chan_stats chan_stats(const band_chan *ch)
{
    band_chan_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_chan_get_stats(ch, &st);
    return st;
}

/* ---- sem: acquire 2 of 0 (2 when ready) ----------------------------------------------- */

static int sem_setup(struct pcase *c, int ready)
{
    return band_sem_create(&c->sem, ready ? 2 : 0, NULL) == 0 ? 0 : -1;
}

static band_waiter *plain_prepare(struct pcase *c)
{
    return &c->w;
}

static int sem_submit(struct pcase *c)
{
    return band_sem_acquire_async(c->sem, 2, &c->w);
}

static int sem_complete(struct pcase *c)
{
    return band_sem_release(c->sem, 2);
}

static int sem_close(struct pcase *c)
{
    return band_sem_close(c->sem);
}

static uint64_t sem_waiting(struct pcase *c)
{
    return sem_stats(c->sem).waiters;
}

static int sem_granted(struct pcase *c)
{
    EXPECT(c, band_sem_available(c->sem) == 0); /* the caller holds both */
    band_permit p = BAND_PERMIT_INIT;
    EXPECT(c, band_permit_adopt(&p, c->sem, 2) == 0);
    EXPECT(c, band_permit_release(&p) == 0);
    EXPECT(c, band_sem_available(c->sem) == 2);
    return 0;
}

static int sem_nothing(struct pcase *c)
{
    EXPECT(c, band_sem_available(c->sem) == 0);
    EXPECT(c, sem_stats(c->sem).in_use == 0);
    return 0;
}

static void sem_teardown(struct pcase *c)
{
    band_sem_close(c->sem);
    band_sem_destroy(c->sem);
}

static const struct pcase_ops case_sem = {
    "sem",        sem_setup,   plain_prepare, sem_submit,  sem_complete, sem_close,
    BAND_ECLOSED, sem_waiting, sem_granted,   sem_nothing, sem_teardown,
};

/* ---- budget: 5 bytes of 10, 8 held (none when ready) ----------------------------------- */

static int budget_setup(struct pcase *c, int ready)
{
    if (band_budget_create(&c->budget, 10, NULL) != 0)
        return -1;
    return ready ? 0 : band_budget_try_acquire(c->budget, 8);
}

static int budget_submit(struct pcase *c)
{
    return band_budget_acquire_async(c->budget, 5, &c->w);
}

static int budget_complete(struct pcase *c)
{
    return band_budget_release(c->budget, 8);
}

static int budget_close(struct pcase *c)
{
    return band_budget_close(c->budget);
}

static uint64_t budget_waiting(struct pcase *c)
{
    band_budget_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_budget_get_stats(c->budget, &st);
    return st.waiters;
}

static int budget_granted(struct pcase *c)
{
    EXPECT(c, band_budget_available(c->budget) == 5);
    EXPECT(c, band_budget_release(c->budget, 5) == 0);
    EXPECT(c, band_budget_available(c->budget) == 10);
    return 0;
}

static int budget_nothing(struct pcase *c)
{
    EXPECT(c, band_budget_available(c->budget) == 2); /* only the 8 held before */
    EXPECT(c, band_budget_release(c->budget, 8) == 0);
    EXPECT(c, band_budget_available(c->budget) == 10);
    return 0;
}

static void budget_teardown(struct pcase *c)
{
    band_budget_close(c->budget);
    band_budget_destroy(c->budget);
}

static const struct pcase_ops case_budget = {
    "budget",     budget_setup,   plain_prepare,  budget_submit,  budget_complete, budget_close,
    BAND_ECLOSED, budget_waiting, budget_granted, budget_nothing, budget_teardown,
};

/* ---- chan: one slot, full (empty when ready); send, receive, reserve ------------------- */

static int chan_setup_full(struct pcase *c, int ready)
{
    if (band_chan_create(&c->chan, sizeof(uint64_t), 1, NULL) != 0)
        return -1;
    uint64_t v = PCASE_FILLER;
    return ready ? 0 : band_chan_try_send(c->chan, &v, 1);
}

static int chan_setup_empty(struct pcase *c, int ready)
{
    if (band_chan_create(&c->chan, sizeof(uint64_t), 1, NULL) != 0)
        return -1;
    uint64_t v = PCASE_VALUE;
    return ready ? band_chan_try_send(c->chan, &v, 3) : 0;
}

static int chan_close(struct pcase *c)
{
    return band_chan_close(c->chan);
}

static uint64_t chan_waiting(struct pcase *c)
{
    band_chan_stats st = chan_stats(c->chan);
    return st.waiting_senders + st.waiting_receivers;
}

static void chan_teardown(struct pcase *c)
{
    band_chan_close(c->chan);
    uint64_t v;
    while (band_chan_try_recv(c->chan, &v, NULL) == 0)
        ;
    band_chan_destroy(c->chan);
}

/* Takes the filler out (complete() of a full channel). */
static int chan_take_filler(struct pcase *c)
{
    uint64_t v = 0;
    if (band_chan_try_recv(c->chan, &v, NULL) != 0 || v != PCASE_FILLER)
        return -1;
    return 0;
}

/* What is left in the channel: @first (or nothing with 0), then nothing else. */
static int chan_holds(struct pcase *c, uint64_t first)
{
    uint64_t v = 0;
    if (first != 0) {
        EXPECT(c, band_chan_try_recv(c->chan, &v, NULL) == 0);
        EXPECT(c, v == first);
    }
    int rc = band_chan_try_recv(c->chan, &v, NULL);
    EXPECT(c, rc == BAND_EAGAIN || rc == BAND_ECLOSED);
    EXPECT(c, chan_stats(c->chan).reserved == 0);
    return 0;
}

static band_waiter *send_prepare(struct pcase *c)
{
    c->val = PCASE_VALUE;
    return &c->send.w;
}

static int send_submit(struct pcase *c)
{
    return band_chan_send_async(c->chan, &c->val, 3, &c->send);
}

static int send_granted(struct pcase *c)
{
    return chan_holds(c, PCASE_VALUE);
}

static int send_nothing(struct pcase *c)
{
    return chan_holds(c, PCASE_FILLER); /* the element never entered */
}

static const struct pcase_ops case_chan_send = {
    "chan_send",  chan_setup_full, send_prepare, send_submit,  chan_take_filler, chan_close,
    BAND_ECLOSED, chan_waiting,    send_granted, send_nothing, chan_teardown,
};

static band_waiter *recv_prepare(struct pcase *c)
{
    c->out = PCASE_SENTINEL;
    c->recv.bytes = 0;
    return &c->recv.w;
}

static int recv_submit(struct pcase *c)
{
    return band_chan_recv_async(c->chan, &c->out, &c->recv);
}

static int recv_complete(struct pcase *c)
{
    uint64_t v = PCASE_VALUE;
    return band_chan_try_send(c->chan, &v, 3);
}

static int recv_granted(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_VALUE);
    EXPECT(c, c->recv.bytes == 3);
    return chan_holds(c, 0);
}

static int recv_nothing(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_SENTINEL);
    return chan_holds(c, 0);
}

static const struct pcase_ops case_chan_recv = {
    "chan_recv",  chan_setup_empty, recv_prepare, recv_submit,  recv_complete, chan_close,
    BAND_ECLOSED, chan_waiting,     recv_granted, recv_nothing, chan_teardown,
};

static band_waiter *reserve_prepare(struct pcase *c)
{
    return &c->reserve.w;
}

static int reserve_submit(struct pcase *c)
{
    return band_chan_reserve_async(c->chan, 3, &c->reserve);
}

static int reserve_granted(struct pcase *c)
{
    EXPECT(c, chan_stats(c->chan).reserved == 1);
    uint64_t v = PCASE_VALUE;
    EXPECT(c, band_chan_slot_send(&c->reserve.slot, &v) == 0);
    return chan_holds(c, PCASE_VALUE);
}

static const struct pcase_ops case_chan_reserve = {
    "chan_reserve", chan_setup_full, reserve_prepare, reserve_submit, chan_take_filler, chan_close,
    BAND_ECLOSED,   chan_waiting,    reserve_granted, send_nothing,   chan_teardown,
};

/* ---- oneshot: receive the value ---------------------------------------------------------- */

static int os_setup(struct pcase *c, int ready)
{
    if (band_oneshot_create(&c->oneshot, sizeof(uint64_t)) != 0)
        return -1;
    uint64_t v = PCASE_VALUE;
    return ready ? band_oneshot_send(c->oneshot, &v) : 0;
}

static band_waiter *os_prepare(struct pcase *c)
{
    c->out = PCASE_SENTINEL;
    return &c->os.w;
}

static int os_submit(struct pcase *c)
{
    return band_oneshot_recv_async(c->oneshot, &c->out, &c->os);
}

static int os_complete(struct pcase *c)
{
    uint64_t v = PCASE_VALUE;
    return band_oneshot_send(c->oneshot, &v);
}

static int os_close(struct pcase *c)
{
    return band_oneshot_close(c->oneshot);
}

static uint64_t os_waiting(struct pcase *c)
{
    band_oneshot_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_oneshot_get_stats(c->oneshot, &st);
    return (uint64_t)st.waiting;
}

static int os_granted(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_VALUE);
    uint64_t v;
    EXPECT(c, band_oneshot_try_recv(c->oneshot, &v) == BAND_EALREADY); /* taken once */
    return 0;
}

static int os_nothing(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_SENTINEL);
    return 0;
}

static void os_teardown(struct pcase *c)
{
    band_oneshot_receiver_drop(c->oneshot);
    band_oneshot_destroy(c->oneshot);
}

static const struct pcase_ops case_oneshot = {
    "oneshot",    os_setup,   os_prepare, os_submit,  os_complete, os_close,
    BAND_ECLOSED, os_waiting, os_granted, os_nothing, os_teardown,
};

/* ---- watch: wait for the next version ------------------------------------------------------ */

static int watch_setup(struct pcase *c, int ready)
{
    uint64_t zero = 0, v = PCASE_VALUE;
    if (band_watch_create(&c->watch, sizeof(uint64_t), &zero) != 0 ||
        band_watch_rx_init(&c->wrx, c->watch) != 0)
        return -1;
    return ready ? band_watch_send(c->watch, &v) : 0;
}

static band_waiter *watch_prepare(struct pcase *c)
{
    c->out = PCASE_SENTINEL;
    return &c->wc.w;
}

static int watch_submit(struct pcase *c)
{
    return band_watch_recv_async(&c->wrx, &c->out, &c->wc);
}

static int watch_complete(struct pcase *c)
{
    uint64_t v = PCASE_VALUE;
    return band_watch_send(c->watch, &v);
}

static int watch_close(struct pcase *c)
{
    return band_watch_close(c->watch);
}

static uint64_t watch_waiting(struct pcase *c)
{
    band_watch_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_watch_get_stats(c->watch, &st);
    return st.waiters;
}

static int watch_granted(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_VALUE);
    EXPECT(c, c->wc.version == 1);
    EXPECT(c, band_watch_rx_seen(&c->wrx) == 1);
    return 0;
}

static int watch_nothing(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_SENTINEL);
    EXPECT(c, band_watch_rx_seen(&c->wrx) == 0);
    return 0;
}

static void watch_teardown(struct pcase *c)
{
    band_watch_close(c->watch);
    band_watch_destroy(c->watch);
}

static const struct pcase_ops case_watch = {
    "watch",      watch_setup,   watch_prepare, watch_submit,  watch_complete, watch_close,
    BAND_ECLOSED, watch_waiting, watch_granted, watch_nothing, watch_teardown,
};

/* ---- broadcast (lossless, one subscriber): send into a full ring, receive -------------- */

static int bc_open(struct pcase *c)
{
    band_broadcast_rx_init(&c->brx);
    if (band_broadcast_create(&c->bc, sizeof(uint64_t), 1, BAND_BROADCAST_LOSSLESS) != 0)
        return -1;
    return band_broadcast_subscribe(c->bc, &c->brx);
}

static int bcs_setup(struct pcase *c, int ready)
{
    uint64_t v = PCASE_FILLER;
    if (bc_open(c) != 0)
        return -1;
    return ready ? 0 : band_broadcast_try_send(c->bc, &v);
}

static int bcr_setup(struct pcase *c, int ready)
{
    uint64_t v = PCASE_VALUE;
    if (bc_open(c) != 0)
        return -1;
    return ready ? band_broadcast_try_send(c->bc, &v) : 0;
}

static int bc_close(struct pcase *c)
{
    return band_broadcast_close(c->bc);
}

static uint64_t bc_waiting(struct pcase *c)
{
    band_broadcast_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_broadcast_get_stats(c->bc, &st);
    return st.waiting_senders + st.waiting_receivers;
}

/* What the subscriber reads now: @first (or nothing with 0), then nothing else. */
static int bc_holds(struct pcase *c, uint64_t first)
{
    uint64_t v = 0;
    if (first != 0) {
        EXPECT(c, band_broadcast_try_recv(&c->brx, &v) == 0);
        EXPECT(c, v == first);
    }
    int rc = band_broadcast_try_recv(&c->brx, &v);
    EXPECT(c, rc == BAND_EAGAIN || rc == BAND_ECLOSED);
    return 0;
}

static void bc_teardown(struct pcase *c)
{
    band_broadcast_close(c->bc);
    band_broadcast_unsubscribe(&c->brx);
    band_broadcast_destroy(c->bc);
}

static band_waiter *bcs_prepare(struct pcase *c)
{
    c->val = PCASE_VALUE;
    return &c->bsend.w;
}

static int bcs_submit(struct pcase *c)
{
    return band_broadcast_send_async(c->bc, &c->val, &c->bsend);
}

static int bcs_complete(struct pcase *c)
{
    uint64_t v = 0;
    if (band_broadcast_try_recv(&c->brx, &v) != 0 || v != PCASE_FILLER)
        return -1;
    return 0;
}

static int bcs_granted(struct pcase *c)
{
    return bc_holds(c, PCASE_VALUE);
}

static int bcs_nothing(struct pcase *c)
{
    return bc_holds(c, PCASE_FILLER);
}

static const struct pcase_ops case_bc_send = {
    "broadcast_send", bcs_setup,  bcs_prepare, bcs_submit,  bcs_complete, bc_close,
    BAND_ECLOSED,     bc_waiting, bcs_granted, bcs_nothing, bc_teardown,
};

static band_waiter *bcr_prepare(struct pcase *c)
{
    c->out = PCASE_SENTINEL;
    return &c->brecv.w;
}

static int bcr_submit(struct pcase *c)
{
    return band_broadcast_recv_async(&c->brx, &c->out, &c->brecv);
}

static int bcr_complete(struct pcase *c)
{
    uint64_t v = PCASE_VALUE;
    return band_broadcast_try_send(c->bc, &v);
}

static int bcr_granted(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_VALUE);
    EXPECT(c, c->brecv.lagged == 0);
    return bc_holds(c, 0);
}

static int bcr_nothing(struct pcase *c)
{
    EXPECT(c, c->out == PCASE_SENTINEL);
    return bc_holds(c, 0);
}

static const struct pcase_ops case_bc_recv = {
    "broadcast_recv", bcr_setup,  bcr_prepare, bcr_submit,  bcr_complete, bc_close,
    BAND_ECLOSED,     bc_waiting, bcr_granted, bcr_nothing, bc_teardown,
};

/* ---- wait group and latch: one task outstanding (none when ready) ----------------------- */

static int group_setup(struct pcase *c, int ready)
{
    if (band_group_create(&c->group) != 0)
        return -1;
    return ready ? 0 : band_group_add(c->group, 1);
}

static int group_submit(struct pcase *c)
{
    return band_group_wait_async(c->group, &c->w);
}

static int group_complete(struct pcase *c)
{
    return band_group_done(c->group);
}

static uint64_t group_waiting(struct pcase *c)
{
    band_group_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_group_get_stats(c->group, &st);
    return st.waiters;
}

static int group_granted(struct pcase *c)
{
    EXPECT(c, band_group_count(c->group) == 0);
    return 0;
}

static int group_nothing(struct pcase *c)
{
    EXPECT(c, band_group_count(c->group) == 1);
    return 0;
}

static void group_teardown(struct pcase *c)
{
    if (band_group_count(c->group) > 0)
        band_group_done(c->group);
    band_group_destroy(c->group);
}

static const struct pcase_ops case_group = {
    "group", group_setup,   plain_prepare, group_submit,  group_complete, NULL,
    0,       group_waiting, group_granted, group_nothing, group_teardown,
};

static int latch_setup(struct pcase *c, int ready)
{
    return band_latch_create(&c->latch, ready ? 0 : 1) == 0 ? 0 : -1;
}

static int latch_submit(struct pcase *c)
{
    return band_latch_wait_async(c->latch, &c->w);
}

static int latch_complete(struct pcase *c)
{
    return band_latch_count_down(c->latch, 1);
}

static uint64_t latch_waiting(struct pcase *c)
{
    band_latch_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_latch_get_stats(c->latch, &st);
    return st.waiters;
}

static int latch_granted(struct pcase *c)
{
    EXPECT(c, band_latch_count(c->latch) == 0);
    return 0;
}

static int latch_nothing(struct pcase *c)
{
    EXPECT(c, band_latch_count(c->latch) == 1);
    return 0;
}

static void latch_teardown(struct pcase *c)
{
    band_latch_destroy(c->latch);
}

static const struct pcase_ops case_latch = {
    "latch", latch_setup,   plain_prepare, latch_submit,  latch_complete, NULL,
    0,       latch_waiting, latch_granted, latch_nothing, latch_teardown,
};

/* ---- shutdown scope: wait for the request; wait for the drain --------------------------- */

static uint64_t shutdown_waiting(struct pcase *c)
{
    band_shutdown_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_shutdown_get_stats(c->shutdown, &st);
    return st.waiting_requested + st.waiting_drained;
}

static void shutdown_teardown(struct pcase *c)
{
    band_shutdown_request(c->shutdown, BAND_ECANCELED);
    while (band_shutdown_participants(c->shutdown) > 0)
        band_shutdown_leave(c->shutdown);
    band_shutdown_destroy(c->shutdown);
}

static int treq_setup(struct pcase *c, int ready)
{
    if (band_shutdown_create(&c->shutdown) != 0)
        return -1;
    return ready ? band_shutdown_request(c->shutdown, BAND_ECANCELED) : 0;
}

static int treq_submit(struct pcase *c)
{
    return band_shutdown_wait_requested_async(c->shutdown, &c->w);
}

static int treq_complete(struct pcase *c)
{
    return band_shutdown_request(c->shutdown, BAND_ECANCELED);
}

static int treq_granted(struct pcase *c)
{
    EXPECT(c, band_shutdown_is_requested(c->shutdown) == 1);
    EXPECT(c, band_shutdown_reason(c->shutdown) == BAND_ECANCELED);
    return 0;
}

static int treq_nothing(struct pcase *c)
{
    EXPECT(c, band_shutdown_is_requested(c->shutdown) == 0);
    return 0;
}

static const struct pcase_ops case_shutdown_requested = {
    "shutdown_requested", treq_setup,   plain_prepare, treq_submit,       treq_complete, NULL, 0,
    shutdown_waiting,     treq_granted, treq_nothing,  shutdown_teardown,
};

static int tdrain_setup(struct pcase *c, int ready)
{
    if (band_shutdown_create(&c->shutdown) != 0)
        return -1;
    if (!ready && band_shutdown_join(c->shutdown) != 0)
        return -1;
    return band_shutdown_request(c->shutdown, BAND_ECANCELED);
}

static int tdrain_submit(struct pcase *c)
{
    return band_shutdown_wait_drained_async(c->shutdown, &c->w);
}

static int tdrain_complete(struct pcase *c)
{
    return band_shutdown_leave(c->shutdown);
}

static int tdrain_granted(struct pcase *c)
{
    EXPECT(c, band_shutdown_participants(c->shutdown) == 0);
    return 0;
}

static int tdrain_nothing(struct pcase *c)
{
    EXPECT(c, band_shutdown_participants(c->shutdown) == 1);
    return 0;
}

static const struct pcase_ops case_shutdown_drained = {
    "shutdown_drained", tdrain_setup,   plain_prepare,  tdrain_submit,     tdrain_complete, NULL, 0,
    shutdown_waiting,   tdrain_granted, tdrain_nothing, shutdown_teardown,
};

/* ---- fair share: capacity 1, held by key 1 (free when ready); key 2 asks --------------- */

static int fair_setup(struct pcase *c, int ready)
{
    if (band_fair_create(&c->fair, 1, NULL) != 0)
        return -1;
    return ready ? 0 : band_fair_try_acquire(c->fair, 1, 0, 1);
}

static band_waiter *fair_prepare(struct pcase *c)
{
    return &c->freq.w;
}

static int fair_submit(struct pcase *c)
{
    return band_fair_acquire_async(c->fair, 2, 0, 1, &c->freq);
}

static int fair_complete(struct pcase *c)
{
    return band_fair_release(c->fair, 1, 1);
}

static int fair_close(struct pcase *c)
{
    return band_fair_close(c->fair);
}

static band_fair_stats fair_stats(const band_fair *f)
{
    band_fair_stats st;
    memset(&st, 0, sizeof(st));
    (void)band_fair_get_stats(f, &st);
    return st;
}

static uint64_t fair_waiting(struct pcase *c)
{
    return fair_stats(c->fair).waiters;
}

static int fair_granted(struct pcase *c)
{
    EXPECT(c, fair_stats(c->fair).in_use == 1);
    EXPECT(c, band_fair_release(c->fair, 2, 1) == 0); /* key 2 holds the unit */
    EXPECT(c, fair_stats(c->fair).in_use == 0);
    return 0;
}

static int fair_nothing(struct pcase *c)
{
    EXPECT(c, band_fair_release(c->fair, 2, 1) == BAND_EINVAL); /* key 2 holds nothing */
    EXPECT(c, band_fair_release(c->fair, 1, 1) == 0);
    EXPECT(c, fair_stats(c->fair).in_use == 0);
    return 0;
}

static void fair_teardown(struct pcase *c)
{
    band_fair_close(c->fair);
    band_fair_destroy(c->fair);
}

static const struct pcase_ops case_fair = {
    "fair",       fair_setup,   fair_prepare, fair_submit,  fair_complete, fair_close,
    BAND_ECLOSED, fair_waiting, fair_granted, fair_nothing, fair_teardown,
};

/* ---- admission: one unit of A (free) and one of B (empty; free when ready) -------------- */

static int admit_setup(struct pcase *c, int ready)
{
    if (band_sem_create(&c->sem, 1, NULL) != 0 ||
        band_sem_create(&c->sem2, ready ? 1 : 0, NULL) != 0)
        return -1;
    return 0;
}

static band_waiter *admit_prepare(struct pcase *c)
{
    band_admit_req_init(&c->areq, NULL, NULL);
    if (band_admit_req_add(&c->areq, c->sem, 1) != 0 ||
        band_admit_req_add(&c->areq, c->sem2, 1) != 0)
        return NULL;
    return &c->areq.w;
}

static int admit_submit(struct pcase *c)
{
    return band_admit_acquire_async(&c->areq);
}

static int admit_complete(struct pcase *c)
{
    return band_sem_release(c->sem2, 1);
}

static int admit_close(struct pcase *c)
{
    return band_sem_close(c->sem2);
}

static uint64_t admit_waiting(struct pcase *c)
{
    return sem_stats(c->sem).waiters + sem_stats(c->sem2).waiters;
}

static int admit_granted(struct pcase *c)
{
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    EXPECT(c, band_admit_req_grant(&c->areq, &g) == 0);
    EXPECT(c, g.n == 2);
    EXPECT(c, band_sem_available(c->sem) == 0 && band_sem_available(c->sem2) == 0);
    EXPECT(c, band_admit_release(&g) == 0);
    EXPECT(c, band_sem_available(c->sem) == 1 && band_sem_available(c->sem2) == 1);
    return 0;
}

static int admit_nothing(struct pcase *c)
{
    EXPECT(c, band_sem_available(c->sem) == 1); /* nothing held back for the request */
    EXPECT(c, band_sem_available(c->sem2) == 0);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    EXPECT(c, band_admit_req_grant(&c->areq, &g) == BAND_EINVAL);
    return 0;
}

static void admit_teardown(struct pcase *c)
{
    band_sem_close(c->sem);
    band_sem_close(c->sem2);
    band_sem_destroy(c->sem);
    band_sem_destroy(c->sem2);
}

static const struct pcase_ops case_admit = {
    "admit",      admit_setup,   admit_prepare, admit_submit,  admit_complete, admit_close,
    BAND_ECLOSED, admit_waiting, admit_granted, admit_nothing, admit_teardown,
};

/* ---------------------------------------------------------------------------------------- */

const struct pcase_ops *const pcase_all[] = {
    &case_sem,
    &case_budget,
    &case_chan_send,
    &case_chan_recv,
    &case_chan_reserve,
    &case_oneshot,
    &case_watch,
    &case_bc_send,
    &case_bc_recv,
    &case_group,
    &case_latch,
    &case_shutdown_requested,
    &case_shutdown_drained,
    &case_fair,
    &case_admit,
};
const size_t pcase_count = sizeof(pcase_all) / sizeof(pcase_all[0]);

int pcase_open(struct pcase *c, const struct pcase_ops *ops, int ready)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->ready = ready;
    if (ops->setup(c, ready) != 0)
        return fail(c, "setup failed");
    return 0;
}

int pcase_check(struct pcase *c, int status)
{
    if (c->ops->waiting(c) != 0)
        return fail(c, "an operation is still queued on the primitive");
    return status == 0 ? c->ops->check_granted(c) : c->ops->check_nothing(c);
}

void pcase_close(struct pcase *c)
{
    c->ops->teardown(c);
}
