/* SPDX-License-Identifier: MIT */
/*
 * shm_lock.c - the segment's robust lock, its undo log, and recovery after a process died
 * holding the lock.
 *
 * A process killed inside the critical section leaves the lock to the next taker with
 * EOWNERDEAD. The taker rolls back the dead owner's unfinished transaction (the undo log,
 * newest entry first), then checks the segment against its invariants and rebuilds what
 * does not hold (band__shm_repair), marks the lock consistent, and recovers every dead
 * record at once: the owner that died is almost always one of them.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_internal.h"

#ifdef BAND_TESTING
long band__shm_crash_countdown;

/* Tests kill the process at the n-th logged store or commit from now, to land a death at
 * every point of a transaction in turn. */
static void band__shm_crash_point(void)
{
    if (band__shm_crash_countdown > 0 && --band__shm_crash_countdown == 0)
        (void)raise(SIGKILL);
}
#else
static inline void band__shm_crash_point(void)
{
}
#endif

// NOLINTNEXTLINE(readability-non-const-parameter): @word is stored through __atomic_store_n
void band__shm_set(band_shm *s, uint64_t *word, uint64_t value)
{
    struct band__shm_hdr *h = s->h;
    uint64_t n = h->log_count;
    if (band__unlikely(n >= BAND__SHM_LOG_MAX))
        abort(); /* a transaction larger than the log: a bug, never a data path */
    h->log[n].off = (uint64_t)((unsigned char *)word - s->base);
    h->log[n].old = __atomic_load_n(word, __ATOMIC_RELAXED);
    /* The entry is complete before the count says so, and the count before the word. */
    __atomic_store_n(&h->log_count, n + 1, __ATOMIC_RELEASE);
    band__shm_crash_point();
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

void band__shm_commit(band_shm *s)
{
    band__shm_crash_point();
    __atomic_store_n(&s->h->log_count, 0, __ATOMIC_RELEASE);
}

static void band__shm_rollback(band_shm *s)
{
    struct band__shm_hdr *h = s->h;
    uint64_t n = h->log_count;
    if (n > BAND__SHM_LOG_MAX)
        n = BAND__SHM_LOG_MAX;
    /* Only words a transaction may change: never the magic, the sizes or the lock. */
    const uint64_t first = offsetof(struct band__shm_hdr, closed);
    while (n-- > 0) {
        uint64_t off = h->log[n].off;
        if (off % sizeof(uint64_t) == 0 && off >= first && off + sizeof(uint64_t) <= s->size)
            __atomic_store_n((uint64_t *)(void *)(s->base + off), h->log[n].old, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&h->log_count, 0, __ATOMIC_RELEASE);
}

static int band__slot_seq_cmp(const void *a, const void *b, void *ctx)
{
    const struct band__shm_slot *slot = ctx;
    uint64_t x = slot[*(const uint32_t *)a].seq, y = slot[*(const uint32_t *)b].seq;
    return x < y ? -1 : x > y;
}

/* Insertion sort of waiting slot indices by seq (qsort_r is not in C11). */
static void band__sort_by_seq(uint32_t *v, uint32_t n, const struct band__shm_slot *slot)
{
    for (uint32_t i = 1; i < n; i++) {
        uint32_t x = v[i];
        uint32_t j = i;
        while (j > 0 && band__slot_seq_cmp(&v[j - 1], &x, (void *)slot) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/*
 * Make the segment agree with its invariants, trusting the records and the slots: the
 * queue is the waiting slots in arrival order, each bound's waiter counts are what they
 * ask, and available + held == capacity + debt with never both available and debt. After
 * a rollback this changes nothing; it is there so that no bug can leave a segment that
 * is wrong forever. Lock held, no transaction open.
 */
void band__shm_repair(band_shm *s)
{
    struct band__shm_hdr *h = s->h;
    uint32_t nw = 0;
    uint32_t *order = malloc(sizeof(uint32_t) * s->nslots);
    uint64_t held[BAND_SHM_MAX_BOUNDS] = {0};
    uint64_t waiters[BAND_SHM_MAX_BOUNDS] = {0}, wunits[BAND_SHM_MAX_BOUNDS] = {0};
    uint64_t nhandles = 0;

    for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++) {
        struct band__shm_record *rec = &s->rec[r];
        if (rec->state != BAND__REC_LIVE) {
            rec->state = BAND__REC_FREE;
            memset(rec->held, 0, sizeof rec->held);
            continue;
        }
        nhandles++;
        for (uint32_t b = 0; b < s->nbounds; b++)
            held[b] += rec->held[b];
    }
    for (uint32_t i = 0; i < s->nslots; i++) {
        struct band__shm_slot *sl = &s->slot[i];
        if (sl->state != BAND__SLOT_FREE &&
            (sl->record >= s->nrecords || s->rec[sl->record].state != BAND__REC_LIVE)) {
            sl->state = BAND__SLOT_FREE; /* its owner is gone */
            continue;
        }
        if (sl->state == BAND__SLOT_WAITING) {
            if (order != NULL)
                order[nw] = i;
            nw++;
            for (uint32_t b = 0; b < s->nbounds; b++) {
                if (sl->want[b] != 0) {
                    waiters[b]++;
                    wunits[b] += sl->want[b];
                }
            }
        } else if (sl->state != BAND__SLOT_DONE) {
            sl->state = BAND__SLOT_FREE;
        }
    }
    if (order != NULL) {
        band__sort_by_seq(order, nw, s->slot);
        h->qhead = nw ? order[0] + 1 : 0;
        h->qtail = nw ? order[nw - 1] + 1 : 0;
        for (uint32_t k = 0; k < nw; k++) {
            s->slot[order[k]].prev = k ? order[k - 1] + 1 : 0;
            s->slot[order[k]].next = k + 1 < nw ? order[k + 1] + 1 : 0;
        }
        free(order);
    }
    h->nwaiting = nw;
    h->nhandles = nhandles;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        struct band__shm_bound *bd = &h->bounds[b];
        bd->waiters = waiters[b];
        bd->waiting_units = wunits[b];
        /* available - debt == capacity - held, and only one of them is non-zero. */
        if (held[b] <= bd->capacity) {
            bd->available = bd->capacity - held[b];
            bd->debt = 0;
        } else {
            bd->available = 0;
            bd->debt = held[b] - bd->capacity;
        }
    }
}

int band__shm_lock(struct band__shm_op *op, band_shm *s)
{
    op->s = s;
    op->recovered = 0;
    op->nwake = 0;
    int rc = pthread_mutex_lock(&s->h->lock.m);
    if (band__likely(rc == 0)) {
        /* Every holder commits before it unlocks, so an open log here was written by
         * something other than the library: its entries cannot be trusted to roll back. */
        if (band__unlikely(s->h->log_count != 0)) {
            __atomic_store_n(&s->h->log_count, 0, __ATOMIC_RELEASE);
            band__shm_repair(s);
        }
        return 0;
    }
    if (rc != EOWNERDEAD)
        return BAND_EBADSEG; /* ENOTRECOVERABLE: a taker died before making it consistent */
    band__shm_rollback(s);
    band__shm_repair(s);
    s->h->recoveries++;
    if (pthread_mutex_consistent(&s->h->lock.m) != 0) {
        (void)pthread_mutex_unlock(&s->h->lock.m);
        return BAND_EBADSEG;
    }
    op->recovered = band__shm_sweep_locked(op, 1);
    return 0;
}

void band__shm_wake_later(struct band__shm_op *op, uint32_t *word)
{
    if (op->nwake < BAND__SHM_WAKE_BATCH)
        op->wake_word[op->nwake++] = word;
    else
        band__shm_futex_wake(word);
}

void band__shm_unlock(struct band__shm_op *op)
{
    /* Bump the words under the lock, so that a waiter that rechecks after the unlock sees
     * the change; make the system calls after it, so the woken do not meet a held lock. */
    unsigned n = op->nwake, sleepers = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t old = __atomic_fetch_add(op->wake_word[i], BAND__FUTEX_BUMP, __ATOMIC_ACQ_REL);
        if (old & BAND__FUTEX_SLEEPER)
            op->wake_word[sleepers++] = op->wake_word[i];
    }
    (void)pthread_mutex_unlock(&op->s->h->lock.m);
    for (unsigned i = 0; i < sleepers; i++)
        band__shm_futex_wake_only(op->wake_word[i]);
    op->nwake = 0;
}
