/* SPDX-License-Identifier: MIT */
/*
 * shm_ops.c - acquisitions, releases and capacity changes on a shared segment's bounds.
 *
 * Every operation is one critical section under the segment's robust lock, except the
 * blocking wait, which sleeps on its own slot's futex word outside it and takes the lock
 * again only to collect its result, to give up at its deadline or token, and once per
 * liveness period to look for dead holders.
 */
#include <sched.h>
#include <string.h>

#include "shm/shm_internal.h"

/* Long enough that a hand-off from a releaser running on another core is caught without
 * a system call (1-2 us), short enough not to take the processor from a releaser that
 * shares this core. Measured in time: a pause costs 10 to 100 cycles by processor. */
#define BAND__SHM_SPIN_NS (2 * BAND_USEC)

static int band__shm_bad_bound(const band_shm *s, unsigned bound)
{
    return s == NULL || bound >= s->nbounds;
}

static int band__shm_single(const band_shm *s, unsigned bound, uint64_t n, struct band__shm_want *w)
{
    if (band__shm_bad_bound(s, bound) || n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    memset(w, 0, sizeof *w);
    w->units[bound] = n;
    w->mask = n != 0 ? UINT64_C(1) << bound : 0;
    return 0;
}

static void band__shm_count_refusal(band_shm *s, const struct band__shm_want *want)
{
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (want->units[b] != 0)
            s->h->bounds[b].try_refusals++;
}

/* The locked try; @count says whether a refusal counts in try_refusals. */
static int band__shm_try_counted(band_shm *s, const struct band__shm_want *want, int count)
{
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    rc = band__shm_self_locked(&op);
    if (rc == 0)
        rc = band__shm_try_locked(&op, want);
    /* A refusal is the moment a dead holder costs something: look, at most once a period. */
    if (rc == BAND_EAGAIN && band__shm_sweep_locked(&op, 0) != 0)
        rc = band__shm_try_locked(&op, want);
    if (rc == BAND_EAGAIN && count)
        band__shm_count_refusal(s, want);
    band__shm_unlock(&op);
    return rc;
}

static int band__shm_try(band_shm *s, const struct band__shm_want *want)
{
    return band__shm_try_counted(s, want, 1);
}

/*
 * Before a blocking acquisition queues, it retries while nobody is queued on its bounds: a
 * holder in another process usually releases within microseconds, and queueing would turn
 * every later acquisition into a futex hand-off between processes (tens of microseconds on
 * a loaded host), a convoy. The spin only looks (atomic loads) until the pool seems to
 * have room, and takes only through the locked try, which refuses while anyone waits, so
 * it never passes a queued request. Now and then it tries anyway: the try also takes back
 * units idle in other processes' caches, which the look does not count. Past
 * BAND__SHM_YIELD_NS it yields between looks, so a holder preempted on this core runs.
 */
#define BAND__SHM_PRESPIN_NS (5 * BAND_USEC)
#define BAND__SHM_YIELD_NS   (2 * BAND_USEC)

/* -1: queued requests or closed (queue now); 1: the pool seems to have room; 0: not yet. */
static int band__shm_room_hint(const band_shm *s, const struct band__shm_want *want)
{
    const struct band__shm_hdr *h = s->h;
    if (__atomic_load_n(&h->closed, __ATOMIC_RELAXED) != 0)
        return -1;
    int room = 1;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        uint64_t u = want->units[b];
        if (u == 0)
            continue;
        const struct band__shm_bound *bd = &h->bounds[b];
        if (__atomic_load_n(&bd->waiters, __ATOMIC_RELAXED) != 0)
            return -1;
        if (__atomic_load_n(&bd->available, __ATOMIC_RELAXED) < u)
            room = 0;
    }
    return room;
}

/* 0 when granted while spinning, BAND_EAGAIN to queue, or the locked try's refusal. */
static int band__shm_spin(band_shm *s, const struct band__shm_want *want, band_time deadline,
                          band_cancel *cancel)
{
    band_time start = band_now();
    if (deadline <= start || (cancel != NULL && band_cancel_is_requested(cancel)))
        return BAND_EAGAIN;
    band_time end =
        deadline - start > BAND__SHM_PRESPIN_NS ? start + BAND__SHM_PRESPIN_NS : deadline;
    for (unsigned i = 1;; i++) {
        int hint = band__shm_room_hint(s, want);
        if (hint < 0)
            return BAND_EAGAIN;
        if (hint > 0 || i % 64 == 0) {
            int rc = band__shm_try_counted(s, want, 0);
            if (rc != BAND_EAGAIN)
                return rc;
        }
        band__cpu_relax();
        if (i % 16 == 0) {
            band_time now = band_now();
            if (now >= end || (cancel != NULL && band_cancel_is_requested(cancel)))
                return BAND_EAGAIN;
            if (now - start >= BAND__SHM_YIELD_NS)
                (void)sched_yield();
        }
    }
}

/* This process's cache words of @s when the fast paths may use them for @bound, else NULL.
 * The inline versions in band/shm.h do the same; these serve calls through the exported
 * symbols and the library's own blocking and asynchronous acquisitions. */
static inline uint64_t *band__shm_fast_cache(band_shm *s, unsigned bound)
{
    if (band__unlikely(s == NULL || bound >= s->nbounds))
        return NULL;
    return __atomic_load_n(&s->fast->cache, __ATOMIC_ACQUIRE);
}

/* Take @n from this handle's cache: 1 when taken. A cache that is not frozen means the
 * bound has no waiter, no debt and is open, so this never barges and never misses a
 * close; every acquisition tries it first. */
static inline int band__shm_take_cached(band_shm *s, unsigned bound, uint64_t n)
{
    uint64_t *cache = band__shm_fast_cache(s, bound);
    if (band__likely(cache != NULL && n - 1 < BAND_MAX_UNITS)) { /* 1 <= n <= max */
        uint64_t *word = &cache[bound];
        uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
        if ((w & BAND__CACHE_FROZEN) == 0 && (w >> BAND__CACHE_SHIFT) >= n &&
            __atomic_compare_exchange_n(word, &w, w - (n << BAND__CACHE_SHIFT), 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

int band_shm_try_acquire(band_shm *s, unsigned bound, uint64_t n)
{
    if (band__shm_take_cached(s, bound, n))
        return 0;
    struct band__shm_want want;
    int rc = band__shm_single(s, bound, n, &want);
    return rc != 0 ? rc : band__shm_try(s, &want);
}

int band_shm_try_admit(band_shm *s, const band_shm_req *r)
{
    if (s == NULL || r == NULL)
        return BAND_EINVAL;
    struct band__shm_want want;
    int rc = band__shm_want_from(s, r, &want);
    return rc != 0 ? rc : band__shm_try(s, &want);
}

static void band__shm_on_cancel(band_cancel_hook *hk)
{
    band__shm_futex_wake(hk->data); /* async-signal-safe: an atomic add and a syscall */
}

/* Collect slot @i's result, or withdraw it with @giveup when it still waits (0: do not). */
static int band__shm_finish(band_shm *s, uint32_t i, int giveup, int *done)
{
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    struct band__shm_slot *sl = &s->slot[i];
    /* A dead-holder sweep by another process cannot have freed it: we are alive. */
    if (sl->state == BAND__SLOT_DONE) {
        rc = (int)sl->status;
        band__shm_slot_free_locked(s, i);
        *done = 1;
    } else if (giveup != 0) {
        band__shm_withdraw_locked(&op, i, giveup);
        /* Leaving may unblock the requests behind. */
        band__shm_grant_pass_locked(&op);
        rc = giveup;
        *done = 1;
    } else {
        (void)band__shm_sweep_locked(&op, 0);
        *done = 0;
    }
    band__shm_unlock(&op);
    return rc;
}

static int band__shm_wait(band_shm *s, uint32_t i, band_time deadline, band_cancel *cancel)
{
    struct band__shm_slot *sl = &s->slot[i];
    band_cancel_hook hook;
    int hooked = 0, rc = 0, done = 0;
    if (cancel != NULL) {
        band_cancel_hook_init(&hook, band__shm_on_cancel, &sl->futex);
        hooked = band_cancel_hook_add(cancel, &hook) == 0;
    }
    band_time spin_end = band_now() + BAND__SHM_SPIN_NS;
    for (unsigned spin = 1; band__shm_load(&sl->state) == BAND__SLOT_WAITING; spin++) {
        band__cpu_relax();
        if (spin % 16 == 0 && band_now() >= spin_end)
            break;
    }
    band_time next_check = band_now() + BAND__SHM_CHECK_NS;
    while (!done) {
        uint32_t f = __atomic_load_n(&sl->futex, __ATOMIC_ACQUIRE);
        int giveup = 0;
        band_time now = band_now();
        if (band__shm_load(&sl->state) != BAND__SLOT_WAITING)
            giveup = 0;
        else if (cancel != NULL && band_cancel_is_requested(cancel))
            giveup = BAND_ECANCELED;
        else if (now >= deadline)
            giveup = BAND_ETIMEDOUT;
        else if (now < next_check) {
            band_time until = deadline < next_check ? deadline : next_check;
            (void)band__shm_futex_sleep(&sl->futex, f, until - now);
            continue;
        }
        if (giveup == 0 && band__shm_load(&sl->state) == BAND__SLOT_WAITING)
            next_check = now + BAND__SHM_CHECK_NS; /* a liveness look, then sleep again */
        if (hooked && (giveup != 0 || band__shm_load(&sl->state) != BAND__SLOT_WAITING)) {
            (void)band_cancel_hook_remove(&hook);
            hooked = 0;
        }
        rc = band__shm_finish(s, i, giveup, &done);
        if (rc == BAND_EBADSEG)
            break;
    }
    if (hooked)
        (void)band_cancel_hook_remove(&hook);
    return rc;
}

static int band__shm_admit_want(band_shm *s, const struct band__shm_want *want, band_time deadline,
                                band_cancel *cancel)
{
    /* Whether it may wait is decided on entry: a spin that ran into the deadline still
     * queues, as a call preempted there would, so what a call does never depends on how
     * long its spin took. */
    int may_wait = deadline > band_now();
    int rc = band__shm_spin(s, want, deadline, cancel);
    if (rc != BAND_EAGAIN)
        return rc;
    struct band__shm_op op;
    rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    rc = band__shm_self_locked(&op);
    if (rc == 0)
        rc = band__shm_try_locked(&op, want);
    if (rc != BAND_EAGAIN) {
        band__shm_unlock(&op);
        return rc;
    }
    if (!may_wait || (cancel != NULL && band_cancel_is_requested(cancel))) {
        if (band__shm_sweep_locked(&op, 0) != 0)
            rc = band__shm_try_locked(&op, want);
        band__shm_unlock(&op);
        if (rc != BAND_EAGAIN)
            return rc;
        return cancel != NULL && band_cancel_is_requested(cancel) ? BAND_ECANCELED : BAND_ETIMEDOUT;
    }
    uint32_t i;
    rc = band__shm_enqueue_locked(&op, want, 0, &i);
    band__shm_unlock(&op);
    if (rc != 0)
        return rc;
    return band__shm_wait(s, i, deadline, cancel);
}

int band_shm_acquire(band_shm *s, unsigned bound, uint64_t n, band_time deadline,
                     band_cancel *cancel)
{
    if (band__shm_take_cached(s, bound, n))
        return 0;
    struct band__shm_want want;
    int rc = band__shm_single(s, bound, n, &want);
    return rc != 0 ? rc : band__shm_admit_want(s, &want, deadline, cancel);
}

int band_shm_admit(band_shm *s, const band_shm_req *r, band_time deadline, band_cancel *cancel)
{
    if (s == NULL || r == NULL)
        return BAND_EINVAL;
    struct band__shm_want want;
    int rc = band__shm_want_from(s, r, &want);
    return rc != 0 ? rc : band__shm_admit_want(s, &want, deadline, cancel);
}

int band_shm_acquire_async(band_shm *s, unsigned bound, uint64_t n, band_waiter *w)
{
    struct band__shm_want want;
    int rc = band__shm_single(s, bound, n, &want);
    if (rc != 0)
        return rc;
    if (band__waiter_check_submit(w) != 0)
        return BAND_EINVAL;
    if (band__shm_take_cached(s, bound, n)) {
        band__waiter_finish_now(w, 0);
        return 0;
    }
    uint32_t slot;
    return band__shm_async_submit(s, &want, w, &slot);
}

int band_shm_admit_async(band_shm *s, band_shm_req *r)
{
    if (s == NULL || r == NULL)
        return BAND_EINVAL;
    struct band__shm_want want;
    int rc = band__shm_want_from(s, r, &want);
    if (rc != 0)
        return rc;
    return band__shm_async_submit(s, &want, &r->w, &r->_slot);
}

/* Return @units of this handle's holdings: all or nothing. */
static int band__shm_release_want(band_shm *s, const struct band__shm_want *want)
{
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    rc = band__shm_self_locked(&op);
    if (rc != 0) {
        band__shm_unlock(&op);
        return rc;
    }
    struct band__shm_record *rec = &s->rec[s->self];
    /* Frozen first, so that this process's fast releases cannot add to the cache
     * between the check and the change of held: they finish under this lock. */
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (want->units[b] != 0)
            __atomic_fetch_or(&rec->cache[b], BAND__CACHE_FROZEN, __ATOMIC_ACQ_REL);
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (want->units[b] > rec->held[b] - band__shm_cached(s, s->self, b))
            rc = BAND_EOVERFLOW;
    if (rc == 0 && want->mask != 0) {
        band__shm_give_back_locked(&op, s->self, want->units);
        band__shm_grant_pass_locked(&op);
    }
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (want->units[b] != 0)
            band__shm_thaw_self_locked(s, b);
    band__shm_unlock(&op);
    return rc;
}

int band_shm_release(band_shm *s, unsigned bound, uint64_t n)
{
    uint64_t *cache = band__shm_fast_cache(s, bound);
    if (band__likely(cache != NULL && n - 1 < BAND_SHM_CACHE_ADD_MAX)) {
        /* Add first, check after, as the inline version does. */
        uint64_t held = __atomic_load_n(&s->fast->held[bound], __ATOMIC_ACQUIRE);
        if (held >= n) {
            uint64_t old =
                __atomic_fetch_add(&cache[bound], n << BAND__CACHE_SHIFT, __ATOMIC_RELEASE);
            if ((old & BAND__CACHE_FROZEN) == 0 && (old >> BAND__CACHE_SHIFT) <= held - n)
                return 0;
            return band_shm_release_finish(s, bound, n);
        }
    }
    if (band__shm_bad_bound(s, bound))
        return BAND_EINVAL;
    if (n > BAND_MAX_UNITS)
        return BAND_EOVERFLOW; /* nobody holds that much */
    struct band__shm_want want;
    (void)band__shm_single(s, bound, n, &want);
    return band__shm_release_want(s, &want);
}

int band_shm_release_finish(band_shm *s, unsigned bound, uint64_t n)
{
    if (band__shm_bad_bound(s, bound) || n - 1 >= BAND_SHM_CACHE_ADD_MAX)
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    /* Only a process whose record took the add has it in its word: a forked child's fast
     * paths are off until its first slow path registers it. */
    if (s->inspect || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != band__shm_generation()) {
        band__shm_unlock(&op);
        return BAND_EINVAL;
    }
    struct band__shm_record *rec = &s->rec[s->self];
    uint64_t *word = &rec->cache[bound];
    /* Frozen, the word is lowered by nobody but this call until the thaw below. */
    __atomic_fetch_or(word, BAND__CACHE_FROZEN, __ATOMIC_ACQ_REL);
    uint64_t c = band__shm_cached_raw(s, s->self, bound);
    if (c > rec->held[bound]) {
        /* This process returned more than it holds: take this release back out. Only a
         * try racing it can have taken some of it; what is left of it goes. */
        uint64_t back = band__min_u64(n, c);
        __atomic_fetch_sub(word, back << BAND__CACHE_SHIFT, __ATOMIC_ACQ_REL);
        rc = BAND_EOVERFLOW;
    } else {
        const struct band__shm_hdr *h = s->h;
        const struct band__shm_bound *bd = &h->bounds[bound];
        /* Somebody waits, a debt is owed or the bound is closed: the units go on. */
        if (bd->waiters != 0 || bd->debt != 0 || h->closed) {
            band__shm_steal_record_locked(s, s->self, bound);
            band__shm_grant_pass_locked(&op);
        }
    }
    band__shm_thaw_self_locked(s, bound);
    band__shm_unlock(&op);
    return rc;
}

int band_shm_release_req(band_shm *s, const band_shm_req *r)
{
    if (s == NULL || r == NULL)
        return BAND_EINVAL;
    struct band__shm_want want;
    int rc = band__shm_want_from(s, r, &want);
    if (rc == BAND_EOVERFLOW)
        return rc;
    return rc != 0 ? rc : band__shm_release_want(s, &want);
}

int band_shm_reduce(band_shm *s, unsigned bound, uint64_t n)
{
    if (band__shm_bad_bound(s, bound))
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    struct band__shm_bound *bd = &s->h->bounds[bound];
    if (n != 0 && n <= bd->capacity)
        band__shm_steal_locked(s, bound); /* cached units are available ones */
    uint64_t take = band__min_u64(bd->available, n);
    if (n > bd->capacity) {
        rc = BAND_EINVAL;
    } else if (bd->debt + (n - take) > BAND_MAX_UNITS) {
        rc = BAND_EOVERFLOW;
    } else if (n != 0) {
        band__shm_set(s, &bd->capacity, bd->capacity - n);
        band__shm_set(s, &bd->available, bd->available - take);
        band__shm_set(s, &bd->debt, bd->debt + (n - take));
        band__shm_commit(s);
        band__shm_fail_too_big_locked(&op, bound);
        band__shm_grant_pass_locked(&op); /* a failed head may have been blocking others */
    }
    band__shm_unlock(&op);
    return rc;
}

int band_shm_grow(band_shm *s, unsigned bound, uint64_t n)
{
    if (band__shm_bad_bound(s, bound))
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    struct band__shm_bound *bd = &s->h->bounds[bound];
    if (n > BAND_MAX_UNITS || bd->capacity + n > BAND_MAX_UNITS) {
        rc = BAND_EOVERFLOW;
    } else if (n != 0) {
        uint64_t repay = band__min_u64(bd->debt, n);
        band__shm_set(s, &bd->capacity, bd->capacity + n);
        band__shm_set(s, &bd->debt, bd->debt - repay);
        band__shm_set(s, &bd->available, bd->available + (n - repay));
        band__shm_commit(s);
        band__shm_grant_pass_locked(&op);
    }
    band__shm_unlock(&op);
    return rc;
}

uint64_t band_shm_drain(band_shm *s, unsigned bound, uint64_t up_to)
{
    if (band__shm_bad_bound(s, bound))
        return 0;
    struct band__shm_op op;
    if (band__shm_lock(&op, s) != 0)
        return 0;
    uint64_t took = 0;
    if (band__shm_self_locked(&op) == 0) {
        struct band__shm_bound *bd = &s->h->bounds[bound];
        struct band__shm_record *rec = &s->rec[s->self];
        if (up_to != 0)
            band__shm_steal_locked(s, bound);
        took = band__min_u64(bd->available, up_to);
        /* Its cache went to the pool above, so held is what it uses. */
        took = rec->held[bound] >= BAND_MAX_UNITS
                   ? 0
                   : band__min_u64(took, BAND_MAX_UNITS - rec->held[bound]);
        if (took != 0) {
            band__shm_set(s, &bd->available, bd->available - took);
            band__shm_set(s, &rec->held[bound], rec->held[bound] + took);
            band__shm_commit(s);
        }
        band__shm_thaw_self_locked(s, bound);
    }
    band__shm_unlock(&op);
    return took;
}

uint64_t band_shm_available(const band_shm *s, unsigned bound)
{
    if (band__shm_bad_bound(s, bound))
        return 0;
    uint64_t n = band__shm_load(&s->h->bounds[bound].available);
    for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++)
        if (band__shm_load(&s->rec[r].state) == BAND__REC_LIVE)
            n += band__shm_cached(s, r, bound);
    return n;
}

/* band_shm_held() for a frozen cache word: under the lock, which rolls back a transaction
 * a killed process left open, the word can change only through this process's own slow
 * paths, which wait for the lock too. */
static uint64_t band__shm_held_locked_view(const band_shm *s, unsigned bound)
{
    struct band__shm_op op;
    if (band__shm_lock(&op, (band_shm *)s) != 0)
        return 0; /* an unrecoverable segment: nothing can be released either */
    uint64_t held = s->rec[s->self].held[bound];
    uint64_t c = band__shm_cached(s, s->self, bound);
    band__shm_unlock(&op);
    return held >= c ? held - c : 0;
}

uint64_t band_shm_held(const band_shm *s, unsigned bound)
{
    if (band__shm_bad_bound(s, bound))
        return 0;
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != band__shm_generation())
        return 0; /* a forked child that has not used the handle yet holds nothing */
    /* Other processes change this record's held units only under the lock and only
     * while the word is frozen (a steal freezes it first, a waiter's bound stays frozen
     * until its grant is counted). So an unfrozen word that reads the same before and
     * after held means the two belong together; a frozen one may be mid-transaction,
     * even one whose process was killed there, which only the lock finishes. */
    const uint64_t *word = &s->rec[s->self].cache[bound];
    for (;;) {
        uint64_t w = band__shm_load(word);
        if (w & BAND__CACHE_FROZEN)
            return band__shm_held_locked_view(s, bound);
        uint64_t held = band__shm_load(&s->rec[s->self].held[bound]);
        if (band__shm_load(word) != w)
            continue;
        uint64_t c = w >> BAND__CACHE_SHIFT;
        return held >= c ? held - c : 0;
    }
}

int band_shm_close(band_shm *s)
{
    if (s == NULL)
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    band__shm_close_locked(&op);
    band__shm_unlock(&op);
    return 0;
}

int band_shm_is_closed(const band_shm *s)
{
    return s != NULL && band__shm_load(&s->h->closed) != 0;
}

int band_shm_reclaim(band_shm *s, unsigned *dead)
{
    if (s == NULL)
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    /* Those a takeover of the lock recovered on the way in count too. */
    unsigned n = op.recovered + band__shm_sweep_locked(&op, 1);
    band__shm_unlock(&op);
    if (dead != NULL)
        *dead = n;
    return 0;
}

int band_shm_req_init(band_shm_req *r, band_wake_fn *wake, void *data)
{
    if (r == NULL)
        return BAND_EINVAL; /* r may be uninitialised memory: nothing else is read */
    memset(r, 0, sizeof *r);
    band_waiter_init(&r->w, wake, data);
    return 0;
}

int band_shm_req_add(band_shm_req *r, unsigned bound, uint64_t units)
{
    if (r == NULL || band_waiter_is_pending(&r->w) || bound >= BAND_SHM_MAX_BOUNDS)
        return BAND_EINVAL;
    if (units > BAND_MAX_UNITS)
        return BAND_EOVERFLOW;
    for (uint32_t k = 0; k < r->n && k < BAND_SHM_REQ_MAX; k++) {
        if (r->bound[k] != bound)
            continue;
        if (r->units[k] + units > BAND_MAX_UNITS)
            return BAND_EOVERFLOW;
        r->units[k] += units;
        return 0;
    }
    if (r->n >= BAND_SHM_REQ_MAX)
        return BAND_EINVAL;
    r->bound[r->n] = bound;
    r->units[r->n] = units;
    r->n++;
    return 0;
}
