/* SPDX-License-Identifier: MIT */
/*
 * broadcast.c - every receiver sees every message (lossy or lossless).
 *
 * Design notes
 * ------------
 * State. One mutex per broadcast guards the receiver list, both wait queues and the wait
 * counters. The ring, head, tail, the per-slot reader counts, every cursor (_next) and
 * the message counters are accessed atomically, because both modes read and write them
 * without the lock: rx->_b (which broadcast a receiver belongs to; written with release
 * under the lock, read with acquire to find the lock), b->closed, and the state word ws.
 *
 * Lossy without the lock. ws = CLOSED | WAITERS | WRITING. A send claims WRITING by CAS
 * (refused by CLOSED, diverted to the lock by WAITERS), stores tail before it overwrites a
 * slot (then a release fence), fills the slot word by word, stores head, and gives WRITING
 * back with an RMW that also reports WAITERS. A receive loads tail and head, copies the
 * slot, and after an acquire fence checks that tail has not passed the message; then it
 * moves the cursor by CAS. A receive that queues sets WAITERS under the lock before its
 * last look, so a send that published first is seen by that look and a send that
 * publishes later serves the queue under the lock. Every locked path that publishes holds
 * WRITING too and first delivers what a lock-free send published, so a queued receive is
 * never more than one message behind and never lags. Close and subscribe take WRITING, so
 * no send is half published when they look. WAITERS changes only under the lock.
 *
 * Sequences. Message s lives in slot s % cap. [tail, head) are the retained messages;
 * head is also the number sent. A receiver's cursor _next is in [tail, head] in lossless
 * mode; in lossy mode it may fall below tail, which is a lag of exactly tail - _next.
 *
 * Lossless accounting. rem[slot] counts the receivers that still have to read that
 * message: set to the number subscribed when it is sent, decremented atomically by each
 * read (by the call whose cursor CAS won) and by the unsubscribe of a receiver that had
 * not read it. Whoever takes a count to 0 carries tail over the zeros from tail on
 * (advance_tail: counts can reach 0 out of order when threads share a receiver). With
 * nobody subscribed a message gets rem 0 and leaves at once (sent_unheard). Senders wait
 * exactly while head - tail == cap; any event that can advance tail (a read, an
 * unsubscribe) runs the pump, which hands free slots to queued senders in FIFO order.
 * Invariant: a sender is queued => the ring is full (lossless) and the broadcast is open.
 *
 * Lossless without the lock. The same word ws, plus SENDERS (a send is queued). A send
 * claims WRITING as in lossy mode (diverted to the lock by WAITERS or SENDERS), refuses a
 * full ring, fills the slot, sets its count from nrx, stores head, and gives WRITING back,
 * serving under the lock a receive that queued meanwhile. A receive copies its message,
 * CASes the cursor, drops its claim, and when it moved tail checks SENDERS: a send that
 * queues sets SENDERS (SC) before its last look at tail (SC), so either it sees the room
 * or the receive sees the flag and pumps under the lock. While WAITERS or SENDERS is set,
 * receives too go through the lock. Subscribe, unsubscribe, close, the pump and every
 * locked send hold WRITING, so nrx, head and the counts agree whenever they look; an
 * unsubscribe parks the cursor at UINT64_MAX with one exchange, so each unread claim is
 * dropped once, by it or by the receive that had already moved the cursor past it.
 *
 * Queued receives. A receive queues only when its receiver has read everything
 * (_next == head). Every send hands its message straight to each queued receive whose
 * receiver is still at that sequence (several receives queued on one shared receiver get
 * one message each, in FIFO order). So a queued receive is always caught up and can never
 * lag; a lag is only ever reported by the call that discovers it.
 *
 * Wakes. Completed operations go on a local wake list under the lock and are woken after
 * unlocking, so a wake may call back into the broadcast. Cancels go
 * through band_waiter_cancel(), which calls the queue's cancel op with the lock held.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "band/broadcast.h"
#include "core/block.h"
#include "core/internal.h"
#include "core/parker.h"
#include "core/waitq.h"
#include "prim/broadcast_internal.h"
#include "prim/sync_internal.h"

struct band_broadcast {
    pthread_mutex_t lock;     /* guards everything below */
    struct band__waitq sendq; /* lossless: sends waiting for room, in arrival order */
    struct band__waitq recvq; /* receives waiting for the next message */
    struct band__node rxs;    /* subscribed receivers */
    uint64_t *ring;           /* cap * words 8-byte words; atomic accesses */
    uint64_t *rem;            /* lossless: readers still due per slot; NULL when lossy */
    size_t elem_size;
    size_t words; /* 8-byte words per slot */
    uint64_t cap;
    int mode;
    int closed;  /* written under the lock (atomically), read anywhere */
    uint64_t ws; /* BW_* bits; atomic accesses, WAITERS and SENDERS changed only under the lock */
    uint64_t head, tail;
    uint64_t nrx;
    uint64_t sent_unheard, overwritten, lag_events, lagged, try_send_refusals;
    uint64_t received_gone; /* messages received by receivers since unsubscribed */
    uint64_t send_queued, send_timeouts, send_cancels, send_closed_fails;
    uint64_t send_wait_ns_total, send_wait_ns_max;
    uint64_t recv_queued, recv_timeouts, recv_cancels, recv_closed_fails;
};

static void send_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl);
static void recv_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl);

static const struct band__waitq_ops send_ops = {send_cancel_locked};
static const struct band__waitq_ops recv_ops = {recv_cancel_locked};

static band_broadcast_send_op *send_op_of(band_waiter *w)
{
    return band__container_of(w, band_broadcast_send_op, w);
}

static band_broadcast_recv_op *recv_op_of(band_waiter *w)
{
    return band__container_of(w, band_broadcast_recv_op, w);
}

static band_broadcast *rx_owner(const band_broadcast_rx *rx)
{
    return __atomic_load_n(&rx->_b, __ATOMIC_ACQUIRE);
}

/* WRITING is held by the one send (or close, subscribe, unsubscribe, pump) writing the
 * ring; WAITERS says receives are queued and SENDERS (lossless) that sends are queued:
 * then sends (and lossless receives) go through the lock; CLOSED refuses sends. */
enum { BW_WRITING = 1, BW_WAITERS = 2, BW_CLOSED = 4, BW_SENDERS = 8 };

static int is_lossless(const band_broadcast *b)
{
    return b->mode == BAND_BROADCAST_LOSSLESS;
}

static size_t slot_of(const band_broadcast *b, uint64_t seq)
{
    return (size_t)(seq % b->cap);
}

static uint64_t *slot_ptr(const band_broadcast *b, uint64_t seq)
{
    return b->ring + slot_of(b, seq) * b->words;
}

/* Atomic accesses to the words that lock-free receives read (and, for the cursor and the
 * counters, write). */
#define LD(x)     __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
/* Sequentially consistent accesses, where two threads each write one word and then read
 * the other's (rem and tail between receivers; tail and SENDERS between a receiver that
 * frees a slot and a sender that queues): at least one of them sees the other's write. */
#define LD_SC(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
/* A counter that only its one writer (the WRITING holder, or the lock holder in lossless
 * mode) changes: no read-modify-write needed. */
#define BUMP(x)                                                                                    \
    __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)

/* Messages @rx copied out since it subscribed: every move of its cursor is a message read
 * or a lag, so no counter has to be bumped on the receive path. */
static uint64_t rx_received(const band_broadcast_rx *rx)
{
    return LD(rx->_next) - rx->_start - LD(rx->_lagged_total);
}

static bool nx_cas(band_broadcast_rx *rx, uint64_t *n, uint64_t v)
{
    uint64_t cur = *n;
    bool ok =
        __atomic_compare_exchange_n(&rx->_next, &cur, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    *n = cur;
    return ok;
}

/* Copy @n bytes into a slot, word by word (relaxed atomic stores). */
static void slot_store(uint64_t *dst, const void *src, size_t n)
{
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

/* Copy @n bytes out of a slot (relaxed atomic loads). */
static void slot_load(void *dst, const uint64_t *src, size_t n)
{
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

/* ---------------------------------------------------------------- lifecycle */

int band_broadcast_create(band_broadcast **out, size_t elem_size, uint64_t capacity, int mode)
{
    size_t words = elem_size / 8 + (elem_size % 8 != 0);
    if (out == NULL || elem_size == 0 || capacity == 0 || capacity > BAND_BROADCAST_MAX_CAPACITY ||
        capacity > SIZE_MAX / elem_size || capacity > SIZE_MAX / sizeof(uint64_t) ||
        elem_size > SIZE_MAX - 8 || capacity > SIZE_MAX / 8 / words ||
        (mode != BAND_BROADCAST_LOSSY && mode != BAND_BROADCAST_LOSSLESS))
        return BAND_EINVAL;
    band_broadcast *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return BAND_ENOMEM;
    b->ring = malloc((size_t)capacity * words * 8);
    if (mode == BAND_BROADCAST_LOSSLESS)
        b->rem = calloc((size_t)capacity, sizeof(uint64_t));
    if (b->ring == NULL || (mode == BAND_BROADCAST_LOSSLESS && b->rem == NULL) ||
        pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b->ring);
        free(b->rem);
        free(b);
        return BAND_ENOMEM;
    }
    band__waitq_init(&b->sendq, &b->lock, &send_ops);
    band__waitq_init(&b->recvq, &b->lock, &recv_ops);
    band__list_init(&b->rxs);
    b->elem_size = elem_size;
    b->words = words;
    b->cap = capacity;
    b->mode = mode;
    *out = b;
    return 0;
}

int band_broadcast_destroy(band_broadcast *b)
{
    if (b == NULL)
        return 0;
    pthread_mutex_lock(&b->lock);
    int busy = b->nrx > 0 || b->sendq.len > 0 || b->recvq.len > 0;
    pthread_mutex_unlock(&b->lock);
    if (busy)
        return BAND_EBUSY;
    pthread_mutex_destroy(&b->lock);
    free(b->ring);
    free(b->rem);
    free(b);
    return 0;
}

void band_broadcast_rx_init(band_broadcast_rx *rx)
{
    if (rx != NULL)
        memset(rx, 0, sizeof(*rx));
}

/* ---------------------------------------------------------------- helpers (lock held) */

/*
 * Lossless: drop the retained messages that nobody has left to read; true when this call
 * moved tail. No lock needed: tail moves one message at a time by CAS, and only over a
 * message whose count is 0 (a slot is reused only after tail passed it, so a count read
 * for a stale tail just makes the CAS fail). Counts may reach 0 out of order (two calls
 * sharing one receiver drop their claims in either order), so whoever zeroes a count
 * scans from tail: with SC decrements and loads, of two calls zeroing neighbours at least
 * one sees the other's zero and carries tail over both.
 */
static bool advance_tail(band_broadcast *b)
{
    bool moved = false;
    uint64_t t = LD_SC(b->tail);
    while (t < LD(b->head) && LD_SC(b->rem[slot_of(b, t)]) == 0) {
        if (__atomic_compare_exchange_n(&b->tail, &t, t + 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            moved = true;
            t++;
        }
    }
    return moved;
}

/* Lossless: one receiver is done with message @seq; true when that moved tail. */
static bool drop_claim(band_broadcast *b, uint64_t seq)
{
    if (__atomic_sub_fetch(&b->rem[slot_of(b, seq)], 1, __ATOMIC_SEQ_CST) != 0)
        return false;
    return advance_tail(b);
}

/* Copy message @seq out for @rx and move its cursor on, unless a lock-free receive on the
 * same (shared) receiver took it first: returns 0 then. */
static int copy_out_locked(band_broadcast *b, band_broadcast_rx *rx, uint64_t seq, void *out)
{
    uint64_t n = seq;
    if (!nx_cas(rx, &n, seq + 1))
        return 0;
    slot_load(out, slot_ptr(b, seq), b->elem_size);
    if (b->rem != NULL)
        drop_claim(b, seq);
    return 1;
}

/*
 * Append a copy of @elem as message head (the caller checked there is room, or that the
 * broadcast is lossy and holds WRITING). Lock-free. Returns the number of receivers due.
 */
static uint64_t publish_slot(band_broadcast *b, const void *elem)
{
    uint64_t seq = b->head;
    uint64_t tail = LD(b->tail); /* lossless receives move it without the lock */
    if (seq - tail == b->cap) {  /* lossy: the oldest goes */
        ST(b->tail, tail + 1);
        BUMP(b->overwritten);
        /* A lock-free receive that copied any word stored below sees the new tail. */
        __atomic_thread_fence(__ATOMIC_RELEASE);
    }
    slot_store(slot_ptr(b, seq), elem, b->elem_size);
    uint64_t nrx = LD(b->nrx);
    if (b->rem != NULL) /* published by the release store of head */
        __atomic_store_n(&b->rem[slot_of(b, seq)], nrx, __ATOMIC_RELAXED);
    ST(b->head, seq + 1);
    if (nrx == 0)
        BUMP(b->sent_unheard);
    return nrx;
}

/* Hand every queued receive the next message of its receiver, if it was sent (lock held).
 * A queued receive is at most one message behind: only a lossy send that claimed WRITING
 * before the receive set WAITERS can publish without the lock, and it delivers after. */
static void deliver_locked(band_broadcast *b, struct band__wakelist *wl)
{
    uint64_t head = LD(b->head);
    struct band__node *n = b->recvq.head.next;
    while (n != &b->recvq.head) {
        struct band__node *next = n->next;
        band_waiter *w = band__waiter_of(n);
        band_broadcast_recv_op *op = recv_op_of(w);
        uint64_t seq = LD(op->_rx->_next);
        if (seq < head && copy_out_locked(b, op->_rx, seq, op->_out)) {
            band__waitq_unlink_locked(&b->recvq, w);
            band__waiter_complete_locked(w, 0, wl);
        }
        n = next;
    }
}

/* Clear WAITERS once no receive is queued, SENDERS once no send is (lock held). */
static void sync_waiters_locked(band_broadcast *b)
{
    uint64_t clear = (b->recvq.len == 0 ? (uint64_t)BW_WAITERS : 0) |
                     (b->sendq.len == 0 ? (uint64_t)BW_SENDERS : 0);
    if (LD(b->ws) & clear)
        __atomic_fetch_and(&b->ws, ~clear, __ATOMIC_RELAXED);
}

/* Lossy: claim WRITING, spinning while another writer holds it. Returns the word before
 * the claim; with BW_CLOSED set nothing was claimed. */
static uint64_t ws_claim(band_broadcast *b)
{
    unsigned spins = 0;
    uint64_t s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
    for (;;) {
        if (s & BW_CLOSED)
            return s;
        if (s & BW_WRITING) {
            band__backoff(&spins);
            s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_compare_exchange_n(&b->ws, &s, s | BW_WRITING, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return s;
    }
}

/* Lossy: give WRITING back; returns the word before. */
static uint64_t ws_release(band_broadcast *b)
{
    return __atomic_fetch_and(&b->ws, ~(uint64_t)BW_WRITING, __ATOMIC_ACQ_REL);
}

/* Append @elem and hand it to every queued receive (lock held; lossy: WRITING held). */
static void publish_locked(band_broadcast *b, const void *elem, struct band__wakelist *wl)
{
    uint64_t nrx = publish_slot(b, elem);
    deliver_locked(b, wl); /* a read that empties a slot carries tail on itself */
    if (b->rem != NULL && nrx == 0)
        advance_tail(b); /* nobody subscribed: the message leaves at once */
}

/* Lossless: hand free slots to queued senders, oldest first (lock and WRITING held). */
static void pump_locked(band_broadcast *b, struct band__wakelist *wl)
{
    band_time now = 0;
    band_waiter *w;
    while (b->head - LD_SC(b->tail) < b->cap && (w = band__waitq_first(&b->sendq)) != NULL) {
        if (now == 0)
            now = band_now();
        band_time waited = now - w->_since;
        uint64_t ns = waited > 0 ? (uint64_t)waited : 0;
        b->send_wait_ns_total += ns;
        if (ns > b->send_wait_ns_max)
            b->send_wait_ns_max = ns;
        band__waitq_unlink_locked(&b->sendq, w);
        publish_locked(b, send_op_of(w)->_elem, wl);
        band__waiter_complete_locked(w, 0, wl);
    }
}

/*
 * Lossless, lock held: send @elem now, or queue @op (when not NULL) behind the senders
 * already queued. 0, BAND_PENDING, BAND_EAGAIN (no room or senders queued, @op NULL),
 * BAND_ECLOSED or BAND_EOVERFLOW. Holds WRITING throughout, so no lock-free send is half
 * published. A send that queues sets SENDERS before its last look at tail: a receive that
 * frees a slot after that look sees SENDERS (both SC) and pumps under the lock.
 */
static int send_locked(band_broadcast *b, const void *elem, band_broadcast_send_op *op,
                       struct band__wakelist *wl)
{
    uint64_t s = ws_claim(b);
    if (s & BW_CLOSED)
        return BAND_ECLOSED;
    int rc = 0;
    if (b->head == UINT64_MAX) {
        rc = BAND_EOVERFLOW;
    } else if (b->sendq.len == 0 && b->head - LD(b->tail) < b->cap) {
        publish_locked(b, elem, wl);
    } else if (op == NULL) {
        rc = BAND_EAGAIN;
    } else {
        __atomic_fetch_or(&b->ws, (uint64_t)BW_SENDERS, __ATOMIC_SEQ_CST);
        if (b->sendq.len == 0 && b->head - LD_SC(b->tail) < b->cap) {
            publish_locked(b, elem, wl);
        } else {
            op->_elem = elem;
            band__waitq_push_locked(&b->sendq, &op->w, 1, band_now());
            b->send_queued++;
            rc = BAND_PENDING;
        }
    }
    sync_waiters_locked(b);
    ws_release(b);
    return rc;
}

/* Lossless, lock held: serve the queues after lock-free operations changed the ring (a
 * send published while a receive queued, a receive freed a slot while a send queued). */
static void service_locked(band_broadcast *b, struct band__wakelist *wl)
{
    uint64_t s = ws_claim(b);
    if (s & BW_CLOSED) /* close emptied both queues */
        return;
    deliver_locked(b, wl);
    pump_locked(b, wl);
    sync_waiters_locked(b);
    ws_release(b);
}

static void service(band_broadcast *b)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&b->lock);
    service_locked(b, &wl);
    pthread_mutex_unlock(&b->lock);
    band__wakelist_run(&wl);
}

/* Lossless send without the lock: 0, BAND_EAGAIN (no room), BAND_ECLOSED, BAND_EOVERFLOW,
 * or 1 when a send or receive is queued (the caller goes through the lock, which keeps the
 * queues' order). Claims WRITING like a lossy send; the room it sees can only grow while
 * it holds WRITING, since receives only move tail forward. */
static int lossless_send_fast(band_broadcast *b, const void *elem)
{
    unsigned spins = 0;
    uint64_t s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
    for (;;) {
        if (s & BW_CLOSED)
            return BAND_ECLOSED;
        if (s & (BW_WAITERS | BW_SENDERS))
            return 1;
        if (s & BW_WRITING) {
            band__backoff(&spins);
            s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_compare_exchange_n(&b->ws, &s, s | BW_WRITING, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            break;
    }
    int rc = 0;
    if (b->head == UINT64_MAX) {
        rc = BAND_EOVERFLOW;
    } else if (b->head - LD(b->tail) == b->cap) {
        rc = BAND_EAGAIN;
    } else {
        if (publish_slot(b, elem) == 0)
            advance_tail(b); /* nobody subscribed: the message leaves at once */
    }
    if (ws_release(b) & (BW_WAITERS | BW_SENDERS))
        service(b); /* a receive queued while we wrote: hand it the message */
    return rc;
}

/* Lossy, with receives queued: send under the lock, after handing them any message a
 * lock-free send published and has not delivered yet. */
static int lossy_send_locked(band_broadcast *b, const void *elem)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&b->lock);
    int rc = 0;
    uint64_t s = ws_claim(b);
    if (s & BW_CLOSED) {
        rc = BAND_ECLOSED;
    } else {
        /* With WRITING held no send is in flight: deliver what one published before
         * overwriting anything (with one slot, the next publish would). */
        deliver_locked(b, &wl);
        if (b->head == UINT64_MAX)
            rc = BAND_EOVERFLOW;
        else
            publish_locked(b, elem, &wl);
        ws_release(b);
    }
    sync_waiters_locked(b);
    pthread_mutex_unlock(&b->lock);
    band__wakelist_run(&wl);
    return rc;
}

/*
 * Lossy send: 0, BAND_ECLOSED or BAND_EOVERFLOW. With no receive queued it takes no lock:
 * claim WRITING (a CAS that fails once WAITERS or CLOSED is set), fill the slot, publish
 * head, and give WRITING back with one RMW that also reports a receive that queued
 * meanwhile (WAITERS), which it then serves under the lock.
 */
static int lossy_send(band_broadcast *b, const void *elem)
{
    unsigned spins = 0;
    uint64_t s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
    for (;;) {
        if (s & BW_CLOSED)
            return BAND_ECLOSED;
        if (s & BW_WAITERS)
            return lossy_send_locked(b, elem);
        if (s & BW_WRITING) {
            band__backoff(&spins);
            s = __atomic_load_n(&b->ws, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_compare_exchange_n(&b->ws, &s, s | BW_WRITING, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            break;
    }
    if (b->head == UINT64_MAX) {
        ws_release(b);
        return BAND_EOVERFLOW;
    }
    (void)publish_slot(b, elem);
    if (ws_release(b) & BW_WAITERS) {
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&b->lock);
        deliver_locked(b, &wl);
        sync_waiters_locked(b);
        pthread_mutex_unlock(&b->lock);
        band__wakelist_run(&wl);
    }
    return 0;
}

/*
 * Lossy: read @rx's next message into @out without the lock: 0, BAND_ELAGGED (*@missed
 * set), BAND_EAGAIN or BAND_ECLOSED. Senders store tail before they overwrite a slot
 * (release fence) and head after they filled one, so a copy is good when, after it and an
 * acquire fence, tail has not passed the message. The cursor moves by CAS, so of several
 * calls on one receiver each message goes to one. A call that loses a race (its message
 * was overwritten during the copy, or another call took it) may have written @out before
 * it answers otherwise.
 */
static int read_lossy(band_broadcast *b, band_broadcast_rx *rx, void *out, uint64_t *missed)
{
    *missed = 0;
    uint64_t n = LD(rx->_next);
    for (;;) {
        uint64_t tail = LD(b->tail);
        if (n < tail) { /* overwritten before it was read */
            if (!nx_cas(rx, &n, tail))
                continue;
            uint64_t m = tail - n;
            ST(rx->_lagged_last, m);
            ADD(rx->_lagged_total, m);
            ADD(b->lag_events, 1);
            ADD(b->lagged, m);
            *missed = m;
            return BAND_ELAGGED;
        }
        uint64_t head = LD(b->head);
        if (n >= head) {
            if (!LD(b->closed))
                return BAND_EAGAIN;
            /* Closed after its last send: head is final now. */
            if (n >= LD(b->head))
                return BAND_ECLOSED;
            continue;
        }
        slot_load(out, slot_ptr(b, n), b->elem_size);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (n < __atomic_load_n(&b->tail, __ATOMIC_RELAXED))
            continue; /* overwritten while we copied: a lag */
        uint64_t m = n;
        if (!nx_cas(rx, &m, n + 1)) {
            n = m;
            continue;
        }
        return 0;
    }
}

/*
 * Lossless: read @rx's next message into @out without the lock: 0, BAND_EAGAIN,
 * BAND_ECLOSED or BAND_EINVAL (unsubscribed meanwhile). *@freed says whether this call
 * moved tail (made room). The message cannot leave while @rx's cursor is still on it (its
 * count includes @rx until the call that moves the cursor drops the claim), so the copy
 * is made first and kept only if the cursor CAS wins; then the claim is dropped, and the
 * call that takes a count to 0 carries tail on. A call that loses the CAS (another call on
 * the same receiver took the message) may have written @out before it answers otherwise.
 */
static int read_lossless(band_broadcast *b, band_broadcast_rx *rx, void *out, bool *freed)
{
    *freed = false;
    uint64_t n = LD(rx->_next);
    for (;;) {
        /* Parked by an unsubscribe. Still owned: an unsubscribe under way, or a cursor
         * caught up after 2^64 - 1 sends; nothing to read either way (below). */
        if (n == UINT64_MAX && rx_owner(rx) != b)
            return BAND_EINVAL;
        uint64_t head = LD(b->head);
        if (n >= head) {
            if (!LD(b->closed))
                return BAND_EAGAIN;
            if (n >= LD(b->head)) /* closed after its last send: head is final now */
                return BAND_ECLOSED;
            continue;
        }
        slot_load(out, slot_ptr(b, n), b->elem_size);
        if (!nx_cas(rx, &n, n + 1))
            continue;
        *freed = drop_claim(b, n);
        return 0;
    }
}

/* Read @rx's next message into @out: 0, BAND_ELAGGED (*@missed set), BAND_EAGAIN or
 * BAND_ECLOSED. Lossless: lock held, queued senders are given the room made. */
static int read_locked(band_broadcast *b, band_broadcast_rx *rx, void *out, uint64_t *missed,
                       struct band__wakelist *wl)
{
    if (!is_lossless(b))
        return read_lossy(b, rx, out, missed);
    *missed = 0;
    bool freed;
    int rc = read_lossless(b, rx, out, &freed);
    if (freed)
        service_locked(b, wl);
    return rc;
}

/* The broadcast @rx is subscribed to, locked; NULL when it is not subscribed. */
static band_broadcast *rx_lock(const band_broadcast_rx *rx)
{
    band_broadcast *b = rx_owner(rx);
    if (b == NULL)
        return NULL;
    pthread_mutex_lock(&b->lock);
    if (rx_owner(rx) != b) { /* unsubscribed meanwhile */
        pthread_mutex_unlock(&b->lock);
        return NULL;
    }
    return b;
}

static void send_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl)
{
    (void)wl; /* every queued sender wants one slot: withdrawing one frees nothing */
    band_broadcast *b = band__container_of(q, band_broadcast, sendq);
    band__waitq_unlink_locked(q, w);
    if (reason == BAND_ETIMEDOUT)
        b->send_timeouts++;
    else
        b->send_cancels++;
    sync_waiters_locked(b);
}

static void recv_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                               struct band__wakelist *wl)
{
    (void)wl; /* the cursor never moved for a queued receive: nothing to give back */
    band_broadcast *b = band__container_of(q, band_broadcast, recvq);
    band__waitq_unlink_locked(q, w);
    if (reason == BAND_ETIMEDOUT)
        b->recv_timeouts++;
    else
        b->recv_cancels++;
    sync_waiters_locked(b);
}

/* ---------------------------------------------------------------- blocking front end */

/*
 * A thread waiting on its own stack. core/block.h's blocker embeds a bare band_waiter,
 * while this module's queues hold send and receive ops; so the same parker dance is
 * spelled out here (a blocker generic over the waiter's container would remove this).
 */
struct bc_blocker {
    union {
        band_broadcast_send_op send;
        band_broadcast_recv_op recv;
    } op;
    struct band__parker parker;
};

static void bc_blocker_wake(band_waiter *w)
{
    struct bc_blocker *bk = w->data;
    band__parker_unpark(&bk->parker);
}

static int bc_blocker_wait(struct bc_blocker *bk, band_waiter *w, band_time deadline,
                           band_cancel *cancel)
{
    int rc = band__block(w, &bk->parker, deadline, cancel);
    band__parker_destroy(&bk->parker);
    return rc;
}

/* ---------------------------------------------------------------- subscribe */

int band_broadcast_subscribe(band_broadcast *b, band_broadcast_rx *rx)
{
    if (b == NULL || rx == NULL)
        return BAND_EINVAL;
    int rc = 0;
    pthread_mutex_lock(&b->lock);
    band_broadcast *none = NULL;
    /* Hold WRITING so that no send is half published while the cursor starts (lossless:
     * every message from head on then counts this receiver). */
    uint64_t s = ws_claim(b);
    if (b->closed) {
        rc = BAND_ECLOSED;
    } else if (!__atomic_compare_exchange_n(&rx->_b, &none, b, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
        rc = BAND_EINVAL; /* already subscribed (here or elsewhere) */
    } else {
        /* Anyone who now sees rx->_b == b waits for this lock before reading the rest. */
        band__list_add_tail(&b->rxs, &rx->_link);
        ST(rx->_next, b->head);
        ST(rx->_lagged_last, 0);
        ST(rx->_lagged_total, 0);
        ST(rx->_start, b->head);
        ST(b->nrx, b->nrx + 1);
    }
    if (!(s & BW_CLOSED))
        ws_release(b);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

int band_broadcast_unsubscribe(band_broadcast_rx *rx)
{
    if (rx == NULL)
        return BAND_EINVAL;
    band_broadcast *b = rx_lock(rx);
    if (b == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);

    struct band__node *n = b->recvq.head.next;
    while (n != &b->recvq.head) {
        struct band__node *next = n->next;
        band_waiter *w = band__waiter_of(n);
        if (recv_op_of(w)->_rx == rx) {
            band__waitq_unlink_locked(&b->recvq, w);
            b->recv_closed_fails++;
            band__waiter_complete_locked(w, BAND_ECLOSED, &wl);
        }
        n = next;
    }
    /* With WRITING held no send is half published: head and the counts agree on whether
     * they include @rx. Closed: no send runs any more and none can start. */
    uint64_t ws = ws_claim(b);
    if (b->rem == NULL) {
        b->received_gone += rx_received(rx);
    } else {
        /* Park the cursor where no lock-free receive's CAS can match it: the claims on
         * [at, head) are this call's to drop; those below at belong to the receives that
         * moved the cursor, which drop them (and carry tail on) themselves. */
        uint64_t at = __atomic_exchange_n(&rx->_next, UINT64_MAX, __ATOMIC_ACQ_REL);
        uint64_t head = LD(b->head);
        b->received_gone += at - rx->_start; /* lossless: no lags */
        for (uint64_t s = at; s < head; s++)
            __atomic_sub_fetch(&b->rem[slot_of(b, s)], 1, __ATOMIC_SEQ_CST);
    }
    band__list_del_init(&rx->_link);
    ST(b->nrx, b->nrx - 1);
    if (b->rem != NULL) {
        advance_tail(b);
        if (!(ws & BW_CLOSED))
            pump_locked(b, &wl);
    }
    sync_waiters_locked(b);
    if (!(ws & BW_CLOSED))
        ws_release(b);
    __atomic_store_n(&rx->_b, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->lock);
    band__wakelist_run(&wl);
    return 0;
}

/* ---------------------------------------------------------------- send */

int band_broadcast_try_send(band_broadcast *b, const void *elem)
{
    if (b == NULL || elem == NULL)
        return BAND_EINVAL;
    if (!is_lossless(b))
        return lossy_send(b, elem);
    int rc = lossless_send_fast(b, elem);
    if (rc == 1) { /* a send or receive is queued: keep their order under the lock */
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&b->lock);
        rc = send_locked(b, elem, NULL, &wl);
        pthread_mutex_unlock(&b->lock);
        band__wakelist_run(&wl);
    }
    if (rc == BAND_EAGAIN)
        ADD(b->try_send_refusals, 1);
    return rc;
}

/* Send now or queue @op (initialised by the caller). 0, BAND_PENDING or an error. */
static int send_enqueue(band_broadcast *b, band_broadcast_send_op *op, const void *elem)
{
    if (!is_lossless(b)) { /* never waits */
        int lrc = lossy_send(b, elem);
        band__waiter_finish_now(&op->w, lrc);
        return lrc;
    }
    int rc = lossless_send_fast(b, elem);
    if (rc != 1 && rc != BAND_EAGAIN) {
        band__waiter_finish_now(&op->w, rc);
        return rc;
    }
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&b->lock);
    rc = send_locked(b, elem, op, &wl);
    pthread_mutex_unlock(&b->lock);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    band__wakelist_run(&wl);
    return rc;
}

int band_broadcast_send_async(band_broadcast *b, const void *elem, band_broadcast_send_op *op)
{
    if (b == NULL || op == NULL || elem == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc; /* @op may be someone's pending operation: leave it alone */
    return send_enqueue(b, op, elem);
}

int band_broadcast_send(band_broadcast *b, const void *elem, band_time deadline,
                        band_cancel *cancel)
{
    if (b == NULL || elem == NULL)
        return BAND_EINVAL;
    if (!is_lossless(b))
        return lossy_send(b, elem); /* never waits */
    int rc = lossless_send_fast(b, elem);
    if (rc == 1) {
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&b->lock);
        rc = send_locked(b, elem, NULL, &wl);
        pthread_mutex_unlock(&b->lock);
        band__wakelist_run(&wl);
    }
    if (rc != BAND_EAGAIN)
        return rc;
    rc = band__wait_refusal(deadline, cancel);
    if (rc != 0)
        return rc;

    struct bc_blocker bk;
    band_waiter_init(&bk.op.send.w, bc_blocker_wake, &bk);
    bk.op.send.w.deadline = deadline;
    band__parker_init(&bk.parker);
    rc = send_enqueue(b, &bk.op.send, elem);
    if (rc != BAND_PENDING) {
        band__parker_destroy(&bk.parker);
        return rc;
    }
    return bc_blocker_wait(&bk, &bk.op.send.w, deadline, cancel);
}

/* ---------------------------------------------------------------- receive */

int band_broadcast_try_recv(band_broadcast_rx *rx, void *out)
{
    if (rx == NULL || out == NULL)
        return BAND_EINVAL;
    band_broadcast *b = rx_owner(rx);
    if (b == NULL)
        return BAND_EINVAL;
    uint64_t missed;
    if (!is_lossless(b))
        return read_lossy(b, rx, out, &missed); /* never takes the lock */
    /* Lossless with nothing queued: without the lock. A receive that made room checks
     * SENDERS after moving tail (both SC): a send that queued before is pumped here. */
    if (!(LD(b->ws) & (BW_WAITERS | BW_SENDERS))) {
        bool freed;
        int rc = read_lossless(b, rx, out, &freed);
        if (freed && (LD_SC(b->ws) & BW_SENDERS))
            service(b);
        return rc;
    }
    b = rx_lock(rx);
    if (b == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = read_locked(b, rx, out, &missed, &wl);
    pthread_mutex_unlock(&b->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* Receive now or queue @op (initialised by the caller). 0, BAND_PENDING or an error. */
static int recv_enqueue(band_broadcast_rx *rx, band_broadcast_recv_op *op, void *out)
{
    band_broadcast *b = rx_lock(rx);
    if (b == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    uint64_t missed;
    /* Lossy: announce the wait, then look: a send that published before WAITERS was set is
     * seen by this read; one that publishes after it delivers under the lock. */
    __atomic_fetch_or(&b->ws, (uint64_t)BW_WAITERS, __ATOMIC_ACQ_REL);
    int rc = read_locked(b, rx, out, &missed, &wl);
    op->lagged = missed;
    if (rc != BAND_EAGAIN)
        sync_waiters_locked(b);
    if (rc == BAND_EAGAIN) {
        op->_rx = rx;
        op->_out = out;
        band__waitq_push_locked(&b->recvq, &op->w, 1, band_now());
        b->recv_queued++;
        rc = BAND_PENDING;
    }
    pthread_mutex_unlock(&b->lock);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    band__wakelist_run(&wl);
    return rc;
}

int band_broadcast_recv_async(band_broadcast_rx *rx, void *out, band_broadcast_recv_op *op)
{
    if (rx == NULL || op == NULL || out == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    return recv_enqueue(rx, op, out);
}

int band_broadcast_recv(band_broadcast_rx *rx, void *out, band_time deadline, band_cancel *cancel)
{
    int rc = band_broadcast_try_recv(rx, out);
    if (rc != BAND_EAGAIN)
        return rc;
    rc = band__wait_refusal(deadline, cancel);
    if (rc != 0)
        return rc;

    struct bc_blocker bk;
    band_waiter_init(&bk.op.recv.w, bc_blocker_wake, &bk);
    bk.op.recv.w.deadline = deadline;
    band__parker_init(&bk.parker);
    rc = recv_enqueue(rx, &bk.op.recv, out);
    if (rc != BAND_PENDING) {
        band__parker_destroy(&bk.parker);
        return rc;
    }
    return bc_blocker_wait(&bk, &bk.op.recv.w, deadline, cancel);
}

uint64_t band_broadcast_rx_lagged(const band_broadcast_rx *rx)
{
    if (rx == NULL || rx_owner(rx) == NULL)
        return 0;
    return LD(rx->_lagged_last); /* one word, written atomically: no lock needed */
}

uint64_t band_broadcast_rx_backlog(const band_broadcast_rx *rx)
{
    if (rx == NULL)
        return 0;
    band_broadcast *b = rx_lock(rx);
    if (b == NULL)
        return 0;
    uint64_t v = LD(b->head) - LD(rx->_next);
    pthread_mutex_unlock(&b->lock);
    return v;
}

/* ---------------------------------------------------------------- close, stats */

int band_broadcast_close(band_broadcast *b)
{
    if (b == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&b->lock);
    if (!b->closed) {
        /* No send is half published once we hold WRITING; queued receives get what a
         * lock-free send published before they fail. Every message published stays
         * readable: receives read up to head, which no send moves once CLOSED is set. */
        ws_claim(b);
        __atomic_fetch_xor(&b->ws, (uint64_t)(BW_WRITING | BW_CLOSED), __ATOMIC_ACQ_REL);
        deliver_locked(b, &wl);
        __atomic_store_n(&b->closed, 1, __ATOMIC_RELEASE);
        band_waiter *w;
        while ((w = band__waitq_first(&b->sendq)) != NULL) {
            band__waitq_unlink_locked(&b->sendq, w);
            b->send_closed_fails++;
            band__waiter_complete_locked(w, BAND_ECLOSED, &wl);
        }
        while ((w = band__waitq_first(&b->recvq)) != NULL) {
            band__waitq_unlink_locked(&b->recvq, w);
            b->recv_closed_fails++;
            band__waiter_complete_locked(w, BAND_ECLOSED, &wl);
        }
        sync_waiters_locked(b);
    }
    pthread_mutex_unlock(&b->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_broadcast_is_closed(const band_broadcast *b)
{
    if (b == NULL)
        return 0;
    return __atomic_load_n(&b->closed, __ATOMIC_ACQUIRE) != 0;
}

int band_broadcast_get_stats(const band_broadcast *cb, band_broadcast_stats *out)
{
    if (cb == NULL || out == NULL)
        return BAND_EINVAL;
    band_broadcast *b = (band_broadcast *)cb; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&b->lock);
    out->mode = b->mode;
    out->closed = b->closed;
    out->elem_size = b->elem_size;
    out->capacity = b->cap;
    uint64_t head = LD(b->head), tail = LD(b->tail);
    out->oldest_seq = tail;
    out->next_seq = head;
    out->retained = head - tail;
    out->receivers = b->nrx;
    out->waiting_senders = b->sendq.len;
    out->waiting_receivers = b->recvq.len;
    out->sent_unheard = LD(b->sent_unheard);
    out->overwritten = LD(b->overwritten);
    out->received = b->received_gone;
    struct band__node *node;
    band__list_foreach (node, &b->rxs)
        out->received += rx_received(band__container_of(node, band_broadcast_rx, _link));
    out->lag_events = LD(b->lag_events);
    out->lagged = LD(b->lagged);
    out->try_send_refusals = LD(b->try_send_refusals);
    out->send_queued = b->send_queued;
    out->send_timeouts = b->send_timeouts;
    out->send_cancels = b->send_cancels;
    out->send_closed_fails = b->send_closed_fails;
    out->send_wait_ns_total = b->send_wait_ns_total;
    out->send_wait_ns_max = b->send_wait_ns_max;
    out->recv_queued = b->recv_queued;
    out->recv_timeouts = b->recv_timeouts;
    out->recv_cancels = b->recv_cancels;
    out->recv_closed_fails = b->recv_closed_fails;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

#ifdef BAND_TESTING
int band__broadcast_check(const band_broadcast *cb)
{
    band_broadcast *b = (band_broadcast *)cb;
    int bad = 0;
    pthread_mutex_lock(&b->lock);
    uint64_t n = 0;
    struct band__node *node;
    if (LD(b->tail) > b->head || b->head - LD(b->tail) > b->cap)
        bad = -__LINE__;
    band__list_foreach (node, &b->rxs) {
        band_broadcast_rx *rx = band__container_of(node, band_broadcast_rx, _link);
        n++;
        if (bad == 0 && rx_owner(rx) != b)
            bad = -__LINE__;
        if (bad == 0 && LD(rx->_next) > b->head)
            bad = -__LINE__;
        if (bad == 0 && is_lossless(b) && LD(rx->_next) < LD(b->tail))
            bad = -__LINE__;
    }
    if (bad == 0 && n != b->nrx)
        bad = -__LINE__;
    if (bad == 0 && is_lossless(b)) {
        /* rem[s] == receivers with _next <= s, and the oldest retained one is due. */
        for (uint64_t s = LD(b->tail); s < b->head && bad == 0; s++) {
            uint64_t due = 0;
            band__list_foreach (node, &b->rxs) {
                band_broadcast_rx *rx = band__container_of(node, band_broadcast_rx, _link);
                due += LD(rx->_next) <= s;
            }
            if (LD(b->rem[slot_of(b, s)]) != due)
                bad = -__LINE__;
        }
        if (bad == 0 && LD(b->tail) < b->head && LD(b->rem[slot_of(b, LD(b->tail))]) == 0)
            bad = -__LINE__;
    }
    if (bad == 0 && b->sendq.len > 0 &&
        (!is_lossless(b) || b->closed || b->head - LD(b->tail) != b->cap))
        bad = -__LINE__;
    if (bad == 0 && b->recvq.len > 0 && b->closed)
        bad = -__LINE__;
    if (bad == 0) { /* the state word agrees with the queues */
        uint64_t ws = LD(b->ws);
        if ((ws & BW_WRITING) || ((ws & BW_WAITERS) != 0) != (b->recvq.len > 0) ||
            ((ws & BW_SENDERS) != 0) != (b->sendq.len > 0) ||
            ((ws & BW_CLOSED) != 0) != (b->closed != 0) ||
            (ws & ~(uint64_t)(BW_WRITING | BW_WAITERS | BW_SENDERS | BW_CLOSED)))
            bad = -__LINE__;
    }
    band__list_foreach (node, &b->recvq.head) {
        band_broadcast_recv_op *op = recv_op_of(band__waiter_of(node));
        if (bad == 0 && (rx_owner(op->_rx) != b || LD(op->_rx->_next) != b->head))
            bad = -__LINE__;
    }
    pthread_mutex_unlock(&b->lock);
    return bad;
}
#endif /* BAND_TESTING */

#ifdef BAND_TESTING
pthread_mutex_t *band__broadcast_lock(band_broadcast *b)
{
    return &b->lock;
}
#endif
