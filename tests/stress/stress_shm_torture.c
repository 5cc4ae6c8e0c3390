/* SPDX-License-Identifier: MIT */
/*
 * stress_shm_torture.c - processes SIGKILLed at random moments while they use one shared
 * segment of three bounds.
 *
 * Each round forks NCHILD workers (more than the cores, so some are preempted inside the
 * library) that run random weighted operations - try, blocking with short deadlines, async
 * (woken on the handle's doorbell thread), cancel of their pending async, release, reduce,
 * grow, drain, multi-bound try and blocking admissions - half of them through the
 * parent's inherited handle (a forked child gets its own record on first use), half
 * through a handle of their own. The parent SIGKILLs each at a random microsecond delay:
 * many die inside band_shm_open() or in the middle of an operation, holding the lock. On
 * some rounds a survivor process holds units and waits beside them and the parent keeps
 * asynchronous waits queued across rounds.
 *
 * After the kills the parent calls band_shm_reclaim() and checks, at quiescence:
 *   - per bound, available + the units held by the living == capacity + debt, in_use is
 *     what the living hold, waiters/waiting_units match the queued requests;
 *   - every record belongs to a living process and no queued request is a dead
 *     process's;
 *   - the living waiters are still queued in arrival order (seq strictly increasing), and
 *     each of the parent's waiters that left the queue was woken exactly once;
 *   - the survivor still holds exactly what it took;
 *   - (every third round) a process that dies inside a transaction it made under the
 *     lock leaves the segment exactly as it was: the undo log is rolled back;
 *   - nothing was granted twice: every worker checks after each operation that the
 *     segment's record of its holdings equals its own count and that no waiter was woken
 *     twice or after a successful cancel, and reports a violation in a MAP_SHARED log.
 * While workers run the parent also samples the stats: each snapshot must satisfy the
 * first identity.
 *
 * Bounded by rounds (default 1000) and wall time (default 20 s, 15 s under a sanitizer);
 * BAND_STRESS_SECONDS and BAND_SHM_ROUNDS, or argv[1] (seconds) and argv[2] (rounds),
 * override for longer runs.
 */
#define _GNU_SOURCE

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h"

#define NBOUNDS   3
#define NCHILD    5
#define MAXPW     NBOUNDS /* the parent's async waiters, one per bound */
#define MAXLIVING 4

static const uint64_t base_cap[NBOUNDS] = {8, 20, 5};
static const char *const bound_names[NBOUNDS] = {"conns", "bytes", "slots"};

struct child_log {
    atomic_int violation; /* 0, or the line that found one */
    char msg[160];
    atomic_ullong ops, grants, async_grants, cancels;
};

struct shared {
    struct child_log child[NCHILD];
    /* the survivor */
    atomic_int surv_ready, surv_go, surv_rc;
    atomic_ullong surv_held[NBOUNDS];
};

static struct shared *sh;
static band_shm *parent_s;

/* ---------------------------------------------------------------------------------- */
/* Workers (children): they never return, they are killed                              */

struct async_op {
    band_waiter w;
    atomic_int wakes;
    atomic_int status;
    unsigned bound;
    uint64_t n;
    int pending;  /* submitted, not yet collected */
    int canceled; /* a cancel returned 0: no wake may follow */
};

static void async_wake(band_waiter *w)
{
    struct async_op *a = (struct async_op *)w;
    atomic_store(&a->status, band_waiter_status(w));
    atomic_fetch_add(&a->wakes, 1);
}

#define VIOLATION(log, ...)                                                                        \
    do {                                                                                           \
        snprintf((log)->msg, sizeof((log)->msg), __VA_ARGS__);                                     \
        atomic_store(&(log)->violation, __LINE__);                                                 \
        _exit(3);                                                                                  \
    } while (0)

/* A forked child dies of its own faults: cmocka's handlers would longjmp it back into
 * the parent's test. */
static void child_default_signals(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < TEST_COUNTOF(sigs); i++)
        signal(sigs[i], SIG_DFL);
}

static void worker(int k, uint64_t seed, int fd)
{
    child_default_signals();
    struct child_log *log = &sh->child[k];
    band_shm *s = parent_s;
    if (k % 2 == 1) {
        int rc = band_shm_open_fd(&s, fd, NULL);
        if (rc == BAND_EBUSY)
            for (;;)
                pause();
        if (rc != 0)
            VIOLATION(log, "open_fd: %s", band_err_name(rc));
    }
    uint64_t rng = seed;
    uint64_t track[NBOUNDS] = {0};
    struct async_op aop[2];
    memset(aop, 0, sizeof(aop));
    for (;;) {
        /* Collect async results first. */
        int any_pending = 0;
        for (int i = 0; i < 2; i++) {
            struct async_op *a = &aop[i];
            int wk = atomic_load(&a->wakes);
            if (wk > 1)
                VIOLATION(log, "async %d woken %d times", i, wk);
            if (a->canceled && wk != 0)
                VIOLATION(log, "async %d woken after a successful cancel", i);
            if (a->pending && wk == 1) {
                a->pending = 0;
                int st = atomic_load(&a->status);
                if (st == 0) {
                    track[a->bound] += a->n;
                    atomic_fetch_add(&log->async_grants, 1);
                } else if (st != BAND_E2BIG) {
                    VIOLATION(log, "async wake status %s", band_err_name(st));
                }
            }
            any_pending |= a->pending;
        }
        if (!any_pending)
            for (unsigned b = 0; b < NBOUNDS; b++)
                if (band_shm_held(s, b) != track[b])
                    VIOLATION(log, "bound %u: segment says held %llu, worker counts %llu", b,
                              (unsigned long long)band_shm_held(s, b),
                              (unsigned long long)track[b]);
        atomic_fetch_add(&log->ops, 1);

        unsigned b = (unsigned)test_rng_range(&rng, 0, NBOUNDS - 1);
        uint64_t n = test_rng_range(&rng, 0, base_cap[b]);
        unsigned op = (unsigned)test_rng_range(&rng, 0, 99);
        int rc;
        if (op < 25) { /* try */
            rc = band_shm_try_acquire(s, b, n);
            if (rc == 0) {
                track[b] += n;
                atomic_fetch_add(&log->grants, 1);
            } else if (rc != BAND_EAGAIN && rc != BAND_E2BIG)
                VIOLATION(log, "try: %s", band_err_name(rc));
        } else if (op < 37) { /* blocking, short deadline */
            band_time d = band_deadline_after((band_time)test_rng_range(&rng, 0, 3000) * 1000);
            rc = band_shm_acquire(s, b, n, d, NULL);
            if (rc == 0) {
                track[b] += n;
                atomic_fetch_add(&log->grants, 1);
            } else if (rc != BAND_ETIMEDOUT && rc != BAND_E2BIG && rc != BAND_EBUSY)
                VIOLATION(log, "acquire: %s", band_err_name(rc));
        } else if (op < 49) { /* async */
            struct async_op *a = &aop[test_rng_range(&rng, 0, 1)];
            if (a->pending)
                continue;
            band_waiter_init(&a->w, async_wake, NULL);
            atomic_store(&a->wakes, 0);
            a->canceled = 0;
            a->bound = b;
            a->n = n;
            rc = band_shm_acquire_async(s, b, n, &a->w);
            if (rc == 0)
                track[b] += n;
            else if (rc == BAND_PENDING)
                a->pending = 1;
            else if (rc != BAND_E2BIG && rc != BAND_EBUSY)
                VIOLATION(log, "async: %s", band_err_name(rc));
        } else if (op < 57) { /* cancel */
            struct async_op *a = &aop[test_rng_range(&rng, 0, 1)];
            if (!a->pending)
                continue;
            rc = band_waiter_cancel(&a->w, BAND_ECANCELED);
            if (rc == 0) {
                a->pending = 0;
                a->canceled = 1;
                atomic_fetch_add(&log->cancels, 1);
            } else if (rc == BAND_EALREADY) {
                band_time end = band_now() + 5 * BAND_SEC;
                while (atomic_load(&a->wakes) == 0 && band_now() < end)
                    sched_yield();
                if (atomic_load(&a->wakes) == 0)
                    VIOLATION(log, "EALREADY but no wake within 5 s");
            } else
                VIOLATION(log, "cancel: %s", band_err_name(rc));
        } else if (op < 80) { /* release */
            uint64_t m = track[b] == 0 ? 0 : test_rng_range(&rng, 1, track[b]);
            rc = band_shm_release(s, b, m);
            if (rc != 0)
                VIOLATION(log, "release %llu of %llu: %s", (unsigned long long)m,
                          (unsigned long long)track[b], band_err_name(rc));
            track[b] -= m;
            /* (with an async pending, a grant may raise the holding meanwhile) */
            if (!any_pending && band_shm_release(s, b, track[b] + 1) != BAND_EOVERFLOW)
                VIOLATION(log, "release beyond held did not fail");
        } else if (op < 83) { /* reduce */
            rc = band_shm_reduce(s, b, test_rng_range(&rng, 0, 2));
            if (rc != 0 && rc != BAND_EINVAL)
                VIOLATION(log, "reduce: %s", band_err_name(rc));
        } else if (op < 86) { /* grow */
            rc = band_shm_grow(s, b, test_rng_range(&rng, 0, 2));
            if (rc != 0)
                VIOLATION(log, "grow: %s", band_err_name(rc));
        } else if (op < 89) { /* drain */
            uint64_t got = band_shm_drain(s, b, test_rng_range(&rng, 0, 3));
            track[b] += got;
        } else { /* multi-bound */
            band_shm_req r = {0};
            band_shm_req_init(&r, NULL, NULL);
            uint64_t want[NBOUNDS] = {0};
            for (unsigned i = 0; i < NBOUNDS; i++)
                if (test_rng_range(&rng, 0, 1)) {
                    want[i] = test_rng_range(&rng, 0, base_cap[i] / 2);
                    band_shm_req_add(&r, i, want[i]);
                }
            if (op < 95)
                rc = band_shm_try_admit(s, &r);
            else
                rc = band_shm_admit(
                    s, &r, band_deadline_after((band_time)test_rng_range(&rng, 0, 2000) * 1000),
                    NULL);
            if (rc == 0) {
                for (unsigned i = 0; i < NBOUNDS; i++)
                    track[i] += want[i];
                atomic_fetch_add(&log->grants, 1);
            } else if (rc != BAND_EAGAIN && rc != BAND_ETIMEDOUT && rc != BAND_E2BIG &&
                       rc != BAND_EBUSY)
                VIOLATION(log, "admit: %s", band_err_name(rc));
        }
    }
}

/* The survivor: holds units, queues one async wait, parks until told to check. */
static void survivor(int fd, uint64_t seed)
{
    child_default_signals();
    band_shm *s = NULL;
    if (band_shm_open_fd(&s, fd, NULL) != 0)
        _exit(10);
    uint64_t rng = seed;
    for (unsigned b = 0; b < NBOUNDS; b++) {
        uint64_t n = test_rng_range(&rng, 0, 2);
        if (band_shm_acquire(s, b, n, band_deadline_after(20 * BAND_MSEC), NULL) == 0)
            atomic_store(&sh->surv_held[b], n);
    }
    struct async_op a;
    memset(&a, 0, sizeof(a));
    band_waiter_init(&a.w, async_wake, NULL);
    a.bound = (unsigned)test_rng_range(&rng, 0, NBOUNDS - 1);
    a.n = base_cap[a.bound] - atomic_load(&sh->surv_held[a.bound]);
    int rc = band_shm_acquire_async(s, a.bound, a.n, &a.w);
    if (rc != 0 && rc != BAND_PENDING && rc != BAND_E2BIG)
        _exit(11);
    if (rc == 0)
        atomic_fetch_add(&sh->surv_held[a.bound], a.n);
    atomic_store(&sh->surv_ready, 1);
    band_time end = band_now() + 60 * BAND_SEC;
    while (atomic_load(&sh->surv_go) == 0 && band_now() < end)
        usleep(500);
    if (rc == BAND_PENDING) {
        int c = band_waiter_cancel(&a.w, BAND_ECANCELED);
        if (c == BAND_EALREADY) {
            while (atomic_load(&a.wakes) == 0 && band_now() < end)
                sched_yield();
            if (atomic_load(&a.status) == 0)
                atomic_fetch_add(&sh->surv_held[a.bound], a.n);
        } else if (c == BAND_EINVAL && atomic_load(&a.wakes) == 1) {
            if (atomic_load(&a.status) == 0) /* woken before the cancel */
                atomic_fetch_add(&sh->surv_held[a.bound], a.n);
        } else if (c != 0)
            _exit(12);
    }
    for (unsigned b = 0; b < NBOUNDS; b++)
        if (band_shm_held(s, b) != atomic_load(&sh->surv_held[b]))
            _exit(13);
    _exit(band_shm_destroy(s) == 0 ? 0 : 14);
}

/* ---------------------------------------------------------------------------------- */
/* The parent                                                                          */

struct pwait {
    band_waiter w;
    atomic_int wakes;
    atomic_int status;
    unsigned bound;
    uint64_t n;
    int pending;
    uint64_t seq; /* its place in the queue, once seen */
};

static void pwait_wake(band_waiter *w)
{
    struct pwait *p = (struct pwait *)w;
    atomic_store(&p->status, band_waiter_status(w));
    atomic_fetch_add(&p->wakes, 1);
}

/* waitpid() for at most @seconds. Returns 1 with *@status when @pid ended, 0 when it did
 * not (it still runs). */
static int wait_bounded(pid_t pid, int *status, unsigned seconds)
{
    band_time end = band_now() + (band_time)seconds * BAND_SEC;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 1;
        assert_int_equal(r, 0);
        if (band_now() >= end)
            return 0;
        usleep(1000);
    }
}

struct totals {
    unsigned rounds, survivor_rounds, survivors_hung, dead_total, parent_grants, transactions;
    uint64_t child_ops, child_grants, child_async, child_cancels, samples;
};

static band_time run_seconds(int argc, char **argv)
{
    const char *v = argc > 1 ? argv[1] : getenv("BAND_STRESS_SECONDS");
    if (v != NULL && *v != '\0')
        return (band_time)(strtod(v, NULL) * 1e9);
    return test_under_sanitizer() ? 15 * BAND_SEC : 20 * BAND_SEC;
}

static unsigned run_rounds(int argc, char **argv)
{
    const char *v = argc > 2 ? argv[2] : getenv("BAND_SHM_ROUNDS");
    if (v != NULL && *v != '\0')
        return (unsigned)strtoul(v, NULL, 10);
    return 1000;
}

static int g_argc;
static char **g_argv;

/* One consistent snapshot: available + in_use == capacity + debt for every bound. */
static void check_identity(const band_shm_stats *st, unsigned round, const char *when)
{
    for (unsigned b = 0; b < NBOUNDS; b++) {
        const band_shm_bound_stats *bs = &st->bounds[b];
        if (bs->available + bs->in_use != bs->capacity + bs->debt)
            print_error("round %u (%s) bound %u: available %llu + in_use %llu != capacity "
                        "%llu + debt %llu\n",
                        round, when, b, (unsigned long long)bs->available,
                        (unsigned long long)bs->in_use, (unsigned long long)bs->capacity,
                        (unsigned long long)bs->debt);
        assert_u64_equal(bs->available + bs->in_use, bs->capacity + bs->debt);
    }
}

/* The parent's waiters, submitted while the workers run: some stay queued across rounds. */
static void parent_submit(band_shm *s, struct pwait *pw, uint64_t *rng)
{
    for (int i = 0; i < MAXPW; i++) {
        if (pw[i].pending || test_rng_range(rng, 0, 2) != 0)
            continue;
        band_waiter_init(&pw[i].w, pwait_wake, NULL);
        atomic_store(&pw[i].wakes, 0);
        pw[i].bound = (unsigned)i; /* one per bound: the queue listing tells them apart */
        pw[i].n = test_rng_range(rng, 1, base_cap[pw[i].bound]);
        int rc = band_shm_acquire_async(s, pw[i].bound, pw[i].n, &pw[i].w);
        if (rc == 0) {
            assert_int_equal(band_shm_release(s, pw[i].bound, pw[i].n), 0);
        } else {
            if (rc != BAND_PENDING && rc != BAND_E2BIG && rc != BAND_EBUSY)
                print_error("parent async: %s\n", band_err_name(rc));
            assert_true(rc == BAND_PENDING || rc == BAND_E2BIG || rc == BAND_EBUSY);
            pw[i].pending = rc == BAND_PENDING;
        }
    }
}

/*
 * Under the segment's lock (white box: the stats derive in_use from the bound's words, so
 * only the records can contradict them): per bound, the units the live records hold ==
 * capacity + debt - available, never both available and debt; the queue's links, its
 * count and each bound's waiters and waiting_units agree with the waiting slots. Returns
 * 0 or the number of the first broken rule, with a message in @why.
 */
static int check_locked(band_shm *s, char *why, size_t cap)
{
    struct band__shm_op op;
    if (band__shm_lock(&op, s) != 0) {
        snprintf(why, cap, "lock not recoverable");
        return 1;
    }
    struct band__shm_hdr *h = s->h;
    int bad = 0;
    uint64_t held[NBOUNDS] = {0}, wunits[NBOUNDS] = {0}, wcount[NBOUNDS] = {0};
    uint64_t live = 0;
    for (uint32_t r = 0; r < h->nrecords; r++) {
        if (s->rec[r].state != BAND__REC_LIVE)
            continue;
        live++;
        for (unsigned b = 0; b < NBOUNDS; b++)
            held[b] += s->rec[r].held[b];
    }
    uint64_t n = 0, prev = 0, link = h->qhead;
    while (link != 0 && n <= h->nslots) {
        const struct band__shm_slot *sl = &s->slot[link - 1];
        if (sl->state != BAND__SLOT_WAITING || sl->prev != prev) {
            snprintf(why, cap, "queue link %llu: state %llu prev %llu (expected %llu)",
                     (unsigned long long)link, (unsigned long long)sl->state,
                     (unsigned long long)sl->prev, (unsigned long long)prev);
            bad = 2;
            break;
        }
        for (unsigned b = 0; b < NBOUNDS; b++) {
            wunits[b] += sl->want[b];
            wcount[b] += sl->want[b] != 0;
        }
        n++;
        prev = link;
        link = sl->next;
    }
    if (!bad && (prev != h->qtail || n != h->nwaiting)) {
        snprintf(why, cap, "queue: %llu linked, nwaiting %llu, tail %llu/%llu",
                 (unsigned long long)n, (unsigned long long)h->nwaiting, (unsigned long long)prev,
                 (unsigned long long)h->qtail);
        bad = 3;
    }
    if (!bad && live != h->nhandles) {
        snprintf(why, cap, "%llu live records, nhandles %llu", (unsigned long long)live,
                 (unsigned long long)h->nhandles);
        bad = 4;
    }
    for (unsigned b = 0; b < NBOUNDS && !bad; b++) {
        const struct band__shm_bound *bd = &h->bounds[b];
        if (held[b] + bd->available != bd->capacity + bd->debt ||
            (bd->available != 0 && bd->debt != 0)) {
            snprintf(why, cap, "bound %u: held %llu + available %llu != capacity %llu + debt %llu",
                     b, (unsigned long long)held[b], (unsigned long long)bd->available,
                     (unsigned long long)bd->capacity, (unsigned long long)bd->debt);
            bad = 5;
        } else if (bd->waiters != wcount[b] || bd->waiting_units != wunits[b]) {
            snprintf(why, cap, "bound %u: waiters %llu/%llu waiting_units %llu/%llu", b,
                     (unsigned long long)bd->waiters, (unsigned long long)wcount[b],
                     (unsigned long long)bd->waiting_units, (unsigned long long)wunits[b]);
            bad = 6;
        }
    }
    band__shm_unlock(&op);
    return bad;
}

/*
 * A process that dies in the middle of a transaction, at quiescence (white box): it takes
 * a unit, then under the lock makes logged changes no repair could guess back - a larger
 * capacity and available, a wrong holding, a wrong handle count - and SIGKILLs itself.
 * The next locker must roll them back: afterwards the segment is exactly as before, with
 * the dead process's unit returned.
 */
static void die_in_transaction(band_shm *s, int fd, unsigned b, unsigned round)
{
    band_shm_stats before, after;
    assert_int_equal(band_shm_get_stats(s, &before), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        child_default_signals();
        band_shm *c = NULL;
        if (band_shm_open_fd(&c, fd, NULL) != 0)
            _exit(10);
        (void)band_shm_try_acquire(c, b, 1);
        struct band__shm_op op;
        if (band__shm_lock(&op, c) != 0)
            _exit(11);
        struct band__shm_bound *bd = &c->h->bounds[b];
        band__shm_set(c, &bd->capacity, bd->capacity + 5);
        band__shm_set(c, &bd->available, bd->available + 5);
        band__shm_set(c, &c->rec[c->self].held[b], 777);
        band__shm_set(c, &c->h->nhandles, 99);
        raise(SIGKILL);
        _exit(12);
    }
    int status = 0;
    assert_int_equal(waitpid(p, &status, 0), p);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* The takeover of the lock recovers the dead record: inside this call, or first in
     * this process's doorbell thread (then *dead is 0). */
    unsigned dead = 0;
    assert_int_equal(band_shm_reclaim(s, &dead), 0);
    assert_true(dead <= 1);
    assert_int_equal(band_shm_get_stats(s, &after), 0);
    assert_u64_equal(after.dead_handles, before.dead_handles + 1);
    const band_shm_bound_stats *x = &before.bounds[b], *y = &after.bounds[b];
    if (y->capacity != x->capacity || y->available != x->available || y->debt != x->debt ||
        after.handles != before.handles)
        print_error("round %u: after a death inside a transaction on bound %u: capacity "
                    "%llu -> %llu, available %llu -> %llu, debt %llu -> %llu, handles %u -> "
                    "%u\n",
                    round, b, (unsigned long long)x->capacity, (unsigned long long)y->capacity,
                    (unsigned long long)x->available, (unsigned long long)y->available,
                    (unsigned long long)x->debt, (unsigned long long)y->debt, before.handles,
                    after.handles);
    assert_u64_equal(y->capacity, x->capacity);
    assert_u64_equal(y->available, x->available);
    assert_u64_equal(y->debt, x->debt);
    assert_int_equal(after.handles, before.handles);
    assert_u64_equal(after.recoveries, before.recoveries + 1);
}

static void test_torture(void **state)
{
    (void)state;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    band_shm_bound bounds[NBOUNDS];
    for (unsigned b = 0; b < NBOUNDS; b++)
        bounds[b] = (band_shm_bound){bound_names[b], base_cap[b], BAND_SHM_UNITS};
    band_shm_opts o = {.max_handles = 16, .max_waiters = 32};
    assert_int_equal(band_shm_create(&parent_s, NULL, bounds, NBOUNDS, &o), 0);
    band_shm *s = parent_s;
    int fd = band_shm_fd(s);

    const band_time limit = run_seconds(g_argc, g_argv);
    const unsigned max_rounds = run_rounds(g_argc, g_argv);
    const band_time start = band_now();
    uint64_t rng = 0x7f4a7c15;
    struct pwait pw[MAXPW];
    memset(pw, 0, sizeof(pw));
    struct totals t = {0};

    for (unsigned round = 0; round < max_rounds && band_now() - start < limit; round++) {
        memset(sh, 0, sizeof(*sh));
        pid_t surv = -1;
        if (round % 4 == 0) {
            fflush(NULL);
            surv = fork();
            if (surv == 0)
                survivor(fd, test_rng_next(&rng) ^ round);
            assert_true(surv > 0);
            band_time end = band_now() + 10 * BAND_SEC;
            while (atomic_load(&sh->surv_ready) == 0 && band_now() < end)
                usleep(200);
            assert_int_equal(atomic_load(&sh->surv_ready), 1);
            t.survivor_rounds++;
        }

        pid_t kids[NCHILD];
        band_time when[NCHILD];
        const band_time t0 = band_now();
        fflush(NULL);
        for (int k = 0; k < NCHILD; k++) {
            uint64_t seed = test_rng_next(&rng);
            /* Mostly within 2 ms (the library's first calls), up to 30 ms. */
            when[k] = (band_time)(test_rng_range(&rng, 0, 3) == 0 ? test_rng_range(&rng, 0, 30000)
                                                                  : test_rng_range(&rng, 0, 2000)) *
                      BAND_USEC;
            kids[k] = fork();
            if (kids[k] == 0)
                worker(k, seed, fd);
            assert_true(kids[k] > 0);
        }
        int killed[NCHILD] = {0}, submitted = 0;
        for (int left = NCHILD; left > 0;) {
            band_time now = band_now() - t0;
            if (!submitted && now > 300 * BAND_USEC) {
                parent_submit(s, pw, &rng);
                submitted = 1;
            }
            for (int k = 0; k < NCHILD; k++)
                if (!killed[k] && when[k] <= now) {
                    kill(kids[k], SIGKILL);
                    killed[k] = 1;
                    left--;
                }
            band_shm_stats st;
            if (test_rng_range(&rng, 0, 3) == 0 && band_shm_get_stats(s, &st) == 0) {
                check_identity(&st, round, "while running");
                char why[200];
                int bad = check_locked(s, why, sizeof(why));
                if (bad != 0)
                    print_error("round %u, while running: %s\n", round, why);
                assert_int_equal(bad, 0);
                t.samples++;
            }
            usleep(100);
        }
        for (int k = 0; k < NCHILD; k++) {
            int status = 0;
            assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
            struct child_log *log = &sh->child[k];
            if (atomic_load(&log->violation) != 0)
                print_error("round %u worker %d: line %d: %s\n", round, k,
                            atomic_load(&log->violation), log->msg);
            assert_int_equal(atomic_load(&log->violation), 0);
            assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            t.child_ops += atomic_load(&log->ops);
            t.child_grants += atomic_load(&log->grants);
            t.child_async += atomic_load(&log->async_grants);
            t.child_cancels += atomic_load(&log->cancels);
        }

        /* Living waiters before the recovery, in queue order. */
        band_shm_waiter_info before[64], after[64];
        size_t nbefore = 0, nafter = 0;
        assert_int_equal(band_shm_list_waiters(s, before, 64, &nbefore), 0);
        assert_true(nbefore <= 64);

        unsigned dead = 0;
        assert_int_equal(band_shm_reclaim(s, &dead), 0);
        assert_true(dead <= NCHILD);
        t.dead_total += dead;

        band_shm_stats st;
        assert_int_equal(band_shm_get_stats(s, &st), 0);
        check_identity(&st, round, "after reclaim");
        char why[200];
        int bad = check_locked(s, why, sizeof(why));
        if (bad != 0)
            print_error("round %u, after reclaim: %s\n", round, why);
        assert_int_equal(bad, 0);
        band_shm_holder h[16];
        size_t nh = 0;
        assert_int_equal(band_shm_list_holders(s, h, 16, &nh), 0);
        assert_int_equal(nh, st.handles);
        assert_int_equal(nh, surv > 0 ? 2 : 1);
        uint64_t held[NBOUNDS] = {0};
        for (size_t i = 0; i < nh; i++) {
            if (h[i].pid != getpid() && h[i].pid != surv)
                print_error("round %u: a record of pid %d is left\n", round, (int)h[i].pid);
            assert_true(h[i].pid == getpid() || h[i].pid == surv);
            assert_int_equal(h[i].alive, 1);
            for (unsigned b = 0; b < NBOUNDS; b++)
                held[b] += h[i].held[b];
            if (h[i].pid == surv)
                for (unsigned b = 0; b < NBOUNDS; b++) {
                    /* The survivor's async may have been granted by the recovery. */
                    assert_true(h[i].held[b] >= atomic_load(&sh->surv_held[b]));
                }
        }
        assert_int_equal(band_shm_list_waiters(s, after, 64, &nafter), 0);
        assert_int_equal(nafter, st.waiters);
        uint64_t wunits[NBOUNDS] = {0}, wcount[NBOUNDS] = {0};
        for (size_t i = 0; i < nafter; i++) {
            if (after[i].pid != getpid() && after[i].pid != surv)
                print_error("round %u: a waiter of pid %d is left\n", round, (int)after[i].pid);
            assert_true(after[i].pid == getpid() || after[i].pid == surv);
            if (i > 0)
                assert_true(after[i - 1].seq < after[i].seq);
            /* It was queued before, and the living before it still are, in order. */
            size_t j = 0;
            while (j < nbefore && before[j].seq != after[i].seq)
                j++;
            assert_true(j < nbefore);
            for (unsigned b = 0; b < NBOUNDS; b++) {
                wunits[b] += after[i].want[b];
                wcount[b] += after[i].want[b] != 0;
            }
        }
        for (unsigned b = 0; b < NBOUNDS; b++) {
            assert_u64_equal(st.bounds[b].in_use, held[b]);
            assert_u64_equal(st.bounds[b].available + held[b],
                             st.bounds[b].capacity + st.bounds[b].debt);
            assert_u64_equal(st.bounds[b].waiting_units, wunits[b]);
            assert_u64_equal(st.bounds[b].waiters, wcount[b]);
        }

        /* The parent's waiters: still queued, or woken exactly once. */
        uint64_t pheld[NBOUNDS] = {0};
        for (int i = 0; i < MAXPW; i++) {
            if (!pw[i].pending)
                continue;
            int wk = atomic_load(&pw[i].wakes);
            if (wk == 0) {
                int queued = 0;
                for (size_t j = 0; j < nafter; j++)
                    queued |= after[j].pid == getpid() && after[j].want[pw[i].bound] != 0;
                /* A grant may be on its way to the doorbell thread. */
                if (!queued) {
                    band_time end = band_now() + 5 * BAND_SEC;
                    while (atomic_load(&pw[i].wakes) == 0 && band_now() < end)
                        usleep(100);
                    wk = atomic_load(&pw[i].wakes);
                    assert_int_equal(wk, 1);
                }
            }
            if (wk == 1) {
                pw[i].pending = 0;
                int stt = atomic_load(&pw[i].status);
                assert_true(stt == 0 || stt == BAND_E2BIG);
                if (stt == 0) {
                    pheld[pw[i].bound] += pw[i].n;
                    t.parent_grants++;
                }
            }
            assert_true(wk <= 1);
        }
        for (unsigned b = 0; b < NBOUNDS; b++) {
            if (band_shm_held(s, b) != pheld[b]) {
                print_error("round %u bound %u: the parent holds %llu, its waiters got %llu\n",
                            round, b, (unsigned long long)band_shm_held(s, b),
                            (unsigned long long)pheld[b]);
                for (int i = 0; i < MAXPW; i++)
                    print_error("  parent waiter %d: pending %d wakes %d status %d bound %u n "
                                "%llu\n",
                                i, pw[i].pending, atomic_load(&pw[i].wakes),
                                atomic_load(&pw[i].status), pw[i].bound,
                                (unsigned long long)pw[i].n);
                for (size_t j = 0; j < nafter; j++)
                    print_error("  queued: pid %d seq %llu async %d want %llu %llu %llu\n",
                                (int)after[j].pid, (unsigned long long)after[j].seq, after[j].async,
                                (unsigned long long)after[j].want[0],
                                (unsigned long long)after[j].want[1],
                                (unsigned long long)after[j].want[2]);
            }
            assert_u64_equal(band_shm_held(s, b), pheld[b]);
            if (pheld[b] != 0)
                assert_int_equal(band_shm_release(s, b, pheld[b]), 0);
        }

        if (surv > 0) {
            atomic_store(&sh->surv_go, 1);
            int status = 0;
            if (!wait_bounded(surv, &status, 30)) {
                /* Everything it does is bounded (its waits end within 60 s of being
                 * ready), so only a hang in the sanitizer's runtime gets here:
                 * ThreadSanitizer does not support a thread started in a child forked
                 * from a multi-threaded process, as the survivor's asynchronous wait
                 * starts the doorbell thread. */
                print_error("round %u: the survivor did not end within 30 s%s\n", round,
                            test_under_tsan() ? " (a child of a multi-threaded fork under "
                                                "ThreadSanitizer): killed, and reclaimed as dead"
                                              : "");
                assert_true(test_under_tsan());
                kill(surv, SIGKILL);
                assert_int_equal(waitpid(surv, &status, 0), surv);
                unsigned gone = 0;
                assert_int_equal(band_shm_reclaim(s, &gone), 0);
                assert_int_equal(gone, 1);
                t.survivors_hung++;
                status = 0; /* none of its checks failed: a failed check exits at once */
            }
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                print_error("round %u: survivor ended with status %#x\n", round, status);
            assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }

        if (round % 3 == 1) {
            die_in_transaction(s, fd, round % NBOUNDS, round);
            t.transactions++;
        }

        /* Back to the base capacities for the next round. */
        assert_int_equal(band_shm_get_stats(s, &st), 0);
        for (unsigned b = 0; b < NBOUNDS; b++) {
            uint64_t c = st.bounds[b].capacity;
            if (c < base_cap[b])
                assert_int_equal(band_shm_grow(s, b, base_cap[b] - c), 0);
            else if (c > base_cap[b])
                assert_int_equal(band_shm_reduce(s, b, c - base_cap[b]), 0);
        }
        t.rounds++;
    }

    /* The end: cancel what is left; everything is back. */
    for (int i = 0; i < MAXPW; i++) {
        if (!pw[i].pending)
            continue;
        int rc = band_waiter_cancel(&pw[i].w, BAND_ECANCELED);
        if (rc == BAND_EALREADY) {
            band_time end = band_now() + 5 * BAND_SEC;
            while (atomic_load(&pw[i].wakes) == 0 && band_now() < end)
                usleep(100);
            assert_int_equal(atomic_load(&pw[i].wakes), 1);
            if (atomic_load(&pw[i].status) == 0)
                assert_int_equal(band_shm_release(s, pw[i].bound, pw[i].n), 0);
        } else {
            assert_int_equal(rc, 0);
        }
    }
    band_shm_stats st;
    assert_int_equal(band_shm_get_stats(s, &st), 0);
    assert_int_equal(st.waiters, 0);
    assert_int_equal(st.handles, 1);
    for (unsigned b = 0; b < NBOUNDS; b++) {
        assert_u64_equal(st.bounds[b].capacity, base_cap[b]);
        assert_u64_equal(st.bounds[b].in_use, 0);
        assert_u64_equal(st.bounds[b].debt, 0);
        assert_u64_equal(st.bounds[b].available, base_cap[b]);
    }
    print_message("stress_shm_torture: %u rounds in %.1f s (%u with a survivor, %u of them "
                  "killed after hanging under ThreadSanitizer), %u dead "
                  "records recovered, %llu lock recoveries, %llu dead waiters; workers ran "
                  "%llu ops (%llu grants, %llu async grants, %llu cancels); parent async "
                  "grants %u; %llu live snapshots; %u deaths inside a transaction rolled back\n",
                  t.rounds, (double)(band_now() - start) / 1e9, t.survivor_rounds, t.survivors_hung,
                  t.dead_total, (unsigned long long)st.recoveries,
                  (unsigned long long)st.dead_waiters, (unsigned long long)t.child_ops,
                  (unsigned long long)t.child_grants, (unsigned long long)t.child_async,
                  (unsigned long long)t.child_cancels, t.parent_grants,
                  (unsigned long long)t.samples, t.transactions);
    assert_true(t.rounds > 0);
    assert_true(t.dead_total > 0);
    assert_int_equal(band_shm_destroy(s), 0);
    munmap(sh, sizeof(*sh));
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torture),
    };
    return cmocka_run_group_tests_name("stress_shm_torture", tests, NULL, NULL);
}
