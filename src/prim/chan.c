/* SPDX-License-Identifier: MIT */
/*
 * chan.c - the bounded channel.
 *
 * Design notes
 * ------------
 * Elements live in a lock-free MPMC ring (chan_ring.h). While nobody waits, a send is a
 * CAS on the ring's tail and a receive a CAS on its head: no lock. Everything else is
 * under one mutex: the two wait queues (senders: send and reserve ops, in arrival order;
 * receivers), reservations, the byte bound, close and the counters that are not ring
 * positions. Completed ops go on a wake list and are woken after unlocking.
 *
 * The fast paths are inlined into band_chan_send(), band_chan_try_send() and
 * band_chan_recv(): argument checks, the ring operation and the look at `waiting`, with
 * every other path behind a tail call to an out-of-line function, so that a send or a
 * receive that does not wait costs about as much as the bare ring's.
 *
 * Gates. Each end of the ring has a gate bit. The tail's gate is set while the senders'
 * fast path must not run: senders wait (FIFO: a newcomer must queue behind them, and
 * since the gate is in the word its CAS needs, no sender can take freed room once the
 * first one has queued), reservations are held (room must count them), or the channel is
 * closed. The head's gate is set while receivers wait. Channels with a byte bound or an
 * overflow policy keep both gates set for good: every operation takes the lock.
 *
 * No lost wake-up. After a fast push or pop, the thread reads `waiting`: if the other
 * side has waiters, it takes the lock and settles (hands elements to waiting receivers,
 * room to waiting senders). A thread that decides to wait first sets its gate and its bit
 * in `waiting` and then looks at the ring once more. That is Dekker's pattern. Its
 * StoreLoad barrier on the fast side is the ring's CAS itself: the CAS that takes a
 * position is seq_cst, and it is the store the waiter's last look depends on (the locked
 * path reads the positions, and waits out a copy still in flight behind them), so the
 * fast path's seq_cst load of `waiting` after it needs no fence of its own. The thread
 * about to wait executes a seq_cst fence between its announcement and its last look.
 *
 * Room. room(b) = elements in the ring + reservations < capacity, and, with a byte bound,
 * queued bytes + reserved bytes + b <= byte capacity. The ring's positions count an
 * element from the moment a sender takes its position, so a slot whose element is still
 * being copied in or out is never handed out twice; the locked path waits (spins) for
 * such a copy to finish, which takes nanoseconds and needs no lock.
 *
 * Counters: sent = tail position + hand-offs that bypassed the ring; received = head
 * position + those hand-offs - elements evicted by drop-oldest. Without a byte bound the
 * queued bytes are summed from the ring when asked for, so the fast path never touches a
 * shared byte counter.
 *
 * Sender op kinds travel in the waiter's private unit field while it is queued (0: send,
 * a struct band_chan_send_op; 1: reserve, a struct band_chan_reserve_op); an op's own
 * fields hold the copies of its inputs (the element, its bytes) and, for a reservation,
 * the slot it is granted.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "band/chan.h"
#include "band/histo.h"
#include "core/block.h"
#include "core/name.h"
#include "prim/chan_ring.h"

/* The slow paths stay out of line, so that the fast path inlined into send and receive
 * is a few instructions around the ring's CAS. */
#if defined(__GNUC__) || defined(__clang__)
#define CHAN_NOINLINE __attribute__((noinline))
#else
#define CHAN_NOINLINE
#endif

enum { OP_SEND = 0, OP_RESERVE = 1 };
enum { W_SENDERS = 1, W_RECEIVERS = 2 };

/* Fast attempts of a blocking send or receive before it queues: CHAN_SPINS with a CPU
 * pause between them (the other side is usually nanoseconds from making room or
 * publishing), then CHAN_YIELDS with sched_yield() between them (with more threads than
 * cores the other side may not be running at all: give it this core rather than park,
 * which would cost it a futex wake-up later). */
#define CHAN_SPINS  128
#define CHAN_YIELDS 8

/* Between two fast attempts. Returns 0 when the caller should stop trying and take the
 * lock: its deadline passed during the yields (a yield on a loaded machine can last a
 * whole time slice). */
static int backoff(int i, band_time deadline, const band_cancel *cancel)
{
    if (i < CHAN_SPINS) {
        band__cpu_relax();
        return 1;
    }
    sched_yield();
    return band__wait_refusal(deadline, cancel) == 0;
}

/*
 * Runs. A sender that found the ring full, spinning, waits until a run of slots past the
 * tail is free, and a receiver that found it empty until a run past the head is
 * published, before retrying. Taking each slot the moment the other side frees or fills
 * it keeps both on the same cache line, which then moves between their cores for every
 * element; with a run between them each side works on lines the other has finished (the
 * u64 workload of bench/README.md (f), (g) and W5 runs about twice as fast with a run
 * of an eighth of a 1024-slot ring).
 *
 * The wait polls the run's last slot and ends when it is there, when the other side
 * made no progress over CHAN_RUN_STALLS looks CHAN_RUN_CHECK pauses apart (it stopped: a
 * sender that sends one element and then waits for a reply delays its receiver by those
 * pauses only), or when the caller's spin budget is spent. It reads only the
 * slots' sequence numbers, never the other side's end of the ring, and changes nothing:
 * the caller retries its push or pop whatever the wait found, so it only delays a retry,
 * by pauses the caller would have spent spinning anyway. Rings of fewer than 64 slots, or
 * of a capacity that is not a power of two, do not wait.
 *
 * @pos: the tail (sender) or head (receiver) position; @published: 0 to wait for free
 * slots (seq 2q for position q), 1 for published ones (2q + 1); a larger seq means the
 * slot was taken further already, which counts as progress. Returns the spin count @i
 * advanced by the pauses spent.
 */
#define CHAN_RUN        128
#define CHAN_RUN_CHECK  8 /* pauses between two looks at the other side's progress */
#define CHAN_RUN_STALLS 2 /* looks without progress that end the wait */

static int wait_run(const struct chan_ring *r, uint64_t pos, uint64_t published, int i)
{
    if (r->mask < 63)
        return i;
    uint64_t run = r->cap / 8 < CHAN_RUN ? r->cap / 8 : CHAN_RUN;
    const struct ring_slot *last = ring_slot_at(r, pos + run - 1);
    uint64_t last_seq = 2 * (pos + run - 1) + published;
    uint64_t j = 0, seen = 0;
    int stalls = 0;
    for (int k = 1; i + 1 < CHAN_SPINS; k++, i++) {
        if (atomic_load_explicit(&last->seq, memory_order_relaxed) >= last_seq)
            break;
        if (k % CHAN_RUN_CHECK == 0) {
            while (j < run &&
                   atomic_load_explicit(&ring_slot_at(r, pos + j)->seq, memory_order_relaxed) >=
                       2 * (pos + j) + published)
                j++;
            if (j == seen && ++stalls >= CHAN_RUN_STALLS)
                break;
            if (j != seen)
                stalls = 0;
            seen = j;
        }
        band__cpu_relax();
    }
    return i;
}

struct band_chan {
    struct chan_ring ring;
    /* Read after every fast operation, written only when waiters come and go. */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t waiting; /* W_SENDERS | W_RECEIVERS */
    _Atomic int closed_flag;                            /* mirrors closed, for fast reads */

    _Alignas(BAND__CACHELINE) pthread_mutex_t lock; /* guards every field below */
    struct band__waitq senders;                     /* send and reserve ops */
    struct band__waitq receivers;                   /* struct band_chan_recv_op */
    int locked_only;                                /* byte bound or overflow policy */
    uint64_t byte_capacity, bytes;                  /* bytes: with a byte bound only */
    uint64_t reserved, reserved_bytes;
    int overflow;
    band_chan_drop_fn *drop;
    void *drop_ctx;
    int counting;
    uint64_t nsenders;
    int closed;
    uint64_t direct;  /* elements handed from a sender to a receiver outside the ring */
    uint64_t evicted; /* elements taken out of the ring by drop-oldest */
    int deadline_aware;
    band_time last_serve; /* when a waiting sender was last served; 0: none waited since */
    int64_t serve_gap;    /* moving average of the time between two such servings */
    uint64_t refused_deadline;
    band_time lifo_after; /* > 0: adaptive LIFO (locked-only) */
    band_time *stamps;    /* lifo_after: when each ring position was queued */
    uint64_t lifo_taken;
    uint64_t refused_full, refused_closed, refused_too_big, dropped;
    uint64_t send_wait_ns, send_wait_ns_max;
    band_histo *wait_histo; /* optional, the caller's */
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

static struct band_chan_reserve_op *reserve_op_of(band_waiter *w)
{
    return band__container_of(w, struct band_chan_reserve_op, w);
}

/* The kind of a queued sender op: OP_SEND or OP_RESERVE. */
static int sender_kind(const band_waiter *w)
{
    return (int)w->_u.want;
}

/* The bytes a queued sender op declares. */
static uint64_t sender_bytes(band_waiter *w)
{
    return sender_kind(w) == OP_SEND ? send_op_of(w)->bytes : reserve_op_of(w)->bytes;
}

static struct band_chan_recv_op *recv_op_of(band_waiter *w)
{
    return band__container_of(w, struct band_chan_recv_op, w);
}

/* ---------------------------------------------------------------- lifecycle */

int band_chan_create(band_chan **out, size_t elem_size, uint64_t capacity,
                     const band_chan_opts *opts)
{
    static const band_chan_opts defaults;
    const band_chan_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL || elem_size == 0 || capacity == 0 || capacity > BAND_MAX_UNITS ||
        o->byte_capacity > BAND_MAX_UNITS || o->overflow < BAND_CHAN_WAIT ||
        o->overflow > BAND_CHAN_DROP_NEWEST || (o->deadline_aware != 0 && o->deadline_aware != 1) ||
        o->lifo_after < 0)
        return BAND_EINVAL;
    size_t stride = ring_stride(elem_size);
    if (stride == 0 || capacity > (SIZE_MAX - BAND__CACHELINE) / stride)
        return BAND_ENOMEM;
    size_t size = (sizeof(band_chan) + BAND__CACHELINE - 1) & ~(size_t)(BAND__CACHELINE - 1);
    band_chan *c = aligned_alloc(BAND__CACHELINE, size);
    if (c == NULL)
        return BAND_ENOMEM;
    memset(c, 0, sizeof(*c));
    size_t slots_size = (size_t)capacity * stride;
    slots_size = (slots_size + BAND__CACHELINE - 1) & ~(size_t)(BAND__CACHELINE - 1);
    c->ring.slots = aligned_alloc(BAND__CACHELINE, slots_size);
    c->ring.bytes = malloc((size_t)capacity * sizeof(*c->ring.bytes));
    if (o->lifo_after > 0 && capacity <= SIZE_MAX / sizeof(band_time))
        c->stamps = malloc((size_t)capacity * sizeof(band_time));
    if (c->ring.slots == NULL || c->ring.bytes == NULL ||
        (o->lifo_after > 0 && c->stamps == NULL) || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->ring.slots);
        free(c->ring.bytes);
        free(c->stamps);
        free(c);
        return BAND_ENOMEM;
    }
    struct chan_ring *r = &c->ring;
    r->stride = stride;
    r->elem_size = elem_size;
    r->cap = capacity;
    r->mask = (capacity & (capacity - 1)) == 0 ? capacity - 1 : 0;
    for (uint64_t i = 0; i < capacity; i++) {
        atomic_init(&ring_slot_at(r, i)->seq, 2 * i);
        atomic_init(ring_bytes_at(r, i), 0);
    }
    c->locked_only = o->byte_capacity > 0 || o->overflow != BAND_CHAN_WAIT || o->lifo_after > 0;
    c->deadline_aware = o->deadline_aware;
    c->lifo_after = o->lifo_after;
    atomic_init(&r->tail, c->locked_only ? RING_GATE : 0);
    atomic_init(&r->head, c->locked_only ? RING_GATE : 0);
    atomic_init(&c->waiting, 0);
    atomic_init(&c->closed_flag, 0);
    band__waitq_init(&c->senders, &c->lock, &chan_sender_ops);
    band__waitq_init(&c->receivers, &c->lock, &chan_receiver_ops);
    c->byte_capacity = o->byte_capacity;
    c->overflow = o->overflow;
    c->drop = o->drop;
    c->drop_ctx = o->drop_ctx;
    c->counting = o->senders > 0;
    c->nsenders = o->senders;
    c->wait_histo = o->wait_histo;
    *out = c;
    return 0;
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
    if (c->drop != NULL) {
        uint64_t end = ring_tail_pos(&c->ring);
        for (uint64_t p = ring_head_pos(&c->ring); p != end; p++)
            c->drop(ring_slot_at(&c->ring, p)->data, c->drop_ctx);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->ring.slots);
    free(c->ring.bytes);
    free(c->stamps);
    free(c);
    return 0;
}

int band_chan_set_name(band_chan *c, const char *name)
{
    if (c == NULL)
        return BAND_EINVAL;
    return band__set_name(c->name, name, &c->lock);
}

/* ---------------------------------------------------------------- gates (locked) */

/* Set the gates and wait bits that the locked state calls for. Opening is relaxed about
 * order; closing before a wait uses gate_for_wait_locked() instead. */
static void update_gates_locked(band_chan *c)
{
    int send_gate = c->locked_only || c->closed || c->reserved > 0 || c->senders.len > 0;
    int recv_gate = c->locked_only || c->receivers.len > 0;
    uint64_t want = (c->senders.len > 0 ? W_SENDERS : 0) | (c->receivers.len > 0 ? W_RECEIVERS : 0);
    if (ring_gated(&c->ring.tail) != send_gate) {
        if (send_gate)
            ring_gate_set(&c->ring.tail);
        else
            ring_gate_clear(&c->ring.tail);
    }
    if (ring_gated(&c->ring.head) != recv_gate) {
        if (recv_gate)
            ring_gate_set(&c->ring.head);
        else
            ring_gate_clear(&c->ring.head);
    }
    uint64_t have = atomic_load_explicit(&c->waiting, memory_order_relaxed);
    if (have != want)
        atomic_store_explicit(&c->waiting, want, memory_order_seq_cst);
}

/* Before a sender (@bit W_SENDERS) or receiver (W_RECEIVERS) queues: close its side's
 * gate and announce it, seq_cst, so that the caller's next look at the ring either sees
 * what a fast operation did or that operation sees the announcement. */
static void gate_for_wait_locked(band_chan *c, uint64_t bit)
{
    ring_gate_set(bit == W_SENDERS ? &c->ring.tail : &c->ring.head);
    (void)atomic_fetch_or_explicit(&c->waiting, bit, memory_order_seq_cst);
    /* Pairs with the fast paths' seq_cst CAS: either their load of `waiting` sees the
     * announcement, or the look at the positions after this fence sees their CAS. */
    atomic_thread_fence(memory_order_seq_cst);
}

/* ---------------------------------------------------------------- ring access (locked) */

static void spin_wait(unsigned *spins)
{
    if (++*spins < 1024)
        band__cpu_relax();
    else
        sched_yield(); /* the other side was preempted in the middle of its copy */
}

static int has_room_locked(const band_chan *c, uint64_t bytes)
{
    if (ring_len(&c->ring) + c->reserved >= c->ring.cap)
        return 0;
    if (c->byte_capacity == 0)
        return 1;
    return c->bytes + c->reserved_bytes + bytes <= c->byte_capacity;
}

/* Push under the lock. Returns 1, or 0 when the room is gone (a fast sender took it). */
static int push_locked(band_chan *c, const void *elem, uint64_t bytes)
{
    unsigned spins = 0;
    while (ring_push(&c->ring, elem, bytes, 0) != RING_OK) {
        if (ring_len(&c->ring) + c->reserved >= c->ring.cap)
            return 0;
        spin_wait(&spins); /* a receiver is still copying out of the slot */
    }
    c->bytes += c->byte_capacity > 0 ? bytes : 0;
    if (c->stamps != NULL) /* locked-only: nothing else moves the tail */
        c->stamps[(ring_tail_pos(&c->ring) - 1) % c->ring.cap] = band_now();
    return 1;
}

/* Adaptive LIFO (locked-only channels): the newest element, when the oldest has been
 * queued longer than lifo_after. Returns 1 when it took one. */
static int pop_newest_locked(band_chan *c, void *out, uint64_t *bytes)
{
    struct chan_ring *r = &c->ring;
    uint64_t head = ring_head_pos(r), tail = ring_tail_pos(r);
    if (tail - head < 2 || band_now() - c->stamps[head % r->cap] <= c->lifo_after)
        return 0;
    uint64_t pos = tail - 1;
    struct ring_slot *s = ring_slot_at(r, pos);
    uint64_t b = atomic_load_explicit(ring_bytes_at(r, pos), memory_order_relaxed);
    ring_copy(out, s->data, r->elem_size);
    if (bytes != NULL)
        *bytes = b;
    /* Nothing else moves either end of a locked-only ring: give position pos back. */
    atomic_store_explicit(&s->seq, 2 * pos, memory_order_release);
    atomic_fetch_sub_explicit(&r->tail, UINT64_C(1) << RING_SHIFT, memory_order_release);
    c->bytes -= c->byte_capacity > 0 ? b : 0;
    c->lifo_taken++;
    return 1;
}

/* Pop the oldest element under the lock. Returns 1, or 0 when the ring is empty. */
static int pop_oldest_locked(band_chan *c, void *out, uint64_t *bytes)
{
    uint64_t b;
    unsigned spins = 0;
    while (ring_pop(&c->ring, out, &b, 0) != RING_OK) {
        if (ring_len(&c->ring) == 0)
            return 0;
        spin_wait(&spins); /* a sender is still copying into the head slot */
    }
    if (bytes != NULL)
        *bytes = b;
    c->bytes -= c->byte_capacity > 0 ? b : 0;
    return 1;
}

/* Pop for a receiver: the oldest element, or the newest under adaptive LIFO. */
static int pop_locked(band_chan *c, void *out, uint64_t *bytes)
{
    if (c->stamps != NULL && pop_newest_locked(c, out, bytes))
        return 1;
    return pop_oldest_locked(c, out, bytes);
}

static void account_send_wait_locked(band_chan *c, const band_waiter *w, band_time *now)
{
    if (*now == 0)
        *now = band_now();
    uint64_t ns = *now > w->_since ? (uint64_t)(*now - w->_since) : 0;
    c->send_wait_ns += ns;
    if (ns > c->send_wait_ns_max)
        c->send_wait_ns_max = ns;
    if (c->wait_histo != NULL)
        band_histo_record(c->wait_histo, ns);
}

/* ---------------------------------------------------------------- settling (locked) */

/* Deadline-aware: the pace at which waiting senders are served, a moving average (1/8)
 * of the time between two servings while senders kept waiting. */
static void note_serve_locked(band_chan *c, band_time now)
{
    if (c->last_serve != 0 && now >= c->last_serve) {
        int64_t gap = now - c->last_serve;
        c->serve_gap = c->serve_gap == 0 ? gap : c->serve_gap + (gap - c->serve_gap) / 8;
        if (c->serve_gap == 0)
            c->serve_gap = 1;
    }
    c->last_serve = now;
}

/* Deadline-aware: would a sender queued now (behind the ones waiting) miss @deadline? */
static int predicted_to_miss_locked(const band_chan *c, band_time deadline)
{
    if (!c->deadline_aware || deadline == BAND_FOREVER || c->serve_gap == 0)
        return 0;
    uint64_t ahead = c->senders.len + 1;
    if (ahead > (uint64_t)(INT64_MAX / c->serve_gap))
        return 1;
    band_time now = band_now();
    return now > deadline || (band_time)ahead * c->serve_gap > deadline - now;
}

/* Hand the head sender's element straight to @out (nothing queued, every slot reserved). */
static int take_from_head_sender_locked(band_chan *c, void *out, uint64_t *bytes,
                                        struct band__wakelist *wl)
{
    band_waiter *sw = band__waitq_first(&c->senders);
    if (sw == NULL || sender_kind(sw) != OP_SEND)
        return 0; /* a reserve op at the head holds the rest back */
    struct band_chan_send_op *sop = send_op_of(sw);
    band_time now = 0;
    band__waitq_unlink_locked(&c->senders, sw);
    account_send_wait_locked(c, sw, &now);
    memcpy(out, sop->elem, c->ring.elem_size);
    if (bytes != NULL)
        *bytes = sop->bytes;
    c->direct++;
    band__waiter_complete_locked(sw, 0, wl);
    return 1;
}

/* Waiting receivers take queued elements (or a waiting sender's), oldest first. */
static int serve_receivers_locked(band_chan *c, struct band__wakelist *wl)
{
    int served = 0;
    band_waiter *w;
    while ((w = band__waitq_first(&c->receivers)) != NULL) {
        struct band_chan_recv_op *op = recv_op_of(w);
        if (!pop_locked(c, op->out, &op->bytes) &&
            !take_from_head_sender_locked(c, op->out, &op->bytes, wl))
            break;
        band__waitq_unlink_locked(&c->receivers, w);
        band__waiter_complete_locked(w, 0, wl);
        served = 1;
    }
    return served;
}

/* Freed room goes to the waiting senders, oldest first. */
static int serve_senders_locked(band_chan *c, struct band__wakelist *wl)
{
    int served = 0;
    band_time now = 0;
    band_waiter *w;
    while ((w = band__waitq_first(&c->senders)) != NULL) {
        uint64_t bytes = sender_bytes(w);
        if (!has_room_locked(c, bytes))
            break; /* the head waits for room; FIFO holds back the rest */
        if (sender_kind(w) == OP_SEND) {
            if (!push_locked(c, send_op_of(w)->elem, bytes))
                break;
        } else {
            struct band_chan_reserve_op *rop = reserve_op_of(w);
            c->reserved++;
            c->reserved_bytes += bytes;
            rop->slot.chan = c;
            rop->slot.bytes = bytes;
        }
        band__waitq_unlink_locked(&c->senders, w);
        account_send_wait_locked(c, w, &now);
        note_serve_locked(c, now);
        band__waiter_complete_locked(w, 0, wl);
        served = 1;
    }
    if (c->senders.len == 0)
        c->last_serve = 0; /* idle time between bursts is not service time */
    return served;
}

/* Closed, empty, and no reservation left to fill: receivers are told. */
static void end_receivers_if_done_locked(band_chan *c, struct band__wakelist *wl)
{
    if (!c->closed || ring_len(&c->ring) > 0 || c->reserved > 0)
        return;
    band_waiter *w;
    while ((w = band__waitq_first(&c->receivers)) != NULL) {
        band__waitq_unlink_locked(&c->receivers, w);
        band__waiter_complete_locked(w, BAND_ECLOSED, wl);
    }
}

/* Serve both queues until neither moves, then tell receivers about the end and reopen
 * whatever gate no longer needs to be shut. */
static void settle_locked(band_chan *c, struct band__wakelist *wl)
{
    int moved;
    do {
        moved = serve_receivers_locked(c, wl);
        moved |= serve_senders_locked(c, wl);
    } while (moved);
    end_receivers_if_done_locked(c, wl);
    update_gates_locked(c);
}

/* Settle under the lock (after a fast operation found waiters on the other side). */
static CHAN_NOINLINE int settle_now(band_chan *c)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    settle_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return 0;
}

/* After a fast operation: if the other side has waiters, settle under the lock. */
static inline void settle_if_waiting(band_chan *c, uint64_t bit)
{
    /* No fence: the seq_cst CAS that took the position orders this load after it. */
    if (band__unlikely((atomic_load_explicit(&c->waiting, memory_order_seq_cst) & bit) != 0))
        (void)settle_now(c);
}

/* The other side's waiters after a fast operation, as settle_if_waiting(), returning 0 so
 * that the fast paths end in a tail call (no registers to save around it). */
static inline int done_fast(band_chan *c, uint64_t bit)
{
    if (band__unlikely((atomic_load_explicit(&c->waiting, memory_order_seq_cst) & bit) != 0))
        return settle_now(c);
    return 0;
}

static void chan_cancel_sender_locked(struct band__waitq *q, band_waiter *w, int reason,
                                      struct band__wakelist *wl)
{
    band_chan *c = band__container_of(q, band_chan, senders);
    band_time now = 0;
    (void)reason;
    band__waitq_unlink_locked(q, w);
    account_send_wait_locked(c, w, &now);
    settle_locked(c, wl); /* the next one may fit where the head did not */
}

static void chan_cancel_receiver_locked(struct band__waitq *q, band_waiter *w, int reason,
                                        struct band__wakelist *wl)
{
    band_chan *c = band__container_of(q, band_chan, receivers);
    (void)reason;
    (void)wl;
    band__waitq_unlink_locked(q, w);
    update_gates_locked(c);
}

/* ---------------------------------------------------------------- sending */

/* Checks shared by every send and reservation: BAND_EINVAL, BAND_E2BIG or 0. */
static int check_send(band_chan *c, uint64_t bytes, int want_drop_policy)
{
    if ((c->overflow != BAND_CHAN_WAIT) != want_drop_policy)
        return BAND_EINVAL;
    if (c->byte_capacity == 0 && bytes > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (c->byte_capacity > 0 && bytes > c->byte_capacity) {
        pthread_mutex_lock(&c->lock);
        c->refused_too_big++;
        pthread_mutex_unlock(&c->lock);
        return BAND_E2BIG;
    }
    return 0;
}

/* One attempt to send (or reserve) now, with nobody queued ahead: 1 done, 0 no room. */
static int send_now_locked(band_chan *c, int kind, const void *elem, uint64_t bytes,
                           struct band__wakelist *wl)
{
    if (kind == OP_RESERVE) {
        /* Fast senders must count this reservation from now on: shut their gate first
         * (the caller reopens it if this fails and nothing else needs it shut). */
        ring_gate_set(&c->ring.tail);
        if (!has_room_locked(c, bytes))
            return 0;
        c->reserved++;
        c->reserved_bytes += bytes;
        return 1;
    }
    if (has_room_locked(c, bytes) && push_locked(c, elem, bytes)) {
        settle_locked(c, wl); /* a waiting receiver takes it */
        return 1;
    }
    /* No room, but receivers wait (every slot is reserved): hand it over directly. */
    band_waiter *w = band__waitq_first(&c->receivers);
    if (w != NULL && ring_len(&c->ring) == 0) {
        struct band_chan_recv_op *op = recv_op_of(w);
        band__waitq_unlink_locked(&c->receivers, w);
        memcpy(op->out, elem, c->ring.elem_size);
        op->bytes = bytes;
        c->direct++;
        band__waiter_complete_locked(w, 0, wl);
        update_gates_locked(c);
        return 1;
    }
    return 0;
}

/*
 * Send *@elem (kind OP_SEND) or reserve (OP_RESERVE) now, queue @w, or refuse. @w is the
 * waiter of a struct band_chan_send_op (OP_SEND) or band_chan_reserve_op (OP_RESERVE)
 * whose input copies are filled in, or NULL for try operations. Returns 0, BAND_PENDING,
 * BAND_EAGAIN (try only), BAND_ETIMEDOUT (deadline-aware) or BAND_ECLOSED.
 */
static int send_locked(band_chan *c, int kind, const void *elem, uint64_t bytes, band_waiter *w,
                       struct band__wakelist *wl)
{
    if (c->closed) {
        c->refused_closed++;
        return BAND_ECLOSED;
    }
    if (c->senders.len > 0)
        settle_locked(c, wl); /* room a fast receiver freed may not be handed out yet */
    if (c->senders.len == 0 && send_now_locked(c, kind, elem, bytes, wl))
        return 0;
    if (w == NULL) {
        c->refused_full++;
        update_gates_locked(c); /* a failed reservation shut the gate */
        return BAND_EAGAIN;
    }
    if (predicted_to_miss_locked(c, w->deadline)) {
        c->refused_deadline++;
        update_gates_locked(c);
        return BAND_ETIMEDOUT; /* refuse now rather than wait to fail */
    }
    if (c->senders.len == 0) {
        /* About to be the first waiter: shut the gate, then look once more. */
        gate_for_wait_locked(c, W_SENDERS);
        if (send_now_locked(c, kind, elem, bytes, wl)) {
            update_gates_locked(c);
            return 0;
        }
    }
    band__waitq_push_locked(&c->senders, w, (uint64_t)kind, band_now());
    return BAND_PENDING;
}

/* The lock/submit/unlock/wake frame around send_locked(). */
static int send_submit(band_chan *c, int kind, const void *elem, uint64_t bytes, band_waiter *w)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&c->lock);
    int rc = send_locked(c, kind, elem, bytes, w, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    return rc;
}

/* The lock-free send: RING_OK (sent), RING_NONE (full) or RING_GATED (take the lock). */
static inline int send_fast(band_chan *c, const void *elem, uint64_t bytes)
{
    int rc = ring_push(&c->ring, elem, bytes, 1);
    if (rc == RING_OK)
        settle_if_waiting(c, W_RECEIVERS);
    return rc;
}

/* A blocking send or reservation: its op (the waiter first in either) and its parker. */
struct chan_blocking_send {
    union {
        struct band_chan_send_op send;
        struct band_chan_reserve_op reserve;
    } op;
    struct band__parker parker;
};

static void blocking_send_wake(band_waiter *w)
{
    struct chan_blocking_send *b = band__container_of(w, struct chan_blocking_send, op.send.w);
    band__parker_unpark(&b->parker);
}

/* A blocking send or reservation: try, then wait in the sender queue until @deadline. */
static CHAN_NOINLINE int send_blocking(band_chan *c, int kind, const void *elem, uint64_t bytes,
                                       band_time deadline, band_cancel *cancel)
{
    /* Deadline-aware senders try once and then let the locked path predict: they decide
     * at once instead of spinning toward a deadline they are about to be refused for. */
    int tries = c->deadline_aware && deadline != BAND_FOREVER ? 1 : CHAN_SPINS + CHAN_YIELDS;
    if (kind == OP_SEND) {
        for (int i = 0; i < tries; i++) {
            int rc = send_fast(c, elem, bytes);
            if (rc == RING_OK)
                return 0;
            if (rc == RING_GATED || i + 1 == tries || !backoff(i, deadline, cancel))
                break;
            if (i < CHAN_SPINS)
                i = wait_run(&c->ring, ring_tail_pos(&c->ring), 0, i);
        }
    }
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0) {
        int rc = send_submit(c, kind, elem, bytes, NULL); /* do not wait */
        return rc == BAND_EAGAIN ? refusal : rc;
    }
    int rc;
    struct chan_blocking_send b;
    band_waiter *w;
    if (kind == OP_SEND) {
        w = &b.op.send.w;
        b.op.send.elem = elem;
        b.op.send.bytes = bytes;
    } else {
        w = &b.op.reserve.w;
        b.op.reserve.bytes = bytes;
        b.op.reserve.slot.chan = NULL;
        b.op.reserve.slot.bytes = 0;
    }
    band_waiter_init(w, blocking_send_wake, NULL);
    w->deadline = deadline;
    band__parker_init(&b.parker);
    rc = send_submit(c, kind, elem, bytes, w);
    if (rc == BAND_PENDING)
        rc = band__block(w, &b.parker, deadline, cancel);
    band__parker_destroy(&b.parker);
    return rc;
}

/* band_chan_try_send() after its first fast attempt failed or was not allowed. */
static CHAN_NOINLINE int try_send_slow(band_chan *c, const void *elem, uint64_t bytes)
{
    if (c == NULL || elem == NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    if (rc != 0)
        return rc;
    if (send_fast(c, elem, bytes) == RING_OK)
        return 0;
    return send_submit(c, OP_SEND, elem, bytes, NULL);
}

int band_chan_try_send(band_chan *c, const void *elem, uint64_t bytes)
{
    if (band__unlikely(c == NULL || elem == NULL || bytes > BAND_MAX_UNITS ||
                       c->ring.elem_size != 8) ||
        band__unlikely(ring_push_n(&c->ring, elem, bytes, 1, 8) != RING_OK))
        return try_send_slow(c, elem, bytes); /* as in band_chan_send() */
    return done_fast(c, W_RECEIVERS);
}

/* band_chan_send() after its first fast attempt failed or was not allowed. */
static CHAN_NOINLINE int send_slow(band_chan *c, const void *elem, uint64_t bytes,
                                   band_time deadline, band_cancel *cancel)
{
    if (c == NULL || elem == NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    return rc != 0 ? rc : send_blocking(c, OP_SEND, elem, bytes, deadline, cancel);
}

int band_chan_send(band_chan *c, const void *elem, uint64_t bytes, band_time deadline,
                   band_cancel *cancel)
{
    /* The first attempt, inline for 8-byte elements (a u64, a pointer: the copy is one
     * move and no register needs saving); everything else, and other sizes, is a tail
     * call. An open gate means a waiting channel without a byte bound, where
     * check_send() refuses only bytes above BAND_MAX_UNITS. */
    if (band__unlikely(c == NULL || elem == NULL || bytes > BAND_MAX_UNITS ||
                       c->ring.elem_size != 8) ||
        band__unlikely(ring_push_n(&c->ring, elem, bytes, 1, 8) != RING_OK))
        return send_slow(c, elem, bytes, deadline, cancel);
    return done_fast(c, W_RECEIVERS);
}

/* Submit an async send or reservation whose op's waiter is @w (its input copies filled
 * in; checked by the caller with band__waiter_check_submit()). */
static int send_async(band_chan *c, int kind, const void *elem, uint64_t bytes, band_waiter *w)
{
    int rc = check_send(c, bytes, 0);
    if (rc == 0) {
        if (kind == OP_SEND && send_fast(c, elem, bytes) == RING_OK)
            rc = 0;
        else
            rc = send_submit(c, kind, elem, bytes, w);
    }
    if (rc != BAND_PENDING && rc != BAND_EINVAL)
        band__waiter_finish_now(w, rc);
    return rc;
}

int band_chan_send_async(band_chan *c, const void *elem, uint64_t bytes, band_chan_send_op *op)
{
    if (c == NULL || elem == NULL || op == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    op->elem = elem;
    op->bytes = bytes;
    return send_async(c, OP_SEND, elem, bytes, &op->w);
}

/* The declared bytes of the oldest element (locked-only channels: nothing moves). */
static uint64_t head_bytes_locked(const band_chan *c)
{
    return atomic_load_explicit(ring_bytes_at(&c->ring, ring_head_pos(&c->ring)),
                                memory_order_relaxed);
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
            memcpy(dropped, elem, c->ring.elem_size);
            if (dropped_bytes != NULL)
                *dropped_bytes = bytes;
            c->dropped++;
            *dropped_out = 1;
            rc = 0;
        } else if (ring_len(&c->ring) > 0 &&
                   (c->byte_capacity == 0 ||
                    c->bytes - head_bytes_locked(c) + c->reserved_bytes + bytes <=
                        c->byte_capacity)) {
            (void)pop_oldest_locked(c, dropped, dropped_bytes);
            c->evicted++;
            c->dropped++;
            (void)push_locked(c, elem, bytes); /* the evicted element's slot */
            settle_locked(c, &wl);
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

int band_chan_reserve(band_chan *c, uint64_t bytes, band_chan_slot *slot, band_time deadline,
                      band_cancel *cancel)
{
    if (c == NULL || slot == NULL || slot->chan != NULL)
        return BAND_EINVAL;
    int rc = check_send(c, bytes, 0);
    if (rc == 0)
        rc = send_blocking(c, OP_RESERVE, NULL, bytes, deadline, cancel);
    if (rc == 0) {
        slot->chan = c;
        slot->bytes = bytes;
    }
    return rc;
}

int band_chan_reserve_async(band_chan *c, uint64_t bytes, band_chan_reserve_op *op)
{
    if (c == NULL || op == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    op->bytes = bytes;
    op->slot.chan = NULL;
    op->slot.bytes = 0;
    rc = send_async(c, OP_RESERVE, NULL, bytes, &op->w);
    if (rc == 0) {
        op->slot.chan = c;
        op->slot.bytes = bytes;
    }
    return rc;
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
    /* The reservation is the room: the tail's gate kept every other sender out of it. */
    (void)push_locked(c, elem, slot->bytes);
    settle_locked(c, &wl);
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
    settle_locked(c, &wl);
    pthread_mutex_unlock(&c->lock);
    band__wakelist_run(&wl);
    slot->chan = NULL;
    slot->bytes = 0;
    return 0;
}

/* ---------------------------------------------------------------- receiving */

/* One attempt to receive now, with no receiver queued ahead: 1 done, 0 nothing. */
static int recv_now_locked(band_chan *c, void *out, uint64_t *bytes, struct band__wakelist *wl)
{
    if (pop_locked(c, out, bytes) || take_from_head_sender_locked(c, out, bytes, wl)) {
        settle_locked(c, wl); /* the freed room goes to waiting senders */
        return 1;
    }
    return 0;
}

/*
 * Take the oldest element now, queue @op, or refuse (lock held). Returns 0, BAND_PENDING,
 * BAND_EAGAIN (@op NULL) or BAND_ECLOSED.
 */
static int recv_locked(band_chan *c, void *out, uint64_t *bytes, struct band_chan_recv_op *op,
                       struct band__wakelist *wl)
{
    if (c->receivers.len > 0)
        settle_locked(c, wl); /* an element a fast sender published may not be handed out */
    if (c->receivers.len == 0 && recv_now_locked(c, out, bytes, wl))
        return 0;
    if (c->closed && ring_len(&c->ring) == 0 && c->reserved == 0)
        return BAND_ECLOSED;
    if (op == NULL)
        return BAND_EAGAIN;
    if (c->receivers.len == 0) {
        gate_for_wait_locked(c, W_RECEIVERS);
        if (recv_now_locked(c, out, bytes, wl)) {
            update_gates_locked(c);
            return 0;
        }
    }
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

/* The lock-free receive: RING_OK, RING_NONE (empty) or RING_GATED (take the lock). */
static inline int recv_fast(band_chan *c, void *out, uint64_t *bytes)
{
    int rc = ring_pop(&c->ring, out, bytes, 1);
    if (rc == RING_OK)
        settle_if_waiting(c, W_SENDERS);
    return rc;
}

/* Nothing to receive and nothing that could change that under the lock: an empty ring
 * with no element on its way, no waiting sender, and the channel still open. */
static int surely_empty(const band_chan *c)
{
    return atomic_load_explicit(&c->waiting, memory_order_acquire) == 0 &&
           !atomic_load_explicit(&c->closed_flag, memory_order_acquire) && ring_len(&c->ring) == 0;
}

/* While a receiver spins on an empty ring: no sender waits (whose element it could take)
 * and the channel is open. Both are read-mostly words; the ring's own positions are not
 * read here, so a spinning receiver does not pull the producer's tail line every time. */
static int nothing_coming_but_the_ring(const band_chan *c)
{
    return atomic_load_explicit(&c->waiting, memory_order_acquire) == 0 &&
           !atomic_load_explicit(&c->closed_flag, memory_order_acquire);
}

int band_chan_try_recv(band_chan *c, void *out, uint64_t *bytes)
{
    if (c == NULL || out == NULL)
        return BAND_EINVAL;
    int rc = recv_fast(c, out, bytes);
    if (rc == RING_OK)
        return 0;
    if (rc == RING_NONE && surely_empty(c))
        return BAND_EAGAIN;
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

static CHAN_NOINLINE int recv_blocking(band_chan *c, void *out, uint64_t *bytes, band_time deadline,
                                       band_cancel *cancel);

int band_chan_recv(band_chan *c, void *out, uint64_t *bytes, band_time deadline,
                   band_cancel *cancel)
{
    if (band__unlikely(c == NULL || out == NULL || c->ring.elem_size != 8) ||
        band__unlikely(ring_pop_n(&c->ring, out, bytes, 1, 8) != RING_OK))
        return recv_blocking(c, out, bytes, deadline, cancel);
    return done_fast(c, W_SENDERS);
}

/* band_chan_recv() after a first fast attempt failed: retry, then queue. */
static int recv_blocking(band_chan *c, void *out, uint64_t *bytes, band_time deadline,
                         band_cancel *cancel)
{
    if (c == NULL || out == NULL)
        return BAND_EINVAL;
    for (int i = 0; i < CHAN_SPINS + CHAN_YIELDS; i++) {
        int rc = recv_fast(c, out, bytes);
        if (rc == RING_OK)
            return 0;
        if (rc == RING_GATED || !nothing_coming_but_the_ring(c) || !backoff(i, deadline, cancel))
            break;
        if (i < CHAN_SPINS)
            i = wait_run(&c->ring, ring_head_pos(&c->ring), 1, i);
    }
    int refusal = band__wait_refusal(deadline, cancel);
    if (refusal != 0) {
        int rc = recv_submit(c, out, bytes, NULL); /* do not wait */
        return rc == BAND_EAGAIN ? refusal : rc;
    }
    int rc;
    struct chan_blocking_recv b;
    band_waiter_init(&b.op.w, blocking_recv_wake, NULL);
    b.op.w.deadline = deadline;
    b.op.bytes = 0;
    band__parker_init(&b.parker);
    rc = recv_submit(c, out, bytes, &b.op);
    if (rc == BAND_PENDING) {
        rc = band__block(&b.op.w, &b.parker, deadline, cancel);
        if (rc == 0 && bytes != NULL)
            *bytes = b.op.bytes;
    }
    band__parker_destroy(&b.parker);
    return rc;
}

int band_chan_recv_async(band_chan *c, void *out, band_chan_recv_op *op)
{
    if (c == NULL || out == NULL || op == NULL)
        return BAND_EINVAL;
    int rc = band__waiter_check_submit(&op->w);
    if (rc != 0)
        return rc;
    op->out = out;
    op->bytes = 0;
    if (recv_fast(c, out, &op->bytes) == RING_OK)
        rc = 0;
    else
        rc = recv_submit(c, out, &op->bytes, op);
    if (rc != BAND_PENDING)
        band__waiter_finish_now(&op->w, rc);
    return rc;
}

int band_chan_recv_many(band_chan *c, size_t max, void *out, uint64_t *bytes, size_t *n,
                        band_time deadline, band_cancel *cancel)
{
    if (n != NULL)
        *n = 0;
    if (c == NULL || out == NULL || max == 0 || n == NULL)
        return BAND_EINVAL;
    unsigned char *dst = out;
    size_t esz = c->ring.elem_size;
    size_t got = 0;
    int rc = RING_OK;
    got = ring_pop_many(&c->ring, dst, bytes, max, 1, &rc);
    if (got == 0) {
        /* Nothing ready for us: wait for the first element like band_chan_recv(). */
        int err = band_chan_recv(c, dst, bytes, deadline, cancel);
        if (err != 0)
            return err;
        got = 1;
        if (max > 1)
            got += ring_pop_many(&c->ring, dst + esz, bytes != NULL ? bytes + 1 : NULL, max - 1, 1,
                                 &rc);
    }
    if (rc == RING_GATED || (atomic_load_explicit(&c->waiting, memory_order_seq_cst) & W_SENDERS)) {
        /* A locked-only channel, or senders wait: the room this batch freed goes to them
         * at once, and their elements may join the batch, all in one critical section. */
        struct band__wakelist wl;
        band__wakelist_init(&wl);
        pthread_mutex_lock(&c->lock);
        settle_locked(c, &wl);
        while (got < max && c->receivers.len == 0 &&
               pop_locked(c, dst + got * esz, bytes != NULL ? &bytes[got] : NULL)) {
            got++;
            settle_locked(c, &wl);
        }
        pthread_mutex_unlock(&c->lock);
        band__wakelist_run(&wl);
    }
    *n = got;
    return 0;
}

/* ---------------------------------------------------------------- close and senders */

static void close_locked(band_chan *c, struct band__wakelist *wl)
{
    if (c->closed)
        return;
    c->closed = 1;
    atomic_store_explicit(&c->closed_flag, 1, memory_order_release);
    ring_gate_set(&c->ring.tail); /* from now on no fast send can succeed */
    band_time now = 0;
    band_waiter *w;
    while ((w = band__waitq_first(&c->senders)) != NULL) {
        band__waitq_unlink_locked(&c->senders, w);
        account_send_wait_locked(c, w, &now);
        c->refused_closed++;
        band__waiter_complete_locked(w, BAND_ECLOSED, wl);
    }
    settle_locked(c, wl);
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

int band_chan_is_closed(const band_chan *c)
{
    return c != NULL && atomic_load_explicit(&c->closed_flag, memory_order_acquire);
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

/* Declared bytes in the ring, summed (no byte bound: nothing else counts them), saturating
 * at UINT64_MAX. Slots still being copied count with whatever bytes they hold. */
static uint64_t ring_bytes_sum(const band_chan *c)
{
    uint64_t sum = 0;
    uint64_t end = ring_tail_pos(&c->ring);
    for (uint64_t p = ring_head_pos(&c->ring); p < end; p++) {
        const struct ring_slot *s = ring_slot_at(&c->ring, p);
        uint64_t b = atomic_load_explicit(&s->seq, memory_order_acquire) == 2 * p + 1
                         ? atomic_load_explicit(ring_bytes_at(&c->ring, p), memory_order_relaxed)
                         : 0;
        sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
    }
    return sum;
}

int band_chan_get_stats(const band_chan *cc, band_chan_stats *out)
{
    if (cc == NULL || out == NULL)
        return BAND_EINVAL;
    band_chan *c = (band_chan *)cc; /* the lock is logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->lock);
    uint64_t head = ring_head_pos(&c->ring);
    uint64_t tail = ring_tail_pos(&c->ring);
    memcpy(out->name, c->name, sizeof(out->name));
    out->closed = c->closed;
    out->capacity = c->ring.cap;
    out->byte_capacity = c->byte_capacity;
    out->len = tail - head;
    out->bytes = c->byte_capacity > 0 ? c->bytes : ring_bytes_sum(c);
    out->reserved = c->reserved;
    out->reserved_bytes = c->reserved_bytes;
    out->senders = c->nsenders;
    out->waiting_senders = c->senders.len;
    out->waiting_receivers = c->receivers.len;
    out->sent = tail + c->direct + c->lifo_taken;
    out->received = head + c->direct - c->evicted + c->lifo_taken;
    out->refused_full = c->refused_full;
    out->refused_closed = c->refused_closed;
    out->refused_too_big = c->refused_too_big;
    out->dropped = c->dropped;
    out->send_wait_ns = c->send_wait_ns;
    out->send_wait_ns_max = c->send_wait_ns_max;
    out->refused_deadline = c->refused_deadline;
    out->serve_gap_ns = (uint64_t)c->serve_gap;
    out->lifo_taken = c->lifo_taken;
    pthread_mutex_unlock(&c->lock);
    return 0;
}
