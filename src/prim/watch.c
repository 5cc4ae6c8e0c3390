/* SPDX-License-Identifier: MIT */
/*
 * watch.c - the latest value with a version, for any number of receivers.
 *
 * Design notes
 * ------------
 * State. One atomic word, st = writes << 3 | CLOSED | WAITERS | WRITING, where writes
 * counts the sends accepted so far. The value lives in two buffers: write k fills buffer
 * k & 1, so the value of the newest write (writes & 1) is never the one being written.
 * Each buffer carries the version of its value (ver[]). The lock guards only the queue
 * of waiting receivers and its counters.
 *
 * Sends. A send claims WRITING by a CAS (which also refuses atomically after CLOSED), fills
 * the other buffer and its version with relaxed atomic stores after a release fence, and
 * publishes with one RMW that adds a write and clears WRITING (release). Sends exclude each
 * other through WRITING (a second sender spins, yielding after a while); none takes the
 * lock unless the publishing RMW finds WAITERS set.
 *
 * Reads (try_recv, read, rx_read, version) never lock and never wait for a sender: they
 * load st (acquire), copy buffer writes & 1 with relaxed atomic loads, then check after an
 * acquire fence that no send has started to overwrite that buffer (that is write + 2, which
 * starts after write + 1 was published: the copy is good unless st moved a write and a
 * half). So a stalled sender never holds readers up; a reader retries only when two sends
 * overtook its copy. The copies are word-wise atomic accesses, so a racing reader reads
 * stale words rather than racing in the C memory model, and discards them.
 *
 * Cursors. A band_watch_rx is caller memory that the watch does not know about. Its seen
 * version moves only forward and by a CAS, so of several calls racing on one cursor one
 * takes a version; its pending-op pointer is written under the lock.
 *
 * Waiting. A receive that finds nothing new queues under the lock, sets WAITERS with an
 * RMW on st, and then looks once more: a send that published before that RMW is seen by
 * the second look (the receive completes at once), and a send that publishes after it sees
 * WAITERS and takes the lock to deliver. Under the lock a send (or close) completes every
 * queued op whose cursor has not seen the newest version, copying that value in, and
 * clears WAITERS once the queue is empty. WAITERS changes only under the lock.
 *
 * Close takes WRITING itself before it sets CLOSED, so no send is in flight when it looks at
 * the queue: a queued op then either gets the last value (a send published it but had not
 * yet delivered) or ends with BAND_ECLOSED, and no value can follow a BAND_ECLOSED.
 *
 * Skipping. A receiver always gets the value current when its wait completes; versions
 * sent while it was not waiting are never stored anywhere, so a slow receiver skips them
 * and memory stays two values whatever the rate of sends.
 *
 * Wakes. Completed ops go on a local wake list and are woken after unlocking; the next
 * pointer is read before each wake (a wake may free or resubmit its op).
 *
 * The blocking wait keeps its op and a parker on the caller's stack (struct
 * watch_blocker): the core's band__blocker has no room for the cursor and output buffer
 * every queued op here must carry, so this file pairs the op with a parker itself, with
 * the same timeout rule (cancel at the deadline; if the cancel loses, wait for the wake).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "band/watch.h"
#include "core/block.h"
#include "core/internal.h"
#include "core/parker.h"
#include "core/waitq.h"
#include "prim/sync_internal.h"

enum {
    W_WRITING = 1,
    W_WAITERS = 2,
    W_CLOSED = 4,
    W_ONE = 8, /* one accepted send */
};

struct band_watch {
    _Atomic uint64_t st; /* writes << 3 | W_CLOSED | W_WAITERS | W_WRITING */
    uint64_t ver[2];     /* version of each buffer's value; atomic accesses */
    size_t value_size;
    size_t words; /* 8-byte words per buffer */
    _Atomic uint64_t refused, delivered;
    pthread_mutex_t lock; /* guards q and the counters below */
    struct band__waitq q; /* waiting receivers (band_watch_recv_op) */
    uint64_t queued, timeouts, cancels, closed_fails;
    uint64_t buf[]; /* 2 * words; atomic accesses */
};

static void watch_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl);

static const struct band__waitq_ops watch_waitq_ops = {watch_cancel_locked};

/* Cursor fields: read anywhere, seen moved by CAS. */
static uint64_t rx_seen(const band_watch_rx *rx)
{
    return __atomic_load_n(&rx->_seen, __ATOMIC_ACQUIRE);
}

static bool rx_cas_seen(band_watch_rx *rx, uint64_t *seen, uint64_t v)
{
    uint64_t cur = *seen;
    bool ok =
        __atomic_compare_exchange_n(&rx->_seen, &cur, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    *seen = cur;
    return ok;
}

static void *rx_op(const band_watch_rx *rx)
{
    return __atomic_load_n(&rx->_op, __ATOMIC_ACQUIRE);
}

static void rx_set_op(band_watch_rx *rx, void *op)
{
    __atomic_store_n(&rx->_op, op, __ATOMIC_RELEASE);
}

/* Copy @n bytes from @src into the buffer @dst, word by word (relaxed atomic stores). */
static void buf_store(uint64_t *dst, const void *src, size_t n)
{
    if (src == NULL)
        return;
    const unsigned char *p = src;
    for (; n >= 8; n -= 8, p += 8, dst++) {
        uint64_t x;
        memcpy(&x, p, 8);
        __atomic_store_n(dst, x, __ATOMIC_RELAXED);
    }
    if (n > 0) {
        uint64_t x = 0;
        memcpy(&x, p, n);
        __atomic_store_n(dst, x, __ATOMIC_RELAXED);
    }
}

/* Copy @n bytes of the buffer @src to @dst (relaxed atomic loads); nothing for NULL. */
static void buf_load(void *dst, const uint64_t *src, size_t n)
{
    if (dst == NULL)
        return;
    unsigned char *p = dst;
    for (; n >= 8; n -= 8, p += 8, src++) {
        uint64_t x = __atomic_load_n(src, __ATOMIC_RELAXED);
        memcpy(p, &x, 8);
    }
    if (n > 0) {
        uint64_t x = __atomic_load_n(src, __ATOMIC_RELAXED);
        memcpy(p, &x, n);
    }
}

/*
 * Copy the newest published value to @out (may be NULL) and return its version; *@stp gets
 * the state word it belongs to. Lock-free; retries only when two sends overtook the copy.
 */
static uint64_t watch_snapshot(band_watch *w, void *out, uint64_t *stp)
{
    for (;;) {
        uint64_t s1 = atomic_load_explicit(&w->st, memory_order_acquire);
        uint64_t n = s1 >> 3;
        size_t i = (size_t)(n & 1);
        uint64_t v = __atomic_load_n(&w->ver[i], __ATOMIC_RELAXED);
        buf_load(out, w->buf + i * w->words, w->value_size);
        atomic_thread_fence(memory_order_acquire);
        uint64_t s2 = atomic_load_explicit(&w->st, memory_order_relaxed);
        uint64_t n2 = s2 >> 3;
        if (n2 == n || (n2 == n + 1 && !(s2 & W_WRITING))) {
            *stp = s1;
            return v;
        }
    }
}

/* Claim WRITING unless the watch is closed. Returns the state before the claim (with
 * W_CLOSED set and nothing claimed when closed). Spins while another send writes. */
static uint64_t watch_claim(band_watch *w)
{
    unsigned spins = 0;
    uint64_t s = atomic_load_explicit(&w->st, memory_order_relaxed);
    for (;;) {
        if (s & W_CLOSED)
            return s;
        if (s & W_WRITING) {
            band__backoff(&spins);
            s = atomic_load_explicit(&w->st, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&w->st, &s, s | W_WRITING, memory_order_acquire,
                                                  memory_order_relaxed)) {
            /* Orders the claim before the buffer stores (seqlock writer). */
            atomic_thread_fence(memory_order_release);
            return s;
        }
    }
}

/* ---------------------------------------------------------------- lifecycle */

int band_watch_create(band_watch **out, size_t value_size, const void *initial)
{
    if (out == NULL)
        return BAND_EINVAL;
    size_t words = value_size / 8 + (value_size % 8 != 0);
    if (value_size > SIZE_MAX - 8 || words > (SIZE_MAX - sizeof(band_watch)) / 16)
        return BAND_ENOMEM;
    band_watch *w = calloc(1, sizeof(*w) + words * 16);
    if (w == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return BAND_ENOMEM;
    }
    atomic_init(&w->st, 0);
    atomic_init(&w->refused, 0);
    atomic_init(&w->delivered, 0);
    band__waitq_init(&w->q, &w->lock, &watch_waitq_ops);
    w->value_size = value_size;
    w->words = words;
    if (value_size > 0 && initial != NULL)
        buf_store(w->buf, initial, value_size);
    *out = w;
    return 0;
}

int band_watch_destroy(band_watch *w)
{
    if (w == NULL)
        return 0;
    pthread_mutex_lock(&w->lock);
    uint64_t waiting = w->q.len;
    pthread_mutex_unlock(&w->lock);
    if (waiting > 0)
        return BAND_EBUSY;
    pthread_mutex_destroy(&w->lock);
    free(w);
    return 0;
}

/* ---------------------------------------------------------------- helpers */

static band_watch_recv_op *op_of(band_waiter *wt)
{
    return band__container_of(wt, band_watch_recv_op, w);
}

/* Clear WAITERS once nobody is queued (lock held). */
static void watch_sync_waiters_locked(band_watch *w)
{
    if (w->q.len == 0)
        atomic_fetch_and_explicit(&w->st, ~(uint64_t)W_WAITERS, memory_order_relaxed);
}

/* Withdraw a waiting receiver (queue op, called by band_waiter_cancel() with the lock
 * held). Its cursor is unchanged: it saw nothing new. */
static void watch_cancel_locked(struct band__waitq *q, band_waiter *wt, int reason,
                                struct band__wakelist *wl)
{
    (void)wl;
    band_watch *w = band__container_of(q, band_watch, q);
    band_watch_recv_op *op = op_of(wt);
    band__waitq_unlink_locked(q, wt);
    rx_set_op(op->rx, NULL);
    if (reason == BAND_ETIMEDOUT)
        w->timeouts++;
    else
        w->cancels++;
    watch_sync_waiters_locked(w);
}

/*
 * The attempt every receive shares: 0 (a newer version was copied to @out and marked seen;
 * *@version set when non-NULL), BAND_EAGAIN (nothing new: the caller may queue), or a final
 * code. Lock-free.
 */
static int watch_take(band_watch *w, band_watch_rx *rx, void *out, uint64_t *version)
{
    if (rx_op(rx) != NULL)
        return BAND_EBUSY;
    uint64_t seen = rx_seen(rx);
    /* "Nothing new" without copying: a buffer's version only grows, so reading ver[] after
     * the state can only make it look newer than the state it belongs to. */
    uint64_t s = atomic_load_explicit(&w->st, memory_order_acquire);
    if (__atomic_load_n(&w->ver[(s >> 3) & 1], __ATOMIC_RELAXED) == seen)
        return (s & W_CLOSED) ? BAND_ECLOSED : BAND_EAGAIN;
    for (;;) {
        /* Newer than seen: ver[] was at least the version of the state read above, and if
         * it was newer, that version was already replaced. So @out is written only for an
         * answer of 0 (or by a call that lost the race for a version on a shared cursor). */
        uint64_t v = watch_snapshot(w, out, &s);
        if (v != seen && rx_cas_seen(rx, &seen, v)) {
            atomic_fetch_add_explicit(&w->delivered, 1, memory_order_relaxed);
            if (version != NULL)
                *version = v;
            return 0;
        }
        /* Another call on this cursor took a version meanwhile: look again, without
         * copying. */
        if (watch_snapshot(w, NULL, &s) == seen)
            return (s & W_CLOSED) ? BAND_ECLOSED : BAND_EAGAIN;
    }
}

/*
 * Complete every queued op whose cursor has not seen the newest version, with that value
 * (lock held). With @closed, the others end with BAND_ECLOSED. Clears WAITERS when the
 * queue is left empty.
 */
static void watch_deliver_locked(band_watch *w, bool closed, struct band__wakelist *wl)
{
    struct band__node *n = w->q.head.next;
    while (n != &w->q.head) {
        struct band__node *next = n->next;
        band_waiter *wt = band__waiter_of(n);
        band_watch_recv_op *op = op_of(wt);
        uint64_t seen = rx_seen(op->rx);
        for (;;) {
            uint64_t s;
            if (watch_snapshot(w, NULL, &s) == seen) {
                if (closed) {
                    band__waitq_unlink_locked(&w->q, wt);
                    rx_set_op(op->rx, NULL);
                    w->closed_fails++;
                    band__waiter_complete_locked(wt, BAND_ECLOSED, wl);
                }
                break; /* queued after this version: it waits for the next */
            }
            uint64_t v = watch_snapshot(w, op->out, &s);
            if (rx_cas_seen(op->rx, &seen, v)) {
                band__waitq_unlink_locked(&w->q, wt);
                op->version = v;
                rx_set_op(op->rx, NULL);
                atomic_fetch_add_explicit(&w->delivered, 1, memory_order_relaxed);
                band__waiter_complete_locked(wt, 0, wl);
                break;
            }
        }
        n = next;
    }
    watch_sync_waiters_locked(w);
}

/* ---------------------------------------------------------------- sender side */

int band_watch_send(band_watch *w, const void *value)
{
    if (w == NULL || (value == NULL && w->value_size > 0))
        return BAND_EINVAL;
    uint64_t s = watch_claim(w);
    if (s & W_CLOSED) {
        atomic_fetch_add_explicit(&w->refused, 1, memory_order_relaxed);
        return BAND_ECLOSED;
    }
    uint64_t n = s >> 3;
    uint64_t v = __atomic_load_n(&w->ver[n & 1], __ATOMIC_RELAXED);
    if (v == UINT64_MAX) {
        atomic_fetch_and_explicit(&w->st, ~(uint64_t)W_WRITING, memory_order_release);
        return BAND_EOVERFLOW;
    }
    size_t j = (size_t)((n + 1) & 1);
    __atomic_store_n(&w->ver[j], v + 1, __ATOMIC_RELAXED);
    if (w->value_size > 0)
        buf_store(w->buf + j * w->words, value, w->value_size);
    uint64_t old =
        atomic_fetch_add_explicit(&w->st, (uint64_t)W_ONE - W_WRITING, memory_order_acq_rel);
    if (old & W_WAITERS) {
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&w->lock);
        watch_deliver_locked(w, false, &wl);
        pthread_mutex_unlock(&w->lock);
        band__wakelist_run(&wl);
    }
    return 0;
}

int band_watch_close(band_watch *w)
{
    if (w == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&w->lock);
    /* No send can be in flight once we hold WRITING; none can start after CLOSED. A send
     * that published and is waiting for this lock to deliver finds nothing left to do. */
    uint64_t s = watch_claim(w);
    if (!(s & W_CLOSED)) {
        atomic_fetch_xor_explicit(&w->st, (uint64_t)W_WRITING | W_CLOSED, memory_order_acq_rel);
        watch_deliver_locked(w, true, &wl);
    }
    pthread_mutex_unlock(&w->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_watch_is_closed(const band_watch *w)
{
    if (w == NULL)
        return 0;
    return (atomic_load_explicit(&((band_watch *)w)->st, memory_order_acquire) & W_CLOSED) != 0;
}

/* ---------------------------------------------------------------- reading */

int band_watch_read(band_watch *w, void *out, uint64_t *version)
{
    if (w == NULL)
        return BAND_EINVAL;
    uint64_t s;
    uint64_t v = watch_snapshot(w, out, &s);
    if (version != NULL)
        *version = v;
    return 0;
}

uint64_t band_watch_version(const band_watch *w)
{
    if (w == NULL)
        return 0;
    uint64_t s;
    return watch_snapshot((band_watch *)w, NULL, &s);
}

/* ---------------------------------------------------------------- cursors */

int band_watch_rx_init(band_watch_rx *rx, band_watch *w)
{
    if (rx == NULL || w == NULL)
        return BAND_EINVAL;
    rx->_watch = w;
    rx_set_op(rx, NULL);
    __atomic_store_n(&rx->_seen, band_watch_version(w), __ATOMIC_RELEASE);
    return 0;
}

uint64_t band_watch_rx_seen(const band_watch_rx *rx)
{
    return rx == NULL ? 0 : rx_seen(rx);
}

int band_watch_rx_read(band_watch_rx *rx, void *out, uint64_t *version)
{
    if (rx == NULL || rx->_watch == NULL)
        return BAND_EINVAL;
    if (rx_op(rx) != NULL)
        return BAND_EBUSY;
    uint64_t s;
    uint64_t v = watch_snapshot(rx->_watch, out, &s);
    uint64_t seen = rx_seen(rx);
    while (seen < v && !rx_cas_seen(rx, &seen, v)) {
    }
    if (version != NULL)
        *version = v;
    return 0;
}

int band_watch_mark_seen(band_watch_rx *rx)
{
    return band_watch_rx_read(rx, NULL, NULL);
}

/* ---------------------------------------------------------------- waiting for a change */

int band_watch_try_recv(band_watch_rx *rx, void *out)
{
    if (rx == NULL || rx->_watch == NULL)
        return BAND_EINVAL;
    return watch_take(rx->_watch, rx, out, NULL);
}

/* Take a newer version now, or queue @op (whose rx and out are set). */
static int watch_enqueue(band_watch *w, band_watch_recv_op *op)
{
    int rc = watch_take(w, op->rx, op->out, &op->version);
    if (rc == BAND_EAGAIN) {
        pthread_mutex_lock(&w->lock);
        /* Announce the wait, then look again: a send published before the announcement is
         * seen here; one published after it sees WAITERS and delivers under the lock. */
        atomic_fetch_or_explicit(&w->st, (uint64_t)W_WAITERS, memory_order_acq_rel);
        rc = watch_take(w, op->rx, op->out, &op->version);
        if (rc == BAND_EAGAIN) {
            band__waitq_push_locked(&w->q, &op->w, 1, 0);
            rx_set_op(op->rx, op);
            w->queued++;
            rc = BAND_PENDING;
        } else {
            watch_sync_waiters_locked(w);
        }
        pthread_mutex_unlock(&w->lock);
    }
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

int band_watch_recv_async(band_watch_rx *rx, void *out, band_watch_recv_op *op)
{
    if (rx == NULL || rx->_watch == NULL || op == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc; /* @op may be someone's pending operation: leave it alone */
    op->rx = rx;
    op->out = out;
    return watch_enqueue(rx->_watch, op);
}

/* A blocking wait: the op and the parker that its wake unparks, on the caller's stack. */
struct watch_blocker {
    band_watch_recv_op op;
    struct band__parker parker;
};

static void watch_blocker_wake(band_waiter *wt)
{
    struct watch_blocker *b = band__container_of(wt, struct watch_blocker, op.w);
    band__parker_unpark(&b->parker);
}

int band_watch_recv(band_watch_rx *rx, void *out, band_time deadline, band_cancel *cancel)
{
    int rc = band_watch_try_recv(rx, out);
    if (rc != BAND_EAGAIN)
        return rc;
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0)
        return refusal;

    struct watch_blocker b;
    band_waiter_init(&b.op.w, watch_blocker_wake, NULL);
    b.op.w.deadline = deadline;
    b.op.rx = rx;
    b.op.out = out;
    b.op.version = 0;
    band__parker_init(&b.parker);
    rc = watch_enqueue(rx->_watch, &b.op);
    if (rc == BAND_PENDING)
        rc = band__block(&b.op.w, &b.parker, deadline, cancel);
    band__parker_destroy(&b.parker);
    return rc;
}

/* ---------------------------------------------------------------- observability */

int band_watch_get_stats(const band_watch *cw, band_watch_stats *out)
{
    if (cw == NULL || out == NULL)
        return BAND_EINVAL;
    band_watch *w = (band_watch *)cw; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&w->lock);
    uint64_t s;
    out->version = watch_snapshot(w, NULL, &s);
    out->value_size = w->value_size;
    out->closed = (s & W_CLOSED) != 0;
    out->waiters = w->q.len;
    out->sends = s >> 3;
    out->refused = atomic_load_explicit(&w->refused, memory_order_relaxed);
    out->delivered = atomic_load_explicit(&w->delivered, memory_order_relaxed);
    out->queued = w->queued;
    out->timeouts = w->timeouts;
    out->cancels = w->cancels;
    out->closed_fails = w->closed_fails;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

#ifdef BAND_TESTING
/* Tests only: set the version (to reach UINT64_MAX without 2^64 sends). */
void band__watch_set_version(band_watch *w, uint64_t v)
{
    uint64_t s = watch_claim(w);
    __atomic_store_n(&w->ver[(s >> 3) & 1], v, __ATOMIC_RELAXED);
    if (!(s & W_CLOSED))
        atomic_fetch_and_explicit(&w->st, ~(uint64_t)W_WRITING, memory_order_release);
}

int band__watch_check(band_watch *w)
{
    int bad = 0;
    pthread_mutex_lock(&w->lock);
    uint64_t s;
    uint64_t v = watch_snapshot(w, NULL, &s);
    if (s & W_WRITING)
        bad = -__LINE__;
    else if (((s & W_WAITERS) != 0) != (w->q.len > 0))
        bad = -__LINE__;
    struct band__node *n;
    band__list_foreach (n, &w->q.head) {
        band_watch_recv_op *op = op_of(band__waiter_of(n));
        if (bad == 0 && (rx_seen(op->rx) != v || rx_op(op->rx) != op))
            bad = -__LINE__;
    }
    pthread_mutex_unlock(&w->lock);
    return bad;
}

pthread_mutex_t *band__watch_lock(band_watch *w)
{
    return &w->lock;
}
#endif
