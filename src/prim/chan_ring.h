/* SPDX-License-Identifier: MIT */
/*
 * chan_ring.h - the bounded ring behind band_chan (internal).
 *
 * A bounded MPMC ring with one sequence number per slot (Vyukov's design): a sender takes
 * position p by a CAS on the tail when slot p % cap says "free for position p"
 * (seq == 2p), copies its element in and publishes it (seq = 2p + 1); a receiver takes
 * position p by a CAS on the head when the slot says "published" (seq == 2p + 1), copies
 * the element out and frees the slot for position p + cap (seq = 2(p + cap)). Doubling
 * keeps "published at p" and "free for p + 1" apart when cap is 1. Positions only grow, so the
 * number of elements sent into the ring is the tail position and the number taken out is the head
 * position.
 *
 * The low bit of each end's word is a gate: while it is set, the fast path of that side
 * refuses (its CAS needs the bit clear) and the operation goes to the channel's lock,
 * where waiters are queued in order. Operations under the lock use the same ring with
 * the gate ignored (the CAS keeps the bit), so the fast and the locked paths always agree
 * about which slot is whose. Publishing and freeing a slot are release stores. The CAS
 * that takes a position is seq_cst: the channel reads its wait bits after it with no
 * other fence, and it pairs with the fence a waiter executes between announcing itself
 * and its last look at the positions (no lost wake-up).
 */
#ifndef BAND_CHAN_RING_H
#define BAND_CHAN_RING_H

#include <stdatomic.h>
#include <string.h>

#include "core/internal.h"

#define RING_GATE  UINT64_C(1)
#define RING_SHIFT 1

enum ring_rc { RING_OK = 0, RING_NONE = 1, RING_GATED = 2 };

struct chan_ring {
    _Alignas(BAND__CACHELINE) _Atomic uint64_t tail; /* position << 1 | gate */
    _Alignas(BAND__CACHELINE) _Atomic uint64_t head; /* position << 1 | gate */
    _Alignas(BAND__CACHELINE) unsigned char *slots;  /* read-only after creation below */
    _Atomic uint64_t *bytes; /* declared bytes per slot: atomic only so that a stats reader
                                never races a copy */
    size_t stride;           /* bytes per slot */
    size_t elem_size;
    uint64_t cap;
    uint64_t mask; /* cap - 1 when cap is a power of two, else 0 */
};

/*
 * A slot: its sequence number, then the element. The slots are cache-line aligned and,
 * up to a cache line, a power of two in size, so that a slot never straddles two lines:
 * a send and the receive of its element each touch one line of the ring (a u64 slot is 16
 * bytes, four to a line). The declared bytes live in a separate array, written by the
 * sender and read only by a receiver that asks for them (and by stats), so a receiver
 * that does not ask never pulls that line.
 */
struct ring_slot {
    _Atomic uint64_t seq;
    unsigned char data[];
};
/* ring_stride(8) is then 16, which ring_slot_of_n() relies on. */
_Static_assert(sizeof(struct ring_slot) == 8, "a slot's header is its sequence number");

/* The stride of a slot holding @elem_size bytes (see struct ring_slot), or 0 when it
 * would overflow. */
static inline size_t ring_stride(size_t elem_size)
{
    if (elem_size > SIZE_MAX / 2 - 64)
        return 0;
    size_t need = sizeof(struct ring_slot) + elem_size;
    if (need <= 64) {
        size_t p = 16;
        while (p < need)
            p *= 2;
        return p;
    }
    return (need + 7) & ~(size_t)7;
}

/* Copies one element; the common sizes are inlined (a pointer, a u64, two words). */
static inline void ring_copy(void *dst, const void *src, size_t n)
{
    if (n == 8)
        memcpy(dst, src, 8);
    else if (n == 16)
        memcpy(dst, src, 16);
    else
        memcpy(dst, src, n);
}

static inline size_t ring_index(const struct chan_ring *r, uint64_t pos)
{
    return (size_t)(r->mask != 0 || r->cap == 1 ? (pos & r->mask) : pos % r->cap);
}

/* Store an element's declared bytes, only when they differ from what the slot holds: the
 * common senders declare the same bytes every time (0, or the element's size), and then
 * the array's lines are never written again, so several senders do not pull them from
 * each other. Only the owner of the slot's position writes it. */
static inline void ring_set_bytes(_Atomic uint64_t *bytesp, uint64_t bytes)
{
    if (atomic_load_explicit(bytesp, memory_order_relaxed) != bytes)
        atomic_store_explicit(bytesp, bytes, memory_order_relaxed);
}

/* The copy and publish of a slot for elements of other sizes than a u64 or a pointer, out
 * of line: the inlined fast paths then need no registers saved around a memcpy call. */
static __attribute__((noinline, unused)) void ring_fill(struct ring_slot *s,
                                                        _Atomic uint64_t *bytesp, const void *elem,
                                                        size_t n, uint64_t bytes, uint64_t seq)
{
    ring_copy(s->data, elem, n);
    ring_set_bytes(bytesp, bytes);
    atomic_store_explicit(&s->seq, seq, memory_order_release);
}

static __attribute__((noinline, unused)) void ring_drain(struct ring_slot *s,
                                                         _Atomic uint64_t *bytesp, void *out,
                                                         size_t n, uint64_t *bytes, uint64_t seq)
{
    ring_copy(out, s->data, n);
    if (bytes != NULL)
        *bytes = atomic_load_explicit(bytesp, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq, memory_order_release);
}

static inline struct ring_slot *ring_slot_of(const struct chan_ring *r, size_t i)
{
    return (struct ring_slot *)(void *)(r->slots + i * r->stride);
}

/* As ring_slot_of() for elements of @esz bytes: the stride of a u64 or pointer slot is a
 * constant (16), so the inlined fast paths index with a shift instead of loading the
 * stride and multiplying. */
static inline struct ring_slot *ring_slot_of_n(const struct chan_ring *r, size_t i, size_t esz)
{
    if (esz == 8)
        return (struct ring_slot *)(void *)(r->slots + i * 16);
    return ring_slot_of(r, i);
}

static inline struct ring_slot *ring_slot_at(const struct chan_ring *r, uint64_t pos)
{
    return ring_slot_of(r, ring_index(r, pos));
}

/* The declared bytes of the element at @pos (published or being copied). */
static inline _Atomic uint64_t *ring_bytes_at(const struct chan_ring *r, uint64_t pos)
{
    return &r->bytes[ring_index(r, pos)];
}

/* Positions: elements sent into the ring, and taken out of it. */
static inline uint64_t ring_tail_pos(const struct chan_ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire) >> RING_SHIFT;
}

static inline uint64_t ring_head_pos(const struct chan_ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) >> RING_SHIFT;
}

/* Elements in the ring, counting those being copied in or out. Reads the head first, so
 * the difference never goes below zero. */
static inline uint64_t ring_len(const struct chan_ring *r)
{
    uint64_t h = ring_head_pos(r);
    return ring_tail_pos(r) - h;
}

/*
 * Copy *@elem into the ring. @gated: refuse with RING_GATED while the tail's gate is set
 * (the fast path); 0 ignores it (the locked path). RING_NONE: the slot at the tail is not
 * free yet (full, or its receiver is still copying out).
 */
static inline int ring_push_n(struct chan_ring *r, const void *elem, uint64_t bytes, int gated,
                              size_t esz)
{
    uint64_t tw = atomic_load_explicit(&r->tail, memory_order_relaxed);
    struct ring_slot *s;
    uint64_t pos;
    size_t i;
    for (;;) {
        if (gated && (tw & RING_GATE))
            return RING_GATED;
        pos = tw >> RING_SHIFT;
        i = ring_index(r, pos);
        s = ring_slot_of_n(r, i, esz);
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        int64_t dif = (int64_t)(seq - 2 * pos);
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->tail, &tw, tw + (1u << RING_SHIFT),
                                                      memory_order_seq_cst, memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return RING_NONE;
        } else {
            tw = atomic_load_explicit(&r->tail, memory_order_relaxed);
        }
    }
    if (band__likely(esz == 8)) {
        memcpy(s->data, elem, 8);
        ring_set_bytes(&r->bytes[i], bytes);
        atomic_store_explicit(&s->seq, 2 * pos + 1, memory_order_release);
    } else {
        ring_fill(s, &r->bytes[i], elem, esz, bytes, 2 * pos + 1);
    }
    return RING_OK;
}

static inline int ring_push(struct chan_ring *r, const void *elem, uint64_t bytes, int gated)
{
    return ring_push_n(r, elem, bytes, gated, r->elem_size);
}

/*
 * Copy the oldest element out of the ring into *@out (and its bytes into *@bytes when not
 * NULL). @gated as for ring_push(). RING_NONE: nothing published at the head (empty, or
 * its sender is still copying in).
 */
static inline int ring_pop_n(struct chan_ring *r, void *out, uint64_t *bytes, int gated, size_t esz)
{
    uint64_t hw = atomic_load_explicit(&r->head, memory_order_relaxed);
    struct ring_slot *s;
    uint64_t pos;
    size_t i;
    for (;;) {
        if (gated && (hw & RING_GATE))
            return RING_GATED;
        pos = hw >> RING_SHIFT;
        i = ring_index(r, pos);
        s = ring_slot_of_n(r, i, esz);
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        int64_t dif = (int64_t)(seq - (2 * pos + 1));
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->head, &hw, hw + (1u << RING_SHIFT),
                                                      memory_order_seq_cst, memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return RING_NONE;
        } else {
            hw = atomic_load_explicit(&r->head, memory_order_relaxed);
        }
    }
    if (band__likely(esz == 8)) {
        memcpy(out, s->data, 8);
        if (bytes != NULL)
            *bytes = atomic_load_explicit(&r->bytes[i], memory_order_relaxed);
        atomic_store_explicit(&s->seq, 2 * (pos + r->cap), memory_order_release);
    } else {
        ring_drain(s, &r->bytes[i], out, esz, bytes, 2 * (pos + r->cap));
    }
    return RING_OK;
}

static inline int ring_pop(struct chan_ring *r, void *out, uint64_t *bytes, int gated)
{
    return ring_pop_n(r, out, bytes, gated, r->elem_size);
}

/*
 * Copy up to @max of the oldest elements out of the ring into the array @out (and their
 * bytes into the array @bytes when not NULL), with one CAS on the head for the whole
 * batch: the run of published slots from the head is counted, then the head is moved
 * past all of them at once. No other receiver can take a position behind the head, and a
 * published slot stays published until its taker frees it, so the run is still ours
 * after the CAS. Returns how many it took; *@rc is RING_GATED when the gate refused (0
 * taken, fast path only), else RING_OK.
 */
static inline size_t ring_pop_many(struct chan_ring *r, unsigned char *out, uint64_t *bytes,
                                   size_t max, int gated, int *rc)
{
    /* Locals: the compiler cannot keep fields in registers across the atomic stores. */
    unsigned char *const slots = r->slots;
    _Atomic uint64_t *const bytes_at = r->bytes;
    const size_t stride = r->stride, esz = r->elem_size;
    const uint64_t cap = r->cap;
    uint64_t hw = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t pos;
    size_t k;
    *rc = RING_OK;
    for (;;) {
        if (gated && (hw & RING_GATE)) {
            *rc = RING_GATED;
            return 0;
        }
        pos = hw >> RING_SHIFT;
        int64_t dif = 0;
        size_t i = ring_index(r, pos);
        for (k = 0; k < max; k++) {
            const struct ring_slot *s = (const void *)(slots + i * stride);
            uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
            dif = (int64_t)(seq - (2 * (pos + k) + 1));
            if (dif != 0)
                break;
            if (++i == cap)
                i = 0;
        }
        if (k == 0 && dif < 0)
            return 0; /* nothing published at the head */
        if (k == 0)
            hw = atomic_load_explicit(&r->head, memory_order_relaxed); /* taken: look again */
        else if (atomic_compare_exchange_weak_explicit(&r->head, &hw,
                                                       hw + ((uint64_t)k << RING_SHIFT),
                                                       memory_order_seq_cst, memory_order_relaxed))
            break;
    }
    size_t i = ring_index(r, pos);
    uint64_t free_seq = 2 * (pos + cap);
    for (size_t j = 0; j < k; j++, free_seq += 2) {
        struct ring_slot *s = (void *)(slots + i * stride);
        if (band__likely(esz == 8))
            memcpy(out + j * 8, s->data, 8);
        else
            ring_copy(out + j * esz, s->data, esz);
        if (bytes != NULL)
            bytes[j] = atomic_load_explicit(&bytes_at[i], memory_order_relaxed);
        atomic_store_explicit(&s->seq, free_seq, memory_order_release);
        if (++i == cap)
            i = 0;
    }
    return k;
}

/* Set or clear an end's gate (under the channel's lock). The set is seq_cst: it comes
 * before the setter's last look at the ring. */
static inline void ring_gate_set(_Atomic uint64_t *end)
{
    (void)atomic_fetch_or_explicit(end, RING_GATE, memory_order_seq_cst);
}

static inline void ring_gate_clear(_Atomic uint64_t *end)
{
    (void)atomic_fetch_and_explicit(end, ~RING_GATE, memory_order_release);
}

static inline int ring_gated(const _Atomic uint64_t *end)
{
    return (int)(atomic_load_explicit(end, memory_order_relaxed) & RING_GATE);
}

#endif /* BAND_CHAN_RING_H */
