/* SPDX-License-Identifier: MIT */
/*
 * shm_internal.h - the layout of a shared segment and the internal interface between the
 * files of src/shm/ (never installed).
 *
 * A segment is one mapping: the header (magic, version, sizes, the robust lock, the undo
 * log, the queue ends and the bounds), then the handle records, then the waiter slots.
 * Everything another process may read is fixed-width and position-independent: links are
 * slot indices + 1 (0: none), never pointers.
 *
 * Consistency under SIGKILL. Every change that spans more than one word is made under the
 * lock as a transaction on the undo log: before a word changes, its offset and old value
 * are appended to the log (the entry first, then the count, so a death between the two
 * leaves the word unchanged), then the word is stored. The commit is one store of the
 * count back to 0. A process that takes the lock over from a dead owner (EOWNERDEAD)
 * restores the logged words newest first, so the unfinished change never happened, then
 * checks the whole segment against its invariants and rebuilds what a bug could have
 * left wrong. Counters are plain stores outside the log: a death can lose one increment.
 */
#ifndef BAND_SHM_INTERNAL_H
#define BAND_SHM_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "band/shm.h"
#include "core/internal.h"
#include "core/waitq.h"

#define BAND__SHM_MAGIC       "BANDSHM" /* 8 bytes with its NUL */
#define BAND__SHM_DIR         "/dev/shm"
#define BAND__SHM_LOG_MAX     64               /* words one transaction may change */
#define BAND__SHM_CHECK_NS    (50 * BAND_MSEC) /* the liveness period */
#define BAND__SHM_MAX_HANDLES 4096u
#define BAND__SHM_MAX_WAITERS 65536u

/* Slot states. */
enum { BAND__SLOT_FREE = 0, BAND__SLOT_WAITING = 1, BAND__SLOT_DONE = 2 };
/* Record states. */
enum { BAND__REC_FREE = 0, BAND__REC_LIVE = 1 };
/* Slot flags. */
#define BAND__SLOT_ASYNC UINT64_C(1)

struct band__shm_bound {
    char name[BAND_NAME_MAX];
    uint64_t kind;
    /* logged */
    uint64_t capacity;
    uint64_t available;
    uint64_t debt;
    uint64_t waiters;
    uint64_t waiting_units;
    /* counters */
    uint64_t queued, grants, timeouts, cancels, closed_fails, try_refusals, too_big, reclaimed;
};

struct band__shm_log_entry {
    uint64_t off; /* byte offset of the word in the segment */
    uint64_t old;
};

struct band__shm_hdr {
    char magic[8];
    uint32_t version;
    uint32_t hdr_size;
    uint64_t size;
    uint32_t nbounds;
    uint32_t nrecords;
    uint32_t nslots;
    uint32_t _reserved;
    uint64_t rec_off;
    uint64_t slot_off;
    uint64_t created_ns; /* CLOCK_REALTIME at creation */
    uint64_t _pad0;
    union {
        pthread_mutex_t m;
        char pad[64];
    } lock;
    /* logged */
    uint64_t closed;
    uint64_t seq_next;
    uint64_t qhead, qtail; /* slot index + 1, 0: empty */
    uint64_t nwaiting;
    uint64_t nhandles;
    /* plain */
    uint64_t rec_hwm;       /* records ever used: loops over records stop here (never lowered) */
    uint64_t last_check_ns; /* band_now() of the last liveness sweep */
    uint64_t recoveries, dead_handles, dead_waiters;
    /* the undo log */
    uint64_t log_count;
    struct band__shm_log_entry log[BAND__SHM_LOG_MAX];
    struct band__shm_bound bounds[BAND_SHM_MAX_BOUNDS];
};

/*
 * A record's cache. Units a handle returns while nobody waits stay with it, counted in its
 * held units, in a word only its own process lowers: units above BAND__CACHE_SHIFT,
 * BAND__CACHE_FROZEN below. An uncontended acquire is one compare-and-swap on it and a
 * release one atomic add, on a line no other process writes, and a death at any point of
 * them loses nothing: recovery returns held, which includes the cache.
 *
 * Another process that needs the units (a waiter, a try that would fail, a reduction)
 * freezes the word (fetch_or, under the lock) and moves the cached units to the pool in a
 * logged transaction that raises the record's stolen count instead of writing the word:
 * the cached units are the word's less stolen. So the word's only writers besides the
 * freeze are its owner's threads, and a release that adds to a frozen word is never lost:
 * it finds the flag in the value its add returned and takes the lock, which hands the
 * units to the queue (band_shm_release_finish). A frozen word refuses its owner's tries,
 * and the owner's slow paths thaw it only when the bound has no waiter, no debt and is
 * open: first subtracting stolen from the word, then clearing stolen, then the flag, so an
 * unfrozen word always has stolen 0.
 *
 * A release is checked after its add: when the word then holds more than held, the
 * process returned more than it holds, and the lock takes that release back out of the
 * word. Until then the surplus is in the word: a steal takes nothing from a word above
 * held, but a try of the owner's may take some of it, which the process then holds
 * beyond its count (the corner band_shm_release() documents). Which of two releases that
 * together exceed what the process uses is refused depends on which takes the lock first.
 */
#define BAND__CACHE_FROZEN UINT64_C(1)
#define BAND__CACHE_SHIFT  2

struct band__shm_record {
    uint64_t state; /* logged */
    uint64_t pid;
    uint64_t start;
    uint32_t doorbell; /* futex word: bumped for every async grant to this record */
    uint32_t _pad;
    uint64_t held[BAND_SHM_MAX_BOUNDS];   /* logged; units held, the cache included */
    uint64_t cache[BAND_SHM_MAX_BOUNDS];  /* atomic; see above */
    uint64_t stolen[BAND_SHM_MAX_BOUNDS]; /* logged; taken from the cache since its freeze */
};

struct band__shm_slot {
    uint64_t state;      /* logged; read without the lock by the waiter (atomic) */
    int64_t status;      /* logged; 0 or a BAND_E* code once DONE */
    uint64_t record;     /* the owner's record index */
    uint64_t next, prev; /* logged: slot index + 1 */
    uint64_t seq;
    uint64_t since; /* band_now() at queueing */
    uint64_t flags;
    uint64_t mask;  /* bounds with units > 0 */
    uint32_t futex; /* bumped at completion and by cancellation hooks */
    uint32_t _pad;
    uint64_t want[BAND_SHM_MAX_BOUNDS];
};

/* Process-local state of one handle's asynchronous waits. */
struct band__shm_local {
    pthread_mutex_t mu; /* the waitq's lock; taken before the segment's lock */
    struct band__waitq q;
    band_waiter **by_slot; /* slot index -> pending waiter of this handle */
    uint32_t pending;
    int running, stop;
    pthread_t thread;
};

/*
 * The fast paths' view of a handle (struct band_shm_fast_view, band/shm.h) lives on a
 * private page marked MADV_WIPEONFORK: a forked child finds it zeroed, so its first
 * acquire or release cannot touch the parent's cache and takes the slow path, which gives
 * the child a record of its own and fills the page in again. One load replaces a check
 * of the fork generation.
 */
struct band_shm {
    /* struct band_shm_prefix: the inline fast paths' view, frozen */
    struct band_shm_fast_view *fast;
    uint32_t nbounds;
    int fd;
    int fast_ok; /* the page is wiped on fork: the fast paths may be used */
    size_t size;
    unsigned char *base;
    struct band__shm_hdr *h;
    struct band__shm_record *rec;
    struct band__shm_slot *slot;
    uint32_t self; /* this handle's record */
    /* The segment's sizes as checked when it was opened (nbounds above too). Every index
     * into the segment is bounded by these copies, never by the shared header, which
     * another process could overwrite. The fast paths also read no shared line for them. */
    uint32_t nrecords;
    uint32_t nslots;
    uint64_t gen; /* the fork generation self belongs to */
    int inspect;  /* opened to look only: no record, so no units */
    struct band__shm_local local;
};

/* The most wakes one operation defers until after the unlock; more are done under it. */
#define BAND__SHM_WAKE_BATCH 32

/* One operation's lock scope and the wakes it owes after unlocking. */
struct band__shm_op {
    band_shm *s;
    unsigned recovered; /* dead records the lock's takeover recovered */
    unsigned nwake;
    uint32_t *wake_word[BAND__SHM_WAKE_BATCH];
};

/* shm_proc.c: process identity and liveness. */
uint64_t band__shm_generation(void); /* bumped in every forked child; installs the hook */
extern uint64_t band__shm_gen;       /* its value, for the fast paths once installed */
int band__shm_self_identity(uint32_t *pid, uint64_t *start);
int band__shm_alive(uint32_t pid, uint64_t start); /* 1 alive, 0 dead */
/*
 * Futex words count completions above bit 0 and have bit 0 set while someone sleeps on
 * them, so a completion makes the wake system call only when a sleeper said it sleeps:
 * a waiter still spinning is handed its grant with no system call on either side.
 */
#define BAND__FUTEX_SLEEPER 1u
#define BAND__FUTEX_BUMP    2u
void band__shm_futex_wake(uint32_t *word); /* bump, then wake every sleeper */
/* Sleep on @word unless it changed since @seen was read: 0 or BAND_ETIMEDOUT. */
int band__shm_futex_sleep(uint32_t *word, uint32_t seen, band_time timeout_ns);
void band__shm_futex_wake_only(uint32_t *word); /* wake every sleeper */
int band__shm_futex_wait(uint32_t *word, uint32_t val, band_time timeout_ns);

/* shm_lock.c: the lock, the undo log, recovery. */
#ifdef BAND_TESTING
extern long band__shm_crash_countdown; /* > 0: SIGKILL at that many logged stores on */
#endif
int band__shm_lock(struct band__shm_op *op, band_shm *s);        /* 0 or BAND_EBADSEG */
void band__shm_unlock(struct band__shm_op *op);                  /* then runs the deferred wakes */
void band__shm_set(band_shm *s, uint64_t *word, uint64_t value); /* logged store */
void band__shm_commit(band_shm *s);
void band__shm_repair(band_shm *s);
void band__shm_wake_later(struct band__shm_op *op, uint32_t *word);

/* shm_queue.c: records, the queue, grants. Lock held for all. */
int band__shm_self_locked(struct band__shm_op *op); /* this process's record of op->s */
int band__shm_register_locked(struct band__shm_op *op, uint32_t *out);
unsigned band__shm_sweep_locked(struct band__shm_op *op, int force);
void band__shm_reclaim_record_locked(struct band__shm_op *op, uint32_t r);
void band__shm_grant_pass_locked(struct band__shm_op *op);
void band__shm_withdraw_locked(struct band__shm_op *op, uint32_t i, int reason);
void band__shm_slot_free_locked(band_shm *s, uint32_t i);
void band__shm_give_back_locked(struct band__shm_op *op, uint32_t r, const uint64_t *units);
int band__shm_ensure_self(band_shm *s);   /* re-registers after fork; 0 or an error */
void band__shm_fast_publish(band_shm *s); /* point the fast view at this record */
void band__shm_close_locked(struct band__shm_op *op);
void band__shm_fail_too_big_locked(struct band__shm_op *op, uint32_t b);
/* Every cache of @b to the pool (freezing them); returns what other handles had cached. */
uint64_t band__shm_steal_locked(band_shm *s, uint32_t b);
/* Record @r's cache of @b to the pool (freezing it); returns the units moved. */
uint64_t band__shm_steal_record_locked(band_shm *s, uint32_t r, uint32_t b);
void band__shm_thaw_self_locked(band_shm *s, uint32_t b); /* when @b is quiet */
/* Record @r's cached units of @b: the word's less stolen, at most what it holds. */
uint64_t band__shm_cached(const band_shm *s, uint32_t r, uint32_t b);
/* The same without the cap: above held while a release that returned too much is undone. */
uint64_t band__shm_cached_raw(const band_shm *s, uint32_t r, uint32_t b);

/* A request in internal form: units per bound (0: not named) and the bound mask. */
struct band__shm_want {
    uint64_t units[BAND_SHM_MAX_BOUNDS];
    uint64_t mask;
};
int band__shm_want_from(const band_shm *s, const band_shm_req *r, struct band__shm_want *out);
/* Grant @want to this handle now if nothing queued for its bounds is ahead and it fits:
 * 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW. Lock held. */
int band__shm_try_locked(struct band__shm_op *op, const struct band__shm_want *want);
/* Queue @want for this handle: 0 and *@slot, or BAND_EBUSY (no free slot). Lock held. */
int band__shm_enqueue_locked(struct band__shm_op *op, const struct band__shm_want *want,
                             uint64_t flags, uint32_t *slot);

/* shm_async.c */
int band__shm_local_init(band_shm *s);
int band__shm_local_fini(band_shm *s); /* BAND_EBUSY while pending */
void band__shm_local_after_fork(band_shm *s);
int band__shm_async_submit(band_shm *s, const struct band__shm_want *want, band_waiter *w,
                           uint32_t *slot_out);

static inline uint64_t band__shm_load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* How many records to look at: those ever used, bounded by the handle's checked count. */
static inline uint32_t band__shm_nrec(const band_shm *s)
{
    uint64_t hwm = __atomic_load_n(&s->h->rec_hwm, __ATOMIC_ACQUIRE);
    return hwm < s->nrecords ? (uint32_t)hwm : s->nrecords;
}

#endif /* BAND_SHM_INTERNAL_H */
