/*
 * chan.c - the bounded channel.
 *
 * Design notes
 * ------------
 * One mutex guards everything: the ring of queued elements (with each element's declared
 * bytes), the reservation counts, and two wait queues - senders (send and reserve ops, in
 * arrival order) and receivers. Completed ops go on a wake list and are woken after
 * unlocking, as in every band primitive.
 *
 * Room. A slot is in use from the moment it is reserved (or sent into) until a receiver
 * takes its element: room(b) = len + reserved < capacity, and, with a byte bound,
 * queued bytes + reserved bytes + b <= byte capacity.
 *
 * Invariants (lock held, between operations):
 *   - receivers wait only while nothing is queued;
 *   - a send op waits only while there is no room and no receiver waits; a receiver that
 *     finds nothing queued takes the head sender's element straight from it (and so never
 *     completes during its own submission); reserve ops need room and can wait beside
 *     receivers;
 *   - while anything waits in the sender queue, newcomers are refused or queued behind it
 *     (FIFO grant to the oldest sender; its head can hold back smaller requests);
 *   - receivers see BAND_ECLOSED only when closed, empty and no reservation is held,
 *     since a held reservation is a promise of one more element.
 *
 * Sender op kinds travel in the waiter's private unit field while it is queued (0: send,
 * 1: reserve); an op's own fields hold the element and its bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "band/chan.h"
#include "core/block.h"
#include "core/name.h"

enum { OP_SEND = 0, OP_RESERVE = 1 };

struct band_chan {
    pthread_mutex_t lock;         /* guards every field below */
    struct band__waitq senders;   /* struct band_chan_send_op, arrival order */
    struct band__waitq receivers; /* struct band_chan_recv_op, arrival order */
    unsigned char *ring;          /* capacity * elem_size bytes */
    uint64_t *ring_bytes;         /* declared bytes of each queued element */
    size_t elem_size;
    uint64_t capacity, head, len;  /* ring geometry: oldest at head */
    uint64_t byte_capacity, bytes; /* bytes: declared bytes of queued elements */
    uint64_t reserved, reserved_bytes;
    int overflow;
    band_chan_drop_fn *drop;
    void *drop_ctx;
    int counting;
    uint64_t nsenders;
    int closed;
    uint64_t sent, received, refused_full, refused_closed, refused_too_big, dropped;
    uint64_t send_wait_ns, send_wait_ns_max;
    char name[BAND_NAME_MAX];
};

static void chan_cancel_sender_locked(struct band__waitq *q, band_waiter *w, int reason,
                                      struct band__wakelist *wl);
static void chan_cancel_receiver_locked(struct band__waitq *q, band_waiter *w, int reason,
                                        struct band__wakelist *wl);
static const struct band__waitq_ops chan_sender_ops = {chan_cancel_sender_locked};
static const struct band__waitq_ops chan_receiver_ops = {chan_cancel_receiver_locked};

static struct band_chan_send_op *send_op_of(band_waiter *w)
{
    return band__container_of(w, struct band_chan_send_op, w);
}

static struct band_chan_recv_op *recv_op_of(band_waiter *w)
{
    return band__container_of(w, struct band_chan_recv_op, w);
}

/* ---------------------------------------------------------------- lifecycle */

int band_chan_create_opts(band_chan **out, const band_chan_opts *o)
{
    if (out == NULL || o == NULL || o->elem_size == 0 || o->capacity == 0 ||
        o->capacity > BAND_SEM_MAX_PERMITS || o->byte_capacity > BAND_SEM_MAX_PERMITS ||
        o->overflow < BAND_CHAN_WAIT || o->overflow > BAND_CHAN_DROP_NEWEST)
        return BAND_EINVAL;
    if (o->capacity > SIZE_MAX / o->elem_size || o->capacity > SIZE_MAX / sizeof(uint64_t))
        return BAND_ENOMEM;
    band_chan *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return BAND_ENOMEM;
    c->ring = malloc((size_t)o->capacity * o->elem_size);
    c->ring_bytes = malloc((size_t)o->capacity * sizeof(uint64_t));
    if (c->ring == NULL || c->ring_bytes == NULL || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->ring);
        free(c->ring_bytes);
        free(c);
        return BAND_ENOMEM;
    }
    band__waitq_init(&c->senders, &c->lock, &chan_sender_ops);
    band__waitq_init(&c->receivers, &c->lock, &chan_receiver_ops);
    c->elem_size = o->elem_size;
    c->capacity = o->capacity;
    c->byte_capacity = o->byte_capacity;
    c->overflow = o->overflow;
    c->drop = o->drop;
    c->drop_ctx = o->drop_ctx;
    c->counting = o->senders > 0;
    c->nsenders = o->senders;
    *out = c;
    return 0;
}

int band_chan_create(band_chan **out, size_t elem_size, uint64_t capacity, uint64_t byte_capacity)
{
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.elem_size = elem_size;
    o.capacity = capacity;
    o.byte_capacity = byte_capacity;
    return band_chan_create_opts(out, &o);
}

static void *slot_at(const band_chan *c, uint64_t i)
{
    return c->ring + (size_t)((c->head + i) % c->capacity) * c->elem_size;
}

int band_chan_destroy(band_chan *c)
{
    if (c == NULL)
        return 0;
    pthread_mutex_lock(&c->lock);
    int busy = c->senders.len > 0 || c->receivers.len > 0 || c->reserved > 0;
    pthread_mutex_unlock(&c->lock);
    if (busy)
        return BAND_EBUSY;
    if (c->drop != NULL)
        for (uint64_t i = 0; i < c->len; i++)
            c->drop(slot_at(c, i), c->drop_ctx);
    pthread_mutex_destroy(&c->lock);
    free(c->ring);
    free(c->ring_bytes);
    free(c);
    return 0;
}

int band_chan_set_name(band_chan *c, const char *name)
{
    if (c == NULL)
        return BAND_EINVAL;
    return band__set_name(c->name, name, &c->lock);
}

/* ---------------------------------------------------------------- ring and room (locked) */

static int has_room_locked(const band_chan *c, uint64_t bytes)
{
    if (c->len + c->reserved >= c->capacity)
        return 0;
    if (c->byte_capacity == 0)
        return bytes <= UINT64_MAX - c->bytes - c->reserved_bytes;
    return c->bytes + c->reserved_bytes + bytes <= c->byte_capacity;
}

static void push_locked(band_chan *c, const void *elem, uint64_t bytes)
{
    uint64_t i = (c->head + c->len) % c->capacity;
    memcpy(c->ring + (size_t)i * c->elem_size, elem, c->elem_size);
    c->ring_bytes[i] = bytes;
    c->len++;
    c->bytes += bytes;
}

static void pop_locked(band_chan *c, void *out, uint64_t *bytes)
{
    uint64_t b = c->ring_bytes[c->head];
    memcpy(out, c->ring + (size_t)c->head * c->elem_size, c->elem_size);
    if (bytes != NULL)
        *bytes = b;
    c->head = (c->head + 1) % c->capacity;
    c->len--;
    c->bytes -= b;
}

static void account_send_wait_locked(band_chan *c, const band_waiter *w, band_time *now)
{
    if (*now == 0)
        *now = band_now();
    uint64_t ns = *now > w->_since ? (uint64_t)(*now - w->_since) : 0;
    c->send_wait_ns += ns;
    if (ns > c->send_wait_ns_max)
        c->send_wait_ns_max = ns;
}

/* Hand @elem to the head waiting receiver, if there is one. */
static int deliver_locked(band_chan *c, const void *elem, uint64_t bytes, struct band__wakelist *wl)
{
    band_waiter *w = band__waitq_first(&c->receivers);
    if (w == NULL)
        return 0;
    struct band_chan_recv_op *op = recv_op_of(w);
    band__waitq_unlink_locked(&c->receivers, w);
    memcpy(op->out, elem, c->elem_size);
    op->bytes = bytes;
    c->received++;
    band__waiter_complete_locked(w, 0, wl);
    return 1;
}

/* An element is accepted: straight to a waiting receiver, or queued (room checked). */
static void accept_locked(band_chan *c, const void *elem, uint64_t bytes, struct band__wakelist *wl)
{
    c->sent++;
    if (!deliver_locked(c, elem, bytes, wl))
        push_locked(c, elem, bytes);
}

/* Closed, empty, and no reservation left to fill: receivers are told. */
static void end_receivers_if_done_locked(band_chan *c, struct band__wakelist *wl)
{
    if (!c->closed || c->len > 0 || c->reserved > 0)
        return;
    band_waiter *w;
    while ((w = band__waitq_first(&c->receivers)) != NULL) {
        band__waitq_unlink_locked(&c->receivers, w);
        band__waiter_complete_locked(w, BAND_ECLOSED, wl);
    }
}

/* Give freed room (or waiting receivers) to the waiting senders, oldest first. */
static void serve_senders_locked(band_chan *c, struct band__wakelist *wl)
{
    band_time now = 0;
    band_waiter *w;
    while ((w = band__waitq_first(&c->senders)) != NULL) {
        struct band_chan_send_op *op = send_op_of(w);
        int kind = (int)w->_u.want;
        if (kind == OP_SEND && c->receivers.len > 0) {
            band__waitq_unlink_locked(&c->senders, w);
            account_send_wait_locked(c, w, &now);
            c->sent++;
            (void)deliver_locked(c, op->elem, op->bytes, wl);
        } else if (has_room_locked(c, op->bytes)) {
            band__waitq_unlink_locked(&c->senders, w);
            account_send_wait_locked(c, w, &now);
            if (kind == OP_SEND) {
                accept_locked(c, op->elem, op->bytes, wl);
            } else {
                c->reserved++;
                c->reserved_bytes += op->bytes;
            }
        } else {
            return; /* the head waits for room; FIFO holds back the rest */
        }
        band__waiter_complete_locked(w, 0, wl);
    }
}

static void chan_cancel_sender_locked(struct band__waitq *q, band_waiter *w, int reason,
                                      struct band__wakelist *wl)
{
    band_chan *c = band__container_of(q, band_chan, senders);
    band_time now = 0;
    (void)reason;
    int was_head = q->head.next == &w->_link;
    band__waitq_unlink_locked(q, w);
    account_send_wait_locked(c, w, &now);
    if (was_head)
        serve_senders_locked(c, wl); /* the next one may fit where the head did not */
}

static void chan_cancel_receiver_locked(struct band__waitq *q, band_waiter *w, int reason,
                                        struct band__wakelist *wl)
{
    (void)reason;
    (void)wl;
    band__waitq_unlink_locked(q, w);
}

/* ---------------------------------------------------------------- sending */

/* Checks shared by every send and reservation: BAND_EINVAL, BAND_E2BIG or 0. */
static int check_send(band_chan *c, uint64_t bytes, int want_drop_policy)
{
    if ((c->overflow != BAND_CHAN_WAIT) != want_drop_policy)
        return BAND_EINVAL;
    if (c->byte_capacity == 0 && bytes > BAND_SEM_MAX_PERMITS)
        return BAND_EINVAL;
    if (c->byte_capacity > 0 && bytes > c->byte_capacity) {
        pthread_mutex_lock(&c->lock);
        c->refused_too_big++;
        pthread_mutex_unlock(&c->lock);
        return BAND_E2BIG;
    }
    return 0;
}

/*
 * Send *@elem (kind OP_SEND) or reserve (OP_RESERVE) now, queue @op, or refuse. @op is NULL
 * for try operations. Returns 0, BAND_PENDING, BAND_EAGAIN (try only) or BAND_ECLOSED.
 */
static int send_locked(band_chan *c, int kind, const void *elem, uint64_t bytes,
                       struct band_chan_send_op *op, struct band__wakelist *wl)
{
    if (c->closed) {
        c->refused_closed++;
        return BAND_ECLOSED;
    }
    if (c->senders.len == 0) {
        if (kind == OP_SEND && c->receivers.len > 0) {
            c->sent++;
            (void)deliver_locked(c, elem, bytes, wl);
            return 0;
        }
        if (has_room_locked(c, bytes)) {
            if (kind == OP_SEND) {
                accept_locked(c, elem, bytes, wl);
            } else {
                c->reserved++;
                c->reserved_bytes += bytes;
            }
            return 0;
        }
    }
    if (op == NULL) {
        c->refused_full++;
        return BAND_EAGAIN;
    }
    band__waitq_push_locked(&c->senders, &op->w, (uint64_t)kind, band_now());
    return BAND_PENDING;
}

/* The lock/submit/unlock/wake frame around send_locked(). */
static int send_submit(band_chan *c, int kind, const void *elem, uint64_t bytes,
                       struct band_chan_send_op *op)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    int rc = send_locked(c, kind, elem, bytes, op, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return rc;
}

struct chan_blocking_send {
    struct band_chan_send_op op;
    struct band__parker parker;
};

static void blocking_send_wake(band_waiter *w)
{
    struct chan_blocking_send *b = band__container_of(w, struct chan_blocking_send, op.w);
    band__parker_unpark(&b->parker);
}

/* A blocking send or reservation: try, then wait in the sender queue until @deadline. */
static int send_blocking(band_chan *c, int kind, const void *elem, uint64_t bytes,
                         band_time deadline)
{
    if (deadline != BAND_FOREVER && deadline <= band_now()) {
        int rc = send_submit(c, kind, elem, bytes, NULL); /* do not wait */
        return rc == BAND_EAGAIN ? BAND_ETIMEDOUT : rc;
    }
    int rc;
    struct chan_blocking_send b;
    band_waiter_init(&b.op.w, blocking_send_wake, NULL);
    b.op.w.deadline = deadline;
    b.op.elem = elem;
    b.op.bytes = bytes;
    band__parker_init(&b.parker);
    rc = send_submit(c, kind, elem, bytes, &b.op);
    if (rc == BAND_PENDING)
        rc = band__park_until(&b.op.w, &b.parker, deadline);
    band__parker_destroy(&b.parker);
    return rc;
}

int band_chan_try_send(band_chan *c, const void *elem, uint64_t bytes)
{
    if (c == NULL || elem == NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    return rc != 0 ? rc : send_submit(c, OP_SEND, elem, bytes, NULL);
}

int band_chan_send(band_chan *c, const void *elem, uint64_t bytes, band_time deadline)
{
    if (c == NULL || elem == NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    return rc != 0 ? rc : send_blocking(c, OP_SEND, elem, bytes, deadline);
}

/* Submit an async send or reservation. */
static int send_async(band_chan *c, int kind, struct band_chan_send_op *op)
{
    if (c == NULL || op == NULL || (kind == OP_SEND && op->elem == NULL))
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    rc = check_send(c, op->bytes, 0);
    if (rc == 0)
        rc = send_submit(c, kind, op->elem, op->bytes, op);
    if (rc != BAND_PENDING && rc != BAND_EINVAL)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

int band_chan_send_async(band_chan *c, struct band_chan_send_op *op)
{
    return send_async(c, OP_SEND, op);
}

int band_chan_offer(band_chan *c, const void *elem, uint64_t bytes, void *dropped,
                    uint64_t *dropped_bytes, int *dropped_out)
{
    if (c == NULL || elem == NULL || dropped == NULL || dropped_out == NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 1);
    if (rc != 0)
        return rc;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    *dropped_out = 0;
    pthread_mutex_lock(&c->lock);
    rc = send_locked(c, OP_SEND, elem, bytes, NULL, &wl);
    if (rc == BAND_EAGAIN) {
        c->refused_full--; /* an overflow policy answers instead */
        if (c->overflow == BAND_CHAN_DROP_NEWEST) {
            memcpy(dropped, elem, c->elem_size);
            if (dropped_bytes != NULL)
                *dropped_bytes = bytes;
            c->dropped++;
            *dropped_out = 1;
            rc = 0;
        } else if (c->len > 0 && (c->byte_capacity == 0 ||
                                  c->bytes - c->ring_bytes[c->head] + c->reserved_bytes + bytes <=
                                      c->byte_capacity)) {
            pop_locked(c, dropped, dropped_bytes);
            c->dropped++;
            accept_locked(c, elem, bytes, &wl);
            *dropped_out = 1;
            rc = 0;
        } else {
            c->refused_full++;
        }
    }
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* ---------------------------------------------------------------- reservations */

int band_chan_try_reserve(band_chan *c, uint64_t bytes, band_chan_slot *slot)
{
    if (c == NULL || slot == NULL || slot->chan != NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    if (rc == 0)
        rc = send_submit(c, OP_RESERVE, NULL, bytes, NULL);
    if (rc == 0) {
        slot->chan = c;
        slot->bytes = bytes;
    }
    return rc;
}

int band_chan_reserve(band_chan *c, uint64_t bytes, band_time deadline, band_chan_slot *slot)
{
    if (c == NULL || slot == NULL || slot->chan != NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    if (rc == 0)
        rc = send_blocking(c, OP_RESERVE, NULL, bytes, deadline);
    if (rc == 0) {
        slot->chan = c;
        slot->bytes = bytes;
    }
    return rc;
}

int band_chan_reserve_async(band_chan *c, struct band_chan_send_op *op)
{
    return send_async(c, OP_RESERVE, op);
}

int band_chan_slot_adopt(band_chan_slot *slot, band_chan *c, uint64_t bytes)
{
    if (slot == NULL || c == NULL || slot->chan != NULL || bytes > BAND_SEM_MAX_PERMITS)
        return BAND_EINVAL;
    slot->chan = c;
    slot->bytes = bytes;
    return 0;
}

int band_chan_slot_send(band_chan_slot *slot, const void *elem)
{
    if (slot == NULL || slot->chan == NULL || elem == NULL)
        return BAND_EINVAL;
    band_chan *c = slot->chan;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    c->reserved--;
    c->reserved_bytes -= slot->bytes;
    accept_locked(c, elem, slot->bytes, &wl); /* the reserved slot is the room */
    serve_senders_locked(c, &wl);             /* a hand-off to a receiver left the slot free */
    end_receivers_if_done_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    slot->chan = NULL;
    slot->bytes = 0;
    return 0;
}

int band_chan_slot_release(band_chan_slot *slot)
{
    if (slot == NULL)
        return BAND_EINVAL;
    band_chan *c = slot->chan;
    if (c == NULL)
        return 0;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    c->reserved--;
    c->reserved_bytes -= slot->bytes;
    serve_senders_locked(c, &wl);
    end_receivers_if_done_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    slot->chan = NULL;
    slot->bytes = 0;
    return 0;
}

/* ---------------------------------------------------------------- receiving */

/*
 * Take the oldest element now, queue @op, or refuse (lock held). Returns 0, BAND_PENDING,
 * BAND_EAGAIN (@op NULL) or BAND_ECLOSED.
 */
static int recv_locked(band_chan *c, void *out, uint64_t *bytes, struct band_chan_recv_op *op,
                       struct band__wakelist *wl)
{
    if (c->receivers.len == 0 && c->len > 0) {
        pop_locked(c, out, bytes);
        c->received++;
        serve_senders_locked(c, wl);
        return 0;
    }
    band_waiter *sw = band__waitq_first(&c->senders);
    if (c->receivers.len == 0 && sw != NULL && (int)sw->_u.want == OP_SEND) {
        /* Nothing queued but the oldest sender waits (every slot is reserved): take its
         * element straight from it. A reserve op at the head holds the rest back. */
        struct band_chan_send_op *sop = send_op_of(sw);
        band_time now = 0;
        band__waitq_unlink_locked(&c->senders, sw);
        account_send_wait_locked(c, sw, &now);
        memcpy(out, sop->elem, c->elem_size);
        if (bytes != NULL)
            *bytes = sop->bytes;
        c->sent++;
        c->received++;
        band__waiter_complete_locked(sw, 0, wl);
        serve_senders_locked(c, wl); /* the head is gone: the next one may fit */
        return 0;
    }
    if (c->closed && c->len == 0 && c->reserved == 0)
        return BAND_ECLOSED;
    if (op == NULL)
        return BAND_EAGAIN;
    op->out = out;
    band__waitq_push_locked(&c->receivers, &op->w, 0, band_now());
    return BAND_PENDING;
}

static int recv_submit(band_chan *c, void *out, uint64_t *bytes, struct band_chan_recv_op *op)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    int rc = recv_locked(c, out, bytes, op, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return rc;
}

int band_chan_try_recv(band_chan *c, void *out, uint64_t *bytes)
{
    if (c == NULL || out == NULL)
        return BAND_EINVAL;
    return recv_submit(c, out, bytes, NULL);
}

struct chan_blocking_recv {
    struct band_chan_recv_op op;
    struct band__parker parker;
};

static void blocking_recv_wake(band_waiter *w)
{
    struct chan_blocking_recv *b = band__container_of(w, struct chan_blocking_recv, op.w);
    band__parker_unpark(&b->parker);
}

int band_chan_recv(band_chan *c, void *out, uint64_t *bytes, band_time deadline)
{
    if (c == NULL || out == NULL)
        return BAND_EINVAL;
    if (deadline != BAND_FOREVER && deadline <= band_now()) {
        int rc = recv_submit(c, out, bytes, NULL); /* do not wait */
        return rc == BAND_EAGAIN ? BAND_ETIMEDOUT : rc;
    }
    int rc;
    struct chan_blocking_recv b;
    band_waiter_init(&b.op.w, blocking_recv_wake, NULL);
    b.op.w.deadline = deadline;
    b.op.bytes = 0;
    band__parker_init(&b.parker);
    rc = recv_submit(c, out, bytes, &b.op);
    if (rc == BAND_PENDING) {
        rc = band__park_until(&b.op.w, &b.parker, deadline);
        if (rc == 0 && bytes != NULL)
            *bytes = b.op.bytes;
    }
    band__parker_destroy(&b.parker);
    return rc;
}

int band_chan_recv_async(band_chan *c, struct band_chan_recv_op *op)
{
    if (c == NULL || op == NULL || op->out == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    rc = recv_submit(c, op->out, &op->bytes, op);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

int band_chan_recv_many(band_chan *c, void *out, size_t max, uint64_t *bytes, size_t *n,
                        band_time deadline)
{
    if (n != NULL)
        *n = 0;
    if (c == NULL || out == NULL || max == 0 || n == NULL)
        return BAND_EINVAL;
    size_t got = 0;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    if (c->len == 0 || c->receivers.len > 0) {
        /* Nothing ready for us: wait for the first element like band_chan_recv(). */
        pthread_mutex_unlock(&c->lock);
        int rc = band_chan_recv(c, out, bytes, deadline);
        if (rc != 0)
            return rc;
        got = 1;
        pthread_mutex_lock(&c->lock);
    }
    /* Take the rest of the batch (or all of it) in this one critical section; room it
     * frees goes to waiting senders at once, whose elements may join the batch. */
    while (got < max && c->len > 0 && c->receivers.len == 0) {
        pop_locked(c, (unsigned char *)out + got * c->elem_size,
                   bytes != NULL ? &bytes[got] : NULL);
        c->received++;
        got++;
        serve_senders_locked(c, &wl);
    }
    serve_senders_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    *n = got;
    return 0;
}

/* ---------------------------------------------------------------- close and senders */

static void close_locked(band_chan *c, struct band__wakelist *wl)
{
    if (c->closed)
        return;
    c->closed = 1;
    band_time now = 0;
    band_waiter *w;
    while ((w = band__waitq_first(&c->senders)) != NULL) {
        band__waitq_unlink_locked(&c->senders, w);
        account_send_wait_locked(c, w, &now);
        c->refused_closed++;
        band__waiter_complete_locked(w, BAND_ECLOSED, wl);
    }
    end_receivers_if_done_locked(c, wl);
}

int band_chan_close(band_chan *c)
{
    if (c == NULL)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    close_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return 0;
}

int band_chan_sender_join(band_chan *c)
{
    if (c == NULL || !c->counting)
        return BAND_EINVAL;
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    if (c->closed)
        rc = BAND_ECLOSED;
    else if (c->nsenders == UINT64_MAX)
        rc = BAND_EOVERFLOW;
    else
        c->nsenders++;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int band_chan_sender_leave(band_chan *c)
{
    if (c == NULL || !c->counting)
        return BAND_EINVAL;
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    if (c->nsenders == 0)
        rc = BAND_EINVAL;
    else if (--c->nsenders == 0)
        close_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* ---------------------------------------------------------------- observability */

int band_chan_get_stats(const band_chan *cc, band_chan_stats *out)
{
    if (cc == NULL || out == NULL)
        return BAND_EINVAL;
    band_chan *c = (band_chan *)cc; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->lock);
    memcpy(out->name, c->name, sizeof(out->name));
    out->closed = c->closed;
    out->capacity = c->capacity;
    out->byte_capacity = c->byte_capacity;
    out->len = c->len;
    out->bytes = c->bytes;
    out->reserved = c->reserved;
    out->reserved_bytes = c->reserved_bytes;
    out->senders = c->nsenders;
    out->waiting_senders = c->senders.len;
    out->waiting_receivers = c->receivers.len;
    out->sent = c->sent;
    out->received = c->received;
    out->refused_full = c->refused_full;
    out->refused_closed = c->refused_closed;
    out->refused_too_big = c->refused_too_big;
    out->dropped = c->dropped;
    out->send_wait_ns = c->send_wait_ns;
    out->send_wait_ns_max = c->send_wait_ns_max;
    pthread_mutex_unlock(&c->lock);
    return 0;
}
