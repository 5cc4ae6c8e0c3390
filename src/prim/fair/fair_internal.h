/* SPDX-License-Identifier: MIT */
/*
 * fair_internal.h - the state of a band_fair, shared by fair.c (life cycle, stats),
 * fair_keys.c (the key registry), fair_sched.c (who gets capacity) and fair_acquire.c
 * (requests, release, cancel). Never installed.
 *
 * Lock: every field of struct band_fair and of every key state is guarded by band_fair.lock
 * (written fields and read fields alike), except the few that key handles use without it:
 * band_fair.state (units in use and the SLOW gate), a key state's held, fast cap, cap and
 * reserve, and a handle's busy flag and own taken and given units. Those are atomics;
 * fair_acquire.c explains the protocol. Only handles touch
 * them outside the lock, so while a fair has no handle (nhandles == 0) the lock holder
 * writes them with plain stores, and while a key has none (refs == 0) its fields likewise.
 */
#ifndef BAND_FAIR_INTERNAL_H
#define BAND_FAIR_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "band/fair.h"
#include "core/list.h"
#include "core/waitq.h"

/*
 * The requests of one key in one class. A flow with queued requests is "active": it sits
 * on its class's ring (ordered by the round its head request is due in), or on the class's
 * parked list while its key is at its cap; it is on neither (self-linked) when empty.
 *
 * Credit is kept in virtual rounds: in each round the flow may receive its quantum
 * (weight * base quantum). @round is the last round the flow was credited for and
 * @deficit the credit of that round it has not spent yet; the head request is due in the
 * first round by which the credit covers it (@due, cached while the flow is on the ring).
 * @round survives while the flow is empty (an idle flow keeps no credit, but it does not
 * come back in a round it was already served in).
 */
struct fair_flow {
    struct band__node reqs; /* sentinel; band_waiter._link of queued requests, FIFO */
    struct band__node ring; /* link on the class ring, or on its parked list */
    uint64_t round;         /* the round the credit below belongs to */
    uint64_t deficit;       /* credit left in @round, in units */
    uint64_t due;           /* the round the head is due in (valid on the ring) */
    uint64_t stamp;         /* among flows due in the same round: the lower goes first */
    uint64_t nreq;          /* queued requests */
    bool parked;            /* on the parked list: the key is at its cap for the head */
    struct fair_key *key;
};

/* The state of one key; allocated on first use, evicted when idle and unpinned. */
struct fair_key {
    struct fair_key *hnext; /* hash chain, or the free cache */
    uint64_t id;
    /* units granted and not yet released, but for those in its handles' own counts
     * (key_held() adds them) */
    _Atomic uint64_t a_held;
    /* what a handle's lock-free path may let a_held reach: the cap, or 0 while the key has
     * a reservation of its own (those take the lock), or FAIR_SPLIT while the cap binds no
     * grant (it is at least every class limit) and there is no reservation: then the
     * handles count their own units. Written with a_cap and a_reserve. It follows a_held:
     * the pair is the key's part of band_fair_handle_prefix. */
    _Atomic uint64_t a_fast_cap;
    _Atomic uint64_t a_cap;     /* key_cap() */
    _Atomic uint64_t a_reserve; /* key_reserve() */
    uint64_t nreq;              /* queued requests, all classes */
    uint64_t waiting_units;
    uint64_t refs;             /* handles on this key: it is not evicted while there are any */
    struct band__node handles; /* its handles (band_fair_handle.klink) */
    uint32_t weight;
    bool pinned;             /* configured by band_fair_key_set() */
    struct band__node rlink; /* on band_fair.reserved while reserve > 0 */
    /* counters */
    uint64_t granted, granted_units, queued, timeouts, cancels, wait_ns_total, wait_ns_max;
    struct fair_flow flow[]; /* one per class */
};

struct fair_class {
    struct band__node ring;   /* active flows not parked, by (due, stamp); the first has the turn */
    struct band__node parked; /* active flows whose key is at its cap for their head */
    uint64_t active;          /* flows with queued requests (ring and parked) */
    uint64_t nparked;         /* flows on the parked list */
    uint64_t vround;          /* the current round: the due round of the latest turn */
    uint64_t stamps;          /* the last stamp handed out */
    uint64_t limit;           /* capacity - headroom[c]: in_use + n may not exceed it */
    bool stalled; /* the turn's request does not fit: this class and less urgent ones wait */
    uint64_t waiting_units;
    uint64_t nreq;
    uint64_t granted, granted_units, queued, timeouts, cancels, wait_ns_total, wait_ns_max;
};

/* band_fair.state: units in use, and this bit while handles must take the lock (anything
 * queued, closed, or a lock holder deciding). */
#define FAIR_SLOW BAND_FAIR_PREFIX_SLOW

/* a_fast_cap of a key whose handles count their own units */
#define FAIR_SPLIT BAND_FAIR_PREFIX_SPLIT

/* A key handle (band/fair.h): one owner's reference to a live key state. It starts with
 * struct band_fair_handle_prefix (fair_acquire.c checks the layout): what the lock-free
 * path reads, copied at band_fair_handle_get() (none of it changes), so a try reads the
 * handle, the fair's state word and the key's two words and nothing else. */
struct band_fair_handle {
    _Atomic uint64_t *state;               /* &f->state */
    _Atomic uint64_t *kw;                  /* &k->a_held; kw[1] is k->a_fast_cap */
    uint32_t nclasses;                     /* f->nclasses */
    uint64_t limit[BAND_FAIR_MAX_CLASSES]; /* f->cls[c].limit */
    /* grants of the lock-free path, per class; written by the owner only (relaxed), read
     * under the lock by the counters, folded into the key's and classes' by put */
    struct {
        _Atomic uint64_t granted, units;
    } cnt[BAND_FAIR_MAX_CLASSES];
    /* The handle's own units (while its key is FAIR_SPLIT): taken - given of the key's
     * units are counted here, not in a_held. @taken is written by the owner only (plain
     * stores, release), @given by read-modify-writes only (the owner's release, and lock
     * holders that release or fold the handle's units), never past @taken. @busy is 1 from
     * before the owner's compare-and-swap on the state word until its store to @taken: a
     * lock holder that shut the gate waits for 0 to read an exact count (handle_held()). */
    _Atomic uint64_t busy;
    _Atomic uint64_t taken;
    _Atomic uint64_t given;
    band_fair *f;
    struct fair_key *k;
    struct band__node link;  /* on band_fair.handles */
    struct band__node klink; /* on its key's handles */
};

struct band_fair {
    _Atomic uint64_t state; /* units in use | FAIR_SLOW */
    pthread_mutex_t lock;
    /* band_waiter_cancel() finds the fair through this queue; its list is unused (the
     * requests sit on their flows), its len counts every queued request. */
    struct band__waitq q;
    uint64_t capacity;
    uint64_t quantum;
    uint32_t nclasses;
    uint32_t default_weight;
    uint64_t default_cap;
    bool closed;
    char name[BAND_NAME_MAX];
    /* registry */
    struct fair_key **tab; /* hash buckets (chains) */
    uint64_t tab_mask;     /* buckets - 1; the table grows to at most tab_max buckets */
    uint64_t tab_max;
    uint64_t seed; /* keyed hash, so chosen keys cannot aim at one bucket */
    uint64_t nkeys, npinned, max_keys;
    struct fair_key *free_keys; /* evicted states kept for reuse */
    uint64_t nfree;
    size_t key_size;
    struct band__node reserved; /* keys with reserve > 0 */
    uint64_t reserved_total;
    struct band__node handles; /* every live handle */
    uint64_t nhandles;
    /* counters */
    uint64_t keys_created, keys_evicted, key_refusals, try_refusals, too_big, closed_fails;
    /* the counters of evicted key states, summed at each eviction (fair_keys.c) */
    uint64_t ev_granted, ev_granted_units, ev_queued, ev_timeouts, ev_cancels, ev_wait_ns;
#ifdef BAND_TESTING
    /* which way the handles' calls went (the model test checks it reaches each) */
    _Atomic uint64_t t_fast_grants, t_fast_releases, t_slow_tries;
#endif
    struct fair_class cls[];
};

/*
 * The units in @h's own count (lock holders). It waits while a try of the owner may still
 * store its count: with the gate shut by the caller, every try whose compare-and-swap on the
 * state word went through has set @busy before it (and the gate's read-modify-write made
 * that visible), and any later one fails; so the count is exact. With the gate open it is a
 * lower bound (a try in flight has taken units in use, not yet counted them).
 */
static inline uint64_t handle_held(const struct band_fair_handle *h)
{
    struct band_fair_handle *m = (struct band_fair_handle *)h;
    while (atomic_load_explicit(&m->busy, memory_order_acquire) != 0)
        sched_yield();
    /* given first: taken was at least that when it was reached */
    uint64_t g = atomic_load_explicit(&m->given, memory_order_acquire);
    return atomic_load_explicit(&m->taken, memory_order_acquire) - g;
}

/* The key's shared word alone (what is not in its handles' own counts). */
static inline uint64_t key_held_shared(const struct fair_key *k)
{
    return atomic_load_explicit(&k->a_held, memory_order_relaxed);
}

/* The key's units held: its shared word and its handles' own counts. */
static inline uint64_t key_held(const struct fair_key *k)
{
    uint64_t held = atomic_load_explicit(&k->a_held, memory_order_relaxed);
    if (k->refs > 0) {
        const struct band__node *n;
        band__list_foreach (n, &k->handles)
            held += handle_held(band__container_of(n, struct band_fair_handle, klink));
    }
    return held;
}

static inline uint64_t key_cap(const struct fair_key *k)
{
    return atomic_load_explicit(&k->a_cap, memory_order_relaxed);
}

static inline uint64_t key_reserve(const struct fair_key *k)
{
    return atomic_load_explicit(&k->a_reserve, memory_order_relaxed);
}

/*
 * The fast cap of a key with @cap and @reserve: FAIR_SPLIT when the cap binds no grant
 * (every grant keeps in_use + n within its class's limit, and a key's units are part of
 * in_use, so held + n <= limit <= cap) and there is no reservation; else the cap, or 0
 * with a reservation.
 */
static inline uint64_t fair_fast_cap(const band_fair *f, uint64_t cap, uint64_t reserve)
{
    if (reserve != 0)
        return 0;
    for (uint32_t c = 0; c < f->nclasses; c++)
        if (cap < f->cls[c].limit)
            return cap;
    return FAIR_SPLIT;
}

/*
 * Move @h's own units into its key's shared word (lock held; the gate shut, or the owner
 * not in a call). They leave the handle first: a release that meanwhile finds them in
 * neither place takes the lock, and sees them after.
 */
static inline void handle_fold(struct fair_key *k, struct band_fair_handle *h)
{
    while (atomic_load_explicit(&h->busy, memory_order_acquire) != 0)
        sched_yield();
    uint64_t g = atomic_load_explicit(&h->given, memory_order_acquire);
    for (;;) {
        uint64_t t = atomic_load_explicit(&h->taken, memory_order_acquire);
        if (atomic_compare_exchange_weak_explicit(&h->given, &g, t, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            if (t != g)
                atomic_fetch_add_explicit(&k->a_held, t - g, memory_order_relaxed);
            return;
        }
    }
}

/* Set @k's cap and reservation (under the lock; the gate shut while handles exist). When
 * its handles stop counting their own units, their counts fold into the shared word, so
 * that the shared word alone is the key's units again (the cap binds). */
static inline void key_set_limits(band_fair *f, struct fair_key *k, uint64_t cap, uint64_t reserve)
{
    uint64_t fast = fair_fast_cap(f, cap, reserve);
    atomic_store_explicit(&k->a_cap, cap, memory_order_relaxed);
    atomic_store_explicit(&k->a_reserve, reserve, memory_order_relaxed);
    atomic_store_explicit(&k->a_fast_cap, fast, memory_order_relaxed);
    if (fast != FAIR_SPLIT && k->refs > 0) {
        struct band__node *n;
        band__list_foreach (n, &k->handles)
            handle_fold(k, band__container_of(n, struct band_fair_handle, klink));
    }
}

/* Units in use (lock holders; handles may move it while the gate is open). */
static inline uint64_t fair_in_use(const band_fair *f)
{
    return atomic_load_explicit(&f->state, memory_order_acquire) & ~FAIR_SLOW;
}

/* Add or remove @n units in use, under the lock. */
static inline void fair_in_use_add(band_fair *f, uint64_t n)
{
    if (f->nhandles > 0)
        atomic_fetch_add_explicit(&f->state, n, memory_order_acq_rel);
    else
        atomic_store_explicit(&f->state, atomic_load_explicit(&f->state, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

static inline void fair_in_use_sub(band_fair *f, uint64_t n)
{
    if (f->nhandles > 0)
        atomic_fetch_sub_explicit(&f->state, n, memory_order_acq_rel);
    else
        atomic_store_explicit(&f->state, atomic_load_explicit(&f->state, memory_order_relaxed) - n,
                              memory_order_relaxed);
}

/*
 * Take @n units for @k if its held units stay at or below @bound (its cap, or its
 * reservation), which the caller checked; under the lock. Without handles on @k nothing
 * else moves them; with handles a compare-and-swap keeps a racing handle grant from pushing
 * it past the bound. The units go to the shared word; its handles' own counts are 0 unless
 * the key is FAIR_SPLIT, and then no cap binds and it has no reservation.
 */
static inline bool key_take(struct fair_key *k, uint64_t n, uint64_t bound)
{
    uint64_t h = key_held_shared(k);
    if (k->refs == 0) { /* nothing moved it since the caller checked the bound */
        atomic_store_explicit(&k->a_held, h + n, memory_order_relaxed);
        return true;
    }
    do {
        if (n > bound || h > bound - n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&k->a_held, &h, h + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

/* Take up to @want units off @word, which holds at most what is in it; how many. */
static inline uint64_t key_take_some(_Atomic uint64_t *word, uint64_t want)
{
    uint64_t h = atomic_load_explicit(word, memory_order_acquire);
    for (;;) {
        uint64_t m = h < want ? h : want;
        if (m == 0)
            return 0;
        if (atomic_compare_exchange_weak_explicit(word, &h, h - m, memory_order_acq_rel,
                                                  memory_order_acquire))
            return m;
    }
}

/* Take up to @want of @h's own units off it; how many. */
static inline uint64_t handle_take_some(struct band_fair_handle *h, uint64_t want)
{
    uint64_t g = atomic_load_explicit(&h->given, memory_order_acquire);
    for (;;) {
        uint64_t t = atomic_load_explicit(&h->taken, memory_order_acquire);
        uint64_t m = t - g < want ? t - g : want;
        if (m == 0)
            return 0;
        if (atomic_compare_exchange_weak_explicit(&h->given, &g, g + m, memory_order_acq_rel,
                                                  memory_order_acquire))
            return m;
    }
}

/*
 * Return @n of @k's units if it holds that many; false (nothing changes) otherwise. Under
 * the lock. With handles the units may lie in the shared word and in the handles' own
 * counts, which their owners' releases change without the lock: each part is taken with a
 * read-modify-write, so a unit goes to one releaser only, and if the parts do not add up
 * to @n what was taken goes back. A release without the lock that meanwhile found too
 * little takes the lock and decides after this one.
 */
static inline bool key_give(struct fair_key *k, uint64_t n)
{
    uint64_t h = atomic_load_explicit(&k->a_held, memory_order_relaxed);
    if (k->refs == 0) {
        if (h < n)
            return false;
        atomic_store_explicit(&k->a_held, h - n, memory_order_relaxed);
        return true;
    }
    uint64_t got = key_take_some(&k->a_held, n);
    struct band__node *p;
    band__list_foreach (p, &k->handles) {
        if (got == n)
            break;
        got += handle_take_some(band__container_of(p, struct band_fair_handle, klink), n - got);
    }
    if (got == n)
        return true;
    /* too few: put back what was taken, in the shared word (the key's units all the same) */
    if (got > 0)
        atomic_fetch_add_explicit(&k->a_held, got, memory_order_acq_rel);
    return false;
}

/*
 * Charge a grant of @n units of class @c to @k (counters, held, in_use), provided @k's held
 * units stay within @bound (its cap, or its reservation; every caller checked that).
 * false (nothing charged) only when a handle of @k took units meanwhile.
 */
static inline bool band__fair_charge(band_fair *f, struct fair_key *k, uint32_t c, uint64_t n,
                                     uint64_t bound)
{
    if (!key_take(k, n, bound))
        return false;
    fair_in_use_add(f, n);
    k->granted++;
    k->granted_units += n;
    f->cls[c].granted++;
    f->cls[c].granted_units += n;
    return true;
}

/* ---- fair.c ---- */

/* Set FAIR_SLOW to @want (FAIR_SLOW or 0); the rare part of the two below. */
void band__fair_gate_set_locked(band_fair *f, uint64_t want);

/* With handles about, shut the gate (set FAIR_SLOW) before a decision that reads units in
 * use, so that no handle grant lands while the lock holder decides. */
static inline void band__fair_gate_close_locked(band_fair *f)
{
    if (f->nhandles > 0 && (atomic_load_explicit(&f->state, memory_order_relaxed) & FAIR_SLOW) == 0)
        band__fair_gate_set_locked(f, FAIR_SLOW);
}

/* Open or shut the gate for what the fair is now: shut while anything is queued or it is
 * closed, open otherwise. Called before every unlock that may have changed either. Only
 * handles read the gate: without any it is left as it is, and band_fair_handle_get()
 * brings it up to date when the first one comes. */
static inline void band__fair_gate_sync_locked(band_fair *f)
{
    if (f->nhandles == 0)
        return;
    uint64_t want = f->closed || f->q.len > 0 ? FAIR_SLOW : 0;
    if ((atomic_load_explicit(&f->state, memory_order_relaxed) & FAIR_SLOW) != want)
        band__fair_gate_set_locked(f, want);
}

/* The out-of-line rest of the handles' calls, kept apart from their leaf fast paths. */
#if defined(__GNUC__) || defined(__clang__)
#define FAIR_COLD __attribute__((noinline, cold))
#else
#define FAIR_COLD
#endif

#ifdef BAND_TESTING
#define FAIR_TEST_COUNT(f, field) atomic_fetch_add_explicit(&(f)->field, 1, memory_order_relaxed)
#else
#define FAIR_TEST_COUNT(f, field) ((void)0)
#endif

/* At most this many evicted key states are kept for reuse; the rest are freed. */
#define FAIR_FREE_CACHE 64

/* A flow put back on the ring (below its cap again, a smaller head, a larger weight) is
 * never due more than this many rounds before the current one, and then with just the
 * credit for its head, so it catches up at most that many quanta. Rounds start at
 * FAIR_LAG, so vround - FAIR_LAG never wraps. */
#define FAIR_LAG 2

/* ---- fair_keys.c ---- */

/* The live state of @id, or NULL. */
struct fair_key *band__fair_key_find(const band_fair *f, uint64_t id);

/*
 * The live state of @id, creating it with the defaults when it has none. Returns NULL and
 * sets *@rc to BAND_ENOMEM when the table is full (counted) or memory ran out.
 */
struct fair_key *band__fair_key_get(band_fair *f, uint64_t id, int *rc);

/* Evict @k when it is idle (nothing held or queued) and unpinned. */
void band__fair_key_maybe_evict(band_fair *f, struct fair_key *k);

/* Free the table, every key state and the cache (destroy). */
void band__fair_keys_free(band_fair *f);

/* Set up the registry for @max_keys live keys. 0 or BAND_ENOMEM. */
int band__fair_keys_init(band_fair *f, uint64_t max_keys);

/* ---- fair_sched.c ---- */

/*
 * May @k be granted @n units in class @c right now, ahead of everything queued? (The key
 * has nothing queued in @c, the cap, class headroom and reservation rules hold, and no
 * class as urgent as @c or more (0..@c) is stalled - except for a request within @k's own
 * reservation.)
 */
bool band__fair_can_grant_now(const band_fair *f, const struct fair_key *k, uint32_t c, uint64_t n);

/*
 * Grant what can be granted now: the reservation pass, then the round robin from the
 * most urgent class (0) on. Granted requests move onto @wl; sets every class's stalled flag.
 */
void band__fair_dispatch_locked(band_fair *f, struct band__wakelist *wl);

/* Queue @r (checked) on its key's flow, since @now. */
void band__fair_enqueue_locked(band_fair *f, struct fair_key *k, band_fair_acquire_op *r,
                               band_time now);

/* Unlink queued @r from its flow (counters of the waiting side only). Call
 * band__fair_key_refresh_locked() for its key once the removals are done. */
void band__fair_unlink_locked(band_fair *f, band_fair_acquire_op *r);

/*
 * @k's held units, cap or weight changed, or the head of one of its flows was removed:
 * put its active flows where they now belong (a parked flow below its cap returns to the
 * ring in its place; a flow on the ring moves to the round its new head is due in).
 */
void band__fair_key_refresh_locked(band_fair *f, struct fair_key *k);

#ifdef BAND_TESTING
/* The dispatch's fixpoint holds (band__fair_check()): 0 or a negated line. Lock held. */
int band__fair_check_sched_locked(const band_fair *f);
#endif

/* ---- fair_acquire.c ---- */

/* The queue ops behind band_waiter_cancel() for fair requests. */
extern const struct band__waitq_ops band__fair_waitq_ops;

/* The request that embeds @w. */
static inline band_fair_acquire_op *band__fair_op_of(band_waiter *w)
{
    return band__container_of(w, band_fair_acquire_op, w);
}

/* Fail every queued request of @k whose n exceeds its cap with BAND_E2BIG. */
void band__fair_fail_too_big_locked(band_fair *f, struct fair_key *k, struct band__wakelist *wl);

#ifdef BAND_TESTING
/**
 * band__fair_check() - verify @f's invariants under its lock.
 *
 * Returns 0 when they hold, otherwise the negated source line of the first failed check.
 * Only in the test-only libraries (BAND_TESTING): libband.so and libband.a neither
 * contain nor export it.
 */
int band__fair_check(const band_fair *f);
#endif

#endif /* BAND_FAIR_INTERNAL_H */
